"""Planar kinematic pairs between bodies in absolute coordinates [x, y, φ].

Members follow the conventions of `_base.py`; `qb` has shape `(len(bodies), 3)`.
"""

from typing import ClassVar

import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from .._math import OMEGA, rot2
from .._motion import AbstractMotion
from ._base import AbstractHolonomic, AbstractPfaffian, origins


def _point(q: Float[Array, " 3"], s: Float[Array, " 2"]) -> Float[Array, " 2"]:
    """Global position r + R(φ) s of body point s."""
    return q[:2] + rot2(q[2]) @ s


class RevoluteConstraint(AbstractHolonomic):
    """r_i + R_i s_i − r_j − R_j s_j = 0 (2 rows: global x, y)."""

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 2"]
    s_i: Float[Array, " 2"]
    s_j: Float[Array, " 2"]

    def residual(self, qb, t):
        del t
        return _point(qb[0], self.s_i) - _point(qb[1], self.s_j)

    def anchor(self, qb):
        return jnp.stack([_point(qb[0], self.s_i), _point(qb[1], self.s_j)])


class TranslationalConstraint(AbstractHolonomic):
    """(r_j + R_j s_j − r_i − R_i s_i)ᵀ R_j v = 0 and φ_i − φ_j − ψ = 0.

    `normal` (v) is a body-j vector perpendicular to the sliding axis.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 2"]
    s_i: Float[Array, " 2"]
    s_j: Float[Array, " 2"]
    normal: Float[Array, " 2"]
    angle: Float[Array, ""]

    def residual(self, qb, t):
        del t
        d = _point(qb[1], self.s_j) - _point(qb[0], self.s_i)
        return jnp.stack([d @ (rot2(qb[1, 2]) @ self.normal), qb[0, 2] - qb[1, 2] - self.angle])

    def anchor(self, qb):
        return jnp.stack([_point(qb[0], self.s_i), _point(qb[1], self.s_j)])


class WeldConstraint(AbstractHolonomic):
    """Point coincidence and a fixed relative angle (3 rows: x, y, angle)."""

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 3"]
    s_i: Float[Array, " 2"]
    s_j: Float[Array, " 2"]
    angle: Float[Array, ""]

    def residual(self, qb, t):
        del t
        dr = _point(qb[0], self.s_i) - _point(qb[1], self.s_j)
        return jnp.concatenate([dr, (qb[0, 2] - qb[1, 2] - self.angle)[None]])

    def anchor(self, qb):
        return jnp.stack([_point(qb[0], self.s_i), _point(qb[1], self.s_j)])


class TranslationalDriverConstraint(AbstractHolonomic):
    """(r_j + R_j s_j − r_i − R_i s_i)ᵀ R_j u − d(t) = 0 (1 row)."""

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 1"]
    s_i: Float[Array, " 2"]
    s_j: Float[Array, " 2"]
    direction: Float[Array, " 2"]
    motion: AbstractMotion
    rheonomic: ClassVar[bool] = True

    def residual(self, qb, t):
        d = _point(qb[1], self.s_j) - _point(qb[0], self.s_i)
        return (d @ (rot2(qb[1, 2]) @ self.direction) - self.motion(t))[None]

    def anchor(self, qb):
        return jnp.stack([_point(qb[0], self.s_i), _point(qb[1], self.s_j)])


class RevoluteDriverConstraint(AbstractHolonomic):
    """φ_i − φ_j − d(t) = 0 (1 row)."""

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 1"]
    motion: AbstractMotion
    rheonomic: ClassVar[bool] = True

    def residual(self, qb, t):
        return (qb[0, 2] - qb[1, 2] - self.motion(t))[None]

    def anchor(self, qb):
        return origins(qb)


class KnifeEdgeConstraint(AbstractPfaffian):
    """(R_i n)ᵀ (ṙ_i + Ω R_i s φ̇_i) = 0: no velocity across the edge at contact point s.

    Wojtyra & Frączek 2013, Eq. (30).
    """

    bodies: Int[Array, " 1"]
    rows: Int[Array, " 1"]
    point: Float[Array, " 2"]
    normal: Float[Array, " 2"]

    def velocity_residual(self, qb, qdb):
        R = rot2(qb[0, 2])
        v_contact = qdb[0, :2] + OMEGA @ R @ self.point * qdb[0, 2]
        return ((R @ self.normal) @ v_contact)[None]

    def anchor(self, qb):
        return _point(qb[0], self.point)[None]
