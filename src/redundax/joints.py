"""The kinematic pairs a [`redundax.Mechanism`][] is built from: planar pairs and drivers
(absolute coordinates x, y, θ per body), spatial joints and drivers (natural coordinates),
and pairs given by your own residual. Each is a spec: `Mechanism.build()` stacks the specs
of a kind into one constraint member.
"""

from ._spatial_spec import (
    Cylindrical as Cylindrical,
    Prismatic3D as Prismatic3D,
    Revolute3D as Revolute3D,
    RevoluteDriver3D as RevoluteDriver3D,
    Spherical as Spherical,
    TranslationalDriver3D as TranslationalDriver3D,
    Universal as Universal,
    Weld3D as Weld3D,
)
from ._spec import (
    CustomHolonomic as CustomHolonomic,
    CustomPfaffian as CustomPfaffian,
    KnifeEdge as KnifeEdge,
    Revolute as Revolute,
    RevoluteDriver as RevoluteDriver,
    Translational as Translational,
    TranslationalDriver as TranslationalDriver,
    Weld as Weld,
)

__all__ = [
    "Revolute",
    "Translational",
    "Weld",
    "KnifeEdge",
    "RevoluteDriver",
    "TranslationalDriver",
    "CustomHolonomic",
    "CustomPfaffian",
    "Revolute3D",
    "Prismatic3D",
    "Cylindrical",
    "Spherical",
    "Universal",
    "Weld3D",
    "RevoluteDriver3D",
    "TranslationalDriver3D",
]
