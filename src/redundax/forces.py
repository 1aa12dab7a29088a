"""Force elements: springs and dampers between points, rotational springs, bushings
(spatial, six-component), time-dependent loads, and forces of your own as a function of
the state. Each adds its generalised force to F(q, q̇, t) by autodiff of its work.

[`JointFriction`][redundax.forces.JointFriction] is friction in a joint, from the
reaction components of that joint: it depends on the reactions, which depend on it,
and a simulation solves the two together at every evaluation of the equations of
motion; it reads only components the rigid model determines (or a compliant
method's), and is refused, by name, where it would read one that is not.
"""

from ._force_specs import (
    Bushing as Bushing,
    CustomForce as CustomForce,
    JointFriction as JointFriction,
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
    "JointFriction",
]
