"""Force elements: springs and dampers between points, rotational springs, bushings
(spatial, six-component), time-dependent loads, and forces of your own as a function of
the state. Each adds its generalised force to F(q, q̇, t) by autodiff of its work.
"""

from ._force_specs import (
    Bushing as Bushing,
    CustomForce as CustomForce,
    RotationalSpringDamper as RotationalSpringDamper,
    SpringDamper as SpringDamper,
    TimeDependentLoad as TimeDependentLoad,
)
from ._forces import (
    AbstractForceElement as AbstractForceElement,
)

__all__ = [
    "AbstractForceElement",
    "SpringDamper",
    "RotationalSpringDamper",
    "Bushing",
    "TimeDependentLoad",
    "CustomForce",
]
