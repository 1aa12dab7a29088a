"""Design quantities (issue 5): gradients of unique reactions at a state and of
trajectory functionals through the Diffrax solve, against central finite
differences computed here; the method-independence of the gradient of a unique
reaction; and the guard against reactions a rigid model does not determine.

Every Jacobian comes from one compiled function that also returns the values,
and the finite differences call that same function, so each mechanism costs one
compilation per test."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from helpers import TOL_FD_SOLVE
from redundax import models
from redundax.analysis import final_marker_position, pair_reaction, peak_reaction, reaction_impulse

# Gradient of a unique reaction by different methods of handling redundancy:
# relative difference (Frobenius norm of the Jacobians). The methods share q̈
# up to round-off; their unique reactions agree to ~1e-12 and so do the gradients.
TOL_SAME_GRADIENT = 1e-8
# The same reaction computed twice (jit / eager, vmap / loop, two functions) [N, N m].
TOL_ROUND_OFF = 1e-13
# Finite-difference step, relative to each parameter's scale.
FD_STEP = 1e-5
# Gradients through the solve against finite differences: the adaptive step sequence
# makes computed reactions noisy (~1e-9 relative at rtol = 1e-10, which a step of
# FD_STEP turns into ~1e-4 errors in a derivative of a peak reaction). At these
# tolerances (Dopri8) the measured errors stay below 3e-6.
TIGHT_FD = dict(stepsize_controller=diffrax.PIDController(rtol=1e-12, atol=1e-14))
# What is differentiated here is the solve and the functionals, not the drift
# control (the gradient through the default projection after every step is tested
# in test_step_projection): Baumgarte's terms, and no singularity log, keep the
# compiled reverse pass small.
THROUGH_THE_SOLVE = dict(TIGHT_FD, drift_control=rx.drift.Baumgarte(), monitor=None)
# A 2-s manoeuvre, saved every 50 ms.
MANOEUVRE = 2.0
N_SAVE = 41


def _strong(model):
    """The builders make weakly typed masses; `tree_at` below puts strong float64
    arrays in their place, so use strong ones throughout (one compilation)."""
    return eqx.tree_at(
        lambda m: (m.bodies.mass, m.bodies.inertia),
        model,
        (jnp.asarray(np.asarray(model.bodies.mass)), jnp.asarray(np.asarray(model.bodies.inertia))),
    )


def _moving(model, state, t, seed=0):
    """A consistent state at time `t` near `state`: positions projected onto
    Φ(q, t) = 0, then a randomly perturbed velocity projected onto C q̇ + b = 0, so
    that every acceleration term and reaction is active (for the mobile robot, `t`
    inside a steering ramp makes it turn)."""
    rng = np.random.default_rng(seed)
    qd = state.qd + 0.1 * rng.standard_normal(state.qd.shape)
    q, qd = eqx.filter_jit(rx.drift.Projection(iterations=6))(model, state.q, qd, jnp.asarray(t))
    return rx.State(t, q, qd)


def _fd_jacobian(values, theta, scale):
    """Fourth-order central differences (the five-point stencil, Richardson's
    extrapolation of two central differences) of `values` (θ ↦ outputs) along
    each parameter, with steps FD_STEP · scale."""
    theta = np.asarray(theta, dtype=float)
    columns = []
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = FD_STEP * scale[k]

        def at(j, e=e):
            return np.asarray(values(jnp.asarray(theta + j * e)))

        columns.append((8.0 * (at(1) - at(-1)) - (at(2) - at(-2))) / (12.0 * e[k]))
    return np.stack(columns, axis=-1)


def _column_errors(J, fd):
    """Relative error of each parameter's column (all outputs of one parameter)."""
    J, fd = J.reshape(-1, J.shape[-1]), fd.reshape(-1, fd.shape[-1])
    return np.linalg.norm(J - fd, axis=0) / np.linalg.norm(fd, axis=0)


@pytest.fixture(scope="module")
def robot():
    mech = models.mobile_robot()
    model = _strong(mech.build())
    return model, _moving(model, mech.initial_state(), 0.8)


@pytest.fixture(scope="module")
def four_bar():
    mech = models.four_bar()
    model = _strong(mech.build())
    return model, mech.initial_state()


# ------------------------------------------------------- unique reactions at a state


def _robot_params(model, theta):
    """θ = [x of joint D on link_left [m], mass of link_left [kg], x of joint F on
    link_left [m]]: a joint point, a mass and a second joint point, all of pairs
    whose multipliers are unique (so the state stays valid for every method)."""
    revolute = model.holonomic[0]
    return eqx.tree_at(
        lambda m: (m.holonomic[0].s_i, m.holonomic[0].s_j, m.bodies.mass),
        model,
        (
            revolute.s_i.at[3, 0].set(theta[0]),
            revolute.s_j.at[5, 0].set(theta[2]),
            model.bodies.mass.at[3].set(theta[1]),
        ),
    )


def _robot_theta(model):
    revolute = model.holonomic[0]
    return np.array(
        [float(revolute.s_i[3, 0]), float(model.bodies.mass[3]), float(revolute.s_j[5, 0])]
    )


def test_unique_reaction_gradient_is_method_independent_and_matches_fd(robot):
    """∂f_D/∂θ by the null-space method (minimum-norm multipliers) and the paper's
    elimination variants {6, 21} and {18, 21} (each a compilation of its own): the
    same to TOL_SAME_GRADIENT; the null-space one equals central differences."""
    model, s = robot
    theta0 = _robot_theta(model)
    methods = {
        "null-space": None,  # the guarded default: unique reactions only
        "{6,21}": rx.methods.eliminate(model, s.q, s.t, rows=(6, 21)),
        "{18,21}": rx.methods.eliminate(model, s.q, s.t, rows=(18, 21)),
    }
    # Decided once, at the nominal geometry, and held fixed while θ varies (the
    # finite differences below move θ off the state's constraint manifold).
    structure = rx.decide(model, s.q, s.t)
    jacobians = {}
    for name, method in methods.items():

        def wrench(theta, method=method):
            r = pair_reaction(
                _robot_params(model, theta),
                s.q,
                s.qd,
                s.t,
                pair="D",
                method=method,
                structure=structure,
            )
            return r.wrench, (r.wrench, r.unique)

        jac = eqx.filter_jit(jax.jacrev(wrench, has_aux=True))
        J, (value, unique) = jac(jnp.asarray(theta0))
        assert bool(unique), name
        jacobians[name] = (np.asarray(J), jac)
    J0, jac0 = jacobians["null-space"]
    eager = pair_reaction(model, s.q, s.qd, s.t, pair="D").wrench  # jit ≡ eager
    np.testing.assert_allclose(jac0(jnp.asarray(theta0))[1][0], eager, rtol=0, atol=TOL_ROUND_OFF)
    assert np.linalg.norm(J0[[1, 3]], axis=(0, 1)).min() > 1e-3  # every parameter matters
    for name, (J, _) in jacobians.items():
        assert np.linalg.norm(J - J0) <= TOL_SAME_GRADIENT * np.linalg.norm(J0), name
    fd = _fd_jacobian(lambda th: jac0(th)[1][0], theta0, np.abs(theta0))
    errors = _column_errors(J0, fd)
    print("robot, joint D at a state: FD relative errors", errors)
    assert np.all(errors < TOL_FD_SOLVE), errors


def test_unique_reaction_gradient_four_bar(four_bar):
    """Four-bar (closed loop): the reaction in O and its joint-frame components
    against central differences, w.r.t. the rocker's joint point D (x), the
    crank's mass and the coupler's joint point B (x). (The ground points enter Φ
    only, not C or Γ: at a fixed state the reactions do not depend on them.)"""
    model, state = four_bar
    s = _moving(model, state, 0.0, seed=1)
    revolute = model.holonomic[0]

    def reaction(theta):
        m = eqx.tree_at(
            lambda m: (m.holonomic[0].s_i, m.bodies.mass),
            model,
            (
                revolute.s_i.at[3, 0].set(theta[0]).at[2, 0].set(theta[2]),
                model.bodies.mass.at[0].set(theta[1]),
            ),
        )
        r = pair_reaction(m, s.q, s.qd, s.t, pair="O")
        out = jnp.concatenate([r.wrench.reshape(-1), r.components])
        return out, out

    theta0 = np.array(
        [float(revolute.s_i[3, 0]), float(model.bodies.mass[0]), float(revolute.s_i[2, 0])]
    )
    jac = eqx.filter_jit(jax.jacrev(reaction, has_aux=True))
    J = np.asarray(jac(jnp.asarray(theta0))[0])
    assert np.all(np.linalg.norm(J, axis=0) > 1e-3)  # every parameter matters
    fd = _fd_jacobian(lambda th: jac(th)[1], theta0, np.abs(theta0))
    errors = _column_errors(J, fd)
    print("four-bar, joint O at a state: FD relative errors", errors)
    assert np.all(errors < TOL_FD_SOLVE), errors


# ------------------------------------------------------------- trajectory functionals


# One compilation of the reverse pass through the robot's solve, for one scalar.
def test_trajectory_functionals_mobile_robot(robot):
    """Through the Diffrax solve of a 2-s steering manoeuvre, three functionals of
    the trajectory in one weighted sum (one reverse pass; the weights make each term
    O(1), so an error in any one shows): the final lateral position of the trolley's
    wheel W5, the impulse of its (unique) lateral force and the smooth peak of that
    force, w.r.t. the hitch length (joint A's point on the trolley, with the trolley
    moved so that the initial state stays consistent), the trolley's mass and the
    position of W5 along the trolley. (The gradient through `rx.ProjectInitial` is
    tested on the block solver in test_block, the design problem's in test_optimize.)"""
    model, _ = robot
    mech = models.mobile_robot()
    s0 = mech.initial_state()
    hitch = model.holonomic[0].s_i
    wheels = model.pfaffian[0].point
    trolley_x = 3 * model.bodies.names.index("trolley")

    def functionals(theta):
        m = eqx.tree_at(
            lambda m: (m.holonomic[0].s_i, m.bodies.mass, m.pfaffian[0].point),
            model,
            (
                hitch.at[0, 0].set(theta[0]),
                model.bodies.mass.at[6].set(theta[1]),
                wheels.at[4, 0].set(theta[2]),
            ),
        )
        q0 = s0.q.at[trolley_x].add(hitch[0, 0] - theta[0])
        traj = rx.simulate(
            m, rx.State(s0.t, q0, s0.qd), MANOEUVRE, saveat=rx.SaveAt(n=N_SAVE), **THROUGH_THE_SOLVE
        )
        peak = peak_reaction(m, traj, pair="W5")
        return jnp.stack(
            [
                final_marker_position(m, traj, "W5")[1],
                reaction_impulse(m, traj, pair="W5").components[0],
                peak.value,
            ]
        ), peak.max

    theta0 = np.array([float(hitch[0, 0]), float(model.bodies.mass[6]), 0.0])
    scale = np.array([float(hitch[0, 0]), float(model.bodies.mass[6]), float(hitch[0, 0])])

    def weighted(theta, weights):
        out, peak_max = functionals(theta)
        return out @ weights, (out, peak_max)

    # One compiled program (value and gradient) serves every call below: the
    # weights are an argument, taken from a first call at unit weights.
    value_and_grad = eqx.filter_jit(jax.value_and_grad(weighted, has_aux=True))
    (_, (values, _)), _ = value_and_grad(jnp.asarray(theta0), jnp.ones(3))
    weights = 1.0 / jnp.abs(values)  # each term ±1 at θ₀
    (value, (out, peak_max)), grad = value_and_grad(jnp.asarray(theta0), weights)
    # The smooth peak (a power mean) lies below the sampled maximum, close to it.
    assert 0.8 * float(peak_max) < float(out[2]) <= float(peak_max)
    fd = _fd_jacobian(lambda th: value_and_grad(th, weights)[0][0], theta0, scale)
    errors = np.abs(np.asarray(grad) - fd) / np.abs(fd)
    print("robot trajectory functionals:", np.asarray(out), "FD relative errors", errors)
    assert np.all(np.abs(fd * scale / float(value)) > 1e-3)  # each parameter matters
    assert np.all(errors < TOL_FD_SOLVE), errors


# ---------------------------------------------------------------- the uniqueness guard


def test_non_unique_pair_raises_eagerly_under_jit_and_under_grad(robot):
    model, s = robot
    message = r"pair 'B' is not unique: a rigid model does not determine it"
    others = r".*p = 2.*other pairs whose reactions are not unique: C, W1, W2, W3, W4\."
    with pytest.raises(ValueError, match=message + others) as info:
        pair_reaction(model, s.q, s.qd, s.t, pair="B")
    assert "rx.methods.Compliant(rx.methods.joint_stiffness" in str(info.value)
    assert "rx.methods.eliminate" in str(info.value)

    # Inside jax.jit: the runtime error of `eqx.error_if` (a JaxRuntimeError).
    with pytest.raises(RuntimeError, match=message + r".*p = 2"):
        jax.jit(lambda q: pair_reaction(model, q, s.qd, s.t, pair="B").components)(s.q)

    def b_force(mass):
        m = eqx.tree_at(lambda m: m.bodies.mass, model, model.bodies.mass.at[0].set(mass))
        return jnp.sum(pair_reaction(m, s.q, s.qd, s.t, pair="B").wrench ** 2)

    # Under jax.grad the structure is decided on stop-gradient values, so its
    # verdict is known on the host: the same ValueError as eagerly.
    with pytest.raises(ValueError, match=message + others):
        jax.grad(b_force)(10.0)

    # Named method: that method's numbers, flagged.
    r = pair_reaction(model, s.q, s.qd, s.t, pair="B", method=rx.methods.NullSpace())
    assert not bool(r.unique) and r.method == "NullSpace"
    assert r.labels == ("force x", "force y") and r.wrench.shape == (7, 3)
    assert float(jnp.linalg.norm(r.wrench)) > 0.0
    # A unique pair by the guarded default: flagged unique, equal to `reactions`;
    # vmap (the guard batched) equals a loop.
    d = pair_reaction(model, s.q, s.qd, s.t, pair="D")
    full = eqx.filter_jit(rx.reactions)(model, s.q, s.qd, s.t)
    np.testing.assert_allclose(d.wrench, full.pair("D")[0], rtol=0, atol=TOL_ROUND_OFF)
    assert bool(d.unique) and d.method == "NullSpace"
    scales = jnp.array([0.5, 2.0])
    batched = jax.vmap(lambda c: pair_reaction(model, s.q, c * s.qd, s.t, pair="D").wrench)(scales)
    for k, c in enumerate(scales):
        looped = pair_reaction(model, s.q, c * s.qd, s.t, pair="D").wrench
        np.testing.assert_allclose(batched[k], looped, rtol=0, atol=TOL_ROUND_OFF)


def test_trajectory_functional_guard(robot):
    """The functionals refuse a non-unique pair too (host-side here): the verdict
    of the trajectory's Structure, decided once for the whole motion."""
    model, s = robot
    # A two-sample "trajectory" is all the functionals read (ts, q, qd).
    traj = rx.Trajectory(
        ts=jnp.array([0.0, 1e-3]),
        q=jnp.stack([s.q, s.q]),
        qd=jnp.stack([s.qd, s.qd]),
        position_violation=jnp.zeros(2),
        velocity_violation=jnp.zeros(2),
        energy=jnp.zeros(2),
        initial_correction=jnp.zeros(2),
        num_steps=jnp.asarray(0),
        num_accepted_steps=jnp.asarray(0),
        num_rejected_steps=jnp.asarray(0),
        result=diffrax.RESULTS.successful,
        structure=rx.decide(model, s.q, s.t),
    )
    with pytest.raises(ValueError, match=r"pair 'W1' is not unique: .*p = 2"):
        peak_reaction(model, traj, pair="W1", drift_control=None)
    flagged = reaction_impulse(model, traj, pair="W1", method=rx.methods.NullSpace(), drift_control=None)
    assert not bool(flagged.unique)
    with pytest.raises(ValueError, match="no pair named 'Z'"):
        peak_reaction(model, traj, pair="Z")
    with pytest.raises(ValueError, match="no component 'moment'"):
        pair_reaction(model, s.q, s.qd, s.t, pair="A", component="moment")
    with pytest.raises(ValueError, match="no marker named 'Z'"):
        final_marker_position(model, traj, "Z")
