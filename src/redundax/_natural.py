"""Spatial rigid bodies in natural coordinates, and their joints (Kraus, Winckler & Bock 2001).

A body's dynamic variables are p = [r, u, v, w] ∈ R¹²: the global position r of
the body-frame origin and the body frame's unit axes u, v, w in global
components, so that X = [u v w] is the rotation matrix from body to global
components. A body point r̄ (body components) sits at

    r + X r̄ = C_r̄ p,    C_r̄ = [I₃, r̄₁ I₃, r̄₂ I₃, r̄₃ I₃]   (Kraus et al. 2001, Eq. (3))

which is *linear* in p with a constant matrix. Hence the mass matrix is constant
(no Coriolis or centrifugal terms), and the price is six rigid-body constraints
per body (unit, mutually orthogonal axes), each a polynomial of degree 2.

Joints are built, as in the seed paper §5, from point coincidence (3 linear rows)
and parallelism a ∥ b expressed with two body-fixed vectors h₁ ⊥ h₂ both
perpendicular to b: aᵀh₁ = aᵀh₂ = 0. This pair has a rank-2 Jacobian, unlike the
three rank-2 rows of a × b = 0 (García de Jalón & Bayo).

The members follow the conventions of `_constraints.py`: `bodies` indexes the
stacked coordinates with the ground appended as row `nb` (its coordinates are
[`SpatialBodies.ground_coordinates`][]), `rows` are the member's rows in Φ, and
`qb` has shape `(2, 12)`.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._constraints import AbstractHolonomic
from ._types import Scalar

# Coordinates per body: r, u, v, w.
DOF = 12
# Rigid-body constraints per body: three unit lengths, three orthogonalities.
RIGID_ROWS = 6


class SpatialBodies(eqx.Module):
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

    @property
    def dof(self) -> int:
        """Coordinates per body."""
        return DOF

    @property
    def count(self) -> int:
        return len(self.names)

    def mass_blocks(self) -> Float[Array, "nb 12 12"]:
        """Per-body constant mass matrices M = ∫ C_r̄ᵀ C_r̄ dm.

        **Returns:** shape `(nb, 12, 12)`, blocks of 3 × 3 multiples of I₃.
        """
        # C_r̄ = eᵀ ⊗ I₃ with e = [1, r̄₁, r̄₂, r̄₃], so M = (∫ e eᵀ dm) ⊗ I₃ and
        #   ∫ e eᵀ dm = [[m, m cᵀ], [m c, J̄]],  J̄ = ∫ r̄ r̄ᵀ dm (about the frame origin).
        # Split r̄ = c + ρ with ∫ ρ dm = 0: J̄ = m c cᵀ + S, S = ∫ ρ ρᵀ dm.
        # The central inertia is I_c = ∫ (ρᵀρ I − ρ ρᵀ) dm = tr(S) I − S, whose trace
        # is 2 tr(S); hence S = ½ tr(I_c) I − I_c.
        m, c, I_c = self.mass, self.com, self.inertia
        S = 0.5 * jnp.trace(I_c, axis1=1, axis2=2)[:, None, None] * jnp.eye(3)[None] - I_c
        J_bar = m[:, None, None] * c[:, :, None] * c[:, None, :] + S
        mc = m[:, None] * c
        E = jnp.concatenate(
            [
                jnp.concatenate([m[:, None, None], mc[:, None, :]], axis=2),
                jnp.concatenate([mc[:, :, None], J_bar], axis=2),
            ],
            axis=1,
        )
        return jnp.einsum("bkl,xy->bkxly", E, jnp.eye(3)).reshape(-1, DOF, DOF)

    def ground_coordinates(self) -> Float[Array, " 12"]:
        """Coordinates of the ground frame (the global frame): r = 0, X = I."""
        return natural_from_pose(jnp.zeros(3), jnp.eye(3))

    def rigid_body_residuals(self, q: Float[Array, " nq"]) -> Float[Array, " nr"]:
        """The six rigid-body constraints of every body, stacked body by body.

        **Arguments:**

        - `q`: natural coordinates of all bodies, shape `(12 nb,)`.

        **Returns:** shape `(6 nb,)`, see [`rigid_body_residual`][].
        """
        return jax.vmap(rigid_body_residual)(q.reshape(self.count, DOF)).reshape(-1)


def _frame(p: Float[Array, " 12"]) -> Float[Array, "3 3"]:
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
    position: Float[Array, " 3"], rotation: Float[Array, "3 3"]
) -> Float[Array, " 12"]:
    """Natural coordinates of a body frame at `position` [m] with rotation matrix
    `rotation` (body to global components, columns u, v, w).

    **Returns:** p = [r, u, v, w], shape `(12,)`.
    """
    return jnp.concatenate([position, rotation.T.reshape(9)])


def pose_from_natural(p: Float[Array, " 12"]) -> tuple[Float[Array, " 3"], Float[Array, "3 3"]]:
    """Inverse of [`natural_from_pose`][]: `(position, rotation)` with rotation X = [u v w]."""
    return p[:3], _frame(p)


def point(p: Float[Array, " 12"], rbar: Float[Array, " 3"]) -> Float[Array, " 3"]:
    """Global position r + X r̄ = C_r̄ p of the body point r̄ (body components) [m]."""
    return p[:3] + _frame(p) @ rbar


def direction(p: Float[Array, " 12"], a: Float[Array, " 3"]) -> Float[Array, " 3"]:
    """Global components X a of the body-fixed vector a."""
    return _frame(p) @ a


def angular_velocity(p: Float[Array, " 12"], pd: Float[Array, " 12"]) -> Float[Array, " 3"]:
    """Angular velocity ω [rad/s] in global components from (p, ṗ).

    On the rigid-body manifold Ẋ Xᵀ = [ω]× is skew; off it (or for a ṗ that
    violates the velocity constraints) the skew part ½ (Ẋ Xᵀ − X Ẋᵀ) is used.
    """
    W = _frame(pd) @ _frame(p).T
    W = 0.5 * (W - W.T)
    return jnp.stack([W[2, 1], W[0, 2], W[1, 0]])


def natural_velocity(
    p: Float[Array, " 12"], velocity: Float[Array, " 3"], omega: Float[Array, " 3"]
) -> Float[Array, " 12"]:
    """ṗ = [ṙ, ω × u, ω × v, ω × w] from the velocity of the frame origin [m/s] and
    the angular velocity ω [rad/s], both in global components."""
    X = _frame(p)
    return jnp.concatenate([velocity, jnp.cross(omega[None, :], X.T).reshape(9)])


def perpendicular_pair(axis: Float[Array, " 3"]) -> Float[Array, "2 3"]:
    """Two orthonormal vectors h₁, h₂ perpendicular to `axis` (any non-zero length).

    h₁ is the coordinate axis least aligned with `axis`, made perpendicular by
    Gram–Schmidt; h₂ = â × h₁. The choice of coordinate axis is discrete (no
    gradient flows through it).
    """
    a = axis / jnp.linalg.norm(axis)
    e = jnp.eye(3)[jnp.argmin(jnp.abs(a))]
    h1 = e - (e @ a) * a
    h1 = h1 / jnp.linalg.norm(h1)
    return jnp.stack([h1, jnp.cross(a, h1)])


def _coincidence(member, qb) -> Float[Array, " 3"]:
    """r_i + X_i s_i − r_j − X_j s_j for a member with joint points `s_i`, `s_j`."""
    return point(qb[0], member.s_i) - point(qb[1], member.s_j)


def _anchors(member, qb) -> Float[Array, "2 3"]:
    return jnp.stack([point(qb[0], member.s_i), point(qb[1], member.s_j)])


def _orientation_rows(qb, rotation) -> Float[Array, " 3"]:
    # X_i = X_j R is locked by three cross products of the axes: with
    # X_i = X_j R (I + [θ]×) to first order, (X_i e₂)ᵀ X_j R e₃ = θ₁, and cyclically,
    # so the rows have Jacobian I₃ in θ (full rank 3).
    A = _frame(qb[0])
    B = _frame(qb[1]) @ rotation
    return jnp.stack([A[:, 1] @ B[:, 2], A[:, 2] @ B[:, 0], A[:, 0] @ B[:, 1]])


class SphericalConstraint(AbstractHolonomic):
    """Point coincidence r_i + X_i s_i − r_j − X_j s_j = 0 (3 rows: global x, y, z).

    **Arguments:**

    - `bodies`: indices (i, j), shape `(2,)`; the ground is `nb`.
    - `rows`: rows in Φ, shape `(3,)`.
    - `s_i`, `s_j`: the joint point in the frames of body i and body j [m].
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 3"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 3"]:
        del t
        return _coincidence(self, qb)

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class RevoluteConstraint3D(AbstractHolonomic):
    """Point coincidence and an axis parallelism: 3 + 2 = 5 rows, full row rank.

    Rows (seed paper Eqs. (12)–(14)): r_i + X_i s_i − r_j − X_j s_j = 0 and
    (X_i a_i)ᵀ (X_j h_k) = 0 for k = 1, 2, where h₁ ⊥ h₂ are body-j vectors
    perpendicular to the body-j axis a_j (see [`perpendicular_pair`][]).

    **Arguments:**

    - `bodies`: indices (i, j), shape `(2,)`; the ground is `nb`.
    - `rows`: rows in Φ, shape `(5,)`.
    - `s_i`, `s_j`: the joint point in the frames of body i and body j [m].
    - `axis_i`: the joint axis in body-i components (unit length makes the last
      two rows read as sines of the misalignment).
    - `normals_j`: h₁, h₂ in body-j components, shape `(2, 3)`.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 5"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    axis_i: Float[Array, " 3"]
    normals_j: Float[Array, "2 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 5"]:
        del t
        a = direction(qb[0], self.axis_i)
        H = _frame(qb[1]) @ self.normals_j.T
        return jnp.concatenate([_coincidence(self, qb), a @ H])

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class UniversalConstraint(AbstractHolonomic):
    """Point coincidence and perpendicular cross axes: 3 + 1 = 4 rows.

    Rows: r_i + X_i s_i − r_j − X_j s_j = 0 and (X_i a_i)ᵀ (X_j a_j) = 0, with the
    body axes a_i ⊥ a_j at assembly (the two pins of the cross).

    **Arguments:**

    - `bodies`, `rows` (shape `(4,)`), `s_i`, `s_j`: as for [`SphericalConstraint`][].
    - `axis_i`, `axis_j`: the pin axes in body-i and body-j components.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 4"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    axis_i: Float[Array, " 3"]
    axis_j: Float[Array, " 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 4"]:
        del t
        dot = direction(qb[0], self.axis_i) @ direction(qb[1], self.axis_j)
        return jnp.concatenate([_coincidence(self, qb), dot[None]])

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class WeldConstraint3D(AbstractHolonomic):
    """Point coincidence and a fixed relative orientation: 3 + 3 = 6 rows, full rank.

    Rows: r_i + X_i s_i − r_j − X_j s_j = 0 and, with A = X_i and B = X_j R,
    [a₂ᵀ b₃, a₃ᵀ b₁, a₁ᵀ b₂] = 0, which holds at X_i = X_j R and has a Jacobian
    of rank 3 there (the zero set also holds isolated flipped orientations,
    which continuity from an assembled pose avoids).

    **Arguments:**

    - `bodies`, `rows` (shape `(6,)`), `s_i`, `s_j`: as for [`SphericalConstraint`][].
    - `rotation`: R = X_jᵀ X_i, body-i axes in body-j components, shape `(3, 3)`
      (the spatial analogue of the planar weld's `angle`).
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 6"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    rotation: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 6"]:
        del t
        return jnp.concatenate([_coincidence(self, qb), _orientation_rows(qb, self.rotation)])

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class PrismaticConstraint3D(AbstractHolonomic):
    """Sliding along a body-j axis without relative rotation: 2 + 3 = 5 rows.

    With d = r_j + X_j s_j − r_i − X_i s_i, rows dᵀ (X_j h_k) = 0 for k = 1, 2
    (h₁ ⊥ h₂ perpendicular to the sliding axis, body-j components), then the three
    orientation rows of [`WeldConstraint3D`][].

    **Arguments:**

    - `bodies`, `rows` (shape `(5,)`), `s_i`, `s_j`: as for [`SphericalConstraint`][];
      s_i and s_j are points on the sliding line.
    - `normals_j`: h₁, h₂ in body-j components, shape `(2, 3)`.
    - `rotation`: R = X_jᵀ X_i, shape `(3, 3)`.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 5"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    normals_j: Float[Array, "2 3"]
    rotation: Float[Array, "3 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 5"]:
        del t
        H = _frame(qb[1]) @ self.normals_j.T
        return jnp.concatenate([-_coincidence(self, qb) @ H, _orientation_rows(qb, self.rotation)])

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class CylindricalConstraint(AbstractHolonomic):
    """Sliding along and turning about a common axis: 2 + 2 = 4 rows.

    With d = r_j + X_j s_j − r_i − X_i s_i, rows dᵀ (X_j h_k) = 0 and
    (X_i a_i)ᵀ (X_j h_k) = 0 for k = 1, 2, with h₁ ⊥ h₂ perpendicular to the
    body-j axis.

    **Arguments:**

    - `bodies`, `rows` (shape `(4,)`), `s_i`, `s_j`: as for [`SphericalConstraint`][];
      s_i and s_j are points on the axis.
    - `axis_i`: the axis in body-i components.
    - `normals_j`: h₁, h₂ in body-j components, shape `(2, 3)`.
    """

    bodies: Int[Array, " 2"]
    rows: Int[Array, " 4"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    axis_i: Float[Array, " 3"]
    normals_j: Float[Array, "2 3"]

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 4"]:
        del t
        H = _frame(qb[1]) @ self.normals_j.T
        a = direction(qb[0], self.axis_i)
        return jnp.concatenate([-_coincidence(self, qb) @ H, a @ H])

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)
