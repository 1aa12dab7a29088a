"""Constraint members, stacked by type (STYLE rule 4).

Each class below is *one* kind of kinematic pair. A model stores every kind as a
single Module whose array leaves carry a leading axis over the members of that
kind, and evaluates it with `jax.vmap`. A member declares only its local residual;
Φ_q, Ψ, Φ_t and Γ come from autodiff of that residual in `_assembly.py`.

Conventions shared by all members:

- `bodies`: int array of indices into the stacked coordinates of the moving
  bodies, with the ground appended as the last row (index `nb`).
- `rows`: int array of the member's row indices in Φ (holonomic) or Ψ (Pfaffian),
  0-based, in the order the user declared the pairs.
- `qb`: the coordinates of the member's bodies, shape `(len(bodies), 3)` for
  planar bodies ([x, y, φ] each), `(len(bodies), 12)` for spatial bodies in
  natural coordinates (`_natural.py`).
"""

import abc
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._math import OMEGA, rot2
from ._motion import AbstractMotion
from ._types import Scalar


class AbstractHolonomic(eqx.Module):
    """A holonomic (possibly rheonomic) pair: Φ_X(q, t) = 0."""

    bodies: eqx.AbstractVar[Int[Array, " nbp"]]
    rows: eqx.AbstractVar[Int[Array, " size"]]

    @abc.abstractmethod
    def residual(self, qb: Float[Array, "nbp dof"], t: Scalar) -> Float[Array, " size"]:
        raise NotImplementedError

    @abc.abstractmethod
    def anchor(self, qb: Float[Array, "nbp dof"]) -> Float[Array, "nbp dim"]:
        """Global point on each body about which the pair's reaction moment is
        reported (the joint point)."""
        raise NotImplementedError


class AbstractPfaffian(eqx.Module):
    """A linear nonholonomic pair: Ψ_X(q) q̇ = 0, given as the velocity residual."""

    bodies: eqx.AbstractVar[Int[Array, " nbp"]]
    rows: eqx.AbstractVar[Int[Array, " size"]]

    @abc.abstractmethod
    def velocity_residual(
        self, qb: Float[Array, "nbp dof"], qdb: Float[Array, "nbp dof"]
    ) -> Float[Array, " size"]:
        raise NotImplementedError

    @abc.abstractmethod
    def anchor(self, qb: Float[Array, "nbp dof"]) -> Float[Array, "nbp dim"]:
        """Global point on each body about which the reaction moment is reported
        (the contact point)."""
        raise NotImplementedError


def _point(q: Float[Array, " 3"], s: Float[Array, " 2"]) -> Float[Array, " 2"]:
    """Global position r + R(φ) s of body point s."""
    return q[:2] + rot2(q[2]) @ s


def _origins(qb: Float[Array, "nbp dof"]) -> Float[Array, "nbp dim"]:
    """Body-frame origins: [x, y] of planar bodies (3 coordinates), r of spatial
    bodies in natural coordinates (12)."""
    return qb[:, : 2 if qb.shape[1] == 3 else 3]


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

    def residual(self, qb, t):
        return (qb[0, 2] - qb[1, 2] - self.motion(t))[None]

    def anchor(self, qb):
        return _origins(qb)


class CustomHolonomicConstraint(AbstractHolonomic):
    """A user residual `fn(params, qb, t) -> (size,)` over the listed bodies."""

    bodies: Int[Array, " nbp"]
    rows: Int[Array, " size"]
    fn: Callable[..., Any] = eqx.field(static=True)
    params: Any

    def residual(self, qb, t):
        return jnp.asarray(self.fn(self.params, qb, t), dtype=float).reshape(self.rows.shape)

    def anchor(self, qb):
        return _origins(qb)


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


class CustomPfaffianConstraint(AbstractPfaffian):
    """A user velocity residual `fn(params, qb, qdb) -> (size,)`, linear in `qdb`."""

    bodies: Int[Array, " nbp"]
    rows: Int[Array, " size"]
    fn: Callable[..., Any] = eqx.field(static=True)
    params: Any

    def velocity_residual(self, qb, qdb):
        return jnp.asarray(self.fn(self.params, qb, qdb), dtype=float).reshape(self.rows.shape)

    def anchor(self, qb):
        return _origins(qb)
