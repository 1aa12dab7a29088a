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

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._constraints import AbstractHolonomic
from ._model import AbstractBodies
from ._motion import AbstractMotion
from ._types import Scalar

# Coordinates per body: r, u, v, w.
DOF = 12
# Rigid-body constraints per body: three unit lengths, three orthogonalities.
RIGID_ROWS = 6


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

    def centre_of_mass(self) -> Float[Array, "nb 3"]:
        return self.com

    def point(self, p, s):
        return point(p, s)

    def rotation(self, p):
        return _frame(p)

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
    return _frame(p) @ frame.T


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


class _SpatialJoint(AbstractHolonomic):
    bodies: eqx.AbstractVar[Int[Array, " 2"]]
    s_i: eqx.AbstractVar[Float[Array, " 3"]]
    s_j: eqx.AbstractVar[Float[Array, " 3"]]
    frame_i: eqx.AbstractVar[Float[Array, "3 3"]]
    frame_j: eqx.AbstractVar[Float[Array, "3 3"]]

    def anchor(self, qb: Float[Array, "2 12"]) -> Float[Array, "2 3"]:
        return _anchors(self, qb)


class RigidBodyConstraint(AbstractHolonomic):
    """The six rigid-body constraints of one body in natural coordinates
    ([`rigid_body_residual`][]); internal rows, not a kinematic pair."""

    bodies: Int[Array, " 1"]
    rows: Int[Array, " 6"]

    def residual(self, qb: Float[Array, "1 12"], t: Scalar) -> Float[Array, " 6"]:
        del t
        return rigid_body_residual(qb[0])

    def anchor(self, qb: Float[Array, "1 12"]) -> Float[Array, "1 3"]:
        return qb[:, :3]


class SphericalConstraint(_SpatialJoint):
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


class RevoluteConstraint3D(_SpatialJoint):
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


class UniversalConstraint(_SpatialJoint):
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


class WeldConstraint3D(_SpatialJoint):
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


class PrismaticConstraint3D(_SpatialJoint):
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


class CylindricalConstraint(_SpatialJoint):
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


class RevoluteDriverConstraint3D(_SpatialJoint):
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

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 1"]:
        u = _axes(qb[0], self.frame_i)[:, 1]
        E = _axes(qb[1], self.frame_j)
        d = self.motion(t)
        return (u @ (E[:, 2] * jnp.cos(d) - E[:, 1] * jnp.sin(d)))[None]


class TranslationalDriverConstraint3D(_SpatialJoint):
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

    def residual(self, qb: Float[Array, "2 12"], t: Scalar) -> Float[Array, " 1"]:
        e0 = _axes(qb[1], self.frame_j)[:, 0]
        return (_separation(self, qb) @ e0 - self.motion(t))[None]


def joint_frame(axis: Float[Array, " 3"] | None, normal: Float[Array, " 3"] | None = None):
    """A right-handed orthonormal joint frame (rows e₀, e₁, e₂, global components).

    e₀ along `axis`; e₁ along the part of `normal` perpendicular to it, or, without
    `normal`, from [`perpendicular_pair`][]; e₂ = e₀ × e₁. Without an axis, the
    global axes.
    """
    if axis is None:
        return jnp.eye(3)
    a = axis / jnp.linalg.norm(axis)
    if normal is None:
        h = perpendicular_pair(a)
        return jnp.stack([a, h[0], h[1]])
    h1 = normal - (normal @ a) * a
    h1 = h1 / jnp.linalg.norm(h1)
    return jnp.stack([a, h1, jnp.cross(a, h1)])
