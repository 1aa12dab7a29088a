"""González et al. (2011) compliant semi-implicit Euler stepping, with and without
projection (seed 001, Eqs. 1–3). Oracles: the pendulum's and the parallelogram's
one-degree-of-freedom equations integrated by SciPy, the slider-crank's closed-form
kinematics, the step's block system solved with NumPy, the closed-form static sag
and reaction, the library's minimum-norm multipliers (pivoted QR), energy
conservation, and central finite differences computed here."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from redundax import Compliance, GonzalezStepper, GonzalezTrajectory, models
from redundax.methods import minimum_norm_multipliers

# Observed order of convergence of a first-order scheme (log₂ of error ratios).
ORDER_RANGE = (0.8, 1.2)
# A compliance small enough to be the rigid limit: its deflection c · λ ≈ 1e-11 m
# is far below the O(h) = 1e-3 global error of the runs it is used in [m/N].
TINY_COMPLIANCE = 1e-12
# The redundant parallelogram's compliance [m/N]: stiff (deflections ~1e-7 m), but
# c/h² = 1e-2 keeps the step matrix well conditioned.
COMPLIANCE = 1e-8
# Projection target and the acceptance bound of the checks on it.
PROJECTION_TOL = 1e-12
TOL_PROJECTED = 1e-10
# First-order global error at h = 1e-3 on O(1) motions over 1 s: |Δq| ≤ 5 h.
FIRST_ORDER_CONSTANT = 5.0
# Kinematically driven motion: error per step O(h²) from linearising Φ, not
# accumulated (measured 3.2 h² on the slider-crank) [m, rad].
KINEMATIC_H2 = 10.0
# Round-off of O(100) flops on O(10) data, several times over one step.
TOL_STEP = 1e-10
# vmap against a loop: the same operations, batched.
TOL_BATCH = 1e-12
# Static sag after the spring-damper has settled (100 time constants 1/ω): relative.
TOL_STATIC = 1e-9
# Minimum-norm multipliers vs. those of a uniformly compliant run: the compliant
# ones deviate by O(c λ²) through the second-order part of Φ (relative).
TOL_MIN_NORM = 1e-6
# Central differences at ε = 1e-4 on O(1) data: truncation ~ε² · |f'''| ≈ 1e-8.
TOL_FD_GRAD = 1e-5
G = 9.81
# Bricard: how close to x = −1 m the point gets at its turning point (measured
# −0.99994 m at h = 10⁻², the step's phase error), and the largest |Φ| of the
# compliant run (measured 4.9e-4 m: the paper reports ‖Φ‖ < 1e-4 for its rigid run
# before it locks, and "slightly" more with compliant joints).
BRICARD_TURN = 1e-3
BRICARD_VIOLATION = 1e-3
PARALLELOGRAM_THETA0 = math.pi / 2 + 0.6
# Energy error of symplectic Euler on the A01 pendulum: oscillates with amplitude
# ≈ 13.5 h J (measured: 1.35e-2 J at h = 1e-3); allowed growth between the first and
# the last tenth of 40 periods; mean drift allowed over the run (measured 3e-4 J
# over 200 s, O(h³)), i.e. < 1/10 of the oscillation.
ENERGY_AMPLITUDE_PER_H = 15.0
ENERGY_GROWTH = 1.05
ENERGY_MEAN_DRIFT = 1.5e-3


def gonzalez(model, state, t1, save_every=1, **stepper) -> GonzalezTrajectory:
    """`rx.simulate` with `GonzalezStepper(**stepper)` from t0 = 0 to `t1`, saving every
    `save_every` steps (`SaveAt(n=steps // save_every + 1)`)."""
    steps = round(t1 / stepper.get("h", 1e-2))
    saveat = rx.SaveAt() if save_every == 1 else rx.SaveAt(n=steps // save_every + 1)
    return rx.simulate(model, state, t1, solver=GonzalezStepper(**stepper), saveat=saveat)


def pendulum(**kw):
    """A01 pendulum with a bob inertia of 0.01 kg m² (the default 1e-12 kg m²
    point mass makes A M⁻¹ Aᵀ ill conditioned, cond ≈ 1e12, which shows as
    round-off noise in finite differences but not in the motion)."""
    mech = models.pendulum(inertia=0.01, **kw)
    return mech.build(), mech.initial_state()


@pytest.fixture(scope="module")
def pendulum_reference():
    """The rigid A01 motion of `pendulum()` (m = 1 kg, L = 1 m, I = 0.01 kg m² about
    the bob, released at rest from (−1, 0)): the rod's angle φ from the −x axis obeys
    (I + m L²) φ̈ = m g L cos φ, integrated by SciPy's DOP853, and the bob is at
    (−L cos φ, −L sin φ) turned by φ. Returns (t, q) at t = 0, 0.1, …, 1 s. (A
    Diffrax run of the rigid model was this oracle before: ~10 s of compilation.)"""
    import scipy.integrate

    ts = np.linspace(0.0, 1.0, 11)
    sol = scipy.integrate.solve_ivp(
        lambda t, y: [y[1], G * math.cos(y[0]) / 1.01],
        (0.0, 1.0),
        [0.0, 0.0],
        method="DOP853",
        t_eval=ts,
        rtol=1e-13,
        atol=1e-13,
    )
    phi = sol.y[0]
    return ts, np.stack([-np.cos(phi), -np.sin(phi), phi], 1)


def uniform(model, c=COMPLIANCE):
    """The same compliance on every row, as a per-row array (one compiled shape)."""
    return Compliance.from_pairs(model, c)


@pytest.fixture(scope="module")
def parallelogram():
    """Three parallel unit cranks 1 m apart (p = 1) hanging under upward gravity,
    released 0.6 rad from the vertical: a swing that stays away from the singular
    horizontal pose."""
    mech = models.parallelogram(
        n_cranks=3, crank_angle=PARALLELOGRAM_THETA0, angular_velocity=0.0, gravity=-G
    )
    model, state = mech.build(), mech.initial_state()
    C = np.asarray(jax.jit(rx.equations.constraint_matrix)(model, state.q, state.t))
    assert C.shape[0] - np.linalg.matrix_rank(C) == 1
    return model, state


@pytest.fixture(scope="module")
def parallelogram_reference():
    """The rigid motion in closed form: every crank turns by θ(t) and the coupler
    (2 kg) translates, a one-degree-of-freedom pendulum I θ̈ = 3.5 g cos θ with
    I = 3 (1/12 + 1/4) + 2 = 3 kg m² (cranks about their pivots, coupler as a point
    mass), integrated by SciPy's DOP853. Returns q at t = 0, 0.1, …, 1 s."""
    import scipy.integrate

    ts = np.linspace(0.0, 1.0, 11)
    sol = scipy.integrate.solve_ivp(
        lambda t, y: [y[1], 3.5 * G * math.cos(y[0]) / 3.0],
        (0.0, 1.0),
        [PARALLELOGRAM_THETA0, 0.0],
        method="DOP853",
        t_eval=ts,
        rtol=1e-13,
        atol=1e-13,
    )
    theta = sol.y[0]
    c, s, zero = np.cos(theta), np.sin(theta), np.zeros_like(theta)
    cranks = [np.stack([k + c / 2, s / 2, theta], 1) for k in range(3)]
    coupler = np.stack([1.0 + c, s, zero], 1)
    return ts, np.concatenate(cranks + [coupler], axis=1)


def _block_step(model, state, c, tau, h):
    """One step of Eq. (1) in González's own form, assembled and solved with NumPy:
    [I −hI 0; 0 M −Aᵀ; 0 A C̄] [q₊; v₊; hλ_G] = [q; M v + h F; B̄ Φ − b]."""
    q, v, t = state.q, state.qd, state.t

    @jax.jit
    def assemble(q, v, t):
        return (
            rx.equations.mass_matrix(model, q),
            rx.equations.constraint_matrix(model, q, t),
            rx.equations.velocity_bias(model, q, t),
            rx.equations.generalized_forces(model, q, v, t),
            rx.equations.position_residual(model, q, t),
        )

    M, A, b, F, phi_m = map(np.asarray, assemble(q, v, t))
    phi = np.zeros(model.n_constraints)
    phi[: model.n_holonomic] = phi_m
    n, nc = M.shape[0], A.shape[0]
    C_bar = np.diag(c / (h * (h + tau)))
    B_bar = -np.diag(1.0 / (h + tau))
    K = np.zeros((2 * n + nc, 2 * n + nc))
    K[:n, :n] = np.eye(n)
    K[:n, n : 2 * n] = -h * np.eye(n)
    K[n : 2 * n, n : 2 * n] = M
    K[n : 2 * n, 2 * n :] = -A.T
    K[2 * n :, n : 2 * n] = A
    K[2 * n :, 2 * n :] = C_bar
    rhs = np.concatenate([np.asarray(q), M @ np.asarray(v) + h * F, B_bar @ phi - b])
    x = np.linalg.solve(K, rhs)
    # González's λ_G enters as −Aᵀ; the library's convention is M q̈ + Cᵀ λ = F.
    return x[:n], x[n : 2 * n], -x[2 * n :] / h, np.linalg.cond(K)


# --- (1) convergence to the rigid motion -----------------------------------------


def test_first_order_convergence_to_the_rigid_pendulum(pendulum_reference):
    model, s0 = pendulum()
    ref_ts, ref_q = pendulum_reference
    errors = []
    for h in (1e-3, 5e-4):
        traj = gonzalez(
            model,
            s0,
            1.0,
            h=h,
            compliance=uniform(model, TINY_COMPLIANCE),
            save_every=round(0.1 / h),
        )
        assert traj.q.shape == (11, 3)
        np.testing.assert_allclose(traj.ts, ref_ts, rtol=0, atol=1e-12)
        errors.append(float(np.max(np.abs(traj.q - ref_q))))
    orders = np.log2(np.asarray(errors[:-1]) / np.asarray(errors[1:]))
    assert np.all((orders > ORDER_RANGE[0]) & (orders < ORDER_RANGE[1])), (errors, orders)
    assert errors[1] < FIRST_ORDER_CONSTANT * 1e-3


def test_rheonomic_constraint_is_tracked_through_phi_t():
    """The driven slider-crank is kinematically determined: the crank turns at the
    prescribed speed and the slider follows x_B = r cos θ + √(l² − r² sin² θ). With
    b = Φ_t in the velocity row every step lands on the constraints up to the
    O(h²) linearisation error; without it the drive would lag by ω h = 6e-3 rad."""
    r, l, theta0, w = 0.2, 0.6, 0.3, 2 * math.pi
    mech = models.slider_crank(crank=r, rod=l, crank_angle=theta0, speed=w)
    model, s0 = mech.build(), mech.initial_state()
    h = 1e-3
    traj = gonzalez(model, s0, 1.0, h=h, compliance=Compliance(TINY_COMPLIANCE), save_every=100)
    theta = theta0 + w * np.asarray(traj.ts)
    x_b = r * np.cos(theta) + np.sqrt(l**2 - (r * np.sin(theta)) ** 2)
    slider = model.body_index("slider") * 3
    crank = model.body_index("crank") * 3 + 2
    assert np.max(np.abs(np.asarray(traj.q[:, crank]) - theta)) < KINEMATIC_H2 * h**2
    assert np.max(np.abs(np.asarray(traj.q[:, slider]) - x_b)) < KINEMATIC_H2 * h**2


# --- (2) compliance: redundant constraints, uniqueness, physical meaning ---------


def test_step_is_the_block_system_of_eq1(parallelogram):
    """One step of the implementation (Schur complement, Cholesky) equals the
    3 × 3 block system of Eq. (1) solved by NumPy, on a redundant model with
    non-uniform compliance and damping; that system is non-singular."""
    model, s0 = parallelogram
    comp = Compliance.from_pairs(
        model, {"A3": 10 * COMPLIANCE}, {"O1": 2e-3}, default_compliance=COMPLIANCE
    )
    # Start off the manifold and moving, so that every term of Eq. (1) is active.
    state = rx.State(0.0, s0.q + 1e-6 * jnp.arange(12.0), s0.qd + 0.1)
    h = 1e-3
    # Saved after every step: the configuration of the other parallelogram runs.
    traj = gonzalez(model, state, 1.0, h=h, compliance=comp)
    q1, v1, lam, cond = _block_step(
        model, state, np.asarray(comp.compliance), np.asarray(comp.damping_time), h
    )
    assert cond < 1e12
    np.testing.assert_allclose(traj.q[1], q1, rtol=0, atol=TOL_STEP)
    np.testing.assert_allclose(traj.qd[1], v1, rtol=0, atol=TOL_STEP)
    np.testing.assert_allclose(traj.multipliers[0], lam, rtol=TOL_STEP, atol=TOL_STEP)


def test_redundant_parallelogram_with_compliance(parallelogram, parallelogram_reference):
    model, s0 = parallelogram
    ref = parallelogram_reference
    traj = gonzalez(model, s0, 1.0, h=1e-3, compliance=uniform(model))
    assert np.all(np.isfinite(traj.q)) and np.all(np.isfinite(traj.multipliers))
    np.testing.assert_allclose(traj.ts[::100], ref[0], rtol=0, atol=1e-12)
    assert float(np.max(np.abs(traj.q[::100] - ref[1]))) < FIRST_ORDER_CONSTANT * 1e-3

    # Uniform compliance: λ = Φ / c with Φ ≈ A δq lies in range(A), i.e. it is the
    # minimum-norm choice among the multipliers giving the same total reaction Aᵀ λ.
    @jax.jit
    def min_norm(q, t, lam):
        C = rx.equations.constraint_matrix(model, q, t)
        return minimum_norm_multipliers(C, C.T @ lam, rtol=1e-8)

    for k in (300, 700, 1000):
        lam = traj.multipliers[k]
        lam_min = min_norm(traj.q[k], traj.ts[k], lam)
        np.testing.assert_allclose(lam, lam_min, rtol=0, atol=TOL_MIN_NORM * np.abs(lam).max())
    # Non-uniform compliance: the motion is the same to O(c), the distribution of
    # the non-unique reactions is not.
    softer = Compliance.from_pairs(
        model, {"O3": 10 * COMPLIANCE, "A3": 10 * COMPLIANCE}, default_compliance=COMPLIANCE
    )
    other = gonzalez(model, s0, 1.0, h=1e-3, compliance=softer)
    assert float(np.max(np.abs(other.q - traj.q))) < 1e-5
    assert float(np.max(np.abs(other.multipliers - traj.multipliers))) > 1.0


def test_zero_compliance_on_redundant_rows_is_refused(parallelogram):
    """Decision: with c = 0 on linearly dependent rows the step matrix
    A M⁻¹ Aᵀ + C̄ is singular and λ undetermined; rather than regularise silently,
    the edge refuses it (a compliance > 0 *is* the regularisation, with a physical
    meaning). Inside a trace, where the host check cannot run, the Cholesky factor
    of the singular matrix yields NaN and the run raises."""
    model, s0 = parallelogram
    with pytest.raises(ValueError, match="zero compliance.*linearly dependent"):
        gonzalez(model, s0, 0.1, h=1e-3)
    # Zero compliance on one crank's rows only is fine: the others absorb the redundancy.
    one_rigid = Compliance.from_pairs(model, {"O1": 0.0, "A1": 0.0}, default_compliance=COMPLIANCE)
    traj = gonzalez(model, s0, 1.0, h=1e-3, compliance=one_rigid)
    assert np.all(np.isfinite(traj.multipliers))
    traced = jax.jit(lambda s: gonzalez(model, s, 0.01, h=1e-3).q)
    with pytest.raises(Exception, match="non-finite state"):
        traced(s0).block_until_ready()


def test_static_sag_of_a_compliant_pendulum():
    """A hanging pendulum settles where c λ = Φ: the bob sags by c m g and the
    reaction is m g (closed form; λ_y = −m g in the convention M q̈ + Cᵀ λ = F)."""
    model, s0 = pendulum(angle=math.pi / 2)
    c, g = 1e-4, G
    # ω = 1/√(c m) = 100 rad/s; τ = 0.02 s is critical damping of the spring, and
    # 1 s is 100 time constants 1/ω.
    comp = Compliance.from_pairs(model, c, damping_time=0.02)
    traj = gonzalez(model, s0, 1.0, h=1e-3, compliance=comp, save_every=100)
    phi = rx.equations.position_residual(model, traj.q[-1])
    np.testing.assert_allclose(phi, [0.0, -c * g], rtol=TOL_STATIC, atol=TOL_STATIC * c * g)
    np.testing.assert_allclose(
        traj.multipliers[-1], [0.0, -g], rtol=TOL_STATIC, atol=TOL_STATIC * g
    )


def test_bricard_moves_with_compliant_joints_and_locks_when_rigid():
    """Seed 001, §2.1–2.2 (IFToMM A04, 5 rods, p = 1, released from the square
    configuration, h = 10⁻² s): with rigid joints the step matrix is singular (the
    paper's "incompatible" system); with compliant joints the marked point swings
    from x = 1 m to x = −1 m within 3 s, the range the paper reports."""
    mech = models.bricard()
    model, s0 = mech.build(), mech.initial_state()
    with pytest.raises(ValueError, match="linearly dependent"):
        gonzalez(model, s0, 1.0)
    traj = gonzalez(
        model, s0, 3.0, h=1e-2, compliance=Compliance.from_pairs(model, COMPLIANCE), save_every=10
    )
    x = np.asarray(
        jax.jit(jax.vmap(lambda q: rx.equations.marker_positions(model, q)[0, 0]))(traj.q)
    )
    assert np.all(np.isfinite(traj.multipliers))
    np.testing.assert_allclose(x[0], 1.0, atol=1e-12)
    assert x.min() < -1.0 + BRICARD_TURN and x.max() < 1.0 + BRICARD_TURN
    assert float(traj.position_violation.max()) < BRICARD_VIOLATION


# --- (3) projection ----------------------------------------------------------------


def projected_pendulum(h):
    """The A01 pendulum projected after every step, saved after every step, 10 s."""
    model, s0 = pendulum()
    comp = uniform(model, TINY_COMPLIANCE)
    traj = gonzalez(
        model, s0, 10.0, h=h, compliance=comp, projection=True, projection_tol=PROJECTION_TOL
    )
    return model, traj


@pytest.fixture(scope="module")
def projected_pendulum_run():
    return projected_pendulum(1e-3)


@pytest.mark.parametrize("which", ["pendulum", "parallelogram"])
def test_projection_keeps_the_constraints_at_round_off(
    which, projected_pendulum_run, pendulum_reference, parallelogram, parallelogram_reference
):
    if which == "pendulum":
        _, traj = projected_pendulum_run
        ref_ts, ref_q = pendulum_reference
    else:
        model, s0 = parallelogram
        ref_ts, ref_q = parallelogram_reference
        traj = gonzalez(
            model,
            s0,
            1.0,
            h=1e-3,
            compliance=uniform(model),
            projection=True,
            projection_tol=PROJECTION_TOL,
        )
    assert bool(traj.projection_converged)
    assert float(traj.position_violation.max()) <= TOL_PROJECTED
    assert float(traj.velocity_violation.max()) <= TOL_PROJECTED
    np.testing.assert_allclose(traj.ts[:1001:100], ref_ts, rtol=0, atol=1e-12)
    assert float(np.max(np.abs(traj.q[:1001:100] - ref_q))) < FIRST_ORDER_CONSTANT * 1e-3


# --- (4) energy --------------------------------------------------------------------


def test_symplectic_euler_energy_has_no_secular_drift():
    """40 periods of the A01 pendulum (released horizontally, E = 0 J): the energy
    error oscillates with an O(h) amplitude that does not grow."""
    model, s0 = pendulum()
    h = 1e-3
    traj = gonzalez(model, s0, 100.0, h=h, save_every=100)
    error = np.asarray(traj.energy)  # E(0) = 0: at rest at the pivot's height
    assert abs(error[0]) < 1e-12
    first, *_, last = np.array_split(error, 10)
    assert np.abs(error).max() < ENERGY_AMPLITUDE_PER_H * h
    assert np.abs(last).max() < ENERGY_GROWTH * np.abs(first).max()
    assert abs(last.mean() - first.mean()) < ENERGY_MEAN_DRIFT


def test_projection_dissipates_energy_at_first_order(projected_pendulum_run):
    """Documented behaviour of Eq. (3): v₊ is tangent to the manifold at q_n, and
    projecting it onto the tangent space at q₊ removes an O(h) normal component
    every step, so the energy decays at a rate ∝ h (halving h halves the loss)."""
    losses = []
    for _, traj in (projected_pendulum(2e-3), projected_pendulum_run):
        losses.append(-float(traj.energy[-1] - traj.energy[0]))
    assert losses[0] > 0 and losses[1] > 0
    order = math.log2(losses[0] / losses[1])
    assert ORDER_RANGE[0] < order < ORDER_RANGE[1], losses


# --- (5) jit, vmap, grad -------------------------------------------------------------


def test_vmap_equals_loop():
    """One batch over initial states and compliances together, against a loop."""
    model, s0 = pendulum()
    _, s1 = pendulum(angle=0.4)
    states = jax.tree.map(lambda a, b: jnp.stack([a, b]), s0, s1)
    cs = jnp.array([TINY_COMPLIANCE, 1e-4])

    def run(s, c):
        # The configuration of the convergence test: compiled once for both.
        comp = Compliance(jnp.full(model.n_constraints, c))
        return gonzalez(model, s, 1.0, h=1e-3, compliance=comp, save_every=100)

    batched = jax.vmap(run)(states, cs)
    assert isinstance(batched, GonzalezTrajectory) and batched.q.shape == (2, 11, 3)
    for i, s in enumerate((s0, s1)):
        single = run(s, cs[i])
        np.testing.assert_allclose(batched.q[i], single.q, rtol=0, atol=TOL_BATCH)
        np.testing.assert_allclose(batched.multipliers[i], single.multipliers, atol=TOL_BATCH)
    assert float(np.max(np.abs(batched.q[0] - batched.q[1]))) > 0.1


@pytest.mark.parametrize("projection", [False, True])
def test_grad_wrt_pendulum_length_matches_finite_differences(projection):
    model, _ = pendulum()

    def final_x(length):
        m = eqx.tree_at(lambda m: m.holonomic[0].s_i, model, jnp.stack([length, 0.0])[None])
        s = rx.State(0.0, jnp.stack([-length, 0.0, 0.0]), jnp.zeros(3))
        traj = gonzalez(
            m,
            s,
            0.5,
            h=1e-3,
            compliance=Compliance(1e-9),
            projection=projection,
            max_projection_iterations=4,
            save_every=500,
        )
        return traj.q[-1, 0]

    # One compiled function for the derivative and the finite differences' values.
    value_and_grad = eqx.filter_jit(jax.value_and_grad(final_x))
    length, eps = jnp.asarray(1.0), 1e-4
    grad = float(value_and_grad(length)[1])
    fd = float((value_and_grad(length + eps)[0] - value_and_grad(length - eps)[0]) / (2 * eps))
    assert abs(grad - fd) <= TOL_FD_GRAD * abs(fd), (grad, fd)


# --- input validation -----------------------------------------------------------------


def test_invalid_inputs_are_refused_naming_the_field():
    model, s0 = pendulum()
    with pytest.raises(ValueError, match="GonzalezStepper field 'h'"):
        GonzalezStepper(h=0.0)
    with pytest.raises(ValueError, match="field 't1'"):
        gonzalez(model, s0, -1.0)
    with pytest.raises(ValueError, match="field 't1'.*whole number"):
        gonzalez(model, s0, 1.0, h=0.3)
    with pytest.raises(ValueError, match="field 'saveat'.*divide"):
        rx.simulate(model, s0, 1.0, solver=GonzalezStepper(h=0.1), saveat=rx.SaveAt(n=4))
    with pytest.raises(ValueError, match="field 'compliance'"):
        Compliance(-1e-9)
    with pytest.raises(ValueError, match="field 'damping_time'"):
        Compliance(1e-9, damping_time=np.array([0.0, -1.0]))
    with pytest.raises(ValueError, match=r"compliance\.compliance.*m \+ h = 2"):
        gonzalez(model, s0, 1.0, compliance=Compliance(np.full(3, 1e-9)))
    with pytest.raises(ValueError, match="unknown pair.*'X'"):
        Compliance.from_pairs(model, {"X": 1e-9})
