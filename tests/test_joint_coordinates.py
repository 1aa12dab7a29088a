"""Joint coordinates (issue 12, seed 002): the DCA's accelerations, reactions and
verdicts against the absolute-coordinate model of the same mechanism.

Independent sources: the absolute-coordinate null-space method and QR test (a second
formulation in the library: other coordinates, other algorithm), a dense joint-space
solve, the stored absolute run of Bricard (`tests/data/bricard_P3_absolute.csv`),
central differences computed here, and the known answers of DESIGN.md (the four-bar:
p = 0, all unique; the parallelogram with a third crank and Bricard: p = 1, nothing
unique)."""

import json
import sys

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import CONFIGS, central_difference, consistent_states, planar_twin, read_reference
from redundax import models
from redundax.joint_coordinates._uniqueness import STEPS

# Accelerations of two formulations at the same state (round-off of the mappings).
TOL_SAME_QDD = 1e-9
# Unique multipliers of the two formulations (relative to the largest).
TOL_SAME_UNIQUE = 1e-7
# Bricard's tracked point P3 against the stored absolute run over 10 s [m].
TOL_P3 = 1e-6
# Autodiff against central differences of the same function.
TOL_GRADIENT = 1e-6


def _beam_pinned_twice():
    """A beam pinned to the ground at both ends (planar): p = 1, mobility 0; the
    forces across the beam are unique, those along it are not."""
    return rx.Mechanism(
        bodies=[rx.Body("beam", mass=2.0, inertia=0.5, position=(0.0, 0.0))],
        pairs=[
            rx.joints.Revolute("P", "beam", "ground", point_i=(-1.0, 0.0), point_j=(-1.0, 0.0)),
            rx.joints.Revolute("Q", "beam", "ground", point_i=(1.0, 0.0), point_j=(1.0, 0.0)),
        ],
        gravity=(0.0, -9.81),
    )


MECHANISMS = {
    "four-bar (p = 0)": models.four_bar,
    "parallelogram, third crank (p = 1)": lambda: models.parallelogram(3),
    "beam pinned twice (p = 1)": _beam_pinned_twice,
    "spatial four-bar (p = 3)": lambda: planar_twin(models.four_bar()),
    "bricard (p = 1)": models.bricard,
    "A02, 1 spatial loop": lambda: planar_twin(models.n_four_bar(1)),
    "A02, 2 spatial loops": lambda: planar_twin(models.n_four_bar(2)),
    "A02, 10 spatial loops": lambda: planar_twin(models.n_four_bar(10)),
    "6-bar (p = 1)": models.six_bar,
    "mobile robot (p = 2)": models.mobile_robot,
}
# Known answers (DESIGN.md): p, and which pairs are unique (None: not checked here).
KNOWN = {
    "four-bar (p = 0)": (0, {"O", "A", "B", "D"}),
    "parallelogram, third crank (p = 1)": (1, set()),
    "beam pinned twice (p = 1)": (1, set()),
    "bricard (p = 1)": (1, set()),
    "spatial four-bar (p = 3)": (3, None),
    "mobile robot (p = 2)": (2, {"A", "D", "E", "F", "G", "H", "drive", "W5"}),
}


@eqx.filter_jit
def _dense(jm, q, qd, t):
    return rx.joint_coordinates.dense_joint_accelerations(
        rx.joint_coordinates.joint_space_terms(jm, q, qd, t)
    )


def _refuse_absolute_decisions(monkeypatch):
    """Every function that decides an absolute-coordinate model (`rx.decide`, the
    `Structure` and its verdicts, `rx.analyze_solvability`, the QR test of one
    configuration) raises, wherever a module of redundax holds it."""
    from redundax import _solvability, _structure

    refused_functions = [
        _structure.decide, _structure.verdicts_at, _structure.group_verdicts,
        _structure.row_verdicts, _structure.left_null_space, _structure._nearby,
        _solvability.analyze_solvability,
    ]  # fmt: skip

    def refused(*args, **kwargs):
        raise AssertionError("the joint-coordinate verdicts decided the absolute model")

    patched = 0
    for name, module in list(sys.modules.items()):
        if name == "redundax" or name.startswith("redundax."):
            for attr, value in list(vars(module).items()):
                if any(value is f for f in refused_functions):
                    monkeypatch.setattr(module, attr, refused)
                    patched += 1
    assert patched >= len(refused_functions)
    with pytest.raises(AssertionError, match="decided the absolute model"):
        rx.decide(models.four_bar().build(), jnp.zeros(9))


@pytest.mark.parametrize("name", MECHANISMS)
def test_dca_verdicts_are_the_qr_verdicts(name, monkeypatch):
    """Per pair and per reaction component, seed 002's analysis inside the DCA decides
    as the QR test on the absolute-coordinate C (the propagation's open cases by the
    DCA's self-stresses), with the same p and mobility; and what a run claims
    (`stable_unique` / `stable_row_unique`: unique here and at the generic
    configuration next to it) is what `rx.decide` claims for an absolute run. The
    joint verdicts are decided with every absolute-model decision refused (issue 39
    item 2: no second model); the absolute ones are decided afterwards, as the
    reference."""
    mech = MECHANISMS[name]()
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    _refuse_absolute_decisions(monkeypatch)
    report = rx.joint_coordinates.joint_uniqueness(
        jm, rx.joint_coordinates.decide_joint(jm, jstate), jstate
    )
    seed = None
    if name in ("four-bar (p = 0)", "bricard (p = 1)"):
        seed = rx.joint_coordinates.joint_uniqueness(
            jm, rx.joint_coordinates.decide_joint(jm, jstate, ground="root"), jstate
        )
    monkeypatch.undo()
    # The reference: `rx.decide`'s QR test on C at this configuration (`unique`,
    # `row_unique`) and what an absolute run claims (`stable_*`: unique here and at
    # the generic configuration next to it).
    run = rx.decide(model, state.q, state.t)
    assert report.redundancy == int(run.redundancy)
    assert report.mobility == int(run.dof)
    assert run.names[: len(model.pairs)] == model.pair_names
    for k, pair in enumerate(model.pairs):
        assert report.unique[k] == bool(run.unique[k]), pair.name
        rows = tuple(bool(run.row_unique[r]) for r in pair.rows)
        assert report.row_unique[k] == rows, pair.name
    for k, pair in enumerate(model.pairs):
        assert report.stable_unique[k] == bool(run.stable_unique[k]), pair.name
        rows = tuple(bool(run.stable_row_unique[r]) for r in pair.rows)
        assert report.stable_row_unique[k] == rows, pair.name
    assert report.nearby_residual <= 1e-10
    if name in KNOWN:
        p, unique = KNOWN[name]
        assert report.redundancy == p
        if unique is not None:
            assert {n for n, u in zip(report.names, report.unique, strict=True) if u} == unique
    # Every pair is decided by a named step; the propagation's verdicts are the QR
    # test's (checked above). With seed 002's assembly (the base joined last) the
    # four-bar is decided from the base up (step 1), Bricard's single loop by steps
    # 1 and 3 alone, no self-stress test needed, and the verdicts are the same.
    assert set(report.step) <= set(STEPS)
    if seed is not None:
        assert (seed.unique, seed.row_unique) == (report.unique, report.row_unique)
        assert (seed.stable_unique, seed.stable_row_unique) == (
            report.stable_unique,
            report.stable_row_unique,
        )
        steps = {"assembly"} if name == "four-bar (p = 0)" else {"dropped", "two pairs"}
        assert set(seed.step) == steps


def test_a_joint_run_claims_verdicts_without_deciding_the_absolute_model(
    monkeypatch, capsys, tmp_path
):
    """`redundax simulate configs/mobile_robot.toml --coordinates joint` with every
    absolute-model decision refused: the run reports, per pair and per component,
    in its JSON and its run file, the stable verdicts `rx.decide` gives at the
    file's initial state (decided here afterwards, as the reference; what the same
    run in absolute coordinates claims, README step 4): B's and C's x forces,
    unique while the wheels point straight ahead, are not claimed. The run is valid
    to its end. (This one command-line run of the robot serves what were two tests,
    this one and `test_joint_runs.py`'s "joint runs of the robot report the absolute
    runs' verdicts", which ran the same command: issue 40.)"""
    from redundax import cli
    from redundax.io import read_run
    from redundax.io.config import load_config
    from redundax.io.results import component_labels

    robot = CONFIGS / "mobile_robot.toml"
    out_file = tmp_path / "joint.npz"
    _refuse_absolute_decisions(monkeypatch)
    argv = ["simulate", robot, "--coordinates", "joint", "--t-final", "0.2", "--json"]
    status = cli.main([str(a) for a in [*argv, "--out", out_file]])
    out = capsys.readouterr()
    run_file = read_run(out_file)
    monkeypatch.undo()
    assert status == 0, out.err
    claimed = json.loads(out.out)
    assert run_file["unique"] == claimed["unique"]
    assert run_file["component_unique"] == claimed["components"]
    config = load_config(robot)
    model, state = config.model, config.state
    reference = rx.decide(model, state.q, state.t)
    assert claimed["unique"] == {
        name: bool(reference.stable_unique[g]) for g, name in enumerate(model.pair_names)
    }
    assert claimed["components"] == {
        pair.name: {
            label: bool(reference.stable_row_unique[r])
            for label, r in zip(component_labels(pair), pair.rows, strict=True)
        }
        for pair in model.pairs
    }
    for name in ("B", "C"):
        assert claimed["components"][name] == {"force x": False, "force y": False}, name
    assert claimed["coordinates"] == "joint"
    assert claimed["valid"] is True and claimed["left_constraints_at"] is None
    assert claimed["valid_until"] == claimed["t_final"] == 0.2
    assert run_file["component_unique"]["B"] == {"force x": False, "force y": False}


# Planar (the robot: a free joint, knife edges, p = 2) and spatial (Bricard: one loop,
# p = 1, nothing unique). The three-crank parallelogram, the 6-bar and the spatial
# four-bar were cut to keep CI within its time (measured when written: 2e-14, 6e-11,
# 1e-13 relative); their verdicts are still checked above. A02's chain: its DCA
# solve against the dense KKT system in `test_dca_kernel.py`, its motion against the
# exact one in `test_joint_runs.py`, its spatial version against absolute coordinates
# in `experiments/bench_dca.py` (≤ 8.3e-14 relative, N = 2-128, at a moving state).
ACCELERATION_CASES = ["mobile robot (p = 2)", "bricard (p = 1)"]


@pytest.mark.parametrize("name", ACCELERATION_CASES)
def test_dca_accelerations_and_unique_reactions_are_the_absolute_ones(name):
    """At a random consistent state: the DCA's body accelerations, mapped to absolute
    coordinates, equal the absolute null-space accelerations; its q̈ equals the dense
    joint-space solve; the unique multipliers are the absolute ones."""
    mech = MECHANISMS[name]()
    model, state0 = mech.build(), mech.initial_state()
    (state,) = consistent_states(model, state0, 1, seed=5)
    jm = rx.joint_coordinates.joint_model(model, state0.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, jstate)
    dyn = eqx.filter_jit(rx.joint_coordinates.dca_dynamics)(
        jm, structure, jstate.q, jstate.qd, jstate.t
    )
    qdd, lam = rx.equations.solve_dynamics(model, state.q, state.qd, state.t)
    scale = float(jnp.max(jnp.abs(qdd)))
    np.testing.assert_allclose(dyn.xdd, qdd, rtol=0, atol=TOL_SAME_QDD * scale)
    # A moving state (random rates): q̈ is far from zero, so the comparison relative
    # to its size means something (at the robot's initial state q̈ = 0).
    assert scale > 1e-2
    dense = _dense(jm, jstate.q, jstate.qd, jstate.t)
    np.testing.assert_allclose(
        dyn.qdd, dense, rtol=0, atol=TOL_SAME_QDD * float(jnp.max(jnp.abs(dense)))
    )
    unique = np.asarray(rx.decide(model, state.q, state.t).row_unique)  # the QR test
    internal = np.isin(np.arange(model.n_constraints), model.internal_rows)
    rows = unique & ~internal
    assert rows.any() == (name != "bricard (p = 1)")  # Bricard: no unique component at all
    np.testing.assert_allclose(
        np.asarray(dyn.multipliers)[rows],
        np.asarray(lam)[rows],
        rtol=0,
        atol=TOL_SAME_UNIQUE * float(jnp.max(jnp.abs(lam))),
    )


def test_bricard_in_joint_coordinates_moves_as_in_absolute_coordinates():
    """10 s of Bricard's motion in joint coordinates (5 joint angles, one cut joint,
    the DCA's q̈) tracks P3 of the stored absolute-coordinate run to 1e-6 m, valid
    at every saved state."""
    mech = models.bricard()
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    traj = rx.simulate(
        jm,
        rx.joint_coordinates.to_joint_state(jm, state),
        10.0,
        saveat=rx.SaveAt(n=101),
        stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-10),
    )
    _, rows = read_reference("bricard_P3_absolute.csv")
    np.testing.assert_allclose(traj.ts, rows[:, 0], atol=1e-12)
    p3 = jax.jit(jax.vmap(lambda x: rx.equations.marker_positions(model, x)[0]))(traj.x)
    assert float(np.max(np.abs(np.asarray(p3) - rows[:, 1:]))) < TOL_P3
    assert float(traj.position_violation.max()) < 1e-7
    # A feasible run is judged valid throughout (issue 34: no false alarm).
    assert bool(np.all(traj.valid)) and float(traj.left_at) == np.inf


def test_gradient_of_a_unique_joint_reaction_wrt_a_link_length():
    """d(force of the four-bar's ground pivot O along x)/d(crank length), through the
    DCA (the crank's length: its pin A moved along the crank, in the model, which the
    tree joint reads), the loop re-closed for each length by the DCA's projection
    (two Newton steps from the given joint state: the closed configuration and
    rates nearest it in the kinetic metric), equals central differences. (vmap over
    states: `test_joint_runs.py`, through whole motions.)"""
    mech = models.four_bar()
    model, state0 = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state0.q)
    (state,) = consistent_states(model, state0, 1, seed=2)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, jstate)
    row = model.pair("O").rows[0]
    assert model.pair("A").bodies[0] == "crank"  # A's point s_i is on the crank
    (revolutes,) = model.holonomic  # the four revolutes, stacked in pair order
    k = [p.name for p in model.pairs].index("A")

    def reaction(scale):
        moved = eqx.tree_at(
            lambda m: m.model.holonomic[0].s_i, jm, revolutes.s_i.at[k].multiply(scale)
        )
        q, qd = rx.joint_coordinates.project_joint_state(
            moved, structure, rx.drift.StepProjection(iterations=2), jstate.q, jstate.qd, jstate.t
        )
        return rx.joint_coordinates.dca_dynamics(moved, structure, q, qd, jstate.t).multipliers[row]

    # One compiled program serves the gradient and the differences' values: every
    # call passes a NumPy float64 scalar (`jnp.asarray(1.0)` is weakly typed and
    # would compile the program a second time).
    value_and_grad = jax.jit(jax.value_and_grad(reaction))
    value, grad = value_and_grad(np.float64(1.0))
    fd = float(central_difference(lambda s: value_and_grad(s[0])[0], np.asarray([1.0]))[0])
    assert abs(float(grad)) > 1e-2 * abs(float(value))
    assert abs(float(grad) - fd) < TOL_GRADIENT * max(1.0, abs(fd))


def test_the_joint_projection_honours_its_tolerance():
    """`project_joint_state` with `StepProjection(tolerance=τ)` corrects only where
    the residual exceeds τ, as the absolute path's mask (positions and velocities
    apart): the four-bar off its loop with τ above both residuals is left as it is,
    to the last bit; with τ between them only the velocities are corrected (C ẋ + b
    to round-off, the positions untouched); with τ below both the positions too
    (|Φ| down by Newton's square). A run then holds its states to τ where τ is the
    larger, as an absolute run (`redundax._simulate.tolerances`)."""
    from redundax.joint_coordinates._run import run_tolerances
    from redundax.joint_coordinates._terms import jitted_body_terms

    mech = models.four_bar()
    model, state0 = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state0.q)
    js = rx.joint_coordinates.to_joint_state(jm, state0)
    structure = rx.joint_coordinates.decide_joint(jm, js)
    rng = np.random.default_rng(0)
    q = js.q + 1e-3 * rng.standard_normal(js.q.shape)  # off the loop, on the tree
    qd = js.qd + 1e-1 * rng.standard_normal(js.q.shape)

    def residuals(q, qd):  # max |Φ|, max |C ẋ + b| of the loop's rows (the program
        # `decide_joint` compiled; the tree's rows hold by construction)
        terms = jitted_body_terms(jm, structure.rows, q, qd, 0.0)
        return float(jnp.max(jnp.abs(terms.phi))), float(jnp.max(jnp.abs(terms.velocity_error)))

    phi, vel = residuals(q, qd)
    assert 1e-4 < phi < vel / 10  # the two residuals apart

    def project(tolerance):  # τ an array: one program for every τ
        projection = rx.drift.StepProjection(iterations=1, tolerance=jnp.asarray(tolerance))
        return rx.joint_coordinates.project_joint_state(jm, structure, projection, q, qd, 0.0)

    above = project(2.0 * vel)
    np.testing.assert_array_equal(above[0], q)
    np.testing.assert_array_equal(above[1], qd)
    between = project(np.sqrt(phi * vel))
    np.testing.assert_array_equal(between[0], q)
    assert residuals(*between)[1] < 1e-13
    below = project(0.5 * phi)
    assert residuals(*below)[0] < 10 * phi**2 and residuals(*below)[1] < 1e-13
    # What the run holds its states to.
    none = run_tolerances(jm, js.q, rx.drift.StepProjection(), 1e-8)
    tau = run_tolerances(jm, js.q, rx.drift.StepProjection(tolerance=0.05), 1e-8)
    assert float(none.step) < float(none.saved) < 0.05
    assert float(tau.step) == float(tau.saved) == 0.05


def test_joint_coordinates_round_trip_and_bad_trees_are_named():
    """Absolute → joint → absolute is the identity on the constraint manifold; a
    configuration that breaks a tree joint, a tree that closes a loop and a pair
    without joint coordinates are refused with the pair's name."""
    mech = models.mobile_robot()
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    assert jm.coordinate_names[:3] == (
        "free(platform).x",
        "free(platform).y",
        "free(platform).angle",
    )
    back = rx.joint_coordinates.to_absolute_state(
        jm, rx.joint_coordinates.to_joint_state(jm, state)
    )
    np.testing.assert_allclose(back.q, state.q, atol=1e-14)
    np.testing.assert_allclose(back.qd, state.qd, atol=1e-12)
    four = models.four_bar()
    fmodel, fstate = four.build(), four.initial_state()
    fjm = rx.joint_coordinates.joint_model(fmodel, fstate.q)
    with pytest.raises(ValueError, match=r"violates tree joints, (.*): A \(\|Φ\| = 0.01\)"):
        rx.joint_coordinates.to_joint_state(fjm, rx.State(0.0, fstate.q.at[3].add(0.01), fstate.qd))
    with pytest.raises(ValueError, match=r"'B' close loops"):
        rx.joint_coordinates.joint_model(fmodel, fstate.q, tree=["O", "A", "B", "D"])
    with pytest.raises(ValueError, match=r"pair 'drive' is a translational-driver"):
        rx.joint_coordinates.joint_model(model, state.q, tree=["A", "drive"])


def test_analyze_in_joint_coordinates_on_the_command_line(capsys):
    """`redundax analyze FILE --coordinates joint`: the same file analysed in joint
    coordinates, with the step that decided each pair (JSON), as the absolute test
    decides (DESIGN.md §8: the six-bar's p = 1)."""
    from redundax import cli

    path = str(CONFIGS / "six_bar.toml")
    status = cli.main(["analyze", path, "--coordinates", "joint", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0
    assert out["coordinates"] == "joint" and out["redundancy"] == 1 and out["dof"] == 1
    assert cli.main(["analyze", path, "--json"]) == 0
    absolute = json.loads(capsys.readouterr().out)
    verdicts = {p["name"]: p["unique"] for p in out["pairs"]}
    assert verdicts == {name: p["unique"] for name, p in absolute["pairs"].items()}
    assert all(p["decided_by"] for p in out["pairs"])
