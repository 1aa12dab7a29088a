"""Natural coordinates (Kraus, Winckler & Bock 2001): bodies, mass matrix, joints."""

import contextlib
import dataclasses

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import redundax as rx
from redundax._bodies import (
    SpatialBodies,
    angular_velocity,
    direction,
    natural_from_pose,
    natural_velocity,
    point,
    pose_from_natural,
    rigid_body_residual,
)
from redundax._motion import Constant
from redundax._pairs import (
    CylindricalConstraint,
    PrismaticConstraint3D,
    RevoluteConstraint3D,
    RevoluteDriverConstraint3D,
    SphericalConstraint,
    TranslationalDriverConstraint3D,
    UniversalConstraint,
    WeldConstraint3D,
    joint_frame,
    perpendicular_pair,
)

# Round-off of O(10) flops on O(1) data: a few hundred ulps.
TOL = 1e-12
# Joint residuals and velocities: a chain of rotations and products, ~10× TOL.
TOL_JOINT = 1e-11
# Mass matrix entries are sums over 7 points of products up to ~10² in size.
TOL_MASS = 1e-10
# Central difference error O(ε^(2/3)) on O(1) data, ε = eps^(1/3) the step.
FD_FACTOR = 1e3
# Kinetic energies are sums of O(10²) terms of size up to ~10² (m v²).
TOL_ENERGY = 1e-10
# Singular values below RANK_RTOL · σ_max count as zero (data are O(1), so the
# gap between round-off ~1e-15 and genuine singular values ≥ ~1e-3 is wide).
RANK_RTOL = 1e-9
N_STATES = 20


def _rotation(rng) -> jnp.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    if np.linalg.det(Q) < 0:
        Q[:, 0] = -Q[:, 0]
    return jnp.asarray(Q)


def _unit(rng) -> jnp.ndarray:
    a = rng.normal(size=3)
    return jnp.asarray(a / np.linalg.norm(a))


def _random_body(rng):
    """A physically realisable body: S = ∫ρρᵀdm SPD, I_c = tr(S) I − S."""
    mass = rng.uniform(0.5, 5.0)
    com = rng.normal(size=3)
    A = rng.normal(size=(3, 3))
    S = A @ A.T + 0.1 * np.eye(3)
    inertia = np.trace(S) * np.eye(3) - S
    return mass, com, inertia


def _rank(J) -> int:
    s = np.linalg.svd(np.asarray(J), compute_uv=False)
    return int(np.sum(s > RANK_RTOL * s[0]))


def _bodies(mass, com, inertia, names):
    return SpatialBodies(
        mass=jnp.asarray(mass, dtype=float),
        com=jnp.asarray(com, dtype=float),
        inertia=jnp.asarray(inertia, dtype=float),
        names=names,
    )


def test_mass_matrix_kinetic_energy():
    """½ ṗᵀ M ṗ = ½ m |v_c|² + ½ ω_bᵀ I_c ω_b for random bodies and motions."""
    rng = np.random.default_rng(0)
    for _ in range(N_STATES):
        m, c, I_c = _random_body(rng)
        bodies = _bodies([m], [c], [I_c], ("b",))
        M = bodies.mass_blocks()[0]
        R, r = _rotation(rng), jnp.asarray(rng.normal(size=3))
        v, omega = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
        p = natural_from_pose(r, R)
        pd = natural_velocity(p, v, omega)
        T_natural = 0.5 * pd @ M @ pd
        v_c = v + jnp.cross(omega, R @ jnp.asarray(c))
        omega_b = R.T @ omega
        T_classical = 0.5 * m * v_c @ v_c + 0.5 * omega_b @ jnp.asarray(I_c) @ omega_b
        assert abs(T_natural - T_classical) <= TOL_ENERGY * max(1.0, abs(T_classical))


def test_mass_matrix_point_cloud():
    """M equals Σ m_k C_kᵀ C_k for a cloud of point masses (the definition)."""
    rng = np.random.default_rng(1)
    m_k = rng.uniform(0.1, 2.0, size=7)
    x_k = rng.normal(size=(7, 3)) + np.array([0.5, -1.0, 2.0])
    mass = m_k.sum()
    com = (m_k[:, None] * x_k).sum(0) / mass
    rho = x_k - com
    I_c = sum(
        mk * (rk @ rk * np.eye(3) - np.outer(rk, rk)) for mk, rk in zip(m_k, rho, strict=False)
    )
    M = _bodies([mass], [com], [I_c], ("cloud",)).mass_blocks()[0]
    # C_x = [I₃, x₁ I₃, x₂ I₃, x₃ I₃], shape (3, 12).
    C = [np.kron(np.concatenate([[1.0], xk])[None, :], np.eye(3)) for xk in x_k]
    M_ref = sum(mk * Ck.T @ Ck for mk, Ck in zip(m_k, C, strict=False))
    assert np.allclose(M, M_ref, rtol=0.0, atol=TOL_MASS)
    assert np.all(np.linalg.eigvalsh(np.asarray(M)) > 0.0)


def test_inverse_mass_blocks_closed_form():
    """The closed-form M⁻¹ = E⁻¹ ⊗ I₃ of natural coordinates (and diag(1/m, 1/m,
    1/J) of planar bodies) equals LAPACK's inverse of the mass blocks, and so does
    its derivative w.r.t. the body parameters (autodiff of both)."""
    rng = np.random.default_rng(4)
    parts = [_random_body(rng) for _ in range(4)]
    mass, com, inertia = (jnp.asarray(np.stack(x)) for x in zip(*parts, strict=True))
    bodies = _bodies(mass, com, inertia, names=("a", "b", "c", "d"))
    inverse = bodies.inverse_mass_blocks()
    reference = jnp.linalg.inv(bodies.mass_blocks())
    assert float(jnp.max(jnp.abs(inverse - reference))) <= TOL_MASS * float(
        jnp.max(jnp.abs(reference))
    )

    def entry(mass, com, inertia, closed_form):
        b = _bodies(mass, com, inertia, names=("a", "b", "c", "d"))
        blocks = b.inverse_mass_blocks() if closed_form else jnp.linalg.inv(b.mass_blocks())
        return jnp.sum(blocks * jnp.arange(blocks.size).reshape(blocks.shape) / blocks.size)

    # One jitted program per form for the three gradients (eagerly, each of their
    # operations compiled alone: ~150 small programs).
    gradients = jax.jit(jax.grad(entry, argnums=(0, 1, 2)), static_argnums=3)
    ours, lapack = gradients(mass, com, inertia, True), gradients(mass, com, inertia, False)
    for argnum in range(3):
        np.testing.assert_allclose(ours[argnum], lapack[argnum], rtol=1e-9, atol=1e-12)
    planar = rx.internal.PlanarBodies(
        mass=jnp.array([2.0, 0.5]), inertia=jnp.array([0.3, 0.01]), names=("p", "r")
    )
    np.testing.assert_allclose(
        planar.inverse_mass_blocks(), jnp.linalg.inv(planar.mass_blocks()), rtol=1e-14
    )


def test_bodies_interface():
    rng = np.random.default_rng(2)
    parts = [_random_body(rng) for _ in range(3)]
    bodies = _bodies(*(np.stack(x) for x in zip(*parts, strict=False)), names=("a", "b", "c"))
    assert bodies.dof == 12 and bodies.count == 3
    assert bodies.mass_blocks().shape == (3, 12, 12)
    g = bodies.ground_coordinates()
    assert np.array_equal(g, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1])
    q = jnp.concatenate(
        [natural_from_pose(jnp.asarray(rng.normal(size=3)), _rotation(rng)) for _ in range(3)]
    )
    assert bodies.rigid_body_residuals(q).shape == (18,)
    assert np.max(np.abs(bodies.rigid_body_residuals(q))) <= TOL


def test_bodies_shape_check():
    # Consistent array shapes (so jaxtyping passes), but one name too few.
    with pytest.raises(ValueError, match="mass has shape \\(3,\\), expected \\(2,\\)"):
        SpatialBodies(
            mass=jnp.ones(3), com=jnp.zeros((3, 3)), inertia=jnp.zeros((3, 3, 3)), names=("a", "b")
        )


def test_rigid_body_residual_and_rank():
    rng = np.random.default_rng(3)
    for _ in range(N_STATES):
        R, r = _rotation(rng), jnp.asarray(rng.normal(size=3))
        p = natural_from_pose(r, R)
        assert np.max(np.abs(rigid_body_residual(p))) <= TOL
        assert _rank(jax.jacfwd(rigid_body_residual)(p)) == 6
        r2, R2 = pose_from_natural(p)
        assert np.array_equal(r2, r) and np.array_equal(R2, R)


def test_kinematic_helpers():
    rng = np.random.default_rng(4)
    for _ in range(N_STATES):
        R, r = _rotation(rng), jnp.asarray(rng.normal(size=3))
        p = natural_from_pose(r, R)
        rbar = jnp.asarray(rng.normal(size=3))
        assert np.allclose(point(p, rbar), r + R @ rbar, rtol=0.0, atol=TOL)
        assert np.allclose(direction(p, rbar), R @ rbar, rtol=0.0, atol=TOL)
        v, omega = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
        pd = natural_velocity(p, v, omega)
        assert np.allclose(angular_velocity(p, pd), omega, rtol=0.0, atol=TOL)
        # ṗ is tangent to the rigid-body manifold, and moves body points rigidly.
        assert np.allclose(jax.jacfwd(rigid_body_residual)(p) @ pd, 0.0, rtol=0.0, atol=TOL)
        point_velocity = jax.jvp(lambda p: point(p, rbar), (p,), (pd,))[1]
        assert np.allclose(point_velocity, v + jnp.cross(omega, R @ rbar), rtol=0.0, atol=TOL)


def test_perpendicular_pair():
    rng = np.random.default_rng(5)
    for axis in [jnp.array([0.0, 0.0, 2.0]), jnp.array([1.0, 0.0, 0.0])] + [
        _unit(rng) for _ in range(5)
    ]:
        H = perpendicular_pair(axis)
        assert np.allclose(H @ H.T, np.eye(2), rtol=0.0, atol=TOL)
        assert np.allclose(H @ axis, 0.0, rtol=0.0, atol=TOL)


def _member(cls, bodies, rows, s_i, s_j, G, R_i, R_j, **extra):
    """A member with joint frame G (rows e₀, e₁, e₂, global components at the
    assembled configuration) stored in each body's components, as the spec does."""
    return cls(
        bodies=bodies, rows=rows, s_i=s_i, s_j=s_j, frame_i=G @ R_i, frame_j=G @ R_j, **extra
    )


def _assembled(kind: str, rng):
    """A member of `kind` between two random bodies, and their coordinates (2, 12).

    The joint frame is `joint_frame(axis, normal)` for a random global axis (and,
    for the universal joint, a random normal: the pin of body j), as
    `Mechanism.build` makes it."""
    R_i, R_j = _rotation(rng), _rotation(rng)
    r_j = jnp.asarray(rng.normal(size=3))
    s_i, s_j = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
    r_i = r_j + R_j @ s_j - R_i @ s_i
    bodies = jnp.array([0, 1])
    G = joint_frame(_unit(rng), _unit(rng))
    axis = G[0]
    cls, size = {
        "spherical": (SphericalConstraint, 3),
        "revolute": (RevoluteConstraint3D, 5),
        "universal": (UniversalConstraint, 4),
        "weld": (WeldConstraint3D, 6),
        "prismatic": (PrismaticConstraint3D, 5),
        "cylindrical": (CylindricalConstraint, 4),
        "revolute-driver": (RevoluteDriverConstraint3D, 1),
        "translational-driver": (TranslationalDriverConstraint3D, 1),
    }[kind]
    extra = {"motion": Constant(0.0)} if kind.endswith("driver") else {}
    if kind == "prismatic":
        # Slide the joint points apart along the axis: still assembled.
        r_i = r_i + 0.7 * axis
    elif kind == "cylindrical":
        r_i = r_i - 0.4 * axis
    member = _member(cls, bodies, jnp.arange(size), s_i, s_j, G, R_i, R_j, **extra)
    qb = jnp.stack([natural_from_pose(r_i, R_i), natural_from_pose(r_j, R_j)])
    return member, qb


# kind: (joint rows, relative degrees of freedom allowed).
JOINTS = {
    "spherical": (3, 3),
    "revolute": (5, 1),
    "universal": (4, 2),
    "weld": (6, 0),
    "prismatic": (5, 1),
    "cylindrical": (4, 2),
    "revolute-driver": (1, 5),
    "translational-driver": (1, 5),
}


@pytest.mark.parametrize("kind", list(JOINTS))
def test_joint_rank_and_mobility(kind):
    """Assembled: Φ = 0, rank Φ_q = rows; with the 12 rigid-body rows of the pair,
    the null space has 24 − 12 − rows = 6 (rigid motion of the pair) + joint freedoms."""
    rows, freedoms = JOINTS[kind]
    rng = np.random.default_rng(6)
    for _ in range(3):
        member, qb = _assembled(kind, rng)
        assert np.max(np.abs(member.residual(qb, 0.0))) <= TOL_JOINT
        J = jax.jacfwd(member.residual)(qb, 0.0).reshape(rows, 24)
        assert _rank(J) == rows
        rigid = jax.jacfwd(lambda qb: jax.vmap(rigid_body_residual)(qb).reshape(-1))(qb)
        full = jnp.concatenate([J, rigid.reshape(12, 24)])
        assert _rank(full) == 12 + rows
        assert 24 - _rank(full) == 6 + freedoms
        anchors = member.anchor(qb)
        assert anchors.shape == (2, 3)
        if kind not in ("prismatic", "cylindrical"):
            assert np.allclose(anchors[0], anchors[1], rtol=0.0, atol=TOL_JOINT)


def test_revolute_to_ground_turns_about_its_axis():
    """Body j = ground: the single allowed motion is a rotation about the global
    axis X_i a_i through the joint point (which stays still)."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        member, qb = _assembled("revolute", rng)
        # Move the pair so body j is the ground frame: X_j = I, r_j = 0.
        r_j, R_j = pose_from_natural(qb[1])
        r_i, R_i = pose_from_natural(qb[0])
        p_i = natural_from_pose(R_j.T @ (r_i - r_j), R_j.T @ R_i)
        ground = SpatialBodies(
            mass=jnp.ones(1), com=jnp.zeros((1, 3)), inertia=jnp.zeros((1, 3, 3)), names=("i",)
        ).ground_coordinates()
        phi = lambda p: jnp.concatenate(
            [member.residual(jnp.stack([p, ground]), 0.0), rigid_body_residual(p)]
        )
        assert np.max(np.abs(phi(p_i))) <= TOL_JOINT
        J = jax.jacfwd(phi)(p_i)
        assert _rank(J) == 11
        _, _, Vt = np.linalg.svd(np.asarray(J))
        pd = jnp.asarray(Vt[-1])
        omega = angular_velocity(p_i, pd)
        axis = direction(p_i, member.frame_i[0])
        assert np.allclose(jnp.cross(omega, axis), 0.0, rtol=0.0, atol=TOL_JOINT)
        assert np.linalg.norm(omega) > 0.1
        joint_velocity = jax.jvp(lambda p: point(p, member.s_i), (p_i,), (pd,))[1]
        assert np.allclose(joint_velocity, 0.0, rtol=0.0, atol=TOL_JOINT)


def test_stacked_members_vmap_and_jit():
    """A stacked group evaluated with vmap equals the loop; jit equals eager."""
    rng = np.random.default_rng(8)
    members, qbs = zip(*[_assembled("revolute", rng) for _ in range(4)], strict=False)
    stacked = jax.tree.map(lambda *x: jnp.stack(x), *members)
    qb = jnp.stack(qbs) + 0.01 * jnp.asarray(rng.normal(size=(4, 2, 12)))
    res = jax.vmap(lambda m, q: m.residual(q, 0.0))(stacked, qb)
    loop = jnp.stack([m.residual(q, 0.0) for m, q in zip(members, qb, strict=False)])
    assert np.allclose(res, loop, rtol=0.0, atol=TOL)
    jitted = eqx.filter_jit(lambda m, q: jax.vmap(lambda m, q: m.residual(q, 0.0))(m, q))
    assert np.allclose(jitted(stacked, qb), res, rtol=0.0, atol=TOL)


def test_revolute_jacobian_finite_difference():
    """jacfwd of the revolute residual against a central difference."""
    rng = np.random.default_rng(9)
    member, qb = _assembled("revolute", rng)
    qb = qb + 0.05 * jnp.asarray(rng.normal(size=(2, 12)))
    dq = jnp.asarray(rng.normal(size=(2, 12)))
    eps = np.finfo(float).eps ** (1 / 3)
    fd = (member.residual(qb + eps * dq, 0.0) - member.residual(qb - eps * dq, 0.0)) / (2 * eps)
    jvp = jax.jvp(lambda q: member.residual(q, 0.0), (qb,), (dq,))[1]
    assert np.allclose(jvp, fd, rtol=0.0, atol=FD_FACTOR * eps**2)


def _C(s) -> np.ndarray:
    """C_s̄ = [I₃, s̄₁ I₃, s̄₂ I₃, s̄₃ I₃] (Kraus et al. 2001, Eq. (3)), shape (3, 12)."""
    return np.kron(np.concatenate([[1.0], np.asarray(s)])[None, :], np.eye(3))


def test_rigid_body_jacobian_closed_form():
    """∂/∂[r, u, v, w] of [uᵀu − 1, vᵀv − 1, wᵀw − 1, uᵀv, uᵀw, vᵀw], written out,
    at arbitrary (not orthonormal) coordinates."""
    rng = np.random.default_rng(10)
    for _ in range(N_STATES):
        p = rng.normal(size=12)
        u, v, w = p[3:6], p[6:9], p[9:12]
        z = np.zeros(3)
        want = np.stack(
            [
                np.concatenate([z, 2 * u, z, z]),
                np.concatenate([z, z, 2 * v, z]),
                np.concatenate([z, z, z, 2 * w]),
                np.concatenate([z, v, u, z]),
                np.concatenate([z, w, z, u]),
                np.concatenate([z, z, w, v]),
            ]
        )
        got = jax.jacfwd(rigid_body_residual)(jnp.asarray(p))
        assert np.allclose(got, want, rtol=0.0, atol=TOL)


def _frame_columns(p, frame) -> np.ndarray:
    """Joint axes e_k (global, columns) of a body with coordinates p: X frameᵀ."""
    X = np.asarray(p[3:]).reshape(3, 3).T
    return X @ np.asarray(frame).T


def test_point_and_axis_rows_jacobian_closed_form():
    """Revolute rows at an arbitrary (unassembled) configuration, differentiated by
    hand. Position rows Φ_k = e_kᵀ d with d = C_{s_i} p_i − C_{s_j} p_j and e_k =
    Σ_l F_j[k, l] x_l (x_l = u, v, w of body j): ∂/∂p_i = e_kᵀ C_{s_i},
    ∂/∂p_j = −e_kᵀ C_{s_j} + [0, F_j[k, l] dᵀ]. Axis rows σ aᵀ e_k with
    a = Σ_l F_i[0, l] x_l^i: ∂/∂x_l^i = σ F_i[0, l] e_kᵀ, ∂/∂x_l^j = σ F_j[k, l] aᵀ
    (σ, k) = (−1, 2) and (+1, 1)."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        member, qb = _assembled("revolute", rng)
        qb = qb + 0.1 * jnp.asarray(rng.normal(size=(2, 12)))
        p_i, p_j = np.asarray(qb[0]), np.asarray(qb[1])
        F_i, F_j = np.asarray(member.frame_i), np.asarray(member.frame_j)
        E = _frame_columns(p_j, F_j)
        a = _frame_columns(p_i, F_i)[:, 0]
        d = _C(member.s_i) @ p_i - _C(member.s_j) @ p_j
        want = np.zeros((5, 2, 12))
        for k in range(3):
            want[k, 0] = E[:, k] @ _C(member.s_i)
            want[k, 1] = -E[:, k] @ _C(member.s_j)
            for l in range(3):
                want[k, 1, 3 + 3 * l : 6 + 3 * l] += F_j[k, l] * d
        for row, (sign, k) in zip((3, 4), ((-1.0, 2), (1.0, 1)), strict=True):
            for l in range(3):
                want[row, 0, 3 + 3 * l : 6 + 3 * l] = sign * F_i[0, l] * E[:, k]
                want[row, 1, 3 + 3 * l : 6 + 3 * l] = sign * F_j[k, l] * a
        got = jax.jacfwd(member.residual)(qb, 0.0)
        assert np.allclose(got, want, rtol=0.0, atol=TOL_JOINT)


SPECS = {
    "spherical": rx.joints.Spherical,
    "revolute": rx.joints.Revolute3D,
    "universal": rx.joints.Universal,
    "weld": rx.joints.Weld3D,
    "prismatic": rx.joints.Prismatic3D,
    "cylindrical": rx.joints.Cylindrical,
    "revolute-driver": rx.joints.RevoluteDriver3D,
    "translational-driver": rx.joints.TranslationalDriver3D,
}


def _expected_wrench(label: str) -> tuple[int, int]:
    """(0 force | 1 moment, axis k) that a component label names: 'axial force' and
    'driving force' are along e₀, 'driving torque' about e₀, others end in 'e<k>'."""
    assert ("force" in label) != ("moment" in label or "torque" in label), label
    kind = 0 if "force" in label else 1
    axis = int(label[-1]) if label[-1].isdigit() else 0
    return kind, axis


@pytest.mark.parametrize("kind", list(JOINTS))
def test_rows_are_the_labelled_reaction_components(kind):
    """Each row's generalised force ∂Φ_k/∂q, read as a wrench by its virtual power
    over rigid velocities of each body, is a unit force along (or moment about) the
    joint axis that the spec's component label names, acting on body i at its joint
    point, and the opposite wrench on body j (about the same point): −λ_k is that
    component on body i (the `Pair` convention)."""
    rng = np.random.default_rng(12)
    labels = SPECS[kind].components
    member, qb = _assembled(kind, rng)
    assert len(labels) == JOINTS[kind][0]
    G = np.asarray(_frame_columns(qb[0], member.frame_i)).T  # rows e_k, global
    P = np.asarray(point(qb[0], member.s_i))
    J = jax.jacfwd(member.residual)(qb, 0.0)

    def wrench(g, p):
        # g · ṗ for the rigid velocity with point P moving at x[:3] and ω = x[3:].
        r = p[:3]
        return jax.jacfwd(
            lambda x: g @ natural_velocity(p, x[:3] + jnp.cross(x[3:], r - P), x[3:])
        )(jnp.zeros(6))

    for row, label in enumerate(labels):
        what, k = _expected_wrench(label)
        unit = np.zeros(6)
        unit[3 * what : 3 * what + 3] = G[k]
        assert np.allclose(wrench(J[row, 0], qb[0]), unit, rtol=0.0, atol=TOL_JOINT), label
        assert np.allclose(wrench(J[row, 1], qb[1]), -unit, rtol=0.0, atol=TOL_JOINT), label


# --- bodies whose mass lies in one plane -------------------------------------------


def _bricard_of_laminae(thinness: float = 0.0):
    """Bricard's linkage with every rod replaced by a lamina in the xy-plane (principal
    moments (¼, ¼, ½): I_z = I_x + I_y, no second moment along z, so its 12 × 12 block
    of the natural-coordinate M is singular), or by a plate whose I_z is short of
    I_x + I_y by `thinness`."""
    mech = rx.models.bricard()
    plates = [dataclasses.replace(b, inertia=(0.25, 0.25, 0.5 - thinness)) for b in mech.bodies]
    mech = dataclasses.replace(mech, bodies=plates)
    return mech.build(), mech.initial_state()


@pytest.mark.parametrize(
    "method",
    [
        rx.methods.NullSpace(schur=True),
        rx.methods.BlockSparse(),
        rx.methods.WeightedMinimumNorm(),
        rx.methods.Elimination(keep=tuple(k for k in range(60) if k != 1), n_rows=60),
    ],
    ids=lambda m: type(m).__name__,
)
def test_methods_that_need_the_inverse_mass_refuse_laminae_by_name(method):
    """A method that applies M⁻¹ is refused before it runs (it would end in
    non-finite accelerations: Diffrax reported "maximum number of steps reached"),
    with every singular body named, by `simulate` and by `solve_dynamics`."""
    model, state = _bricard_of_laminae()
    structure = rx.decide(model, state.q, state.t)
    assert not np.any(np.asarray(structure.mass_definite))
    for call in (
        lambda: rx.simulate(model, state, 0.1, method=method, structure=structure),
        lambda: rx.equations.solve_dynamics(
            model, state.q, state.qd, structure=structure, method=method
        ),
    ):
        with pytest.raises(rx.ModelError) as caught:
            call()
        assert caught.value.problems == tuple(
            f"body 'rod{k}': its block of the mass matrix is singular" for k in range(1, 6)
        )
        assert caught.value.source == "method"
        assert f"{type(method).__name__} applies M⁻¹" in str(caught.value)


def test_the_default_method_takes_laminae_to_the_qr_path_and_their_limit():
    """`NullSpace()` runs a mechanism of laminae by its pivoted-QR path (the structure
    refuses the Schur complement): its q̈ equals the augmented Lagrangian's (which
    factors M + α CᵀC, regular here) to 1e-10, and is the limit of plates of
    vanishing thickness (I_z short of I_x + I_y by 1e-7: within 1e-6, relative; by
    1e-2: not, so the comparison can tell)."""
    model, state = _bricard_of_laminae()
    structure = rx.decide(model, state.q, state.t)
    assert not bool(structure.schur)
    qdd, _ = rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure)
    scale = float(np.max(np.abs(np.asarray(qdd))))
    assert scale > 0.5  # released at rest under gravity
    alm, _ = rx.equations.solve_dynamics(
        model, state.q, state.qd, structure=structure, method=rx.methods.AugmentedLagrangian()
    )
    assert float(np.max(np.abs(np.asarray(qdd - alm)))) < 1e-10 * scale
    for thinness, close in ((1e-7, True), (1e-2, False)):
        plate, _ = _bricard_of_laminae(thinness)
        decided = rx.decide(plate, state.q, state.t)
        assert np.all(np.asarray(decided.mass_definite))
        ref, _ = rx.equations.solve_dynamics(plate, state.q, state.qd, structure=decided)
        error = float(np.max(np.abs(np.asarray(qdd - ref)))) / scale
        assert (error < 1e-6) == close, (thinness, error)
    trajectory = rx.simulate(model, state, 0.5, saveat=rx.SaveAt(n=6))
    assert np.all(np.isfinite(np.asarray(trajectory.q)))
    assert float(np.max(trajectory.position_violation)) < 1e-6


def test_slender_rods_keep_the_default_off_the_paths_through_the_inverse_mass():
    """Bricard with rods 3 mm thick (M's condition number 1.3e6): the structure finds
    C M⁻¹ Cᵀ ill conditioned, so `NullSpace()` takes the pivoted QR, whose q̈ equals
    the augmented Lagrangian's and the elimination's (a Cholesky of the kept rows'
    Schur complement, unregularised)."""
    from redundax.methods import specialise

    mech = rx.models.bricard(side=0.003)
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    assert not bool(structure.schur)
    assert specialise(rx.methods.NullSpace(), structure, model).schur is False
    solve = lambda method: np.asarray(  # noqa: E731
        rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure, method=method)[0]
    )
    qdd = solve(rx.methods.NullSpace())
    scale = float(np.max(np.abs(qdd)))
    keep = tuple(k for k in range(model.n_constraints) if k != 1)
    for other, tol in (
        (rx.methods.AugmentedLagrangian(), 1e-10),
        (rx.methods.Elimination(keep=keep, n_rows=model.n_constraints), 1e-7),
    ):
        assert float(np.max(np.abs(solve(other) - qdd))) < tol * scale, type(other).__name__


def test_specialise_keeps_large_mechanisms_of_laminae_off_the_block_solver():
    """From `BLOCK_MIN_COORDINATES` on, `NullSpace()` takes the block solver, which
    applies each body's M⁻¹: not when one body is a lamina; with one slender rod it
    does, choosing its rows on C Cᵀ."""
    from redundax.methods import specialise
    from redundax.methods._base import BLOCK_MIN_COORDINATES

    mech = rx.models.spherical_chain(13)
    assert 13 * 12 >= BLOCK_MIN_COORDINATES
    flat, slender = list(mech.bodies), list(mech.bodies)
    flat[4] = dataclasses.replace(flat[4], inertia=(0.25, 0.25, 0.5))
    slender[4] = dataclasses.replace(slender[4], inertia=(1 / 12, 1 / 12, 1e-7))
    for bodies, block, pivots in (
        (mech.bodies, True, "mass"),
        (slender, True, "coordinates"),
        (flat, False, None),
    ):
        model = dataclasses.replace(mech, bodies=bodies).build()
        state = mech.initial_state()
        structure = rx.decide(model, state.q, state.t)
        chosen = specialise(rx.methods.NullSpace(), structure, model)
        assert (chosen.block, chosen.pivots) == (block, pivots)
        refused = pytest.raises(rx.ModelError, match="body 'rod4'")
        with contextlib.nullcontext() if block else refused:
            specialise(rx.methods.NullSpace(block=True), structure, model)


@pytest.mark.parametrize(
    ("label", "build"),
    [
        ("rods 3 mm thick", lambda: rx.models.bricard(side=0.003)),
        ("rods 1 mm thick", lambda: rx.models.bricard(side=0.001)),
        ("plates 1e-7 thin", lambda: _bricard_of_laminae(1e-7)),
    ],
)
def test_block_solver_chooses_its_rows_on_c_ct_for_slender_and_flat_bodies(label, build):
    """With M's condition number ≥ 1e6 the pivots of C M⁻¹ Cᵀ take independent rows
    for dependent ones and the other way round (the control: its q̈ is wrong by more
    than 100 %); the block solver's default then chooses the rows on C Cᵀ, the
    metric of the structure's rank: as many rows as C's rank, and q̈ equal to the
    augmented Lagrangian's (which factors M + α CᵀC) to 1e-10, through
    `solve_dynamics` and `NullSpace(block=True)` alike."""
    from redundax.methods import specialise

    built = build()
    model, state = built if isinstance(built, tuple) else (built.build(), built.initial_state())
    structure = rx.decide(model, state.q, state.t)
    assert np.linalg.cond(np.asarray(rx.equations.mass_matrix(model))) > 1e6
    assert specialise(rx.methods.BlockSparse(), structure, model).pivots == "coordinates"
    assert specialise(rx.methods.NullSpace(block=True), structure, model).pivots == "coordinates"

    def solve(method):
        return np.asarray(
            rx.equations.solve_dynamics(
                model, state.q, state.qd, structure=structure, method=method
            )[0]
        )

    reference = solve(rx.methods.AugmentedLagrangian())
    scale = float(np.max(np.abs(reference)))
    error = lambda qdd: float(np.max(np.abs(qdd - reference))) / scale  # noqa: E731
    assert error(solve(rx.methods.BlockSparse(pivots="mass"))) > 1.0, label
    for method in (
        rx.methods.BlockSparse(),
        rx.methods.BlockSparse(pivots="coordinates"),
        rx.methods.NullSpace(block=True),
    ):
        assert error(solve(method)) < 1e-10, (label, method)
    terms = rx.equations.dynamics_terms(model, state.q, state.qd, state.t)
    active = rx.methods.BlockSparse(pivots="coordinates").active_rows(terms, terms.gamma, structure)
    assert int(np.sum(np.asarray(active))) == int(structure.rank)


def test_block_solver_keeps_the_pivots_of_the_schur_complement_where_m_is_well_conditioned():
    """Bricard's default rods (100 mm thick, M's condition number 1.2e3) and the 6-bar
    (9.6e3): the block solver tests the pivots of C M⁻¹ Cᵀ, as Kraus et al."""
    from redundax.methods import MASS_PIVOTS_MAX_CONDITION, specialise

    for mech in (rx.models.bricard(), rx.models.six_bar()):
        model, state = mech.build(), mech.initial_state()
        structure = rx.decide(model, state.q, state.t)
        assert (
            np.linalg.cond(np.asarray(rx.equations.mass_matrix(model))) < MASS_PIVOTS_MAX_CONDITION
        )
        assert specialise(rx.methods.BlockSparse(), structure, model).pivots == "mass"


def test_a_run_of_slender_rods_by_the_block_solver_follows_the_default():
    """Bricard with rods 3 mm thick, 0.3 s: `BlockSparse()` (rows chosen on C Cᵀ) and
    the default `NullSpace()` (pivoted QR here) end in the same state to 1e-7; with
    the pivots of C M⁻¹ Cᵀ the run leaves its constraints within 0.01 s and is
    refused (the control: it used to end 1e-3 elsewhere, reported as a run)."""
    mech = rx.models.bricard(side=0.003)
    model, state = mech.build(), mech.initial_state()
    run = lambda method: rx.simulate(  # noqa: E731
        model,
        state,
        0.3,
        method=method,
        saveat=rx.SaveAt(n=2),
        stepsize_controller=diffrax.PIDController(rtol=1e-9, atol=1e-11),
        throw=False,
    )
    reference = np.asarray(run(rx.methods.NullSpace()).q[-1])
    assert float(np.max(np.abs(np.asarray(run(rx.methods.BlockSparse()).q[-1]) - reference))) < 1e-7
    control = run(rx.methods.BlockSparse(pivots="mass"))
    assert bool(control.left_constraints) and float(control.left_at) < 0.05


def test_a_forced_schur_path_is_warned_about_where_the_structure_predicts_a_bias():
    """`NullSpace(schur=True)` on Bricard with rods 10 mm thick (ŝ = 1.7e-6): an
    `AccuracyWarning` predicting a bias of about (δ/ŝ)⁷ = 2e-2, from `simulate` and
    `solve_dynamics`; the bias is real (q̈ off the augmented Lagrangian's by more
    than 1e-3, where the default agrees to 1e-10). On the 6-bar (ŝ = 9.4e-6,
    predicted 1.6e-7) no warning, and q̈ within 1e-5 of the default's."""
    mech = rx.models.bricard(side=0.01)
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    assert 1e-6 < float(structure.schur_gap) < 3e-6
    forced = rx.methods.NullSpace(schur=True)
    with pytest.warns(rx.AccuracyWarning, match=r"ŝ = 1\.7e-06.*\(δ/ŝ\)⁷ = 0\.02"):
        qdd, _ = rx.equations.solve_dynamics(
            model, state.q, state.qd, structure=structure, method=forced
        )
    with pytest.warns(rx.AccuracyWarning, match="rx.methods.NullSpace\\(\\) takes the pivoted QR"):
        rx.simulate(model, state, 0.01, method=forced, structure=structure, saveat=rx.SaveAt(n=2))
    solve = lambda method: np.asarray(  # noqa: E731
        rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure, method=method)[0]
    )
    reference = solve(rx.methods.AugmentedLagrangian())
    scale = float(np.max(np.abs(reference)))
    assert float(np.max(np.abs(np.asarray(qdd) - reference))) > 1e-3 * scale
    assert float(np.max(np.abs(solve(rx.methods.NullSpace()) - reference))) < 1e-10 * scale

    mech = rx.models.six_bar()
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    qdd, _ = rx.equations.solve_dynamics(
        model, state.q, state.qd, structure=structure, method=forced
    )
    default, _ = rx.equations.solve_dynamics(model, state.q, state.qd, structure=structure)
    scale = float(np.max(np.abs(np.asarray(default))))
    assert float(np.max(np.abs(np.asarray(qdd - default)))) < 1e-5 * scale
