"""A joint-coordinate run in segments, for progress reports on the host
([`redundax.simulate`][]`(progress=...)`): as `simulate(progress=...)` does
in absolute coordinates (`redundax._progress`), each segment a fixed number of
integrator steps resuming Diffrax's solver and step-size state where the last one
stopped, so the steps are those of the run in one piece and the programs hold no
host callback (JAX's compilation cache keeps them)."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
from diffrax._term import WrapTerm
from jaxtyping import Array, Bool, Float, Int, PyTree

from .._model import State
from .._progress import Progress, _proposing
from .._saving import save_at, saved_states
from ..drift._step_projection import StepProjection
from ._run_validity import controller, left_event
from ._simulate import JointTrajectory, setup, trajectory_of


class _Run(eqx.Module):
    """A run between two segments: the state reached at `t`, the end `tnext` of the
    step the controller proposes next, Diffrax's solver and controller state (the
    states saved so far in it, `inf` where not reached yet: `redundax._saving`, as
    in a run in one piece), the step counts (all, accepted, rejected) and the
    result of the last segment."""

    t: Float[Array, ""]
    tnext: Float[Array, ""]
    y: tuple[Float[Array, " nj"], Float[Array, " nj"]]
    solver_state: PyTree
    controller_state: PyTree
    made_jump: Bool[Array, ""]
    stats: Int[Array, " 3"]
    result: diffrax.RESULTS


@eqx.filter_jit
def _begin(jm, structure, save, t1, solver, drift, rtol, atol, y0) -> _Run:
    """The run at its first saved time, before any step (what `diffeqsolve` does
    before its first step: the first step size, the solver's first state)."""
    rhs, solver, _, _ = setup(jm, structure, solver, drift)
    solver = save_at(solver, save)
    term = WrapTerm(rhs, jnp.asarray(1))  # as `diffeqsolve` hands it on
    t0 = save[0]
    proposing = _proposing(controller(jm, rtol, atol, t0, t1)).wrap(1)
    tnext, controller_state = proposing.init(
        term, t0, t1, y0, None, None, solver.func, solver.error_order(term)
    )
    tnext = jnp.minimum(tnext, t1)
    run = _Run(
        t=t0,
        tnext=tnext,
        y=y0,
        solver_state=solver.init(term, t0, tnext, y0, None),
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
def _advance(jm, structure, save, t1, solver, drift, rtol, atol, tol, run, steps) -> _Run:
    """`run` after at most `steps` more integrator steps (fewer at the final time,
    or where the motion left its constraints); the saved times passed are
    interpolated from the steps made by the solver itself (`redundax._saving`)."""
    rhs, solver, _, _ = setup(jm, structure, solver, drift)
    sol = diffrax.diffeqsolve(
        rhs,
        save_at(solver, save),
        run.t,
        t1,
        None,
        run.y,
        saveat=diffrax.SaveAt(t1=True, solver_state=True, controller_state=True, made_jump=True),
        stepsize_controller=_proposing(controller(jm, rtol, atol, save[0], t1), run.tnext),
        max_steps=steps,
        throw=False,
        solver_state=run.solver_state,
        controller_state=run.controller_state,
        made_jump=run.made_jump,
        event=left_event(jm, save[0], tol.step),
    )
    stats = jnp.stack(
        [sol.stats["num_steps"], sol.stats["num_accepted_steps"], sol.stats["num_rejected_steps"]]
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
def _finish(jm, structure, save, t1, drift, tol, run: _Run) -> JointTrajectory:
    """The [`JointTrajectory`][redundax.joint_coordinates.JointTrajectory] of a finished run."""
    baumgarte = drift.baumgarte if isinstance(drift, StepProjection) else drift
    _, (q, qd) = saved_states(run.solver_state)
    return trajectory_of(
        jm, structure, save, q, qd, tuple(run.stats), run.result, baumgarte,
        isinstance(drift, StepProjection), tol, State(run.t, *run.y),
    )  # fmt: skip


def in_segments(
    progress: Progress,
    jm,
    structure,
    state,
    save,
    t1,
    rtol,
    atol,
    solver,
    drift,
    max_steps: int,
    tol,
) -> JointTrajectory:
    """The run of `simulate(jm, ..., progress=progress)`, segment by segment on the
    host (judged by `simulate_joint`, as the run in one piece)."""
    common = (jm, structure, save, t1, solver, drift, rtol, atol)
    run = progress.call(_begin, *common, (state.q, state.qd))
    while True:
        run = progress.call(_advance, *common, tol, run, progress.steps)
        steps = int(run.stats[0])
        progress.report(float(run.t), float(t1), steps)
        # A segment ends at the final time (successful), at a failure, where the
        # motion left its constraints (event_occurred), or after its steps
        # (`max_steps_reached`): the run's own limit is checked between them.
        if not run.result == diffrax.RESULTS.max_steps_reached or steps >= max_steps:
            break
    return progress.call(_finish, jm, structure, save, t1, drift, tol, run)
