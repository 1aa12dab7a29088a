"""The kinematic pairs a [`redundax.Mechanism`][] is built from: planar pairs and drivers
(absolute coordinates x, y, θ per body), spatial joints and drivers (natural coordinates),
and pairs given by your own residual. Each is a spec: `Mechanism.build()` stacks the specs
of a kind into one constraint member. One family per file: `_planar.py`, `_spatial.py`,
`_custom.py`.

Every spatial joint takes the same arguments, at the initial configuration (as in the
tables of the IFToMM benchmarks); `Mechanism.build()` converts them to body-fixed data
using the bodies' initial poses:

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame);
  a driver's `motion` (a [`redundax.motions`][] object) follows them.
- `point`: the joint point, global components [m]; or `point_i` and `point_j`, the
  joint point in each body's frame.
- `axis`: the joint axis e₀, global components.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁ is the
  global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""

from ._custom import (
    CustomHolonomic as CustomHolonomic,
    CustomPfaffian as CustomPfaffian,
)
from ._planar import (
    KnifeEdge as KnifeEdge,
    Revolute as Revolute,
    RevoluteDriver as RevoluteDriver,
    Translational as Translational,
    TranslationalDriver as TranslationalDriver,
    Weld as Weld,
)
from ._spatial import (
    Cylindrical as Cylindrical,
    Prismatic3D as Prismatic3D,
    Revolute3D as Revolute3D,
    RevoluteDriver3D as RevoluteDriver3D,
    Spherical as Spherical,
    TranslationalDriver3D as TranslationalDriver3D,
    Universal as Universal,
    Weld3D as Weld3D,
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
