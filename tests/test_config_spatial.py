"""Spatial mechanisms in TOML configurations (`[mechanism] dim = 3`): configs/bricard.toml
is `models.bricard()`, every spatial pair type loads as its Python spec, the command
line reports Bricard's DESIGN.md §8 numbers and 3-D points, the run files carry
6-component wrenches and labelled reaction components, partly unique pairs are
reported per component, and every spatial mistake is reported with its entry and
key.

The one simulation is short (1 s of Bricard, run twice): the cost is compilation."""

import contextlib
import io
import json
import re
from pathlib import Path

import diffrax
import equinox as eqx
import numpy as np
import pytest

import redundax as rx
from redundax import models
from redundax.cli import main
from redundax.io import ConfigError, load_config, read_run

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
BRICARD = CONFIGS / "bricard.toml"
SIX_BAR = CONFIGS / "six_bar.toml"
BRICARD_TEXT = BRICARD.read_text(encoding="utf-8")

# The file and `models.bricard()` compute the same numbers from the same floats (the
# inertias are written to full double precision): equal to round-off of one operation.
TOL_SAME_MODEL = 1e-14
# The command line and a direct `rx.simulate` run the same compiled computation.
TOL_SAME_RUN = 1e-12
# Bricard released at rest, 1 s with Dopri8 at rtol 1e-10, atol 1e-12 and a projection
# after every step: 2.1e-9 J measured (DESIGN.md asks for 1e-8 J over the benchmark's
# 10 s: 2.3e-9 J measured, 155 steps).
TOL_ENERGY = 1e-8
# Constraint drift of the same run: 1.2e-9 measured (18 steps).
TOL_DRIFT = 1e-7
# Newton's law for a rod from its reactions: the same linear solve, round-off of
# forces of about 10 N.
TOL_NEWTON = 1e-9


def _run(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def _write(tmp_path: Path, text: str, name: str = "spatial.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _mutate(text: str, old: str, new: str) -> str:
    """Replace the one occurrence of `old`, so that a test cannot pass vacuously."""
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times"
    return text.replace(old, new)


# One compilation per mechanism instead of many small eager ones.
_constraint_matrix = eqx.filter_jit(rx.equations.constraint_matrix)


def _same_model(config_model, config_state, model, state, times=(0.0,)) -> None:
    assert config_model.pairs == model.pairs  # names, kinds, rows, bodies, labels
    assert config_model.bodies.names == model.bodies.names
    assert config_model.markers.names == model.markers.names
    assert (config_model.dim, config_model.n_internal) == (model.dim, model.n_internal)
    for got, want in [
        (config_model.bodies.mass, model.bodies.mass),
        (config_model.bodies.inertia, model.bodies.inertia),
        (config_model.gravity, model.gravity),
        (config_model.markers.points, model.markers.points),
        (config_model.loads.forces, model.loads.forces),
        (config_model.loads.points, model.loads.points),
        (config_model.loads.torques, model.loads.torques),
        (config_state.q, state.q),
        (config_state.qd, state.qd),
    ]:
        np.testing.assert_allclose(got, want, rtol=0.0, atol=TOL_SAME_MODEL)
    for t in times:
        np.testing.assert_allclose(
            _constraint_matrix(config_model, config_state.q, t),
            _constraint_matrix(model, state.q, t),
            rtol=0.0,
            atol=TOL_SAME_MODEL,
        )


# --------------------------------------------------------------------------- Bricard
def test_bricard_config_is_models_bricard():
    config = load_config(BRICARD)
    mechanism = models.bricard()
    model, state = mechanism.build(), mechanism.initial_state()
    _same_model(config.model, config.state, model, state)
    assert config.dim == 3 and config.model.dim == 3
    assert config.model.n_internal == 30 and config.state.q.shape == (60,)
    assert config.tracked == ("P3",) and config.rheonomic == ()
    np.testing.assert_allclose(
        rx.equations.marker_positions(config.model, config.state.q), [[1.0, -1.0, 0.0]], atol=0.0
    )
    options = config.simulation
    assert (options.t_final, options.rtol, options.atol) == (10.0, 1e-10, 1e-12)
    assert isinstance(options.method, rx.methods.NullSpace)
    assert options.drift_control == rx.drift.StepProjection()  # the default
    assert isinstance(options.solver, diffrax.Dopri8)


def test_six_bar_config_is_models_six_bar_with_the_seed_counts():
    """configs/six_bar.toml is `models.six_bar()` (a Sarrus linkage standing in for
    the unpublished Lester & Schiehlen geometry) and has the counts of seed 004 §7:
    5 moving bodies, 6 revolute joints, one loop, mobility 1, one dependent row."""
    config = load_config(SIX_BAR)
    mechanism = models.six_bar()
    model, state = mechanism.build(), mechanism.initial_state()
    _same_model(config.model, config.state, model, state)
    structure = rx.decide(config.model, config.state.q)
    assert config.model.bodies.count == 5 and len(config.model.pairs) == 6
    assert structure.topology.n_loops == 1
    assert (int(structure.rank), int(structure.redundancy), int(structure.dof)) == (59, 1, 1)
    assert not np.any(np.asarray(structure.stable_unique))  # one loop: no joint unique


def test_bricard_analyze_json_gives_the_design_numbers():
    status, out, err = _run("analyze", BRICARD, "--json")
    assert status == 0, err
    result = json.loads(out)
    assert (result["n"], result["m"], result["h"]) == (60, 60, 0)
    assert (result["rank"], result["redundancy"], result["dof"]) == (59, 1, 1)
    assert result["dim"] == 3
    pairs = result["pairs"]
    assert list(pairs) == [f"J{k}" for k in range(6)]
    labels = models.bricard().pairs[0].components
    for k, pair in enumerate(pairs.values()):
        assert pair["kind"] == "revolute-3d"
        assert pair["rows"] == list(range(5 * k + 1, 5 * k + 6))  # the internal rows follow
        assert pair["unique"] is False and pair["b_norm"] > 0.0  # no reaction is unique
        assert list(pair["components"]) == list(labels)
        assert not any(pair["components"].values())


def test_bricard_analyze_table_names_the_components():
    status, out, err = _run("analyze", BRICARD)
    assert status == 0, err
    assert "spatial" in out.splitlines()[0]
    assert "degree of redundancy p = 1, mobility = 1" in out and "rank C = 59" in out
    assert (
        "revolute-3d: axial force, transverse force e1, transverse force e2, "
        "bending moment e1, bending moment e2"
    ) in out


@pytest.fixture(scope="module")
def bricard_run(tmp_path_factory) -> dict:
    """`simulate configs/bricard.toml --t-final 1.0`, with --json --out run.npz, and
    with the summary and --out run.csv (one compilation of each step)."""
    folder = tmp_path_factory.mktemp("bricard")
    npz, csv = folder / "run.npz", folder / "run.csv"
    status, out, err = _run("simulate", BRICARD, "--t-final", "1.0", "--json", "--out", npz)
    assert status == 0, err
    status, text, err = _run("simulate", BRICARD, "--t-final", "1.0", "--out", csv)
    assert status == 0, err
    return {"summary": json.loads(out), "text": text, "npz": npz, "csv": csv}


def test_bricard_simulate_json_tracks_p3_as_a_direct_run(bricard_run):
    summary = bricard_run["summary"]
    assert summary["t_final"] == 1.0 and summary["dim"] == 3
    assert list(summary["tracked"]) == ["P3"] and len(summary["tracked"]["P3"]) == 3
    assert len(summary["final_q"]) == 60
    assert isinstance(summary["energy_error"], float)
    assert 0.0 <= summary["energy_error"] < TOL_ENERGY
    assert 0.0 <= summary["max_constraint_violation"] < TOL_DRIFT
    assert summary["unique"] == dict.fromkeys([f"J{k}" for k in range(6)], False)
    assert set(summary["components"]) == set(summary["unique"])
    assert not any(any(c.values()) for c in summary["components"].values())

    mechanism = models.bricard()
    model, state = mechanism.build(), mechanism.initial_state()
    # The options of configs/bricard.toml and of the command line (throw=False).
    trajectory = rx.simulate(
        model,
        state,
        1.0,
        solver=diffrax.Dopri8(),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
        throw=False,
    )
    p3 = rx.equations.marker_positions(model, trajectory.q[-1])[0]
    np.testing.assert_allclose(summary["tracked"]["P3"], p3, rtol=0.0, atol=TOL_SAME_RUN)
    np.testing.assert_allclose(summary["final_q"], trajectory.q[-1], rtol=0.0, atol=TOL_SAME_RUN)
    assert -1.0 - TOL_DRIFT < p3[1] < -0.866  # DESIGN.md §8: y of P3 in [−1, −0.866]


def test_bricard_summary_prints_p3_in_space(bricard_run):
    lines = bricard_run["text"].splitlines()
    p3 = [line.split() for line in lines if line.split()[:1] == ["P3"]]
    assert len(p3) == 1 and len(p3[0]) == 4  # name, x, y, z
    np.testing.assert_allclose(
        [float(x) for x in p3[0][1:]], bricard_run["summary"]["tracked"]["P3"], atol=1e-9
    )
    assert "NOT unique (the method's choice only): J0, J1, J2, J3, J4, J5" in lines
    assert not any("unique components" in line for line in lines)  # none is partly unique


def test_bricard_npz_has_spatial_wrenches_and_components(bricard_run):
    summary, run = bricard_run["summary"], read_run(bricard_run["npz"])
    T = 201
    assert run["dim"] == 3 and run["meta"]["dim"] == 3
    assert run["q"].shape == (T, 60) and run["tracked"]["P3"].shape == (T, 3)
    np.testing.assert_array_equal(run["tracked"]["P3"][-1], summary["tracked"]["P3"])
    assert run["bodies"] == ("rod1", "rod2", "rod3", "rod4", "rod5")
    assert run["reactions"]["J1"].shape == (T, 5, 6)
    assert run["joint_moment"]["J1"].shape == (T, 5, 3)
    assert run["component_unique"] == summary["components"]
    assert run["rows"]["J5"] == (26, 27, 28, 29, 30)
    components = run["components"]["J1"]
    assert list(components) == list(rx.joints.Revolute3D.components)
    np.testing.assert_array_equal(
        np.stack(list(components.values()), axis=1), -run["multipliers"][:, 5:10]
    )
    # Newton for rod 2 (1 kg; its frame at its centre, coordinates 12–14): the
    # forces of J1 and J2 on it (the other pairs and the rigid-body rows exert none
    # on its centre of mass) and gravity give its acceleration.
    force = sum(wrench[:, 1, :3] for wrench in run["reactions"].values())
    np.testing.assert_allclose(
        force, run["qdd"][:, 12:15] - np.array([0.0, -9.81, 0.0]), rtol=0.0, atol=TOL_NEWTON
    )
    assert np.all(run["reactions"]["J0"][:, 1] == 0.0)  # J0 does not touch rod 2


def test_bricard_csv_names_the_spatial_columns(bricard_run):
    meta, header, *rows = bricard_run["csv"].read_text(encoding="utf-8").splitlines()
    columns = header.split(",")
    assert len(rows) == 201 and all(len(r.split(",")) == len(columns) for r in rows)
    assert [c for c in columns if c.startswith("tracked.")] == [
        "tracked.P3.x",
        "tracked.P3.y",
        "tracked.P3.z",
    ]
    for c in ("Fx", "Fy", "Fz", "Mx", "My", "Mz"):
        assert f"reaction.J1.rod2.{c} (not unique)" in columns
    for c in ("Mx", "My", "Mz"):
        assert f"joint_moment.J5.rod5.{c} (not unique)" in columns
    assert not any(".ground." in c for c in columns)
    for label in rx.joints.Revolute3D.components:
        assert f"component.J0.{label} (not unique)" in columns
    assert json.loads(meta.removeprefix("# redundax run: "))["dim"] == 3


# ------------------------------------------------------------- every spatial pair type
EVERY_TYPE = """
[mechanism]
name = "one body per joint type"
dim = 3
gravity = [0.0, 0.0, -9.81]

[[bodies]]
name = "ball"
mass = 1.0
inertia = [[0.02, 0.001, 0.0], [0.001, 0.03, 0.0], [0.0, 0.0, 0.04]]
position = [0.0, 0.0, 1.0]
angular_velocity = [0.1, 0.2, 0.3]

[[bodies]]
name = "hinged"
mass = 2.0
inertia = [0.1, 0.2, 0.25]
position = [1.0, 0.0, 0.0]
rotation = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]

[[bodies]]
name = "crossed"
mass = 1.5
inertia = [0.1, 0.1, 0.1]
position = [2.0, 0.0, 0.0]

[[bodies]]
name = "welded"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
position = [3.0, 0.0, 0.0]

[[bodies]]
name = "slider"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
position = [4.0, 0.0, 0.0]

[[bodies]]
name = "sleeve"
mass = 1.0
inertia = [0.1, 0.1, 0.1]
position = [5.0, 0.0, 0.0]

[[pairs]]
name = "S"
type = "spherical"
body_i = "ball"
body_j = "ground"
point = [0.0, 0.0, 1.0]

[[pairs]]
name = "R"
type = "revolute-3d"
body_i = "hinged"
body_j = "ground"
point_i = [0.5, 0.0, 0.0]     # body frame, rotated: global (1, 0.5, 0)
point_j = [1.0, 0.5, 0.0]
axis = [0.0, 0.0, 1.0]
normal = [1.0, 0.0, 0.0]

[[pairs]]
name = "U"
type = "universal"
body_i = "crossed"
body_j = "ground"
point = [2.0, 0.0, 0.5]
axis = [1.0, 0.0, 0.0]
normal = [0.0, 1.0, 0.0]

[[pairs]]
name = "W"
type = "weld-3d"
body_i = "welded"
body_j = "ground"
point = [3.0, 0.0, 0.0]

[[pairs]]
name = "P"
type = "prismatic-3d"
body_i = "slider"
body_j = "ground"
point = [4.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]

[[pairs]]
name = "C"
type = "cylindrical"
body_i = "sleeve"
body_j = "ground"
point = [5.0, 0.0, 0.0]
axis = [0.0, 1.0, 1.0]

[[pairs]]
name = "turn"
type = "revolute-driver-3d"
body_i = "hinged"
body_j = "ground"
point = [1.0, 0.5, 0.0]
axis = [0.0, 0.0, 1.0]
motion = { type = "polynomial", coefficients = [0.0, 0.0, 0.5] }

[[pairs]]
name = "push"
type = "translational-driver-3d"
body_i = "slider"
body_j = "ground"
point = [4.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
motion = { type = "constant", value = 0.0 }

[[loads]]
body = "ball"
force = [1.0, 0.0, 0.0]
point = [0.0, 0.0, -0.5]
torque = [0.0, 0.0, 0.2]

[[markers]]
name = "tip"
body = "hinged"
point = [0.5, 0.0, 0.0]
"""


def _every_type_in_python() -> rx.Mechanism:
    rotation = ((0.0, -1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    cube = (0.1, 0.1, 0.1)
    return rx.Mechanism(
        bodies=[
            rx.SpatialBody(
                "ball",
                1.0,
                ((0.02, 0.001, 0.0), (0.001, 0.03, 0.0), (0.0, 0.0, 0.04)),
                position=(0.0, 0.0, 1.0),
                angular_velocity=(0.1, 0.2, 0.3),
            ),
            rx.SpatialBody(
                "hinged", 2.0, (0.1, 0.2, 0.25), position=(1.0, 0.0, 0.0), rotation=rotation
            ),
            rx.SpatialBody("crossed", 1.5, cube, position=(2.0, 0.0, 0.0)),
            rx.SpatialBody("welded", 1.0, cube, position=(3.0, 0.0, 0.0)),
            rx.SpatialBody("slider", 1.0, cube, position=(4.0, 0.0, 0.0)),
            rx.SpatialBody("sleeve", 1.0, cube, position=(5.0, 0.0, 0.0)),
        ],
        pairs=[
            rx.joints.Spherical("S", "ball", "ground", point=(0.0, 0.0, 1.0)),
            rx.joints.Revolute3D(
                "R",
                "hinged",
                "ground",
                point_i=(0.5, 0.0, 0.0),
                point_j=(1.0, 0.5, 0.0),
                axis=(0.0, 0.0, 1.0),
                normal=(1.0, 0.0, 0.0),
            ),
            rx.joints.Universal(
                "U",
                "crossed",
                "ground",
                point=(2.0, 0.0, 0.5),
                axis=(1.0, 0.0, 0.0),
                normal=(0.0, 1.0, 0.0),
            ),
            rx.joints.Weld3D("W", "welded", "ground", point=(3.0, 0.0, 0.0)),
            rx.joints.Prismatic3D(
                "P", "slider", "ground", point=(4.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0)
            ),
            rx.joints.Cylindrical(
                "C", "sleeve", "ground", point=(5.0, 0.0, 0.0), axis=(0.0, 1.0, 1.0)
            ),
            rx.joints.RevoluteDriver3D(
                "turn",
                "hinged",
                "ground",
                rx.motions.Polynomial(np.array([0.0, 0.0, 0.5])),
                point=(1.0, 0.5, 0.0),
                axis=(0.0, 0.0, 1.0),
            ),
            rx.joints.TranslationalDriver3D(
                "push",
                "slider",
                "ground",
                rx.motions.Constant(0.0),
                point=(4.0, 0.0, 0.0),
                axis=(0.0, 0.0, 1.0),
            ),
        ],
        gravity=(0.0, 0.0, -9.81),
        loads=[
            rx.Load("ball", force=(1.0, 0.0, 0.0), point=(0.0, 0.0, -0.5), torque=(0.0, 0.0, 0.2))
        ],
        markers=[rx.Marker("tip", "hinged", (0.5, 0.0, 0.0))],
    )


def test_every_spatial_pair_type_loads_as_its_python_spec(tmp_path):
    # Loading checks that the initial state satisfies every pair (positions and
    # velocities): points and axes are taken at the initial poses.
    config = load_config(_write(tmp_path, EVERY_TYPE))
    mechanism = _every_type_in_python()
    _same_model(
        config.model,
        config.state,
        mechanism.build(),
        mechanism.initial_state(),
        times=(0.0, 0.7),
    )
    kinds = [pair.kind for pair in config.model.pairs]
    assert kinds == [
        "spherical",
        "revolute-3d",
        "universal",
        "weld-3d",
        "prismatic-3d",
        "cylindrical",
        "revolute-driver-3d",
        "translational-driver-3d",
    ]
    assert config.rheonomic == ("turn",)  # a constant motion does no work
    np.testing.assert_allclose(
        rx.equations.marker_positions(config.model, config.state.q),
        [[1.0, 0.5, 0.0]],
        atol=TOL_SAME_MODEL,
    )


# ------------------------------------------------- partly unique components (a door)
DOOR = """
[mechanism]
name = "door on a hinge and a pin"
dim = 3
gravity = [0.0, -9.81, 0.0]

[[bodies]]
name = "door"
mass = 2.0
inertia = [0.2, 0.3, 0.15]
position = [0.5, 0.0, 0.5]

# Both hold the door on the z axis: their transverse forces and bending moments
# share the load in a way a rigid model leaves open; the axial force is the top's.
[[pairs]]
name = "top"
type = "revolute-3d"
body_i = "door"
body_j = "ground"
point = [0.0, 0.0, 1.0]
axis = [0.0, 0.0, 1.0]

[[pairs]]
name = "bottom"
type = "cylindrical"
body_i = "door"
body_j = "ground"
point = [0.0, 0.0, 0.0]
axis = [0.0, 0.0, 1.0]
"""


def test_door_components_are_partly_unique(tmp_path):
    path = _write(tmp_path, DOOR, "door.toml")
    status, out, err = _run("analyze", path, "--json")
    assert status == 0, err
    result = json.loads(out)
    assert (result["rank"], result["redundancy"], result["dof"]) == (11, 4, 1)
    top, bottom = result["pairs"]["top"], result["pairs"]["bottom"]
    assert top["unique"] is False and bottom["unique"] is False
    assert list(top["components"]) == list(rx.joints.Revolute3D.components)
    assert top["components"]["axial force"] is True
    assert not any(u for label, u in top["components"].items() if label != "axial force")
    assert list(bottom["components"]) == list(rx.joints.Cylindrical.components)
    assert not any(bottom["components"].values())
    status, out, err = _run("analyze", path)
    assert status == 0, err
    assert "cylindrical: transverse force e1, transverse force e2, bending moment e1" in out
    assert "top: axial force unique" in out


# ------------------------------------------------------------------------ mistakes
J2_AXIS = "point = [1.0, -1.0, 0.0]\naxis = [1.0, 0.0, 0.0]\n"
J0 = 'name = "J0"\ntype = "revolute-3d"'
# rod 4 has the same inertia: the line is made unique by the one before it.
ROD1_INERTIA = (
    "along x\nmass = 1.0\ninertia = [0.001666666666666667, 0.08416666666666667, "
    "0.08416666666666667]"
)

SPATIAL_MISTAKES = {
    "non-orthonormal rotation": (
        [
            (
                "position = [0.5, 0.0, 0.0]",
                "position = [0.5, 0.0, 0.0]\n"
                "rotation = [[1.0, 0.1, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]",
            )
        ],
        r"bodies\[0\] \(\"rod1\"\) key 'rotation': not a proper rotation matrix "
        r"\(\|RᵀR − I\| = 0.1,",
    ),
    "reflection as rotation": (
        [
            (
                "position = [0.5, 0.0, 0.0]",
                "position = [0.5, 0.0, 0.0]\n"
                "rotation = [[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]",
            )
        ],
        r"bodies\[0\] \(\"rod1\"\) key 'rotation': not a proper rotation matrix .*det = -1",
    ),
    "rotation with a short row": (
        [
            (
                "position = [0.5, 0.0, 0.0]",
                "position = [0.5, 0.0, 0.0]\nrotation = [[1.0, 0.0, 0.0], [0.0, 1.0], "
                "[0.0, 0.0, 1.0]]",
            )
        ],
        r"bodies\[0\] \(\"rod1\"\) key 'rotation'\[1\]: expected a row of 3 numbers, got an "
        r"array of length 2",
    ),
    "planar position": (
        [("position = [1.0, -0.5, 0.0]", "position = [1.0, -0.5]")],
        r"bodies\[1\] \(\"rod2\"\) key 'position': expected a vector \[x, y, z\] of 3 numbers, "
        r"got an array of length 2",
    ),
    "planar gravity": (
        [("gravity = [0.0, -9.81, 0.0]", "gravity = [0.0, -9.81]")],
        r"mechanism key 'gravity': expected a vector \[x, y, z\] of 3 numbers",
    ),
    "marker point of length 4": (
        [("point = [0.0, -0.5, 0.0]", "point = [0.0, -0.5, 0.0, 1.0]")],
        r"markers\[0\] \(\"P3\"\) key 'point': expected a vector \[x, y, z\] of 3 numbers, "
        r"got an array of length 4",
    ),
    "unknown body in a 3-D joint": (
        [('body_i = "rod3"', 'body_i = "rod33"')],
        r"pairs\[2\] \(\"J2\"\) key 'body_i': unknown body 'rod33' \(did you mean 'rod3'\? "
        r"known bodies: rod1, rod2, rod3, rod4, rod5, ground\)",
    ),
    "inertia violating the triangle inequality": (
        [(ROD1_INERTIA, "along x\nmass = 1.0\ninertia = [0.3, 0.1, 0.1]")],
        r"bodies\[0\] \(\"rod1\"\) key 'inertia': principal moments .* violate the triangle "
        r"inequality",
    ),
    "non-symmetric inertia tensor": (
        [
            (
                ROD1_INERTIA,
                "along x\nmass = 1.0\n"
                "inertia = [[0.1, 0.01, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.1]]",
            )
        ],
        r"bodies\[0\] \(\"rod1\"\) key 'inertia': must be symmetric",
    ),
    "zero principal moment": (
        [(ROD1_INERTIA, "along x\nmass = 1.0\ninertia = [0.0, 0.08, 0.08]")],
        r"bodies\[0\] \(\"rod1\"\) key 'inertia': must be positive definite",
    ),
    "scalar inertia": (
        [(ROD1_INERTIA, "along x\nmass = 1.0\ninertia = 0.08")],
        r"bodies\[0\] \(\"rod1\"\) key 'inertia': expected 3 principal moments \[Ixx, Iyy, "
        r"Izz\] or a 3 × 3 tensor",
    ),
    "planar joint in a spatial config": (
        [(J0, 'name = "J0"\ntype = "revolute"')],
        r"pairs\[0\] \(\"J0\"\) key 'type': 'revolute' is a planar pair type, but the "
        r"mechanism is spatial \(\[mechanism\] dim = 3\) \(did you mean 'revolute-3d'\?",
    ),
    "universal joint pins not perpendicular": (
        [
            (
                J0 + '\nbody_i = "rod1"\nbody_j = "ground"\npoint = [0.0, 0.0, 0.0]\n'
                "axis = [0.0, 1.0, 0.0]",
                'name = "J0"\ntype = "universal"\nbody_i = "rod1"\nbody_j = "ground"\n'
                "point = [0.0, 0.0, 0.0]\naxis = [0.0, 1.0, 0.0]\nnormal = [1.0, 1.0, 0.0]",
            )
        ],
        r"pairs\[0\] \(\"J0\"\) key 'normal': the pins 'axis' \(body i\) and 'normal' \(body "
        r"j\) of a universal joint must be perpendicular, got cos = 0.707",
    ),
    "universal joint without its second pin": (
        [(J0, 'name = "J0"\ntype = "universal"')],
        r"pairs\[0\] \(\"J0\"\): missing required key 'normal'",
    ),
    "missing axis": (
        [(J2_AXIS, "point = [1.0, -1.0, 0.0]\n")],
        r"pairs\[2\] \(\"J2\"\): missing required key 'axis'",
    ),
    "zero axis": (
        [(J2_AXIS, "point = [1.0, -1.0, 0.0]\naxis = [0.0, 0.0, 0.0]\n")],
        r"pairs\[2\] \(\"J2\"\) key 'axis': must be a non-zero vector",
    ),
    "normal parallel to the axis": (
        [(J2_AXIS, J2_AXIS + "normal = [-2.0, 0.0, 0.0]\n")],
        r"pairs\[2\] \(\"J2\"\) key 'normal': must not be parallel to 'axis'",
    ),
    "missing point": (
        [(J2_AXIS, "axis = [1.0, 0.0, 0.0]\n")],
        r"pairs\[2\] \(\"J2\"\): missing required key 'point': give 'point' \(global, at the "
        r"initial configuration\) or both 'point_i' and 'point_j'",
    ),
    "point and point_i": (
        [(J2_AXIS, J2_AXIS + "point_i = [0.0, 0.0, -0.5]\n")],
        r"pairs\[2\] \(\"J2\"\) key 'point_i': give either 'point' .* not both",
    ),
    "spatial load with a planar torque": (
        [("[[markers]]", '[[loads]]\nbody = "rod1"\ntorque = 1.0\n\n[[markers]]')],
        r"loads\[0\] key 'torque': expected a vector \[x, y, z\] of 3 numbers, got 1.0 "
        r"\(a float\)",
    ),
    "planar key in a spatial body": (
        [("position = [0.5, 0.0, 0.0]", "position = [0.5, 0.0, 0.0]\nangle = 0.0")],
        r"bodies\[0\] \(\"rod1\"\): unknown key 'angle' \(allowed: name, mass, inertia, "
        r"position, rotation, velocity, angular_velocity\)",
    ),
    "dimension out of range": (
        [("dim = 3 ", "dim = 4 ")],
        r"mechanism key 'dim': must be 2 \(planar\) or 3 \(spatial\), got 4",
    ),
}


@pytest.mark.parametrize("mistake", sorted(SPATIAL_MISTAKES))
def test_a_spatial_mistake_is_reported_with_entry_and_key(tmp_path, mistake):
    edits, message = SPATIAL_MISTAKES[mistake]
    text = BRICARD_TEXT
    for old, new in edits:
        text = _mutate(text, old, new)
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert str(err).startswith(f"{path}: "), "the message must name the file"
    assert any(re.search(message, p) for p in err.problems), err.problems
    assert len(err.problems) == 1, err.problems  # one mistake, one problem, no cascade


def test_a_spatial_file_without_dim_gets_a_hint(tmp_path):
    path = _write(tmp_path, _mutate(BRICARD_TEXT, "dim = 3 ", "# dim = 3 "))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert re.search(
        r"pairs\[0\] \(\"J0\"\) key 'type': 'revolute-3d' is a spatial pair type, but the "
        r"mechanism is planar \(\[mechanism\] dim = 2\)",
        message,
    )
    assert 'bodies[0] ("rod1"): unknown key' not in message  # inertia/position are known
    assert message.splitlines()[-1].startswith("hint: this looks like a spatial mechanism")


def test_a_spatial_mistake_on_the_command_line(tmp_path):
    path = _write(tmp_path, _mutate(BRICARD_TEXT, 'body_i = "rod3"', 'body_i = "rod33"'))
    status, out, err = _run("analyze", path, "--json")
    assert status == 2 and out == "" and "Traceback" not in err
    assert err.splitlines() == [
        f"redundax: error: {path}: pairs[2] (\"J2\") key 'body_i': unknown body 'rod33' "
        "(did you mean 'rod3'? known bodies: rod1, rod2, rod3, rod4, rod5, ground)"
    ]


J2_POINT = "point = [1.0, -1.0, 0.0]\naxis"


def test_body_frame_points_and_an_inconsistent_configuration(tmp_path):
    # Joint J2 by its points in the frames of rod 3 (centre (1, −1, 0.5)) and rod 2
    # (centre (1, −0.5, 0)) instead of the global point (1, −1, 0): the same model.
    local = "point_i = [0.0, 0.0, -0.5]\npoint_j = [0.0, -0.5, 0.0]\naxis"
    config = load_config(_write(tmp_path, _mutate(BRICARD_TEXT, J2_POINT, local)))
    np.testing.assert_allclose(
        rx.equations.constraint_matrix(config.model, config.state.q, 0.0),
        rx.equations.constraint_matrix(load_config(BRICARD).model, config.state.q, 0.0),
        rtol=0.0,
        atol=TOL_SAME_MODEL,
    )
    # A global point is converted at the initial poses, so it always fits them; body
    # points need not: 1 cm off along rod 3, only J2 is violated.
    moved = local.replace("-0.5]\npoint_j", "-0.49]\npoint_j")
    path = _write(tmp_path, _mutate(BRICARD_TEXT, J2_POINT, moved), "moved.toml")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    problems = info.value.problems
    assert all(p.startswith("inconsistent initial configuration: pair") for p in problems)
    assert [p.split(":")[1].strip() for p in problems] == ["pair 'J2'"]
    assert "consistency_tolerance" in str(info.value)
