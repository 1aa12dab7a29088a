"""Progress of a run on the host: [`simulate`][redundax.simulate]`(progress=...)`
integrates in segments of a fixed number of integrator steps, each resuming
Diffrax's solver and step-size state where the last one stopped.

Why not a Diffrax progress meter: its updates are host callbacks inside the
compiled program, and JAX's persistent compilation cache keeps no program with a
host callback, so every run would compile afresh. The programs here have none:
between two segments the host reads where the run stands, and the steps are those
of the run in one piece (the step-size controller's next step is carried across,
and the saved states are interpolated from the same steps).
"""

from collections.abc import Callable
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from diffrax._term import WrapTerm
from jaxtyping import Array, Bool, Float, Int, PyTree

from ._integration import _logs, _monitored, _trajectory, _vector_field
from ._saving import save_at, saved_states
from ._validation import host_values
from ._validity import left_event


class Progress:
    """What [`simulate`][redundax.simulate]`(progress=...)` reports on the host
    while it runs: subclass it and override `report`.

    - `steps`: integrator steps per segment (the run stops on the host after each
      segment, calls `report`, and goes on).

    `call(fn, *args)` evaluates each compiled stage of the run (`fn(*args)`; the
    command line routes it through its store of exported programs).
    """

    steps: int = 64

    def report(self, t: float, t1: float, steps: int) -> None:
        """Called after every segment: the time `t` reached of the final time `t1`,
        and the integrator steps taken so far (accepted and rejected)."""

    def call(self, fn: Callable, /, *args: Any) -> Any:
        return fn(*args)


class _Proposing(diffrax.AbstractStepSizeController):
    """`controller`, whose state also keeps the end of the next step it proposes
    (Diffrax's solution does not return it), and which starts a resumed solve with
    the step `tnext` kept in that state (`None`: as `controller` starts)."""

    controller: diffrax.AbstractStepSizeController
    tnext: Float[Array, ""] | None = None

    def wrap(self, direction):
        return type(self)(self.controller.wrap(direction), self.tnext)

    def init(self, terms, t0, t1, y0, dt0, args, func, error_order):
        if self.tnext is not None:  # resumed: Diffrax keeps the state it was given
            return self.tnext, None
        tnext, state = self.controller.init(terms, t0, t1, y0, dt0, args, func, error_order)
        return tnext, (state, tnext)

    def adapt_step_size(
        self, t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state
    ):
        keep, t0_next, t1_next, jump, state, result = self.controller.adapt_step_size(
            t0, t1, y0, y1_candidate, args, y_error, error_order, controller_state[0]
        )
        return keep, t0_next, t1_next, jump, (state, t1_next), result


class _ProposingAdaptive(_Proposing, diffrax.AbstractAdaptiveStepSizeController):
    """`_Proposing` around an adaptive controller: its tolerances are the
    wrapped controller's (Diffrax gives them to an implicit solver's root finder)."""

    @property
    def rtol(self):  # pyright: ignore
        return self.controller.rtol  # pyright: ignore

    @property
    def atol(self):  # pyright: ignore
        return self.controller.atol  # pyright: ignore

    @property
    def norm(self):  # pyright: ignore
        return self.controller.norm  # pyright: ignore


def _proposing(controller, tnext=None) -> _Proposing:
    if isinstance(controller, diffrax.AbstractAdaptiveStepSizeController):
        return _ProposingAdaptive(controller, tnext)
    return _Proposing(controller, tnext)


class _Run(eqx.Module):
    """A run between two segments: the state reached at `t`, the end `tnext` of the
    step the controller proposes next, Diffrax's solver and controller state (the
    states saved so far in it, `inf` where not reached yet: `redundax._saving`, as
    in a run in one piece), the step counts (all, accepted, rejected) and the
    result of the last segment."""

    t: Float[Array, ""]
    tnext: Float[Array, ""]
    y: tuple[Float[Array, " nq"], Float[Array, " nq"]]
    solver_state: PyTree
    controller_state: PyTree
    made_jump: Bool[Array, ""]
    stats: Int[Array, " 3"]
    result: diffrax.RESULTS


@eqx.filter_jit
def _begin(model, ts, structure, method, solver, controller, drift, watch, y0):
    """The run at its first saved time, before any step: what Diffrax's
    `diffeqsolve` does before its first step (the first step size, the solver's
    first state)."""
    args = (model, structure, method, drift)
    solver = save_at(_monitored(args, solver, ts[0], y0, watch)[0], ts)
    # As `diffeqsolve` hands it to the controller and the solver: wrapped for the
    # direction of time (its first step then is Diffrax's default 0.01 s).
    term = WrapTerm(diffrax.ODETerm(_vector_field), jnp.asarray(1))
    controller = _proposing(controller).wrap(1)
    tnext, controller_state = controller.init(
        term, ts[0], ts[-1], y0, None, args, solver.func, solver.error_order(term)
    )
    tnext = jnp.minimum(tnext, ts[-1])
    run = _Run(
        t=ts[0],
        tnext=tnext,
        y=y0,
        solver_state=solver.init(term, ts[0], tnext, y0, args),
        controller_state=controller_state,
        made_jump=jnp.asarray(False),
        stats=jnp.zeros(3, dtype=jnp.int32),
        result=diffrax.RESULTS.successful,
    )
    # Arrays throughout, none weakly typed, as `_advance` returns them: one program
    # for every segment.
    strong = lambda x: jnp.asarray(x, dtype=jnp.result_type(x))  # noqa: E731
    return jax.tree.map(strong, run)


@eqx.filter_jit
def _advance(model, ts, structure, method, solver, controller, drift, watch, tol, run, steps):
    """`run` after at most `steps` more integrator steps (fewer when it reaches the
    final time): the saved times passed are interpolated from the steps made by the
    solver itself (`redundax._saving`), as in a run in one piece."""
    args = (model, structure, method, drift)
    solver = save_at(_monitored(args, solver, ts[0], run.y, watch)[0], ts)
    # No saved times and no dt0 are handed to Diffrax: its checks of them would be
    # host callbacks (the start time is not a constant here).
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(_vector_field),
        solver,
        run.t,
        ts[-1],
        None,
        run.y,
        args,
        saveat=diffrax.SaveAt(t1=True, solver_state=True, controller_state=True, made_jump=True),
        stepsize_controller=_proposing(controller, run.tnext),
        max_steps=steps,
        throw=False,
        solver_state=run.solver_state,
        controller_state=run.controller_state,
        made_jump=run.made_jump,
        event=left_event(model, tol.step) if model.n_holonomic else None,
    )
    stats = jnp.stack(
        [
            sol.stats["num_steps"],
            sol.stats["num_accepted_steps"],
            sol.stats["num_rejected_steps"],
        ]
    ).astype(jnp.int32)
    return _Run(
        t=sol.ts[-1],
        tnext=sol.controller_state[1],
        y=jax.tree.map(lambda x: x[-1], sol.ys),
        solver_state=sol.solver_state,
        controller_state=sol.controller_state,
        made_jump=sol.made_jump,
        stats=run.stats + stats,
        result=sol.result,
    )


@eqx.filter_jit
def _finish(model, ts, structure, method, drift, watch, tol, partitions, run, correction):
    """The [`Trajectory`][redundax.Trajectory] of a finished run."""
    monitored = partitions and model.n_constraints > 0
    watched = watch is not None and model.n_constraints > 0
    state, (q, qd) = saved_states(run.solver_state)
    log, singular = _logs(state, monitored, watched)
    return _trajectory(
        model,
        ts,
        q,
        qd,
        correction,
        run.stats,
        run.result,
        structure,
        drift,
        log,
        singular,
        tol,
        (run.t, run.y[0]),
    )


def in_segments(
    progress: Progress,
    model,
    y0,
    correction,
    ts,
    structure,
    method,
    solver,
    controller,
    drift,
    max_steps: int,
    throw: bool,
    watch,
    tol,
):
    """The run of `simulate(progress=progress)`, segment by segment on the host;
    with `throw`, a run that stops before its final time raises `RuntimeError`
    (one that left its constraints is judged by `simulate`)."""
    known_ts = host_values(ts)
    if known_ts is None or host_values(*y0) is None:
        raise ValueError(
            "simulate field 'progress': reports on the host need concrete inputs; "
            "it cannot be used under jax.jit, jax.vmap or jax.grad (pass "
            "a diffrax progress meter there)"
        )
    if drift.projects:
        raise ValueError(
            f"simulate field 'progress': the drift control {type(drift).__name__} "
            "projects at saved times, which a run in segments does not do; use "
            "rx.drift.StepProjection() (the default) or pass a diffrax progress meter instead"
        )
    common = (model, ts, structure, method)
    run = progress.call(_begin, *common, solver, controller, drift, watch, y0)
    t1 = float(known_ts[0][-1])
    while True:
        run = progress.call(
            _advance, *common, solver, controller, drift, watch, tol, run, progress.steps
        )
        steps = int(run.stats[0])
        progress.report(float(run.t), t1, steps)
        # A segment ends at the final time (successful), at a failure, or after its
        # steps (`max_steps_reached`): the run's own limit is checked between them.
        if not run.result == diffrax.RESULTS.max_steps_reached or steps >= max_steps:
            break
    # Left the constraints, or met the step-size floor (where the motion cannot go
    # on, or at the final time itself): judged by `_trajectory`.
    stopped = (run.result == diffrax.RESULTS.event_occurred) | (
        run.result == diffrax.RESULTS.dt_min_reached
    )
    if throw and not (run.result == diffrax.RESULTS.successful or stopped):
        raise RuntimeError(
            f"the integration stopped at t = {float(run.t):.6g} s of {t1:g} s after "
            f"{int(run.stats[0])} steps: {diffrax.RESULTS[run.result]}"
        )
    return progress.call(_finish, *common, drift, watch, tol, method.partitions, run, correction)
