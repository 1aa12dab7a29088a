"""Linear-algebra kernels shared by the methods of handling redundancy."""

import jax
import jax.numpy as jnp
from jaxtyping import Array, ArrayLike, Float, Int

from .._precision import precise
from .._qr import pivoted_qr


def _pad_square(a: Float[Array, "r c"], size: int) -> Float[Array, "size size"]:
    out = jnp.zeros((size, size))
    r, c = min(a.shape[0], size), min(a.shape[1], size)
    return out.at[:r, :c].set(a[:r, :c])


def _pad_vector(v: Float[Array, " k"], size: int) -> Float[Array, " size"]:
    k = min(v.shape[0], size)
    return jnp.zeros(size).at[:k].set(v[:k])


def null_space_acceleration(
    C: Float[Array, "nc nq"],
    M: Float[Array, "nq nq"],
    F: Float[Array, " nq"],
    gamma: Float[Array, " nc"],
    rtol: float | None = None,
    rank: Int[ArrayLike, ""] | None = None,
) -> Float[Array, " nq"]:
    """Solve [Vᵀ M; C] q̈ = [Vᵀ F; Γ] (Eq. 13) with V from the pivoted QR of Cᵀ.

    Cᵀ P = Q R (n × (m+h)), rank r, and q̈ = Q y. The range part y[:r] solves
    C q̈ = Γ in the least-squares sense, R₁ R₁ᵀ y[:r] = R₁ Pᵀ Γ with R₁ = R[:r]:
    when drift makes Γ slightly inconsistent (off the constraint manifold, with
    dependent rows), this is the pivot-independent C⁺Γ, so q̈ stays a smooth
    function of the state. The last n − r rows, Q[:, r:]ᵀ (M Q y − F) = 0, are the
    null-space equations with V = Q[:, r:]. Both are stacked into one square,
    nonsingular system so that the rank may be a traced value.
    """
    n = C.shape[1]
    qr = pivoted_qr(C.T, rtol, rank)
    Q = qr.q
    k = jnp.arange(n)[:, None]
    R1 = jnp.where(k < qr.rank, qr.r, 0.0)
    G = jnp.where(k < qr.rank, R1 @ R1.T, Q.T @ M @ Q)
    rhs = jnp.where(k[:, 0] < qr.rank, R1 @ gamma[qr.perm], Q.T @ F)
    return Q @ jnp.linalg.solve(G, rhs)


def minimum_norm_multipliers(
    C: Float[Array, "nc nq"],
    f: Float[Array, " nq"],
    rtol: float | None = None,
    rank: Int[ArrayLike, ""] | None = None,
) -> Float[Array, " nc"]:
    """The λ of least Euclidean norm with Cᵀ λ = f (f in the range of Cᵀ).

    C E = Q R, rank r: Rᵀ d = Eᵀ f with d = Qᵀ λ fixes d[:r] (triangular); the
    remaining d[r:], the coordinates of λ in the left null space of C, are set to
    zero (Wojtyra & Frączek 2013, Eqs. 22–25).
    """
    nc = C.shape[0]
    qr = pivoted_qr(C, rtol, rank)
    a = jnp.arange(nc)[:, None]
    H = jnp.where(a < qr.rank, _pad_square(qr.r.T, nc), jnp.eye(nc))
    rhs = jnp.where(a[:, 0] < qr.rank, _pad_vector(f[qr.perm], nc), 0.0)
    return qr.q @ jnp.linalg.solve(H, rhs)


def weighted_multipliers(
    C: Float[Array, "nc nq"],
    f: Float[Array, " nq"],
    weights: Float[Array, " nc"],
    rtol: float | None = None,
    rank: Int[ArrayLike, ""] | None = None,
) -> Float[Array, " nc"]:
    """The λ with Cᵀ λ = f that minimises Σ_k w_k λ_k², for weights w ≥ 0 (zero
    weights allowed on rows that no left-null vector of C lives on alone, such as
    rigid-body rows).

    λ = λ₀ + N c with λ₀ the minimum-norm solution and N the left null space of C
    (pivoted QR); c solves (Nᵀ W N) c = −Nᵀ W λ₀.
    """
    lam0 = minimum_norm_multipliers(C, f, rtol, rank)
    qr = pivoted_qr(C, rtol, rank)
    null = qr.null_mask()
    N = jnp.where(null[None, :], qr.q, 0.0)
    G = N.T @ (weights[:, None] * N) + jnp.diag(jnp.where(null, 0.0, 1.0))
    return lam0 + N @ jnp.linalg.solve(G, -N.T @ (weights * lam0))


def spd_solve(A, b):
    """A⁻¹ b for symmetric positive definite A (Cholesky).

    The lower factor throughout (`lower=True`): the upper one is the lower one
    transposed, a copy that cost 5 of 18 µs of Bricard's 59-row solve."""
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(A, lower=True), b)


def mass_solver(
    M: Float[Array, "nq nq"],
    block: int,
    inverse: Float[Array, "nb block block"] | None = None,
):
    """x ↦ M⁻¹ x for a mass matrix that is block diagonal with blocks of size
    `block` (one per body: absolute and natural coordinates), or dense (0).
    `inverse`: the blocks' inverses when known (`Terms.mass_inverse`, the bodies'
    closed form); else they are factorised here."""
    n = M.shape[0]
    if block and n % block == 0 and n > 0:
        nb = n // block
        if inverse is None:
            blocks = jnp.moveaxis(
                jnp.diagonal(M.reshape(nb, block, nb, block), axis1=0, axis2=2), -1, 0
            )
            # SPD blocks: the inverse from their Cholesky factors (`jnp.linalg.inv`'s
            # LU turns its row pivots into a permutation with a loop per call).
            eye = jnp.broadcast_to(jnp.eye(block), blocks.shape)
            inverse = jax.scipy.linalg.cho_solve(
                jax.scipy.linalg.cho_factor(blocks, lower=True), eye
            )

        def solve(x):
            xb = x.reshape(nb, block, -1)
            return jnp.einsum("bkl,blc->bkc", inverse, xb).reshape(x.shape)

        return solve
    factor = jax.scipy.linalg.cho_factor(M, lower=True)
    return lambda x: jax.scipy.linalg.cho_solve(factor, x)


SCHUR_REGULARISATION = precise(1e-6, 1e-3)
"""Shift δ of the Jacobi-scaled all-rows Schur complement, D⁻½ S D⁻½ + δ I."""


SCHUR_INVERSE_MAX_ROWS = 32
"""Up to this many rows, the refinements of
[`schur_acceleration`][redundax.methods.schur_acceleration] apply
(Ŝ + δI)⁻¹, formed once from the Cholesky factor (~1.5 nc³ flops), instead of
solving with the factor each time (14 triangular solves: each a LAPACK call, and
under `vmap` a loop over the variants). Measured on 2 CPU cores, 10 s runs: the
mobile robot (22 rows; defaults, rtol 1e-8) 30.2 → 20.6 ms, its right-hand side
under `vmap` at batch 256 10.5 → 7.6 µs per variant; Bricard (65 rows; projection
after every step, rtol 5e-6, no singularity monitor) 39 → 63 ms: there the inverse
costs more than the solves it saves."""


def schur_acceleration(
    C: Float[Array, "nc nq"],
    M: Float[Array, "nq nq"],
    F: Float[Array, " nq"],
    gamma: Float[Array, " nc"],
    block: int = 0,
    refinements: int = 6,
    mass_inverse: Float[Array, "nb block block"] | None = None,
) -> Float[Array, " nq"]:
    """q̈ of M q̈ + Cᵀ μ = F, C q̈ = Γ over *all* rows of C, redundant or not.

    With S = C M⁻¹ Cᵀ (singular when rows are dependent), scaled to unit diagonal
    (Ŝ = D⁻½ S D⁻½, D = diag S): μ from the Cholesky factor of Ŝ + δ I,
    δ = `SCHUR_REGULARISATION`, refined `refinements` times
    (μ ← μ + (Ŝ + δI)⁻¹ (r̂ − Ŝ μ)), then q̈ = M⁻¹ (F − Cᵀ D⁻½ μ). The shift only
    touches μ along the left null space of C (the self-stresses), which Cᵀ
    annihilates, and its bias on the rest falls like (δ/ŝ)^(k+1) (ŝ: the smallest
    non-zero eigenvalue of Ŝ; a body of vanishing inertia makes it small): q̈ is
    the null-space solution [Vᵀ M; C] q̈ = [Vᵀ F; Γ] (the same M q̈ − F ∈ span Cᵀ,
    the same constraints), with no pivoting, no rank and no choice of rows. Off the
    constraint manifold dependent rows are independent by about the drift σ; the
    shift acts on such a direction as a filter of gain ≈ (k+1) σ/δ instead of the
    1/σ of an exact inverse, so the drift's inconsistency in Γ is (nearly) ignored
    as a fixed-rank truncation would ignore it — which is why δ is not tiny. Where
    the rank of C drops the solution stays bounded (regularised). M⁻¹ is
    applied block by block (`block`: coordinates per body; M is block diagonal and
    constant in absolute and natural coordinates), with the blocks' inverses
    `mass_inverse` when given ([`mass_solver`][redundax.internal.mass_solver]).
    """
    solve = mass_solver(M, block, mass_inverse)
    MiCt = solve(C.T)
    MiF = solve(F[:, None])[:, 0]
    S = C @ MiCt
    r = C @ MiF - gamma
    # Jacobi scaling: unit diagonal (rows of zero norm stay zero, with a unit pivot).
    d = jnp.diag(S)
    scale = jnp.where(d > 0.0, 1.0 / jnp.sqrt(jnp.where(d > 0.0, d, 1.0)), 1.0)
    Ss = scale[:, None] * S * scale[None, :]
    shift = jnp.where(d > 0.0, SCHUR_REGULARISATION, 1.0)
    rs = scale * r
    shifted = Ss + jnp.diag(shift)
    if S.shape[0] <= SCHUR_INVERSE_MAX_ROWS:
        # (Ŝ + δI)⁻¹ = L⁻ᵀ L⁻¹ once (LAPACK's potri): each application is a
        # matrix–vector product instead of two triangular solves.
        L = jnp.linalg.cholesky(shifted)
        Linv = jax.scipy.linalg.solve_triangular(L, jnp.eye(S.shape[0], dtype=S.dtype), lower=True)
        inverse = Linv.T @ Linv
        apply = lambda v: inverse @ v  # noqa: E731
    else:
        factor = jax.scipy.linalg.cho_factor(shifted, lower=True)
        apply = lambda v: jax.scipy.linalg.cho_solve(factor, v)  # noqa: E731
    mu = apply(rs)
    for _ in range(refinements):
        mu = mu + apply(rs - Ss @ mu)
    return MiF - MiCt @ (scale * mu)


def schur_solve(Cs, M, F, gs, block: int, mass_inverse=None, active=None):
    """(q̈, μ) of M q̈ + C_sᵀ μ = F, C_s q̈ = Γ_s for C_s of full row rank:
    (C_s M⁻¹ C_sᵀ) μ = C_s M⁻¹ F − Γ_s (Cholesky), q̈ = M⁻¹ (F − C_sᵀ μ)
    (M⁻¹ as in [`mass_solver`][redundax.internal.mass_solver]). `active` (a mask of the rows,
    optional): the
    other rows take no part (their μ is zero), with no change of shapes."""
    if active is not None:
        Cs = jnp.where(active[:, None], Cs, 0.0)
        gs = jnp.where(active, gs, 0.0)
    solve = mass_solver(M, block, mass_inverse)
    MiCt = solve(Cs.T)
    MiF = solve(F[:, None])[:, 0]
    S = Cs @ MiCt
    if active is not None:
        S = S + jnp.diag(jnp.where(active, 0.0, 1.0))
    mu = spd_solve(S, Cs @ MiF - gs)
    return MiF - MiCt @ mu, mu
