"""What the user writes for spatial mechanisms: bodies by mass, inertia tensor and
pose, joints by a point and an axis at the initial configuration.

Natural coordinates are an internal choice (`_bodies.py`): a user never writes
them. Joint points and axes are given in global components at the initial
configuration (as in the tables of the IFToMM benchmarks), or, for points, in
the two body frames (`point_i`, `point_j`); [`redundax.Mechanism.build`][]
converts them to body-fixed data using the bodies' initial poses.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._math import device
from ._motion import AbstractMotion
from ._pairs import (
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
Matrix = Sequence[Sequence[float]] | Any
IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


@dataclasses.dataclass(frozen=True)
class SpatialBody:
    """A spatial rigid body; its frame sits at its centre of mass.

    **Arguments:**

    - `name`: unique name ("ground" is reserved for the fixed frame).
    - `mass`: mass [kg], > 0.
    - `inertia`: inertia tensor about the centre of mass in body axes [kg m²]:
      a symmetric 3 × 3 matrix, or its three principal moments (body axes along
      the principal axes). Positive definite and physically realisable (each
      principal moment at most the sum of the other two).
    - `position`: initial global position of the centre of mass [m].
    - `rotation`: initial rotation matrix, body to global components (columns:
      the body axes in global components); proper orthogonal.
    - `velocity`: initial velocity of the centre of mass [m/s].
    - `angular_velocity`: initial angular velocity, global components [rad/s].
    """

    name: str
    mass: float
    inertia: Matrix | Vector
    position: Vector = (0.0, 0.0, 0.0)
    rotation: Matrix = IDENTITY
    velocity: Vector = (0.0, 0.0, 0.0)
    angular_velocity: Vector = (0.0, 0.0, 0.0)


def check_inertia(p, value, where: str):
    """A valid inertia tensor from `value` (3 × 3, or 3 principal moments)."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        p.add(f"{where}: expected a 3 × 3 matrix or 3 principal moments, got {value!r}")
        return np.eye(3)
    if arr.shape == (3,):
        arr = np.diag(arr)
    if arr.shape != (3, 3):
        p.add(f"{where}: expected a 3 × 3 matrix or 3 principal moments, got shape {arr.shape}")
        return np.eye(3)
    if not np.all(np.isfinite(arr)):
        p.add(f"{where}: contains a non-finite value")
        return np.eye(3)
    scale = max(float(np.max(np.abs(arr))), 1e-300)
    if np.max(np.abs(arr - arr.T)) > 1e-9 * scale:
        p.add(f"{where}: must be symmetric")
        return np.eye(3)
    moments = np.linalg.eigvalsh(arr)
    if moments[0] <= 0.0:
        p.add(f"{where}: must be positive definite, principal moments {moments.tolist()}")
    elif moments[2] > moments[0] + moments[1] + 1e-12 * scale:
        p.add(
            f"{where}: principal moments {moments.tolist()} violate the triangle inequality "
            "(no mass distribution has them)"
        )
    return np.asarray(0.5 * (arr + arr.T))


def check_rotation(p, value, where: str):
    """A proper rotation matrix from `value`."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        p.add(f"{where}: expected a 3 × 3 rotation matrix, got {value!r}")
        return np.eye(3)
    if arr.shape != (3, 3) or not np.all(np.isfinite(arr)):
        p.add(f"{where}: expected a finite 3 × 3 rotation matrix, got shape {arr.shape}")
        return np.eye(3)
    err = float(np.max(np.abs(arr.T @ arr - np.eye(3))))
    if err > 1e-9 or np.linalg.det(arr) < 0.0:
        p.add(
            f"{where}: not a proper rotation matrix (|RᵀR − I| = {err:.2g}, det = "
            f"{np.linalg.det(arr):.3g}); its columns are the body axes in global components"
        )
        return np.eye(3)
    return np.asarray(arr)


class _Joint3D:
    """Shared conversion of global joint data to body-fixed data."""

    dim = 3
    member: Any = None
    axis_required = True

    def _frame(self, p, where):
        axis = getattr(self, "axis", None)
        normal = getattr(self, "normal", None)
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


def _joint(cls_name, member, kind, components, doc, axis_required=True, motion=False):
    """Define a spatial joint spec dataclass (they share all their fields)."""
    fields = [
        ("name", str),
        ("body_i", str),
        ("body_j", str),
    ]
    if motion:
        fields.append(("motion", AbstractMotion))
    fields += [
        ("point", Vector, dataclasses.field(default=None)),
        ("axis", Vector, dataclasses.field(default=None)),
        ("normal", Vector, dataclasses.field(default=None)),
        ("point_i", Vector, dataclasses.field(default=None)),
        ("point_j", Vector, dataclasses.field(default=None)),
    ]
    cls = dataclasses.make_dataclass(
        cls_name,
        fields,
        bases=(_Joint3D,),
        frozen=True,
        namespace={
            "member": member,
            "kind": kind,
            "size": len(components),
            "components": components,
            "axis_required": axis_required,
            "__doc__": doc,
            "__module__": __name__,
        },
    )
    return cls


_COMMON = """

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""

Spherical = _joint(
    "Spherical",
    SphericalConstraint,
    "spherical",
    ("force e0", "force e1", "force e2"),
    "Spherical (ball) joint: 3 rows. `axis` and `normal` only orient the frame of the "
    "reaction components (default: global axes at the initial configuration)." + _COMMON,
    axis_required=False,
)
"""`Spherical(name, body_i, body_j, point=None, axis=None, normal=None, point_i=None, point_j=None)`

Spherical (ball) joint: 3 rows. `axis` and `normal` only orient the frame of the reaction components
(default: global axes at the initial configuration).

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
Revolute3D = _joint(
    "Revolute3D",
    RevoluteConstraint3D,
    "revolute-3d",
    (
        "axial force",
        "transverse force e1",
        "transverse force e2",
        "bending moment e1",
        "bending moment e2",
    ),
    "Spatial revolute joint about `axis`: 5 rows of full rank." + _COMMON,
)
"""`Revolute3D(name, body_i, body_j, point=None, axis=None, normal=None,
point_i=None, point_j=None)`

Spatial revolute joint about `axis`: 5 rows of full rank.

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
Universal = _joint(
    "Universal",
    UniversalConstraint,
    "universal",
    ("force e0", "force e1", "force e2", "torque e2"),
    "Universal (Hooke) joint: the pin of body i is `axis` (e₀), the pin of body j "
    "is `normal` (e₁, required, perpendicular to `axis`); 4 rows." + _COMMON,
)
"""`Universal(name, body_i, body_j, point=None, axis=None, normal=None, point_i=None, point_j=None)`

Universal (Hooke) joint: the pin of body i is `axis` (e₀), the pin of body j is `normal` (e₁,
required, perpendicular to `axis`); 4 rows.

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
Weld3D = _joint(
    "Weld3D",
    WeldConstraint3D,
    "weld-3d",
    ("force e0", "force e1", "force e2", "moment e0", "moment e1", "moment e2"),
    "Spatial weld (fixed) joint: 6 rows. `axis`/`normal` orient the component frame "
    "(default: global axes at the initial configuration)." + _COMMON,
    axis_required=False,
)
"""`Weld3D(name, body_i, body_j, point=None, axis=None, normal=None, point_i=None, point_j=None)`

Spatial weld (fixed) joint: 6 rows. `axis`/`normal` orient the component frame (default: global axes
at the initial configuration).

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
Prismatic3D = _joint(
    "Prismatic3D",
    PrismaticConstraint3D,
    "prismatic-3d",
    ("transverse force e1", "transverse force e2", "torque e0", "moment e1", "moment e2"),
    "Spatial prismatic joint sliding along `axis`: 5 rows." + _COMMON,
)
"""`Prismatic3D(name, body_i, body_j, point=None, axis=None, normal=None,
point_i=None, point_j=None)`

Spatial prismatic joint sliding along `axis`: 5 rows.

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
Cylindrical = _joint(
    "Cylindrical",
    CylindricalConstraint,
    "cylindrical",
    ("transverse force e1", "transverse force e2", "bending moment e1", "bending moment e2"),
    "Cylindrical joint sliding along and turning about `axis`: 4 rows." + _COMMON,
)
"""`Cylindrical(name, body_i, body_j, point=None, axis=None, normal=None,
point_i=None, point_j=None)`

Cylindrical joint sliding along and turning about `axis`: 4 rows.

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
RevoluteDriver3D = _joint(
    "RevoluteDriver3D",
    RevoluteDriverConstraint3D,
    "revolute-driver-3d",
    ("driving torque",),
    "Prescribed rotation `motion` d(t) [rad] of body i relative to body j about "
    "`axis`, zero at the initial configuration: 1 row (pair it with a joint that "
    "holds the axis). `point` only places the reported anchor." + _COMMON,
    motion=True,
)
"""`RevoluteDriver3D(name, body_i, body_j, motion, point=None, axis=None, normal=None,
point_i=None, point_j=None)`

Prescribed rotation `motion` d(t) [rad] of body i relative to body j about `axis`, zero at the
initial configuration: 1 row (pair it with a joint that holds the axis). `point` only places the
reported anchor.

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""
TranslationalDriver3D = _joint(
    "TranslationalDriver3D",
    TranslationalDriverConstraint3D,
    "translational-driver-3d",
    ("driving force",),
    "Prescribed displacement `motion` d(t) [m] along `axis` (fixed on body j) of the "
    "point of body i relative to the point of body j: e₀ᵀ(P_i − P_j) = d(t), 1 row. "
    "With a global `point` the two points coincide initially, so d(0) must be 0; "
    "give `point_i`, `point_j` otherwise." + _COMMON,
    motion=True,
)
"""`TranslationalDriver3D(name, body_i, body_j, motion, point=None, axis=None, normal=None,
point_i=None, point_j=None)`

Prescribed displacement `motion` d(t) [m] along `axis` (fixed on body j) of the point of body i
relative to the point of body j: e₀ᵀ(P_i − P_j) = d(t), 1 row. With a global `point` the two points
coincide initially, so d(0) must be 0; give `point_i`, `point_j` otherwise.

**Arguments:**

- `name`: unique pair name; `body_i`, `body_j`: body names ("ground" for the frame).
- `point`: the joint point, global components at the initial configuration [m];
  or `point_i` and `point_j`, the joint point in each body's frame.
- `axis`: the joint axis e₀, global components at the initial configuration.
- `normal`: optional direction for e₁ (made perpendicular to e₀); by default e₁
  is the global axis least aligned with e₀. e₂ = e₀ × e₁.

Reaction components (−λ_k, acting on body i) are expressed in this joint frame.
"""


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
