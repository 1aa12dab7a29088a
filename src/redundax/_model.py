"""The Model (what a mechanism *is*) and the State (where it is)."""

import dataclasses
from typing import NamedTuple

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from ._bodies import AbstractBodies, MassFacts
from ._forces import AbstractForceElement
from ._pairs import AbstractHolonomic, AbstractPfaffian


class Loads(eqx.Module):
    """Constant global forces applied at body points, and torques on bodies
    (`torques`: shape `(nl,)` in the plane, `(nl, 3)` global components in space)."""

    bodies: Int[Array, " nl"]
    points: Float[Array, "nl dim"]
    forces: Float[Array, "nl dim"]
    torques: Float[Array, "nl ..."]


class Markers(eqx.Module):
    """Named body points whose global positions are reported (tracked points)."""

    bodies: Int[Array, " nm"]
    points: Float[Array, "nm dim"]
    names: tuple[str, ...] = eqx.field(static=True)


class Pair(NamedTuple):
    """A kinematic pair as the user named it, and its rows in C (0-based).

    `components` names the reaction component of each row: row k's multiplier
    λ_k contributes the generalised force −λ_k ∂Φ_k/∂q, which for the pairs of
    this library is one physical component (a force along, or a moment about, a
    named axis of the joint frame) of value −λ_k acting on the pair's first body.
    """

    name: str
    kind: str
    rows: tuple[int, ...]
    bodies: tuple[str, ...]
    components: tuple[str, ...] = ()

    def split_rows(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """`(force rows, moment rows)`: the pair's rows whose component is a force, and
        those whose component is a moment or a torque (by its label)."""
        labels = self.components or ("",) * len(self.rows)
        moment = [is_moment(label) for label in labels]
        return (
            tuple(r for r, m in zip(self.rows, moment, strict=True) if not m),
            tuple(r for r, m in zip(self.rows, moment, strict=True) if m),
        )


def is_moment(label: str) -> bool:
    """Whether the reaction component called `label` is a moment or a torque [N m]
    (else a force [N])."""
    return "moment" in label or "torque" in label


class Model(eqx.Module):
    """A mechanism: bodies, constraints stacked by type, loads, force elements and
    tracked points.

    Build one with [`redundax.Mechanism.build`][]; change a parameter with
    `eqx.tree_at` (e.g. a spring's stiffness, `lambda m: m.forces[0].stiffness`).
    Rows of C are ordered: holonomic pairs in declaration order, then the bodies'
    internal rows (the six rigid-body constraints of each spatial body in natural
    coordinates, `n_internal` rows, not a kinematic pair and never reported as a
    reaction), then Pfaffian pairs in declaration order.

    `forces` holds the force elements stacked by type (spring-dampers, bushings,
    time-dependent loads, user forces; `_forces.py`), groups in order of first
    appearance; `force_index[k]` is `(group, member)` of the k-th element as
    declared. `mass_facts`: what M is like (`MassFacts` (`redundax._bodies`)),
    taken when the model was built; the static facts the solver paths are chosen
    from.
    """

    bodies: AbstractBodies
    holonomic: tuple[AbstractHolonomic, ...]
    pfaffian: tuple[AbstractPfaffian, ...]
    gravity: Float[Array, " dim"]
    loads: Loads
    markers: Markers
    pairs: tuple[Pair, ...] = eqx.field(static=True)
    n_holonomic: int = eqx.field(static=True)
    n_pfaffian: int = eqx.field(static=True)
    n_internal: int = eqx.field(static=True, default=0)
    forces: tuple[AbstractForceElement, ...] = ()
    force_index: tuple[tuple[int, int], ...] = eqx.field(static=True, default=())
    mass_facts: MassFacts | None = eqx.field(static=True, default=None)

    @property
    def dim(self) -> int:
        """2 for a planar model, 3 for a spatial one."""
        return self.bodies.dim

    @property
    def internal_rows(self) -> tuple[int, ...]:
        """Rows (0-based) of the bodies' internal constraints."""
        start = self.n_holonomic - self.n_internal
        return tuple(range(start, self.n_holonomic))

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


def unkeyed(model: Model) -> Model:
    """`model` without its `mass_facts`, for a jitted program that does not read
    them (an analysis, the decisions of `decide`): models that differ only in their
    masses then share that program instead of tracing it again. (A retrace of the
    same program in one process reads it back from the persistent compilation
    cache, and with jaxlib 0.9.2 such a read of an entry this process wrote has
    ended in a segmentation fault: tests/test_generated.py, 2026-11-28.)"""
    return model if model.mass_facts is None else dataclasses.replace(model, mass_facts=None)
