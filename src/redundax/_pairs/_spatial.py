"""Spatial joints between bodies in natural coordinates (Kraus, Winckler & Bock 2001).

Joints are built, as in the seed paper §5, from point coincidence (3 linear rows)
and parallelism a ∥ b expressed with two body-fixed vectors h₁ ⊥ h₂ both
perpendicular to b: aᵀh₁ = aᵀh₂ = 0. This pair has a rank-2 Jacobian, unlike the
three rank-2 rows of a × b = 0 (García de Jalón & Bayo).

The members follow the conventions of `_base.py`: `bodies` indexes the stacked
coordinates with the ground appended as row `nb` (its coordinates are
[`SpatialBodies.ground_coordinates`][redundax.internal.SpatialBodies.ground_coordinates]), `rows`
are the member's rows in Φ, and
`qb` has shape `(2, 12)`. The natural coordinates themselves are in `_bodies.py`.
"""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from .._bodies import axes, point, rigid_body_residual
from .._motion import AbstractMotion
from .._types import Scalar
from ._base import AbstractHolonomic


def perpendicular_pair(axis: Float[ArrayLike, " 3"]) -> Float[ArrayLike, "2 3"]:
    """Two orthonormal vectors h₁, h₂ perpendicular to `axis` (any non-zero length).

    h₁ is the coordinate axis least aligned with `axis`, made perpendicular by
    Gram–Schmidt; h₂ = â × h₁. The choice of coordinate axis is discrete (no
    gradient flows through it).
    """
    xp = np if isinstance(axis, np.ndarray) else jnp  # NumPy while a model is built
    a = axis / xp.linalg.norm(axis)
    e = xp.eye(3)[xp.argmin(xp.abs(a))]
    h1 = e - (e @ a) * a
    h1 = h1 / xp.linalg.norm(h1)
    return xp.stack([h1, xp.cross(a, h1)])


# ---------------------------------------------------------------------------
# Joints. Every joint carries its joint frame twice: `frame_i` and `frame_j`
# hold the frame's axes e₀, e₁, e₂ (as rows, right-handed) in body-i and body-j
# components; at assembly X_i frame_iᵀ = X_j frame_jᵀ. The rows are written in
# that frame, so that each row's multiplier is one physical reaction component:
# −λ_k is the force along, or the moment about, the named axis that the joint
# exerts on body i (on the constraint manifold). Position rows use the axes
# fixed on body j; angular rows use body-i axes against body-j axes.


def _separation(member, qb) -> Float[Array, " 3"]:
    """d = r_i + X_i s_i − r_j − X_j s_j (global components)."""
    return point(qb[0], member.s_i) - point(qb[1], member.s_j)


def _axes(p, frame) -> Float[Array, "3 3"]:
    """The joint axes as columns, global components."""
    return axes(p) @ frame.T


def _anchors(member, qb) -> Float[Array, "2 3"]:
    return jnp.stack([point(qb[0], member.s_i), point(qb[1], member.s_j)])


def _axis_rows(member, qb) -> Float[Array, " 2"]:
    """e₀ of body i kept perpendicular to e₁, e₂ of body j: [−a·e₂, a·e₁], whose
    multipliers are the moments about e₁ and e₂ (a × e₂ = −e₁, a × e₁ = e₂)."""
    a = _axes(qb[0], member.frame_i)[:, 0]
    E = _axes(qb[1], member.frame_j)
    return jnp.stack([-(a @ E[:, 2]), a @ E[:, 1]])


def _orientation_rows(member, qb) -> Float[Array, " 3"]:
    """A = X_i frame_iᵀ locked to B = X_j frame_jᵀ by [a₁ᵀb₂, a₂ᵀb₀, a₀ᵀb₁]: to first
    order in a rotation δθ of body i these change by δθ · [b₀, b₁, b₂], so the
    multipliers are the moments about e₀, e₁, e₂ (Jacobian of rank 3; the zero set
    also holds isolated flipped orientations, which continuity avoids)."""
    A = _axes(qb[0], member.frame_i)
    B = _axes(qb[1], member.frame_j)
    return jnp.stack([A[:, 1] @ B[:, 2], A[:, 2] @ B[:, 0], A[:, 0] @ B[:, 1]])


class AbstractSpatialJoint(AbstractHolonomic):
    """A joint between two spatial bodies at the points `s_i`, `s_j`, with its joint
    frame given in both bodies' components (`frame_i`, `frame_j`)."""

    bodies: eqx.AbstractVar[Int[Array, " 2"]]
    s_i: eqx.AbstractVar[Float[Array, " 3"]]
    s_j: eqx.AbstractVar[Float[Array, " 3"]]
    frame_i: eqx.AbstractVar[Float[Array, "3 3"]]
    frame_j: eqx.AbstractVar[Float[Array, "3 3"]]

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class RigidBodyConstraint(AbstractHolonomic):
    """The six rigid-body constraints of one body in natural coordinates
    (`rigid_body_residual`); internal rows, not a kinematic pair."""

    bodies: Int[Array, " 1"]
    rows: Int[Array, " 6"]

    def residual(self, qb: Float[Array, "1 12"], t: Scalar) -> Float[Array, " 6"]:
        del t
        return rigid_body_residual(qb[0])

    def anchor(self, qb: Float[Array, "1 12"]) -> Float[Array, "1 3"]:
        return qb[:, :3]


class SphericalConstraint(AbstractSpatialJoint):
    """Point coincidence, 3 rows: e_kᵀ d = 0 along the joint axes fixed on body j.

    Components: forces along e₀, e₁, e₂.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 3"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 3"]:
        del t
        return _separation(self, qb) @ _axes(qb[1], self.frame_j)


class RevoluteConstraint3D(AbstractSpatialJoint):
    """Revolute joint about e₀: point coincidence and the axis of body i kept
    perpendicular to e₁, e₂ of body j — 3 + 2 = 5 rows of full rank (seed 004 §5:
    parallelism through two perpendicular body-fixed vectors).

    Components: axial force (e₀), transverse forces (e₁, e₂), bending moments
    (about e₁, e₂).
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 5"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 5"]:
        del t
        d = _separation(self, qb) @ _axes(qb[1], self.frame_j)
        return jnp.concatenate([d, _axis_rows(self, qb)])


class UniversalConstraint(AbstractSpatialJoint):
    """Universal (Hooke) joint: point coincidence and the pin e₀ of body i kept
    perpendicular to the pin e₁ of body j — 3 + 1 = 4 rows.

    Components: forces along e₀, e₁, e₂ (body j), torque about e₂ = e₀ × e₁.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 4"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 4"]:
        del t
        d = _separation(self, qb) @ _axes(qb[1], self.frame_j)
        dot = _axes(qb[0], self.frame_i)[:, 0] @ _axes(qb[1], self.frame_j)[:, 1]
        return jnp.concatenate([d, dot[None]])


class WeldConstraint3D(AbstractSpatialJoint):
    """Weld: point coincidence and a fixed relative orientation, 3 + 3 = 6 rows.

    Components: forces along e₀, e₁, e₂ and moments about e₀, e₁, e₂.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 6"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 6"]:
        del t
        d = _separation(self, qb) @ _axes(qb[1], self.frame_j)
        return jnp.concatenate([d, _orientation_rows(self, qb)])


class PrismaticConstraint3D(AbstractSpatialJoint):
    """Prismatic joint along e₀: no separation across e₀ and no relative
    rotation, 2 + 3 = 5 rows.

    Components: transverse forces (e₁, e₂), moments about e₀, e₁, e₂.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 5"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 5"]:
        del t
        d = _separation(self, qb) @ _axes(qb[1], self.frame_j)[:, 1:]
        return jnp.concatenate([d, _orientation_rows(self, qb)])


class CylindricalConstraint(AbstractSpatialJoint):
    """Cylindrical joint along and about e₀: 2 + 2 = 4 rows.

    Components: transverse forces (e₁, e₂), bending moments (about e₁, e₂).
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 4"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 4"]:
        del t
        d = _separation(self, qb) @ _axes(qb[1], self.frame_j)[:, 1:]
        return jnp.concatenate([d, _axis_rows(self, qb)])


class RevoluteDriverConstraint3D(AbstractSpatialJoint):
    """Prescribed rotation d(t) of body i relative to body j about e₀ (1 row):
    with u = X_i (frame_i e₁), u ᵀ X_j (e₂ cos d − e₁ sin d) = sin(θ − d), θ the
    angle from e₁ of body j to e₁ of body i about e₀ (zero at assembly).

    Component: driving torque about e₀.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 1"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]
    motion: AbstractMotion
    rheonomic: ClassVar[bool] = True

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 1"]:
        u = _axes(qb[0], self.frame_i)[:, 1]
        E = _axes(qb[1], self.frame_j)
        d = self.motion(t)
        return (u @ (E[:, 2] * jnp.cos(d) - E[:, 1] * jnp.sin(d)))[None]


class TranslationalDriverConstraint3D(AbstractSpatialJoint):
    """Prescribed displacement e₀ᵀ d − d(t) = 0 of the point of body i relative to
    the point of body j along e₀ fixed on body j (1 row).

    Component: driving force along e₀.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 1"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]
    motion: AbstractMotion
    rheonomic: ClassVar[bool] = True

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 1"]:
        e0 = _axes(qb[1], self.frame_j)[:, 0]
        return (_separation(self, qb) @ e0 - self.motion(t))[None]


def joint_frame(axis: Float[ArrayLike, " 3"] | None, normal: Float[ArrayLike, " 3"] | None = None):
    """A right-handed orthonormal joint frame (rows e₀, e₁, e₂, global components).

    e₀ along `axis`; e₁ along the part of `normal` perpendicular to it, or, without
    `normal`, from `perpendicular_pair`; e₂ = e₀ × e₁. Without an axis, the
    global axes.
    """
    xp = np if isinstance(axis, np.ndarray) or axis is None else jnp  # NumPy: while building
    if axis is None:
        return xp.eye(3)
    a = axis / xp.linalg.norm(axis)
    if normal is None:
        h = perpendicular_pair(a)
        return xp.stack([a, h[0], h[1]])
    h1 = normal - (normal @ a) * a
    h1 = h1 / xp.linalg.norm(h1)
    return xp.stack([a, h1, xp.cross(a, h1)])
