"""Spatial joints and drivers (natural coordinates): the specs a spatial
[`redundax.Mechanism`][] is built from. Their common arguments are described
once, in the family's docstring ([`redundax.joints`][]).
"""

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._math import device
from .._motion import AbstractMotion
from .._pairs import (
    CylindricalConstraint,
    PrismaticConstraint3D,
    RevoluteConstraint3D,
    RevoluteDriverConstraint3D,
    SphericalConstraint,
    TranslationalDriverConstraint3D,
    UniversalConstraint,
    WeldConstraint3D,
    joint_frame,
)

Vector = Sequence[float] | Any


@dataclasses.dataclass(frozen=True)
class _Pair3D:
    name: str
    body_i: str
    body_j: str


@dataclasses.dataclass(frozen=True)
class _Driven3D(_Pair3D):
    motion: AbstractMotion


@dataclasses.dataclass(frozen=True)
class _Joint3D(_Pair3D):
    """The fields every spatial joint shares (module docstring), and their
    conversion from global data at the initial configuration to body-fixed data."""

    point: Vector = None
    axis: Vector = None
    normal: Vector = None
    point_i: Vector = None
    point_j: Vector = None

    kind: ClassVar[str]
    """The pair's kind, as configuration files name it."""
    components: ClassVar[tuple[str, ...]]
    """The labels of its reaction components, one per row."""
    size: ClassVar[int]
    """Its number of rows (set from `components`)."""
    member: ClassVar[Any] = None
    """The constraint member `Mechanism.build()` stacks it into."""
    axis_required: ClassVar[bool] = True
    dim: ClassVar[int] = 3

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "components" in cls.__dict__:
            cls.size = len(cls.components)

    def _frame(self, p, where):
        axis, normal = self.axis, self.normal
        if axis is None:
            if self.axis_required:
                p.add(f"{where} 'axis': required for a {self.kind} joint")
            return np.eye(3)
        a = np.asarray(p.vector(axis, 3, f"{where} 'axis'"))
        if float(np.linalg.norm(a)) == 0.0:
            p.add(f"{where} 'axis': must be a non-zero vector")
            return np.eye(3)
        if normal is None:
            return joint_frame(a)
        n = np.asarray(p.vector(normal, 3, f"{where} 'normal'"))
        a_hat = a / np.linalg.norm(a)
        if float(np.linalg.norm(n - (n @ a_hat) * a_hat)) <= 1e-9 * float(np.linalg.norm(n)):
            p.add(f"{where} 'normal': must not be parallel to the axis (or zero)")
            return joint_frame(a)
        return joint_frame(a, n)

    def _points(self, p, ctx, where):
        (ri, Ri), (rj, Rj) = ctx.pose(self.body_i), ctx.pose(self.body_j)
        if self.point is not None:
            if self.point_i is not None or self.point_j is not None:
                p.add(f"{where} 'point': give either 'point' (global) or 'point_i' and 'point_j'")
            x = np.asarray(p.vector(self.point, 3, f"{where} 'point'"))
            return Ri.T @ (x - ri), Rj.T @ (x - rj)
        if self.point_i is None or self.point_j is None:
            p.add(f"{where} 'point': give 'point' (global) or both 'point_i' and 'point_j'")
            return np.zeros(3), np.zeros(3)
        return (
            np.asarray(p.vector(self.point_i, 3, f"{where} 'point_i'")),
            np.asarray(p.vector(self.point_j, 3, f"{where} 'point_j'")),
        )

    def _fields(self, p, ctx, rows):
        where = f"pair {self.name!r} field"
        bodies = ctx.index(self, ("body_i", "body_j"))
        s_i, s_j = self._points(p, ctx, where)
        G = self._frame(p, where)
        (_, Ri), (_, Rj) = ctx.pose(self.body_i), ctx.pose(self.body_j)
        arrays = dict(s_i=s_i, s_j=s_j, frame_i=G @ Ri, frame_j=G @ Rj)  # NumPy: no XLA program
        return dict(bodies=bodies, rows=rows, **{k: device(v) for k, v in arrays.items()})

    def _member(self, p, ctx, rows):
        extra = {"motion": ctx.motion(self)} if hasattr(self, "motion") else {}
        return self.member(**self._fields(p, ctx, rows), **extra)


@dataclasses.dataclass(frozen=True)
class _Driver3D(_Joint3D, _Driven3D):
    """A spatial driver: the fields of a joint with its `motion` after the bodies."""


@dataclasses.dataclass(frozen=True)
class Spherical(_Joint3D):
    """Spherical (ball) joint: 3 rows. `axis` and `normal` only orient the frame of the
    reaction components (default: global axes at the initial configuration).

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "spherical"
    member = SphericalConstraint
    components = ("force e0", "force e1", "force e2")
    axis_required = False


@dataclasses.dataclass(frozen=True)
class Revolute3D(_Joint3D):
    """Spatial revolute joint about `axis`: 5 rows of full rank.

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "revolute-3d"
    member = RevoluteConstraint3D
    components = (
        "axial force",
        "transverse force e1",
        "transverse force e2",
        "bending moment e1",
        "bending moment e2",
    )


@dataclasses.dataclass(frozen=True)
class Universal(_Joint3D):
    """Universal (Hooke) joint: the pin of body i is `axis` (e₀), the pin of body j is
    `normal` (e₁, required, perpendicular to `axis`); 4 rows.

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "universal"
    member = UniversalConstraint
    components = ("force e0", "force e1", "force e2", "torque e2")


@dataclasses.dataclass(frozen=True)
class Weld3D(_Joint3D):
    """Spatial weld (fixed) joint: 6 rows. `axis`/`normal` orient the component frame
    (default: global axes at the initial configuration).

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "weld-3d"
    member = WeldConstraint3D
    components = ("force e0", "force e1", "force e2", "moment e0", "moment e1", "moment e2")
    axis_required = False


@dataclasses.dataclass(frozen=True)
class Prismatic3D(_Joint3D):
    """Spatial prismatic joint sliding along `axis`: 5 rows.

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "prismatic-3d"
    member = PrismaticConstraint3D
    components = (
        "transverse force e1",
        "transverse force e2",
        "torque e0",
        "moment e1",
        "moment e2",
    )


@dataclasses.dataclass(frozen=True)
class Cylindrical(_Joint3D):
    """Cylindrical joint sliding along and turning about `axis`: 4 rows.

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "cylindrical"
    member = CylindricalConstraint
    components = (
        "transverse force e1",
        "transverse force e2",
        "bending moment e1",
        "bending moment e2",
    )


@dataclasses.dataclass(frozen=True)
class RevoluteDriver3D(_Driver3D):
    """Prescribed rotation `motion` d(t) [rad] of body i relative to body j about `axis`,
    zero at the initial configuration: 1 row (pair it with a joint that holds the axis).
    `point` only places the reported anchor.

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "revolute-driver-3d"
    member = RevoluteDriverConstraint3D
    components = ("driving torque",)


@dataclasses.dataclass(frozen=True)
class TranslationalDriver3D(_Driver3D):
    """Prescribed displacement `motion` d(t) [m] along `axis` (fixed on body j) of the point
    of body i relative to the point of body j: e₀ᵀ(P_i − P_j) = d(t), 1 row. With a
    global `point` the two points coincide initially, so d(0) must be 0; give `point_i`,
    `point_j` otherwise.

    Arguments: those of every spatial joint ([`redundax.joints`][])."""

    kind = "translational-driver-3d"
    member = TranslationalDriverConstraint3D
    components = ("driving force",)


def check_universal(p, spec):
    if spec.normal is None:
        p.add(f"pair {spec.name!r} field 'normal': required for a universal joint (pin of body j)")
        return
    try:
        a, n = np.asarray(spec.axis, dtype=float), np.asarray(spec.normal, dtype=float)
    except (TypeError, ValueError):
        return  # reported by the field checks
    if a.shape == (3,) and n.shape == (3,):
        cos = abs(a @ n) / max(np.linalg.norm(a) * np.linalg.norm(n), 1e-300)
        if cos > 1e-9:
            p.add(
                f"pair {spec.name!r}: the pins 'axis' and 'normal' of a universal joint must "
                f"be perpendicular (cos = {cos:.3g})"
            )


SPATIAL_SPECS = (
    Spherical,
    Revolute3D,
    Universal,
    Weld3D,
    Prismatic3D,
    Cylindrical,
    RevoluteDriver3D,
    TranslationalDriver3D,
)
