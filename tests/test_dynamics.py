"""Equations of motion, methods of handling redundancy, drift control, and
simulation (issue 3). Oracles: closed forms, the IFToMM A01 reference, a second
method in the library, central finite differences in the test."""

import dataclasses
import math

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import (
    MIN_NONUNIQUE_DIFFERENCE,
    TOL_A01_POSITION,
    TOL_BAUMGARTE_VIOLATION,
    TOL_CLOSED_FORM,
    TOL_ENERGY_RELATIVE,
    TOL_PROJECTED_VIOLATION,
    TOL_SAME_MOTION,
    TOL_SAME_REACTION,
    read_reference,
)
from redundax import models

TIGHT_TOL = dict(rtol=1e-10, atol=1e-12)
TIGHT = dict(stepsize_controller=diffrax.PIDController(**TIGHT_TOL))
VARIANTS = {"{6,21}": (6, 21), "{18,21}": (18, 21), "{19,21}": (19, 21)}
UNIQUE = ["A", "D", "E", "F", "G", "H", "drive", "W5"]
NOT_UNIQUE = ["B", "C", "W1", "W2", "W3", "W4"]


def _at(model, rtol, atol, t1):
    """The default solver (Dopri8 below rtol 1e-6) and step-size controller of a run to
    `t1` at (rtol, atol), with the tolerances as arrays: Python floats would be static
    in the compiled program, and runs alike but for their tolerances (the manoeuvre with
    Baumgarte's terms at 1e-10 and at 1e-8 below) are then one program."""
    clipped = rx.internal.default_controller(model, rtol, atol, 0.0, t1)  # the robot's: clipped
    controller = eqx.tree_at(
        lambda c: (c.controller.rtol, c.controller.atol),
        clipped,
        (jnp.asarray(rtol), jnp.asarray(atol)),
    )
    return dict(solver=diffrax.Dopri8(), stepsize_controller=controller)


@pytest.fixture(scope="module")
def robot():
    mech = models.mobile_robot()
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def robot_runs(robot):
    """The 10 s manoeuvre by the null-space method and the paper's three
    elimination variants, with the reactions of each along its own motion."""
    model, s = robot
    methods = {"null-space": rx.methods.NullSpace()}
    methods.update({k: rx.methods.eliminate(model, s.q, s.t, rows) for k, rows in VARIANTS.items()})
    runs = {}
    for name, method in methods.items():
        # Baumgarte's terms, as the reactions below are solved with; saved every 50 ms
        # (as test_baumgarte_alone_bounds_violation's run at 1e-8: one program).
        traj = rx.simulate(
            model,
            s,
            10.0,
            method=method,
            drift_control=rx.drift.Baumgarte(),
            saveat=rx.SaveAt(n=201),
            **_at(model, **TIGHT_TOL, t1=10.0),
        )
        # The null-space reactions decide the structure at every state (their verdicts
        # along the motion are test_unique_reactions_agree_and_non_unique_differ's
        # claim); the variants' (whose wrenches only are compared) take the run's own,
        # as `reactions` advises along a motion: no decision traced under vmap.
        structure = None if name == "null-space" else traj.structure
        reac = jax.vmap(
            lambda q, qd, t, method=method, structure=structure: rx.reactions(
                model,
                q,
                qd,
                t,
                method=method,
                drift_control=rx.drift.Baumgarte(),
                structure=structure,
            )
        )(traj.q, traj.qd, traj.ts)
        runs[name] = (traj, reac)
    return runs


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def test_methods_give_the_same_motion(robot_runs):
    ref = robot_runs["null-space"][0]
    for name, (traj, _) in robot_runs.items():
        assert float(np.max(np.abs(traj.q - ref.q))) < TOL_SAME_MOTION, name
        assert float(np.max(np.abs(traj.qd - ref.qd))) < TOL_SAME_MOTION, name


def test_unique_reactions_agree_and_non_unique_differ(robot_runs, robot):
    model, _ = robot
    reac = {k: r for k, (_, r) in robot_runs.items()}
    k = {n: model.pair_names.index(n) for n in model.pair_names}
    for name in UNIQUE:
        assert bool(np.all(reac["null-space"].unique[:, k[name]])), name
        for v in VARIANTS:
            assert (
                _rel(reac[v].wrench[:, k[name]], reac["null-space"].wrench[:, k[name]])
                < TOL_SAME_REACTION
            )
    variants = list(VARIANTS)
    for name in ["B", "C", "W1", "W2", "W3"]:
        assert not bool(np.any(reac["null-space"].unique[:, k[name]])), name
        for a, b in [(0, 1), (0, 2), (1, 2)]:
            diff = _rel(reac[variants[a]].wrench[:, k[name]], reac[variants[b]].wrench[:, k[name]])
            # W1 is eliminated in {18,21} and W2 in {19,21}; B, C, W3 differ in every pair
            # of variants (Wojtyra & Frączek 2013, §4.4).
            if name in ("B", "C", "W3") or name in ("W1", "W2"):
                assert diff > MIN_NONUNIQUE_DIFFERENCE, (name, variants[a], variants[b])
    # W4 is eliminated by all three variants but not by the minimum-norm solution.
    assert float(np.max(np.abs(reac["null-space"].wrench[:, k["W4"]]))) > 1e-3


def test_reaction_history_in_chunks_is_the_vmapped_reactions(robot_runs, robot):
    """`reaction_history` solves the saved states in chunks within a memory budget
    (issue 14): with a budget of 7 states (201 saves: 29 chunks, the last one
    partial) it gives the reactions `jax.vmap` gives over all states at once; a
    budget below one state is refused with a message that names it."""
    from redundax._reactions import chunk_size, state_bytes

    model, _ = robot
    traj, reac = robot_runs["null-space"]
    budget = 7 * state_bytes(model)
    assert chunk_size(model, traj.ts.shape[0], budget) == 7
    chunked = rx.reaction_history(model, traj, memory_budget=budget)
    for field in ("multipliers", "wrench", "qdd", "total"):
        np.testing.assert_allclose(
            getattr(chunked, field), getattr(reac, field), rtol=0, atol=1e-9, err_msg=field
        )
    with pytest.raises(MemoryError, match=r"more than the memory budget of .*memory_budget="):
        rx.reaction_history(model, traj, memory_budget=state_bytes(model) - 1)


def test_eliminated_rows_carry_exactly_zero(robot_runs):
    for name, rows in VARIANTS.items():
        lam = np.asarray(robot_runs[name][1].multipliers)
        assert np.all(lam[:, [r - 1 for r in rows]] == 0.0)
        assert np.max(np.abs(lam)) > 0.1


def test_manoeuvre_turns_right_then_left(robot_runs):
    traj = robot_runs["null-space"][0]
    y = np.asarray(traj.q[:, 1])
    heading = np.asarray(traj.q[:, 2])
    # Right turn first (heading decreasing, platform moving to −y), then left back to a
    # course parallel to x₀ (seed Figs. 2–3).
    assert heading.min() < -0.2 and np.argmax(heading < -0.1) < len(heading) // 2
    assert y[-1] < -0.1 and heading.max() < 0.02
    assert abs(heading[-1]) < 0.02


# The projected manoeuvre's arguments: test_projection_keeps_violation_at_round_off's
# run, and test_drift_control_of_maps_a_configurations_keys_onto_objects's run of the
# same drift control given as a configuration's keys (one compiled program for both).
PROJECTED = dict(saveat=rx.SaveAt(n=201), **TIGHT)


@pytest.fixture(scope="module")
def projected_run(robot):
    """The 10 s manoeuvre with a projection at every save (and Baumgarte's terms)."""
    model, s = robot
    return rx.simulate(model, s, 10.0, drift_control=rx.drift.Projection(), **PROJECTED)


def test_projection_keeps_violation_at_round_off(projected_run):
    traj = projected_run
    assert float(traj.position_violation.max()) < TOL_PROJECTED_VIOLATION
    assert float(traj.velocity_violation.max()) < TOL_PROJECTED_VIOLATION


def test_baumgarte_alone_bounds_violation(robot):
    model, s = robot
    traj = rx.simulate(
        model,
        s,
        10.0,
        saveat=rx.SaveAt(n=201),
        drift_control=rx.drift.Baumgarte(),
        **_at(model, 1e-8, 1e-10, 10.0),
    )
    assert float(traj.position_violation.max()) < TOL_BAUMGARTE_VIOLATION
    assert float(traj.velocity_violation.max()) < 10 * TOL_BAUMGARTE_VIOLATION
    free = rx.simulate(
        model,
        s,
        10.0,
        stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
        saveat=rx.SaveAt(n=201),
        drift_control=rx.drift.NoDriftControl(),
    )
    # Without drift control the violation is larger: the bound is Baumgarte's doing.
    assert float(free.position_violation.max()) > float(traj.position_violation.max())
    # Reactions along a run solve with the run's own Γ (here without Baumgarte
    # terms), not with simulate's default drift control.
    own = rx.reaction_history(model, free)
    plain = rx.reaction_history(model, free, drift_control=None)
    baumgarte = rx.reaction_history(model, free, drift_control=rx.drift.Baumgarte())
    np.testing.assert_allclose(own.qdd, plain.qdd, rtol=0, atol=1e-12)
    assert float(np.max(np.abs(baumgarte.qdd - plain.qdd))) > 1e-9


def test_drift_control_of_maps_a_configurations_keys_onto_objects(robot, projected_run):
    """A configuration's `stabilisation` and `projection` keys become one drift
    control object (`rx.drift.drift_control_of`); `simulate` takes only objects."""
    model, s = robot
    # The keys `stabilisation: baumgarte` and `projection`, against the object run of
    # test_projection_keeps_violation_at_round_off (its arguments: the same program).
    new = projected_run
    assert new.drift_control == rx.drift.Projection(baumgarte=rx.drift.Baumgarte())
    keys = rx.drift.drift_control_of(rx.drift.Baumgarte(), rx.drift.Projection(baumgarte=None))
    assert keys == rx.drift.Projection()
    old = rx.simulate(model, s, 10.0, drift_control=keys, **PROJECTED)
    np.testing.assert_array_equal(old.q, new.q)
    assert rx.drift.drift_control_of(None, rx.drift.Projection()) == rx.drift.Projection(
        baumgarte=None
    )
    assert rx.drift.drift_control_of(rx.drift.Baumgarte(), None) == rx.drift.Baumgarte()
    assert rx.drift.drift_control_of(None, None) == rx.drift.NoDriftControl()
    assert rx.drift.drift_control_of(
        rx.drift.Baumgarte(1.0, 2.0), rx.drift.Projection()
    ) == rx.drift.Projection(baumgarte=rx.drift.Baumgarte(1.0, 2.0))
    with pytest.raises(TypeError, match="'drift_control'"):
        rx.simulate(model, s, 0.5, drift_control="baumgarte")


def test_redundant_parallelogram_conserves_energy():
    # Hanging cranks released 1 rad from the vertical: they swing between −π/2 ± 1
    # and never reach the singular (flat) configuration.
    mech = models.parallelogram(3, crank_angle=-math.pi / 2 + 1.0)
    model, s = mech.build(), mech.initial_state()
    assert int(rx.analyze_solvability(model, s.q).redundancy) == 1
    traj = rx.simulate(
        model,
        s,
        10.0,
        stepsize_controller=diffrax.PIDController(rtol=1e-11, atol=1e-13),
        saveat=rx.SaveAt(n=201),
    )
    kinetic = jax.vmap(lambda qd: rx.equations.kinetic_energy(model, qd))(traj.qd)
    drift = float(np.max(np.abs(traj.energy - traj.energy[0])))
    assert float(kinetic.max()) > 1.0  # it really swings
    assert drift < TOL_ENERGY_RELATIVE * float(kinetic.max())


def _pendulum_reaction(q, length, mass, inertia, g=9.81):
    """Force of the pin on a rigid pendulum whose centre of mass is at the bob, from
    energy (released at rest from the horizontal): I_O ω² = 2 m g (0 − y),
    α = −m g x / I_O, a = α Ω r − ω² r, F = m a − m (0, −g)."""
    x, y = q[0], q[1]
    I_O = mass * length**2 + inertia
    w2 = 2 * mass * g * (-y) / I_O
    alpha = -mass * g * x / I_O
    a = alpha * np.array([-y, x]) - w2 * np.array([x, y])
    return mass * a - mass * np.array([0.0, -g])


@pytest.fixture(scope="module")
def pendulum_run():
    """A01's pendulum over its reference's first 20 s (Dopri8 at TIGHT), saved at the
    reference's times: (model, state0, reference rows, trajectory)."""
    mech = models.pendulum()
    model, s = mech.build(), mech.initial_state()
    columns, ref = read_reference("A01_simple_pendulum_P1.csv")  # IFToMM A01, tests/data/
    assert columns == ["t", "x_P1", "y_P1"] and ref.shape == (4001, 3)
    ref = ref[ref[:, 0] <= 20.0]
    traj = rx.simulate(model, s, 20.0, saveat=rx.SaveAt(ts=jnp.asarray(ref[:, 0])), **TIGHT)
    return model, s, ref, traj


def test_pendulum_against_a01_and_closed_form_reactions(pendulum_run):
    model, _, ref, traj = pendulum_run
    pos = np.asarray(jax.vmap(lambda q: rx.equations.marker_positions(model, q)[0])(traj.q))
    assert float(np.max(np.linalg.norm(pos - ref[:, 1:3], axis=1))) < TOL_A01_POSITION
    # With the run's structure (as `reactions` advises along a motion): no decision
    # traced under vmap.
    reac = jax.vmap(lambda q, qd, t: rx.reactions(model, q, qd, t, structure=traj.structure))(
        traj.q, traj.qd, traj.ts
    )
    J = float(model.bodies.inertia[0])
    for k in range(0, len(ref), 7):
        expected = _pendulum_reaction(np.asarray(traj.q[k]), 1.0, 1.0, J)
        np.testing.assert_allclose(reac.wrench[k, 0, 0, :2], expected, atol=TOL_CLOSED_FORM * 30)
    assert bool(np.all(reac.unique))


def test_slider_crank_closed_form_reactions():
    """Driven slider-crank with (nearly) massless crank and rod: the rod is a
    two-force member. Slider: m ẍ_B = F_x, and the guide carries N = m g − F_y,
    with x_B(θ) = r cos θ + sqrt(l² − r² sin² θ), θ = θ₀ + ω t."""
    r, l, ms, w, th0 = 0.2, 0.6, 2.0, 2 * math.pi, 0.3
    mech = models.slider_crank(r, l, (1e-9, 1e-9, ms), th0, w)
    model, s = mech.build(), mech.initial_state()
    assert int(rx.analyze_solvability(model, s.q).dof) == 0
    traj = rx.simulate(model, s, 1.0, saveat=rx.SaveAt(n=41), **TIGHT)

    def x_b(theta):
        return r * jnp.cos(theta) + jnp.sqrt(l**2 - (r * jnp.sin(theta)) ** 2)

    # With the run's structure (as `reactions` advises along a motion): no decision
    # traced under vmap (half of this test's compile time before).
    reac = jax.jit(
        jax.vmap(lambda q, qd, t: rx.reactions(model, q, qd, t, structure=traj.structure))
    )(traj.q, traj.qd, traj.ts)
    kB, kP = model.pair_names.index("B"), model.pair_names.index("P")
    theta = th0 + w * np.asarray(traj.ts)
    acc = w**2 * np.asarray(jax.jit(jax.vmap(jax.grad(jax.grad(x_b))))(theta))
    A = r * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    B = np.stack([np.asarray(x_b(theta)), np.zeros_like(theta)], axis=1)
    e = (B - A) / l
    force_x = ms * acc  # on the slider, from the rod (along e)
    force = (force_x / e[:, 0])[:, None] * e
    on_slider_B = np.asarray(reac.wrench[:, kB, 2, :2])
    on_slider_P = np.asarray(reac.wrench[:, kP, 2, :2])
    np.testing.assert_allclose(on_slider_B, force, atol=TOL_CLOSED_FORM * 100)
    guide = np.stack([np.zeros_like(theta), ms * 9.81 - force[:, 1]], axis=1)
    np.testing.assert_allclose(on_slider_P, guide, atol=TOL_CLOSED_FORM * 100)


def test_implicit_solver_matches_explicit(pendulum_run):
    """Kvaerno5 (implicit) against test_pendulum_against_a01_and_closed_form_reactions's
    explicit Dopri8 run, at the reference's times (every 0.5 s) of the first second.
    The pendulum (one body, one pair) rather than the four-bar: the implicit solver's
    program (Newton iterations on the vector field's Jacobian) is the file's largest,
    and it grows with the mechanism; the explicit run is the fixture's, compiled anyway."""
    model, s, ref, explicit = pendulum_run
    ts = ref[ref[:, 0] <= 1.0, 0]
    tol = dict(stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10))
    implicit = rx.simulate(
        model, s, 1.0, saveat=rx.SaveAt(ts=jnp.asarray(ts)), solver=diffrax.Kvaerno5(), **tol
    )
    assert float(np.max(np.abs(explicit.q[len(ts) - 1] - s.q))) > 0.1  # it really moves
    np.testing.assert_allclose(implicit.q, explicit.q[: len(ts)], atol=1e-7)


def test_inconsistent_initial_state_refused_or_projected():
    mech = models.four_bar()
    model, s = mech.build(), mech.initial_state()
    bad = rx.State(s.t, s.q.at[3].add(0.01), s.qd)  # move the coupler 1 cm
    with pytest.raises(ValueError, match=r"inconsistent initial configuration(.|\n)*pair 'A'"):
        rx.simulate(model, bad, 0.1)
    # The projection is done before the integration (a run of the consistent state).
    traj = rx.simulate(
        model, bad, 0.4, initial=rx.ProjectInitial(rx.drift.Projection()), saveat=rx.SaveAt(n=5)
    )
    assert 0.005 < float(traj.initial_correction[0]) < 0.02
    assert float(traj.position_violation.max()) < 1e-9
    # The ground pivot D 3 m from O: the links (0.4 + 1.2 + 0.8 m) cannot close the
    # loop, the projection cannot converge, and the state is refused (issue 14).
    pairs = [dataclasses.replace(p, point_j=(3.0, 0.0)) if p.name == "D" else p for p in mech.pairs]
    apart = dataclasses.replace(mech, pairs=pairs).build()
    with pytest.raises(ValueError, match=r"could not be projected(.|\n)*pair 'D'"):
        rx.simulate(
            apart, s, 0.1, initial=rx.ProjectInitial(rx.drift.Projection()), saveat=rx.SaveAt(n=3)
        )


def test_eliminating_a_row_that_is_not_redundant_is_refused(robot):
    model, s = robot
    with pytest.raises(
        ValueError, match=r"rows 1 \(pair 'A'\), 21 \(pair 'W4'\) changes the motion"
    ):
        rx.methods.eliminate(model, s.q, s.t, (1, 21))
    with pytest.raises(ValueError, match="out of range"):
        rx.methods.eliminate(model, s.q, s.t, (23,))
    auto = rx.methods.eliminate(model, s.q, s.t)
    assert len(auto.eliminated) == 2


def test_every_method_same_accelerations_and_unique_reactions(robot_runs, robot):
    """Minimum norm, mass-weighted minimum norm, elimination, augmented Lagrangian:
    same q̈ and same unique reactions at states along the manoeuvre; the penalty
    method converges to them as its stiffness grows."""
    model, _ = robot
    traj = robot_runs["null-space"][0]
    methods = [
        rx.methods.NullSpace(),
        rx.methods.WeightedMinimumNorm(),
        rx.methods.AugmentedLagrangian(),
        rx.methods.eliminate(model, traj.q[0], 0.0),
    ]
    k_unique = np.array([model.pair_names.index(n) for n in UNIQUE])
    for i in (40, 110, 160):  # t = 2, 5.5 and 8 s
        q, qd, t = traj.q[i], traj.qd[i], traj.ts[i]
        ref = rx.reactions(model, q, qd, t)
        for m in methods:
            r = rx.reactions(model, q, qd, t, method=m)
            assert _rel(r.qdd, ref.qdd) < TOL_SAME_REACTION
            assert _rel(r.wrench[k_unique], ref.wrench[k_unique]) < TOL_SAME_REACTION
        # Stiffnesses as arrays: one compiled program for the three (Python floats
        # would be three constants of three programs).
        penalties = [rx.methods.Penalty(stiffness=jnp.asarray(a)) for a in (1e4, 1e6, 1e8)]
        errors = [
            _rel(rx.reactions(model, q, qd, t, method=m).wrench[k_unique], ref.wrench[k_unique])
            for m in penalties
        ]
        assert errors[0] > errors[1] > errors[2]


def test_joint_point_reactions_are_physical(robot_runs, robot):
    """A frictionless pin transmits no moment about its own point, and a knife edge
    only a force along its global normal R n with no moment about the contact
    point: independent of any method (Newton–Euler statics of the pair)."""
    model, _ = robot
    traj = robot_runs["null-space"][0]
    r = rx.reactions(model, traj.q[80], traj.qd[80], traj.ts[80])  # t = 4 s
    for name in "ABCDEFG":
        force, moment, _ = r.at_joint(name)
        assert float(np.max(np.abs(moment))) < 1e-12
        assert float(np.max(np.abs(force))) > 1e-4
    phi_platform = float(traj.q[80][2])
    normal = np.array([-math.sin(phi_platform), math.cos(phi_platform)])  # R(φ) [0, 1]
    force, moment, unique = r.at_joint("W3")
    on_platform = np.asarray(force[0])
    assert abs(on_platform @ np.array([normal[1], -normal[0]])) < 1e-12
    assert on_platform @ normal == pytest.approx(-float(r.multipliers[model.pair("W3").rows[0]]))
    assert float(np.max(np.abs(moment))) < 1e-12 and not bool(unique)


def test_singular_initial_configuration_is_refused():
    """A parallelogram released flat (cranks along the line of the ground pivots)
    has rank C = 7 there but 8 everywhere nearby: deciding the rank there would
    drop a real constraint, so the null-space method refuses it."""
    mech = models.parallelogram(2, crank_angle=0.0)
    model, s = mech.build(), mech.initial_state()
    assert int(rx.analyze_solvability(model, s.q).rank) == 7
    with pytest.raises(ValueError, match=r"singular configuration: rank C = 7 .* but 8"):
        rx.simulate(model, s, 0.1)
    regular = models.parallelogram(2, crank_angle=0.3)
    rx.monitors.check_regular(regular.build(), regular.initial_state())  # no error
