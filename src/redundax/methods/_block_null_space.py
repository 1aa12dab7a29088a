"""The null-space form of the block solver (Kraus, Winckler & Bock 2001, §4 Eq. (10)
and §6): every spatial body's six rigid-body constraints eliminated by a null-space
basis of its own, so that the block factorisation sees the pairs' rows alone.

The math. A body's rigid-body constraints g(p) are linear in XᵀX (X = [u v w],
`redundax._bodies.rigid_body_residual`), so their Jacobian G(p) = ∂g/∂p satisfies

    G(p) D(p) = Ḡ,    D(p) = I₄ ⊗ X⁻ᵀ                                  (Eq. (10))

with Ḡ = G at X = I, a constant matrix of ones and twos: d(XᵀX) = dXᵀ X + Xᵀ dX
becomes Aᵀ + A for dX = X⁻ᵀ A. Hence, for the constant (12 × 6) basis N̄ of
Ḡ's null space, V = D(p) N̄ spans the null space of G(p) exactly at every p where
X is invertible (on the manifold or drifted off it), and every q̈ with G q̈ = γ_R is
q̈ = V z + q̈ᵖ with the particular q̈ᵖ = D(p) Ḡ⁺ γ_R. Substituted into
M q̈ + C_Jᵀ μ_J + Gᵀ μ_R = F, C_J q̈ = Γ_J and multiplied by Vᵀ (Vᵀ Gᵀ = 0):

    M̃ z + C̃ᵀ μ_J = F̃,   C̃ z = Γ̃,
    M̃ = Vᵀ M V (6 × 6 per body),  C̃ = C_J V,  F̃ = Vᵀ (F − M q̈ᵖ),  Γ̃ = Γ_J − C_J q̈ᵖ,

a system of the same block pattern over the pairs alone (`joint_pattern`), 6
coordinates per body. Afterwards Gᵀ μ_R = F − M q̈ − C_Jᵀ μ_J on each body, and
multiplied by Dᵀ, Ḡᵀ μ_R = Dᵀ(…): μ_R = (Ḡ Ḡᵀ)⁻¹ Ḡ Dᵀ (…), a constant matrix.

Nothing here is differentiated by hand: G is the rows JAX computes
([`redundax.equations.constraint_rows`][]), Ḡ is JAX's Jacobian of the residual at
X = I, and X itself is read off the rows G by the constant least-squares map that
the identity G(p) = Ḡ (I₄ ⊗ Xᵀ) gives (D is a change of variables, not a
derivative). N̄ is the orthonormal basis of Ḡ's null space (NumPy's SVD of a
constant), so VᵀV = I on the manifold.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._block_pattern import BlockPattern
from .._bodies import DOF, RIGID_ROWS, natural_from_pose, rigid_body_residual

TWIST = DOF - RIGID_ROWS
"""Coordinates per body left once its rigid-body rows are eliminated (6)."""


class _Frame(NamedTuple):
    """Constants of the rigid-body rows (NumPy): Ḡ, the map G ↦ Xᵀ, N̄, Ḡ⁺ and
    (Ḡ Ḡᵀ)⁻¹ Ḡ."""

    axes_from_rows: np.ndarray  # (3, 18): Xᵀ = this @ the stacked (u, v, w) blocks of G
    basis: np.ndarray  # (4, 3, 6): N̄ by 3-blocks (r, u, v, w)
    particular: np.ndarray  # (4, 3, 6): Ḡ⁺ by 3-blocks
    multipliers: np.ndarray  # (6, 4, 3): (Ḡ Ḡᵀ)⁻¹ Ḡ by 3-blocks


def _frame() -> _Frame:
    """The constants, from JAX's Jacobian of the rigid-body residual at X = I (host
    values even inside a trace)."""
    with jax.ensure_compile_time_eval():
        identity = natural_from_pose(np.zeros(3), np.eye(3))
        Gbar = np.asarray(jax.jacfwd(rigid_body_residual)(jnp.asarray(identity)))
    if Gbar.shape != (RIGID_ROWS, DOF) or np.any(Gbar[:, :3]):
        raise ValueError("null-space form: the rigid-body rows must not involve the position r")
    # G(p)[k, block j] = Ḡ[k, block j] Xᵀ for the blocks j = u, v, w.
    stacked = Gbar[:, 3:].reshape(RIGID_ROWS, 3, 3).transpose(1, 0, 2).reshape(-1, 3)
    _, s, Vt = np.linalg.svd(Gbar)
    if np.linalg.matrix_rank(stacked) != 3 or s[-1] <= 1e-12 * s[0]:
        raise ValueError("null-space form: the rigid-body rows must have full rank at X = I")
    pinv = np.linalg.pinv(Gbar)
    return _Frame(
        axes_from_rows=np.linalg.pinv(stacked),
        basis=Vt[RIGID_ROWS:].T.reshape(4, 3, TWIST),
        particular=pinv.reshape(4, 3, RIGID_ROWS),
        multipliers=np.linalg.solve(Gbar @ Gbar.T, Gbar).reshape(RIGID_ROWS, 4, 3),
    )


def rigid_rows(pattern: BlockPattern) -> tuple[np.ndarray, np.ndarray]:
    """(rows (nb, 6): each body's rigid-body rows of C; the pairs' rows, ascending)."""
    rows = np.zeros((pattern.n_bodies, RIGID_ROWS), dtype=int)
    found = np.zeros(pattern.n_bodies, dtype=bool)
    for g, flag in enumerate(pattern.rigid):
        if flag:
            (b,) = pattern.bodies[g]
            rows[b], found[b] = pattern.rows[g], True
    if pattern.dof != DOF or not found.all():
        raise ValueError(
            "null-space form: every body needs its six rigid-body rows in natural "
            f"coordinates ({DOF} per body); this pattern has {pattern.dof} coordinates "
            f"per body and rigid-body rows on {int(found.sum())} of {pattern.n_bodies} bodies"
        )
    pairs = sorted(r for g, flag in enumerate(pattern.rigid) if not flag for r in pattern.rows[g])
    return rows, np.asarray(pairs, dtype=int)


class Reduction(NamedTuple):
    """A state's null-space basis per body and what the recovery needs."""

    basis: jax.Array  # (nb, 12, 6): V = D N̄
    particular: jax.Array  # (nb, 12): q̈ᵖ = D Ḡ⁺ γ_R
    inverse_transpose: jax.Array  # (nb, 3, 3): X⁻ᵀ


def reduce(pattern: BlockPattern, R, B, mass_blocks, F, gamma):
    """The reduced system of the module docstring.

    **Returns:** (C̃ row by row (n_pairs_rows, P, 6) with the pairs' bodies B_J;
    M̃ (nb, 6, 6); F̃ (nb · 6,); Γ̃; the metric VᵀV per body; the `Reduction`)."""
    frame = _frame()
    nb = pattern.n_bodies
    body_rows, pair_rows = rigid_rows(pattern)
    # Each body's rigid-body rows G (nb, 6, 12), gathered from the slots on it.
    Rr, Br = R[body_rows], B[body_rows]
    on_body = Br == jnp.arange(nb)[:, None, None]
    G = jnp.sum(jnp.where(on_body[..., None], Rr, 0.0), axis=2)
    # Xᵀ from G (G[:, k, block j] = Ḡ[k, block j] Xᵀ), then X⁻ᵀ = (Xᵀ)⁻¹ by the adjugate.
    stacked = G[:, :, 3:].reshape(nb, RIGID_ROWS, 3, 3).transpose(0, 2, 1, 3)
    Xt = jnp.einsum("xs,bsy->bxy", frame.axes_from_rows, stacked.reshape(nb, -1, 3))
    c0, c1, c2 = Xt[:, :, 0], Xt[:, :, 1], Xt[:, :, 2]
    adjugate = jnp.stack([jnp.cross(c1, c2), jnp.cross(c2, c0), jnp.cross(c0, c1)], axis=1)
    T = adjugate / jnp.einsum("bk,bk->b", c0, adjugate[:, 0])[:, None, None]
    V = jnp.einsum("bxy,jyk->bjxk", T, frame.basis).reshape(nb, DOF, TWIST)
    y = jnp.einsum("jyk,bk->bjy", frame.particular, gamma[body_rows])
    Qp = jnp.einsum("bxy,bjy->bjx", T, y).reshape(nb, DOF)
    # The pairs' rows in the bodies' null-space coordinates (ground and unused
    # slots: index nb, a zero basis).
    Vx = jnp.concatenate([V, jnp.zeros((1, DOF, TWIST), V.dtype)])
    Qx = jnp.concatenate([Qp, jnp.zeros((1, DOF), Qp.dtype)])
    Rj, Bj = R[pair_rows], B[pair_rows]
    Rt = jnp.sum(Rj[..., None] * Vx[Bj], axis=-2)
    gamma_t = gamma[pair_rows] - jnp.einsum("rpk,rpk->r", Rj, Qx[Bj])
    MV = jnp.einsum("bkl,blm->bkm", mass_blocks, V)
    Mt = jnp.einsum("bkn,bkm->bnm", V, MV)
    force = F.reshape(nb, DOF) - jnp.einsum("bkl,bl->bk", mass_blocks, Qp)
    Ft = jnp.einsum("bkn,bk->bn", V, force)
    metric = jnp.einsum("bkn,bkm->bnm", V, V)
    return Rt, Bj, Mt, Ft.reshape(-1), gamma_t, metric, Reduction(V, Qp, T)


def recover(pattern: BlockPattern, reduction: Reduction, R, B, mass_blocks, F, z, mu_pairs):
    """q̈ = V z + q̈ᵖ and all of C's multipliers (the pairs' μ_J given, the
    rigid-body rows' μ_R from the balance of each body; module docstring)."""
    frame = _frame()
    nb = pattern.n_bodies
    body_rows, pair_rows = rigid_rows(pattern)
    V, Qp, T = reduction
    qdd = jnp.einsum("bkn,bn->bk", V, z.reshape(nb, TWIST)) + Qp
    Rj, Bj = R[pair_rows], B[pair_rows]
    joint_forces = jnp.zeros((nb + 1, DOF), qdd.dtype).at[Bj].add(mu_pairs[:, None, None] * Rj)
    rest = F.reshape(nb, DOF) - jnp.einsum("bkl,bl->bk", mass_blocks, qdd) - joint_forces[:nb]
    # Dᵀ (…): X⁻¹ on each 3-block, then μ_R = (Ḡ Ḡᵀ)⁻¹ Ḡ Dᵀ (…).
    transformed = jnp.einsum("byx,bjy->bjx", T, rest.reshape(nb, 4, 3))
    mu_rigid = jnp.einsum("kjx,bjx->bk", frame.multipliers, transformed)
    mu = jnp.zeros(pattern.n_rows, qdd.dtype)
    mu = mu.at[pair_rows].set(mu_pairs).at[body_rows.reshape(-1)].set(mu_rigid.reshape(-1))
    return qdd.reshape(-1), mu
