"""Design optimisation (issue 5): the gradient of the design objective against
central finite differences computed here, a short optimisation of the mobile
robot's steering linkage that decreases its objective monotonically and keeps the
rank of C, the `redundax optimize` command on the four-bar, and the messages for
mistakes in design files."""

import csv
import dataclasses
import functools
import json
import math
import textwrap
import types
from pathlib import Path

import diffrax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import four_bar_design
from redundax import cli
from redundax.io.config import ConfigError
from redundax.optimize import DesignProblem, Evaluation, load_design, optimize_design
from redundax.optimize._problem import _succeeded

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
ROBOT_DESIGN = CONFIGS / "design_mobile_robot.toml"
# Central differences of the objective in the scaled variables, step 1e-3 (5e-6 m
# for b_x): the objective is smooth there; at rtol 1e-10 its noise is ~1e-10.
FD_STEP = 1e-3
TOL_FD = 1e-5


def _short(design, t_final, n_save, **changes):
    options = dataclasses.replace(
        design.simulation,
        t_final=t_final,
        saveat=rx.SaveAt(n=n_save),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    return dataclasses.replace(
        design, config=dataclasses.replace(design.config, simulation=options), **changes
    )


@pytest.fixture(scope="module")
def robot_problem():
    """The steering-linkage design on the first 1.5 s of the manoeuvre (the first
    right turn's ramp), one compilation for the whole module."""
    design = _short(load_design(ROBOT_DESIGN), 1.5, 31, steps=4)
    return design, DesignProblem(design)


# One compilation of the reverse pass through the robot's solve.
def test_design_gradient_matches_central_differences(robot_problem):
    design, problem = robot_problem
    z0 = jnp.asarray([0.3, -0.2, 0.4])  # away from the nominal design
    reference = jnp.ones(1)
    (value, evaluation), grad = problem.value_and_grad(z0, reference)
    assert float(evaluation.penalty) == 0.0  # the assemblability penalty is inactive here
    fd = np.zeros(3)
    for i in range(3):
        e = np.zeros(3)
        e[i] = FD_STEP
        plus = float(problem.value_and_grad(z0 + e, reference)[0][0])
        minus = float(problem.value_and_grad(z0 - e, reference)[0][0])
        fd[i] = (plus - minus) / (2 * FD_STEP)
    errors = np.abs(np.asarray(grad) - fd) / np.abs(fd)
    print("design gradient", np.asarray(grad), "FD", fd, "relative errors", errors)
    assert np.all(np.abs(fd) > 1e-2 * float(value))  # each variable matters
    assert np.all(errors < TOL_FD), errors


def test_optimisation_decreases_the_peak_and_keeps_the_rank(robot_problem):
    design, problem = robot_problem
    result = optimize_design(design, problem=problem)
    objectives = [s.objective for s in result.accepted]
    assert len(objectives) >= 3
    assert all(b < a for a, b in zip(objectives, objectives[1:], strict=False))
    # The peak driving force itself (sampled maximum, N) falls by more than 5 %.
    before, after = result.initial_evaluation.peaks[0], result.final_evaluation.peaks[0]
    assert after < 0.95 * before, (before, after)
    # The final design passes the solvability analysis with the same rank (20), and
    # the same pairs are unique as in the nominal robot (DESIGN.md §6).
    assert result.initial_rank == result.final_rank == 20
    unique = {p for p, u in result.final_unique.items() if u}
    assert unique == {"A", "D", "E", "F", "G", "H", "drive", "W5"}
    # Bounds hold.
    for (name, _), x in zip(result.variables, result.final, strict=True):
        v = next(v for v in design.variables if v.name == name)
        assert v.lower <= x <= v.upper


def test_optimize_command_writes_the_result(tmp_path, capsys):
    design = four_bar_design(tmp_path)
    out = tmp_path / "result"
    status = cli.main(["optimize", str(design), "--out", str(out), "--json", "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["format"] == "redundax design 1"
    assert summary["same_rank"] and summary["final_rank"] == 8
    history = [s["objective"] for s in summary["history"] if s["accepted"]]
    assert history[0] == pytest.approx(1.0)  # normalised by the initial value
    assert history == sorted(history, reverse=True)
    for name in ("design.json", "history.csv", "design.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "design.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "design.json").read_text()) == summary
    rows = (out / "history.csv").read_text().splitlines()
    assert rows[0].startswith("step,ground_pivot_x,objective,peak-reaction O: smooth peak")
    assert len(rows) == 1 + len(summary["history"])
    # A second run refuses to overwrite, and names the file and the fix.
    status = cli.main(["optimize", str(design), "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2
    assert "design.json: already exists; pass --force" in err


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            lambda s: s.replace('"pairs.D.point_j.x"', '"pairs.D.point_jj.x"'),
            "unknown sweep parameter 'pairs.D.point_jj.x' (did you mean 'pairs.D.point_j.x'",
        ),
        (
            lambda s: s.replace('pair = "O"', 'pair = "Q"'),
            "objective[0] key 'pair': no pair named 'Q'",
        ),
        (
            lambda s: s.replace("steps = 3", 'optimizer = "newton"'),
            "optimize key 'optimizer': expected one of 'adam', 'sgd', 'adabelief'",
        ),
        (
            lambda s: s.replace("lower = 0.9", "lower = 1.05"),
            "variables[0] ('ground_pivot_x'): the initial value 1 is outside",
        ),
        (
            lambda s: s.replace("learning_rate = 0.5", "learning_rat = 0.5"),
            "optimize: unknown key 'learning_rat' (did you mean 'learning_rate'?",
        ),
        (
            lambda s: s.replace('type = "peak-reaction"', 'type = "peak"'),
            "objective[0] key 'type': expected one of 'peak-reaction', 'reaction-impulse'",
        ),
    ],
)
def test_design_file_mistakes_are_named(tmp_path, edit, message):
    design = four_bar_design(tmp_path, edit)
    with pytest.raises(ConfigError) as err:
        load_design(design)
    assert str(err.value).startswith(f"{design}: ")
    assert message in str(err.value)


def test_a_non_unique_reaction_cannot_be_an_objective(tmp_path):
    text = ROBOT_DESIGN.read_text().replace('pair = "drive"', 'pair = "B"')
    text = text.replace(
        'mechanism = "mobile_robot.toml"', f'mechanism = "{ROBOT_DESIGN.parent}/mobile_robot.toml"'
    )
    design = tmp_path / "design.toml"
    design.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_design(design)
    message = str(err.value)
    assert "the reaction of B is not unique (degree of redundancy 2)" in message
    # B's x force is unique only while the wheels point straight ahead (README,
    # step 4): no component of B is offered, and the x force alone is refused too.
    assert "choose a pair that a run reports unique" in message
    component = text.replace('pair = "B"', 'pair = "B"\ncomponent = "force x"', 1)
    design.write_text(component)
    with pytest.raises(ConfigError, match=r"the reaction of B \(force x\) is not unique"):
        load_design(design)


def test_missing_design_file_and_missing_mechanism(tmp_path, capsys):
    status = cli.main(["optimize", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")])
    assert status == 2
    assert "nope.toml: no such file" in capsys.readouterr().err
    design = tmp_path / "design.toml"
    design.write_text(textwrap.dedent("[optimize]\nsteps = 2\n"))
    with pytest.raises(ConfigError, match="optimize: missing key 'mechanism'"):
        load_design(design)


def test_final_design_variant_is_consistent(robot_problem):
    """The design map moves both sides symmetrically: at the nominal variables the
    model is the nominal one, and a changed b_x moves D and E's arm points by ∓Δ
    and the half-link points by ∓Δ/2 (the straight-ahead loop still closes)."""
    design, problem = robot_problem
    model0, _ = problem.variant(jnp.asarray(problem.x0))
    np.testing.assert_array_equal(
        np.asarray(model0.holonomic[0].s_j), np.asarray(problem.model.holonomic[0].s_j)
    )
    delta = 0.004
    x = problem.x0 + np.array([delta, 0.0, 0.0])
    model, state = problem.variant(jnp.asarray(x))
    q, _ = rx.drift.Projection(iterations=8)(model, state.q, state.qd, state.t)
    assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, q, state.t)))) < 1e-12
    # With the slider centred the wheels stay straight: their angles do not change.
    names = model.bodies.names
    for wheel in ("wheel_left", "wheel_right"):
        b = names.index(wheel)
        assert abs(float(q[3 * b + 2])) < 1e-12


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_missing_mechanism_file_names_the_design_file_and_its_key(tmp_path, capsys, kind):
    """`[optimize] mechanism = "nothere.toml"`: the error names the design file, the
    table and the key, not only the mechanism path (exit 2)."""
    if kind == "directory":
        (tmp_path / "nothere.toml").mkdir()
    design = tmp_path / "design.toml"
    design.write_text('[optimize]\nmechanism = "nothere.toml"\n')
    with pytest.raises(ConfigError) as info:
        load_design(design)
    error = info.value
    assert (error.path, error.table, error.key) == (str(design), "optimize", "mechanism")
    target = str(tmp_path / "nothere.toml")
    what = "no such file" if kind == "missing" else "is a directory"
    assert str(error).startswith(f"{design}: optimize key 'mechanism': ")
    assert target in str(error) and what in str(error)
    status = cli.main(["optimize", str(design), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"redundax: error: {design}: optimize key 'mechanism': ")


def test_steps_count_iterations_the_first_at_the_initial_design(robot_problem):
    """`steps` counts iterations, each one evaluation of J and ∇J, the first at x₀:
    N iterations make at most N − 1 optimiser updates, and the result says so."""
    design, problem = robot_problem
    one = optimize_design(design, steps=1, problem=problem)
    assert len(one.history) == 1 and one.history[0].accepted
    np.testing.assert_array_equal(one.final, one.initial)  # no update was made
    assert one.stopped == "1 iteration(s) done (0 optimiser update(s))"
    two = optimize_design(design, steps=2, problem=problem)
    assert len(two.history) == 2
    assert two.history[1].x != two.history[0].x  # one update, evaluated
    if two.history[1].accepted:
        assert two.stopped in (
            "2 iteration(s) done (1 optimiser update(s))",
            f"relative decrease below tolerance {design.tolerance:g}",
        )


def test_steps_help_and_the_warning_for_one_iteration(tmp_path, capsys, monkeypatch):
    """--help says what is counted; `--steps 1` warns that it makes no update."""
    assert cli.main(["optimize", "--help"]) == 0
    assert "N iterations make at most N - 1 optimiser updates" in " ".join(
        capsys.readouterr().out.split()
    )
    from redundax.cli import optimize as command

    def stop(design, **kwargs):
        raise ValueError(f"stopped before computing ({design.steps} step)")

    monkeypatch.setattr(command, "optimize_design", stop)
    design = four_bar_design(tmp_path)
    status = cli.main(["optimize", str(design), "--out", str(tmp_path / "o"), "--steps", "1"])
    err = capsys.readouterr().err.splitlines()
    assert status == 1
    assert err[0] == (
        "redundax: warning: --steps = 1: one iteration evaluates the initial design only, "
        "with no optimiser update (N iterations make at most N - 1 updates)"
    )
    assert err[-1] == "redundax: error: stopped before computing (1 step)"


# ------------------------------------------------------------ rejections (issue 34)

MASS_VARIABLE = """
[[optimize.variables]]
name = "crank_mass"
unit = "kg"
scale = 0.04
addresses = { "bodies.crank.mass" = 1.0 }
"""


def _with_crank_mass(text):
    """The four-bar design with a second variable, the crank's mass (0.4 kg)."""
    return text + MASS_VARIABLE


class _ClosedForm(DesignProblem):
    """The design problem of a design file with its simulation replaced by a
    closed form (the optimiser's loop, its checks and the files are the real
    ones): term(x) = 50 (1 + 100 (x₀ − 1.02)²) N, x₀ the ground pivot (52 N at the
    initial design), its peak 1.25 times that. Subclasses say where the gradient
    is not finite (`nan_in`) and where the motion left its constraints
    (`left_at`)."""

    def __init__(self, design):
        super().__init__(design)
        self.value_and_grad = self._closed_form  # in place of the compiled simulation

    def nan_in(self, x):
        return np.zeros(len(x), dtype=bool)

    def left_at(self, x):
        return math.inf

    def _closed_form(self, z, reference):
        x = np.asarray(self.x(np.asarray(z)))
        term = np.array([50.0 * (1.0 + 100.0 * (x[0] - 1.02) ** 2)])
        grad = np.zeros(len(x))
        grad[0] = 50.0 * 200.0 * (x[0] - 1.02) * self.scale[0] / reference[0]
        grad[self.nan_in(x)] = np.nan
        left = self.left_at(x)
        objective = float(term[0] / reference[0]) if math.isinf(left) else math.inf
        peaks = 1.25 * term if self.design.objective[0].kind == "peak-reaction" else term * np.nan
        evaluation = Evaluation(
            objective=objective,
            penalty=0.0,
            terms=term,
            peaks=peaks,
            magnitude=np.full((1, 3), term[0]),
            ts=np.linspace(0.0, 0.6, 3),
            min_ratio=1.0,
            initial_correction=0.0,
            **({} if math.isinf(left) else {"left_at": left}),  # the default: inf
        )
        return (objective, evaluation), grad


def _history_rows(folder):
    with open(folder / "history.csv", newline="") as file:
        return list(csv.DictReader(file))


def test_a_gradient_that_is_not_finite_at_the_initial_design_is_refused_in_one_line(
    tmp_path, capsys, monkeypatch
):
    """A symmetric design (a 3-RRR with identical legs) gave NaN gradients; the
    first iteration was rejected, and the rejection stepped from a design that did
    not exist: JAX's 'Expected None, got Array([0.])' (flatten-up-to), exit 1, no
    files. Now one line names the variable (its addresses) whose derivative is not
    finite and the design; history.csv keeps the iteration."""

    class NaNInTheMass(_ClosedForm):
        def nan_in(self, x):
            return np.array([False, True])

    monkeypatch.setattr("redundax.optimize._optimizer.DesignProblem", NaNInTheMass)
    design = four_bar_design(tmp_path, _with_crank_mass)
    out = tmp_path / "out"
    status = cli.main(["optimize", str(design), "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    reason = (
        "the gradient of the objective is not finite (NaN) with respect to crank_mass "
        "(bodies.crank.mass) at ground_pivot_x = 1 m, crank_mass = 0.4 kg"
    )
    assert (status, captured.out) == (1, "")
    assert captured.err == (
        f"redundax: error: {design}: the initial design was rejected: {reason}; the optimiser "
        "has no design to step from (start from a design next to it: the variables' "
        f"'initial') ({out / 'history.csv'} keeps the 1 iteration(s) done)\n"
    )
    rows = _history_rows(out)
    assert [(r["step"], r["accepted"], r["rejection"]) for r in rows] == [("0", "False", reason)]
    assert not (out / "design.json").exists() and not (out / "design.png").exists()
    # Python: the same line, as a ValueError.
    with pytest.raises(ValueError) as info:
        optimize_design(load_design(design))
    assert str(info.value).startswith(f"{design}: the initial design was rejected: {reason}; ")


def test_rejected_steps_say_why_and_the_optimiser_goes_on(tmp_path, capsys, monkeypatch):
    """After an accepted step, a design whose gradient is NaN and one whose motion
    left its constraints are each rejected with their one line (progress, history.csv,
    design.json), the design goes back and the run ends normally."""

    class Rejects(_ClosedForm):
        # Adam's first update moves the pivot by learning_rate · scale = 5 mm
        # (towards 1.02 m), the next one, halved, by 2.5 mm.
        def nan_in(self, x):
            return np.array([x[0] > 1.004, False])

        def left_at(self, x):
            return 0.25 if 1.001 < x[0] <= 1.004 else math.inf

    monkeypatch.setattr("redundax.optimize._optimizer.DesignProblem", Rejects)
    design = four_bar_design(tmp_path, _with_crank_mass)
    out = tmp_path / "out"
    status = cli.main(["optimize", str(design), "--out", str(out), "--json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    history = json.loads(captured.out)["history"]
    assert [s["accepted"] for s in history] == [True, False, False]
    x1, x2 = history[1]["x"][0], history[2]["x"][0]
    assert x1 == pytest.approx(1.005, abs=1e-6) and x2 == pytest.approx(1.0025, abs=1e-6)
    nan = (
        "the gradient of the objective is not finite (NaN) with respect to ground_pivot_x "
        f"(pairs.D.point_j.x) at ground_pivot_x = {x1:.10g} m, crank_mass = 0.4 kg"
    )
    left = "the motion left its constraints at t = 0.25 s"
    assert [s["rejection"] for s in history] == ["", nan, left]
    assert history[2]["objective"] is None
    assert [r["rejection"] for r in _history_rows(out)] == ["", nan, left]
    progress = [line for line in captured.err.splitlines() if "optimize iteration" in line]
    assert progress[1].endswith(f"(rejected: {nan}; learning rate halved)")
    assert progress[2].endswith(f"(rejected: {left}; learning rate halved)")
    assert "Traceback" not in captured.err


@pytest.mark.parametrize("kind", ["peak-reaction", "reaction-impulse"])
def test_one_word_per_quantity_on_the_console_in_history_csv_and_design_json(
    tmp_path, capsys, monkeypatch, kind
):
    """The console's 'peak' was the sampled maximum while history.csv held the
    smooth peak under the term's label: now 'peak' is the sampled maximum and
    'smooth peak' the power mean (a peak term's value) everywhere; an impulse term
    has an 'impulse' and no peak."""
    monkeypatch.setattr("redundax.optimize._optimizer.DesignProblem", _ClosedForm)
    design = four_bar_design(tmp_path, lambda s: s.replace('"peak-reaction"', f'"{kind}"'))
    out = tmp_path / "out"
    status = cli.main(["optimize", str(design), "--out", str(out), "--quiet"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    result = json.loads((out / "design.json").read_text())
    label = f"{kind} O"
    rows = (out / "history.csv").read_text().splitlines()
    first = _history_rows(out)[0]
    t1 = result["final"]["terms"][0]
    if kind == "peak-reaction":
        assert result["term_quantities"] == ["smooth peak"]
        assert (result["initial"]["terms"], result["initial"]["peaks"]) == ([52.0], [65.0])
        assert rows[0] == (
            "step,ground_pivot_x,objective,peak-reaction O: smooth peak,peak-reaction O: peak,"
            "penalty,min_singular_ratio,gradient_norm,learning_rate,accepted,rejection,seconds"
        )
        assert (first[f"{label}: smooth peak"], first[f"{label}: peak"]) == ("52.0", "65.0")
        p1 = result["final"]["peaks"][0]
        change = f"{100 * (t1 / 52.0 - 1):+.1f} %"
        line = f"  {label}: peak 65 -> {p1:.6g} ({change}), smooth peak 52 -> {t1:.6g} ({change})"
    else:
        assert result["term_quantities"] == ["impulse"]
        assert (result["initial"]["terms"], result["initial"]["peaks"]) == ([52.0], [None])
        assert rows[0].split(",")[3:5] == ["reaction-impulse O: impulse", "penalty"]
        assert first[f"{label}: impulse"] == "52.0"
        line = f"  {label}: impulse 52 -> {t1:.6g} ({100 * (t1 / 52.0 - 1):+.1f} %)"
    assert line in captured.out.splitlines(), captured.out


# ------------------------------------------- a motion that leaves its constraints


CRANK, COUPLER, ROCKER = 0.4, 1.2, 0.8  # configs/four_bar.toml
THETA0, SPEED = math.pi / 3, 2 * math.pi  # the driven crank's start [rad], speed [rad/s]


def _driven_four_bar(folder, pivot_x):
    """configs/four_bar.toml with its rocker's ground pivot D at (`pivot_x`, 0),
    assembled at the crank angle π/3, the crank driven at 2π rad/s (a revolute
    driver; the initial velocities are projected)."""
    a = (CRANK * math.cos(THETA0), CRANK * math.sin(THETA0))
    dx, dy = pivot_x - a[0], -a[1]
    d = math.hypot(dx, dy)
    along = (d**2 + COUPLER**2 - ROCKER**2) / (2 * d)
    up = math.sqrt(COUPLER**2 - along**2)
    b = (a[0] + (along * dx - up * dy) / d, a[1] + (along * dy + up * dx) / d)
    text = (CONFIGS / "four_bar.toml").read_text()
    coupler = f"[{(a[0] + b[0]) / 2!r}, {(a[1] + b[1]) / 2!r}]"
    for old, new in (
        ("[0.7694048299802483, 0.535561264061883]", coupler),
        ("0.3207220116342567", repr(math.atan2(b[1] - a[1], b[0] - a[0]))),
        ("[1.1694048299802482, 0.3623561833049952]", f"[{(pivot_x + b[0]) / 2!r}, {b[1] / 2!r}]"),
        ("1.1334775730029172", repr(math.atan2(b[1], b[0] - pivot_x))),
        ("point_j = [1.0, 0.0]", f"point_j = [{pivot_x!r}, 0.0]"),
        ("t_final = 2.0", 'initial = "project"\nt_final = 2.0'),
        (
            "[[markers]]",
            '[[pairs]]\nname = "drive"\ntype = "revolute-driver"\nbody_i = "crank"\n'
            f'body_j = "ground"\nmotion = {{ type = "polynomial", coefficients = [{THETA0!r}, '
            f"{SPEED!r}] }}\n\n[[markers]]",
        ),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = folder / "driven_four_bar.toml"
    path.write_text(text)
    return path


DRIVEN_DESIGN = """[optimize]
mechanism = "{mechanism}"
steps = 3
t_final = 0.3
n_save = 7

[[optimize.objective]]
type = "peak-reaction"
pair = "O"
order = 8

[[optimize.objective]]
type = "reaction-impulse"
pair = "O"

[[optimize.variables]]
name = "ground_pivot_x"
unit = "m"
lower = 1.4
upper = 1.7
scale = 0.05
addresses = {{ "pairs.D.point_j.x" = 1.0 }}
"""


def _toggle_time(pivot_x):
    """When the driven crank reaches the angle at which its end A is COUPLER + ROCKER
    from D: coupler and rocker in line, the end of the linkage's travel (a Grashof
    four-bar has none; with D beyond 1.6 m it has)."""
    cos = (CRANK**2 + pivot_x**2 - (COUPLER + ROCKER) ** 2) / (2 * CRANK * pivot_x)
    return (math.acos(cos) - THETA0) / SPEED


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    """A driven four-bar whose ground pivot D is at 1.55 m (its crank turns all the
    way round) as the initial design, and its forward evaluation, compiled once."""
    folder = tmp_path_factory.mktemp("driven")
    path = folder / "design.toml"
    path.write_text(DRIVEN_DESIGN.format(mechanism=_driven_four_bar(folder, 1.55)))
    design = load_design(path)
    return design, DesignProblem(design)


def test_a_motion_that_leaves_its_constraints_is_a_failed_evaluation(driven, capsys, monkeypatch):
    """With D at 1.65 m the four-bar is not Grashof: the driven crank reaches the
    end of the linkage's travel (coupler and rocker in line) at t = 0.2440 s and
    the motion leaves its constraints there. That is a failed evaluation, never a
    design: J = inf, with the time, the first iteration's one line names it, and a
    rejected step says it."""
    design, problem = driven
    references = jnp.ones(2)
    good = problem.value(jnp.zeros(1), references)[1]
    assert np.isfinite(float(good.objective)) and float(good.left_at) == math.inf
    # An impulse term has no peak; a peak term's peak lies above its smooth peak.
    assert np.isnan(float(good.peaks[1])) and float(good.peaks[0]) > float(good.terms[0]) > 0.0
    bad_z = jnp.asarray([(1.65 - 1.55) / 0.05])
    bad = problem.value(bad_z, references)[1]
    toggle = _toggle_time(1.65)
    assert float(bad.objective) == math.inf
    # The integration stops at the first step end past the toggle.
    assert 0.0 <= float(bad.left_at) - toggle < 1e-4, (float(bad.left_at), toggle)

    # The optimiser on that design (its evaluation, with a zero gradient): one line.
    def at_the_bad_design(z, reference):
        return problem.value(bad_z, reference), jnp.zeros(1)

    monkeypatch.setattr(problem, "value_and_grad", at_the_bad_design)
    expected = (
        f"{design.path}: the initial design cannot be simulated over 0.3 s: the motion left "
        f"its constraints at t = {float(bad.left_at):.6g} s"
    )
    with pytest.raises(ValueError) as info:
        optimize_design(design, problem=problem)
    assert str(info.value) == expected
    from redundax.cli import optimize as command

    reuse = functools.partial(optimize_design, problem=problem)  # its compiled evaluation
    monkeypatch.setattr(command, "optimize_design", reuse)
    out = Path(design.path).parent / "out"
    status = cli.main(["optimize", str(design.path), "--out", str(out), "--quiet"])
    assert (status, capsys.readouterr().err) == (1, f"redundax: error: {expected}\n")


def test_success_requires_every_saved_state_valid():
    """An integration that reports success is not a design when a saved state is off
    its constraints (`Trajectory.valid`): the time of the first one is reported; a
    trajectory that does not judge validity (`valid` None) is judged by its result."""
    ts = jnp.array([0.0, 0.1, 0.2, 0.3])
    successful = diffrax.RESULTS.successful
    off = types.SimpleNamespace(
        ts=ts, result=successful, valid=jnp.array([True, True, False, False]), left_at=jnp.inf
    )
    ok, left = _succeeded(off)
    assert (bool(ok), float(left)) == (False, 0.2)
    stopped = types.SimpleNamespace(
        ts=ts,
        result=diffrax.RESULTS.event_occurred,
        valid=jnp.array([True, True, False, False]),
        left_at=jnp.asarray(0.1625),
    )
    ok, left = _succeeded(stopped)
    assert (bool(ok), float(left)) == (False, 0.1625)
    on = types.SimpleNamespace(ts=ts, result=successful, valid=jnp.ones(4, bool), left_at=jnp.inf)
    assert tuple(map(float, _succeeded(on))) == (1.0, math.inf)
    unjudged = types.SimpleNamespace(ts=ts, result=successful, valid=None, left_at=None)
    assert tuple(map(float, _succeeded(unjudged))) == (1.0, math.inf)
