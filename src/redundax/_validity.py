"""When a simulated motion is the mechanism's motion: the validity criterion.

A motion that a mechanism cannot follow — actuators driven out of its workspace, a
steering slider pushed past the end of its travel — has no solution on the
constraint manifold. The integrator does not know that: it goes on, the projection
finds no configuration to project onto, and the state leaves the constraints by
centimetres or metres while every step is "accepted". Reactions computed there are
the forces of nothing (the 3-RRR driven past its workspace: 1.4 MN), and any
verdict claimed for them is false. redundax therefore judges every run, and a run
that leaves its constraints is a failure everywhere (`simulate`, the command line,
joint-coordinate runs, sweeps, the optimiser).

**The criterion.** A state is on its constraints when max |Φ(q, t)| (the
holonomic rows, in m or rad) is within what the run's drift control promises
(`position_tolerance`):

- where the state was just projected (a [`StepProjection`][redundax.drift.StepProjection]
  step end, or a saved state of [`Projection`][redundax.drift.Projection]): Newton steps
  from within a local error δ of the manifold leave O(δ²), so anything above
  `max(PROJECTED_TOL, rtol)` (1e-6 at the default rtol = 1e-8; the initial
  projection accepts the same 1e-6) means that no configuration near the state
  satisfies the constraints;
- where it was not (Baumgarte terms alone, no drift control, the dense output
  between projected step ends): the drift grows with the integration error, and
  the promise is IFToMM's own accuracy tolerance, `UNPROJECTED_TOL` = 1e-3.

Both are relative to max(1, max |q₀|) (the size of the configuration).

Checked **inside the integration** at every accepted step end (a
`diffrax.Event`: the solve stops at the first step that leaves, instead of
integrating a motion that no longer exists until `max_steps`), and on every saved
state afterwards ([`Trajectory.valid`][redundax.Trajectory]). A run that stopped
there ends with `diffrax.RESULTS.event_occurred` (redundax runs no other event);
`simulate(throw=True)` raises [`ConstraintsLeftError`][redundax.ConstraintsLeftError] naming the
time and the violation.

**A motion that cannot go on.** A driver that pushes a mechanism onto the edge of
its workspace (a crank driven into a four-bar's dead point, an actuator driven
into a singular configuration and beyond) may keep the state on its constraints
(max |Φ| ≈ 1e-9) while the velocities the drivers ask for grow as (t* − t)^(−1/2):
the steps shrink without bound and the run would end at `max_steps` ("raise
max_steps", the wrong fix). The default step-size controllers take no step
shorter than `STALL_STEP` of the run's length; a run that meets that floor
before its final time (`diffrax.RESULTS.dt_min_reached`) stopped at a point the
motion cannot be continued past, and it is judged as one that left its
constraints there (`judge`; `ConstraintsLeftError.stalled`).

**Why the rank of C is not part of it.** A state off the manifold by more than
the rank tolerance makes C of a geometrically redundant mechanism (Bricard's)
full rank, so "the rank rose along the motion" flags valid runs; on the manifold
the rank cannot exceed its value at a regular start (it only drops, at singular
configurations), so the violation alone carries the information.
"""

import diffrax
import jax.numpy as jnp

from ._assembly import position_residual
from ._precision import X64, precise

PROJECTED_TOL = precise(1e-6, 1e-4)
"""The largest constraint residual [m, rad] of a projected state (relative to
max(1, max |q₀|)): Newton steps converge quadratically, so a state left further
off lies where no configuration satisfies the constraints."""

UNPROJECTED_TOL = 1e-3
"""The largest constraint residual [m, rad] of a state the run did not project
(relative to max(1, max |q₀|)): IFToMM's accuracy tolerance for positions."""

STALL_STEP = precise(1e-9, 1e-6)
"""The shortest step [fraction of t1 − t0] the default step-size controllers take:
at that size a run needs 1e9 steps, which only a motion running into a point it
cannot pass asks for (the 3-RRR and the mobile robot driven past their
workspaces reach it about 170 steps after their steps left 1e-2 s; a four-bar's
crank driven into its dead point likewise). Smooth drivers need far longer steps:
the robot's steering, at the knots of its C² smooth steps, 3e-4 s at rtol 1e-8."""


class ConstraintsLeftError(RuntimeError):
    """A simulated motion left its constraints: the mechanism cannot follow the
    prescribed motion from there (an actuator driven out of the workspace, a joint
    past the end of its travel), or the integration lost the manifold.

    - `t`: the first time at which the state was off its constraints, or the run
      stopped where the motion cannot go on [s];
    - `violation`: max |Φ| there [m, rad];
    - `tolerance`: what the run's drift control promised [m, rad];
    - `valid_until`: the last saved time at which the run was on its constraints
      (None: not even at the start);
    - `stalled`: True where the run stopped because its steps fell below
      `STALL_STEP` of its length before its final time (the motion cannot be
      continued past `t`; the state there may still be on its constraints, so
      `violation` may be below `tolerance`).
    """

    def __init__(
        self,
        message: str,
        t: float,
        violation: float,
        tolerance: float,
        valid_until,
        stalled: bool = False,
    ):
        super().__init__(message)
        self.t = t
        self.violation = violation
        self.tolerance = tolerance
        self.valid_until = valid_until
        self.stalled = stalled


def scale_of(q0) -> jnp.ndarray:
    """max(1, max |q₀|): the length the tolerances are relative to."""
    return jnp.maximum(1.0, jnp.max(jnp.abs(q0), initial=0.0))


def position_tolerance(projected: bool, rtol: float | None = None) -> float:
    """The largest max |Φ| (before scaling by `scale_of`) of a state that was
    (`projected`) or was not just projected onto the manifold. `rtol`: the
    integration's relative tolerance, when known (a projected step end is off by
    about the square of the local error, which grows with it)."""
    if not projected:
        return UNPROJECTED_TOL
    return PROJECTED_TOL if rtol is None else max(PROJECTED_TOL, float(rtol))


def violation(model, q, t) -> jnp.ndarray:
    """max |Φ(q, t)| over the holonomic rows (0 without any); NaN stays NaN."""
    phi = position_residual(model, q, t)
    if phi.shape[0] == 0:
        return jnp.zeros((), q.dtype)
    return jnp.max(jnp.abs(phi))


def off_constraints(value, tolerance) -> jnp.ndarray:
    """Whether a violation `value` exceeds `tolerance` (a NaN or an infinity does)."""
    return ~(value <= tolerance)


def left_event(model, tolerance) -> diffrax.Event:
    """The `diffrax.Event` that stops a solve of (q, q̇) at the first accepted step
    end whose max |Φ| exceeds `tolerance` (absolute: already scaled)."""

    def cond(t, y, args, **kwargs):
        del args, kwargs
        return off_constraints(violation(model, y[0], t), tolerance)

    return diffrax.Event(cond)


def judge(ts, q, position_violation, tolerance, result, t_end, end_violation):
    """`(valid, left_at, left_violation, result)` of a run saved at `ts` (`q`:
    `inf` where the integration did not reach a saved time; NaN is reached, and
    off) whose solve ended with `result` at `t_end`, max |Φ| `end_violation` there:

    - `valid`: per saved state, reached and within `tolerance`;
    - `left_at`: where the motion was first found off — the step end that stopped
      the solve (the validity event, or the step-size floor met before `ts[-1]`),
      else the first saved state off; `inf` for a run that never left;
    - `left_violation`: max |Φ| there (0 where it never left);
    - `result`: the solve's, with a step-size floor met at the final time itself
      (a last step clipped short) turned into success and a run whose saved
      states are off while every step end was on them (the dense output between
      projected step ends) into `event_occurred`.

    States the integration did not reach are not "off": a run stopped for another
    reason (`max_steps`) failed for that reason."""
    stalled = (result == diffrax.RESULTS.dt_min_reached) & (t_end < ts[-1])
    result = diffrax.RESULTS.where(
        (result == diffrax.RESULTS.dt_min_reached) & ~stalled,
        diffrax.RESULTS.successful,
        result,
    )
    reached = ~jnp.any(jnp.isinf(q), axis=1)
    off = reached & off_constraints(position_violation, tolerance)
    first = jnp.argmax(off)
    left_at = jnp.where(jnp.any(off), ts[first], jnp.inf)
    left_violation = jnp.where(jnp.any(off), position_violation[first], 0.0)
    stopped = (result == diffrax.RESULTS.event_occurred) | stalled
    left_at = jnp.where(stopped, t_end, left_at)
    left_violation = jnp.where(stopped, end_violation, left_violation)
    result = diffrax.RESULTS.where(
        (result == diffrax.RESULTS.successful) & jnp.any(off),
        diffrax.RESULTS.event_occurred,
        result,
    )
    return reached & ~off, left_at, left_violation, result


def stalled(trajectory) -> bool:
    """Whether a (concrete) run stopped at the step-size floor before its final
    time (`judge` turns one met at the end into success)."""
    return bool(trajectory.result == diffrax.RESULTS.dt_min_reached)


def stall_reason(t: float, value: float, tolerance: float, where: str = "") -> str:
    """One sentence (no line break) on a run that stopped at the step-size floor at
    `t`, max |Φ| `value` there."""
    reason = (
        f"the motion cannot go on past t = {t:.6g} s: its steps fell below {STALL_STEP:g} "
        f"of the run's length{where}; no configuration satisfies the constraints after "
        f"that time (max |Φ| {value:.3g} there, tolerance {tolerance:.3g})"
    )
    if not X64:
        reason += (
            "; in single precision (JAX_ENABLE_X64=0) round-off near a singular "
            "configuration can also stop a run: run it again in float64"
        )
    return reason
