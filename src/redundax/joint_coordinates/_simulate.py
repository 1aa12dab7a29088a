"""Motion in joint coordinates: the DCA's q̈ integrated by Diffrax, the loops' drift
held by Baumgarte's terms."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._drift_control import Baumgarte
from .._model import State
from ._dynamics import JointStructure, dca_dynamics, decide_joint
from ._model import JointModel
from ._terms import body_terms


class JointTrajectory(eqx.Module):
    """A motion in joint coordinates, sampled at `ts`.

    - `q`, `qd` (T, nj): joint coordinates and rates.
    - `x`, `xd` (T, nq): the same states in the absolute coordinates of `jm.model`
      (for markers, plots and reactions written for absolute coordinates).
    - `position_violation`, `velocity_violation` (T,): max |Φ| and max |C ẋ + b| of
      the rows the tree does not hold (the tree's hold exactly).
    - `num_steps`, `result`: Diffrax's counts and result code.
    - `structure`: the decisions the motion was computed with.
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T nj"]
    qd: Float[Array, "T nj"]
    x: Float[Array, "T nq"]
    xd: Float[Array, "T nq"]
    position_violation: Float[Array, " T"]
    velocity_violation: Float[Array, " T"]
    num_steps: Array
    result: diffrax.RESULTS
    structure: JointStructure


def simulate_joint(
    jm: JointModel,
    state: State,
    t1: float,
    *,
    structure: JointStructure | None = None,
    n_save: int = 101,
    ts: Float[ArrayLike, " T"] | None = None,
    rtol: float = 1e-8,
    atol: float = 1e-10,
    solver: diffrax.AbstractSolver | None = None,
    drift_control: Baumgarte = Baumgarte(),
    max_steps: int = 100_000,
) -> JointTrajectory:
    """Integrate the equations of motion of a joint-coordinate model from `state` to
    `t1` [s], the accelerations by the divide-and-conquer algorithm.

    **Arguments:**

    - `jm`, `state`: the model and a joint-coordinate state
      ([`redundax.to_joint_state`][]).
    - `t1`: final time [s]; `n_save` equally spaced saves, or the times `ts`.
    - `structure`: the decisions ([`redundax.decide_joint`][]; default: taken at
      `state`).
    - `rtol`, `atol`: the step-size controller's tolerances; `solver`: a Diffrax
      solver (default `Dopri8`).
    - `drift_control`: Baumgarte's terms on the rows the tree does not hold (the
      tree's rows hold exactly by construction).
    - `max_steps`: the integrator's step budget.

    **Returns:** a [`JointTrajectory`][].

    **Raises:** `ValueError` when the state is not finite.
    """
    if not (np.all(np.isfinite(np.asarray(state.q))) and np.all(np.isfinite(state.qd))):
        raise ValueError("simulate_joint: the state holds non-finite joint coordinates or rates")
    if structure is None:
        structure = decide_joint(jm, state)
    t0 = float(state.t)
    save = jnp.linspace(t0, t1, n_save) if ts is None else jnp.asarray(ts, dtype=float)
    return _simulate(
        jm, structure, state, save, float(t1), rtol, atol,
        diffrax.Dopri8() if solver is None else solver, drift_control, max_steps,
    )  # fmt: skip


@eqx.filter_jit
def _simulate(jm, structure, state, save, t1, rtol, atol, solver, drift, max_steps):
    def rhs(t, y, args):
        q, qd = y
        return qd, dca_dynamics(jm, structure, q, qd, t, drift).qdd

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(rhs),
        solver,
        t0=state.t,
        t1=t1,
        dt0=None,
        y0=(state.q, state.qd),
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
        saveat=diffrax.SaveAt(ts=save),
        max_steps=max_steps,
    )
    q, qd = sol.ys

    def violations(qk, qdk, tk):
        terms = body_terms(jm, structure.rows, qk, qdk, tk)
        x, xd = jax.jvp(jm.absolute_coordinates, (qk,), (qdk,))
        return (
            x,
            xd,
            jnp.max(jnp.abs(terms.phi), initial=0.0),
            jnp.max(jnp.abs(terms.velocity_error), initial=0.0),
        )

    x, xd, pv, vv = jax.vmap(violations)(q, qd, sol.ts)
    return JointTrajectory(
        ts=sol.ts,
        q=q,
        qd=qd,
        x=x,
        xd=xd,
        position_violation=pv,
        velocity_violation=vv,
        num_steps=sol.stats["num_steps"],
        result=sol.result,
        structure=structure,
    )
