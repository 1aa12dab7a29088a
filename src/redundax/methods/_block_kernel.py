"""The block solver's kernels (the module docstring of
[`redundax.methods.block`][] says what it does): the symbolic plan, the padded LDLᵀ
with constraint partitioning, and the solve. No method class here, so that the
null-space family can call the solver without importing `BlockSparse`."""

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .._block_pattern import BlockPattern, coupling, joint_pattern, symbolic_factorisation
from .._bodies import MASS_PIVOTS_MAX_CONDITION as MASS_PIVOTS_MAX_CONDITION, MassFacts
from .._equations import LocalTerms, Terms
from .._precision import precise
from .._structure import Structure
from . import _block_null_space

PIVOT_RTOL = precise(1e-6, 1e-4)
"""A row of S is dropped when its LDLᵀ pivot is at or below this fraction of its
S_jj: the row's part independent of the rows before it is below √1e-6 = 1e-3 of
its size (in the M⁻¹ metric). Exactly dependent rows at a state that drifted by ε
from the manifold have pivots of about ε² S_jj and are always dropped. Near a
singular configuration a row becomes nearly dependent: dropping it while its
independent part is below 1e-3 keeps q̈ bounded through the passage (the row is
enforced again once it has left the threshold). Measured on IFToMM A02's chain
of two planar parallelograms (3 s, three passages, rtol 1e-10, hard switch): at
1e-6 the cranks stay parallel to 7.7e-6 rad; at 1e-10 the integrator stalls at
the first passage (q̈ ~ 1/pivot). With ten spatial loops and `Projection()`,
10 s: parallel to 1e-14 rad (`tests/test_block.py`)."""

SOFT_DECADES = 1.0
"""Rows whose pivot lies within this many decades above the drop threshold are
enforced softly: their inverse pivot w / d goes from 1 / d down to 0 by a C¹
smoothstep in log(pivot) (the row is a compliant constraint, of compliance
d (1 − w) / w). q̈ is then a C¹ function of the state across a change of the
active set, and adaptive integrators step through it instead of rejecting steps
at the jump a hard switch makes (IFToMM A02, 10 spatial loops, 3 s, three
singular passages, Tsit5 at rtol 1e-7: 692 steps of which 455 rejected with a
hard switch, 162 of which 50 rejected with the soft band; 3.9 s → 1.0 s)."""

SUPERNODE_ROWS = 6
"""Rows per step: consecutive blocks of the order are merged up to this size (a
planar pair has 1–3 rows, a spatial one 5–6). Larger steps mean fewer loop
iterations but cubic work per step; measured per right-hand side on 2 CPU cores
(Bricard / spatial A02 chain with 16 loops, µs): 57 / 400 at 6 rows, 66 / 757 at
12, 86 / 1,700 at 24; the planar mobile robot 17, 14, 15."""

ENTRY_CHUNK = 512
"""Entries of S built per batch (`jax.lax.map`): A02's spatial chain at N = 1024
(14,338 entries), building S takes 16 ms all at once, 2.9–4 ms in batches of
64–1,024 (the intermediates, ~4 kB per entry, stay in cache)."""


def _weight(pivot, floor):
    """How much of a row the factorisation enforces, from its pivot: 0 at or below
    `floor` (dropped), 1 from `SOFT_DECADES` decades above it, and a C¹ smoothstep
    in log(pivot) between (the row is compliant there; see `PIVOT_RTOL`)."""
    ratio = pivot / jnp.where(floor > 0, floor, 1.0)
    s = jnp.log10(jnp.maximum(ratio, 1.0)) / SOFT_DECADES
    s = jnp.clip(s, 0.0, 1.0)
    return jnp.where(pivot > floor, s * s * (3.0 - 2.0 * s), 0.0)


def _ldl(A, floor, weights=None, monitored=None):
    """A ≈ L D Lᵀ (L unit lower triangular), unrolled over the columns, with the
    pivots of weak columns softened and those at or below `floor` dropped
    (`_weight`): the inverse pivot of column j is w_j / d_j and its column of
    L is scaled alike, so a dropped column (w_j = 0) has L[:, j] = e_j, no
    multiplier and no influence on the later columns. `weights`: the w_j given
    (decided on another matrix; `floor` is then ignored); both None: no dropping
    (A positive definite). `monitored` (bool per column; None: all): the columns
    whose pivot is tested; the others keep w_j = 1 whatever their pivot (a
    body's rigid-body rows, Kraus et al. §8, and padding).

    **Returns:** (L, inverse pivots w / d, 0 where dropped; the weights w; the
    pivots d)."""
    n = A.shape[-1]
    index = jnp.arange(n)
    U = jnp.zeros_like(A)  # the columns v_j below the diagonal, unscaled
    dinv = jnp.zeros(n, dtype=A.dtype)
    pivots = jnp.zeros(n, dtype=A.dtype)
    ws = jnp.ones(n, dtype=A.dtype) if weights is None else weights
    for j in range(n):
        v = A[:, j] - U[:, :j] @ (dinv[:j] * U[j, :j]) if j else A[:, j]
        pivot = v[j]
        pivots = pivots.at[j].set(pivot)
        if weights is None and floor is not None:
            w = _weight(pivot, floor[j])
            ws = ws.at[j].set(w if monitored is None else jnp.where(monitored[j], w, 1.0))
        w = ws[j]
        dinv = dinv.at[j].set(w / jnp.where(w > 0, pivot, 1.0))
        U = U.at[:, j].set(jnp.where(index > j, v, 0.0))
    return jnp.eye(n, dtype=A.dtype) + U * dinv[None, :], dinv, ws, pivots


def _unit_lower_inverse(L):
    """L⁻¹ for a unit lower triangular L (forward substitution, unrolled)."""
    n = L.shape[-1]
    inv = jnp.eye(n, dtype=L.dtype)
    for i in range(1, n):
        inv = inv.at[i].set(inv[i] - L[i, :i] @ inv[:i])
    return inv


def _spd_inverse(A):
    """A⁻¹ of a small symmetric positive definite matrix (unrolled LDLᵀ)."""
    L, dinv, _, _ = _ldl(A, None)
    Linv = _unit_lower_inverse(L)
    return Linv.T @ (Linv * dinv[:, None])


def _take(a, index):
    """`a[index]` for a scalar or a short vector of indices, by one dynamic slice
    per index instead of a gather (see the loops of
    [`block_solve`][redundax.internal.block_solve])."""
    if index.ndim == 0:
        return jax.lax.dynamic_index_in_dim(a, index, keepdims=False)
    return jnp.stack([jax.lax.dynamic_index_in_dim(a, i, keepdims=False) for i in index])


PIVOTS = ("mass", "coordinates")


def mass_conditioned(mass_blocks: Float[ArrayLike, "nb dof dof"], xp=jnp) -> Bool[ArrayLike, ""]:
    """Whether M, given by its bodies' blocks, has a condition number of at most
    `MASS_PIVOTS_MAX_CONDITION`. `xp`: `jax.numpy` (traceable) or `numpy` (the
    host-side choice, which may run while a caller's function is traced)."""
    eig = xp.linalg.eigvalsh(xp.asarray(mass_blocks))
    low, high = xp.min(eig, initial=xp.inf), xp.max(eig, initial=0.0)
    return (low > 0.0) & (high <= MASS_PIVOTS_MAX_CONDITION * low)


def mass_pivots(facts: MassFacts | None) -> str:
    """The partitioning's pivot metric for a model of these static
    `MassFacts` (`redundax._bodies`): "mass" where M's condition number is at most
    `MASS_PIVOTS_MAX_CONDITION`, else (and without facts) "coordinates", right for
    every inertia."""
    if facts is None or not facts.conditioned:
        return "coordinates"
    return "mass"


class _Plan(NamedTuple):
    """The elimination as padded index arrays (NumPy, static): n steps, each a
    *supernode* of consecutive blocks of the pattern's order (`size` rows at most),
    coupled to at most `width` later steps. Entries 0…n−1 are the diagonal blocks,
    then one per coupled (later step, step); the last entry, row `nc` and step `n`
    are sinks for the padding. The steps follow `BlockPattern.elimination`: the
    rigid-body blocks first, whatever the pattern's order."""

    rows: np.ndarray  # (n, size): rows of C by step, padded with nc
    valid: np.ndarray  # (n, size)
    monitored: np.ndarray  # (n, size): rows whose pivot may drop them (a pair's)
    later: np.ndarray  # (n, width): later steps, padded with n
    off: np.ndarray  # (n, width): entry of (later step, step), padded with the sink
    update: np.ndarray  # (n, width, width): entry updated by (a, b), a ≥ b; else sink
    pairs: np.ndarray  # (E, 2): (i, k) steps of each non-sink entry
    n_entries: int


def _plan(pattern: BlockPattern, max_rows: int | None = None) -> _Plan:
    nc = pattern.n_rows
    max_rows = SUPERNODE_ROWS if max_rows is None else max_rows
    # Supernodes: consecutive blocks of the elimination order, up to max_rows rows.
    nodes: list[list[int]] = []
    count = 0
    for g in pattern.elimination:
        r = len(pattern.rows[g])
        if not nodes or count + r > max_rows:
            nodes.append([])
            count = 0
        nodes[-1].append(g)
        count += r
    n = len(nodes)
    node_rows = [[r for g in node for r in pattern.rows[g]] for node in nodes]
    size = max((len(r) for r in node_rows), default=1) or 1
    rows = np.full((n, size), nc, dtype=int)
    monitored = np.zeros((n, size), dtype=bool)
    for k, node in enumerate(nodes):
        flags = [not pattern.rigid[g] for g in node for _ in pattern.rows[g]]
        rows[k, : len(flags)] = node_rows[k]
        monitored[k, : len(flags)] = flags
    # Symbolic factorisation over the supernodes, in order.
    node_bodies = [tuple({b for g in node for b in pattern.bodies[g]}) for node in nodes]
    later_sets, _ = symbolic_factorisation(coupling(node_bodies))
    width = max((len(x) for x in later_sets), default=0) or 1
    entry = {(k, k): k for k in range(n)}
    for k in range(n):
        for i in later_sets[k]:
            entry[(i, k)] = len(entry)
    sink = len(entry)
    later = np.full((n, width), n, dtype=int)
    off = np.full((n, width), sink, dtype=int)
    update = np.full((n, width, width), sink, dtype=int)
    for k in range(n):
        for a, i in enumerate(later_sets[k]):
            later[k, a] = i
            off[k, a] = entry[(i, k)]
            for b, j in enumerate(later_sets[k][: a + 1]):
                update[k, a, b] = entry[(i, j)]  # later is ascending: i ≥ j
    pairs = np.zeros((sink, 2), dtype=int)
    for (i, k), e in entry.items():
        pairs[e] = (i, k)
    return _Plan(rows, rows < nc, monitored, later, off, update, pairs, sink)


class BlockSolution(NamedTuple):
    """q̈, the multipliers μ (zero on dropped rows) and the active rows."""

    qdd: Float[Array, " nq"]
    multipliers: Float[Array, " nc"]
    active: Bool[Array, " nc"]


def _rows_of_dense(pattern: BlockPattern, C):
    """(R, B) of a dense C: each row's derivative in its block's bodies' coordinates."""
    nc, dof, nb = pattern.n_rows, pattern.dof, pattern.n_bodies
    P = max((len(b) for b in pattern.bodies), default=1) or 1
    B = np.full((nc, P), nb, dtype=int)
    for rows, bodies in zip(pattern.rows, pattern.bodies, strict=True):
        for r in rows:
            B[r, : len(bodies)] = bodies
    C3 = jnp.concatenate([C.reshape(nc, nb, dof), jnp.zeros((nc, 1, dof), C.dtype)], axis=1)
    return C3[np.arange(nc)[:, None], B], jnp.asarray(B)


def _padded_rows(plan: _Plan, nb: int, R, B):
    """The blocks of C by step, padded: X (n, size, P, dof) and their bodies XB
    (n, size, P; the ground and unused slots: `nb`)."""
    Rx = jnp.concatenate([R, jnp.zeros((1, *R.shape[1:]), R.dtype)])
    Bx = jnp.concatenate([B, jnp.full((1, B.shape[1]), nb, dtype=B.dtype)])
    return Rx[plan.rows], Bx[plan.rows]


def _gram(plan: _Plan, nb: int, X, XB, WX):
    """The entries of C W Cᵀ (W = M⁻¹ when `WX` = M⁻¹ X, W = I when `WX` = X),
    padded for the elimination, and the diagonal of each diagonal block."""
    n, size = plan.rows.shape
    pad = jnp.asarray(~plan.valid)

    def entry(ik):
        """S_ik[a, c] = Σ over common bodies of X_i[a, p] W_b X_k[c, q]ᵀ (b = the
        body of slot p of row a = of slot q of row c)."""
        Bi, Bk = XB[ik[0]], XB[ik[1]]
        common = (Bi[:, None, :, None] == Bk[None, :, None, :]) & (Bi[:, None, :, None] < nb)
        # Two steps, not one three-operand einsum: its contraction order would
        # materialise (size, P, dof, size, P), 12× this.
        block = jnp.einsum("apk,cqk->acpq", WX[ik[0]], X[ik[1]])
        return jnp.sum(jnp.where(common, block, 0.0), axis=(2, 3))

    # The entries in chunks of ENTRY_CHUNK: the intermediates stay in cache (all at
    # once they outgrow the CPU's last-level cache from N ≈ 512, 5× slower there).
    S = jax.lax.map(entry, jnp.asarray(plan.pairs), batch_size=ENTRY_CHUNK)
    # Padding rows: a unit diagonal, decoupled (their rows of X are zero).
    diag = jnp.diagonal(S[:n], axis1=1, axis2=2)
    S = S.at[:n].add(jax.vmap(jnp.diag)(jnp.where(pad, 1.0, 0.0)))
    return jnp.concatenate([S, jnp.zeros((1, size, size), X.dtype)]), jnp.where(pad, 1.0, diag)


def _factor(plan: _Plan, entries, floors=None, weights=None):
    """The block LDLᵀ factorisation of the padded `entries` in the plan's order,
    one `lax.scan` step per supernode, each diagonal block by `_ldl` with the
    step's `floors` or `weights` (n, size; see there). Only the rows the plan
    monitors (a pair's) are tested: a rigid-body row keeps its weight 1.

    **Returns:** (the entries with the L_ik in place of the off-diagonal blocks;
    per step L_kk⁻¹, the inverse pivots, the weights and the pivots)."""
    n = plan.rows.shape[0]
    # Inside the loop, no `gather` from a large array: XLA:CPU runs a gather from
    # an operand of more than ~0.5 MB on its thread pool, and the hand-off costs
    # ~1.5 µs per gather, 15× the step's own work (measured on 2 cores; none when
    # pinned to one). What a step reads other than the carry comes in through the
    # scan's `xs` (a contiguous slice per step), and the carry is read block by
    # block with dynamic slices (`_take`).
    coupled = jnp.asarray(plan.off < plan.n_entries)[:, :, None, None]  # not padding

    def eliminate(E, xs):
        step, off_k, update_k, coupled_k, monitored, floor, weights = xs
        L, dinv, w, pivots = _ldl(_take(E, step), floor, weights, monitored)
        Linv = _unit_lower_inverse(L)
        G = jnp.einsum("wac,bc->wab", jnp.where(coupled_k, _take(E, off_k), 0.0), Linv)
        change = jnp.einsum("xac,c,ybc->xyab", G, dinv, G)
        E = E.at[update_k].add(-change)
        E = E.at[off_k].set(G * dinv[None, None, :])  # L_ik
        return E, (Linv, dinv, w, pivots)

    xs = (jnp.arange(n), jnp.asarray(plan.off), jnp.asarray(plan.update), coupled)
    monitored = jnp.asarray(plan.monitored)
    return jax.lax.scan(eliminate, entries, (*xs, monitored, floors, weights))


@eqx.filter_jit
def row_pivots(
    pattern: BlockPattern,
    R: Float[Array, "nc P dof"],
    B: Int[Array, "nc P"],
    rtol: float = PIVOT_RTOL,
) -> Float[Array, " nc"]:
    """Each row's relative pivot in the block elimination of C Cᵀ (the partitioning
    in the coordinates' metric, rows at or below `rtol` dropped): d_j / (C Cᵀ)_jj,
    the squared sine of the angle between row j of C and the rows kept before it in
    the pattern's order (0: a combination of them; 1: orthogonal to them). A row's
    own pivot is taken before it is dropped. Linear in the number of blocks, as
    [`block_solve`][redundax.internal.block_solve]; C given row by row in local form (`R`, `B`)."""
    plan = _plan(pattern)
    nc = pattern.n_rows
    if plan.rows.shape[0] == 0:
        return jnp.zeros(0, R.dtype)
    X, XB = _padded_rows(plan, pattern.n_bodies, R, B)
    entries, diag = _gram(plan, pattern.n_bodies, X, XB, X)
    _, (_, _, _, pivots) = _factor(plan, entries, rtol * diag)
    relative = pivots / diag
    return jnp.zeros(nc + 1, R.dtype).at[plan.rows].set(relative)[:nc]


@eqx.filter_jit
def block_solve(
    pattern: BlockPattern,
    R: Float[Array, "nc P dof"],
    B: Int[Array, "nc P"],
    mass_blocks: Float[Array, "nb dof dof"],
    F: Float[Array, " nq"],
    gamma: Float[Array, " nc"],
    rtol: float = PIVOT_RTOL,
    mass_inverse: Float[Array, "nb dof dof"] | None = None,
    pivots: str = "mass",
    metric: Float[Array, "nb dof dof"] | None = None,
) -> BlockSolution:
    """(q̈, μ, active rows) of M q̈ + Cᵀ μ = F, C q̈ = Γ by the block factorisation
    (module docstring), C given row by row in local form (`R`, `B`: see
    [`redundax.equations.constraint_rows`][]) and M by its body blocks (and their inverses
    `mass_inverse` when known, e.g. `LocalTerms.mass_inverse`). `pivots`: the
    metric of the partitioning's pivots, `"mass"` (those of C M⁻¹ Cᵀ) or
    `"coordinates"` (those of C G⁻¹ Cᵀ for the coordinates' metric G, by a second
    factorisation; see `MASS_PIVOTS_MAX_CONDITION`): G the identity, or per body
    the blocks `metric` (the null-space form's VᵀV, which makes them the pivots of
    C Cᵀ after the rigid-body rows). Compiled once per pattern (a called-eagerly
    solve is one program, not thousands of small ones)."""
    plan = _plan(pattern)
    n, size = plan.rows.shape
    nc, dof, nb = pattern.n_rows, pattern.dof, pattern.n_bodies
    dtype = R.dtype
    # M⁻¹ per body, a zero block for the ground and unused slots (index nb).
    Minv = jax.vmap(_spd_inverse)(mass_blocks) if mass_inverse is None else mass_inverse
    Minv = jnp.concatenate([Minv, jnp.zeros((1, dof, dof), dtype)])
    MiF = jnp.einsum("bkl,bl->bk", Minv[:nb], F.reshape(nb, dof))
    if n == 0:  # no constraints
        return BlockSolution(MiF.reshape(-1), jnp.zeros(0, dtype), jnp.zeros(0, bool))
    MiF = jnp.concatenate([MiF, jnp.zeros((1, dof), dtype)])
    X, XB = _padded_rows(plan, nb, R, B)
    # M⁻¹ X row slot by row slot, as a product and a sum that XLA fuses with the
    # gather of M⁻¹: as an einsum, M⁻¹[XB] is first copied out (n × size × P
    # matrices: 70 MB for A02's chain at N = 1024, 20× slower there).
    MX = jnp.sum(Minv[XB] * X[..., None, :], axis=-1)
    entries, diag0 = _gram(plan, nb, X, XB, MX)
    if pivots == "coordinates":
        # The rows kept are decided on C Cᵀ (the metric of the structure's rank),
        # and the factorisation of C M⁻¹ Cᵀ keeps exactly those, with their weights.
        WX = X
        if metric is not None:
            W = jnp.concatenate([jax.vmap(_spd_inverse)(metric), jnp.zeros((1, dof, dof), dtype)])
            WX = jnp.sum(W[XB] * X[..., None, :], axis=-1)
        kept, diag_c = _gram(plan, nb, X, XB, WX)
        _, (_, _, weights, _) = _factor(plan, kept, rtol * diag_c)
        floors = None
    else:
        weights, floors = None, rtol * diag0
    E, (Linv, dinv, _, _) = _factor(plan, entries, floors, weights)
    keep = (dinv != 0) & jnp.asarray(plan.valid)
    steps, later = jnp.arange(n), jnp.asarray(plan.later)
    coupled = jnp.asarray(plan.off < plan.n_entries)[:, :, None, None]
    lower = jnp.where(coupled, E[plan.off], 0.0)  # (n, width, size, size): the L_ik by step

    def forward(y, xs):
        step, Linv_k, lower_k, later_k = xs
        yk = Linv_k @ _take(y, step)
        y = y.at[step].set(yk)
        y = y.at[later_k].add(-jnp.einsum("wab,b->wa", lower_k, yk))
        return y, None

    def backward(x, xs):
        step, Linv_k, lower_k, later_k, z_k, keep_k = xs
        v = z_k - jnp.einsum("wab,wa->b", lower_k, _take(x, later_k))
        x = x.at[step].set(jnp.where(keep_k, Linv_k.T @ v, 0.0))
        return x, None

    def constraint_forces(mu):  # Cᵀ μ body by body, (nb + 1, dof)
        return jnp.zeros((nb + 1, dof), dtype).at[B].add(mu[:, None, None] * R)

    def solve_with(MiF, gamma):
        """(q̈, μ) of M q̈ + Cᵀ μ = F, C q̈ = Γ on the active rows, from M⁻¹ F."""
        gx = jnp.concatenate([gamma, jnp.zeros(1, dtype)])
        r = jnp.einsum("nspk,nspk->ns", X, MiF[XB]) - gx[plan.rows]
        y0 = jnp.concatenate([r, jnp.zeros((1, size), dtype)])
        y, _ = jax.lax.scan(forward, y0, (steps, Linv, lower, later))
        z = y[:n] * dinv
        x0 = jnp.zeros((n + 1, size), dtype)
        x, _ = jax.lax.scan(backward, x0, (steps, Linv, lower, later, z, keep), reverse=True)
        mu = jnp.zeros(nc + 1, dtype).at[plan.rows].set(x[:n])[:nc]
        qdd = MiF - jnp.einsum("bkl,bl->bk", Minv, constraint_forces(mu))
        return qdd, mu

    qdd, mu = solve_with(MiF, gamma)
    # One step of iterative refinement on the residuals of the full equations: the
    # Schur complement squares the conditioning of C M^-1/2, and one step gives back
    # the accuracy of a backward-stable solve (6-bar: 1e-10 → 1e-13 relative).
    force = F.reshape(nb, dof) - jnp.einsum("bkl,bl->bk", mass_blocks, qdd[:nb])
    force = force - constraint_forces(mu)[:nb]
    Cq = jnp.einsum("rpk,rpk->r", R, qdd[B])
    dq, dmu = solve_with(
        jnp.concatenate([jnp.einsum("bkl,bl->bk", Minv[:nb], force), jnp.zeros((1, dof))]),
        gamma - Cq,
    )
    qdd, mu = qdd + dq, mu + dmu
    active = jnp.zeros(nc + 1, bool).at[plan.rows].set(keep)[:nc]
    return BlockSolution(qdd[:nb].reshape(-1), mu, active)


FORMS = ("descriptor", "null-space")


@eqx.filter_jit
def null_space_block_solve(
    pattern: BlockPattern,
    R: Float[Array, "nc P dof"],
    B: Int[Array, "nc P"],
    mass_blocks: Float[Array, "nb dof dof"],
    F: Float[Array, " nq"],
    gamma: Float[Array, " nc"],
    rtol: float = PIVOT_RTOL,
    pivots: str = "mass",
) -> BlockSolution:
    """[`block_solve`][redundax.internal.block_solve] in the null-space form (Kraus et al.
    §6; `redundax.methods._block_null_space`): every body's six rigid-body rows
    eliminated by its null-space basis D(p) N̄, the pairs' rows factorised alone
    in 6 coordinates per body, the same q̈; μ on the rigid-body rows from each
    body's balance. The rigid-body rows are always active. Spatial bodies in
    natural coordinates only (every body with its rigid-body rows)."""
    reduced = joint_pattern(pattern, _block_null_space.TWIST)
    Rt, Bj, Mt, Ft, gamma_t, metric, reduction = _block_null_space.reduce(
        pattern, R, B, mass_blocks, F, gamma
    )
    solution = block_solve(
        reduced,
        Rt,
        Bj,
        Mt,
        Ft,
        gamma_t,
        rtol,
        None,
        pivots,
        metric if pivots == "coordinates" else None,
    )
    qdd, mu = _block_null_space.recover(
        pattern, reduction, R, B, mass_blocks, F, solution.qdd, solution.multipliers
    )
    _, pair_rows = _block_null_space.rigid_rows(pattern)
    active = jnp.ones(pattern.n_rows, bool).at[pair_rows].set(solution.active)
    return BlockSolution(qdd, mu, active)


def block_solution(
    terms: Terms | LocalTerms,
    gamma,
    structure: Structure,
    pivot_rtol: float,
    pivots: str | None,
    form: str = "descriptor",
) -> BlockSolution:
    """q̈, μ and the active rows at the state of `terms` by the block solver
    ([`BlockSparse`][redundax.methods.BlockSparse] with `pivot_rtol`, `pivots` and
    `form`)."""
    pattern = structure.blocks
    if isinstance(terms, LocalTerms):
        R, B, blocks = terms.R, terms.B, terms.mass_blocks
    else:
        R, B = _rows_of_dense(pattern, terms.C)
        nb, dof = pattern.n_bodies, pattern.dof
        blocks = terms.M.reshape(nb, dof, nb, dof)[np.arange(nb), :, np.arange(nb), :]
    pivots = pivots or mass_pivots(structure.mass_facts)
    if form == "null-space" and any(pattern.rigid):
        return null_space_block_solve(pattern, R, B, blocks, terms.F, gamma, pivot_rtol, pivots)
    return block_solve(
        pattern, R, B, blocks, terms.F, gamma, pivot_rtol, terms.mass_inverse, pivots
    )
