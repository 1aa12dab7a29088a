"""Drift control: how a run keeps its state on the constraint manifold.
[`StepProjection`][redundax.drift.StepProjection] (the default) projects after every integrator
step; [`Projection`][redundax.drift.Projection] at every saved time;
[`Baumgarte`][redundax.drift.Baumgarte] adds
feedback terms to the acceleration equations; [`NoDriftControl`][redundax.drift.NoDriftControl] does
nothing. One strategy per file: `_base.py` (the interface), `_baumgarte.py`,
`_projection.py`, `_step_projection.py`.
"""

from ._base import (
    AS_SIMULATED as AS_SIMULATED,
    AbstractDriftControl as AbstractDriftControl,
    NoDriftControl as NoDriftControl,
)
from ._baumgarte import Baumgarte as Baumgarte
from ._projection import (
    Projection as Projection,
    drift_control_of as drift_control_of,
)
from ._step_projection import (
    ProjectedSteps as ProjectedSteps,
    StepProjection as StepProjection,
    default_drift_control as default_drift_control,
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
