"""Design optimisation (issue 5): the gradient of the design objective against
central finite differences computed here, a short optimisation of the mobile
robot's steering linkage that decreases its objective monotonically and keeps the
rank of C, the `redundax optimize` command on the four-bar, and the messages for
mistakes in design files."""

import dataclasses
import json
import textwrap
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import four_bar_design
from redundax import cli
from redundax.io.config import ConfigError
from redundax.optimize import DesignProblem, load_design, optimize_design

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
ROBOT_DESIGN = CONFIGS / "design_mobile_robot.toml"
# Central differences of the objective in the scaled variables, step 1e-3 (5e-6 m
# for b_x): the objective is smooth there; at rtol 1e-10 its noise is ~1e-10.
FD_STEP = 1e-3
TOL_FD = 1e-5


def _short(design, t_final, n_save, **changes):
    options = dataclasses.replace(
        design.simulation, t_final=t_final, n_save=n_save, rtol=1e-10, atol=1e-12
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
    assert rows[0].startswith("step,ground_pivot_x,objective,peak-reaction O")
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
    q, _ = rx.Projection(iterations=8)(model, state.q, state.qd, state.t)
    assert float(jnp.max(jnp.abs(rx.position_residual(model, q, state.t)))) < 1e-12
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
