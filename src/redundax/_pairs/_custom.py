"""Pairs given by a user residual, for planar and spatial bodies alike.

Members follow the conventions of `_base.py`; `qb` has shape `(len(bodies), dof)`
with `dof` the coordinates per body of the model (3 planar, 12 spatial).
"""

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Int

from ._base import AbstractHolonomic, AbstractPfaffian, origins


class CustomHolonomicConstraint(AbstractHolonomic):
    """A user residual `fn(params, qb, t) -> (size,)` over the listed bodies."""

    bodies: Int[Array, " nbp"]
    rows: Int[Array, " size"]
    fn: Callable[..., Any] = eqx.field(static=True)
    params: Any

    def residual(self, qb, t):
        return jnp.asarray(self.fn(self.params, qb, t), dtype=float).reshape(self.rows.shape)

    def anchor(self, qb):
        return origins(qb)


class CustomPfaffianConstraint(AbstractPfaffian):
    """A user velocity residual `fn(params, qb, qdb) -> (size,)`, linear in `qdb`."""

    bodies: Int[Array, " nbp"]
    rows: Int[Array, " size"]
    fn: Callable[..., Any] = eqx.field(static=True)
    params: Any

    def velocity_residual(self, qb, qdb):
        return jnp.asarray(self.fn(self.params, qb, qdb), dtype=float).reshape(self.rows.shape)

    def anchor(self, qb):
        return origins(qb)
