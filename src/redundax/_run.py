"""The one door: [`simulate`][redundax.simulate] runs absolute-coordinate models,
joint-coordinate models (the model's type decides) and González's compliant
stepper (the solver decides), and returns an [`AbstractTrajectory`][redundax.AbstractTrajectory]."""

import diffrax
import equinox as eqx
from jaxtyping import ArrayLike

from ._compliant_stepping import GonzalezStepper, GonzalezTrajectory, simulate_gonzalez
from ._integration import AbstractTrajectory
from ._model import Model, State
from ._options import (
    DEFAULT_SAVES,
    AbstractInitial,
    CheckInitial,
    ProjectInitial,
    SaveAt,
    Singularities,
)
from ._precision import precise
from ._progress import Progress
from ._simulate import simulate_absolute
from ._structure import Structure
from ._validation import host_values
from .drift._base import AbstractDriftControl
from .joint_coordinates._dynamics import JointStructure
from .joint_coordinates._model import JointModel
from .joint_coordinates._run import simulate_joint
from .joint_coordinates._simulate import DEFAULT_DRIFT_CONTROL
from .methods import AbstractRedundancyMethod, NullSpace

RTOL, ATOL = precise(1e-8, 1e-5), precise(1e-10, 1e-6)
"""The tolerances of the default step-size controller,
`diffrax.PIDController(rtol=1e-8, atol=1e-10)`; in single precision
(`JAX_ENABLE_X64=0`, `redundax._precision`) rtol 1e-5, atol 1e-6: an atol at
float32's round-off of unit-sized coordinates (1e-7) makes the controller chase
round-off in q̈ (`n_four_bar(3)` through its flat poses: 72 steps for 1 s at
atol 1e-7, 37 at 1e-6; float64's default 22)."""


def simulate(
    model: Model | JointModel,
    state0: State,
    t1: float,
    *,
    structure: Structure | JointStructure | None = None,
    method: AbstractRedundancyMethod = NullSpace(),
    solver: diffrax.AbstractSolver | GonzalezStepper | None = None,
    stepsize_controller: diffrax.AbstractStepSizeController | None = None,
    drift_control: AbstractDriftControl | None = None,
    initial: AbstractInitial = CheckInitial(),
    saveat: SaveAt = SaveAt(),
    monitor: Singularities | None = Singularities(),
    max_steps: int = 100_000,
    throw: bool = True,
    progress: Progress | diffrax.AbstractProgressMeter | None = None,
) -> AbstractTrajectory:
    """Integrate the equations of motion of `model` from `state0` to `t1`.

    **Arguments:**

    - `model`: a [`Model`][redundax.Model] (absolute coordinates) or a
      [`JointModel`][redundax.joint_coordinates.JointModel] (joint coordinates: the accelerations by
      the divide-and-conquer algorithm, the drift of the rows the tree does not
      hold projected by it); `state0`: its initial [`State`][redundax.State]
      (t, q, q̇) in the model's coordinates ([`redundax.joint_coordinates.to_joint_state`][] for a
      joint model).
    - `t1`: final time [s].
    - `structure`: the mechanism's [`Structure`][redundax.Structure] (a
      [`JointStructure`][redundax.joint_coordinates.JointStructure] for a joint model); default:
      decided at the initial state (after `initial`'s projection). Every discrete
      decision of the run (the ranks, the null-space method's path) is read from it.
    - `method`: how redundant constraints are handled (default
      [`NullSpace`][redundax.methods.NullSpace]; see [`redundax.methods`][]). Joint models
      run the divide-and-conquer algorithm and take the default only.
    - `solver`: any Diffrax ODE solver (default: `diffrax.Dopri8()` when the
      controller's rtol < 1e-6, else `diffrax.Tsit5()`; `Dopri8` for joint models),
      or [`GonzalezStepper`][redundax.GonzalezStepper]`(h=...)`: González et al.'s
      compliant fixed-step scheme (returns a [`GonzalezTrajectory`][redundax.GonzalezTrajectory];
      no controller, drift control, structure or progress: it has its own
      projection).
    - `stepsize_controller`: default `diffrax.PIDController(rtol=1e-8, atol=1e-10)`.
      A `diffrax.PIDController` (the default or yours) steps onto the knots of the
      prescribed motions and, when its `dtmin` is unset, takes no step shorter
      than 1e-9 of the run (a run that needs one stopped where the motion cannot
      go on, judged as leaving its constraints there); another controller is used
      as given. Joint models take a `PIDController`.
    - `drift_control`: how the state is kept on its constraints (see
      [`redundax.drift`][]); default [`StepProjection`][redundax.drift.StepProjection]`()`
      (a projection after every step: what keeps a closed chain on its branch
      through its singular configurations), for the penalty method
      [`Baumgarte`][redundax.drift.Baumgarte]`()`.
    - `initial`: [`CheckInitial`][redundax.CheckInitial]`(tol)` (default: an
      initial state off its constraints by more than 1e-8 is refused, naming the
      pairs) or [`ProjectInitial`][redundax.ProjectInitial]`()` (projected first;
      absolute models).
    - `saveat`: [`SaveAt`][redundax.SaveAt]`(n=...)` or `SaveAt(ts=...)`; default
      201 states equally spaced in [t0, t1] (every step for `GonzalezStepper`).
    - `monitor`: [`Singularities`][redundax.Singularities]`()` (default: after
      every step, how far C is from losing rank, read by
      [`redundax.singularity_report`][]) or None (no record). A passage met with a
      drift control that does not project after every step gives a
      [`SingularPassageWarning`][redundax.SingularPassageWarning].
    - `max_steps`: as in `diffrax.diffeqsolve`.
    - `throw`: raise when the run fails: [`ConstraintsLeftError`][redundax.ConstraintsLeftError]
      where the motion left its constraints or cannot go on, `RuntimeError` where
      the integration stopped for another reason (`max_steps`); under `jax.jit`
      and friends the program stops with the same meaning. With `throw=False` the
      trajectory says it (`result`, `valid`, `left_at`).
    - `progress`: a [`Progress`][redundax.Progress] reported to on the host while
      the run goes on (the run in segments of `progress.steps` integrator steps,
      the steps of the run in one piece; its programs have no host callback, so
      JAX's persistent compilation cache keeps them; concrete inputs only), or a
      Diffrax progress meter (`diffrax.TextProgressMeter()`; absolute models with a
      drift control that does not project at saved times).

    **Returns:** a [`Trajectory`][redundax.Trajectory] (absolute models), a
    [`JointTrajectory`][redundax.JointTrajectory] (joint models) or a
    [`GonzalezTrajectory`][redundax.GonzalezTrajectory] (`GonzalezStepper`): each
    an [`AbstractTrajectory`][redundax.AbstractTrajectory].

    **Raises:** [`ModelError`][redundax.ModelError] naming the violated pairs for an
    inconsistent initial state, or naming the field for a bad argument; a
    `ValueError` at a singular initial configuration for a method of the null-space
    family (which relies on the rank decided there). Both on concrete inputs.

    The numerics are the same eagerly and under `jax.jit`, `jax.vmap` (over states
    or models) and `jax.grad` (reverse mode through Diffrax's checkpointed adjoint).

    !!! example
        ```python
        traj = rx.simulate(
            model, state0, 10.0,
            stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
        )
        traj.position_violation.max()
        ```
    """
    _check_types(initial, saveat, monitor, progress)
    if isinstance(solver, GonzalezStepper):
        return _gonzalez(model, state0, t1, solver, locals())
    rtol, atol = _tolerances(stepsize_controller)
    if isinstance(model, JointModel):
        return _joint(model, state0, t1, rtol, atol, locals())
    if not isinstance(model, Model):
        raise TypeError(
            f"simulate: expected a redundax Model or JointModel as `model`, got "
            f"{type(model).__name__} (build one with Mechanism.build(), rx.models or "
            "rx.io.load_config)"
        )
    if isinstance(progress, Progress):
        meter, progress = diffrax.NoProgressMeter(), progress
    else:
        meter, progress = (progress or diffrax.NoProgressMeter()), None
    projecting = isinstance(initial, ProjectInitial)
    return simulate_absolute(
        model,
        state0,
        t1,
        structure=structure,
        method=method,
        solver=solver,
        stepsize_controller=stepsize_controller,
        rtol=rtol,
        atol=atol,
        drift_control=drift_control,
        initial_projection=initial.projection if projecting else None,
        consistency_tol=initial.tol,
        n_save=DEFAULT_SAVES if saveat.n is None else saveat.n,
        ts=saveat.ts,
        max_steps=max_steps,
        throw=throw,
        progress_meter=meter,
        monitor=monitor,
        progress=progress,
    )


def _check_types(initial, saveat, monitor, progress) -> None:
    for name, value, expected, example in (
        ("initial", initial, AbstractInitial, "rx.CheckInitial() or rx.ProjectInitial()"),
        ("saveat", saveat, SaveAt, "rx.SaveAt(n=101) or rx.SaveAt(ts=...)"),
        ("monitor", monitor, Singularities | None, "rx.Singularities() or None"),
        (
            "progress",
            progress,
            Progress | diffrax.AbstractProgressMeter | None,
            "an rx.Progress, a diffrax progress meter or None",
        ),
    ):
        if not isinstance(value, expected):
            raise TypeError(f"simulate field {name!r}: expected {example}, got {value!r}")


def _tolerances(controller) -> tuple[ArrayLike, ArrayLike]:
    """The (rtol, atol) a run's defaults are chosen by: the controller's where it
    has them (a `PIDController`, possibly clipped), else the default's."""
    while isinstance(controller, diffrax.ClipStepSizeController):
        controller = controller.controller
    if isinstance(controller, diffrax.PIDController):
        return controller.rtol, controller.atol
    return RTOL, ATOL


def _refuse(what: str, name: str, value, why: str):
    raise TypeError(f"simulate field {name!r}: {what} {why}, got {value!r}")


def _joint(jm: JointModel, state0: State, t1, rtol, atol, given) -> AbstractTrajectory:
    """A joint-coordinate run (`simulate_joint`) from the door's arguments."""
    what = "a joint-coordinate model"
    if not (given["method"] == NullSpace()):
        _refuse(what, "method", given["method"], "runs the divide-and-conquer algorithm")
    controller = given["stepsize_controller"]
    if controller is not None and not isinstance(controller, diffrax.PIDController):
        _refuse(what, "stepsize_controller", controller, "takes a diffrax.PIDController")
    if not isinstance(given["initial"], CheckInitial):
        _refuse(
            what,
            "initial",
            given["initial"],
            "starts from the state given (project the absolute state first with "
            "rx.drift.Projection()(model, q, qd, t) and convert it with "
            "rx.joint_coordinates.to_joint_state)",
        )
    if given["monitor"] is not None and given["monitor"].measure is not None:
        _refuse(what, "monitor", given["monitor"], "keeps no singularity log (use None)")
    if isinstance(given["progress"], diffrax.AbstractProgressMeter):
        _refuse(what, "progress", given["progress"], "reports through an rx.Progress")
    saveat = given["saveat"]
    drift = given["drift_control"]
    return simulate_joint(
        jm,
        state0,
        t1,
        structure=given["structure"],
        n_save=DEFAULT_SAVES if saveat.n is None else saveat.n,
        ts=saveat.ts,
        rtol=rtol,
        atol=atol,
        solver=given["solver"],
        # None: the joint runs' default (a projection after every step, by the DCA).
        drift_control=DEFAULT_DRIFT_CONTROL if drift is None else drift,
        max_steps=given["max_steps"],
        throw=given["throw"],
        progress=given["progress"],
    )


def _gonzalez(
    model: Model, state0: State, t1, stepper: GonzalezStepper, given
) -> GonzalezTrajectory:
    """A run of González et al.'s stepper (`simulate_gonzalez`) from the door's
    arguments: `t1` the final time, the number of steps (t1 − t0)/h static."""
    what = "GonzalezStepper"
    if isinstance(model, JointModel) or not isinstance(model, Model):
        _refuse(what, "model", model, "steps an absolute-coordinate rx.Model")
    for name in ("structure", "stepsize_controller", "drift_control", "progress"):
        if given[name] is not None:
            _refuse(what, name, given[name], "takes none (fixed steps, its own projection)")
    if not (given["method"] == NullSpace()):
        _refuse(what, "method", given["method"], "solves its own regularised equations")
    if not (given["initial"] == CheckInitial()):
        _refuse(what, "initial", given["initial"], "starts from the state as given")
    if given["monitor"] is not None and given["monitor"].measure is not None:
        _refuse(what, "monitor", given["monitor"], "keeps no singularity log (use None)")
    h = float(stepper.h)
    known = host_values(state0.t)
    t0 = 0.0 if known is None else float(known[0])
    duration = float(t1) - t0
    n_steps = round(duration / h)
    saveat = given["saveat"]
    if saveat.ts is not None:
        _refuse(what, "saveat", saveat, "saves every k steps: give SaveAt(n=...) or SaveAt()")
    save_every = 1
    if saveat.n is not None:
        if n_steps % (saveat.n - 1):
            raise ValueError(
                f"simulate field 'saveat': SaveAt(n={saveat.n}) with GonzalezStepper needs "
                f"n − 1 to divide the number of steps (t1 − t0)/h = {n_steps}"
            )
        save_every = n_steps // (saveat.n - 1)
    if known is None:
        # The number of steps is static: a traced t0 (a batch of states) must be 0.
        state0 = eqx.error_if(
            state0,
            state0.t != 0.0,
            "simulate with GonzalezStepper under a trace takes t1 as the final time "
            "from t0 = 0: give states with t = 0, or a concrete t0",
        )
    return simulate_gonzalez(
        model,
        state0,
        duration,
        h=h,
        compliance=stepper.compliance,
        projection=stepper.projection,
        projection_tol=stepper.projection_tol,
        max_projection_iterations=stepper.max_projection_iterations,
        save_every=save_every,
    )
