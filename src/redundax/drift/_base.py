"""The interface of a drift control, and the control that does nothing.

A drift control answers the questions `simulate` asks of it (one object per strategy,
as Diffrax has one object per step-size controller; DESIGN.md §2):

- `gamma(terms)`: the right-hand side Γ of C q̈ = Γ the accelerations are solved
  with (the constraints' own Γ, or Γ with stabilising terms added);
- `project(model, q, qd, t, ranks)`: the state put back on the manifold at each
  saved time, or unchanged when the strategy does not project (`projects` says which,
  statically, so that `simulate` chooses its integration loop while tracing);
- `wrap(solver)`: the integrator, possibly wrapped (a projection after every step:
  [`StepProjection`][redundax.drift.StepProjection]).

Reactions along a motion need the same Γ as the motion
([`reaction_history`][redundax.reaction_history]
reads `Trajectory.drift_control`).
"""

from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Float

from .._model import Model


class AbstractDriftControl(eqx.Module):
    """How a simulation keeps its state on the constraint manifold.

    Subclasses override `gamma` (terms added to Γ) and/or set `projects = True` and
    override `project` (a correction at each saved time)."""

    projects: ClassVar[bool] = False
    """Whether it projects the state at every saved time."""

    projects_steps: ClassVar[bool] = False
    """Whether it projects the state at the end of every integrator step (the
    validity criterion then holds step ends to the projection's tolerance)."""

    def residual_bound(self):
        """The residual [m, rad, m/s] below which this drift control leaves a state
        uncorrected (its `tolerance`), or None (it corrects whatever the residual,
        or does not project). The validity criterion holds states to at least it:
        a user who asked for τ is not stopped for a residual below τ."""
        return None

    def gamma(self, terms) -> Float[Array, " nc"]:
        """Γ the accelerations are solved with, from the `Terms` of the equations
        of motion (default: the constraints' own Γ)."""
        return terms.gamma

    def project(self, model: Model, q, qd, t, ranks=None):
        """`(q, q̇)` put back on the manifold (default: unchanged)."""
        return q, qd

    def prepare(self, method, structure) -> "AbstractDriftControl":
        """This drift control with its choices fixed for `method` and `structure`
        (called by `simulate` on the host; default: itself)."""
        return self

    def wrap(self, solver):
        """The Diffrax solver `simulate` integrates with, built on `solver` (default:
        `solver` itself; [`StepProjection`][redundax.drift.StepProjection] projects after
        every step)."""
        return solver


class NoDriftControl(AbstractDriftControl):
    """No drift control: the constraints' own Γ and no projection. The residuals
    then grow with the integration error (use for checks, not for long runs)."""


class _AsSimulated:
    """The default `drift_control` of the functions of a trajectory: the drift
    control the trajectory was simulated with (`Trajectory.drift_control`)."""

    def __repr__(self) -> str:
        return "AS_SIMULATED"


AS_SIMULATED = _AsSimulated()


def as_simulated(drift_control, trajectory):
    """`trajectory.drift_control` where `drift_control` is
    [`AS_SIMULATED`][redundax.drift.AS_SIMULATED], else
    `drift_control` (a drift control, or None for Γ itself)."""
    return trajectory.drift_control if drift_control is AS_SIMULATED else drift_control
