"""The block-sparse pattern of the equations of motion (Kraus et al. 2001, §6).

M is block diagonal (one block of `dof` coordinates per body) and each constraint
block (a kinematic pair's rows, or one body's rigid-body rows) touches one or two
bodies. Eliminating the bodies leaves the Schur complement S = C M⁻¹ Cᵀ over the
constraint blocks, whose block (g, h) is non-zero only when g and h act on a
common body: block tridiagonal for a chain, a small clique at each branching body
of a tree, and fill-in along each closed loop once it is factorised.

This module decides, once and on the host, the order in which the constraint
blocks are eliminated and where fill-in appears (a symbolic factorisation): the
numeric factorisation ([`redundax.methods.BlockSparse`][]) then runs a fixed
sequence of small dense block operations, with no decision left at run time. The
order is greedy minimum degree over the block graph (fill-in then stays local: a
chain or a tree has none, a loop adds fill only along itself), ties broken so
that the pairs of the spanning tree, deepest first, come before the loop-closing
and extra pairs: the rows found dependent during the factorisation (the ones the
constraint partitioning drops) are then those of the loop-closing pairs, where
closing a loop brought the redundancy in (Kraus et al. §8).
"""

import equinox as eqx


class BlockPattern(eqx.Module):
    """The static (hashable) block structure of S = C M⁻¹ Cᵀ and its elimination.

    - `dof`: coordinates per body; `n_bodies`: moving bodies.
    - `rows`: per block, its rows of C (0-based); the blocks partition the rows.
    - `bodies`: per block, the moving bodies it acts on (indices; the ground omitted).
    - `names`: per block, a name (the pair's, or `"<body> (rigid body)"`).
    - `order`: the blocks in elimination order.
    - `later`: per step k of `order`, the steps after k coupled to it once the
      steps before k are eliminated (original blocks and fill-in), ascending.
    - `fill`: the (step, step) pairs, i > j, that are fill-in (zero in S).
    """

    dof: int = eqx.field(static=True)
    n_bodies: int = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    bodies: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
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
    def bandwidth(self) -> int:
        """The largest number of later blocks any step is coupled to."""
        return max((len(x) for x in self.later), default=0)


def _blocks(model, topology):
    """The constraint blocks: every pair, and each body's rigid-body rows."""
    nb = model.bodies.count
    rows, bodies, names, rank = [], [], [], []
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
    internal = model.internal_rows
    if internal:
        per = len(internal) // nb
        for b in range(nb):
            rows.append(tuple(internal[b * per : (b + 1) * per]))
            bodies.append((b,))
            names.append(f"{topology.bodies[b]} (rigid body)")
            rank.append((0, -depth[b] - 1))  # a body's own rows before its pairs
    covered = sorted(r for block in rows for r in block)
    if covered != list(range(model.n_constraints)):
        raise ValueError("block pattern: the pairs and rigid-body rows do not partition C's rows")
    return tuple(rows), tuple(bodies), tuple(names), rank


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
    rows, bodies, names, rank = _blocks(model, topology)
    n = len(rows)
    adjacent = coupling(bodies)
    original = [set(a) for a in adjacent]
    # Greedy minimum degree (elimination game), ties by the topological rank.
    remaining = set(range(n))
    order = []
    while remaining:
        g = min(remaining, key=lambda k: (len(adjacent[k]), rank[k], k))
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
        order=tuple(order),
        later=later,
        fill=frozenset(fill),
    )
