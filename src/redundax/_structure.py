"""Everything discrete about a mechanism at a regular configuration, decided once.

A redundantly constrained mechanism forces a few discrete decisions on every
computation: the rank of C = [Φ_q; Ψ] (so the degree of redundancy p), which rows
are independent, the left null space of C (the self-stresses), whether each pair's
reaction is unique (Wojtyra & Frączek 2013, §3), whether the configuration is
regular, and how the bodies are connected. They are properties of the mechanism's
structure, constant along a motion between singular configurations (§4.2), so
redundax takes them **once**, in [`decide`][redundax.decide], and carries them as a value: a
[`Structure`][redundax.Structure]. `simulate`, `reactions`, `reaction_history`, `pair_reaction`,
`peak_reaction`, sweeps and the optimiser take it as an argument (or call
`decide` once at their initial state) and never decide again. This is lineax's
`solver.init(operator)` / `solver.compute(state, vector)` split and MJX's
`put_model`: decide, then use.

**Tolerance policy** (the only place it is stated):

- `DECISION_RTOL` = 1e-8, relative to the largest pivot, for states that come from
  a simulation, a projection or a user: they satisfy the constraints only to the
  integration or projection tolerance, which makes dependent rows independent by
  about that much, and such rows must still count as dependent. `decide` uses it.
- `2 · eps · max(m + h, n)` (round-off, lineax's `resolve_rcond`) for the analysis
  of a configuration known exactly ([`analyze_solvability`][redundax.analyze_solvability]'s
  default), where a defect of 1e-13 m is a real defect and must be seen.
- `UNIQUENESS_RTOL` = 1e-8 for B_X = 0 relative to ‖C_X‖ (both uses).

**The one verdict path.** `pair_verdicts` computes B_X = C_Xᵀ N_X and the
verdicts for any set of row groups from C and an orthonormal basis N of its left
null space. The analysis report, `decide` and the cross-checks by SVD all call it.

**Verdicts at a configuration and verdicts that persist.** The QR test at q says
what is unique *at q*. A reaction component can be unique at a special
configuration only: the mobile robot's joint B carries a unique x force while its
wheels point straight ahead, and loses it in a turn. A decision taken once must not
claim such a component unique along a whole motion, so `decide` also evaluates the
verdicts at a generic configuration next to q (a small step within the
configuration manifold of the non-driving holonomic rows, so that drivers may take
other values too, projected back), and `Structure.stable_unique` /
`stable_row_unique` hold what is unique at both. Reactions along a run report
those; the analysis of one configuration reports the verdicts at q.
"""

import dataclasses
from collections.abc import Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._assembly import constraint_matrix, position_residual
from ._block_pattern import BlockPattern, block_pattern
from ._bodies import MASS_DEFINITE_RTOL as MASS_DEFINITE_RTOL, MassFacts
from ._errors import ModelError
from ._model import Model, unkeyed
from ._precision import precise
from ._qr import DECISION_RTOL as DECISION_RTOL, default_rtol, pivoted_qr
from ._types import Scalar
from ._validation import check_vector, host_values

UNIQUENESS_RTOL = precise(1e-8, 1e-4)
"""B_X counts as zero when ‖B_X‖_F ≤ utol · ‖C_X‖_F (B_X is C_Xᵀ times orthonormal
columns, so ‖B_X‖_F ≤ ‖C_X‖_F), and N_X when ‖N_X‖_F ≤ utol."""

SCHUR_MIN_EIGENVALUE = precise(5e-5, 1e-2)
"""Smallest non-zero eigenvalue of the Jacobi-scaled Schur complement C M⁻¹ Cᵀ for
which the all-rows Schur path of the null-space method is used: the bias of its
shift, (δ/ŝ)⁷ with δ = 1e-6 and six refinements, is then below 1e-12 (measured ŝ:
Bricard 1.7e-4, mobile robot 2.2e-3)."""

MASS_CONDITION_LIMIT = 1e8
"""Largest condition number of M for which the Schur path is used (a point mass
modelled with a vanishing inertia makes C M⁻¹ Cᵀ nearly singular)."""

NEARBY_STEP = 1e-4
"""Size of the step to the generic nearby configuration, relative to max(1, max|q|)."""

NEARBY_ITERATIONS = 6
"""Gauss–Newton steps that bring the nearby configuration back onto Φ = 0."""


# ----------------------------------------------------------------- the one verdict path
class Verdicts(eqx.Module):
    """Per-group results of the QR test (Wojtyra & Frączek 2013, Eq. 27)."""

    unique: Bool[Array, " g"]
    multipliers_unique: Bool[Array, " g"]
    b_norm: Float[Array, " g"]
    n_norm: Float[Array, " g"]


def _safe_sqrt(x):
    positive = x > 0.0
    return jnp.where(positive, jnp.sqrt(jnp.where(positive, x, 1.0)), 0.0)


def membership(n_rows: int, groups: Sequence[Sequence[int]]) -> Float[Array, "g nc"]:
    """0/1 matrix S with S[g, k] = 1 iff row k belongs to group g."""
    S = np.zeros((len(groups), n_rows))
    for g, rows in enumerate(groups):
        S[g, list(rows)] = 1.0
    return jnp.asarray(S)


def disjoint_groups(n_rows: int, groups: Sequence[Sequence[int]]) -> np.ndarray | None:
    """Group index of every row when the groups are disjoint (−1: in no group)."""
    seg = np.full(n_rows, -1)
    for g, rows in enumerate(groups):
        if np.any(seg[list(rows)] >= 0):
            return None
        seg[list(rows)] = g
    return seg


def pair_verdicts(
    C: Float[Array, "nc nq"],
    N: Float[Array, "nc p"],
    S: Float[Array, "g nc"],
    utol: float = UNIQUENESS_RTOL,
    segments: np.ndarray | None = None,
) -> Verdicts:
    """The QR test for every group of rows of C (row g of the 0/1 matrix `S`, see
    [`membership`][redundax.analysis.membership]): B_X = C_Xᵀ N_X with N an orthonormal basis of the
    left null space of C (zero columns allowed); f_X is unique iff B_X = 0, λ_X iff N_X = 0.
    ‖B_X‖_F does not depend on the basis. `segments` (static, from
    `disjoint_groups`) takes the cheap path when the groups share no row.

    The only code in redundax that turns a null space into uniqueness verdicts."""
    # B_X is formed explicitly and its squares summed afterwards, so a vanishing B_X
    # is not lost to cancellation (as it would be in trace(N_Xᵀ C_X C_Xᵀ N_X)).
    if segments is None:
        B = jnp.einsum("gk,kac->gac", S, C[:, :, None] * N[:, None, :])
        b_norm = _safe_sqrt(jnp.sum(B**2, axis=(1, 2)))
    else:
        # Disjoint groups (pairs are): B_X = C_Xᵀ N_X group by group, a few groups
        # at a time, so that memory stays O(n p) whatever the number of groups.
        nq, p = C.shape[1], N.shape[1]
        rows = jnp.asarray(_group_rows(segments, S.shape[0]))
        Cx = jnp.concatenate([C, jnp.zeros((1, nq), C.dtype)])
        Nx = jnp.concatenate([N, jnp.zeros((1, p), N.dtype)])
        batch = max(1, min(rows.shape[0], _VERDICT_BATCH_ELEMENTS // max(1, nq * p)))
        squares = jax.lax.map(lambda r: jnp.sum((Cx[r].T @ Nx[r]) ** 2), rows, batch_size=batch)
        b_norm = _safe_sqrt(squares)
    c_norm = _safe_sqrt(S @ jnp.sum(C**2, axis=1))
    n_norm = _safe_sqrt(S @ jnp.sum(N**2, axis=1))
    unique = b_norm <= utol * c_norm
    return Verdicts(
        unique=unique,
        multipliers_unique=unique & (n_norm <= utol),
        b_norm=b_norm,
        n_norm=n_norm,
    )


_VERDICT_BATCH_ELEMENTS = 4_000_000
"""At most this many entries of B_X matrices are held at once by `pair_verdicts`."""


def _group_rows(segments: np.ndarray, g: int) -> np.ndarray:
    """(g, s) rows of each of `g` disjoint groups (`segments[k]`: row k's group or −1),
    padded with the index of an extra zero row (len(segments))."""
    members = [np.flatnonzero(segments == k) for k in range(g)]
    size = max((len(m) for m in members), default=0) or 1
    rows = np.full((g, size), len(segments), dtype=int)
    for k, m in enumerate(members):
        rows[k, : len(m)] = m
    return rows


def group_verdicts(
    C: Float[Array, "nc nq"],
    N: Float[Array, "nc p"],
    groups: Sequence[Sequence[int]],
    utol: float = UNIQUENESS_RTOL,
) -> Verdicts:
    """`pair_verdicts` for groups given as tuples of rows (0-based)."""
    nc = C.shape[0]
    return pair_verdicts(C, N, membership(nc, groups), utol, disjoint_groups(nc, groups))


def row_verdicts(
    C: Float[Array, "nc nq"], N: Float[Array, "nc p"], utol: float = UNIQUENESS_RTOL
) -> tuple[Bool[Array, " nc"], Float[Array, " nc"]]:
    """`pair_verdicts` for every single row (a reaction component): ‖B_k‖ =
    ‖C_k‖ ‖N_k‖. Returns `(unique, b_norm)`."""
    row_c = jnp.linalg.norm(C, axis=1)
    row_b = row_c * jnp.linalg.norm(N, axis=1)
    return row_b <= utol * row_c, row_b


def left_null_space(C: Float[Array, "nc nq"], rtol: float | None, rank=None):
    """`(N, rank)`: N (nc × nc) has the left null space of C in its columns
    `rank:` and zeros elsewhere (pivoted QR of C, Eq. 27; the rank decided with
    `rtol`, or imposed)."""
    qr = pivoted_qr(C, rtol, rank)
    return jnp.where(qr.null_mask()[None, :], qr.q, 0.0), qr.rank


# --------------------------------------------------------------------------- topology
class Topology(eqx.Module):
    """How the bodies are connected (all static: hashable tuples, fixed under `jit`).

    The body graph has the moving bodies and the ground (index `nb`) as nodes and
    every two-body holonomic pair that is not a driver as an edge. A spanning tree
    is grown breadth-first from the ground (and from the first body of every part
    not connected to it: a floating part); each edge not in the tree is a cut joint
    that closes one loop. Drivers, Pfaffian constraints and one-body pairs are
    extra constraints on the tree and appear in `extra`.

    - `bodies`: body names (ground last, as index `nb`).
    - `pair_bodies`: per pair, the indices of its bodies.
    - `tree`: the pairs of the spanning tree, in breadth-first order.
    - `parent`: per moving body, the tree pair joining it towards its root (−1: a root).
    - `cuts`: the loop-closing pairs.
    - `loops`: per cut, the pairs of its fundamental loop (the cut first, then the
      tree path between its two bodies).
    - `extra`: the pairs that are not edges of the body graph.
    - `body_pairs`: per moving body, every pair that acts on it.
    """

    bodies: tuple[str, ...] = eqx.field(static=True)
    pair_bodies: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    tree: tuple[int, ...] = eqx.field(static=True)
    parent: tuple[int, ...] = eqx.field(static=True)
    cuts: tuple[int, ...] = eqx.field(static=True)
    loops: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    extra: tuple[int, ...] = eqx.field(static=True)
    body_pairs: tuple[tuple[int, ...], ...] = eqx.field(static=True)

    @property
    def n_loops(self) -> int:
        """Number of independent loops (cut joints)."""
        return len(self.cuts)


def _is_driver(kind: str) -> bool:
    return "driver" in kind


def spanning_forest(
    nb: int, adjacency: Mapping[int, Sequence[tuple[int, int]]]
) -> tuple[list[tuple[int, int, int]], list[int]]:
    """A spanning forest of the body graph grown breadth-first from the ground
    (index `nb`), then from the first body of every part not connected to it.

    **Arguments:** `adjacency[b]`: the `(pair, other body)` edges at body b, in the
    order they are to be tried.

    **Returns:** `(edges, roots)`: the tree edges `(pair, parent body, child body)`
    in breadth-first order, and the moving bodies that root a floating part.
    """
    seen = [False] * (nb + 1)
    edges: list[tuple[int, int, int]] = []
    roots: list[int] = []
    for root in (nb, *range(nb)):
        if seen[root]:
            continue
        seen[root] = True
        if root != nb:
            roots.append(root)
        frontier = [root]
        while frontier:
            nxt = []
            for b in frontier:
                for k, other in adjacency[b]:
                    if not seen[other]:
                        seen[other] = True
                        edges.append((k, b, other))
                        nxt.append(other)
            frontier = nxt
    return edges, roots


def topology(model: Model) -> Topology:
    """The [`Topology`][redundax.analysis.Topology] of `model` (host-side, from its pairs' body
    names)."""
    nb = model.bodies.count
    names = (*model.bodies.names, "ground")
    pair_bodies = tuple(tuple(model.body_index(b) for b in p.bodies) for p in model.pairs)
    holonomic = set(range(model.n_holonomic))
    edges = [
        k
        for k, (p, bodies) in enumerate(zip(model.pairs, pair_bodies, strict=True))
        if len(set(bodies)) == 2 and not _is_driver(p.kind) and set(p.rows) <= holonomic
    ]
    adjacency: dict[int, list[tuple[int, int]]] = {b: [] for b in range(nb + 1)}
    for k in edges:
        i, j = pair_bodies[k]
        adjacency[i].append((k, j))
        adjacency[j].append((k, i))
    parent = [-1] * (nb + 1)
    via = [-1] * (nb + 1)  # the body one step towards the root
    tree: list[int] = []
    forest, _ = spanning_forest(nb, adjacency)
    for k, b, other in forest:
        parent[other], via[other] = k, b
        tree.append(k)
    cuts = tuple(k for k in edges if k not in tree)

    def path_to_root(b):
        out = [b]
        while via[out[-1]] >= 0:
            out.append(via[out[-1]])
        return out

    loops = []
    for k in cuts:
        i, j = pair_bodies[k]
        pi, pj = path_to_root(i), path_to_root(j)
        common = next((b for b in pi if b in pj), None)
        pairs = [parent[b] for b in pi[: pi.index(common)]] if common is not None else []
        pairs += [parent[b] for b in pj[: pj.index(common)]] if common is not None else []
        loops.append((k, *pairs))
    body_pairs = tuple(
        tuple(k for k, bodies in enumerate(pair_bodies) if b in bodies) for b in range(nb)
    )
    return Topology(
        bodies=names,
        pair_bodies=pair_bodies,
        tree=tuple(tree),
        parent=tuple(parent[:nb]),
        cuts=cuts,
        loops=tuple(loops),
        extra=tuple(k for k in range(len(model.pairs)) if k not in edges),
        body_pairs=body_pairs,
    )


# ---------------------------------------------------------------------- the structure
class Structure(eqx.Module):
    """The discrete facts about a mechanism at a regular configuration (see the
    module docstring): decided once by [`decide`][redundax.decide], read by everything else.

    Names and rows are static; every decision is an array, so structures batch under
    `jax.vmap` (a sweep decides one per variant) and carry no gradient.

    - `n`, `m`, `h`: coordinates, holonomic rows (including the rigid-body rows of
      spatial bodies), Pfaffian rows.
    - `names`, `kinds`, `rows`, `labels`: the pairs (then any user groups), their
      rows of C (0-based) and the labels of their reaction components.
    - `topology`: the body graph, spanning tree and loops
      ([`Topology`][redundax.analysis.Topology]).
    - `blocks`: the block-sparse pattern of C M⁻¹ Cᵀ and its elimination order
      ([`BlockPattern`][redundax.internal.BlockPattern]), ordered by the topology.
    - `rank`, `rank_holonomic`, `rank_pfaffian`: rank of C, Φ_q and Ψ.
    - `independent`: per row of C, whether it belongs to the maximal independent set
      chosen by the pivoted QR of Cᵀ (rigid-body rows first); the others are the
      dependent rows.
    - `null_space`: (nc, nc), the left null space of C at the decision
      configuration in columns `rank:` (zeros elsewhere): the self-stresses.
    - `sigma_ratio`: σ_r / σ_1 of C at the decision configuration (r = `rank`): the
      margin to a singular configuration.
    - `rank_nearby`: the rank of C at the generic configuration next to it; above
      `rank` means the decision configuration is singular.
    - `schur`: whether the all-rows Schur complement C M⁻¹ Cᵀ is well conditioned
      apart from its p zero eigenvalues (the null-space method's fast path):
      `schur_gap` above `SCHUR_MIN_EIGENVALUE`.
    - `schur_path` (static): the same verdict as a Python bool where [`decide`][redundax.decide]
      judged it on the host, None where the structure was decided inside a
      transformation (its verdict traced). The null-space family and
      [`StepProjection`][redundax.drift.StepProjection] compute with the path it names,
      so every run given this structure (eager, under `jax.jit`, `jax.vmap`,
      `jax.grad`) compiles that one path; a structure decided inside a
      transformation takes its (traced) verdict at run time by `jax.lax.cond` —
      the same numbers, both paths compiled (and, under `jax.vmap`, both run):
      decide once outside the transformation and pass it.
    - `schur_gap`: ŝ, the smallest non-zero eigenvalue of C M⁻¹ Cᵀ scaled to unit
      diagonal (inf with none; 0 where M is singular or too ill conditioned). The
      Schur path's regularisation biases q̈ by about (δ/ŝ)⁷ (δ = 1e-6; measured:
      the 6-bar, ŝ = 9.4e-6, 1.1e-6; Bricard with rods 10 mm thick, ŝ = 1.7e-6,
      3.5e-3).
    - `mass_definite`: per body, whether its block of M is positive definite (not
      so for a spatial body in natural coordinates whose mass lies in one plane, a
      lamina with I_z = I_x + I_y: the constrained motion is still well defined, but
      no method that needs M⁻¹ can be used; [`specialise`][redundax.methods.specialise]
      refuses them by name).
    - `unique`, `multipliers_unique`, `b_norm`: per group, the QR test at the
      decision configuration; `row_unique`, `row_b_norm`: per row.
    - `stable_unique`, `stable_row_unique`: unique at the decision configuration
      *and* at the generic one next to it: what a decision taken once can claim
      for a whole motion (see the module docstring).
    - `mass_facts` (static): the model's `MassFacts` (`redundax._bodies`), from
      which the block solver's use and its pivots' metric are chosen.
    - `rtol`, `utol`: the tolerances the decisions were taken with.
    """

    n: int = eqx.field(static=True)
    m: int = eqx.field(static=True)
    h: int = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    labels: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    topology: Topology
    blocks: BlockPattern
    rank: Int[Array, ""]
    rank_holonomic: Int[Array, ""]
    rank_pfaffian: Int[Array, ""]
    independent: Bool[Array, " nc"]
    null_space: Float[Array, "nc nc"]
    sigma_ratio: Float[Array, ""]
    rank_nearby: Int[Array, ""]
    schur: Bool[Array, ""]
    schur_gap: Float[Array, ""]
    mass_definite: Bool[Array, " nb"]
    unique: Bool[Array, " g"]
    multipliers_unique: Bool[Array, " g"]
    b_norm: Float[Array, " g"]
    row_unique: Bool[Array, " nc"]
    row_b_norm: Float[Array, " nc"]
    stable_unique: Bool[Array, " g"]
    stable_row_unique: Bool[Array, " nc"]
    rtol: float = eqx.field(static=True)
    utol: float = eqx.field(static=True)
    schur_path: bool | None = eqx.field(static=True, default=None)
    mass_facts: MassFacts | None = eqx.field(static=True, default=None)

    @property
    def redundancy(self) -> Int[Array, ""]:
        """Degree of redundancy p = m + h − r."""
        return self.m + self.h - self.rank

    @property
    def dof(self) -> Int[Array, ""]:
        """Mobility n − r."""
        return self.n - self.rank

    @property
    def n_pairs(self) -> int:
        """Number of kinematic pairs (the first entries of `names`; user groups follow)."""
        return sum(kind != "group" for kind in self.kinds)

    def index(self, name: str) -> int:
        """Position of the pair or group `name` in `names`."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(
                f"no pair named {name!r}; known pairs: {', '.join(self.names)}"
            ) from None

    def check_model(self, model: Model, field: str = "structure") -> None:
        """Raise a `ModelError` naming `field` unless this structure was decided for
        `model`: the same coordinates, rows and pairs. A structure of another
        mechanism would otherwise give its verdicts to the wrong pairs. Static:
        works under a trace."""
        pairs = self.names[: self.n_pairs]
        theirs = (self.n, self.m, self.h, pairs, self.rows[: self.n_pairs])
        ours = (
            model.n_coordinates,
            model.n_holonomic,
            model.n_pfaffian,
            model.pair_names,
            tuple(p.rows for p in model.pairs),
        )
        if theirs != ours:
            raise ModelError(
                f"{field}: decided for another mechanism ({self.n} coordinates, "
                f"{self.m} + {self.h} rows, pairs {', '.join(pairs)}) than the model "
                f"({model.n_coordinates} coordinates, {model.n_holonomic} + "
                f"{model.n_pfaffian} rows, pairs {', '.join(model.pair_names)}); pass "
                f"rx.decide(model, q, t) of this model",
                source=field,
            )

    def singular(self) -> bool:
        """Whether the decision configuration is singular (host-side)."""
        return int(self.rank_nearby) > int(self.rank)

    def raise_if_singular(self) -> None:
        """`ValueError` if the decision configuration is singular: the rank decided
        there would drop real constraints along the motion."""
        if self.singular():
            raise ValueError(
                f"singular configuration: rank C = {int(self.rank)} at the initial state "
                f"but {int(self.rank_nearby)} at a configuration nearby on the constraint "
                "manifold, so the rank decided there would drop real constraints. Start "
                "from a regular configuration, or use rx.methods.AugmentedLagrangian(), which "
                "needs no rank decision."
            )


def groups_of(model: Model, groups: Mapping[str, Sequence[str | int]] | None):
    """Names, kinds, rows (0-based) and component labels of the pairs, then of the
    user's `groups` ({name: [pair names or 1-based rows]})."""
    names = [p.name for p in model.pairs]
    kinds = [p.kind for p in model.pairs]
    rows = [p.rows for p in model.pairs]
    labels = [p.components or tuple(f"row {k + 1}" for k in p.rows) for p in model.pairs]
    for gname, members in (groups or {}).items():
        if gname in names:
            raise ValueError(f"group {gname!r}: the name is already a pair's name")
        acc: list[int] = []
        for mbr in members:
            if isinstance(mbr, str):
                acc.extend(model.pair(mbr).rows)
            elif 1 <= int(mbr) <= model.n_constraints:
                acc.append(int(mbr) - 1)
            else:
                raise ValueError(
                    f"group {gname!r}: row {mbr} out of range 1..{model.n_constraints} "
                    "(rows are 1-based, as in the paper and the command line)"
                )
        names.append(gname)
        kinds.append("group")
        rows.append(tuple(sorted(set(acc))))
        labels.append(tuple(f"row {k + 1}" for k in rows[-1]))
    return tuple(names), tuple(kinds), tuple(rows), tuple(labels)


def _driver_rows(model: Model) -> np.ndarray:
    """0/1 per holonomic row: 1 for rows of driving (rheonomic) pairs."""
    mask = np.zeros(model.n_holonomic)
    for p in model.pairs:
        if _is_driver(p.kind):
            mask[[r for r in p.rows if r < model.n_holonomic]] = 1.0
    return mask


def _regular_direction(n: int) -> np.ndarray:
    """The fixed pseudo-random direction of the step to the nearby configuration."""
    return np.random.default_rng(0).normal(size=n)


def _mass_solve(blocks: Float[Array, "nb dof dof"], X: Float[Array, "nq k"]):
    """M⁻¹ X body by body (M is block diagonal: its bodies' `blocks`)."""
    nb, dof = blocks.shape[0], blocks.shape[1]
    return jnp.linalg.solve(blocks, X.reshape(nb, dof, -1)).reshape(nb * dof, -1)


def _gauss_newton(model: Model, q, t, keep):
    """q brought back onto Φ_k(q, t) = 0 for the rows with `keep` = 1 (least-norm
    Gauss–Newton steps; rank decided at each step with `DECISION_RTOL`).

    Euclidean, not mass-weighted: any generic configuration next to q serves, and
    this one needs no M⁻¹, so the verdicts do not depend on an invertible mass
    matrix (a lamina, I_z = I_x + I_y, has a singular block in natural
    coordinates; a mass-weighted step made it NaN and voided every verdict)."""
    m = model.n_holonomic

    def step(_, q):
        A = constraint_matrix(model, q, t)[:m] * keep[:, None]
        residual = position_residual(model, q, t) * keep
        S = A @ A.T
        w, U = jnp.linalg.eigh(0.5 * (S + S.T))
        big = w > DECISION_RTOL * jnp.maximum(w[-1], 1e-300)
        w_inv = jnp.where(big, 1.0 / jnp.where(big, w, 1.0), 0.0)
        return q - A.T @ (U @ (w_inv * (U.T @ residual)))

    return jax.lax.fori_loop(0, NEARBY_ITERATIONS, step, q)


def _nearby(model: Model, q, t):
    """A generic configuration next to q on the manifold of the non-driving
    holonomic rows: a step along their null space, projected back."""
    m = model.n_holonomic
    if m == 0:
        return q + NEARBY_STEP * jnp.asarray(_regular_direction(q.shape[0]))
    keep = jnp.asarray(1.0 - _driver_rows(model))
    A = constraint_matrix(model, q, t)[:m] * keep[:, None]
    _, s, Vt = jnp.linalg.svd(A)
    r = jnp.sum(s > DECISION_RTOL * s[0])
    n = q.shape[0]
    direction = jnp.asarray(_regular_direction(n))
    null = jnp.arange(n) >= r
    v = Vt.T @ jnp.where(null, direction, 0.0)
    v = v / jnp.maximum(jnp.linalg.norm(v), 1e-300)
    q1 = q + NEARBY_STEP * jnp.maximum(1.0, jnp.max(jnp.abs(q))) * v
    return _gauss_newton(model, q1, t, keep)


def _mass_definite(model: Model) -> Bool[Array, " nb"]:
    """Per body, whether its block of M is positive definite (smallest eigenvalue
    above `MASS_DEFINITE_RTOL` times the largest)."""
    eig = jnp.linalg.eigvalsh(model.bodies.mass_blocks())
    return eig[:, 0] > MASS_DEFINITE_RTOL * eig[:, -1]


def _schur_gap(model: Model, C, rank) -> Float[Array, ""]:
    """ŝ, the smallest non-zero eigenvalue of the Jacobi-scaled C M⁻¹ Cᵀ (inf with
    no non-zero one; 0 where M is singular or its condition number exceeds
    `MASS_CONDITION_LIMIT`)."""
    blocks = model.bodies.mass_blocks()
    m_eig = jnp.linalg.eigvalsh(blocks)  # M's are its blocks' (M is block diagonal)
    low, high = jnp.min(m_eig, initial=jnp.inf), jnp.max(m_eig, initial=0.0)
    ok = (low > 0.0) & (high <= MASS_CONDITION_LIMIT * low)
    nc = C.shape[0]
    if nc == 0:
        return jnp.where(ok, jnp.inf, 0.0)
    S = C @ _mass_solve(blocks, C.T)
    d = jnp.diag(S)
    scale = jnp.where(d > 0.0, 1.0 / jnp.sqrt(jnp.where(d > 0.0, d, 1.0)), 1.0)
    eig = jnp.linalg.eigvalsh(scale[:, None] * S * scale[None, :])
    p = nc - rank
    smallest = jnp.where(p >= nc, jnp.inf, jnp.take(eig, jnp.clip(p, 0, nc - 1)))
    return jnp.where(ok, smallest, 0.0)


def _independent(model: Model, C, rank, rtol, tie: float = 0.0) -> Bool[Array, " nc"]:
    """A maximal independent set of rows: the first `rank` column pivots of the
    pivoted QR of Cᵀ, the rigid-body rows of spatial bodies weighted to come first
    (`tie`: as `pivoted_qr`'s)."""
    nc = C.shape[0]
    weight = np.ones(nc)
    internal = list(model.internal_rows)
    weight[internal] = 1e3  # chosen first: they are independent among themselves
    qr = pivoted_qr((C * jnp.asarray(weight)[:, None]).T, rtol, rank, compute_q=False, tie=tie)
    return jnp.zeros(nc, dtype=bool).at[qr.perm].set(jnp.arange(nc) < rank)


def ranks_of_blocks(C, m, rtol, rank=None):
    """`(rank Φ_q, rank Ψ)`: the ranks of the holonomic rows `C[:m]` and the rest.
    `rank`: that of the whole C at `rtol`, when known: it is one of the two where
    the other block is empty (no factorisation is repeated)."""
    zero = jnp.asarray(0, dtype=jnp.int32)
    if rank is not None and m in (0, C.shape[0]):
        rank = jnp.asarray(rank, dtype=jnp.int32)
        return (rank, zero) if m else (zero, rank)
    rank_h = pivoted_qr(C[:m], rtol, compute_q=False).rank if m else zero
    rank_p = pivoted_qr(C[m:], rtol, compute_q=False).rank if C.shape[0] > m else zero
    return rank_h, rank_p


def verdicts_at(
    model: Model,
    q: Float[Array, " nq"],
    t: Scalar,
    rows: Sequence[Sequence[int]],
    rtol: float | None,
    utol: float,
):
    """`(C, N, rank, group verdicts, (row_unique, row_b_norm))` at (q, t): the
    analysis of one configuration, shared by [`decide`][redundax.decide] and
    [`analyze_solvability`][redundax.analyze_solvability]."""
    C = jax.lax.stop_gradient(constraint_matrix(model, q, t))
    N, rank = left_null_space(C, rtol)
    return C, N, rank, group_verdicts(C, N, rows, utol), row_verdicts(C, N, utol)


@eqx.filter_jit
def _decide(model, q, t, names, kinds, rows, labels, rtol, utol) -> Structure:
    q = jax.lax.stop_gradient(q)
    model = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, model
    )
    C, N, rank, groups, (row_unique, row_b) = verdicts_at(model, q, t, rows, rtol, utol)
    rank_h, rank_p = ranks_of_blocks(C, model.n_holonomic, rtol, rank)
    s = jnp.linalg.svd(C, compute_uv=False) if C.shape[0] else jnp.ones(1)
    sigma_ratio = jnp.take(s, jnp.clip(rank - 1, 0, s.shape[0] - 1)) / jnp.maximum(s[0], 1e-300)
    # The generic configuration next to q: its rank (regularity) and its verdicts,
    # each decided there. Where q itself is only nearly consistent (a state to be
    # projected, or a geometry a caller perturbed slightly) dependent rows look
    # independent at q by about the defect; the nearby configuration is back on the
    # manifold and sees the structure as it is.
    q1 = _nearby(model, q, t)
    C1 = constraint_matrix(model, q1, t)
    N1, rank1 = left_null_space(C1, rtol)
    groups1 = group_verdicts(C1, N1, rows, utol)
    row_unique1, _ = row_verdicts(C1, N1, utol)
    topo = topology(model)
    gap = _schur_gap(model, C, rank)
    return Structure(
        n=model.n_coordinates,
        m=model.n_holonomic,
        h=model.n_pfaffian,
        names=names,
        kinds=kinds,
        rows=rows,
        labels=labels,
        topology=topo,
        blocks=block_pattern(model, topo),
        rank=rank,
        rank_holonomic=rank_h,
        rank_pfaffian=rank_p,
        independent=_independent(model, C, rank, rtol),
        null_space=N,
        sigma_ratio=sigma_ratio,
        rank_nearby=rank1,
        schur=gap > SCHUR_MIN_EIGENVALUE,
        schur_gap=gap,
        mass_definite=_mass_definite(model),
        unique=groups.unique,
        multipliers_unique=groups.multipliers_unique,
        b_norm=groups.b_norm,
        row_unique=row_unique,
        row_b_norm=row_b,
        stable_unique=groups.unique & groups1.unique,
        stable_row_unique=row_unique & row_unique1,
        rtol=rtol_or_default(rtol, C.shape),
        utol=utol,
    )


def rtol_or_default(rtol: float | None, shape: tuple[int, int]) -> float:
    """`rtol`, or the round-off default `2 eps max(shape)`."""
    return default_rtol(shape) if rtol is None else float(rtol)


def decide(
    model: Model,
    q: Float[ArrayLike, " nq"],
    t: Scalar = 0.0,
    *,
    rtol: float = DECISION_RTOL,
    utol: float = UNIQUENESS_RTOL,
    groups: Mapping[str, Sequence[str | int]] | None = None,
) -> Structure:
    """Take every discrete decision about `model` at the configuration (q, t).

    **Arguments:**

    - `model`: the mechanism; `q`: a configuration on (or within the tolerance of)
      the constraint manifold [m, rad]; `t`: time [s].
    - `rtol`: relative rank tolerance (default `DECISION_RTOL` = 1e-8, see the
      module docstring for the policy).
    - `utol`: relative threshold for B_X = 0.
    - `groups`: extra groups of rows to give verdicts for,
      `{name: [pair names or 1-based rows]}`.

    **Returns:** a [`Structure`][redundax.Structure]. Pure: it works eagerly and under `jax.jit` and
    `jax.vmap` (a batch of configurations gives a batch of structures), and it
    carries no gradient (every decision is taken on `stop_gradient` values). The
    solver path it names (`Structure.schur_path`, static) is judged from ŝ where
    that is a number on the host; inside a transformation the verdict stays traced
    (see [`Structure`][redundax.Structure]).

    Whether (q, t) is regular is recorded, not enforced:
    [`Structure.raise_if_singular`][redundax.Structure.raise_if_singular] raises; `simulate` calls
    it for the methods that rely on the rank.

    !!! example
        ```python
        structure = rx.decide(model, state.q, state.t)
        traj = rx.simulate(model, state, 10.0, structure=structure)
        history = rx.reaction_history(model, traj, structure=structure)
        ```
    """
    check_vector(q, model.n_coordinates, "q", "decide")
    names, kinds, rows, labels = groups_of(model, groups)
    q = jnp.asarray(q, dtype=float)
    structure = _decide(
        unkeyed(model), q, jnp.asarray(t, dtype=float), names, kinds, rows, labels, rtol, utol
    )
    return judged(dataclasses.replace(structure, mass_facts=model.mass_facts))


def judged(structure: Structure) -> Structure:
    """`structure` with `schur_path` set from its verdict where that is a number on
    the host (unchanged where it is traced or batched): what [`decide`][redundax.decide] returns.
    For a structure computed by a program of its own (the command line's exported
    `decide`), so that the runs given it compile one path."""
    known = host_values(structure.schur)
    if known is None or np.ndim(known[0]):
        return structure
    return dataclasses.replace(structure, schur_path=bool(known[0]))
