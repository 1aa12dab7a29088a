"""Drift control: how a run keeps its state on the constraint manifold.
[`StepProjection`][redundax.drift.StepProjection] (the default) projects after every integrator
step; [`Projection`][redundax.drift.Projection] at every saved time;
[`Baumgarte`][redundax.drift.Baumgarte] adds
feedback terms to the acceleration equations; [`NoDriftControl`][redundax.drift.NoDriftControl] does
nothing.
"""

from ._drift_control import (
    AS_SIMULATED as AS_SIMULATED,
    AbstractDriftControl as AbstractDriftControl,
    Baumgarte as Baumgarte,
    NoDriftControl as NoDriftControl,
    Projection as Projection,
    drift_control_of as drift_control_of,
)
from ._simulate import (
    default_drift_control as default_drift_control,
)
from ._step_projection import (
    ProjectedSteps as ProjectedSteps,
    StepProjection as StepProjection,
)

__all__ = [
    "AbstractDriftControl",
    "Baumgarte",
    "NoDriftControl",
    "Projection",
    "StepProjection",
    "ProjectedSteps",
    "drift_control_of",
    "default_drift_control",
    "AS_SIMULATED",
]
