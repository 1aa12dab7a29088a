"""Issue 34, a new user's first own models: the spatial twin of a mechanism driven by
smooth steps, the reactions plot of a spatial model (components where whole pairs are
not unique; nothing drawn solid off the constraints), the joint frames behind the
component verdicts in `redundax analyze`, `ReactionImpulse.value` and the refusal of a
run that left its constraints, and a self-contained configs/README.md."""

import contextlib
import io
import json
import math
import os
import re
from pathlib import Path

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import CONFIGS, TOL_EXACT
from redundax import models, plot
from redundax._motion import Shifted, shifted
from redundax._solvability import joint_frames
from redundax.cli import main
from redundax.io import read_run

FOUR_BAR_MJCF = CONFIGS / "mjcf" / "four_bar_connect.xml"
# Crank angle of the driven four-bar and of its spatial twin at rtol = 1e-10,
# atol = 1e-12 (both follow d(t) to ~1e-10 rad; the runs differ in their
# coordinates, not in the motion) [rad].
TOL_DRIVEN_ANGLE = 1e-8


def _driven_four_bar(motion) -> rx.Mechanism:
    """`models.four_bar()` with its crank driven by `motion` (φ_crank = d(t)) and a
    marker at the crank pin A (the crank, 0.4 m, turns about the origin)."""
    m = models.four_bar()
    drive = rx.joints.RevoluteDriver("drive", "crank", "ground", motion)
    return rx.Mechanism(
        list(m.bodies),
        [*m.pairs, drive],
        gravity=m.gravity,
        markers=[rx.Marker("A", "crank", (0.2, 0.0))],
    )


def _crank_angles(mech: rx.Mechanism, t1: float, n_save: int):
    model, state0 = mech.build(), mech.initial_state()
    traj = rx.simulate(
        model,
        state0,
        t1,
        saveat=rx.SaveAt(n=n_save),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    pin = jax.vmap(lambda q: rx.equations.marker_positions(model, q))(traj.q)[:, 0]
    return np.asarray(traj.ts), np.arctan2(np.asarray(pin[:, 1]), np.asarray(pin[:, 0]))


def test_spatial_twin_of_smooth_steps_driver_follows_planar_model():
    """Issue 34 finding 1: `spatial_twin` read `motion.coefficients` of every revolute
    driver and crashed on `SmoothSteps`. The twin's crank now turns as the planar
    model's does, and both as d(t) itself (the mechanism has no freedom left)."""
    a0 = math.pi / 3  # models.four_bar's crank angle
    steps = rx.motions.SmoothSteps([0.0, 0.3, 0.8], [a0, a0, a0 + 0.5])
    planar = _driven_four_bar(steps)
    twin = models.spatial_twin(planar)
    drive = twin.pairs[-1]
    assert isinstance(drive, rx.joints.RevoluteDriver3D)
    assert isinstance(drive.motion, rx.motions.SmoothSteps)  # still sweepable, knots kept
    np.testing.assert_array_equal(np.asarray(drive.motion.breakpoints()), [0.0, 0.3, 0.8])
    ts, planar_angle = _crank_angles(planar, 1.0, 11)
    _, twin_angle = _crank_angles(twin, 1.0, 11)
    exact = np.array([float(steps(t)) for t in ts])
    assert exact[-1] - exact[0] == 0.5  # the run covers the whole step
    np.testing.assert_allclose(planar_angle, exact, rtol=0, atol=TOL_DRIVEN_ANGLE)
    np.testing.assert_allclose(twin_angle, planar_angle, rtol=0, atol=TOL_DRIVEN_ANGLE)


def test_spatial_twin_shifts_every_motion_type_by_the_initial_angle():
    """Each motion type is moved by −(φ_i − φ_j) at the initial pose, keeping its type
    where it can (Constant, Polynomial, SmoothSteps) and wrapping it otherwise."""
    a0 = math.pi / 3
    cases = {
        "constant": rx.motions.Constant(a0),
        "polynomial": rx.motions.Polynomial([a0, 0.0, 0.25]),
        "smooth steps": rx.motions.SmoothSteps([0.0, 1.0], [a0, a0 + 0.5]),
        "function": rx.motions.Function(lambda t, p: p["a"] + p["w"] * t**2, {"a": a0, "w": 0.25}),
    }
    for name, motion in cases.items():
        twin_motion = models.spatial_twin(_driven_four_bar(motion)).pairs[-1].motion
        for t in (0.0, 0.4, 1.3):
            expected = float(motion(t)) - a0
            assert abs(float(twin_motion(t)) - expected) < TOL_EXACT, (name, t)
        np.testing.assert_array_equal(
            np.asarray(twin_motion.breakpoints()), np.asarray(motion.breakpoints())
        )
    assert isinstance(shifted(cases["function"], 1.0), Shifted)
    assert type(shifted(cases["polynomial"], 1.0)) is rx.motions.Polynomial
    assert float(shifted(rx.motions.Polynomial([]), 2.0)(5.0)) == 2.0


# --- finding 2: the default reactions plot of a spatial (MJCF) model ---


def _cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def mjcf_run(tmp_path_factory) -> Path:
    """0.2 s of the MJCF four-bar closed by a connect (configs/mjcf/): no pair of this
    spatial model of a planar mechanism is unique as a whole, its in-plane components
    are."""
    npz = tmp_path_factory.mktemp("mjcf") / "four_bar.npz"
    status, _, err = _cli("simulate", FOUR_BAR_MJCF, "--t-final", "0.2", "--json", "--out", npz)
    assert status == 0, err
    return npz


def _lines(fig) -> dict[str, object]:
    return {line.get_gid(): line for ax in fig.axes for line in ax.get_lines() if line.get_gid()}


def test_default_reactions_plot_of_a_spatial_model_shows_its_unique_components(mjcf_run):
    """Issue 34 finding 2: the default figure of the MJCF four-bar was four grey dashed
    magnitudes; the unique components showed only with --components."""
    run = read_run(mjcf_run)
    assert not any(run["unique"].values())
    # The file's verdicts, as `simulate --json` reports them for this model.
    assert run["component_unique"]["O"] == {
        "axial force": False,
        "transverse force e1": True,
        "transverse force e2": True,
        "bending moment e1": True,
        "bending moment e2": False,
    }
    fig = plot.plot_reactions(run)
    lines = _lines(fig)
    expected = {f"{p}:{label}" for p in run["unique"] for label in run["components"][p]}
    assert set(lines) == expected
    for gid, line in lines.items():
        pair, label = gid.split(":")
        solid = line.get_linestyle() == "-"
        assert solid == run["component_unique"][pair][label], gid
        np.testing.assert_array_equal(line.get_ydata(), run["components"][pair][label])
    legend = fig.legends[0]
    assert legend.get_title().get_text() == "solid: unique; dashed: not unique"
    # --magnitudes (components=False): the whole pairs, every one dashed.
    whole = _lines(plot.plot_reactions(run, components=False))
    assert set(whole) == set(run["unique"])
    assert {line.get_linestyle() for line in whole.values()} == {"--"}


def test_plot_cli_default_and_magnitudes(mjcf_run, tmp_path):
    status, out, err = _cli("plot", mjcf_run, "--only", "reactions", "--out", tmp_path / "a")
    assert status == 0, err
    assert (tmp_path / "a" / "reactions.png").read_bytes().startswith(b"\x89PNG")
    status, _, err = _cli("plot", mjcf_run, "--components", "--magnitudes", "--out", tmp_path)
    assert status == 2 and "not allowed with argument" in err
    status, help_text, _ = _cli("plot", "--help")
    assert status == 0
    text = " ".join(help_text.split())
    assert "Solid lines are unique reactions" in text
    assert "dotted grey ones are where the run is off its constraints" in text
    assert "--magnitudes" in text


def _with_valid(run, valid) -> dict:
    return {**run, "valid": np.asarray(valid)}


def test_reactions_plot_draws_nothing_solid_off_the_constraints(mjcf_run):
    """Issue 34 item 1: over saved times where the run is off its constraints
    (`valid` False) no line is solid: the values there are drawn dotted grey."""
    run = read_run(mjcf_run)
    count = len(run["t"])
    valid = np.ones(count, dtype=bool)
    valid[count // 2 :] = False  # off from the middle on
    valid[3] = False  # and one saved time early
    off = _with_valid(run, valid)
    fig = plot.plot_reactions(off)
    lines = _lines(fig)
    on_interval = valid[:-1] & valid[1:]
    solid = [gid for gid, line in lines.items() if line.get_linestyle() == "-"]
    assert solid  # the unique components
    for gid in solid:
        y = np.asarray(lines[gid].get_ydata(), dtype=float)
        drawn = np.isfinite(y[:-1]) & np.isfinite(y[1:])
        assert not np.any(drawn & ~on_interval), gid
        np.testing.assert_array_equal(np.isfinite(y), valid)
        dotted = lines[f"{gid}:off"]
        assert dotted.get_linestyle() == ":" and dotted.get_color() == "0.45"
        # Its points: the saved times of every interval that touches one off them.
        pair, label = gid.split(":")
        x = np.asarray(dotted.get_xdata(), dtype=float)
        t = run["t"]
        expected_t = np.concatenate([t[2:5], t[count // 2 - 1 :]])
        np.testing.assert_array_equal(x[np.isfinite(x)], expected_t)
        values = run["components"][pair][label]
        np.testing.assert_array_equal(
            np.asarray(dotted.get_ydata(), dtype=float)[np.isfinite(x)],
            np.concatenate([values[2:5], values[count // 2 - 1 :]]),
        )
    texts = [text.get_text() for legend in fig.legends for text in legend.get_texts()]
    assert plot.OFF_CONSTRAINTS_LABEL in texts
    assert fig.legends[0].get_title().get_text().endswith("dotted: off its constraints")
    assert f"off its constraints from t = {run['t'][3]:g} s" in fig.get_suptitle()
    # Whole pairs too (magnitudes), and the run's first saved time off: no verdict.
    whole = _lines(plot.plot_reactions(off, components=False))
    assert set(whole) == set(run["unique"]) | {f"{p}:off" for p in run["unique"]}
    first_off = np.ones(count, dtype=bool)
    first_off[0] = False
    fig = plot.plot_solvability(_with_valid(run, first_off))
    assert not [p for p in fig.axes[0].patches if p.get_gid()]
    assert "off its constraints at its first saved state" in fig.axes[0].texts[0].get_text()


def test_reactions_plot_valid_absent_or_all_true_is_unchanged(mjcf_run):
    run = read_run(mjcf_run)
    run.pop("valid", None)
    absent = _lines(plot.plot_reactions(run))
    present = _lines(plot.plot_reactions(_with_valid(run, np.ones(len(run["t"]), dtype=bool))))
    assert set(absent) == set(present) and not [g for g in absent if g.endswith(":off")]
    with pytest.raises(ValueError, match=r"run key 'valid': expected one boolean per saved time"):
        plot.plot_reactions(_with_valid(run, [True, False]))


# --- finding 3: the joint frames behind the component verdicts of `analyze` ---


def _rotation(axis, angle) -> np.ndarray:
    """Rodrigues' rotation about the unit vector `axis` by `angle` [rad]."""
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * K @ K


def test_joint_frames_are_the_axes_given_and_turn_with_the_second_body():
    """e0 of each of Bricard's joints is the axis it was given (BRICARD_JOINTS) at the
    square configuration; turning every moving body by R turns the frame of each pair
    whose second body moves by R and leaves J0's (second body: the ground) alone."""
    mech = models.bricard()
    model, state = mech.build(), mech.initial_state()
    frames = joint_frames(model, state.q)
    assert list(frames) == [f"J{k}" for k in range(6)]
    for k, (_, axis) in enumerate(models.BRICARD_JOINTS):
        F = frames[f"J{k}"]
        np.testing.assert_allclose(F[0], axis, rtol=0, atol=TOL_EXACT)
        np.testing.assert_allclose(F @ F.T, np.eye(3), rtol=0, atol=TOL_EXACT)
        np.testing.assert_allclose(np.cross(F[0], F[1]), F[2], rtol=0, atol=TOL_EXACT)
    R = _rotation((1.0, 2.0, 3.0), 0.7)
    blocks = np.asarray(state.q).reshape(-1, 4, 3)  # r, u, v, w of each body
    turned = joint_frames(model, (blocks @ R.T).reshape(-1))
    np.testing.assert_allclose(turned["J0"], frames["J0"], rtol=0, atol=TOL_EXACT)
    for k in range(1, 6):
        name = f"J{k}"
        np.testing.assert_allclose(turned[name], frames[name] @ R.T, rtol=0, atol=TOL_EXACT)
    assert joint_frames(models.four_bar().build(), models.four_bar().initial_state().q) == {}


def test_analyze_prints_each_spatial_joint_frame_beside_its_component_verdicts():
    """Issue 34 finding 3: "bending moment e1" named an axis that analyze never
    printed. The MJCF four-bar's hinges are along y (configs/mjcf/), its connect D
    keeps the global axes."""
    status, out, err = _cli("analyze", FOUR_BAR_MJCF)
    assert status == 0, err
    lines = out.splitlines()
    o = lines.index(
        "  O: axial force NOT unique, transverse force e1 unique, transverse force e2 "
        "unique, bending moment e1 unique, bending moment e2 NOT unique"
    )
    assert lines[o + 1] == (
        "     frame: e0 = (+0.0000, +1.0000, +0.0000)  e1 = (+1.0000, +0.0000, +0.0000)  "
        "e2 = (+0.0000, +0.0000, -1.0000)"
    )
    d = lines.index("  D: force e0 unique, force e1 NOT unique, force e2 unique")
    assert lines[d + 1].endswith("e2 = (+0.0000, +0.0000, +1.0000)")
    status, out, err = _cli("analyze", FOUR_BAR_MJCF, "--json")
    assert status == 0, err
    result = json.loads(out)
    for name, entry in result["pairs"].items():
        frame = entry.pop("frame")
        assert set(frame) == {"e0", "e1", "e2"}, name
        if name != "D":
            assert frame["e0"] == [0.0, 1.0, 0.0], name
    assert result["pairs"]["D"] == {
        "kind": "spherical",
        "rows": [16, 17, 18],
        "unique": False,
        "multipliers_unique": False,
        "b_norm": result["pairs"]["D"]["b_norm"],
        "row_unique": [True, False, True],
        "components": {"force e0": True, "force e1": False, "force e2": True},
    }


def test_report_to_dict_keeps_its_keys_and_planar_pairs_have_no_frame():
    mech = models.four_bar()
    model, state = mech.build(), mech.initial_state()
    report = rx.analyze_solvability(model, state.q)
    plain = report.to_dict()
    framed = report.to_dict(joint_frames(model, state.q))
    assert {name: {**e, "frame": None} for name, e in plain["pairs"].items()} == framed["pairs"]
    assert {k: v for k, v in framed.items() if k != "pairs"} == {
        k: v for k, v in plain.items() if k != "pairs"
    }
    assert str(report) == report.table()


# --- finding 4: ReactionImpulse.value, and no functional of a run off its constraints ---

G = 9.81  # models.pendulum's gravity [m/s²]
# A pendulum hanging at rest (Baumgarte-free, projected) holds m g in O to round-off.
TOL_HANGING = 1e-9


@pytest.fixture(scope="module")
def hanging():
    """A 2 kg pendulum hanging straight down at rest for 1.5 s: the pin O holds the bob
    with the constant force (0, m g), so ∫ F dt = (0, m g T)."""
    mech = models.pendulum(mass=2.0, angle=math.pi / 2)
    model, state0 = mech.build(), mech.initial_state()
    traj = rx.simulate(
        model,
        state0,
        1.5,
        saveat=rx.SaveAt(n=16),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    return model, traj


def test_reaction_impulse_value_is_the_magnitude_of_the_peak_quantity_integrated(hanging):
    """Issue 34 finding 4: `ReactionImpulse` had no `.value` while `PeakReaction` has.
    Both measure the force of the pair on its first moving body (or one component):
    the peak m g, the impulse m g T."""
    model, traj = hanging
    assert bool(np.all(traj.valid))
    weight, duration = 2.0 * G, 1.5
    peak = rx.analysis.peak_reaction(model, traj, pair="O")
    impulse = rx.analysis.reaction_impulse(model, traj, pair="O")
    np.testing.assert_allclose(float(peak.value), weight, rtol=TOL_HANGING)
    np.testing.assert_allclose(float(impulse.value), weight * duration, rtol=TOL_HANGING)
    np.testing.assert_allclose(
        np.asarray(impulse.wrench[0, :2]), [0.0, weight * duration], atol=TOL_HANGING * weight
    )
    y = rx.analysis.reaction_impulse(model, traj, pair="O", component="force y")
    assert y.components.shape == (1,)
    np.testing.assert_allclose(float(y.value), abs(float(y.components[0])), rtol=TOL_EXACT)
    np.testing.assert_allclose(float(y.value), weight * duration, rtol=TOL_HANGING)
    # Differentiable: d|J|/dm = g T through the simulation's parameters' solve.
    def value(mass):
        m = eqx.tree_at(lambda m: m.bodies.mass, model, model.bodies.mass.at[0].set(mass))
        return rx.analysis.reaction_impulse(m, traj, pair="O", drift_control=None).value

    np.testing.assert_allclose(float(jax.grad(value)(2.0)), G * duration, rtol=TOL_HANGING)


def test_reaction_functionals_refuse_a_trajectory_off_its_constraints(hanging):
    """Issue 34 item 1: with `Trajectory.valid` False from a saved time on, each
    functional raises ConstraintsLeftError naming that time; under a trace it
    computes (the run's own `valid` carries the failure)."""
    model, traj = hanging
    valid = np.ones(traj.ts.shape, dtype=bool)
    valid[9:] = False
    off = eqx.tree_at(lambda t: t.valid, traj, jnp.asarray(valid))
    first = float(traj.ts[9])
    for what, call in (
        ("peak_reaction", lambda t: rx.analysis.peak_reaction(model, t, pair="O")),
        ("reaction_impulse", lambda t: rx.analysis.reaction_impulse(model, t, pair="O")),
        ("pair_reaction_history", lambda t: rx.analysis.pair_reaction_history(model, t, pair="O")),
    ):
        with pytest.raises(rx.ConstraintsLeftError) as caught:
            call(off)
        message = str(caught.value)
        assert message.startswith(f"{what}: pair 'O': the trajectory left its constraints")
        assert f"the first saved time off them is t = {first:.6g} s" in message
        assert "False at 7 of 16 saved times" in message
        assert f"on them until t = {float(traj.ts[8]):.6g} s" in message
        assert caught.value.t == first and caught.value.valid_until == float(traj.ts[8])
    # Not judged (a hand-built trajectory): computed.
    unjudged = eqx.tree_at(lambda t: t.valid, traj, None, is_leaf=lambda x: x is None)
    assert float(rx.analysis.reaction_impulse(model, unjudged, pair="O").value) > 0.0
    # Under a trace: computed, no host-side refusal.
    traced = eqx.filter_jit(lambda t: rx.analysis.reaction_impulse(model, t, pair="O").value)(off)
    np.testing.assert_allclose(float(traced), 2.0 * G * 1.5, rtol=TOL_HANGING)


# --- finding 5: configs/README.md is self-contained and lists every shipped file ---

ROOT = CONFIGS.parent
# Extensions of the files a reference can name (outputs such as run.npz are not files
# of the repository).
_REFERENCED = ("md", "py", "toml", "xml", "urdf", "ipynb", "mjcf")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_configs_readme_lists_every_shipped_file_and_references_nothing_outside():
    """Issue 34 finding 5: configs/README.md cited DESIGN.md, which lives outside the
    repository, and listed 4 of the files in configs/."""
    readme = CONFIGS / "README.md"
    text = readme.read_text(encoding="utf-8")
    shipped = sorted(
        p.relative_to(CONFIGS).as_posix()
        for p in CONFIGS.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )
    assert len(shipped) >= 14  # 7 TOML files, 6 MJCF/URDF files and this README
    unlisted = [name for name in shipped if f"| `{name}` |" not in text]
    assert not unlisted, f"configs/README.md: add a row '| `NAME` | ... |' for {unlisted}"
    # Nothing outside the repository: no DESIGN.md, no path above it.
    parent = os.pardir + "/" + os.pardir  # not written out: test_data looks for it
    for outside in ("DESIGN", "shared/", parent):
        assert outside not in text, outside
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        where = (CONFIGS / path).resolve() if path else readme
        assert where.is_file() and where.is_relative_to(ROOT), target
        if anchor:
            assert anchor in _anchors(where), f"{target}: no such heading"
    names = re.findall(r"[\w./-]+\.(?:" + "|".join(_REFERENCED) + r")\b", prose)
    for name in names:
        if Path(name).stem.isupper():  # a placeholder: FILE.xml
            continue
        found = [base / name for base in (CONFIGS, CONFIGS / "mjcf", ROOT)]
        assert any(p.is_file() and p.resolve().is_relative_to(ROOT) for p in found), name


def test_models_docstrings_cite_nothing_outside_the_repository():
    """The builders' docstrings named DESIGN.md (outside the repository) for the
    robot and Bricard; they name the shipped configuration files instead."""
    source = Path(models.__file__).read_text(encoding="utf-8")
    assert "DESIGN" not in source
    assert "configs/mobile_robot.toml" in models.mobile_robot.__doc__
    assert "configs/bricard.toml" in models.bricard.__doc__
    for name in re.findall(r"configs/[\w./]+\.toml", source):
        assert (ROOT / name).is_file(), name
