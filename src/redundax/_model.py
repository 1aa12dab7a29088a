"""The Model (what a mechanism *is*) and the State (where it is)."""

from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from ._constraints import AbstractHolonomic, AbstractPfaffian


class PlanarBodies(eqx.Module):
    """Planar rigid bodies in absolute coordinates q_i = [x_i, y_i, φ_i].

    The body frame sits at the centre of mass. `mass` in kg, `inertia` (central,
    about the normal axis) in kg m².
    """

    mass: Float[Array, " nb"]
    inertia: Float[Array, " nb"]
    names: tuple[str, ...] = eqx.field(static=True)

    @property
    def dof(self) -> int:
        """Coordinates per body."""
        return 3

    @property
    def count(self) -> int:
        return len(self.names)

    def mass_blocks(self) -> Float[Array, "nb 3 3"]:
        """Per-body mass matrices diag(m, m, J)."""
        return jnp.einsum(
            "bk,kl->bkl", jnp.stack([self.mass, self.mass, self.inertia], 1), jnp.eye(3)
        )

    def ground_coordinates(self) -> Float[Array, " 3"]:
        """Coordinates of the ground frame (the global frame)."""
        return jnp.zeros(3)


class Loads(eqx.Module):
    """Constant global forces applied at body points, and torques on bodies."""

    bodies: Int[Array, " nl"]
    points: Float[Array, "nl 2"]
    forces: Float[Array, "nl 2"]
    torques: Float[Array, " nl"]


class Markers(eqx.Module):
    """Named body points whose global positions are reported (tracked points)."""

    bodies: Int[Array, " nm"]
    points: Float[Array, "nm 2"]
    names: tuple[str, ...] = eqx.field(static=True)


class Pair(NamedTuple):
    """A kinematic pair as the user named it, and its rows in C (0-based)."""

    name: str
    kind: str
    rows: tuple[int, ...]
    bodies: tuple[str, ...]


class Model(eqx.Module):
    """A mechanism: bodies, constraints stacked by type, loads and tracked points.

    Build one with [`redundax.Mechanism.build`][]; change a parameter with
    `eqx.tree_at`. Rows of C are ordered: holonomic pairs in declaration order,
    then Pfaffian pairs in declaration order.
    """

    bodies: PlanarBodies
    holonomic: tuple[AbstractHolonomic, ...]
    pfaffian: tuple[AbstractPfaffian, ...]
    gravity: Float[Array, " 2"]
    loads: Loads
    markers: Markers
    pairs: tuple[Pair, ...] = eqx.field(static=True)
    n_holonomic: int = eqx.field(static=True)
    n_pfaffian: int = eqx.field(static=True)

    @property
    def n_coordinates(self) -> int:
        return self.bodies.count * self.bodies.dof

    @property
    def n_constraints(self) -> int:
        return self.n_holonomic + self.n_pfaffian

    @property
    def pair_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.pairs)

    def pair(self, name: str) -> Pair:
        """The pair called `name`; raises `KeyError` naming the known pairs."""
        for p in self.pairs:
            if p.name == name:
                return p
        raise KeyError(f"no pair named {name!r}; known pairs: {', '.join(self.pair_names)}")

    def body_index(self, name: str) -> int:
        """Index of the body called `name` ("ground" is `nb`)."""
        if name == "ground":
            return self.bodies.count
        try:
            return self.bodies.names.index(name)
        except ValueError:
            raise KeyError(
                f"no body named {name!r}; known bodies: {', '.join(self.bodies.names)}"
            ) from None


class State(eqx.Module):
    """Time `t` [s], coordinates `q` [m, rad] and velocities `qd` [m/s, rad/s]."""

    t: Float[Array, ""]
    q: Float[Array, " nq"]
    qd: Float[Array, " nq"]

    def __init__(
        self, t: Float[ArrayLike, ""], q: Float[ArrayLike, " nq"], qd: Float[ArrayLike, " nq"]
    ):
        self.t = jnp.asarray(t, dtype=float)
        self.q = jnp.asarray(q, dtype=float)
        self.qd = jnp.asarray(qd, dtype=float)
