"""Force elements: applied forces that depend on the state and on time.

The **members**, Equinox modules stacked by type (STYLE rule 4): a model stores
every kind of element as one module whose array leaves carry a leading axis over
the elements of that kind, evaluated with `jax.vmap` in `_assembly.py`. Users write
the **specs** of `_force_specs.py` ([`redundax.forces.SpringDamper`][], ...), which
[`redundax.Mechanism.build`][] validates and turns into members.

Conventions of the members (those of `joints/_base.py`): `bodies` indexes the
stacked coordinates of the moving bodies with the ground appended as row `nb`;
`qb`, `qdb` are the coordinates and velocities of the element's bodies, shape
`(len(bodies), dof)`; `B` is the model's [`redundax.internal.AbstractBodies`][].

No Jacobian is written by hand. An element either declares a *deflection*
m(q) and a linear law (the spring-dampers and the bushing,
`AbstractSpringDamper`), whose generalised force Q = −(∂m/∂q)ᵀ [K (m − m₀) +
C ṁ + f₀] is a `jax.vjp` of m and whose ṁ is a `jax.jvp`; or a wrench at a body
point, whose generalised force Jᵀ w is a `jax.vjp` of the point's velocity
v = J(q) q̇ in q̇ (the loads).
"""

import abc
from collections.abc import Callable
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from ._bodies import AbstractBodies, axes, point
from ._motion import AbstractMotion
from ._types import Scalar


# --------------------------------------------------------------------------- numerics
def safe_norm(x: Float[Array, " n"]) -> Float[Array, ""]:
    """‖x‖ with a zero (not NaN) derivative at x = 0 (the double-`where` trick)."""
    squared = x @ x
    nonzero = squared > 0.0
    return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, squared, 1.0)), 0.0)


def safe_atan2(y: Float[Array, ""], x: Float[Array, ""]) -> Float[Array, ""]:
    """atan2(y, x) with a zero (not NaN) derivative at x = y = 0."""
    nonzero = x * x + y * y > 0.0
    return jnp.where(
        nonzero, jnp.arctan2(jnp.where(nonzero, y, 0.0), jnp.where(nonzero, x, 1.0)), 0.0
    )


def _vee(S: Float[Array, "3 3"]) -> Float[Array, " 3"]:
    """w of the skew-symmetric part of S = [w]× (S[2, 1], S[0, 2], S[1, 0])."""
    return 0.5 * jnp.stack([S[2, 1] - S[1, 2], S[0, 2] - S[2, 0], S[1, 0] - S[0, 1]])


def _wrench_force(B: AbstractBodies, p, pd, s, wrench) -> Float[Array, " dof"]:
    """Generalised force Jᵀ w of the wrench w = [force (dim), torque (1 or 3)],
    global components, at the body point `s` (body frame), by `jax.vjp` of
    [ṙ_s; ω] = J(p) ṗ in ṗ."""

    def velocity(pdot):
        v = jax.jvp(lambda x: B.point(x, s), (p,), (pdot,))[1]
        return jnp.concatenate([v, B.angular_velocity(p, pdot)])

    return jax.vjp(velocity, pd)[1](wrench)[0]


# --------------------------------------------------------------------------- members
class AbstractForceElement(eqx.Module):
    """An applied force on the bodies `bodies` that depends on (q, q̇, t).

    Its force is −∂V/∂q of its `potential_energy` V when the spec says it is
    `conservative()` (spring-dampers and bushings without damping).
    """

    bodies: eqx.AbstractVar[Int[Array, " nbp"]]
    parameters: eqx.AbstractClassVar[tuple[tuple[str, str], ...]]
    """(field, unit) of every parameter a sweep may change, in order."""

    @abc.abstractmethod
    def generalized_force(
        self,
        B: AbstractBodies,
        qb: Float[Array, "nbp dof"],
        qdb: Float[Array, "nbp dof"],
        t: Scalar,
    ) -> Float[Array, "nbp dof"]:
        """The generalised force on the coordinates of each of the element's bodies."""
        raise NotImplementedError

    @abc.abstractmethod
    def potential_energy(self, B: AbstractBodies, qb: Float[Array, "nbp dof"]) -> Float[Array, ""]:
        """Energy stored in the element [J] (zero for loads and user forces)."""
        raise NotImplementedError


class AbstractSpringDamper(AbstractForceElement):
    """A linear spring-damper on a deflection m(q) with `k` components: the
    generalised load f = −[K (m − m₀) + C ṁ + f₀] (K, C diagonal) does the power
    fᵀ ṁ, so the generalised force is (∂m/∂q)ᵀ f, and the stored energy is
    V = ½ (m − m₀)ᵀ K (m − m₀) + f₀ᵀ m (f₀: a preload, constant along m)."""

    @abc.abstractmethod
    def deflection(self, B: AbstractBodies, qb: Float[Array, "nbp dof"]) -> Float[Array, " k"]:
        raise NotImplementedError

    @abc.abstractmethod
    def law(
        self,
    ) -> tuple[Float[Array, " k"], Float[Array, " k"], Float[Array, " k"], Float[Array, " k"]]:
        """(stiffness K, damping C, free deflection m₀, preload f₀), each `(k,)`."""
        raise NotImplementedError

    def generalized_force(self, B, qb, qdb, t):
        del t
        K, C, m0, f0 = self.law()

        def m(x):
            return self.deflection(B, x)

        m_value, pullback = jax.vjp(m, qb)
        m_rate = jax.jvp(m, (qb,), (qdb,))[1]
        return pullback(-(K * (m_value - m0) + C * m_rate + f0))[0]

    def potential_energy(self, B, qb):
        K, _, m0, f0 = self.law()
        m = self.deflection(B, qb)
        return 0.5 * jnp.sum(K * (m - m0) ** 2) + jnp.sum(f0 * m)


class _ScalarSpringDamper(AbstractSpringDamper):
    """A spring-damper on one deflection: its law is its four `parameters`
    (stiffness, damping, free deflection, preload), in that order."""

    def law(self):
        return tuple(getattr(self, name)[None] for name, _ in self.parameters)


_TORSION: tuple[tuple[str, str], ...] = (
    ("stiffness", "N m/rad"),
    ("damping", "N m s/rad"),
    ("free_angle", "rad"),
    ("preload", "N m"),
)
"""The parameters of the rotational spring-dampers, planar and spatial."""


class SpringDamperElement(_ScalarSpringDamper):
    """Point-to-point spring-damper between the points `s_i` of body i and `s_j`
    of body j (body frames), planar or spatial: the tension T = k (l − l₀) + c l̇ +
    T₀ along the line of the points pulls them together (l = ‖P_i − P_j‖). At
    l = 0 the line has no direction: the force is zero there, and no derivative is
    NaN (`safe_norm`)."""

    bodies: Int[Array, " 2"]
    s_i: Float[Array, " dim"]
    s_j: Float[Array, " dim"]
    stiffness: Float[Array, ""]
    damping: Float[Array, ""]
    free_length: Float[Array, ""]
    preload: Float[Array, ""]
    parameters: ClassVar[tuple[tuple[str, str], ...]] = (
        ("stiffness", "N/m"),
        ("damping", "N s/m"),
        ("free_length", "m"),
        ("preload", "N"),
    )

    def deflection(self, B, qb):
        return safe_norm(B.point(qb[0], self.s_i) - B.point(qb[1], self.s_j))[None]


class RotationalSpringDamperElement(_ScalarSpringDamper):
    """Rotational spring-damper between two planar bodies: θ = φ_i − φ_j − θ_ref,
    the rotation of body i relative to body j since the initial configuration
    (θ_ref: φ_i − φ_j there), unwrapped (any number of turns). The torque on body
    i is −[k (θ − θ₀) + c θ̇ + τ₀], on body j its opposite."""

    bodies: Int[Array, " 2"]
    reference: Float[Array, ""]
    stiffness: Float[Array, ""]
    damping: Float[Array, ""]
    free_angle: Float[Array, ""]
    preload: Float[Array, ""]
    parameters: ClassVar[tuple[tuple[str, str], ...]] = _TORSION

    def deflection(self, B, qb):
        del B
        return (qb[0, 2] - qb[1, 2] - self.reference)[None]


class RotationalSpringDamperElement3D(_ScalarSpringDamper):
    """Rotational spring-damper between two spatial bodies about the axis e₀ of a
    frame carried by both (`frame_i`, `frame_j`: rows e₀, e₁, e₂ in each body's
    components, equal at the initial configuration, as in the joints): θ is the
    angle from e₁ of body j to e₁ of body i about e₀, zero at the initial
    configuration, in (−π, π] (θ = atan2(e₁ᵢ·e₂ⱼ, e₁ᵢ·e₁ⱼ); it jumps by 2π past a
    half turn). Pair it with a joint that keeps the axes aligned (a revolute)."""

    bodies: Int[Array, " 2"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]
    stiffness: Float[Array, ""]
    damping: Float[Array, ""]
    free_angle: Float[Array, ""]
    preload: Float[Array, ""]
    parameters: ClassVar[tuple[tuple[str, str], ...]] = _TORSION

    def deflection(self, B, qb):
        del B
        u = axes(qb[0]) @ self.frame_i[1]
        E = axes(qb[1]) @ self.frame_j.T
        return safe_atan2(u @ E[:, 2], u @ E[:, 1])[None]


class BushingElement(AbstractSpringDamper):
    """6-D linear bushing between a frame on body i (origin `s_i`, axes the rows
    of `frame_i`, body-i components) and a frame on body j (`s_j`, `frame_j`),
    which coincide at the initial configuration. Deflection, in the axes of the
    body-i frame A_i = X_i frame_iᵀ: the translation d = A_iᵀ (P_j − P_i) and the
    small-rotation measure ψ = vee(½ (R − Rᵀ)) of R = A_iᵀ A_j (ψ = sin‖θ‖ θ/‖θ‖
    for the rotation vector θ: first-order exact, 0.2 % low at 0.1 rad). Diagonal
    stiffness and damping on [d; ψ]; conservative without damping."""

    bodies: Int[Array, " 2"]
    s_i: Float[Array, " 3"]
    s_j: Float[Array, " 3"]
    frame_i: Float[Array, "3 3"]
    frame_j: Float[Array, "3 3"]
    stiffness: Float[Array, " 3"]
    rotational_stiffness: Float[Array, " 3"]
    damping: Float[Array, " 3"]
    rotational_damping: Float[Array, " 3"]
    parameters: ClassVar[tuple[tuple[str, str], ...]] = (
        ("stiffness", "N/m"),
        ("rotational_stiffness", "N m/rad"),
        ("damping", "N s/m"),
        ("rotational_damping", "N m s/rad"),
    )

    def deflection(self, B, qb):
        del B
        A_i = axes(qb[0]) @ self.frame_i.T
        A_j = axes(qb[1]) @ self.frame_j.T
        d = A_i.T @ (point(qb[1], self.s_j) - point(qb[0], self.s_i))
        return jnp.concatenate([d, _vee(A_i.T @ A_j)])

    def law(self):
        zeros = jnp.zeros(6)
        return (
            jnp.concatenate([self.stiffness, self.rotational_stiffness]),
            jnp.concatenate([self.damping, self.rotational_damping]),
            zeros,
            zeros,
        )


class TimeDependentLoadElement(AbstractForceElement):
    """A global force s(t) f at the body point `point` and a torque s(t) τ (global;
    in the plane about the normal, shape `(1,)`), with s(t) the `profile`."""

    bodies: Int[Array, " 1"]
    point: Float[Array, " dim"]
    force: Float[Array, " dim"]
    torque: Float[Array, " w"]
    profile: AbstractMotion
    parameters: ClassVar[tuple[tuple[str, str], ...]] = (
        ("force", "N"),
        ("point", "m"),
        ("torque", "N m"),
    )

    def generalized_force(self, B, qb, qdb, t):
        wrench = self.profile(t) * jnp.concatenate([self.force, self.torque])
        return _wrench_force(B, qb[0], qdb[0], self.point, wrench)[None]

    def potential_energy(self, B, qb):
        del B, qb
        return jnp.zeros(())


class CustomForceElement(AbstractForceElement):
    """A user force law `fn(params, qb, qdb, t) -> (len(bodies), dim + w)`: for each
    body, the global force [N] at its frame origin (its centre of mass) and the
    torque [N m] (in the plane about the normal, in space global components)."""

    bodies: Int[Array, " nbp"]
    fn: Callable[..., Any] = eqx.field(static=True)
    params: Any
    parameters: ClassVar[tuple[tuple[str, str], ...]] = ()

    def generalized_force(self, B, qb, qdb, t):
        wrenches = jnp.asarray(self.fn(self.params, qb, qdb, t), dtype=float)
        shape = (qb.shape[0], B.wrench_size)
        if wrenches.size != shape[0] * shape[1]:
            name = getattr(self.fn, "__name__", repr(self.fn))
            raise ValueError(
                f"the force law {name} of a CustomForce returned shape {wrenches.shape}; "
                f"expected {shape}: for each of its {shape[0]} bodies the force and the "
                f"torque ({'[Fx, Fy, Mz]' if B.dim == 2 else '[Fx, Fy, Fz, Mx, My, Mz]'})"
            )
        wrenches = wrenches.reshape(shape)
        origin = jnp.zeros(B.dim)
        return jax.vmap(lambda p, pd, w: _wrench_force(B, p, pd, origin, w))(qb, qdb, wrenches)

    def potential_energy(self, B, qb):
        del B, qb
        return jnp.zeros(())


# ---------------------------------------------------------------------- joint friction
FRICTION_KINDS = ("revolute", "translational", "revolute-3d", "prismatic-3d")
"""The joints a `JointFrictionElement` acts
in: planar revolute and translational, spatial revolute and prismatic."""


class JointFrictionElement(AbstractForceElement):
    """Regularised Coulomb friction in the joint of the pair `pair` (rows `rows` of C;
    member `member` of the constraint group `model.holonomic[group]`): the friction
    force (or torque) f = μ L tanh(v / v_t) opposes the joint's slip rate v, with the
    load

        L = L₀ + Σ_k a_k ‖λ[inputs[k]]‖

    from the joint's own reaction components (the multipliers of the rows `inputs[k]`:
    their magnitudes, so the sign convention does not enter) and a preload L₀. The
    slip rate is read from the joint's geometry in the model (a sweep that moves the
    joint moves the friction with it): the relative angular velocity about the joint
    axis (revolute) or the relative velocity of the joint points along the sliding
    axis (translational, prismatic); the generalised force is −f ∂v/∂q̇ (a `jax.vjp`).

    Which rows an element reads is static (the pair and the inputs named), so that the
    check that the rigid model determines them needs no value of the model.

    The friction depends on the reactions, which depend on it: its force is not part
    of [`redundax.equations.generalized_forces`][] (`generalized_force` is zero) but
    of the coupled solve of `redundax._friction`, which reads the loads from the
    multipliers of each state's equations of motion.
    """

    bodies: Int[Array, " 2"]
    arms: Float[Array, " k"]
    coefficient: Float[Array, ""]
    transition_velocity: Float[Array, ""]
    preload: Float[Array, ""]
    pair: str = eqx.field(static=True)
    kind: str = eqx.field(static=True)
    group: int = eqx.field(static=True)
    member: int = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    inputs: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    parameters: ClassVar[tuple[tuple[str, str], ...]] = (
        ("coefficient", "1"),
        ("transition_velocity", "m/s or rad/s"),
        ("preload", "N or N m"),
    )

    def generalized_force(self, B, qb, qdb, t):
        del B, qdb, t
        return jnp.zeros_like(qb)

    def potential_energy(self, B, qb):
        del B, qb
        return jnp.zeros(())

    def load(self, lam: Float[Array, " nc"]) -> Float[Array, ""]:
        """L = L₀ + Σ_k a_k ‖λ_k‖ from the multipliers λ of C's rows."""
        magnitudes = (
            jnp.stack([safe_norm(lam[np.asarray(rows)]) for rows in self.inputs])
            if self.inputs
            else jnp.zeros(0)
        )
        return self.preload + self.arms @ magnitudes

    def slip(self, joint, B, qb, qdb) -> Float[Array, ""]:
        """The joint's slip rate v (linear in q̇): rad/s or m/s."""
        axis = _friction_axis(self.kind, joint, B, qb)
        if self.kind in ("revolute", "revolute-3d"):
            omega = B.angular_velocity(qb[0], qdb[0]) - B.angular_velocity(qb[1], qdb[1])
            return omega @ axis

        def velocity(p, pd, s):
            return jax.jvp(lambda x: B.point(x, s), (p,), (pd,))[1]

        relative = velocity(qb[0], qdb[0], joint.s_i) - velocity(qb[1], qdb[1], joint.s_j)
        return relative @ axis

    def friction(self, v: Float[Array, ""], load: Float[Array, ""]) -> Float[Array, ""]:
        """f = μ L tanh(v / v_t): the friction force or torque opposing v."""
        return self.coefficient * load * jnp.tanh(v / self.transition_velocity)

    def force(self, joint, B, qb, qdb, load) -> Float[Array, "2 dof"]:
        """The generalised friction force on the two bodies' coordinates, −f ∂v/∂q̇."""
        v, pullback = jax.vjp(lambda pd: self.slip(joint, B, qb, pd), qdb)
        return pullback(-self.friction(v, load))[0]


def _friction_axis(kind: str, joint, B, qb):
    """The joint's free direction in global components, carried by body j: the plane's
    normal (planar revolute, shape (1,)), e₀ of the joint frame (spatial), the
    sliding axis ⟂ `normal` (planar translational)."""
    if kind == "revolute":
        return jnp.ones(1)
    R_j = B.rotation(qb[1])
    if kind == "translational":
        n = joint.normal
        return R_j @ jnp.stack([-n[1], n[0]])
    return R_j @ joint.frame_j[0]
