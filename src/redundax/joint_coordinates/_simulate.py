"""Motion in joint coordinates: the DCA's q̈ integrated by Diffrax, with drift
control of the rows the tree does not hold (the loops, drivers, knife edges).

Two drift controls, as in absolute coordinates: Baumgarte's terms, and (the
default) a projection after every integrator step, mass-weighted and solved by
the DCA itself: the position correction δ of least kinetic metric with
G δ = Φ (the twist-space rows, Pfaffian rows held at zero) is the DCA's solution
for bias 0 and right-hand side Φ, and likewise for the velocities with C ẋ + b;
the twist increments become joint increments joint by joint
([`joint_rates`][redundax.joint_coordinates._kinematics.joint_rates]). No new
factorisation and no pivoting: the assemblies keep the rows they keep for q̈.

Rotation vectors (spherical and free spatial joints) are re-charted at step ends
before they come near the singular length 2π
([`rechart_rotation_vectors`][redundax.joint_coordinates._kinematics.rechart_rotation_vectors]):
the state is the same, only its chart changes (the saved θ then jumps).

A run is judged as an absolute one is (`redundax._validity`), inside the
integration: it stops at the first step end off its constraints (max |Φ| of the
cut joints and drivers, after the projection), or where its steps collapse at a
point the motion cannot be continued past (drivers that push the mechanism to the
edge of its workspace: the loops stay closed there, the joint rates grow without
bound), instead of integrating a motion that no longer exists to `max_steps`;
every saved state is judged afterwards (`JointTrajectory.valid`). See
[`_run_validity`][redundax.joint_coordinates._run_validity].
"""

from typing import NamedTuple

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .._assembly import kinetic_energy, potential_energy
from .._integration import AbstractTrajectory, Tolerances
from .._model import State
from .._saving import save_at, saved_states
from ..drift._baumgarte import Baumgarte
from ..drift._step_projection import AbstractStepEnd, ProjectedSteps, StepProjection
from ._dca import dca_solve
from ._dynamics import JointStructure, dca_dynamics
from ._kinematics import has_rotation_vectors, joint_rates, rechart_rotation_vectors
from ._model import JointModel
from ._run_validity import controller, judge, left_event
from ._terms import BodyTerms, body_terms

DEFAULT_DRIFT_CONTROL = StepProjection()
"""The drift control of [`redundax.simulate`][]: a projection after every step, with
Baumgarte's terms at α = β = 1 /s between (as in absolute coordinates). Bricard
10 s with P3 within 2e-6 m of the reference (`experiments/bench_bricard.py`): 37
steps, 42 ms warm; with Baumgarte's terms alone (10 /s) 100 steps, 82 ms."""


class AbsoluteStates(NamedTuple):
    """Saved states in absolute coordinates (`ts`, `q`, `qd`): what
    [`redundax.monitors.rank_history`][] and [`redundax.monitors.singular_instants`][] read of a
    trajectory."""

    ts: Float[Array, " T"]
    q: Float[Array, "T nq"]
    qd: Float[Array, "T nq"]


class JointTrajectory(AbstractTrajectory):
    """A motion in joint coordinates, sampled at `ts`.

    - `q`, `qd` (T, nj): joint coordinates and rates.
    - `x`, `xd` (T, nq): the same states in the absolute coordinates of `jm.model`
      (for markers, plots and reactions written for absolute coordinates).
    - `position_violation`, `velocity_violation` (T,): max |Φ| and max |C ẋ + b| of
      the rows the tree does not hold (the tree's hold exactly).
    - `energy` (T,): kinetic + potential energy [J] (of the absolute model).
    - `num_steps`, `num_accepted_steps`, `num_rejected_steps`, `result`: Diffrax's
      counts and result code (`diffrax.RESULTS.event_occurred`: the motion left
      its constraints; `dt_min_reached`: it ran into a point it cannot be continued
      past, the edge of the workspace; see `valid`).
    - `valid` (T,): per saved state, whether the motion is the mechanism's there:
      reached by the integration and on its constraints (max |Φ| within
      `tolerances.saved`), as [`redundax.Trajectory`][]'s. A run that is not valid
      everywhere failed: no reaction is unique over its invalid part.
    - `left_at`, `left_violation`: the time at which the motion was first found off
      its constraints (the step end that stopped the integration, or the first
      invalid saved time) and max |Φ| there; `inf` and 0 for a valid run.
    - `tolerances`: the largest max |Φ| the run accepted at a step end (after the
      projection, when it projects) and at a saved state.
    - `end`: the state where the integration stopped (at `t1` for a run that got
      there).
    - `structure`: the decisions the motion was computed with.
    - `drift_control`: the Baumgarte terms in the accelerations (None: none), for
      reactions that belong to the motion's accelerations.
    - `projected`: whether every step ended with the projection.
    - `coordinate_names`: the joint coordinates' names (`JointModel.coordinate_names`).
    """

    ts: Float[Array, " T"]
    q: Float[Array, "T nj"]
    qd: Float[Array, "T nj"]
    x: Float[Array, "T nq"]
    xd: Float[Array, "T nq"]
    position_violation: Float[Array, " T"]
    velocity_violation: Float[Array, " T"]
    energy: Float[Array, " T"]
    num_steps: Array
    num_accepted_steps: Array
    num_rejected_steps: Array
    result: diffrax.RESULTS
    valid: Bool[Array, " T"]
    left_at: Float[Array, ""]
    left_violation: Float[Array, ""]
    tolerances: Tolerances
    end: State
    structure: JointStructure
    drift_control: Baumgarte | None
    projected: bool = eqx.field(static=True)
    coordinate_names: tuple[str, ...] = eqx.field(static=True)

    @property
    def absolute(self) -> AbsoluteStates:
        """The saved states in the absolute coordinates of the model."""
        return AbsoluteStates(self.ts, self.x, self.xd)

    @property
    def left_constraints(self) -> Bool[Array, ""]:
        """Whether the motion left its constraints, or ran into a point where it
        cannot go on (a run that failed otherwise, e.g. at `max_steps`, did not:
        its `valid` is False where it was not reached)."""
        stopped = self.result == diffrax.RESULTS.event_occurred
        return stopped | (self.result == diffrax.RESULTS.dt_min_reached)


class JointStepEnd(AbstractStepEnd):
    """What ends every step of a joint-coordinate run: the projection onto the rows
    the tree does not hold (when `projection` is given) and the re-charting of
    rotation vectors (when the tree has any). Called by
    [`redundax.drift.ProjectedSteps`][] as `project_state(args, t, y)`."""

    jm: JointModel
    structure: JointStructure
    projection: StepProjection | None
    recharts: bool = eqx.field(static=True)

    def project_state(self, args, t, y):
        q, qd = y
        if self.projection is not None:
            q, qd = project_joint_state(self.jm, self.structure, self.projection, q, qd, t)
        if self.recharts:
            q, qd = rechart_rotation_vectors(self.jm.joints, q, qd)
        return q, qd


def joint_increment(jm: JointModel, q, x, E, twists):
    """The joint increment (or rates) whose bodies' twist increments are `twists`
    `(nb, d)`, joint by joint (`joint_rates`), at the joint coordinates `q` (`x`,
    `E`: the bodies' absolute coordinates and twist maps there, `BodyTerms`)."""
    dx = jnp.einsum("bkd,bd->bk", E, twists)
    DX = jnp.concatenate([dx, jnp.zeros((1, dx.shape[1]))])
    out = jnp.zeros(jm.n_coordinates)
    for group in jm.joints:
        if group.coordinates.shape[1]:
            out = out.at[group.coordinates].set(joint_rates(group, jm.model, q, x, DX))
    return out


def _correction(jm: JointModel, structure: JointStructure, terms: BodyTerms, target, q):
    """The joint increment of least kinetic metric whose twist increment δ has
    G δ = `target` on the carried rows: the DCA for bias 0."""
    sol = dca_solve(
        structure.plan, structure.active, terms.inertia, jnp.zeros_like(terms.bias),
        terms.G_a, terms.G_b, target,
    )  # fmt: skip
    return joint_increment(jm, q, terms.x, terms.E, sol.accelerations)


@eqx.filter_jit
def project_joint_state(
    jm: JointModel, structure: JointStructure, projection: StepProjection, q, qd, t
):
    """`(q, q̇)` put back on the rows the tree does not hold: `projection.iterations`
    Newton steps on the positions (holonomic rows; the Pfaffian rows, which have no
    position level, are held at zero change), then one on the velocities.

    With a `projection.tolerance` τ, as in absolute coordinates
    ([`redundax.drift.StepProjection`][]), each correction is made only where its
    residual (max |Φ| of the carried holonomic rows, max |C q̇ + b| of the carried
    rows) exceeds τ: computed and discarded by a mask where it is within τ, so one
    program serves both."""
    holonomic = jnp.asarray(np.asarray(structure.rows.rows) < jm.model.n_holonomic)
    zero = jnp.zeros_like(qd)
    for _ in range(projection.iterations if jm.model.n_holonomic else 0):
        terms = body_terms(jm, structure.rows, q, zero, t)
        residual = jnp.where(holonomic, terms.phi, 0.0)
        step = _correction(jm, structure, terms, residual, q)
        q = q - _beyond(projection.tolerance, residual, step)
    terms = body_terms(jm, structure.rows, q, qd, t)
    step = _correction(jm, structure, terms, terms.velocity_error, q)
    qd = qd - _beyond(projection.tolerance, terms.velocity_error, step)
    return q, qd


def _beyond(tolerance, residual, correction):
    """`correction` where max |residual| exceeds `tolerance` (None: always), else 0."""
    if tolerance is None:
        return correction
    above = jnp.max(jnp.abs(residual), initial=0.0) > tolerance
    return jnp.where(above, correction, 0.0)


def setup(jm: JointModel, structure: JointStructure, solver, drift):
    """`(term, solver, baumgarte, projection)` of a run: the DCA's q̈ as a Diffrax
    term, the solver wrapped with the step ends (projection, re-charting)."""
    projection = drift if isinstance(drift, StepProjection) else None
    baumgarte = projection.baumgarte if projection is not None else drift

    def rhs(t, y, args):
        q, qd = y
        return qd, dca_dynamics(jm, structure, q, qd, t, baumgarte).qdd

    recharts = has_rotation_vectors(jm.joints)
    if projection is not None or recharts:
        solver = ProjectedSteps(solver, JointStepEnd(jm, structure, projection, recharts))
    return diffrax.ODETerm(rhs), solver, baumgarte, projection


@eqx.filter_jit
def _simulate(jm, structure, state, save, t1, rtol, atol, solver, drift, max_steps, tol):
    term, solver, baumgarte, projection = setup(jm, structure, solver, drift)
    # Saved by the solver (`redundax._saving`: no host callback, unlike the checks
    # of `diffrax.SaveAt(ts=...)`); `inf` where not reached.
    sol = diffrax.diffeqsolve(
        term,
        save_at(solver, save),
        t0=state.t,
        t1=t1,
        dt0=None,
        y0=(state.q, state.qd),
        stepsize_controller=controller(jm, rtol, atol, state.t, t1),
        saveat=diffrax.SaveAt(t1=True, solver_state=True),
        max_steps=max_steps,
        throw=False,  # judged with the saved states (`checked`)
        event=left_event(jm, state.t, tol.step),
    )
    _, (q, qd) = saved_states(sol.solver_state)
    end = State(sol.ts[-1], sol.ys[0][-1], sol.ys[1][-1])
    stats = (sol.stats["num_steps"], sol.stats["num_accepted_steps"])
    stats += (sol.stats["num_rejected_steps"],)
    return trajectory_of(
        jm, structure, save, q, qd, stats, sol.result, baumgarte, projection is not None,
        tol, end,
    )  # fmt: skip


def trajectory_of(
    jm, structure, ts, q, qd, stats, result, baumgarte, projected, tol, end
) -> JointTrajectory:
    """The [`JointTrajectory`][redundax.joint_coordinates.JointTrajectory] of the saved states `q`,
    `qd` at `ts` (`inf` where
    not reached), judged: `end` is the state where the integration stopped."""

    def diagnostics(qk, qdk, tk):
        terms = body_terms(jm, structure.rows, qk, qdk, tk)
        x, xd = jax.jvp(jm.absolute_coordinates, (qk,), (qdk,))
        energy = kinetic_energy(jm.model, xd) + potential_energy(jm.model, x)
        pv = jnp.max(jnp.abs(terms.phi), initial=0.0)
        return x, xd, pv, jnp.max(jnp.abs(terms.velocity_error), initial=0.0), energy

    x, xd, pv, vv, energy = jax.vmap(diagnostics)(q, qd, ts)
    valid, left_at, left_violation, result = judge(jm, ts, q, pv, result, tol, (end.t, end.q))
    return JointTrajectory(
        ts=ts,
        q=q,
        qd=qd,
        x=x,
        xd=xd,
        position_violation=pv,
        velocity_violation=vv,
        energy=energy,
        num_steps=stats[0],
        num_accepted_steps=stats[1],
        num_rejected_steps=stats[2],
        result=result,
        valid=valid,
        left_at=left_at,
        left_violation=left_violation,
        tolerances=tol,
        end=end,
        structure=structure,
        drift_control=baumgarte,
        projected=projected,
        coordinate_names=jm.coordinate_names,
    )
