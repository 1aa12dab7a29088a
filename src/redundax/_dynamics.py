"""Equations of motion M q̈ + Cᵀ λ = F, C q̈ = Γ, and the ways of handling
redundant constraints (Wojtyra & Frączek 2013 §3.1; DESIGN.md §2).

With redundancy (rank C = r < m + h) q̈ is unique and λ is not. Every method
below returns the same q̈ (the penalty method only in its limit) and a λ of its
own choosing; only the reactions of uniquely solvable pairs agree between methods.
"""

import abc
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from ._assembly import (
    acceleration_rhs,
    constraint_matrix,
    generalized_forces,
    mass_matrix,
    position_residual,
    velocity_bias,
)
from ._model import Model
from ._qr import DECISION_RTOL, pivoted_qr
from ._types import Scalar


class Terms(eqx.Module):
    """Everything the equations of motion need at (q, q̇, t)."""

    C: Float[Array, "nc nq"]
    b: Float[Array, " nc"]
    gamma: Float[Array, " nc"]
    phi: Float[Array, " m"]
    M: Float[Array, "nq nq"]
    F: Float[Array, " nq"]
    velocity_error: Float[Array, " nc"]
    block: int = eqx.field(static=True, default=0)
    """Size of the diagonal blocks of M (coordinates per body; 0: treat M as dense)."""


def dynamics_terms(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar
) -> Terms:
    """C, b, Γ, Φ, M and F at (q, q̇, t), all by autodiff."""
    C = constraint_matrix(model, q, t)
    b = velocity_bias(model, q, t)
    return Terms(
        C=C,
        b=b,
        gamma=acceleration_rhs(model, q, qd, t),
        phi=position_residual(model, q, t),
        M=mass_matrix(model, q),
        F=generalized_forces(model, q, qd, t),
        velocity_error=C @ qd + b,
        block=model.bodies.dof,
    )


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


def _spd_solve(A, b):
    return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(A), b)


def _mass_solver(M: Float[Array, "nq nq"], block: int):
    """x ↦ M⁻¹ x for a mass matrix that is block diagonal with blocks of size
    `block` (one per body: absolute and natural coordinates), or dense (0)."""
    n = M.shape[0]
    if block and n % block == 0 and n > 0:
        nb = n // block
        blocks = jnp.moveaxis(
            jnp.diagonal(M.reshape(nb, block, nb, block), axis1=0, axis2=2), -1, 0
        )
        inverse = jnp.linalg.inv(blocks)

        def solve(x):
            xb = x.reshape(nb, block, -1)
            return jnp.einsum("bkl,blc->bkc", inverse, xb).reshape(x.shape)

        return solve
    factor = jax.scipy.linalg.cho_factor(M)
    return lambda x: jax.scipy.linalg.cho_solve(factor, x)


SCHUR_REGULARISATION = 1e-6
"""Shift δ of the Jacobi-scaled all-rows Schur complement, D⁻½ S D⁻½ + δ I."""


def schur_acceleration(
    C: Float[Array, "nc nq"],
    M: Float[Array, "nq nq"],
    F: Float[Array, " nq"],
    gamma: Float[Array, " nc"],
    block: int = 0,
    refinements: int = 6,
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
    constant in absolute and natural coordinates).
    """
    solve = _mass_solver(M, block)
    MiCt = solve(C.T)
    MiF = solve(F[:, None])[:, 0]
    S = C @ MiCt
    r = C @ MiF - gamma
    # Jacobi scaling: unit diagonal (rows of zero norm stay zero, with a unit pivot).
    d = jnp.diag(S)
    scale = jnp.where(d > 0.0, 1.0 / jnp.sqrt(jnp.where(d > 0.0, d, 1.0)), 1.0)
    Ss = scale[:, None] * S * scale[None, :]
    shift = jnp.where(d > 0.0, SCHUR_REGULARISATION, 1.0)
    factor = jax.scipy.linalg.cho_factor(Ss + jnp.diag(shift))
    rs = scale * r
    mu = jax.scipy.linalg.cho_solve(factor, rs)
    for _ in range(refinements):
        mu = mu + jax.scipy.linalg.cho_solve(factor, rs - Ss @ mu)
    return MiF - MiCt @ (scale * mu)


def _schur_solve(Cs, M, F, gs, block: int):
    """(q̈, μ) of M q̈ + C_sᵀ μ = F, C_s q̈ = Γ_s for C_s of full row rank:
    (C_s M⁻¹ C_sᵀ) μ = C_s M⁻¹ F − Γ_s (Cholesky), q̈ = M⁻¹ (F − C_sᵀ μ)."""
    solve = _mass_solver(M, block)
    MiCt = solve(Cs.T)
    MiF = solve(F[:, None])[:, 0]
    mu = _spd_solve(Cs @ MiCt, Cs @ MiF - gs)
    return MiF - MiCt @ mu, mu


SCHUR_MIN_EIGENVALUE = 5e-5
"""Smallest non-zero eigenvalue of the scaled Schur complement for which
[`schur_acceleration`][] is used: its shift's bias, (δ/ŝ)⁷ with δ = 1e-6 and six
refinements, is then below 1e-12 (measured ŝ: Bricard 1.7e-4, mobile robot 2.2e-3)."""


def schur_suitable(
    C: Float[ArrayLike, "nc nq"] | None, M: Float[ArrayLike, "nq nq"], rank: int | None = None
) -> bool:
    """Whether the all-rows Schur complement is well conditioned apart from its
    `nc − rank` zero eigenvalues (the redundancy), here and along the motion:
    false when M itself is badly conditioned (κ(M) > 1e8, e.g. a point mass
    modelled with a vanishing inertia: C M⁻¹ Cᵀ then nearly loses rank wherever
    rows mix the light and heavy directions), or when the scaled complement has a
    tiny non-zero eigenvalue at this configuration. A host-side decision, taken
    once at the initial configuration."""
    M = np.asarray(M, dtype=float)
    m_eig = np.linalg.eigvalsh(M)
    if m_eig[0] <= 0.0 or m_eig[-1] > 1e8 * m_eig[0]:
        return False
    if C is None or rank is None:
        return True
    C = np.asarray(C, dtype=float)
    if C.shape[0] == 0:
        return True
    S = C @ np.linalg.solve(M, C.T)
    d = np.diag(S)
    scale = np.where(d > 0.0, 1.0 / np.sqrt(np.where(d > 0.0, d, 1.0)), 1.0)
    eig = np.linalg.eigvalsh(scale[:, None] * S * scale[None, :])
    p = C.shape[0] - int(rank)
    return p >= eig.size or bool(eig[p] > SCHUR_MIN_EIGENVALUE)


def decide_schur(method, M, C=None, rank=None):
    """`method` with its `schur` flag decided by [`schur_suitable`][] when it is
    undecided and M (and C, rank, if given) are concrete; unchanged otherwise."""
    if getattr(method, "schur", False) is not None or isinstance(M, jax.core.Tracer):
        return method
    if isinstance(C, jax.core.Tracer) or isinstance(rank, jax.core.Tracer):
        C = rank = None
    suitable = schur_suitable(C, M, None if rank is None else int(rank))
    return dataclasses.replace(method, schur=suitable)


def _null_space_qdd(terms, gamma, rtol, rank, schur: bool | None):
    """The null-space q̈: Schur complement over all rows for block-diagonal M
    (models built by redundax) when `schur` was decided True (see
    [`schur_suitable`][]), the pivoted-QR formulation otherwise."""
    if terms.block and schur:
        return schur_acceleration(terms.C, terms.M, terms.F, gamma, terms.block)
    return null_space_acceleration(terms.C, terms.M, terms.F, gamma, rtol, rank)


class AbstractRedundancyMethod(eqx.Module):
    """A way of handling redundant constraints: it yields q̈ and one choice of λ."""

    @abc.abstractmethod
    def prepare(
        self, C: Float[Array, "nc nq"], rank: Int[ArrayLike, ""] | None = None
    ) -> "AbstractRedundancyMethod":
        """Take the method's discrete decisions once, from C at a regular
        configuration, and return the method ready to use. `rank`, if given, is
        the rank of C decided by the caller; a method already prepared is returned
        unchanged."""
        raise NotImplementedError

    @abc.abstractmethod
    def acceleration(self, terms: Terms, gamma: Float[Array, " nc"]) -> Float[Array, " nq"]:
        """q̈ for the (possibly stabilised) acceleration right-hand side `gamma`."""
        raise NotImplementedError

    @abc.abstractmethod
    def multipliers(
        self, terms: Terms, gamma: Float[Array, " nc"], qdd: Float[Array, " nq"]
    ) -> Float[Array, " nc"]:
        """λ consistent with q̈ (M q̈ + Cᵀ λ = F)."""
        raise NotImplementedError


class NullSpace(AbstractRedundancyMethod):
    """Null-space formulation for q̈ (Eq. 13), minimum-norm λ (pseudoinverse).

    - `rtol`: relative rank tolerance for the decisions.
    - `rank`: the rank of C, decided once by `prepare` at a regular configuration
      (a traced value inside `jax.vmap`); only the multipliers need it.

    - `schur`: whether q̈ comes from [`schur_acceleration`][] over all rows (the
      same q̈ as [Vᵀ M; C] q̈ = [Vᵀ F; Γ], without an orthogonal factorisation at
      run time; several times faster) or from [`null_space_acceleration`][]
      (pivoted QR of Cᵀ). None: decided by [`schur_suitable`][] wherever the mass
      matrix is concrete (`simulate`, `reactions`), else the QR path.

    The minimum Euclidean norm mixes rows of different units (N and N m for a
    weld, for instance), so the non-unique multipliers it returns change when a
    row is rescaled; unique reactions do not.
    """

    rtol: float | None = None
    rank: Int[ArrayLike, ""] | None = None
    schur: bool | None = eqx.field(static=True, default=None)

    def prepare(self, C, rank=None):
        if self.rank is not None:
            return self
        if rank is None:
            rank = pivoted_qr(C, DECISION_RTOL if self.rtol is None else self.rtol).rank
            if not isinstance(C, jax.core.Tracer):
                rank = int(rank)
        return dataclasses.replace(self, rank=rank)

    def acceleration(self, terms, gamma):
        return _null_space_qdd(terms, gamma, self.rtol, self.rank, self.schur)

    def multipliers(self, terms, gamma, qdd):
        f = terms.F - terms.M @ qdd
        return minimum_norm_multipliers(terms.C, f, self.rtol, self.rank)


class WeightedMinimumNorm(AbstractRedundancyMethod):
    """Null-space q̈; λ of least weighted norm Σ_k w_k λ_k² with Cᵀ λ = F − M q̈.

    With `weights=None` the weights are w_k = C_k M⁻¹ C_kᵀ ("mass-weighted"): each
    multiplier is weighted by the acceleration its unit value would cause, which
    makes the result independent of the scaling (units) of each row of C.
    """

    weights: Float[Array, " nc"] | None = None
    rtol: float | None = None
    rank: Int[ArrayLike, ""] | None = None
    schur: bool | None = eqx.field(static=True, default=None)

    def prepare(self, C, rank=None):
        if self.rank is not None:
            return self
        rank = pivoted_qr(C, self.rtol).rank if rank is None else rank
        return dataclasses.replace(self, rank=rank)

    def acceleration(self, terms, gamma):
        return _null_space_qdd(terms, gamma, self.rtol, self.rank, self.schur)

    def multipliers(self, terms, gamma, qdd):
        C = terms.C
        if self.weights is None:
            w = jnp.einsum("ka,ka->k", C, jnp.linalg.solve(terms.M, C.T).T)
        else:
            w = jnp.asarray(self.weights, dtype=float)
        # Rows of C that vanish (w = 0) carry no reaction; keep them harmless.
        w = jnp.where(w > 0.0, w, 1.0)
        s = jnp.sqrt(w)
        mu = minimum_norm_multipliers(C / s[:, None], terms.F - terms.M @ qdd, self.rtol, self.rank)
        return mu / s


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


class Compliant(AbstractRedundancyMethod):
    """Compliant joints in their rigid limit: q̈ by the null-space formulation, and
    the multipliers that joints with these stiffnesses converge to as the
    stiffnesses grow at fixed ratios.

    A joint row of stiffness k_k deflects by δ_k = λ_k / k_k, and the deflections
    must be compatible (δ = C Δq for some Δq): λ = K C Δq with Cᵀ λ = F − M q̈, which
    is the λ of least Σ λ_k² / k_k. Every reaction is then determined: the unique
    ones are the rigid values; the non-unique ones depend on the *ratios* of the
    stiffnesses of the pairs that share a redundancy (Wojtyra & Frączek 2013 §3.1;
    González et al. 2011). Build per-row stiffnesses with [`joint_stiffness`][]
    (rigid-body rows of spatial bodies get k = ∞). [`Penalty`][] with the same
    stiffnesses is the finite-stiffness model that tends to this one.

    - `stiffness`: per row of C, or one value for every row [N/m, N m/rad].
    """

    stiffness: Float[ArrayLike, "..."] = 1.0
    rtol: float | None = None
    rank: Int[ArrayLike, ""] | None = None
    schur: bool | None = eqx.field(static=True, default=None)

    def prepare(self, C, rank=None):
        if self.rank is not None:
            return self
        rank = pivoted_qr(C, self.rtol).rank if rank is None else rank
        return dataclasses.replace(self, rank=rank)

    def acceleration(self, terms, gamma):
        return _null_space_qdd(terms, gamma, self.rtol, self.rank, self.schur)

    def multipliers(self, terms, gamma, qdd):
        nc = terms.C.shape[0]
        k = jnp.broadcast_to(jnp.asarray(self.stiffness, dtype=float), (nc,))
        w = jnp.where(jnp.isinf(k), 0.0, 1.0 / jnp.where(jnp.isinf(k), 1.0, k))
        return weighted_multipliers(terms.C, terms.F - terms.M @ qdd, w, self.rtol, self.rank)


def joint_stiffness(
    model: Model,
    default: float | tuple[float, float] = 1.0,
    pairs: dict | None = None,
) -> Float[Array, " nc"]:
    """Per-row stiffnesses for [`Compliant`][] and [`Penalty`][].

    **Arguments:**

    - `model`: the mechanism.
    - `default`: stiffness of every joint row not named in `pairs`: one number,
      or `(force rows, moment rows)` — rows whose component label names a moment
      or torque get the second.
    - `pairs`: `{pair name: k}` with one number for all the pair's rows or one per
      row (component).

    **Returns:** shape `(m + h,)`; the rigid-body rows of spatial bodies get ∞.

    **Raises:** `ValueError` naming an unknown pair or a wrong number of values.
    """
    linear, angular = default if isinstance(default, tuple) else (default, default)
    k = np.full(model.n_constraints, np.inf)
    for p in model.pairs:
        for r, label in zip(p.rows, p.components or ("",) * len(p.rows), strict=True):
            k[r] = angular if ("moment" in label or "torque" in label) else linear
    for name, value in (pairs or {}).items():
        try:
            rows = model.pair(name).rows
        except KeyError as e:
            raise ValueError(f"joint_stiffness: {e.args[0]}") from None
        v = (
            np.broadcast_to(np.asarray(value, dtype=float).reshape(-1), (len(rows),))
            if np.size(value) in (1, len(rows))
            else None
        )
        if v is None:
            raise ValueError(
                f"joint_stiffness: pair {name!r} has {len(rows)} rows, got {np.size(value)} "
                "stiffnesses (give one, or one per row)"
            )
        k[list(rows)] = v
    if np.any(k <= 0.0):
        raise ValueError("joint_stiffness: stiffnesses must be positive")
    return jnp.asarray(k)


class Elimination(AbstractRedundancyMethod):
    """Redundant-constraint elimination: the rows `keep` (0-based) form an
    independent set; the other rows are dropped and their multipliers are zero.

    Build it with [`redundax.eliminate`][], which checks that the dropped rows are
    really redundant, or chooses them with the pivoted QR.
    """

    keep: tuple[int, ...] = eqx.field(static=True)
    n_rows: int = eqx.field(static=True)

    def prepare(self, C, rank=None):
        return self

    def _solve(self, terms, gamma):
        # M q̈ + C_sᵀ μ = F, C_s q̈ = Γ_s by the Schur complement (Cholesky of
        # C_s M⁻¹ C_sᵀ, M⁻¹ block by block).
        idx = np.asarray(self.keep, dtype=int)
        qdd, mu = _schur_solve(terms.C[idx], terms.M, terms.F, gamma[idx], terms.block)
        return qdd, jnp.zeros(self.n_rows).at[idx].set(mu)

    def acceleration(self, terms, gamma):
        return self._solve(terms, gamma)[0]

    def multipliers(self, terms, gamma, qdd):
        return self._solve(terms, gamma)[1]

    @property
    def eliminated(self) -> tuple[int, ...]:
        """Dropped rows, 0-based."""
        return tuple(k for k in range(self.n_rows) if k not in self.keep)


def _self_stress_share(model: Model, qs: np.ndarray, ts: np.ndarray, rank: int) -> np.ndarray:
    """Per row of C: the smallest share ‖N_k‖ / max_j ‖N_j‖ of the self-stresses (N
    the left null space of C) over the configurations `qs` at times `ts` (host-side)."""
    shares = []
    for q, t in zip(qs, ts, strict=True):
        C = np.asarray(constraint_matrix(model, jnp.asarray(q), t))
        norms = np.linalg.norm(np.linalg.svd(C)[0][:, rank:], axis=1)
        shares.append(norms / max(float(np.max(norms)), 1e-300))
    return np.min(shares, axis=0)


def eliminate(
    model: Model,
    q: Float[ArrayLike, " nq"],
    t: Scalar = 0.0,
    rows: tuple[int, ...] | None = None,
    rtol: float | None = None,
    along=None,
) -> Elimination:
    """An [`Elimination`][] of `rows` (1-based, as numbered in the paper and in the
    solvability report), or of rows chosen at (q, t) when `rows` is None. Decided
    once, outside any trace.

    The automatic choice drops the p rows that carry the self-stresses best. With N
    an orthonormal basis of the left null space of C (m × p), dropping rows D is
    valid exactly when N[D] is non-singular; the p rows are the column pivots of
    the pivoted QR of Nᵀ, its columns weighted by each row's share ‖N_k‖ / max ‖N_j‖
    of the self-stresses: at (q, t), or its smallest value over the saved states of
    `along` (a [`Trajectory`][], e.g. a null-space run of the same mechanism) when
    given. The rows dropped must stay redundant along the whole motion: where a
    dropped row's share vanishes, the kept rows become dependent and the
    integration stiff. At a symmetric configuration the shares tie, and the choice
    at (q, t) alone is arbitrary (Bricard's linkage: every joint row carries the
    same share at the square configuration, and half of them lose it within
    about a second of motion), so pass `along` or choose `rows` yourself there. Rigid-body
    rows are never dropped.

    **Raises:** `ValueError` if a row is out of range, or if dropping the rows
    would lower the rank of C (the message names the rows that are not redundant).
    """
    C = np.asarray(constraint_matrix(model, jnp.asarray(q, dtype=float), t))
    nc = C.shape[0]
    qr = pivoted_qr(C.T, rtol)
    rank = int(qr.rank)
    internal = model.internal_rows
    if rows is None:
        p = nc - rank
        if p == 0:
            return Elimination(keep=tuple(range(nc)), n_rows=nc)
        null = np.linalg.svd(C)[0][:, rank:]  # left null space, (nc, p)
        if along is None:
            states, times = np.asarray(q, dtype=float)[None], np.asarray([t], dtype=float)
        else:
            states, times = np.asarray(along.q), np.asarray(along.ts)
        score = _self_stress_share(model, states, times, rank)
        weights = null.T * score[None, :]
        weights[:, list(internal)] = 0.0
        order = np.asarray(pivoted_qr(jnp.asarray(weights), rtol).perm)
        drop = sorted(int(k) for k in order[:p])
        keep = tuple(k for k in range(nc) if k not in drop)
        if int(pivoted_qr(C[list(keep)].T, rtol).rank) != rank:
            raise ValueError(
                f"eliminate: could not choose {rank} independent rows at this configuration; "
                "is it singular? Pass `rows` explicitly."
            )
        return Elimination(keep=keep, n_rows=nc)
    bad = [r for r in rows if not 1 <= int(r) <= nc]
    if bad:
        raise ValueError(f"eliminate: rows {bad} out of range 1..{nc} (rows are 1-based)")
    inner = [int(r) for r in rows if int(r) - 1 in internal]
    if inner:
        raise ValueError(
            f"eliminate: rows {inner} are rigid-body rows of the spatial bodies (rows "
            f"{internal[0] + 1}..{internal[-1] + 1}), not rows of a kinematic pair; they "
            "cannot be eliminated"
        )
    drop = sorted({int(r) - 1 for r in rows})
    keep = tuple(k for k in range(nc) if k not in drop)
    if len(keep) != rank or int(pivoted_qr(C[list(keep)].T, rtol).rank) != rank:
        names = {k: p.name for p in model.pairs for k in p.rows}
        desc = ", ".join(f"{k + 1} (pair {names[k]!r})" for k in drop)
        raise ValueError(
            f"eliminate: dropping rows {desc} changes the motion: rank C = {rank} and "
            f"degree of redundancy {nc - rank}, but the kept rows have rank "
            f"{int(pivoted_qr(C[list(keep)].T, rtol).rank)} with {len(keep)} rows. Drop exactly "
            f"{nc - rank} rows that are dependent on the others (see the solvability report)."
        )
    return Elimination(keep=keep, n_rows=nc)


class AugmentedLagrangian(AbstractRedundancyMethod):
    """Bayo's augmented Lagrangian iteration at acceleration level:
    (M + α CᵀC) q̈ₖ₊₁ = F − Cᵀ λₖ + α Cᵀ Γ,  λₖ₊₁ = λₖ + α (C q̈ₖ₊₁ − Γ), λ₀ = 0.

    `penalty` α is relative: α = penalty · max diag(M) / max diag(CᵀC). The
    defaults (1e5, 16 iterations) converge to round-off at regular configurations
    and stay smooth where the rank of C drops: measured on an A02 chain of ten
    parallelograms over 10 s, the branch is kept to 3e-5 rad and the energy to
    1.2e-4 relative (1e6 with 8 iterations: 3 J of 159 J).
    Started from λ₀ = 0 the iterates stay in the range of C, so the limit is the
    minimum-norm λ. `iterations` is fixed (differentiable; no data-dependent loop).
    """

    penalty: float = 1e5
    iterations: int = eqx.field(static=True, default=16)

    def prepare(self, C, rank=None):
        return self

    def _solve(self, terms, gamma):
        C, M, F = terms.C, terms.M, terms.F
        CtC = C.T @ C
        alpha = self.penalty * jnp.max(jnp.diag(M)) / jnp.maximum(jnp.max(jnp.diag(CtC)), 1e-300)
        K = M + alpha * CtC
        lu = jax.scipy.linalg.lu_factor(K)

        def step(_, carry):
            _, lam = carry
            qdd = jax.scipy.linalg.lu_solve(lu, F - C.T @ lam + alpha * C.T @ gamma)
            return qdd, lam + alpha * (C @ qdd - gamma)

        return jax.lax.fori_loop(
            0, self.iterations, step, (jnp.zeros_like(F), jnp.zeros_like(gamma))
        )

    def acceleration(self, terms, gamma):
        return self._solve(terms, gamma)[0]

    def multipliers(self, terms, gamma, qdd):
        return self._solve(terms, gamma)[1]


class Penalty(AbstractRedundancyMethod):
    """Penalty formulation (Bayo, García de Jalón & Serna 1988): each row behaves
    as a stiff spring-damper, λ = α (C q̈ − Γ + 2 ξ ω (C q̇ + b) + ω² Φ), so that
    (M + Cᵀ α C) q̈ = F + Cᵀ α (Γ − 2ξω (C q̇ + b) − ω² Φ).

    `stiffness` α [per row or scalar] sets how rigid the rows are; the motion tends
    to the rigid one as α → ∞, and λ is unique for finite α but depends on the
    ratios of the α's on non-unique pairs. Pfaffian rows get no ω² term.
    Rows with α = ∞ (the rigid-body rows of spatial bodies in
    [`joint_stiffness`][]) are kept as exact constraints with their own multipliers,
    C_r q̈ = Γ_r − 2ξω(C_r q̇ + b_r) − ω² Φ_r, solved together with the springs; they
    must be independent of one another (rigid-body rows are).
    Its spring-damper terms are its own drift control: any `stabilisation` passed
    alongside is ignored.
    """

    stiffness: Float[ArrayLike, "..."] = 1e8
    omega: float = 10.0
    xi: float = 1.0

    def prepare(self, C, rank=None):
        return self

    def _solve(self, terms):
        C, M, F = terms.C, terms.M, terms.F
        nc = C.shape[0]
        alpha = jnp.broadcast_to(jnp.asarray(self.stiffness, dtype=float), (nc,))
        phi = jnp.concatenate([terms.phi, jnp.zeros(nc - terms.phi.shape[0])])
        target = (
            terms.gamma - 2.0 * self.xi * self.omega * terms.velocity_error - self.omega**2 * phi
        )
        rigid = jnp.isinf(alpha)
        spring = jnp.where(rigid, 0.0, alpha)
        K = M + C.T @ (spring[:, None] * C)
        rhs = F + C.T @ (spring * target)
        # [K  C_rᵀ; C_r  0] [q̈; λ_r] = [rhs; target_r], with the rows of the spring
        # constraints replaced by λ_k = 0 in the lower block (identity), so one dense
        # solve of fixed size covers any mix of springs and rigid rows.
        Cr = jnp.where(rigid[:, None], C, 0.0)
        A = jnp.block([[K, Cr.T], [Cr, jnp.diag(jnp.where(rigid, 0.0, 1.0))]])
        b = jnp.concatenate([rhs, jnp.where(rigid, target, 0.0)])
        x = jnp.linalg.solve(A, b)
        qdd, lam_rigid = x[: M.shape[0]], x[M.shape[0] :]
        lam = jnp.where(rigid, lam_rigid, spring * (C @ qdd - target))
        return qdd, lam

    def acceleration(self, terms, gamma):
        del gamma  # the penalty carries its own stabilisation terms
        return self._solve(terms)[0]

    def multipliers(self, terms, gamma, qdd):
        del gamma, qdd
        return self._solve(terms)[1]


def solve_terms(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    method: AbstractRedundancyMethod = NullSpace(),
    stabilisation=None,
    rank: Int[ArrayLike, ""] | None = None,
    rtol: float = DECISION_RTOL,
) -> tuple[Terms, Float[Array, " nq"], Float[Array, " nc"], Int[Array, ""]]:
    """`(terms, qdd, lam, rank)` at (q, q̇, t): the shared core of
    [`solve_dynamics`][] and [`reactions`][]. The rank of C is `rank` if given,
    else decided at (q, t) with the relative tolerance `rtol` (default
    `DECISION_RTOL` = 1e-8: states from a simulation sit off the constraint
    manifold by the integration error, which makes dependent rows independent by
    about that much, and such rows must still count as dependent)."""
    terms = dynamics_terms(model, q, qd, t)
    if rank is None:
        rank = pivoted_qr(terms.C, rtol).rank
    method = decide_schur(method, terms.M, terms.C, rank)
    method = method.prepare(terms.C, rank)
    gamma = terms.gamma if stabilisation is None else stabilisation.gamma(terms)
    qdd = method.acceleration(terms, gamma)
    return terms, qdd, method.multipliers(terms, gamma, qdd), jnp.asarray(rank)


def solve_dynamics(
    model: Model,
    q: Float[Array, " nq"],
    qd: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    method: AbstractRedundancyMethod = NullSpace(),
    stabilisation=None,
    rank: Int[ArrayLike, ""] | None = None,
) -> tuple[Float[Array, " nq"], Float[Array, " nc"]]:
    """Accelerations q̈ and multipliers λ at (q, q̇, t) by `method`.

    **Arguments:**

    - `model`, `q`, `qd`, `t`: the mechanism and its state [m, rad, s].
    - `method`: how redundant constraints are handled (default [`NullSpace`][]).
    - `stabilisation`: a drift-control term for Γ (e.g. [`Baumgarte`][]) or None.
    - `rank`: the rank of C if decided elsewhere (see [`solve_terms`][]).

    **Returns:** `(qdd, lam)`, shapes `(nq,)` and `(m + h,)`.
    """
    _, qdd, lam, _ = solve_terms(
        model, q, qd, t, method=method, stabilisation=stabilisation, rank=rank
    )
    return qdd, lam
