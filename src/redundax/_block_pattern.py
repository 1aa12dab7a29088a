"""The block-sparse pattern of the equations of motion (Kraus et al. 2001, §6).

M is block diagonal (one block of `dof` coordinates per body) and each constraint
block (a kinematic pair's rows, or one body's rigid-body rows) touches one or two
bodies. Eliminating the bodies leaves the Schur complement S = C M⁻¹ Cᵀ over the
constraint blocks, whose block (g, h) is non-zero only when g and h act on a
common body: block tridiagonal for a chain, a small clique at each branching body
of a tree, and fill-in along a closed loop once it is factorised.

This module decides, once and on the host, the order in which the constraint
blocks are eliminated and where fill-in appears (a symbolic factorisation): the
numeric factorisation ([`redundax.methods.BlockSparse`][]) then runs a fixed
sequence of small dense block operations, with no decision left at run time.

The order. Every body's rigid-body block comes first (Kraus et al. §8: those rows
are always kept). A rigid-body block touches one body, and the other blocks on
that body are already coupled to each other through it, so eliminating it first
adds no fill-in. The pairs follow in greedy minimum-degree order over the pairs'
graph (two pairs are adjacent when they share a moving body; the ground is not a
block), ties broken so that the pairs of the spanning tree, deepest first, come
before the loop-closing and extra pairs. A loop through the ground is then a path
of pairs, eliminated from its ends inwards with no fill-in (the 6-bar, Bricard and
IFToMM A02's chains: none); a loop off the ground is a cycle of pairs and fills in
along itself (a ring of n bodies hung from the ground by one of them: n − 3 fill
blocks, at bandwidth 2 planar and 3 spatial, where the hung body's rigid-body
block is coupled to its three pairs).

Which rows the partitioning drops. A row is dropped when, at its turn, it depends
on the rows eliminated before it, so a loop's redundant rows fall in the pairs of
that loop eliminated last; nothing in the order makes them the loop-closing pair's
in general. Measured at the models' initial states: the 6-bar drops one row of its
loop-closing pair J4 and Bricard one of its J3 (each the last pair of its path), the
spatial four-bar three rows of its loop-closing B, the mobile robot (planar, no
rigid-body rows) the knife edges W3 and W4 (extra pairs, outside the spanning
tree); but IFToMM A02's spatial chain of three loops drops rows of B1 (closing)
and of O1 and O2 (pairs to the ground, in the spanning tree). Before the rigid-body
blocks came first (minimum degree over all blocks), the 6-bar and Bricard each
filled in one block and dropped a row of a pair to the ground (J6, J5).
"""

import equinox as eqx


class BlockPattern(eqx.Module):
    """The static (hashable) block structure of S = C M⁻¹ Cᵀ and its elimination.

    - `dof`: coordinates per body; `n_bodies`: moving bodies.
    - `rows`: per block, its rows of C (0-based); the blocks partition the rows.
    - `bodies`: per block, the moving bodies it acts on (indices; the ground omitted).
    - `names`: per block, a name (the pair's, or `"<body> (rigid body)"`).
    - `rigid`: per block, whether it is a body's rigid-body rows: eliminated before
      every pair and never dropped by the partitioning (Kraus et al. §8).
    - `order`: the blocks in elimination order (the rigid-body blocks first).
    - `later`: per step k of `order`, the steps after k coupled to it once the
      steps before k are eliminated (original blocks and fill-in), ascending.
    - `fill`: the (step, step) pairs, i > j, that are fill-in (zero in S).
    """

    dof: int = eqx.field(static=True)
    n_bodies: int = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    bodies: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    rigid: tuple[bool, ...] = eqx.field(static=True)
    order: tuple[int, ...] = eqx.field(static=True)
    later: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    fill: frozenset[tuple[int, int]] = eqx.field(static=True)

    @property
    def n_blocks(self) -> int:
        return len(self.rows)

    @property
    def n_rows(self) -> int:
        return sum(len(r) for r in self.rows)

    @property
    def elimination(self) -> tuple[int, ...]:
        """The order the numeric factorisation runs: `order` with the rigid-body
        blocks moved to the front (a no-op for the patterns of `block_pattern`;
        a pattern built with another order still never drops a rigid-body row)."""
        return tuple(g for g in self.order if self.rigid[g]) + tuple(
            g for g in self.order if not self.rigid[g]
        )

    @property
    def bandwidth(self) -> int:
        """The largest number of later blocks any step is coupled to."""
        return max((len(x) for x in self.later), default=0)


def _blocks(model, topology):
    """The constraint blocks: every pair, and each body's rigid-body rows."""
    nb = model.bodies.count
    rows, bodies, names, rank, rigid = [], [], [], [], []
    tree = {p: k for k, p in enumerate(topology.tree)}
    depth = _depths(topology)
    for i, pair in enumerate(model.pairs):
        moving = tuple(sorted({b for b in topology.pair_bodies[i] if b < nb}))
        rows.append(tuple(pair.rows))
        bodies.append(moving)
        names.append(pair.name)
        # Tree pairs first, deepest first; then loop-closing and extra pairs.
        deepest = max((depth[b] for b in moving), default=0)
        rank.append((0, -deepest) if i in tree else (1, -deepest))
        rigid.append(False)
    internal = model.internal_rows
    if internal:
        per = len(internal) // nb
        for b in range(nb):
            rows.append(tuple(internal[b * per : (b + 1) * per]))
            bodies.append((b,))
            names.append(f"{topology.bodies[b]} (rigid body)")
            rank.append((0, -depth[b] - 1))
            rigid.append(True)
    covered = sorted(r for block in rows for r in block)
    if covered != list(range(model.n_constraints)):
        raise ValueError("block pattern: the pairs and rigid-body rows do not partition C's rows")
    return tuple(rows), tuple(bodies), tuple(names), rank, tuple(rigid)


def _depths(topology) -> list[int]:
    """Each moving body's depth in the spanning tree (roots at 0)."""
    nb = len(topology.parent)
    depth = [-1] * nb
    other = {}
    for p in topology.tree:
        a, b = topology.pair_bodies[p][:2]
        other[p] = (a, b)

    def walk(b: int) -> int:
        if depth[b] >= 0:
            return depth[b]
        p = topology.parent[b]
        if p < 0:
            depth[b] = 0
            return 0
        a, c = other[p]
        up = c if a == b else a
        depth[b] = 1 if up >= nb else walk(up) + 1
        return depth[b]

    for b in range(nb):
        walk(b)
    return depth


def coupling(bodies) -> list[set[int]]:
    """Per node (a tuple of moving bodies each), the other nodes acting on one of its
    bodies: the non-zero blocks of C M⁻¹ Cᵀ."""
    on_body: dict[int, set[int]] = {}
    for g, bs in enumerate(bodies):
        for b in bs:
            on_body.setdefault(b, set()).add(g)
    adjacent = [set() for _ in bodies]
    for members in on_body.values():
        for g in members:
            adjacent[g] |= members - {g}
    return adjacent


def symbolic_factorisation(coupled: list[set[int]]):
    """Eliminate nodes 0, 1, … in order: per node, the later nodes it is coupled to
    once the earlier ones are eliminated (ascending), and the couplings that appear
    on the way (fill-in, (later, earlier) pairs). `coupled` is modified."""
    later, fill = [], set()
    for k in range(len(coupled)):
        up = sorted(j for j in coupled[k] if j > k)
        later.append(tuple(up))
        for a in up:
            for b in up:
                if a > b and b not in coupled[a]:
                    coupled[a].add(b)
                    coupled[b].add(a)
                    fill.add((a, b))
    return tuple(later), fill


def block_pattern(model, topology) -> BlockPattern:
    """The [`BlockPattern`][redundax.internal.BlockPattern] of `model` (its `Topology` orders the
    blocks)."""
    rows, bodies, names, rank, rigid = _blocks(model, topology)
    n = len(rows)
    adjacent = coupling(bodies)
    original = [set(a) for a in adjacent]
    # The rigid-body blocks first (no fill-in: module docstring), then greedy
    # minimum degree over the pairs (elimination game), ties by the topological rank.
    remaining = set(range(n))
    order = []
    while remaining:
        g = min(remaining, key=lambda k: (not rigid[k], len(adjacent[k]), rank[k], k))
        order.append(g)
        remaining.remove(g)
        neighbours = adjacent[g]
        for a in neighbours:
            adjacent[a] |= neighbours - {a}
            adjacent[a].discard(g)
    step = {g: k for k, g in enumerate(order)}
    later, fill = symbolic_factorisation([{step[h] for h in original[g]} for g in order])
    return BlockPattern(
        dof=model.bodies.dof,
        n_bodies=model.bodies.count,
        rows=rows,
        bodies=bodies,
        names=names,
        rigid=rigid,
        order=tuple(order),
        later=later,
        fill=frozenset(fill),
    )


def joint_pattern(pattern: BlockPattern, dof: int) -> BlockPattern:
    """The pattern of `pattern`'s pairs alone, in its elimination order, with `dof`
    coordinates per body: the system left once every body's rigid-body rows are
    eliminated by a null-space basis of `dof` columns (the null-space form of
    [`BlockSparse`][redundax.methods.BlockSparse]). Rows are renumbered
    0, 1, … in the order of C's rows that remain."""
    kept = [g for g in range(pattern.n_blocks) if not pattern.rigid[g]]
    renumber = {r: k for k, r in enumerate(sorted(r for g in kept for r in pattern.rows[g]))}
    block = {g: k for k, g in enumerate(kept)}
    order = tuple(block[g] for g in pattern.elimination if not pattern.rigid[g])
    bodies = tuple(pattern.bodies[g] for g in kept)
    step = {g: k for k, g in enumerate(order)}
    adjacent = coupling(bodies)
    later, fill = symbolic_factorisation([{step[h] for h in adjacent[g]} for g in order])
    return BlockPattern(
        dof=dof,
        n_bodies=pattern.n_bodies,
        rows=tuple(tuple(renumber[r] for r in pattern.rows[g]) for g in kept),
        bodies=bodies,
        names=tuple(pattern.names[g] for g in kept),
        rigid=(False,) * len(kept),
        order=order,
        later=later,
        fill=frozenset(fill),
    )
