"""The two interfaces of a constraint member, stacked by type (STYLE rule 4).

Each concrete class in this package is *one* kind of kinematic pair. A model
stores every kind as a single Module whose array leaves carry a leading axis over
the members of that kind, and evaluates it with `jax.vmap`. A member declares only
its local residual; Φ_q, Ψ, Φ_t and Γ come from autodiff of that residual in
`_assembly.py`.

Conventions shared by all members:

- `bodies`: int array of indices into the stacked coordinates of the moving
  bodies, with the ground appended as the last row (index `nb`).
- `rows`: int array of the member's row indices in Φ (holonomic) or Ψ (Pfaffian),
  0-based, in the order the user declared the pairs.
- `qb`: the coordinates of the member's bodies, shape `(len(bodies), 3)` for
  planar bodies ([x, y, φ] each), `(len(bodies), 12)` for spatial bodies in
  natural coordinates (`_bodies.py`).
"""

import abc
from typing import ClassVar

import equinox as eqx
from jaxtyping import Array, Float, Int

from .._types import Scalar


class AbstractHolonomic(eqx.Module):
    """A holonomic (possibly rheonomic) pair: Φ_X(q, t) = 0.

    `rheonomic` is True for the driving constraints, whose residual depends on
    time through a prescribed `motion` field, and False otherwise (a custom
    residual may still read `t`; it is not flagged).
    """

    bodies: eqx.AbstractVar[Int[Array, " nbp"]]
    rows: eqx.AbstractVar[Int[Array, " size"]]
    rheonomic: ClassVar[bool] = False

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


def origins(qb: Float[Array, "nbp dof"]) -> Float[Array, "nbp dim"]:
    """Body-frame origins: [x, y] of planar bodies (3 coordinates), r of spatial
    bodies in natural coordinates (12)."""
    return qb[:, : 2 if qb.shape[1] == 3 else 3]
