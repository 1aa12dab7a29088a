"""Constraint members (kinematic pairs), one class per kind, stacked by type.

- `_base.py`: the interfaces `AbstractHolonomic` and `AbstractPfaffian`.
- `_planar.py`: planar pairs in absolute coordinates.
- `_spatial.py`: spatial joints in natural coordinates.
- `_custom.py`: pairs given by a user residual (planar or spatial).

Internal to redundax: users declare pairs with the specs (`redundax.joints.Revolute`,
`redundax.joints.Spherical`, ...) and [`redundax.Mechanism.build`][] makes these.
"""

from ._base import AbstractHolonomic as AbstractHolonomic, AbstractPfaffian as AbstractPfaffian
from ._custom import (
    CustomHolonomicConstraint as CustomHolonomicConstraint,
    CustomPfaffianConstraint as CustomPfaffianConstraint,
)
from ._planar import (
    KnifeEdgeConstraint as KnifeEdgeConstraint,
    RevoluteConstraint as RevoluteConstraint,
    RevoluteDriverConstraint as RevoluteDriverConstraint,
    TranslationalConstraint as TranslationalConstraint,
    TranslationalDriverConstraint as TranslationalDriverConstraint,
    WeldConstraint as WeldConstraint,
)
from ._spatial import (
    AbstractSpatialJoint as AbstractSpatialJoint,
    CylindricalConstraint as CylindricalConstraint,
    PrismaticConstraint3D as PrismaticConstraint3D,
    RevoluteConstraint3D as RevoluteConstraint3D,
    RevoluteDriverConstraint3D as RevoluteDriverConstraint3D,
    RigidBodyConstraint as RigidBodyConstraint,
    SphericalConstraint as SphericalConstraint,
    TranslationalDriverConstraint3D as TranslationalDriverConstraint3D,
    UniversalConstraint as UniversalConstraint,
    WeldConstraint3D as WeldConstraint3D,
    joint_frame as joint_frame,
    perpendicular_pair as perpendicular_pair,
)
