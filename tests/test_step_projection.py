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
        assert float(jnp.max(jnp.abs(rx.equations.position_residual(model, q, s.t)))) < TOL_PROJECTED
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
        model, s, 10.0, method=rx.methods.BlockSparse(), drift_control=rx.drift.StepProjection(), **kw
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
