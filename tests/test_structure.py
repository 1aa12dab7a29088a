"""`decide` and the `Structure` it returns: every discrete decision taken once and
read by everything downstream (rank, null space, verdicts, topology), checked
against NumPy oracles, and the same numbers eagerly and under `jax.jit`."""

import json

import diffrax
import jax
import numpy as np
import pytest

import redundax as rx
import redundax._solvability as solvability_module
import redundax._structure as structure_module
from helpers import assert_similar_steps
from redundax import models
from redundax.cli import main as cli_main
from redundax.io import read_run

# Eager and jitted simulations run the same code on the same inputs, but XLA
# compiles the two programs differently (fusion, reassociation): round-off
# differences, amplified by the adaptive step sequence, stay below the integration
# tolerance of the run (rtol 1e-8; measured up to 4e-9 on Bricard's velocities).
TOL_EAGER_JIT = 1e-8
# A state off the constraint manifold by this much (within the consistency
# tolerance 1e-8) must not change any decision.
DRIFT = 3e-9


@pytest.fixture(scope="module")
def robot():
    mech = models.mobile_robot()
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def robot_run(robot):
    """One run of the robot, shared by the tests that need states along a motion
    (one compiled program instead of three): 1.5 s, through the steering ramp that
    starts at 0.5 s (the wheels turned at the end), at round-off tolerance, with the
    structure decided at q⁰ passed in."""
    model, state = robot
    structure = rx.decide(model, state.q, state.t)
    traj = rx.simulate(
        model,
        state,
        1.5,
        structure=structure,
        saveat=rx.SaveAt(n=4),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    return structure, traj


@pytest.fixture(scope="module")
def bricard():
    mech = models.bricard()
    return mech.build(), mech.initial_state()


def _numpy_rank(C, rtol=rx.internal.DECISION_RTOL):
    s = np.linalg.svd(C, compute_uv=False)
    return int(np.sum(s > rtol * s[0]))


def test_robot_structure_against_numpy(robot):
    """Rank, independent rows and self-stresses of the mobile robot at q⁰ against
    an SVD in NumPy; the verdicts are the analysis report's (the paper's table)."""
    model, state = robot
    structure = rx.decide(model, state.q, state.t)
    C = np.asarray(rx.equations.constraint_matrix(model, state.q, state.t))
    assert int(structure.rank) == _numpy_rank(C) == 20
    assert int(structure.redundancy) == 2 and int(structure.dof) == 1
    assert int(structure.rank_nearby) == 20 and not structure.singular()
    # A maximal independent set: rank-many rows of full rank.
    keep = np.asarray(structure.independent)
    assert keep.sum() == 20 and _numpy_rank(C[keep]) == 20
    # The self-stresses: N is orthonormal and spans the left null space.
    N = np.asarray(structure.null_space)[:, 20:]
    np.testing.assert_allclose(N.T @ N, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(N.T @ C, 0.0, atol=1e-12)
    s = np.linalg.svd(C, compute_uv=False)
    assert float(structure.sigma_ratio) == pytest.approx(s[19] / s[0], rel=1e-10)
    report = rx.analyze_solvability(model, state.q, state.t)
    np.testing.assert_array_equal(structure.unique, report.unique)
    np.testing.assert_array_equal(structure.row_unique, report.row_unique)
    np.testing.assert_allclose(structure.b_norm, report.b_norm, atol=1e-12)
    # The report built from the structure is the analysis report.
    same = rx.analysis.solvability_report(structure)
    assert same.to_dict()["pairs"].keys() == report.to_dict()["pairs"].keys()
    np.testing.assert_array_equal(same.unique, report.unique)


def test_stable_verdicts_exclude_components_unique_at_one_configuration(robot, robot_run):
    """B's and C's x forces are unique while the wheels point straight ahead (q⁰)
    and not in a turn: the verdict a decision taken once can claim for a whole
    motion (`stable_row_unique`) leaves them out. Checked against the QR test at a
    steered configuration of the same robot."""
    model, state = robot
    structure = rx.decide(model, state.q, state.t)
    rows = {name: model.pair(name).rows for name in ("B", "C")}
    for name, (rx_row, ry_row) in rows.items():
        assert bool(structure.row_unique[rx_row]) and not bool(structure.row_unique[ry_row])
        assert not bool(structure.stable_row_unique[rx_row]), name
    # An oracle: a steered configuration from a simulation (the slider moves from
    # 0.5 s on; the run ends at 1.5 s), analysed at round-off tolerance.
    _, steered = robot_run
    turn = rx.analyze_solvability(model, steered.q[-1], steered.ts[-1], rtol=1e-10)
    for name, (rx_row, _) in rows.items():
        assert not bool(turn.row_unique[rx_row]), name
    # Pair verdicts are structural: the same at q⁰, in the turn and in the structure.
    np.testing.assert_array_equal(structure.stable_unique, turn.unique)
    np.testing.assert_array_equal(structure.unique, turn.unique)


def test_topology(robot, bricard):
    """The body graph: the robot's two closed loops (the steering linkage closes
    through the platform twice), Bricard's one loop of six joints through the
    ground."""
    model, state = robot
    topo = rx.decide(model, state.q).topology
    assert topo.n_loops == 2
    names = model.pair_names
    # Nothing joins the robot to the ground (its wheels roll): one floating part,
    # rooted at its first body, the platform; one tree joint per other body.
    assert len(topo.tree) == model.bodies.count - 1
    assert [b for b, k in enumerate(topo.parent) if k < 0] == [0]
    for loop in topo.loops:
        assert len(loop) == 4  # platform – wheel – link – trolley (four-bar loops)
    # Knife edges and the driver are constraints on the tree, not edges.
    assert {names[k] for k in topo.extra} == {"drive", "W1", "W2", "W3", "W4", "W5"}
    model, state = bricard
    topo = rx.decide(model, state.q).topology
    assert topo.n_loops == 1 and len(topo.loops[0]) == 6 and len(topo.tree) == 5


def test_decide_is_the_same_eagerly_jitted_and_vmapped(robot, robot_run):
    """`decide` is pure: jit ≡ eager, and vmap over configurations ≡ a loop."""
    model, state = robot
    eager = rx.decide(model, state.q, state.t)
    jitted = jax.jit(lambda q: rx.decide(model, q, state.t))(state.q)
    for field in ("rank", "rank_nearby", "unique", "row_unique", "stable_row_unique", "schur"):
        np.testing.assert_array_equal(getattr(eager, field), getattr(jitted, field))
    _, traj = robot_run  # four states, the last ones in the turn
    batch = jax.vmap(lambda q, t: rx.decide(model, q, t))(traj.q, traj.ts)
    for k in range(traj.ts.shape[0]):
        one = rx.decide(model, traj.q[k], traj.ts[k])
        assert int(batch.rank[k]) == int(one.rank)
        np.testing.assert_array_equal(batch.stable_unique[k], one.stable_unique)


def test_drift_within_tolerance_changes_no_decision(robot):
    """A state off the manifold by 3e-9 (accepted as consistent) gives the same
    rank for every method, eagerly and jitted. Before the Structure, an eager
    `simulate` with `WeightedMinimumNorm` or `Compliant` decided the rank at
    round-off tolerance there (dependent rows independent by the drift: rank 21)."""
    model, state = robot
    direction = np.random.default_rng(1).normal(size=state.q.shape)
    q = state.q + DRIFT * direction / np.max(np.abs(direction))
    drifted = rx.State(state.t, q, state.qd)
    phi = np.asarray(rx.equations.position_residual(model, q, state.t))
    assert 1e-10 < np.max(np.abs(phi)) < 1e-8
    structure = rx.decide(model, q, state.t)
    assert int(structure.rank) == 20
    for method in (rx.methods.WeightedMinimumNorm(), rx.methods.Compliant(1.0)):
        traj = rx.simulate(
            model,
            drifted,
            0.2,
            method=method,
            saveat=rx.SaveAt(n=3),
            initial=rx.CheckInitial(tol=1e-8),
        )
        assert int(traj.structure.rank) == 20
        r = rx.reaction_history(model, traj, method=method)
        assert np.all(np.isfinite(r.multipliers)) and np.max(np.abs(r.multipliers)) < 1e3


def _five_methods(model, q):
    return {
        "null-space": rx.methods.NullSpace(),
        "weighted": rx.methods.WeightedMinimumNorm(),
        "compliant": rx.methods.Compliant(rx.methods.joint_stiffness(model, (1e5, 1e3))),
        "elimination": rx.methods.eliminate(model, q),
        "augmented-lagrangian": rx.methods.AugmentedLagrangian(),
    }


@pytest.mark.parametrize("mechanism", ["robot", "bricard"])
def test_eager_and_jitted_simulate_agree_for_every_method(mechanism, request):
    """The same trajectory and the same rank, whether `simulate` runs eagerly (the
    structure decided on the host) or inside `jax.jit` with the model traced (the
    structure decided in the trace): one code path."""
    model, state = request.getfixturevalue(mechanism)
    # Baumgarte's terms: the structure is what differs between the two paths (the
    # default projection after every step is run eagerly and jitted elsewhere).
    options = dict(
        saveat=rx.SaveAt(n=5),
        stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
        drift_control=rx.drift.Baumgarte(),
    )
    t1 = 0.3
    # The methods whose accelerations read the structure, between the two
    # mechanisms (each one compiles twice): the planar robot with its Pfaffian rows,
    # the spatial Bricard with its p = 1. (A trajectory depends on the accelerations
    # only: the compliant method's are the null-space method's. The augmented
    # Lagrangian reads no decision: its iteration needs no rank; it runs under jit in
    # test_dynamics and test_spatial.)
    names = {
        "robot": ("null-space", "elimination"),
        "bricard": ("weighted",),
    }[mechanism]
    five = _five_methods(model, state.q)
    methods = {name: five[name] for name in names}
    for name, method in methods.items():
        eager = rx.simulate(model, state, t1, method=method, **options)
        jitted = jax.jit(lambda m, s: rx.simulate(m, s, t1, method=method, **options))(model, state)
        assert int(eager.structure.rank) == int(jitted.structure.rank), name
        np.testing.assert_allclose(eager.q, jitted.q, rtol=0, atol=TOL_EAGER_JIT, err_msg=name)
        np.testing.assert_allclose(eager.qd, jitted.qd, rtol=0, atol=TOL_EAGER_JIT, err_msg=name)
        assert_similar_steps(jitted.num_steps, eager.num_steps, name)


def test_simulate_and_reactions_read_the_structure(robot, robot_run):
    """A structure passed in is the one used: the trajectory carries it, and the
    reactions along it take their verdicts from it, not from a new decision."""
    model, state = robot
    structure, traj = robot_run  # simulate(..., structure=structure)
    for field in ("rank", "null_space", "stable_unique", "stable_row_unique"):
        np.testing.assert_array_equal(getattr(traj.structure, field), getattr(structure, field))
    history = rx.reaction_history(model, traj)
    np.testing.assert_array_equal(history.unique[-1], structure.stable_unique)
    np.testing.assert_array_equal(history.component_unique[-1], structure.stable_row_unique)
    # The same Γ as the history's (the run's drift control): the same numbers.
    one = rx.reactions(
        model,
        traj.q[1],
        traj.qd[1],
        traj.ts[1],
        structure=structure,
        drift_control=traj.drift_control,
    )
    np.testing.assert_allclose(one.multipliers, history.multipliers[1], atol=1e-12)
    with pytest.raises(ValueError, match="reaction of pair 'B' is not unique"):
        rx.analysis.pair_reaction(model, state.q, state.qd, pair="B", structure=structure)
    with pytest.raises(ValueError, match="component 'force x'"):
        # Unique at q⁰ only: the structure does not claim it for a motion.
        rx.analysis.pair_reaction(
            model, state.q, state.qd, pair="B", component="force x", structure=structure
        )


def test_one_verdict_computation_in_simulate_out(tmp_path, monkeypatch, capsys):
    """`redundax simulate CONFIG --out RUN` decides once: one call of the decision,
    no separate analysis; the JSON, the run file and its solvability report give
    every pair the same verdict because they read the same Structure."""
    calls = {"decide": 0, "analyze": 0}
    decide_core, analyze_core = structure_module._decide, solvability_module._analyze

    def counting_decide(*args, **kwargs):
        calls["decide"] += 1
        return decide_core(*args, **kwargs)

    def counting_analyze(*args, **kwargs):
        calls["analyze"] += 1
        return analyze_core(*args, **kwargs)

    monkeypatch.setattr(structure_module, "_decide", counting_decide)
    monkeypatch.setattr(solvability_module, "_analyze", counting_analyze)
    monkeypatch.setenv("REDUNDAX_NO_CACHE", "1")
    out = tmp_path / "run.npz"
    status = cli_main(
        ["simulate", "configs/mobile_robot.toml", "--t-final", "0.5", "--out", str(out), "--json"]
    )
    assert status == 0
    summary = json.loads(capsys.readouterr().out)
    assert calls == {"decide": 1, "analyze": 0}
    run = read_run(out)
    assert run["unique"] == summary["unique"]
    assert summary["unique"]["B"] is False and summary["unique"]["D"] is True
    assert run["component_unique"] == summary["components"]
