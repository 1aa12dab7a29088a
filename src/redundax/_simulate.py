"""Forward dynamics with Diffrax: `simulate(model, state0, t1, ...) -> Trajectory`."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._assembly import (
    constraint_matrix,
    kinetic_energy,
    mass_matrix,
    position_residual,
    potential_energy,
    raise_if_inconsistent,
    velocity_residual,
)
from ._constraints import RevoluteDriverConstraint, TranslationalDriverConstraint
from ._diagnostics import _nearby_ranks, raise_if_singular, regular_direction
from ._dynamics import (
    AbstractRedundancyMethod,
    NullSpace,
    WeightedMinimumNorm,
    decide_schur,
    dynamics_terms,
)
from ._model import Model, State
from ._qr import DECISION_RTOL, pivoted_qr
from ._stabilisation import Baumgarte, Projection


class Trajectory(eqx.Module):
    """A simulated motion, sampled at `ts`.

    - `ts` (T,), `q`, `qd` (T, nq): saved states.
    - `position_violation` (T,): max |Φ| [m or rad] at each saved time.
    - `velocity_violation` (T,): max |C q̇ + b| (holonomic and Pfaffian rows).
    - `energy` (T,): kinetic + potential energy of the applied constant loads [J].
    - `initial_correction`: max |Δq|, |Δq̇| of the initial projection (0 if none).
    - `num_steps`, `num_accepted_steps`, `num_rejected_steps`: integrator counts.
    - `result`: Diffrax's `RESULTS` code.
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T nq"]
    qd: Float[Array, "T nq"]
    position_violation: Float[Array, " T"]
    velocity_violation: Float[Array, " T"]
    energy: Float[Array, " T"]
    initial_correction: Float[Array, " 2"]
    num_steps: Int[Array, ""]
    num_accepted_steps: Int[Array, ""]
    num_rejected_steps: Int[Array, ""]
    result: diffrax.RESULTS

    def state(self, k: int) -> State:
        """The saved state number `k`."""
        return State(self.ts[k], self.q[k], self.qd[k])


def _vector_field(t, y, args):
    model, method, stabilisation = args
    q, qd = y
    terms = dynamics_terms(model, q, qd, t)
    gamma = terms.gamma if stabilisation is None else stabilisation.gamma(terms)
    return qd, method.acceleration(terms, gamma)


def _diagnostics(model: Model, ts, q, qd):
    pos = jax.vmap(lambda q, t: jnp.max(jnp.abs(position_residual(model, q, t)), initial=0.0))(
        q, ts
    )
    vel = jax.vmap(
        lambda q, qd, t: jnp.max(jnp.abs(velocity_residual(model, q, qd, t)), initial=0.0)
    )(q, qd, ts)
    energy = jax.vmap(lambda q, qd: kinetic_energy(model, qd) + potential_energy(model, q))(q, qd)
    return pos, vel, energy


@eqx.filter_jit
def _simulate(
    model,
    state0,
    ts,
    method,
    solver,
    controller,
    stabilisation,
    projection,
    initial_projection,
    max_steps,
    throw,
    progress_meter,
):
    q0, qd0 = state0.q, state0.qd
    if initial_projection is not None:
        q1, qd1 = initial_projection(model, q0, qd0, state0.t, None)
        correction = jnp.stack([jnp.max(jnp.abs(q1 - q0)), jnp.max(jnp.abs(qd1 - qd0))])
        q0, qd0 = q1, qd1
    else:
        correction = jnp.zeros(2)
    # Discrete decisions (rank) once, at the initial configuration: the rank of C is
    # a property of the mechanism's structure (Wojtyra & Frączek 2013, §4.2). A method
    # prepared on the host (the fast path) is returned unchanged.
    C0 = constraint_matrix(model, q0, state0.t)
    method = method.prepare(C0, pivoted_qr(C0, DECISION_RTOL).rank)
    term = diffrax.ODETerm(_vector_field)
    args = (model, method, stabilisation)

    if projection is None:
        sol = diffrax.diffeqsolve(
            term,
            solver,
            ts[0],
            ts[-1],
            None,
            (q0, qd0),
            args,
            saveat=diffrax.SaveAt(ts=ts),
            stepsize_controller=controller,
            max_steps=max_steps,
            throw=throw,
            progress_meter=progress_meter,
        )
        q, qd = sol.ys
        stats = (
            sol.stats["num_steps"],
            sol.stats["num_accepted_steps"],
            sol.stats["num_rejected_steps"],
        )
        result = sol.result
    else:
        m = model.n_holonomic
        ranks = (pivoted_qr(C0[:m], DECISION_RTOL).rank, pivoted_qr(C0, DECISION_RTOL).rank)

        def segment(carry, span):
            y, steps, acc, rej, res = carry
            sol = diffrax.diffeqsolve(
                term,
                solver,
                span[0],
                span[1],
                None,
                y,
                args,
                stepsize_controller=controller,
                max_steps=max_steps,
                throw=throw,
            )
            qe, qde = jax.tree.map(lambda x: x[-1], sol.ys)
            y = projection(model, qe, qde, span[1], ranks)
            res = diffrax.RESULTS.where(res == diffrax.RESULTS.successful, sol.result, res)
            carry = (
                y,
                steps + sol.stats["num_steps"],
                acc + sol.stats["num_accepted_steps"],
                rej + sol.stats["num_rejected_steps"],
                res,
            )
            return carry, y

        zero = jnp.asarray(0, dtype=jnp.int32)
        spans = jnp.stack([ts[:-1], ts[1:]], axis=1)
        (_, steps, acc, rej, result), (q, qd) = jax.lax.scan(
            segment, ((q0, qd0), zero, zero, zero, diffrax.RESULTS.successful), spans
        )
        q = jnp.concatenate([q0[None], q])
        qd = jnp.concatenate([qd0[None], qd])
        stats = (steps, acc, rej)
    pos, vel, energy = _diagnostics(model, ts, q, qd)
    return Trajectory(
        ts=ts,
        q=q,
        qd=qd,
        position_violation=pos,
        velocity_violation=vel,
        energy=energy,
        initial_correction=correction,
        num_steps=jnp.asarray(stats[0]),
        num_accepted_steps=jnp.asarray(stats[1]),
        num_rejected_steps=jnp.asarray(stats[2]),
        result=result,
    )


@eqx.filter_jit
def _initial_checks(model: Model, state0: State, direction):
    phi = position_residual(model, state0.q, state0.t)
    vel = velocity_residual(model, state0.q, state0.qd, state0.t)
    if model.n_constraints:
        r0, r1 = _nearby_ranks(model, state0.q, state0.t, direction, DECISION_RTOL)
    else:
        r0 = r1 = jnp.asarray(0)
    return phi, vel, r0, r1, constraint_matrix(model, state0.q, state0.t)


def _breakpoints(model: Model):
    """Knots of the prescribed motions (concrete models only), for `step_ts`."""
    knots = [
        g.motion.breakpoints()
        for g in model.holonomic
        if isinstance(g, (TranslationalDriverConstraint, RevoluteDriverConstraint))
    ]
    if not knots or any(isinstance(k, jax.core.Tracer) for k in knots):
        return None
    return np.unique(np.concatenate([np.ravel(np.asarray(k)) for k in knots]))


def simulate(
    model: Model,
    state0: State,
    t1: float,
    *,
    method: AbstractRedundancyMethod = NullSpace(),
    solver: diffrax.AbstractSolver | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    stabilisation: Baumgarte | None = Baumgarte(),
    projection: Projection | None = None,
    initial_projection: Projection | None = None,
    consistency_tol: float = 1e-8,
    n_save: int = 201,
    ts: Float[Array, " T"] | None = None,
    max_steps: int = 100_000,
    throw: bool = True,
    progress_meter: diffrax.AbstractProgressMeter = diffrax.NoProgressMeter(),
) -> Trajectory:
    """Integrate the equations of motion from `state0` to `t1`.

    **Arguments:**

    - `model`: the mechanism; `state0`: its initial [`State`][] (t, q, q̇).
    - `t1`: final time [s].
    - `method`: how redundant constraints are handled (default [`NullSpace`][]).
    - `solver`: any Diffrax ODE solver. Default: an explicit adaptive Runge–Kutta
      pair, `diffrax.Dopri8()` when `rtol < 1e-6` and `diffrax.Tsit5()` otherwise.
      Implicit ones such as `diffrax.Kvaerno5()` work too.
    - `rtol`, `atol`: PID step-size controller tolerances. The knots of the
      prescribed motions (e.g. `SmoothSteps`) are passed as `step_ts`, so steps land
      on them instead of being rejected across them.
    - `stabilisation`: Baumgarte terms in Γ (default α = β = 10 /s), or None.
    - `projection`: a [`Projection`][] applied at every saved time (positions then
      velocities onto the constraint manifold), or None.
    - `initial_projection`: project `state0` first (the correction is reported in
      `Trajectory.initial_correction`); if None, an inconsistent `state0` is refused.
    - `consistency_tol`: the largest constraint residual accepted in `state0`.
    - `n_save` / `ts`: save times (default: `n_save` equally spaced in [t0, t1]).
    - `max_steps`, `throw`: as in `diffrax.diffeqsolve`.
    - `progress_meter`: a Diffrax progress meter (e.g. `diffrax.TextProgressMeter()`),
      used when `projection` is None (with a projection the solve runs save interval
      by save interval).

    **Returns:** a [`Trajectory`][].

    **Raises:** `ValueError` naming the violated pairs when `state0` is inconsistent
    and `initial_projection` is None, and `ValueError` when `state0` is a singular
    configuration for a method that decides the rank there (checked when `state0`
    is concrete; see `check_regular`).

    Differentiable with respect to the model's parameters and the initial state
    (reverse mode through Diffrax's checkpointed adjoint) and batchable with
    `jax.vmap` over states or models.

    !!! example
        ```python
        traj = rx.simulate(model, state0, 10.0, rtol=1e-10, atol=1e-12)
        traj.position_violation.max()
        ```
    """
    concrete = not any(
        isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves((model, state0))
    )
    if concrete:
        # Host-side checks and discrete decisions, from one compiled call: the
        # consistency of state0, whether it is a regular configuration, and C there
        # (pivot order and rank: the fast path of the method). Inside a trace these
        # decisions are taken in `_simulate` instead, with a traced rank.
        phi, vel, r0, r1, C0 = _initial_checks(model, state0, regular_direction(model))
        if initial_projection is None:
            raise_if_inconsistent(model, phi, vel, consistency_tol)
        if isinstance(method, (NullSpace, WeightedMinimumNorm)) and model.n_constraints:
            raise_if_singular(r0, r1)
        method = decide_schur(
            method, mass_matrix(model), C0, int(pivoted_qr(C0, DECISION_RTOL).rank)
        )
        method = method.prepare(np.asarray(C0))
    elif not isinstance(model.bodies.mass, jax.core.Tracer):
        method = decide_schur(method, mass_matrix(model))
    if ts is None:
        ts = jnp.linspace(state0.t, t1, n_save)
    if solver is None:
        # High order pays off at tight tolerances (fewer, larger steps).
        solver = diffrax.Dopri8() if rtol < 1e-6 else diffrax.Tsit5()
    controller = diffrax.PIDController(rtol=rtol, atol=atol)
    knots = _breakpoints(model)
    if knots is not None and knots.size:
        controller = diffrax.ClipStepSizeController(controller, step_ts=knots)
    return _simulate(
        model,
        state0,
        jnp.asarray(ts, dtype=float),
        method,
        solver,
        controller,
        stabilisation,
        projection,
        initial_projection,
        max_steps,
        throw,
        progress_meter,
    )
