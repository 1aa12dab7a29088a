"""The moving bodies of a model, one class per choice of coordinates.

- [`AbstractBodies`][redundax.internal.AbstractBodies]: the interface (mass, coordinates per body,
  geometric maps).
- [`PlanarBodies`][redundax.internal.PlanarBodies]: planar bodies in absolute coordinates [x, y, φ].
- [`SpatialBodies`][redundax.internal.SpatialBodies]: spatial bodies in natural coordinates (Kraus,
  Winckler & Bock 2001), with the natural-coordinate maps they use.

Natural coordinates. A body's dynamic variables are p = [r, u, v, w] ∈ R¹²: the
global position r of the body-frame origin and the body frame's unit axes u, v, w
in global components, so that X = [u v w] is the rotation matrix from body to
global components. A body point r̄ (body components) sits at

    r + X r̄ = C_r̄ p,    C_r̄ = [I₃, r̄₁ I₃, r̄₂ I₃, r̄₃ I₃]   (Kraus et al. 2001, Eq. (3))

which is *linear* in p with a constant matrix. Hence the mass matrix is constant
(no Coriolis or centrifugal terms), and the price is six rigid-body constraints
per body (unit, mutually orthogonal axes), each a polynomial of degree 2. The
joints between such bodies are in `joints/_spatial.py`.
"""

import abc
import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ._math import OMEGA, rot2
from ._precision import precise

MASS_DEFINITE_RTOL = precise(1e-12, 1e-6)
"""A body's block of M is taken as singular when its smallest eigenvalue is below
this fraction of its largest (a lamina's is zero up to round-off; a plate 1 mm thick
and 1 m wide is at about 1e-7)."""


MASS_PIVOTS_MAX_CONDITION = 1e4
"""Largest condition number of M (over every moving body's block: anisotropic
inertia and the ratio of the bodies' masses both count) for which the partitioning
tests its pivots on C M⁻¹ Cᵀ itself (`pivots="mass"`, as Kraus et al.). In the M⁻¹
metric a row's independent part can look smaller than in the coordinates' by up to
M's condition number κ, so with κ above 1 / `PIVOT_RTOL` independent rows are taken
for dependent ones and the other way round. Measured on Bricard's linkage with
slender rods (q̈ against the pivoted-QR path at the initial state): rods 30 / 10 / 3
/ 1 mm thick, κ = 1.3e4 / 1.2e5 / 1.3e6 / 1.2e7: "mass" keeps 59 / 60 / 60 / 54 rows
where C has rank 59, q̈ exact to 1e-15 / 1e-15 / wrong by a factor 4.8 / 5.4;
"coordinates" keeps 59 rows and is exact to 2e-15 in all four. Standard models are
below the limit (Bricard 1.2e3, the 6-bar 9.6e3, IFToMM A02's spatial chain 1.2e2)."""


@dataclasses.dataclass(frozen=True)
class MassFacts:
    """What a model's mass matrix is like, taken on the host when the model is built
    ([`Mechanism.build`][redundax.Mechanism.build]) and static from then on: the
    solver paths of a run are chosen from these facts (and the
    [`Structure`][redundax.Structure]), never from whether the masses are concrete,
    so an eager run, one under `jax.jit`, a `jax.vmap` over masses and a gradient
    with respect to them run the same program. A variant whose masses a sweep or
    `eqx.tree_at` changes keeps its model's facts; whether the paths they chose
    still suit its own masses is checked per variant
    ([`path_accurate`][redundax.methods.path_accurate]).

    - `definite`: per body, whether its block of M is positive definite (smallest
      eigenvalue above `MASS_DEFINITE_RTOL` times the largest; not so for a spatial
      lamina, I_z = I_x + I_y, in natural coordinates).
    - `conditioned`: whether M's condition number over every body's block
      (anisotropic inertia and the ratio of the bodies' masses both count) is at
      most `MASS_PIVOTS_MAX_CONDITION` (False where a block is singular).

    Decisions only, no numbers: models of the same bodies and pairs with other
    masses (a family of generated mechanisms, a design rebuilt with new inertias)
    have equal facts unless a decision differs, so their jitted programs are
    shared (a static float would retrace every program for every model).
    """

    definite: tuple[bool, ...]
    conditioned: bool

    @property
    def regular(self) -> bool:
        """Whether every body's block of M is positive definite (M⁻¹ exists)."""
        return all(self.definite)


def mass_facts(bodies: "AbstractBodies") -> MassFacts:
    """The `MassFacts` of `bodies`, from their (concrete) parameters, in NumPy:
    no XLA program is compiled."""
    eig = np.sort(bodies.host_mass_spectra(), axis=1)
    low, high = eig[:, 0], eig[:, -1]
    definite = tuple(bool(x) for x in low > MASS_DEFINITE_RTOL * high)
    smallest, largest = float(np.min(low, initial=np.inf)), float(np.max(high, initial=0.0))
    conditioned = eig.size == 0 or (
        smallest > 0.0 and largest <= MASS_PIVOTS_MAX_CONDITION * smallest
    )
    return MassFacts(definite=definite, conditioned=bool(conditioned))


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
    def host_mass_spectra(self) -> np.ndarray:
        """Per body, the eigenvalues of its block of M (NumPy, from concrete
        parameters; shape `(nb, k)`): for `mass_facts`."""
        raise NotImplementedError

    @abc.abstractmethod
    def inverse_mass_blocks(self) -> Float[Array, "nb dof dof"]:
        """The inverses of `mass_blocks`, in closed form: element-wise
        operations on the body parameters (no factorisation, so nothing that
        `jax.vmap` turns into a loop over variants)."""
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

    def host_mass_spectra(self) -> np.ndarray:
        m = np.asarray(self.mass, dtype=float)
        return np.stack([m, m, np.asarray(self.inertia, dtype=float)], axis=1)

    def inverse_mass_blocks(self) -> Float[Array, "nb 3 3"]:
        """diag(1/m, 1/m, 1/J)."""
        return jnp.einsum(
            "bk,kl->bkl",
            1.0 / jnp.stack([self.mass, self.mass, self.inertia], 1),
            jnp.eye(3),
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


# ---------------------------------------------------------------------------
# Natural coordinates (see the module docstring).

# Coordinates per body: r, u, v, w.
DOF = 12
# Rigid-body constraints per body: three unit lengths, three orthogonalities.
RIGID_ROWS = 6


def _blocks_2x2(a, b, c, d):
    """Per body, the 4 × 4 matrix [[a, b], [c, d]] from (nb,), (nb, 3), (nb, 3),
    (nb, 3, 3) parts."""
    return jnp.concatenate(
        [
            jnp.concatenate([a[:, None, None], b[:, None, :]], axis=2),
            jnp.concatenate([c[:, :, None], d], axis=2),
        ],
        axis=1,
    )


def _kron_i3(E):
    """E ⊗ I₃ per body: (nb, 4, 4) → (nb, 12, 12)."""
    return jnp.einsum("bkl,xy->bkxly", E, jnp.eye(3)).reshape(-1, DOF, DOF)


class SpatialBodies(AbstractBodies):
    """Spatial rigid bodies in natural coordinates q_i = [r_i, u_i, v_i, w_i] (12 each).

    r_i is the global position of the body-frame origin, which need *not* be the
    centre of mass (put the origin at a joint to simplify that joint's rows, as
    the seed paper's closing remark suggests); the centre of mass sits at `com` in
    the body frame. u_i, v_i, w_i are the body axes in global components.

    **Arguments:**

    - `mass`: masses [kg], shape `(nb,)`.
    - `com`: centres of mass in body components [m], shape `(nb, 3)`.
    - `inertia`: inertia tensors about the centre of mass, in body axes [kg m²],
      shape `(nb, 3, 3)`; symmetric, and physically realisable (each principal
      moment at most the sum of the other two) for the mass matrix to be positive
      definite.
    - `names`: body names, `nb` of them.
    """

    mass: Float[Array, " nb"]
    com: Float[Array, "nb 3"]
    inertia: Float[Array, "nb 3 3"]
    names: tuple[str, ...] = eqx.field(static=True)

    dim: ClassVar[int] = 3
    dof: ClassVar[int] = DOF
    internal_rows: ClassVar[int] = RIGID_ROWS

    def __check_init__(self):
        nb = len(self.names)
        problems = [
            f"{field} has shape {tuple(x.shape)}, expected {want}"
            for field, x, want in (
                ("mass", self.mass, (nb,)),
                ("com", self.com, (nb, 3)),
                ("inertia", self.inertia, (nb, 3, 3)),
            )
            if tuple(x.shape) != want
        ]
        if problems:
            raise ValueError(
                f"SpatialBodies with {nb} names: "
                + "; ".join(problems)
                + "; give one mass, centre of mass and inertia tensor per name"
            )

    def mass_blocks(self) -> Float[Array, "nb 12 12"]:
        """Per-body constant mass matrices M = ∫ C_r̄ᵀ C_r̄ dm.

        **Returns:** shape `(nb, 12, 12)`, blocks of 3 × 3 multiples of I₃.
        """
        # C_r̄ = eᵀ ⊗ I₃ with e = [1, r̄₁, r̄₂, r̄₃], so M = (∫ e eᵀ dm) ⊗ I₃ and
        #   ∫ e eᵀ dm = [[m, m cᵀ], [m c, J̄]],  J̄ = ∫ r̄ r̄ᵀ dm (about the frame origin).
        # Split r̄ = c + ρ with ∫ ρ dm = 0: J̄ = m c cᵀ + S, S = ∫ ρ ρᵀ dm.
        # The central inertia is I_c = ∫ (ρᵀρ I − ρ ρᵀ) dm = tr(S) I − S, whose trace
        # is 2 tr(S); hence S = ½ tr(I_c) I − I_c.
        m, c, S = self.mass, self.com, self._second_moment()
        J_bar = m[:, None, None] * c[:, :, None] * c[:, None, :] + S
        mc = m[:, None] * c
        return _kron_i3(_blocks_2x2(m, mc, mc, J_bar))

    def host_mass_spectra(self) -> np.ndarray:
        # M = E ⊗ I₃ (see `mass_blocks`): E's eigenvalues, each three times in M.
        m = np.asarray(self.mass, dtype=float)
        c = np.asarray(self.com, dtype=float)
        I_c = np.asarray(self.inertia, dtype=float)
        S = 0.5 * np.trace(I_c, axis1=1, axis2=2)[:, None, None] * np.eye(3) - I_c
        mc = m[:, None] * c
        E = np.zeros((m.shape[0], 4, 4))
        E[:, 0, 0], E[:, 0, 1:], E[:, 1:, 0] = m, mc, mc
        E[:, 1:, 1:] = m[:, None, None] * c[:, :, None] * c[:, None, :] + S
        return np.linalg.eigvalsh(0.5 * (E + np.swapaxes(E, 1, 2)))

    def _second_moment(self) -> Float[Array, "nb 3 3"]:
        """S = ∫ ρ ρᵀ dm = ½ tr(I_c) I − I_c (see `mass_blocks`)."""
        I_c = self.inertia
        return 0.5 * jnp.trace(I_c, axis1=1, axis2=2)[:, None, None] * jnp.eye(3)[None] - I_c

    def inverse_mass_blocks(self) -> Float[Array, "nb 12 12"]:
        """M⁻¹ = E⁻¹ ⊗ I₃ with E = [[m, m cᵀ], [m c, m c cᵀ + S]] of
        `mass_blocks`: the Schur complement of m in E is S, so
        E⁻¹ = [[1/m + cᵀ S⁻¹ c, −cᵀ S⁻¹], [−S⁻¹ c, S⁻¹]], and S⁻¹ is the
        adjugate of the 3 × 3 S over its determinant (as a function of any
        inertia tensor, symmetric or not, so that its derivative is that of the
        inverse)."""
        m, c, S = self.mass, self.com, self._second_moment()
        # Rows of adj(S): cross products of its columns.
        s0, s1, s2 = S[:, :, 0], S[:, :, 1], S[:, :, 2]
        adjugate = jnp.stack([jnp.cross(s1, s2), jnp.cross(s2, s0), jnp.cross(s0, s1)], axis=1)
        det = jnp.einsum("bk,bk->b", s0, adjugate[:, 0])
        S_inv = adjugate / det[:, None, None]
        Sc = jnp.einsum("bkl,bl->bk", S_inv, c)
        cS = jnp.einsum("bk,bkl->bl", c, S_inv)
        corner = 1.0 / m + jnp.einsum("bk,bk->b", c, Sc)
        return _kron_i3(_blocks_2x2(corner, -cS, -Sc, S_inv))

    def ground_coordinates(self) -> Float[Array, " 12"]:
        """Coordinates of the ground frame (the global frame): r = 0, X = I."""
        return natural_from_pose(jnp.zeros(3), jnp.eye(3))

    def centre_of_mass(self) -> Float[Array, "nb 3"]:
        return self.com

    def point(self, p, s):
        return point(p, s)

    def rotation(self, p):
        return axes(p)

    def angular_velocity(self, p, pd):
        return angular_velocity(p, pd)

    def rigid_velocity(self, p, at, velocity, omega):
        return natural_velocity(p, velocity + jnp.cross(omega, p[:3] - at), omega)

    def internal_residual(self, p):
        return rigid_body_residual(p)

    def rigid_body_residuals(self, q: Float[Array, " nq"]) -> Float[Array, " nr"]:
        """The six rigid-body constraints of every body, stacked body by body.

        **Arguments:**

        - `q`: natural coordinates of all bodies, shape `(12 nb,)`.

        **Returns:** shape `(6 nb,)`, see `rigid_body_residual`.
        """
        return jax.vmap(rigid_body_residual)(q.reshape(self.count, DOF)).reshape(-1)


def axes(p: Float[Array, " 12"]) -> Float[Array, "3 3"]:
    """X = [u v w] from p = [r, u, v, w]."""
    return p[3:].reshape(3, 3).T


def rigid_body_residual(p: Float[Array, " 12"]) -> Float[Array, " 6"]:
    """The six rigid-body constraints of one body (seed paper §4).

    **Arguments:**

    - `p`: natural coordinates [r, u, v, w], shape `(12,)`.

    **Returns:** [uᵀu − 1, vᵀv − 1, wᵀw − 1, uᵀv, uᵀw, vᵀw], shape `(6,)`: zero
    exactly when X = [u v w] is orthogonal. Handedness (det X = +1) is not a
    constraint; it is kept by continuity from a proper initial frame.
    """
    u, v, w = p[3:6], p[6:9], p[9:12]
    return jnp.stack([u @ u - 1.0, v @ v - 1.0, w @ w - 1.0, u @ v, u @ w, v @ w])


def natural_from_pose(
    position: Float[ArrayLike, " 3"], rotation: Float[ArrayLike, "3 3"]
) -> Float[ArrayLike, " 12"]:
    """Natural coordinates of a body frame at `position` [m] with rotation matrix
    `rotation` (body to global components, columns u, v, w).

    **Returns:** p = [r, u, v, w], shape `(12,)`.
    """
    xp = np if isinstance(position, np.ndarray) and isinstance(rotation, np.ndarray) else jnp
    return xp.concatenate([position, rotation.T.reshape(9)])


def pose_from_natural(p: Float[Array, " 12"]) -> tuple[Float[Array, " 3"], Float[Array, "3 3"]]:
    """Inverse of `natural_from_pose`: `(position, rotation)` with rotation X = [u v w]."""
    return p[:3], axes(p)


def point(p: Float[Array, " 12"], rbar: Float[Array, " 3"]) -> Float[Array, " 3"]:
    """Global position r + X r̄ = C_r̄ p of the body point r̄ (body components) [m]."""
    return p[:3] + axes(p) @ rbar


def direction(p: Float[Array, " 12"], a: Float[Array, " 3"]) -> Float[Array, " 3"]:
    """Global components X a of the body-fixed vector a."""
    return axes(p) @ a


def angular_velocity(p: Float[Array, " 12"], pd: Float[Array, " 12"]) -> Float[Array, " 3"]:
    """Angular velocity ω [rad/s] in global components from (p, ṗ).

    On the rigid-body manifold Ẋ Xᵀ = [ω]× is skew; off it (or for a ṗ that
    violates the velocity constraints) the skew part ½ (Ẋ Xᵀ − X Ẋᵀ) is used.
    """
    W = axes(pd) @ axes(p).T
    W = 0.5 * (W - W.T)
    return jnp.stack([W[2, 1], W[0, 2], W[1, 0]])


def natural_velocity(
    p: Float[ArrayLike, " 12"], velocity: Float[ArrayLike, " 3"], omega: Float[ArrayLike, " 3"]
) -> Float[ArrayLike, " 12"]:
    """ṗ = [ṙ, ω × u, ω × v, ω × w] from the velocity of the frame origin [m/s] and
    the angular velocity ω [rad/s], both in global components."""
    host = all(isinstance(x, np.ndarray) for x in (p, velocity, omega))
    xp = np if host else jnp  # NumPy while a model is built
    X = p[3:].reshape(3, 3).T
    return xp.concatenate([velocity, xp.cross(omega[None, :], X.T).reshape(9)])
