"""Forward dynamics with Diffrax: `simulate(model, state0, t1, ...) -> Trajectory`."""

import dataclasses
import warnings

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ._assembly import position_residual, raise_if_inconsistent, velocity_residual
from ._errors import ModelError
from ._friction import guard_friction, refuse_block_friction
from ._integration import (
    Tolerances,
    Trajectory,
    _logs,
    _monitored,
    _trajectory,
    _vector_field,
    _with_logs,
)
from ._model import Model, State
from ._progress import Progress, in_segments
from ._saving import save_at, saved_states
from ._structure import Structure, decide
from ._validation import check_vector, host_values
from ._validity import (
    STALL_STEP,
    ConstraintsLeftError,
    left_event,
    position_tolerance,
    scale_of,
    stall_reason,
    stalled,
)
from .drift._base import AbstractDriftControl
from .drift._projection import Projection
from .drift._step_projection import default_drift_control
from .methods import (
    AbstractNullSpaceMethod,
    AbstractRedundancyMethod,
    specialise,
    uses_block_solver,
)
from .monitors._singularity import Watch, singularity_report


@eqx.filter_jit
def _initial_state(model: Model, state0: State, initial_projection):
    """`(q0, qd0, correction, Φ, C q̇ + b)`: the initial state, projected first when
    `initial_projection` is given, and the residuals of the state as given."""
    q0, qd0, t0 = state0.q, state0.qd, state0.t
    phi = position_residual(model, q0, t0)
    vel = velocity_residual(model, q0, qd0, t0)
    if initial_projection is None:
        return q0, qd0, jnp.zeros(2), phi, vel
    q1, qd1 = initial_projection(model, q0, qd0, t0, None)
    correction = jnp.stack([jnp.max(jnp.abs(q1 - q0)), jnp.max(jnp.abs(qd1 - qd0))])
    # The residuals after the projection: what the run starts from.
    return (
        q1,
        qd1,
        correction,
        position_residual(model, q1, t0),
        velocity_residual(model, q1, qd1, t0),
    )


def raise_if_not_projected(model: Model, phi, vel, tol: float) -> None:
    try:
        raise_if_inconsistent(model, phi, vel, tol)
    except ModelError as error:
        problems = error.problems
        raise ModelError(
            "the initial state could not be projected onto the constraints: after the "
            f"projection it still violates those of {len(problems)} pair(s) or bodies:\n"
            + "\n".join(f"  - {p}" for p in problems)
            + "\nno configuration near it satisfies them: can the mechanism be assembled "
            "with these dimensions? Check the lengths and joint points",
            problems,
            "initial",
        ) from None


def tolerances(drift_control: AbstractDriftControl, q0, rtol) -> Tolerances:
    """What `drift_control` promises for a run from q₀ at the relative tolerance
    `rtol` (None: unknown): see `_validity`."""
    scale = scale_of(jax.lax.stop_gradient(q0))
    step = scale * position_tolerance(drift_control.projects_steps, rtol)
    saved = scale * position_tolerance(drift_control.projects, rtol)
    # A projection with a tolerance τ leaves residuals up to τ uncorrected, by
    # request: states are held to τ where it is the larger (issue 39: a four-bar with
    # `Projection(tolerance=1e-2)` at rtol 1e-5 was stopped at |Φ| = 1.2e-5).
    tau = drift_control.residual_bound()
    if tau is not None:
        tau = jax.lax.stop_gradient(tau)
        step, saved = jnp.maximum(step, tau), jnp.maximum(saved, tau)
    return Tolerances(step=step, saved=saved)


@eqx.filter_jit
def _simulate(
    model,
    t0,
    q0,
    qd0,
    correction,
    ts,
    structure,
    method,
    solver,
    controller,
    drift_control,
    max_steps,
    progress_meter,
    watch,
    tol,
):
    term = diffrax.ODETerm(_vector_field)
    args = (model, structure, method, drift_control)
    solver, monitored, watched = _monitored(args, solver, ts[0], (q0, qd0), watch)
    logged = monitored or watched
    log = singular = None
    event = left_event(model, tol.step) if model.n_holonomic else None
    if not drift_control.projects:
        # The states at `ts` are saved by the solver (`_saving`: no host callback,
        # unlike `diffrax.SaveAt(ts=...)`'s checks); `inf` where not reached.
        sol = diffrax.diffeqsolve(
            term,
            save_at(solver, ts),
            ts[0],
            ts[-1],
            None,
            (q0, qd0),
            args,
            saveat=diffrax.SaveAt(t1=True, solver_state=True),
            stepsize_controller=controller,
            max_steps=max_steps,
            throw=False,  # judged afterwards (`_checked_run`)
            progress_meter=progress_meter,
            event=event,
        )
        state, (q, qd) = saved_states(sol.solver_state)
        t_end, q_end = sol.ts[-1], sol.ys[0][-1]
        log, singular = _logs(state, monitored, watched)
        stats = (
            sol.stats["num_steps"],
            sol.stats["num_accepted_steps"],
            sol.stats["num_rejected_steps"],
        )
        result = sol.result
    else:
        ranks = (structure.rank_holonomic, structure.rank)

        def segment(carry, span):
            y, steps, acc, rej, res, t_end, logs = carry

            def solve(y, logs):
                sol = diffrax.diffeqsolve(
                    term,
                    _with_logs(solver, logs, monitored, watched),
                    span[0],
                    span[1],
                    None,
                    y,
                    args,
                    saveat=diffrax.SaveAt(t1=True, solver_state=logged),
                    stepsize_controller=controller,
                    max_steps=max_steps,
                    throw=False,
                    event=event,
                )
                y = jax.tree.map(lambda x: x[-1], sol.ys)
                stats = jnp.stack(
                    [
                        sol.stats["num_steps"],
                        sol.stats["num_accepted_steps"],
                        sol.stats["num_rejected_steps"],
                    ]
                ).astype(jnp.int32)
                return (
                    y,
                    stats,
                    sol.result,
                    sol.ts[-1],
                    _logs(sol.solver_state, monitored, watched),
                )

            def stopped(y, logs):
                # Once a segment failed (or left the constraints) the rest are
                # not integrated: their states are not the mechanism's.
                unsaved = jax.tree.map(lambda x: jnp.full_like(x, jnp.inf), y)
                return unsaved, jnp.zeros(3, jnp.int32), res, t_end, logs

            going = res == diffrax.RESULTS.successful
            y_new, counts, result, t_reached, logs = jax.lax.cond(going, solve, stopped, y, logs)
            # The step-size floor met at the segment's end (its last step clipped
            # short onto the saved time) is no stall.
            result = diffrax.RESULTS.where(
                (result == diffrax.RESULTS.dt_min_reached) & (t_reached >= span[1]),
                diffrax.RESULTS.successful,
                result,
            )
            y_new = jax.lax.cond(
                going & (result == diffrax.RESULTS.successful),
                lambda y: drift_control.project(model, y[0], y[1], span[1], ranks),
                lambda y: y,
                y_new,
            )
            res = diffrax.RESULTS.where(going, result, res)
            carry = (
                y_new,
                steps + counts[0],
                acc + counts[1],
                rej + counts[2],
                res,
                jnp.where(going, t_reached, t_end),
                logs,
            )
            return carry, (y_new, y)

        zero = jnp.asarray(0, dtype=jnp.int32)
        spans = jnp.stack([ts[:-1], ts[1:]], axis=1)
        start = ((q0, qd0), zero, zero, zero, diffrax.RESULTS.successful, ts[0])
        logs = (
            solver.solver.log if monitored and watched else solver.log if monitored else None,
            solver.log if watched else None,
        )
        (_, steps, acc, rej, result, t_end, (log, singular)), ((q, qd), _) = jax.lax.scan(
            segment, (*start, logs), spans
        )
        # The state where a segment stopped: the last finite one integrated.
        q_end = q[jnp.clip(jnp.sum(jnp.isfinite(q[:, 0])) - 1, 0, q.shape[0] - 1)]
        q = jnp.concatenate([q0[None], q])
        qd = jnp.concatenate([qd0[None], qd])
        stats = (steps, acc, rej)
    return _trajectory(
        model,
        ts,
        q,
        qd,
        correction,
        stats,
        result,
        structure,
        drift_control,
        log,
        singular,
        tol,
        (t_end, q_end),
    )


def breakpoints(model: Model) -> Float[Array, " k"]:
    """Knots of the prescribed motions of every driver and of the profiles of the
    time-dependent loads (sorted; may repeat), for the step-size controller's
    `step_ts`."""
    knots = [
        jnp.ravel(g.motion.breakpoints())
        for g in model.holonomic
        if "motion" in {f.name for f in dataclasses.fields(g)}
    ] + [
        jnp.ravel(g.profile.breakpoints())
        for g in getattr(model, "forces", ())
        if "profile" in {f.name for f in dataclasses.fields(g)}
    ]
    if not knots:
        return jnp.zeros((0,))
    return jnp.sort(jnp.concatenate(knots))


def default_solver(rtol: float) -> diffrax.AbstractSolver:
    """The default integrator: an explicit adaptive Runge–Kutta pair of high order
    at tight tolerances (fewer, larger steps), `Dopri8` when `rtol < 1e-6`, else
    `Tsit5`."""
    return diffrax.Dopri8() if rtol < 1e-6 else diffrax.Tsit5()


def completed_controller(
    model: Model, controller: diffrax.PIDController, t0, t1
) -> diffrax.AbstractStepSizeController:
    """A `PIDController` given to `simulate`, stepping onto the knots of the
    prescribed motions, and with no step shorter than `STALL_STEP` (t1 − t0) when
    its `dtmin` is unset (see [`default_controller`][redundax.internal.default_controller])."""
    if controller.dtmin is None:
        controller = eqx.tree_at(
            lambda c: (c.dtmin, c.force_dtmin),
            controller,
            (STALL_STEP * (t1 - t0), False),
            is_leaf=lambda x: x is None,
        )
    knots = breakpoints(model)
    if knots.shape[0]:
        controller = diffrax.ClipStepSizeController(controller, step_ts=knots)
    return controller


def default_controller(
    model: Model, rtol: float, atol: float, t0=None, t1=None
) -> diffrax.AbstractStepSizeController:
    """A PID controller at (rtol, atol) that steps onto the knots of the prescribed
    motions (e.g. `SmoothSteps`) instead of rejecting steps across them. With the
    run's span `t0`, `t1`: no step shorter than `STALL_STEP` (t1 − t0) — a run that
    needs one stopped where the motion cannot go on (`diffrax.RESULTS.dt_min_reached`,
    judged as leaving the constraints there; see `redundax._validity`)."""
    floor = {}
    if t0 is not None and t1 is not None:
        floor = dict(dtmin=STALL_STEP * (t1 - t0), force_dtmin=False)
    controller = diffrax.PIDController(rtol=rtol, atol=atol, **floor)
    knots = breakpoints(model)
    if knots.shape[0]:
        controller = diffrax.ClipStepSizeController(controller, step_ts=knots)
    return controller


def simulate_absolute(
    model: Model,
    state0: State,
    t1: float,
    *,
    structure: Structure | None,
    method: AbstractRedundancyMethod,
    solver: diffrax.AbstractSolver | None,
    stepsize_controller: diffrax.AbstractStepSizeController | None,
    rtol: ArrayLike,
    atol: ArrayLike,
    drift_control: AbstractDriftControl | None,
    initial_projection: Projection | None,
    consistency_tol: float,
    n_save: int,
    ts: Float[ArrayLike, " T"] | None,
    max_steps: int,
    throw: bool,
    progress_meter: diffrax.AbstractProgressMeter,
    monitor,
    progress: Progress | None,
) -> Trajectory:
    """[`redundax.simulate`][] for an absolute-coordinate model, its options
    unpacked: `rtol`, `atol` the controller's (the default controller's and
    solver's choice), `initial_projection` and `consistency_tol` from `initial`,
    `n_save` and `ts` from `saveat`, `monitor` a `Singularities` or None."""
    _check_arguments(model, state0, t1, n_save, ts, max_steps, rtol, atol, method)
    if drift_control is None:
        drift_control = default_drift_control(method)
    if not isinstance(drift_control, AbstractDriftControl):
        raise TypeError(
            f"simulate field 'drift_control': expected a drift control (rx.drift.Baumgarte(), "
            f"rx.drift.Projection(), rx.drift.NoDriftControl()), got {drift_control!r}"
        )
    if isinstance(initial_projection, Projection):
        initial_projection.check_mass(model, "simulate field 'initial'")
    if isinstance(drift_control, Projection):
        drift_control.check_mass(model, "simulate field 'drift_control'")
    q0, qd0, correction, phi, vel = _initial_state(model, state0, initial_projection)
    residuals = host_values(phi, vel)
    if residuals is not None and initial_projection is None:
        raise_if_inconsistent(model, *residuals, consistency_tol)
    elif residuals is not None:
        raise_if_not_projected(model, *residuals, consistency_tol)
    if structure is None:
        structure = decide(model, q0, state0.t)
    q0 = guard_friction(model, structure, method, q0)
    if isinstance(method, AbstractNullSpaceMethod) and model.n_constraints:
        if host_values(structure.rank, structure.rank_nearby) is not None:
            structure.raise_if_singular()
    if ts is None:
        # Evaluated now where t0 and t1 are known, also under an outer `jax.jit` (the
        # grid is then known on the host, as a report of `progress` needs). The
        # run's program takes the save times as an input either way, never as
        # constants: one compilation serves every t1 of the same grid size, and
        # eager calls, `jit`, `vmap` over t1 and `grad` run the same numerics.
        with jax.ensure_compile_time_eval():
            ts = jnp.linspace(state0.t, t1, n_save)
    ts = jnp.asarray(ts, dtype=float)
    if solver is None:
        solver = default_solver(rtol)
    if stepsize_controller is None:
        stepsize_controller = default_controller(model, rtol, atol, state0.t, ts[-1])
    elif isinstance(stepsize_controller, diffrax.PIDController):
        stepsize_controller = completed_controller(model, stepsize_controller, state0.t, ts[-1])
    method = specialise(method, structure, model)
    refuse_block_friction(model, method)
    measure = singularity_measure(monitor, method)
    watch = None if measure is None else Watch(monitor.threshold, measure)
    drift_control = drift_control.prepare(method, structure)
    tol = tolerances(drift_control, q0, host_number(rtol))
    if progress is not None:
        trajectory = in_segments(
            progress,
            model,
            (q0, qd0),
            correction,
            ts,
            structure,
            method,
            solver,
            stepsize_controller,
            drift_control,
            max_steps,
            throw,
            watch,
            tol,
        )
        return _checked_run(trajectory, method, throw)
    trajectory = _simulate(
        model,
        state0.t,
        q0,
        qd0,
        correction,
        ts,
        structure,
        method,
        solver,
        stepsize_controller,
        drift_control,
        max_steps,
        progress_meter,
        watch,
        tol,
    )
    return _checked_run(trajectory, method, throw)


def host_number(x) -> float | None:
    """`x` as a float where it is a concrete number, else None."""
    if x is None:
        return None
    known = host_values(x)
    if known is None or np.ndim(known[0]):
        return None
    return float(known[0])


def _checked_run(trajectory: Trajectory, method, throw: bool) -> Trajectory:
    """The run judged on the host where its values are concrete: with `throw`, one
    that left its constraints (or cannot go on) raises
    [`ConstraintsLeftError`][redundax.ConstraintsLeftError],
    one stopped for another reason `RuntimeError`; otherwise the warnings about
    passages. Traced runs carry the verdict in `valid` and `result` (and, with
    `throw`, stop the program with the same meaning)."""
    known = host_values(trajectory.valid, trajectory.left_at)
    if known is None:
        if throw:
            return eqx.filter_jit(_error_if_failed)(trajectory)
        return trajectory
    valid, left_at = known
    if throw and np.isfinite(left_at):
        raise constraints_left_error(trajectory)
    if throw and not trajectory.result == diffrax.RESULTS.successful:
        reached = np.flatnonzero(np.all(np.isfinite(np.asarray(trajectory.q)), axis=1))
        last = float(np.asarray(trajectory.ts)[reached[-1]]) if reached.size else float("nan")
        raise RuntimeError(
            f"simulate: the integration stopped after {int(trajectory.num_steps)} steps, "
            f"before t1 = {float(trajectory.ts[-1]):g} s (last saved time reached: "
            f"{last:g} s): {diffrax.RESULTS[trajectory.result]}"
        )
    if np.all(valid):
        _warn_if_branch_at_risk(trajectory, method)
    return trajectory


def _error_if_failed(trajectory: Trajectory) -> Trajectory:
    # Every array of the trajectory carries the check: one tied to a single field
    # would be removed by XLA wherever that field is not used.
    arrays, rest = eqx.partition(trajectory, eqx.is_array)
    arrays = eqx.error_if(
        arrays,
        trajectory.left_constraints,
        "the motion left its constraints or cannot go on (Trajectory.left_at says "
        "when): the mechanism cannot follow the prescribed motion from there; pass "
        "throw=False to get the trajectory with Trajectory.valid",
    )
    arrays = eqx.error_if(
        arrays,
        ~(trajectory.result == diffrax.RESULTS.successful),
        "the integration stopped before t1 (Trajectory.result says why, e.g. "
        "max_steps reached); pass throw=False to get the trajectory",
    )
    return eqx.combine(arrays, rest)


def constraints_left_error(
    trajectory: Trajectory,
    what: str = "simulate",
    hint: str = " (throw=False returns the trajectory with Trajectory.valid)",
) -> ConstraintsLeftError:
    """The [`ConstraintsLeftError`][redundax.ConstraintsLeftError] of a (concrete) trajectory that
    left its constraints: the time, the violation, the tolerance, and the last saved time
    on them; `what` starts the message, `hint` ends it."""
    valid = np.asarray(trajectory.valid)
    ts = np.asarray(trajectory.ts)
    t = float(trajectory.left_at)
    value = float(trajectory.left_violation)
    tol = trajectory.tolerances
    stall = stalled(trajectory)
    stopped = stall or (
        bool(trajectory.result == diffrax.RESULTS.event_occurred) and not np.isin(t, ts)
    )
    tolerance = float(tol.step if stopped else tol.saved)
    before = np.flatnonzero(valid & (ts <= t)) if np.isfinite(t) else np.flatnonzero(valid)
    valid_until = float(ts[before[-1]]) if before.size and valid[0] else None
    since = (
        "" if valid_until is None else f"; it was on them until the saved time {valid_until:.6g} s"
    )
    if stall:
        reason = stall_reason(t, value, tolerance)
    else:
        reason = (
            f"the motion left its constraints at t = {t:.6g} s (max |Φ| = {value:.3g}, "
            f"above the {tolerance:.3g} its drift control "
            f"{type(trajectory.drift_control).__name__} promises)"
        )
    return ConstraintsLeftError(
        f"{what}: {reason}{since}. The mechanism cannot follow the prescribed motion from there: "
        f"a driver moved out of the workspace or past the end of a joint's travel, or the "
        f"motion went through a singular configuration onto no branch. Check the drivers' "
        f"motions; nothing after that time is the mechanism's motion{hint}",
        t,
        value,
        tolerance,
        valid_until,
        stall,
    )


def _check_arguments(model: Model, state0: State, t1, n_save, ts, max_steps, rtol, atol, method):
    """`simulate`'s arguments that would otherwise fail deep inside Diffrax or give
    a wrong trajectory without an error: each refused with the field's name. Values
    that are traced (under `jax.jit`, `jax.vmap`, `jax.grad`) are the caller's to
    check; shapes are checked always."""

    def refuse(message: str):
        raise ModelError(f"simulate: {message}", source="simulate")

    if not isinstance(method, AbstractRedundancyMethod):
        refuse(
            f"method: expected a redundancy method such as rx.methods.NullSpace() (an instance), "
            f"got {method!r}"
        )
    check_vector(state0.q, model.n_coordinates, "state0.q", "simulate")
    check_vector(state0.qd, model.n_coordinates, "state0.qd", "simulate")
    if ts is None and (isinstance(n_save, bool) or not isinstance(n_save, int) or n_save < 2):
        refuse(f"n_save: expected an integer of at least 2 (t0 and t1), got {n_save!r}")
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 1):
        refuse(f"max_steps: expected a positive integer, got {max_steps!r}")
    tolerances = host_values(rtol, atol)
    if tolerances is not None:
        r, a = (float(x) for x in tolerances)
        if not (np.isfinite(r) and np.isfinite(a) and r >= 0.0 and a >= 0.0 and r + a > 0.0):
            refuse(f"rtol, atol: expected finite, non-negative and not both zero, got {r}, {a}")
    times = host_values(state0.t, t1)
    if times is None:
        return
    t0, t1 = (float(x) for x in times)
    for name, value in (("state0.t", t0), ("t1", t1)):
        if not np.isfinite(value):
            refuse(f"{name} is {value}; expected a finite time [s]")
    if ts is None:
        return
    if np.ndim(ts) != 1 or np.shape(ts)[0] < 1:
        refuse(f"ts: expected a non-empty vector of save times, got shape {np.shape(ts)}")
    saved = host_values(ts)
    if saved is None:
        return
    saved = np.asarray(saved[0], dtype=float)
    direction = 1.0 if t1 >= t0 else -1.0
    scale = 1e-12 * max(1.0, abs(t0), abs(t1))
    if not np.all(np.isfinite(saved)):
        refuse("ts holds a NaN or an infinity")
    if np.any(direction * np.diff(saved) < 0.0):
        order = "increasing" if direction > 0 else "decreasing"
        refuse(f"ts must run from t0 to t1 without turning back ({order})")
    if abs(saved[0] - t0) > scale:
        refuse(
            f"ts[0] = {saved[0]} differs from the initial state's time state0.t = {t0}: the "
            f"trajectory's first saved state is state0"
        )
    if abs(saved[-1] - t1) > scale:
        refuse(f"ts[-1] = {saved[-1]} differs from t1 = {t1}: the run ends at t1")


def singularity_measure(monitor, method) -> str | None:
    """What `simulate(monitor=monitor)` measures with `method` (specialised): a
    [`Singularities`][redundax.Singularities] without a measure: `"pivots"` where
    the method uses the block solver (linear in the number of bodies, as the
    solver), else `"singular_values"`; its measure where it names one; None
    (`monitor=None`): nothing."""
    if monitor is None:
        return None
    if monitor.measure is None:
        return "pivots" if uses_block_solver(method) else "singular_values"
    return monitor.measure


_MEASURE_NAMES = {"singular_values": "sigma_r/sigma_1", "pivots": "pivot sine"}


class SingularPassageWarning(UserWarning):
    """A simulated motion passed a singular configuration with a drift control
    that does not keep it on its branch there."""


def _warn_if_branch_at_risk(trajectory: Trajectory, method) -> None:
    log = trajectory.singularities
    if log is None or host_values(log.passages) is None or np.ndim(log.passages):
        return  # traced or batched: the log is the record
    if int(log.passages) == 0:
        return
    report = singularity_report(trajectory, method)
    if report.passages and not report.branch_kept:
        times = ", ".join(f"{p.t:.4g}" for p in report.passages[:5])
        more = "" if len(report.passages) <= 5 else f" and {len(report.passages) - 5} more"
        warnings.warn(
            f"the motion passed {len(report.passages)} singular configuration(s) "
            f"(t = {times}{more} s; smallest {_MEASURE_NAMES[report.measure]} "
            f"{report.min_sigma_ratio:.2g}) "
            f"with drift control {type(trajectory.drift_control).__name__}, which does not "
            f"keep a closed chain on its branch there: the motion may have left it. "
            f"Simulate with drift_control=rx.drift.StepProjection() (the default)",
            SingularPassageWarning,
            stacklevel=3,
        )
