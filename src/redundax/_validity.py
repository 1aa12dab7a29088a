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
([`position_tolerance`][]):

- where the state was just projected (a [`StepProjection`][redundax.StepProjection]
  step end, or a saved state of [`Projection`][redundax.Projection]): Newton steps
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
`simulate(throw=True)` raises [`ConstraintsLeftError`][] naming the time and the
violation.

**Why the rank of C is not part of it.** A state off the manifold by more than
the rank tolerance makes C of a geometrically redundant mechanism (Bricard's)
full rank, so "the rank rose along the motion" flags valid runs; on the manifold
the rank cannot exceed its value at a regular start (it only drops, at singular
configurations), so the violation alone carries the information.
"""

import diffrax
import jax.numpy as jnp
import numpy as np

from ._assembly import position_residual

PROJECTED_TOL = 1e-6
"""The largest constraint residual [m, rad] of a projected state (relative to
max(1, max |q₀|)): Newton steps converge quadratically, so a state left further
off lies where no configuration satisfies the constraints."""

UNPROJECTED_TOL = 1e-3
"""The largest constraint residual [m, rad] of a state the run did not project
(relative to max(1, max |q₀|)): IFToMM's accuracy tolerance for positions."""


class ConstraintsLeftError(RuntimeError):
    """A simulated motion left its constraints: the mechanism cannot follow the
    prescribed motion from there (an actuator driven out of the workspace, a joint
    past the end of its travel), or the integration lost the manifold.

    - `t`: the first time at which the state was off its constraints [s];
    - `violation`: max |Φ| there [m, rad];
    - `tolerance`: what the run's drift control promised [m, rad];
    - `valid_until`: the last saved time at which the run was on its constraints
      (None: not even at the start).
    """

    def __init__(self, message: str, t: float, violation: float, tolerance: float, valid_until):
        super().__init__(message)
        self.t = t
        self.violation = violation
        self.tolerance = tolerance
        self.valid_until = valid_until


def scale_of(q0) -> jnp.ndarray:
    """max(1, max |q₀|): the length the tolerances are relative to."""
    return jnp.maximum(1.0, jnp.max(jnp.abs(q0), initial=0.0))


def position_tolerance(projected: bool, rtol: float | None = None) -> float:
    """The largest max |Φ| (before scaling by [`scale_of`][]) of a state that was
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


def first_left(ts, position_violation, tolerance, reached=None):
    """`(k, t, value)` of the first saved state off its constraints (host-side,
    from concrete arrays), or None when every saved state is on them. `reached`:
    per saved state, whether the integration got there (a run stopped early leaves
    the rest unsaved)."""
    ts = np.asarray(ts)
    v = np.asarray(position_violation)
    bad = ~(v <= tolerance)
    if reached is not None:
        bad |= ~np.asarray(reached)
    if not np.any(bad):
        return None
    k = int(np.argmax(bad))
    return k, float(ts[k]), float(v[k])
