"""The Model (what a mechanism *is*) and the State (where it is)."""

import abc
from typing import ClassVar, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from ._constraints import AbstractHolonomic, AbstractPfaffian
from ._math import OMEGA, rot2


class AbstractBodies(eqx.Module):
    """The moving bodies of a model, in some choice of coordinates.

    A subclass fixes the coordinates of one body (`dof` of them), the spatial
    dimension `dim` (2 or 3), and the purely geometric maps that the assembly,
    the loads, the markers and the reactions need. Every map acts on the
    coordinates `p` of *one* body; body parameters (mass, centre of mass) come
    from the fields, so per-body calls are made with `jax.vmap` over the module.
    """

    mass: eqx.AbstractVar[Float[Array, " nb"]]
    names: eqx.AbstractVar[tuple[str, ...]]
    dim: eqx.AbstractClassVar[int]
    dof: eqx.AbstractClassVar[int]
    internal_rows: eqx.AbstractClassVar[int]

    @property
    def count(self) -> int:
        return len(self.names)

    @property
    def wrench_size(self) -> int:
        """Force and moment components: 3 in the plane, 6 in space."""
        return 3 if self.dim == 2 else 6

    @abc.abstractmethod
    def mass_blocks(self) -> Float[Array, "nb dof dof"]:
        """Per-body (constant) mass matrices."""
        raise NotImplementedError

    @abc.abstractmethod
    def ground_coordinates(self) -> Float[Array, " dof"]:
        """Coordinates of the ground frame (the global frame)."""
        raise NotImplementedError

    @abc.abstractmethod
    def centre_of_mass(self) -> Float[Array, "nb dim"]:
        """Centres of mass in body-frame components [m]."""
        raise NotImplementedError

    @abc.abstractmethod
    def point(self, p: Float[Array, " dof"], s: Float[Array, " dim"]) -> Float[Array, " dim"]:
        """Global position of the body point `s` (body-frame components) [m]."""
        raise NotImplementedError

    @abc.abstractmethod
    def rotation(self, p: Float[Array, " dof"]) -> Float[Array, "dim dim"]:
        """Rotation matrix from body-frame to global components."""
        raise NotImplementedError

    @abc.abstractmethod
    def angular_velocity(
        self, p: Float[Array, " dof"], pd: Float[Array, " dof"]
    ) -> Float[Array, " w"]:
        """Angular velocity [rad/s]: shape `(1,)` in the plane, `(3,)` (global) in space."""
        raise NotImplementedError

    @abc.abstractmethod
    def rigid_velocity(
        self,
        p: Float[Array, " dof"],
        at: Float[Array, " dim"],
        velocity: Float[Array, " dim"],
        omega: Float[Array, " w"],
    ) -> Float[Array, " dof"]:
        """Coordinate velocity ṗ of the body moving rigidly so that its point at the
        global position `at` has `velocity` and the body has angular velocity `omega`."""
        raise NotImplementedError

    @abc.abstractmethod
    def internal_residual(self, p: Float[Array, " dof"]) -> Float[Array, " k"]:
        """Constraints the coordinates of one body must satisfy by themselves
        (none for absolute planar coordinates; six for natural coordinates)."""
        raise NotImplementedError

    def wrench_basis(
        self, p: Float[Array, " dof"], c: Float[Array, " dim"]
    ) -> Float[Array, "dof ws"]:
        """T with ṗ = T [v_c; ω] for the body point `c` (body frame): a generalised
        force f on the body is the wrench Tᵀ f = [force; moment about c]."""
        at = self.point(p, c)
        nw = self.wrench_size - self.dim

        def velocity(x):
            return self.rigid_velocity(p, at, x[: self.dim], x[self.dim :])

        return jax.jacfwd(velocity)(jnp.zeros(self.dim + nw))


class PlanarBodies(AbstractBodies):
    """Planar rigid bodies in absolute coordinates q_i = [x_i, y_i, φ_i].

    The body frame sits at the centre of mass. `mass` in kg, `inertia` (central,
    about the normal axis) in kg m².
    """

    mass: Float[Array, " nb"]
    inertia: Float[Array, " nb"]
    names: tuple[str, ...] = eqx.field(static=True)

    dim: ClassVar[int] = 2
    dof: ClassVar[int] = 3
    internal_rows: ClassVar[int] = 0

    def mass_blocks(self) -> Float[Array, "nb 3 3"]:
        """Per-body mass matrices diag(m, m, J)."""
        return jnp.einsum(
            "bk,kl->bkl", jnp.stack([self.mass, self.mass, self.inertia], 1), jnp.eye(3)
        )

    def ground_coordinates(self) -> Float[Array, " 3"]:
        return jnp.zeros(3)

    def centre_of_mass(self) -> Float[Array, "nb 2"]:
        return jnp.zeros((self.count, 2))

    def point(self, p, s):
        return p[:2] + rot2(p[2]) @ s

    def rotation(self, p):
        return rot2(p[2])

    def angular_velocity(self, p, pd):
        return pd[2:]

    def rigid_velocity(self, p, at, velocity, omega):
        return jnp.concatenate([velocity + omega[0] * (OMEGA @ (p[:2] - at)), omega])

    def internal_residual(self, p):
        return jnp.zeros(0)


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


class Model(eqx.Module):
    """A mechanism: bodies, constraints stacked by type, loads and tracked points.

    Build one with [`redundax.Mechanism.build`][]; change a parameter with
    `eqx.tree_at`. Rows of C are ordered: holonomic pairs in declaration order,
    then the bodies' internal rows (the six rigid-body constraints of each spatial
    body in natural coordinates, `n_internal` rows, not a kinematic pair and never
    reported as a reaction), then Pfaffian pairs in declaration order.
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
