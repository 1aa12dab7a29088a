"""Drift control by projection after every integrator step (`rx.drift.StepProjection`):
checked against the IFToMM A01 reference solution, against the default
Baumgarte drift control at tight tolerances, across the dense and block paths
(with Pfaffian rows), and under jit, vmap and grad."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_A01_POSITION, TOL_SAME_MOTION, read_reference
from redundax import models
from redundax.sweep import apply_parameters, resolve_parameters

# 100 s of A01 at rtol = 1e-8 ends 1.7e-6 m from the reference (Baumgarte: 3.1e-6).
TOL_A01_100_S = 1e-5
# Bricard, Dopri8 at rtol = 1e-5: P3 within 2.7e-6 m of the tight reference.
TOL_BRICARD_P3 = 1e-5
# Round-off of a corrected step end, relative to the step's own drift (~1e-6).
TOL_PROJECTED = 1e-11
TOL_GRADIENT = 1e-5


def _p1(model, traj):
    return np.asarray(jax.vmap(lambda q: rx.equations.marker_positions(model, q)[0])(traj.q))


def test_a01_pendulum_meets_high_precision_over_2000_s():
    """IFToMM A01 (2000 s, published P1 every 0.5 s): with the default Baumgarte
    terms at rtol = 1e-8 the run misses the high-precision band (1.1e-3 m, 54,000
    steps); projected after every step it is inside it (6.7e-4 m, 28,000 steps)."""
    mech = models.pendulum()
    model, s = mech.build(), mech.initial_state()
    columns, ref = read_reference("A01_simple_pendulum_P1.csv")
    assert columns == ["t", "x_P1", "y_P1"] and ref[-1, 0] == 2000.0
    projected = rx.simulate(
        model,
        s,
        2000.0,
        drift_control=rx.drift.StepProjection(),
        saveat=rx.SaveAt(ts=jnp.asarray(ref[:, 0])),
        stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
        max_steps=200_000,
    )
    error = np.linalg.norm(_p1(model, projected) - ref[:, 1:3], axis=1)
    assert float(error.max()) < TOL_A01_POSITION
    assert float(error[ref[:, 0] <= 100.0].max()) < TOL_A01_100_S
    assert int(projected.num_steps) < 35_000


@pytest.fixture(scope="module")
def bricard():
    mech = models.bricard()
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)

    def run(drift_control, rtol):
        # Tolerances as arrays: one compiled program per drift control.
        return rx.simulate(
            model,
            state,
            10.0,
            structure=structure,
            drift_control=drift_control,
            solver=diffrax.Dopri8(),
            stepsize_controller=diffrax.PIDController(
                rtol=jnp.asarray(rtol), atol=jnp.asarray(rtol / 100)
            ),
            saveat=rx.SaveAt(n=51),
        )

    return model, structure, run, run(rx.drift.Baumgarte(), 1e-10)


def test_bricard_steps_follow_the_motion_not_the_drift(bricard):
    """Baumgarte terms at α = β = 10 /s make Dopri8 resolve the decay of the drift
    they cause (Bricard, 10 s at rtol = 1e-5: ~100 steps); projected after every
    step the same tolerance takes ~40, and P3 stays on the motion computed with
    the default drift control at rtol = 1e-10."""
    model, _, run, reference = bricard
    baumgarte = run(rx.drift.Baumgarte(), 1e-5)
    projected = run(rx.drift.StepProjection(), 1e-5)
    assert int(projected.num_steps) < 0.5 * int(baumgarte.num_steps)
    p3 = jax.vmap(lambda q: rx.equations.marker_positions(model, q)[0])
    error = np.linalg.norm(np.asarray(p3(projected.q) - p3(reference.q)), axis=1)
    assert float(error.max()) < TOL_BRICARD_P3


def test_a_corrected_state_is_on_the_manifold_to_round_off(bricard):
    """One call of the correction takes a state ~1e-6 off the manifold to
    round-off (Newton on quadratic constraints), positions then velocities, and
    leaves a consistent state unchanged to round-off."""
    model, structure, _, reference = bricard
    s = reference.state(20)  # on the manifold to ~1e-10, moving
    key = jax.random.PRNGKey(3)
    dq, dqd = 1e-6 * jax.random.normal(key, (2, s.q.shape[0]))
    for method in (rx.methods.NullSpace(), rx.methods.BlockSparse()):
        method = rx.methods.specialise(method, structure)
        projection = rx.drift.StepProjection(iterations=2).prepare(method, structure)
        args = (model, structure, method, projection)
        project = eqx.filter_jit(projection.project_state)
        q, qd = project(args, s.t, (s.q + dq, s.qd + dqd))
        phi = rx.equations.position_residual(model, q, s.t)
        vel = rx.equations.velocity_residual(model, q, qd, s.t)
        assert float(jnp.max(jnp.abs(phi))) < TOL_PROJECTED, projection.path
        assert float(jnp.max(jnp.abs(vel))) < TOL_PROJECTED * 10, projection.path
        same = project(args, s.t, (s.q, s.qd))
        # Unchanged up to the reference's own residual (~1e-10).
        np.testing.assert_allclose(same[0], s.q, rtol=0, atol=1e-9)
        np.testing.assert_allclose(same[1], s.qd, rtol=0, atol=1e-8)


def test_an_elimination_is_projected_with_its_kept_rows(bricard):
    """With an `Elimination` the corrections are solved with its kept rows alone
    (path "rows": one Cholesky of a full-rank Schur complement); off the manifold by
    1e-6, both put the state on the manifold to round-off and agree to 1e-10 (the
    same least M-norm correction to first order: the dropped row is a combination
    of the kept ones; they differ by how the O(δ²) inconsistency of that row is
    treated). Where the kept holonomic rows cannot span Φ_q, the all-rows path is
    kept."""
    model, structure, _, reference = bricard
    s = reference.state(20)
    dq, dqd = 1e-6 * jax.random.normal(jax.random.PRNGKey(5), (2, s.q.shape[0]))
    elimination = rx.methods.eliminate(model, s.q, s.t)
    rows = rx.drift.StepProjection(iterations=2).prepare(elimination, structure)
    assert rows.path == "rows" and np.array_equal(rows.rows, elimination.keep)
    schur = rx.drift.StepProjection(iterations=2, path="schur")
    out = {}
    for projection in (rows, schur):
        args = (model, structure, elimination, projection)
        q, qd = eqx.filter_jit(projection.project_state)(args, s.t, (s.q + dq, s.qd + dqd))
        assert (
            float(jnp.max(jnp.abs(rx.equations.position_residual(model, q, s.t)))) < TOL_PROJECTED
        )
        vel = rx.equations.velocity_residual(model, q, qd, s.t)
        assert float(jnp.max(jnp.abs(vel))) < TOL_PROJECTED * 10
        out[projection.path] = q, qd
    np.testing.assert_allclose(out["rows"][0], out["schur"][0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(out["rows"][1], out["schur"][1], rtol=0, atol=1e-9)
    # Keeping a dependent set of holonomic rows short of Φ_q's rank: not "rows".
    short = rx.methods.Elimination(keep=elimination.keep[1:], n_rows=elimination.n_rows)
    assert rx.drift.StepProjection().prepare(short, structure).path != "rows"
    with pytest.raises(ValueError, match="'rows'"):
        rx.drift.StepProjection(path="rows")


def test_dense_and_block_paths_give_the_same_motion_with_pfaffian_rows():
    """The mobile robot (wheels rolling without slip: Pfaffian rows, which a
    position correction leaves out) projected by the dense null-space path and by
    the block-sparse path: the same motion."""
    mech = models.mobile_robot()
    model, s = mech.build(), mech.initial_state()
    kw = dict(
        stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-11), saveat=rx.SaveAt(n=11)
    )
    dense = rx.simulate(model, s, 10.0, drift_control=rx.drift.StepProjection(), **kw)
    block = rx.simulate(
        model,
        s,
        10.0,
        method=rx.methods.BlockSparse(),
        drift_control=rx.drift.StepProjection(),
        **kw,
    )
    assert float(jnp.max(jnp.abs(block.q - dense.q))) < TOL_SAME_MOTION
    assert float(jnp.max(jnp.abs(dense.position_violation))) < 1e-8


def test_fsal_solvers_evaluate_their_first_stage_again():
    """Tsit5 reuses the last stage of a step as the next one's first (FSAL); after
    a projection that stage belongs to the unprojected state, so the wrapped
    solver asks for it afresh."""
    mech = models.pendulum()
    model, s = mech.build(), mech.initial_state()
    structure = rx.decide(model, s.q, s.t)
    projection = rx.drift.StepProjection().prepare(rx.methods.NullSpace(), structure)
    args = (model, structure, rx.methods.NullSpace(), projection)
    solver = projection.wrap(diffrax.Tsit5())
    term = diffrax.ODETerm(lambda t, y, a: (y[1], -y[0]))
    y0 = (s.q, s.qd)
    state = solver.init(term, 0.0, 0.01, y0, args)
    y1, _, _, state, _ = solver.step(term, 0.0, 0.01, y0, args, state, False)
    assert bool(state[0])  # the first stage is evaluated again
    assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, y1[0], 0.01)))) < 1e-14


def test_jit_vmap_and_grad_through_a_projected_run():
    """d(x of P1 after 1 s)/d(g) of the A01 pendulum projected after every step,
    jitted and vmapped over three values of g: autodiff equals the central
    difference of the values."""
    mech = models.pendulum()
    model, state = mech.build(), mech.initial_state()
    (target,) = resolve_parameters(model, state, ["gravity.y"])

    def final_x(g):
        variant, start = apply_parameters(model, state, (target,), g)
        traj = rx.simulate(
            variant,
            start,
            1.0,
            drift_control=rx.drift.StepProjection(),
            stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
            saveat=rx.SaveAt(n=2),
        )
        return rx.equations.marker_positions(variant, traj.q[-1])[0, 0]

    # One compiled program: value and gradient at g0 - h, g0, g0 + h, vmapped.
    h = 1e-3
    gs = jnp.asarray([[-9.81 - h], [-9.81], [-9.81 + h]])
    values, grads = jax.jit(jax.vmap(jax.value_and_grad(final_x)))(gs)
    fd = float(values[2] - values[0]) / (2 * h)
    assert abs(float(grads[1, 0])) > 1e-2
    assert abs(float(grads[1, 0]) - fd) < TOL_GRADIENT * max(1.0, abs(fd))
    # The batch members are independent runs: the gradient varies smoothly across them.
    assert abs(float(grads[0, 0] - grads[2, 0])) < 1e-2 * abs(float(grads[1, 0]))


def test_bad_fields_are_named():
    with pytest.raises(ValueError, match="'path'"):
        rx.drift.StepProjection(path="lu")
    with pytest.raises(ValueError, match="'iterations'"):
        rx.drift.StepProjection(iterations=-1)


# ------------------------------------------------ projection tolerance (issue 39)
# A drift control with a tolerance τ corrects only where the residual exceeds τ
# (Kraus, Winckler & Bock 2001, Fig. 5). The planar four-bar, Tsit5 at
# rtol = atol = 1e-5 for 2 s, no Baumgarte terms: unprojected, its step ends drift
# to 7e-5 m; one Newton step from there leaves ~1e-13.
TAU_ABOVE = 1.0  # above every residual of these runs [m, rad, m/s]
TAU_BETWEEN = 1e-7  # between round-off and the drift of one step
TAU_BELOW = 1e-300  # below every residual but an exact zero: a correction every time
TOL_STEP_END = TOL_PROJECTED  # a corrected step end
# The same run by two programs [m, rad, m/s]: their round-off differs, and the
# step-size control turns a relative 1e-16 in the error estimate (a difference of
# two stages, ~1e-7) into ~1e-9 in the step sizes (measured at XLA's -O0: 2e-11;
# the projected and the unprojected runs differ by 4e-4).
TOL_SAME_RUN = 1e-9
# One correction computed by two programs (no step-size control in between).
TOL_SAME_CORRECTION = 1e-12


def _residuals(model, ts, q, qd):
    phi = jax.vmap(lambda q, t: jnp.max(jnp.abs(rx.equations.position_residual(model, q, t))))
    vel = jax.vmap(
        lambda q, qd, t: jnp.max(jnp.abs(rx.equations.velocity_residual(model, q, qd, t)))
    )
    return np.asarray(phi(q, ts)), np.asarray(vel(q, qd, ts))


@pytest.fixture(scope="module")
def four_bar_steps():
    """`(model, structure, method, step_ends)`: `step_ends(drift_control)` integrates
    the four-bar with `drift_control.wrap(Tsit5())` and returns every accepted step
    end (t, q, q̇) and the steps' count; one compiled program per drift control type."""
    from redundax._integration import _vector_field

    mech = models.four_bar()
    model, s = mech.build(), mech.initial_state()
    structure = rx.decide(model, s.q, s.t)
    method = rx.methods.specialise(rx.methods.NullSpace(), structure, model)

    @eqx.filter_jit
    def step_ends(drift_control):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(_vector_field),
            drift_control.wrap(diffrax.Tsit5()),
            0.0,
            2.0,
            None,
            (s.q, s.qd),
            (model, structure, method, drift_control),
            saveat=diffrax.SaveAt(steps=True),
            stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
            max_steps=256,
        )
        return sol.ts, *sol.ys, sol.stats["num_accepted_steps"]

    return model, structure, method, step_ends


def test_step_ends_are_corrected_only_beyond_the_tolerance(four_bar_steps):
    """`StepProjection(tolerance=τ)`, τ as an array: the runs for every τ are one
    compiled program. τ above the drift: the run is the unprojected one (the solver
    unwrapped; the FSAL stage reused) to round-off. τ between round-off and the
    drift: no step end has a residual above τ (positions and velocities), and some
    are left as integrated while others are corrected to round-off. τ below every
    residual: every step end is corrected, the run is that of `tolerance=None`."""
    model, structure, method, step_ends = four_bar_steps

    def projected(tau):
        projection = rx.drift.StepProjection(baumgarte=None, tolerance=jnp.asarray(tau))
        return step_ends(projection.prepare(method, structure))

    runs = [projected(tau) for tau in (TAU_ABOVE, TAU_BETWEEN, TAU_BELOW)]
    plain_t, plain_q, plain_qd, plain_n = step_ends(rx.drift.NoDriftControl())
    n_plain = int(plain_n)
    plain_phi, _ = _residuals(model, plain_t[:n_plain], plain_q[:n_plain], plain_qd[:n_plain])
    assert float(plain_phi.max()) > 100 * TAU_BETWEEN  # the unprojected run drifts

    def run(k):
        t, q, qd, n = runs[k]
        n = int(n)
        return n, q[:n], qd[:n], *_residuals(model, t[:n], q[:n], qd[:n])

    n, q, qd, _, _ = run(0)  # above: nothing corrected
    assert n == n_plain
    np.testing.assert_allclose(q, plain_q[:n], rtol=0, atol=TOL_SAME_RUN)
    np.testing.assert_allclose(qd, plain_qd[:n], rtol=0, atol=TOL_SAME_RUN)

    _, _, _, phi, vel = run(1)  # between
    assert float(phi.max()) <= TAU_BETWEEN and float(vel.max()) <= TAU_BETWEEN
    corrected = phi <= TOL_STEP_END
    assert 0 < int(corrected.sum()) < corrected.size

    n, q, qd, phi, vel = run(2)  # below: every step end corrected
    assert float(phi.max()) <= TOL_STEP_END and float(vel.max()) <= TOL_STEP_END
    always = rx.drift.StepProjection(baumgarte=None).prepare(method, structure)
    _, q_none, qd_none, n_none = step_ends(always)
    assert int(n_none) == n
    np.testing.assert_allclose(q, q_none[:n], rtol=0, atol=TOL_SAME_RUN)
    np.testing.assert_allclose(qd, qd_none[:n], rtol=0, atol=TOL_SAME_RUN)


@pytest.fixture(scope="module")
def off_the_manifold():
    """The four-bar's initial state moved off its constraints by ~1e-5 (positions)
    and ~1e-3 (velocities), with its model, structure and method."""
    mech = models.four_bar()
    model, s = mech.build(), mech.initial_state()
    structure = rx.decide(model, s.q, s.t)
    method = rx.methods.specialise(rx.methods.NullSpace(), structure, model)
    dq, dqd = jax.random.normal(jax.random.PRNGKey(7), (2, s.q.shape[0]))
    return model, structure, method, s.t, s.q + 1e-5 * dq, s.qd + 1e-3 * dqd


def _corrections(off_the_manifold, kind):
    """`correct(tau, q, qd)`: one correction by `project_state` after a step
    ("StepProjection", two Newton steps: 2.6e-5 off, one leaves ~1e-9) or by
    `Projection` at a saved time."""
    model, structure, method, t, _, _ = off_the_manifold
    if kind == "StepProjection":

        def correct(tau, q, qd):
            projection = rx.drift.StepProjection(iterations=2, tolerance=tau)
            projection = projection.prepare(method, structure)
            return projection.project_state((model, structure, method, projection), t, (q, qd))

        return correct

    def correct(tau, q, qd):
        return rx.drift.Projection(tolerance=tau)(model, q, qd, t)

    return correct


@pytest.mark.parametrize("kind", ["StepProjection", "Projection"])
def test_one_correction_answers_to_the_tolerance(off_the_manifold, kind):
    """One correction of a state off the manifold (`project_state` after a step,
    `Projection` at a saved time; τ as an array, one program for every τ): τ above
    its residual leaves it exactly as it is; τ below puts it on the manifold to
    round-off, as `tolerance=None` does (to round-off); τ between the position and
    the velocity residual corrects the velocities alone."""
    model, _, _, t, q, qd = off_the_manifold
    correct = _corrections(off_the_manifold, kind)
    program = eqx.filter_jit(correct)
    phi0, vel0 = _residuals(model, t[None], q[None], qd[None])
    assert 1e-6 < float(phi0[0]) and 1.5 * float(phi0[0]) < float(vel0[0])

    same_q, same_qd = program(jnp.asarray(TAU_ABOVE), q, qd)
    assert np.array_equal(same_q, q) and np.array_equal(same_qd, qd)

    new_q, new_qd = program(jnp.asarray(TAU_BELOW), q, qd)
    phi, vel = _residuals(model, t[None], new_q[None], new_qd[None])
    assert float(phi[0]) < TOL_STEP_END and float(vel[0]) < 10 * TOL_STEP_END
    none_q, none_qd = eqx.filter_jit(correct)(None, q, qd)
    np.testing.assert_allclose(new_q, none_q, rtol=0, atol=TOL_SAME_CORRECTION)
    np.testing.assert_allclose(new_qd, none_qd, rtol=0, atol=TOL_SAME_CORRECTION)

    only_qd = program(jnp.asarray(1.5 * float(phi0[0])), q, qd)
    assert np.array_equal(only_qd[0], q)
    _, vel = _residuals(model, t[None], only_qd[0][None], only_qd[1][None])
    assert float(vel[0]) < 10 * TOL_STEP_END


def test_a_step_correction_with_a_tolerance_under_vmap_and_grad(off_the_manifold):
    """`StepProjection(tolerance=τ)`'s correction vmapped over τ: each member equals
    its own correction. The gradient of w · q after the correction (reverse mode
    through the selection) equals central differences, with τ above the residual (w
    itself) and below it."""
    _, _, _, _, q, qd = off_the_manifold
    correct = _corrections(off_the_manifold, "StepProjection")
    program = eqx.filter_jit(correct)
    taus = jnp.asarray([TAU_ABOVE, TAU_BELOW])
    batch_q, batch_qd = eqx.filter_jit(jax.vmap(correct, in_axes=(0, None, None)))(taus, q, qd)
    w = jnp.linspace(1.0, 2.0, q.shape[0])
    gradient = eqx.filter_jit(jax.grad(lambda q, tau: w @ correct(tau, q, qd)[0]))
    h = 1e-7  # far below the residual (2.6e-5): the branch taken is the same at q ± h
    for k in range(taus.shape[0]):
        tau = taus[k]
        single_q, single_qd = program(tau, q, qd)
        np.testing.assert_allclose(batch_q[k], single_q, rtol=0, atol=TOL_SAME_CORRECTION)
        np.testing.assert_allclose(batch_qd[k], single_qd, rtol=0, atol=TOL_SAME_CORRECTION)
        fd = [
            float(w @ (program(tau, q + e, qd)[0] - program(tau, q - e, qd)[0])) / (2 * h)
            for e in h * np.eye(q.shape[0])
        ]
        np.testing.assert_allclose(gradient(q, tau), fd, rtol=0, atol=TOL_GRADIENT)
    assert np.array_equal(gradient(q, taus[0]), w)


@pytest.mark.parametrize("kind", [rx.drift.StepProjection, rx.drift.Projection])
def test_a_bad_tolerance_is_refused_by_name(kind):
    """Negative, zero, NaN, infinite and non-scalar τ: `ValueError`; a string or a
    bool: `TypeError` (in the tests the type check of the field's annotation refuses
    these and arrays of another shape first, naming the parameter); a traced τ is
    left to the caller."""
    from redundax.drift._projection import check_tolerance

    for bad in (-1e-6, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=f"{kind.__name__} field 'tolerance'"):
            kind(tolerance=bad)
    with pytest.raises(ValueError, match=f"{kind.__name__} field 'tolerance'.*got"):
        check_tolerance(kind.__name__, jnp.asarray([1e-6, 1e-3]))
    for bad in ("1e-6", True):
        with pytest.raises(TypeError, match="tolerance"):
            kind(tolerance=bad)
        with pytest.raises(TypeError, match=f"{kind.__name__} field 'tolerance'.*finite number"):
            check_tolerance(kind.__name__, bad)
    assert jax.jit(lambda tau: kind(tolerance=tau).tolerance)(1e-6) == 1e-6
    assert kind(tolerance=jnp.asarray(1e-6)).tolerance == 1e-6 and kind().tolerance is None


def test_with_a_tolerance_states_are_held_to_the_tolerance():
    """The validity criterion (`redundax._validity`) holds step ends that are all
    projected to max(1e-6, rtol) relative to the configuration's size, and those of a
    run with a tolerance τ, which may drift up to τ (and, near a singular pose, end a
    correction above the projected tolerance), to that of unprojected states (1e-3);
    a projection leaves residuals up to τ by request, so its states are held to τ
    where τ is the larger — a four-bar under `Projection(baumgarte=None,
    tolerance=1e-2)` at rtol 1e-5 reaches a residual of 3e-4 over 10 s and was
    stopped at 1.2e-5 before."""
    from redundax._simulate import tolerances
    from redundax._validity import PROJECTED_TOL, UNPROJECTED_TOL

    q0 = jnp.asarray([0.5, -2.0, 0.1])  # size 2
    always = tolerances(rx.drift.StepProjection(), q0, 1e-8)
    loose = tolerances(rx.drift.StepProjection(tolerance=jnp.asarray(1e-4)), q0, 1e-8)
    looser = tolerances(rx.drift.StepProjection(tolerance=jnp.asarray(1e-2)), q0, 1e-8)
    assert float(always.step) == 2 * PROJECTED_TOL
    assert float(loose.step) == 2 * UNPROJECTED_TOL == float(loose.saved)
    assert float(looser.step) == 1e-2 == float(looser.saved)
    saves = tolerances(rx.drift.Projection(baumgarte=None, tolerance=1e-2), q0, 1e-5)
    assert float(saves.saved) == float(saves.step) == 1e-2
    plain = tolerances(rx.drift.Projection(baumgarte=None), q0, 1e-5)
    assert float(plain.saved) == 2 * 1e-5 and float(plain.step) == 2 * UNPROJECTED_TOL


def test_a_projection_with_a_tolerance_does_not_claim_the_branch():
    """The singularity report says a run kept its branch through a passage only where
    every step end was projected: with a tolerance τ a step end within τ is left
    alone (τ = 1e-3 switched branch in 13 of 14 runs of
    experiments/six_bar_projection.py), with or without partitioning."""
    from redundax.monitors._singularity import _action

    for method in (rx.methods.NullSpace(), rx.methods.BlockSparse()):
        assert _action(rx.drift.StepProjection(), method)[1] is (True)
        assert _action(rx.drift.StepProjection(tolerance=1e-3), method)[1] is False
