"""Whether a joint-coordinate run is the mechanism's motion: the criterion of
absolute runs (`redundax._validity`), and the edge of the workspace.

Drivers that push a mechanism out of its workspace ask for a motion with no
solution past some time t*. In absolute coordinates the integrator goes on and
the state leaves the constraints. In joint coordinates the tree's joints hold
exactly and the DCA's projection puts every step end back on the loops' rows, so
the state stays on its constraints (max |Φ| ≈ 1e-16) while the motion runs into
the singular configuration at the edge of the workspace, where the velocities the
drivers ask for grow as (t* − t)^(−1/2): the steps shrink without bound and the
run would end at `max_steps` ("raise max_steps", the wrong fix; the 3-RRR driven
+0.15 rad past its workspace and the mobile robot steered ±0.115 m took about
100 000 steps, 75 s). Both are caught inside the integration:

- **off the constraints**: a `diffrax.Event` on max |Φ| of the absolute model at
  the joint state (the cut joints and drivers; the tree's rows hold exactly) at
  every accepted step end after the first, above `tolerances.step`;
- **no motion to follow**: a step shorter than `STALL_STEP` of the run's
  length ends the solve (the step-size controller's `dtmin`,
  `diffrax.RESULTS.dt_min_reached`): the integrator has met a point the solution
  cannot be continued past.

Every saved state is judged afterwards (`JointTrajectory.valid`: reached, and
within `tolerances.saved`).
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._assembly import constraint_matrix
from .._integration import Tolerances
from .._simulate import completed_controller
from .._validation import host_values
from .._validity import (
    ConstraintsLeftError,
    judge as _judge,
    off_constraints,
    position_tolerance,
    scale_of,
    stall_reason,
    stalled,
    violation,
)
from ..drift._base import AbstractDriftControl
from ..drift._step_projection import StepProjection
from ..monitors._singularity import THRESHOLD
from ._model import JointModel
from ._terms import jitted_body_terms

INERTIA_SPREAD = 1e10
"""A body whose inertia, as the DCA inverts it (twist coordinates), has eigenvalues
further apart than this is named when a joint-coordinate run fails: the round-off
of its accelerations grows like the spread (a pendulum bob of J = 1e-12 m L²:
relative 1.3e-5; a rod of axial moment 1e-13 of the transverse ones stops the run)."""


def tolerances(jm: JointModel, q0, drift_control: AbstractDriftControl | None, rtol) -> Tolerances:
    """What a run promises (see `redundax._validity`), scaled by the size of the
    initial configuration in absolute coordinates: a step end after the
    projection's Newton steps is within max(1e-6, rtol); a saved state (the
    integrator's dense output between projected step ends), and every state of a
    run with Baumgarte's terms alone, within 1e-3."""
    projected = (
        isinstance(drift_control, StepProjection)
        and drift_control.iterations > 0
        and jm.model.n_holonomic > 0
    )
    x0 = jax.lax.stop_gradient(jm.absolute_coordinates(jnp.asarray(q0, dtype=float)))
    scale = scale_of(x0)
    return Tolerances(
        step=scale * position_tolerance(projected, rtol),
        saved=scale * position_tolerance(False),
    )


def controller(jm: JointModel, rtol, atol, t0, t1) -> diffrax.AbstractStepSizeController:
    """The step-size controller of a run from `t0` to `t1`, the absolute runs'
    (`redundax._simulate.completed_controller`): `rtol`, `atol`, no step shorter than
    `STALL_STEP` (t1 − t0) (`dt_min_reached` instead), and steps clipped onto the
    knots of the drivers' motions and load profiles (a driver's q̈ is not smooth
    across a knot, and a step across one is rejected, often several times: the
    driven hexapod's 10 s at rtol 1e-8 (Dopri8) took 182 accepted and 214 rejected
    steps before, 84 and 18 with the knots, the absolute run 93 and 18)."""
    return completed_controller(jm.model, diffrax.PIDController(rtol=rtol, atol=atol), t0, t1)


def left_event(jm: JointModel, t0, tolerance) -> diffrax.Event | None:
    """The `diffrax.Event` that stops a solve of (q, q̇) at the first accepted step
    end after `t0` whose max |Φ| in absolute coordinates exceeds `tolerance`;
    None for a model without position rows. The state at `t0` is judged with the
    saved states (a start a little off is what the first projection corrects)."""
    if not jm.model.n_holonomic:
        return None

    def cond(t, y, args, **kwargs):
        del args, kwargs
        value = violation(jm.model, jm.absolute_coordinates(y[0]), t)
        return (t > t0) & off_constraints(value, tolerance)

    return diffrax.Event(cond)


def judge(jm: JointModel, ts, q, position_violation, result, tol: Tolerances, end):
    """`(valid, left_at, left_violation, result)` of a run saved at `ts` (`q`:
    `inf` where not reached) that ended with `result` at `end` = (t, q): the
    absolute runs' judgement (`redundax._validity.judge`) with max |Φ| of the
    absolute model at the end."""
    t_end, q_end = end
    at_end = violation(jm.model, jm.absolute_coordinates(q_end), t_end)
    return _judge(ts, q, position_violation, tol.saved, result, t_end, at_end)


def valid_until(trajectory) -> float | None:
    """The last saved time before the first invalid one (host-side, from concrete
    arrays): where the run was last on its constraints; None when not even at the
    start, `ts[-1]` for a valid run."""
    valid = np.asarray(trajectory.valid)
    bad = np.flatnonzero(~valid)
    last = valid.size - 1 if bad.size == 0 else int(bad[0]) - 1
    return None if last < 0 else float(np.asarray(trajectory.ts)[last])


@eqx.filter_jit
def _loop_rows(jm: JointModel, q, t):
    """C_l = C ∂x/∂q, the rows of C that close loops, in joint coordinates."""
    rows = np.asarray(jm.closure_rows, dtype=int)
    C = constraint_matrix(jm.model, jm.absolute_coordinates(q), t)[rows]
    return C @ jax.jacfwd(jm.absolute_coordinates)(q)


def _singular_ratio(jm: JointModel, trajectory) -> float:
    """σ_r/σ_1 of the loop rows C_l at the state where the run stopped (r: their
    rank at a regular configuration, the rows less the p dropped)."""
    n_rows = len(jm.closure_rows)
    if n_rows == 0:
        return 1.0
    C = _loop_rows(jm, jnp.asarray(trajectory.end.q), trajectory.end.t)
    s = np.linalg.svd(np.asarray(C), compute_uv=False)
    r = min(n_rows - trajectory.structure.redundancy, s.size)
    return float(s[r - 1] / s[0]) if r > 0 and s[0] > 0 else 1.0


def reason(jm: JointModel, trajectory) -> str:
    """One sentence (no line break) on why a (concrete) run is not valid from
    `left_at` on: off its constraints, or stopped where the motion cannot go on."""
    t, value = float(trajectory.left_at), float(trajectory.left_violation)
    tol = trajectory.tolerances
    if stalled(trajectory):
        speed = float(np.max(np.abs(np.asarray(trajectory.end.qd))))
        ratio = _singular_ratio(jm, trajectory)
        if ratio < THRESHOLD:
            where = (
                f"at a singular configuration (σ_r/σ_1 of the loop rows {ratio:.2g}) where "
                f"the joint rates grow without bound (max |q̇| = {speed:.3g})"
            )
        else:
            where = f"(σ_r/σ_1 of the loop rows {ratio:.2g}, max |q̇| = {speed:.3g})"
        return stall_reason(t, value, float(tol.step), f" {where}")
    stopped = bool(trajectory.result == diffrax.RESULTS.event_occurred) and not np.isin(
        t, np.asarray(trajectory.ts)[~np.asarray(trajectory.valid)]
    )
    where = "a step end" if stopped else "a saved state"
    tolerance = float(tol.step if stopped else tol.saved)
    return (
        f"the motion left its constraints at t = {t:.6g} s (max |Φ| of the cut joints and "
        f"drivers {value:.3g} at {where}, above the {tolerance:.3g} the drift control promises)"
    )


def inertia_hint(jm: JointModel, trajectory) -> str:
    """A sentence naming the bodies whose inertia the DCA inverts with a spread of
    eigenvalues above `INERTIA_SPREAD` at the state where a (concrete) run stopped,
    or "" where there is none."""
    end = trajectory.end
    terms = jitted_body_terms(
        jm, trajectory.structure.rows, jnp.asarray(end.q), jnp.asarray(end.qd), end.t
    )
    eig = np.linalg.eigvalsh(np.asarray(terms.inertia))
    spread = eig[:, -1] / np.maximum(eig[:, 0], np.finfo(float).tiny)
    bad = [
        f"{name!r} ({value:.2g})"
        for name, value in zip(jm.model.bodies.names, spread, strict=True)
        if value > INERTIA_SPREAD
    ]
    if not bad:
        return ""
    return (
        f" The divide-and-conquer algorithm inverts each body's inertia, and the spread of "
        f"the eigenvalues of {', '.join(bad)} amplifies the round-off of their "
        "accelerations as much: simulate the mechanism in absolute coordinates "
        "(rx.simulate(jm.model, ...), which never inverts M) or give these bodies "
        "moments of inertia closer to each other (a point mass: at least 1e-8 m L² about "
        "its centre)."
    )


def constraints_left_error(
    jm: JointModel,
    trajectory,
    what: str = "simulate (joint coordinates)",
    hint: str = " (throw=False returns the trajectory with JointTrajectory.valid)",
) -> ConstraintsLeftError:
    """The [`redundax.ConstraintsLeftError`][] of a (concrete) joint-coordinate run
    that left its constraints or cannot go on: the time, the violation, the
    tolerance and the last saved time on the constraints; `what` starts the
    message, `hint` ends it (one line)."""
    until = valid_until(trajectory)
    since = "" if until is None else f"; it was on them until the saved time {until:.6g} s"
    tol = trajectory.tolerances
    stall = stalled(trajectory)
    stopped = stall or bool(trajectory.result == diffrax.RESULTS.event_occurred)
    extra = inertia_hint(jm, trajectory)
    return ConstraintsLeftError(
        f"{what}: {reason(jm, trajectory)}{since}. The mechanism cannot follow the "
        "prescribed motion from there: a driver moved out of the workspace or past the end "
        "of a joint's travel, or the motion went through a singular configuration onto no "
        f"branch. Check the drivers' motions; nothing after that time is the mechanism's "
        f"motion{hint}{'.' + extra if extra else ''}",
        float(trajectory.left_at),
        float(trajectory.left_violation),
        float(tol.step if stopped else tol.saved),
        until,
        stall,
    )


def checked(jm: JointModel, trajectory, throw: bool):
    """With `throw`, a run that failed raises: [`redundax.ConstraintsLeftError`][]
    where the motion left its constraints or cannot go on, `RuntimeError` with
    Diffrax's reason otherwise (on the host where its values are concrete; a traced
    run stops the program with the same meaning)."""
    if not throw:
        return trajectory
    known = host_values(trajectory.valid)
    if known is None:
        return eqx.filter_jit(_error_if_failed)(trajectory)
    ok = bool(trajectory.result == diffrax.RESULTS.successful)
    if not (ok or bool(trajectory.left_constraints)):
        raise RuntimeError(
            "simulate (joint coordinates): the integration stopped at t = "
            f"{float(trajectory.end.t):.6g} s "
            f"after {int(trajectory.num_steps)} steps: {diffrax.RESULTS[trajectory.result]}"
            f"{inertia_hint(jm, trajectory)}"
        )
    if not np.all(known[0]):
        raise constraints_left_error(jm, trajectory)
    return trajectory


def _error_if_failed(trajectory):
    # Every array of the trajectory carries the check: one tied to a single field
    # would be removed by XLA wherever that field is not used.
    arrays, rest = eqx.partition(trajectory, eqx.is_array)
    arrays = eqx.error_if(
        arrays,
        ~jnp.all(trajectory.valid, axis=-1) | ~(trajectory.result == diffrax.RESULTS.successful),
        "simulate (joint coordinates): the run failed: the integration stopped before t1, or "
        "the motion "
        "left its constraints (JointTrajectory.left_at says when, result why): the "
        "mechanism cannot follow the prescribed motion from there; pass throw=False to get "
        "the trajectory with JointTrajectory.valid",
    )
    return eqx.combine(arrays, rest)
