"""A joint-coordinate run from start to end: the decisions, the initial chart, and
the integration in one program ([`_simulate`][redundax.joint_coordinates._simulate])
or in segments for progress reports ([`_segments`][redundax.joint_coordinates._segments]),
judged ([`_run_validity`][redundax.joint_coordinates._run_validity]). Called by
[`redundax.simulate`][] for a [`JointModel`][redundax.joint_coordinates.JointModel]."""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from .._integration import Tolerances
from .._model import State
from .._progress import Progress
from .._validation import host_values
from ..drift._base import AbstractDriftControl, NoDriftControl
from ..drift._baumgarte import Baumgarte
from ..drift._step_projection import StepProjection
from ._dynamics import JointStructure, decide_joint
from ._kinematics import has_rotation_vectors, rechart_rotation_vectors
from ._model import JointModel
from ._run_validity import checked, tolerances
from ._segments import in_segments
from ._simulate import DEFAULT_DRIFT_CONTROL, JointTrajectory, _simulate


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
    drift_control: AbstractDriftControl | None = DEFAULT_DRIFT_CONTROL,
    max_steps: int = 100_000,
    throw: bool = True,
    progress: Progress | None = None,
) -> JointTrajectory:
    """Integrate the equations of motion of a joint-coordinate model from `state` to
    `t1` [s], the accelerations by the divide-and-conquer algorithm.

    **Arguments:**

    - `jm`, `state`: the model and a joint-coordinate state
      ([`redundax.joint_coordinates.to_joint_state`][]).
    - `t1`: final time [s]; `n_save` equally spaced saves, or the times `ts`.
    - `structure`: the decisions ([`redundax.joint_coordinates.decide_joint`][]; default: taken at
      `state`, which must then be concrete: pass it to `jax.vmap` over states).
    - `rtol`, `atol`: the step-size controller's tolerances; `solver`: a Diffrax
      solver (default `Dopri8`).
    - `drift_control`: for the rows the tree does not hold (the tree's hold
      exactly by construction): [`redundax.drift.StepProjection`][] (default: after every
      step, `iterations` Newton steps on the positions and one on the velocities,
      solved by the DCA; its `baumgarte` terms in between; with its `tolerance` τ
      only where the residual exceeds τ, as in absolute coordinates, and the run's
      states are then held to τ where it is the larger), [`redundax.drift.Baumgarte`][]
      terms alone, or None.
    - `max_steps`: the integrator's step budget.
    - `throw`: raise when the integration fails or the motion leaves its
      constraints (default); False: return the trajectory with its `result` code
      and `valid` flags (the states after the failure are not finite).
    - `progress`: a [`redundax.Progress`][] whose `report(t, t1, steps)` is called
      on the host every `progress.steps` integrator steps (the run in segments, as
      `simulate(progress=...)`; concrete inputs only). None: one program.

    **Returns:** a [`JointTrajectory`][redundax.joint_coordinates.JointTrajectory].

    **Raises:** `ValueError` when the state is not finite; `TypeError` for a drift
    control joint coordinates do not offer (a projection at saved states only:
    use `StepProjection`); [`redundax.ConstraintsLeftError`][] (with `throw`) when
    the motion leaves its constraints or cannot go on: drivers that push the
    mechanism out of its workspace fail at its edge, naming the time, max |Φ| and
    the last saved time on the constraints; `RuntimeError` when the integration
    fails otherwise (`max_steps`).
    """
    values = host_values(state.q, state.qd)  # None when traced (vmap over states)
    if values is not None and not all(np.all(np.isfinite(v)) for v in values):
        raise ValueError(
            "simulate (joint coordinates): the state holds non-finite joint coordinates or rates"
        )
    if isinstance(drift_control, NoDriftControl):
        drift_control = None
    if drift_control is not None and not isinstance(drift_control, StepProjection | Baumgarte):
        raise TypeError(
            f"simulate (joint coordinates): drift_control {type(drift_control).__name__} is "
            "not offered in "
            "joint coordinates; use StepProjection() (a projection after every step, the "
            "default), Baumgarte(alpha, beta) or None"
        )
    if structure is None:
        structure = decide_joint(jm, state)
    q0, qd0 = state.q, state.qd
    if has_rotation_vectors(jm.joints):  # start in the short chart
        q0, qd0 = rechart_rotation_vectors(jm.joints, jnp.asarray(q0), jnp.asarray(qd0))
    save = jnp.linspace(state.t, t1, n_save) if ts is None else jnp.asarray(ts, dtype=float)
    solver = diffrax.Dopri8() if solver is None else solver
    tol = run_tolerances(jm, q0, drift_control, rtol)
    # Times and tolerances as arrays: one program for every t1 and rtol.
    start = State(jnp.asarray(state.t, dtype=float), q0, qd0)
    numbers = tuple(jnp.asarray(x, dtype=float) for x in (t1, rtol, atol))
    if progress is not None:
        if values is None:
            raise ValueError(
                "simulate (joint coordinates) field 'progress': reports on the host need "
                "concrete inputs; "
                "it cannot be used under jax.jit, jax.vmap or jax.grad"
            )
        trajectory = in_segments(
            progress, jm, structure, start, save, *numbers, solver, drift_control,
            max_steps, tol,
        )  # fmt: skip
    else:
        trajectory = _simulate(
            jm, structure, start, save, *numbers, solver, drift_control, max_steps, tol
        )
    return checked(jm, trajectory, throw)


def run_tolerances(jm: JointModel, q0, drift_control, rtol) -> Tolerances:
    """What a run from `q0` promises (`tolerances`), as in absolute coordinates
    (`redundax._simulate.tolerances`): a `StepProjection` with a `tolerance` τ leaves
    step ends within τ uncorrected, by request, so step ends are held to what an
    unprojected state is held to, and every state to τ where it is the larger."""
    tol = tolerances(jm, q0, drift_control, rtol)
    tau = drift_control.residual_bound() if isinstance(drift_control, StepProjection) else None
    if tau is None:
        return tol
    tau = jax.lax.stop_gradient(jnp.asarray(tau, dtype=float))
    return Tolerances(step=jnp.maximum(tol.saved, tau), saved=jnp.maximum(tol.saved, tau))
