"""The pieces of a run that `simulate` and its segmented form (`redundax._progress`)
share: the [`Trajectory`][redundax.Trajectory] and its tolerances, the vector field
Diffrax integrates, the solver wrapped by the drift control and the monitors, the
monitors' logs, and the trajectory made of a finished solve."""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ._assembly import kinetic_energy, position_residual, potential_energy, velocity_residual
from ._friction import with_friction
from ._model import Model, State
from ._structure import Structure
from ._validity import judge, violation
from ._wrapped_solver import around
from .drift._base import AbstractDriftControl
from .drift._baumgarte import Baumgarte
from .monitors._active_set import ActiveSetLog, ActiveSetMonitor, active_rows
from .monitors._singularity import SingularityLog, SingularityMonitor, Watch, observe


class Tolerances(eqx.Module):
    """The validity criterion's tolerances of one run (absolute, already scaled by
    max(1, max |q₀|)): max |Φ| at a step end (`step`, checked inside the
    integration) and at a saved state (`saved`)."""

    step: Float[Array, ""]
    saved: Float[Array, ""]


class AbstractTrajectory(eqx.Module):
    """What every run of [`redundax.simulate`][] returns: the saved states and their
    diagnostics. [`Trajectory`][redundax.Trajectory] (absolute coordinates),
    [`JointTrajectory`][redundax.JointTrajectory] (joint coordinates, with the
    absolute states) and [`GonzalezTrajectory`][redundax.GonzalezTrajectory] (the
    compliant stepper, with its multipliers) add what their runs know.

    - `ts` (T,), `q`, `qd` (T, n): saved states in the model's coordinates.
    - `position_violation` (T,): max |Φ| [m or rad] at each saved time.
    - `velocity_violation` (T,): max |C q̇ + b| (holonomic and Pfaffian rows).
    - `energy` (T,): kinetic + potential energy [J].
    - `num_steps`: integrator steps taken.
    """

    ts: eqx.AbstractVar[Float[Array, " T"]]
    q: eqx.AbstractVar[Float[Array, "T n"]]
    qd: eqx.AbstractVar[Float[Array, "T n"]]
    position_violation: eqx.AbstractVar[Float[Array, " T"]]
    velocity_violation: eqx.AbstractVar[Float[Array, " T"]]
    energy: eqx.AbstractVar[Float[Array, " T"]]
    num_steps: eqx.AbstractVar[Int[Array, ""]]

    def state(self, k: int) -> State:
        """The saved state number `k` (in the model's coordinates)."""
        return State(self.ts[k], self.q[k], self.qd[k])


class Trajectory(AbstractTrajectory):
    """A simulated motion in absolute coordinates, sampled at `ts`.

    - `ts` (T,), `q`, `qd` (T, nq): saved states.
    - `position_violation` (T,): max |Φ| [m or rad] at each saved time.
    - `velocity_violation` (T,): max |C q̇ + b| (holonomic and Pfaffian rows).
    - `energy` (T,): kinetic + potential energy of the applied constant loads [J].
    - `initial_correction`: max |Δq|, |Δq̇| of the initial projection (0 if none).
    - `num_steps`, `num_accepted_steps`, `num_rejected_steps`: integrator counts.
    - `result`: Diffrax's `RESULTS` code: `successful`; `event_occurred` where the
      motion left its constraints; `dt_min_reached` where it stalled at a point it
      cannot be continued past (steps below `STALL_STEP` of the run's length, see
      `redundax._validity`); `max_steps_reached` and Diffrax's other failures.
    - `structure`: the mechanism's [`Structure`][redundax.Structure] the motion was computed with
      (decided at the initial state unless given): reactions along the motion read
      their rank and verdicts from it.
    - `drift_control`: the drift control the motion was computed with: reactions
      along the motion solve with its Γ.
    - `active_set`: for a method that partitions the constraints
      ([`BlockSparse`][redundax.methods.BlockSparse]), every change of its active set, step
      by step ([`ActiveSetLog`][redundax.monitors.ActiveSetLog]; read it with
      [`active_set_history`][redundax.monitors.active_set_history]); else None.
    - `singularities`: how far C is from losing rank after every integrator step
      (σ_r/σ_1, or the block solver's pivot sines), the singular
      configurations passed and the rank changes
      ([`SingularityLog`][redundax.monitors.SingularityLog]; read it with
      [`singularity_report`][redundax.singularity_report]); None when the run
      was not monitored (`monitor=None`, or no constraints).
    - `valid` (T,): per saved state, whether the motion is the mechanism's there:
      reached by the integration and on its constraints within what the drift
      control promises (see [`ConstraintsLeftError`][redundax.ConstraintsLeftError]
      and the criterion in the docs). A run that is not valid everywhere failed:
      no reaction is claimed unique over its invalid part. None: not judged (a
      trajectory built by hand).
    - `left_at`, `left_violation`: the time at which the motion was first found
      off its constraints (the step end that stopped the integration — the
      validity event or the step-size floor — or the first invalid saved time) and
      max |Φ| there; `inf` and 0 for a valid run, and for one stopped by
      `max_steps` (its unreached states are not `valid` all the same).
    - `tolerances`: the largest max |Φ| the run accepted at a step end and at a
      saved state (what its drift control promises).
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
    structure: Structure
    drift_control: AbstractDriftControl = Baumgarte()
    active_set: ActiveSetLog | None = None
    singularities: SingularityLog | None = None
    valid: Bool[Array, " T"] | None = None
    left_at: Float[Array, ""] | None = None
    left_violation: Float[Array, ""] | None = None
    tolerances: Tolerances | None = None

    def until_valid(self) -> "Trajectory":
        """The trajectory cut after its last valid saved state (host-side, on
        concrete values): the part of a run that is the mechanism's motion. Itself
        when every saved state is valid or none is judged."""
        if self.valid is None:
            return self
        valid = np.asarray(self.valid)
        if np.all(valid):
            return self
        k = int(np.argmin(valid))  # the first invalid state
        return eqx.tree_at(
            lambda t: (
                t.ts,
                t.q,
                t.qd,
                t.position_violation,
                t.velocity_violation,
                t.energy,
                t.valid,
            ),
            self,
            tuple(
                x[:k]
                for x in (
                    self.ts,
                    self.q,
                    self.qd,
                    self.position_violation,
                    self.velocity_violation,
                    self.energy,
                    self.valid,
                )
            ),
        )

    @property
    def left_constraints(self) -> Bool[Array, ""]:
        """Whether the motion left its constraints (a saved state off them, or the
        integration stopped there); False where not judged. A run that stopped for
        another reason (`max_steps`) did not leave them: its unreached states are
        not `valid` all the same."""
        if self.left_at is None:
            return jnp.asarray(False)
        return jnp.isfinite(self.left_at)


@eqx.filter_jit
def _vector_field(t, y, args):
    model, structure, method, drift_control = args
    q, qd = y
    terms = method.terms(model, q, qd, t)
    gamma = drift_control.gamma(terms)
    terms = with_friction(model, method, structure, terms, gamma, q, qd)
    return qd, method.acceleration(terms, gamma, structure)


def _diagnostics(model: Model, ts, q, qd):
    pos = jax.vmap(lambda q, t: jnp.max(jnp.abs(position_residual(model, q, t)), initial=0.0))(
        q, ts
    )
    vel = jax.vmap(
        lambda q, qd, t: jnp.max(jnp.abs(velocity_residual(model, q, qd, t)), initial=0.0)
    )(q, qd, ts)
    energy = jax.vmap(lambda q, qd: kinetic_energy(model, qd) + potential_energy(model, q))(q, qd)
    return pos, vel, energy


def _trajectory(
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
    end,
) -> Trajectory:
    pos, vel, energy = _diagnostics(model, ts, q, qd)
    # Validity (see `_validity`): every saved state reached and on its constraints;
    # the solve's end judged where it stopped (the event, the step-size floor).
    t_end, q_end = end
    valid, left_at, left_violation, result = judge(
        ts, q, pos, tol.saved, result, t_end, violation(model, q_end, t_end)
    )
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
        structure=structure,
        drift_control=drift_control,
        active_set=log,
        singularities=singular,
        valid=valid,
        left_at=left_at,
        left_violation=left_violation,
        tolerances=tol,
    )


def _monitored(args, solver, t0, y0, watch: Watch | None):
    """`(solver, monitored, watched)`: the run's solver, wrapped by its drift
    control and by the monitors it needs (the active set of a partitioning method;
    the singularity monitor, outermost, unless `watch` is None), and whether each
    monitor is on."""
    model, structure, method, drift_control = args
    monitored = method.partitions and model.n_constraints > 0
    solver = drift_control.wrap(solver)
    if monitored:
        solver = around(ActiveSetMonitor, solver, ActiveSetLog.start(active_rows(args, t0, y0)))
    watched = watch is not None and model.n_constraints > 0
    if watched:
        # σ_r/σ_1 starts from the structure's (decided at the start); the pivot
        # sines have no such value: read at the start.
        sigma0 = (
            None if watch.measure == "singular_values" else observe(watch.measure, args, t0, y0)
        )
        log = SingularityLog.start(
            structure, t0, watch.threshold, measure=watch.measure, sigma0=sigma0
        )
        solver = around(SingularityMonitor, solver, log)
    return solver, monitored, watched


def _logs(solver_state, monitored: bool, watched: bool):
    """`(active-set log, singularity log)` from the final solver state of the
    monitors `_simulate` wrapped (the singularity monitor outermost)."""
    if solver_state is None:
        return None, None
    singular = None
    if watched:
        solver_state, singular = solver_state
    return (solver_state[1] if monitored else None), singular


def _with_logs(solver, logs, monitored: bool, watched: bool):
    """The monitored solver with the logs to continue."""
    log, singular = logs
    if watched:
        solver = eqx.tree_at(lambda s: s.log, solver, singular)
        if monitored:
            solver = eqx.tree_at(lambda s: s.solver.log, solver, log)
    elif monitored:
        solver = eqx.tree_at(lambda s: s.log, solver, log)
    return solver
