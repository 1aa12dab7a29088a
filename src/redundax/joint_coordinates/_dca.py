"""Featherstone's divide-and-conquer algorithm (DCA) over constraint rows, with
redundant constraints and their self-stresses.

The DCA (Featherstone 1999; closed loops: Malczyk et al. 2019) solves the
constrained Newton–Euler equations by assembling bodies pairwise into
subassemblies along a binary *assembly tree*, then back-substituting from the
root. It is written here over constraint **rows** acting on body accelerations
(twists in one fixed frame, so that all handles of a body share one
acceleration); tree joints and loop-closing joints are the same to it, and so are
planar (`dof = 3`) and spatial (`dof = 6`) bodies.

**Problem.** n bodies with inertias I_i and known wrenches b_i (applied and
gyroscopic); R rows, row r between bodies `body_a[r]` and `body_b[r]` (−1: the
ground, at rest), G_a[r] a_{body_a} + G_b[r] a_{body_b} = γ_r, its multiplier λ_r
acting with −G_a[r]ᵀ λ_r on body_a and −G_b[r]ᵀ λ_r on body_b (M q̈ + Cᵀ λ = F).
The accelerations are unique; λ is unique up to the left null space of G (the
self-stresses) when the rows are redundant.

**Articulated equation.** A subassembly S with handle rows H (rows with exactly
one end in S) obeys y_H = Ψ_S λ_H + η_S, y_h being the acceleration row h sees
from S's side (G_{h,S} a). A body: Ψ = −G_i I_i⁻¹ G_iᵀ, η = G_i I_i⁻¹ b_i. The
ground: Ψ = 0, η = 0.

**The ground** is a leaf joined with the whole mechanism at the root (`ground =
"root"`, the seed's picture), or, being at rest, split into independent copies,
one per body with rows to the ground, each joined with its body first (`ground =
"split"`): eliminating a body's rows to its copy is the articulated-body
elimination of a joint to a fixed base, and it is exact. Split, a row to the
ground is a handle of its body only, not of every subassembly up to the root, so
a mechanism pinned at many bodies (a ladder of parallelograms) keeps O(1)
handles per node.

**Assembly** of C = A ∪ B with crossing rows X (y^A_X + y^B_X = γ_X) and the
remaining handles H_C = A' ∪ B' (ordered A' then B'):

    W = Ψ^A_XX + Ψ^B_XX                       (negative semi-definite)
    K = [Ψ^A_XA', Ψ^B_XB']                    (X × H_C; Kᵀ = [Ψ^A_A'X; Ψ^B_B'X])
    r = γ_X − η^A_X − η^B_X
    λ_X = W⁻¹ (r − K λ_{H_C})
    Ψ^C = blockdiag(Ψ^A_A'A', Ψ^B_B'B') − Kᵀ W⁻¹ K
    η^C = [η^A_A'; η^B_B'] + Kᵀ W⁻¹ r

Internally S = −W (positive semi-definite) is factorised by Cholesky, so that
λ_X = Y λ_H − y with Y = S⁻¹ K, y = S⁻¹ r, Ψ^C = D + Kᵀ Y, η^C = e − Kᵀ y.
**Back-substitution** runs from the root (no handles) to the leaves, each node's
λ_X from its handles' multipliers, known from its ancestors; then
a_i = I_i⁻¹ (b_i − G_iᵀ λ).

**Redundant rows.** W is singular where the crossing rows are dependent on each
other and on the subassembly's internal rows (a loop closed redundantly). Which
crossing rows are kept (*active*) is decided once, host side, by
`decide_active_rows`; inactive rows get λ = 0, and the accelerations are those
of the full system because the dropped rows are dependent (and γ consistent).
Each dropped row d at node X seeds a self-stress: z on X's rows with z_d = 1,
z_active = −W_aa⁻¹ W_ad, propagated down X's subtree by the homogeneous
back-substitution (zero wrenches, zero γ); Gᵀ z = 0 (`self_stresses`).

**Padding scheme (static, planned on the host by `dca_plan`).** Nodes are
numbered bodies 0…n−1, the g ground leaves n…n+g−1 (g = 1 for `ground = "root"`;
split, ground leaf n+k is the copy of the k-th body with rows to the ground, in
ascending body order), then the internal nodes by height (children before
parents, each height a contiguous range, the root 2(n+g)−2 last). Every node's
(Ψ, η) lives in a pool of shape (N, w+1, w+1) / (N, w+1), N = 2(n+g)−1 nodes, w
the largest handle count of any node (the ground leaves' entries stay zero):
slots 0…h−1 hold its handles in order, the others are zero, and slot w is always
zero (the *zero slot*). A level (one height) is evaluated at once over its m
nodes, padded to the level's largest crossing count x and handle count h (at
least 1). Each node addresses its crossing rows and its handles by their slots
in child A and in child B (tables (m, x) and (m, h)); a row a child does not
hold (the ground's side, a handle from the other child, padding) addresses that
child's zero slot and so reads zeros. The tables enter as one-hot (m, ·, w+1)
constants, so reading the children's Ψ is a few batched matrix products. Rows
are padded with the sink row R: G, γ and λ get one extra zero entry at R, and
padded results are added there (always zero). Padded and inactive crossing
positions get an identity diagonal and a zero right-hand side in S, so their λ
is exactly 0 and the shapes never change. The sequential depth is the tree
height (O(log n) for the default balanced tree; a Python loop over the levels,
the nodes of a level batched), and the work is O(Σ_nodes (x + h) (w + x + h)²):
O(n) for chains and trees, whose nodes have O(1) handles; loops add handle rows
along themselves, and so do rows to the ground unless the ground is split.
"""

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import cho_solve
from jaxtyping import Array, ArrayLike, Float

from .._qr import DECISION_RTOL

DECISION_SPREAD = 1e4
"""The largest ratio of the bodies' inertia eigenvalues (all bodies together) in the
metric of the host-side decisions (`decision_metric`)."""

# ---------------------------------------------------------------------------
# The assembly tree
# ---------------------------------------------------------------------------


GROUND_MODES = ("root", "split")
"""Where the ground enters the assembly tree (`assembly_tree`)."""


class AssemblyTree(eqx.Module):
    """A binary assembly tree over n bodies and the ground leaves (static, hashable).

    Node ids: the bodies 0…n−1, then the g ground leaves n…n+g−1, then the
    internal nodes n+g…2(n+g)−2 by height (children before parents, the root
    last).

    - `ground = "root"`: one ground leaf (g = 1, id n); the root joins the whole
      mechanism with it.
    - `ground = "split"`: one ground leaf per body with rows to the ground (the
      ground is at rest, so its copies are independent): ground leaf n + k is the
      copy of body `grounded[k]` (`grounded` ascending), joined with that body
      before anything else. g may be 0 (a floating mechanism).

    - `n_bodies`: n.
    - `left`, `right`: per internal node (node id − n − g), its children.
    - `height`: per node; 0 for the leaves.
    - `parent`: per node; −1 for the root.
    - `ground`: `"root"` or `"split"`.
    - `grounded`: split: the bodies with a ground leaf, ascending; root: ().
    """

    n_bodies: int = eqx.field(static=True)
    left: tuple[int, ...] = eqx.field(static=True)
    right: tuple[int, ...] = eqx.field(static=True)
    height: tuple[int, ...] = eqx.field(static=True)
    parent: tuple[int, ...] = eqx.field(static=True)
    ground: str = eqx.field(static=True, default="root")
    grounded: tuple[int, ...] = eqx.field(static=True, default=())

    @property
    def n_ground(self) -> int:
        """g, the number of ground leaves."""
        return 1 if self.ground == "root" else len(self.grounded)

    @property
    def first_internal(self) -> int:
        """The id of the first internal node: n + g (the number of leaves)."""
        return self.n_bodies + self.n_ground

    @property
    def base(self) -> int:
        """The ground's leaf (`ground = "root"` only; split: `ground_leaf`)."""
        if self.ground != "root":
            raise ValueError(
                "assembly tree: a split ground has one leaf per grounded body; "
                "use ground_leaf(body)"
            )
        return self.n_bodies

    @property
    def root(self) -> int:
        return self.n_nodes - 1

    @property
    def n_nodes(self) -> int:
        return 2 * self.first_internal - 1

    def is_ground(self, node: int) -> bool:
        return self.n_bodies <= node < self.first_internal

    def ground_leaf(self, body: int) -> int:
        """The ground leaf that the rows between `body` and the ground meet.

        **Raises:** `ValueError` if the ground is split and `body` has no copy."""
        if self.ground == "root":
            return self.n_bodies
        if body not in self.grounded:
            raise ValueError(
                f"assembly tree: body {body} has no ground leaf; build the tree with "
                "the rows' body pairs so that every body with rows to the ground gets one"
            )
        return self.n_bodies + self.grounded.index(body)

    def children(self, node: int) -> tuple[int, ...]:
        """(left, right) of an internal node; () for a leaf."""
        if node < self.first_internal:
            return ()
        k = node - self.first_internal
        return (self.left[k], self.right[k])

    def bodies(self, node: int) -> tuple[int, ...]:
        """The moving bodies under `node` (ground leaves omitted), ascending."""
        out, stack = [], [node]
        while stack:
            x = stack.pop()
            if x < self.n_bodies:
                out.append(x)
            stack.extend(self.children(x))
        return tuple(sorted(out))


def _flatten_order(order, leaves: list[int], problems: list[str]) -> None:
    if isinstance(order, tuple | list):
        if not order:
            problems.append("an empty group ()")
        for item in order:
            _flatten_order(item, leaves, problems)
    elif isinstance(order, int | np.integer) and not isinstance(order, bool):
        leaves.append(int(order))
    else:
        problems.append(f"{order!r} is neither a body index nor a group")


def _binary(order):
    """Nested groups → a binary nesting (a group of k > 2 is split in halves)."""
    if not isinstance(order, tuple | list):
        return int(order)
    if len(order) == 1:
        return _binary(order[0])
    half = (len(order) + 1) // 2
    return (_binary(order[:half]), _binary(order[half:]))


def _depth_first_order(n: int, body_pairs: Iterable) -> list[int]:
    """Bodies in depth-first preorder from the ground over the joint graph, then
    the bodies not connected to the ground, each from its lowest index. A
    contiguous segment of a depth-first order is a union of few subtrees, so its
    halves have few crossing rows (a breadth-first order interleaves branches)."""
    adjacent: list[list[int]] = [[] for _ in range(n + 1)]
    for a, b in body_pairs:
        a, b = (n if int(a) < 0 else int(a)), (n if int(b) < 0 else int(b))
        adjacent[a].append(b)
        adjacent[b].append(a)
    seen, order = [False] * (n + 1), []
    for start in [n, *range(n)]:
        if seen[start]:
            continue
        stack = [start]
        while stack:
            x = stack.pop()
            if seen[x]:
                continue
            seen[x] = True
            if x < n:
                order.append(x)
            stack.extend(y for y in reversed(adjacent[x]) if not seen[y])
    return order


def assembly_tree(
    n: int,
    body_pairs: Iterable = (),
    order: tuple | list | None = None,
    *,
    ground: str = "root",
) -> AssemblyTree:
    """The binary assembly tree of n bodies and the ground.

    **Arguments:**

    - `n`: number of moving bodies (≥ 1).
    - `body_pairs`: the (body_a, body_b) of the joints (or rows), −1 the ground;
      orders the bodies when `order` is not given, and with `ground = "split"`
      names the bodies that get a ground leaf.
    - `order`: nested groups of body indices, e.g. `((0, 1), (2, 3))`; a group of
      more than two is split in halves. Default (either `ground`): the bodies in
      depth-first order from the ground, split recursively in halves (balanced:
      height ⌈log₂ n⌉ + 1). A contiguous stretch of that order is a union of few
      subtrees of the depth-first tree, connected without the ground, so a split
      ground does not make its halves cross more rows (A02's ladder comes out
      crank0, coupler1, crank1, coupler2, …).
    - `ground`: `"root"`: one ground leaf, joined with the whole mechanism at the
      root. `"split"`: one ground leaf per body with rows to the ground, joined
      with it first (that node owns exactly the body's rows to the ground); the
      (body, ground) units are then assembled in `order` and the root joins two
      parts of the mechanism. Splitting keeps rows to the ground out of the
      handles, so a mechanism pinned to the ground at many bodies keeps few handles
      per node (the DCA's cost is linear in n only then).

    **Returns:** an `AssemblyTree` (its docstring numbers the ground leaves).

    **Raises:** `ValueError` if `order` does not hold every body exactly once, or
    `ground` is neither `"root"` nor `"split"`.

    !!! example

        ```python
        pairs = [(-1, 0), (0, 1), (1, 2), (2, 3)]
        tree = assembly_tree(4, pairs)
        tree.children(tree.root)  # (mechanism node, 4): the ground is joined last
        split = assembly_tree(4, pairs, ground="split")
        split.children(split.parent[0])  # (0, 4): body 0 with its ground copy
        ```
    """
    if ground not in GROUND_MODES:
        raise ValueError(f"assembly tree: ground must be 'root' or 'split', got {ground!r}")
    if n < 1:
        raise ValueError(f"assembly tree: need at least one body, got n = {n}")
    body_pairs = [(int(a), int(b)) for a, b in body_pairs]
    if order is None:
        nested = _binary(_depth_first_order(n, body_pairs))
    else:
        leaves: list[int] = []
        problems: list[str] = []
        _flatten_order(order, leaves, problems)
        counts = np.bincount([b for b in leaves if 0 <= b < n], minlength=n)
        problems += [f"body {b} is not a body (0…{n - 1})" for b in leaves if not 0 <= b < n]
        problems += [f"body {b} is missing" for b in range(n) if counts[b] == 0]
        problems += [f"body {b} appears {counts[b]} times" for b in range(n) if counts[b] > 1]
        if problems:
            raise ValueError(
                "assembly order: "
                + "; ".join(problems)
                + f". Give every body 0…{n - 1} exactly once, e.g. ((0, 1), (2, 3))."
            )
        nested = _binary(order)
    if ground == "split":
        grounded = tuple(
            sorted(
                {b if a < 0 else a for a, b in body_pairs if (a < 0) != (b < 0) and max(a, b) < n}
            )
        )
        copy_of = {body: n + k for k, body in enumerate(grounded)}
        n_leaves = n + len(grounded)
    else:
        grounded, copy_of, n_leaves = (), {}, n + 1

    # Internal nodes in post-order with temporary ids, then renumbered by height.
    made: list[tuple[int, int, int]] = []  # (left, right, height), temporary ids

    def height_of(x: int) -> int:
        return 0 if x < n_leaves else made[x - n_leaves][2]

    def join(a: int, b: int) -> int:
        made.append((a, b, 1 + max(height_of(a), height_of(b))))
        return n_leaves + len(made) - 1

    def build(x) -> int:
        if isinstance(x, int):
            return join(x, copy_of[x]) if x in copy_of else x
        return join(build(x[0]), build(x[1]))

    top = build(nested)
    if ground == "root":
        join(top, n)
    rank = sorted(range(len(made)), key=lambda k: (made[k][2], k))
    new_id = {n_leaves + old: n_leaves + new for new, old in enumerate(rank)}

    def rename(x: int) -> int:
        return x if x < n_leaves else new_id[x]

    left = tuple(rename(made[old][0]) for old in rank)
    right = tuple(rename(made[old][1]) for old in rank)
    height = [0] * n_leaves + [made[old][2] for old in rank]
    parent = [-1] * len(height)
    for k, (a, b) in enumerate(zip(left, right, strict=True)):
        parent[a] = parent[b] = n_leaves + k
    return AssemblyTree(
        n_bodies=n,
        left=left,
        right=right,
        height=tuple(height),
        parent=tuple(parent),
        ground=ground,
        grounded=grounded,
    )


# ---------------------------------------------------------------------------
# The static plan
# ---------------------------------------------------------------------------


class _LevelPlan(NamedTuple):
    """One height of internal nodes, padded (module docstring); nested tuples."""

    first: int  # node id of the level's first node (the level is contiguous)
    left: tuple[int, ...]  # (m,) children A
    right: tuple[int, ...]  # (m,) children B
    cross_rows: tuple[tuple[int, ...], ...]  # (m, x) the rows owned, padded with R
    cross_left: tuple[tuple[int, ...], ...]  # (m, x) their slots in A, padded with w
    cross_right: tuple[tuple[int, ...], ...]  # (m, x) their slots in B, padded with w
    handle_left: tuple[tuple[int, ...], ...]  # (m, h) the node's handles' slots in A, or w
    handle_right: tuple[tuple[int, ...], ...]  # (m, h) their slots in B, or w
    handle_rows: tuple[tuple[int, ...], ...]  # (m, h) rows, padded with R


class DcaPlan(eqx.Module):
    """The static (hashable) plan of the DCA over an `AssemblyTree`.

    - `tree`: the assembly tree.
    - `n_rows`: R; `body_a`, `body_b`, `joint_of_row`: per row.
    - `crossing`: per node, the rows it owns (one end in each child; a row to the
      ground is owned where its body meets the ground leaf: the root, or split,
      the body's own (body, ground copy) node), ascending; () for leaves.
    - `handles`: per node, its handle rows in slot order (a body: ascending; an
      internal node: A' then B'); () for the ground leaves and the root.
    - `width`: w, the largest handle count (pool slots 0…w−1, zero slot w).
    - `leaf_rows`, `leaf_is_a`: per body, its handle rows padded with R, and
      whether the body is the row's a end.
    - `levels`: per height 1…H, the padded index tables of its nodes.
    """

    tree: AssemblyTree
    n_rows: int = eqx.field(static=True)
    body_a: tuple[int, ...] = eqx.field(static=True)
    body_b: tuple[int, ...] = eqx.field(static=True)
    joint_of_row: tuple[int, ...] = eqx.field(static=True)
    crossing: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    handles: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    width: int = eqx.field(static=True)
    leaf_rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    leaf_is_a: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    levels: tuple[_LevelPlan, ...] = eqx.field(static=True)

    @property
    def n_bodies(self) -> int:
        return self.tree.n_bodies


def _padded(rows: list[list[int]], width: int, fill: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(r) + (fill,) * (width - len(r)) for r in rows)


def dca_plan(
    tree: AssemblyTree,
    body_a: Sequence[int] | np.ndarray,
    body_b: Sequence[int] | np.ndarray,
    joint_of_row: Sequence[int] | np.ndarray,
) -> DcaPlan:
    """The static plan of the DCA: who owns which row, every node's handles, and
    the padded index tables of each level (module docstring).

    **Arguments:**

    - `tree`: from `assembly_tree`.
    - `body_a`, `body_b`: per row, its two bodies (−1 the ground), shape `(nc,)`;
      a row to the ground is routed to the ground leaf of its body.
    - `joint_of_row`: per row, its joint; a joint's rows share (body_a, body_b).

    **Returns:** a `DcaPlan`.

    **Raises:** `ValueError` naming every inconsistent row or joint.
    """
    n = tree.n_bodies
    a = [int(x) for x in np.asarray(body_a, dtype=np.int64).reshape(-1)]
    b = [int(x) for x in np.asarray(body_b, dtype=np.int64).reshape(-1)]
    joint = [int(x) for x in np.asarray(joint_of_row, dtype=np.int64).reshape(-1)]
    R = len(a)
    problems = []
    if len(b) != R or len(joint) != R:
        problems.append(f"body_a, body_b and joint_of_row have {R}, {len(b)} and {len(joint)} rows")
    else:
        for r in range(R):
            bad = [x for x in (a[r], b[r]) if not -1 <= x < n]
            if bad:
                problems.append(f"row {r} names body {bad[0]} (bodies are −1…{n - 1})")
            elif a[r] == b[r]:
                problems.append(f"row {r} joins body {a[r]} to itself")
            elif (
                tree.ground == "split"
                and min(a[r], b[r]) < 0
                and max(a[r], b[r]) not in tree.grounded
            ):
                problems.append(
                    f"row {r} joins body {max(a[r], b[r])} to the ground, but the tree has "
                    "no ground leaf for it (build the tree from the rows' body pairs)"
                )
        ends: dict[int, tuple[int, int]] = {}
        for r in range(R):
            if ends.setdefault(joint[r], (a[r], b[r])) != (a[r], b[r]):
                problems.append(
                    f"joint {joint[r]}: row {r} joins {(a[r], b[r])}, "
                    f"an earlier row {ends[joint[r]]}"
                )
    if problems:
        raise ValueError("DCA plan: " + "; ".join(problems) + ".")

    # The tree's fields as plain Python objects: an attribute or method of an
    # `eqx.Module` costs microseconds, and these loops run O(R log n) times.
    nn, first, parent = tree.n_nodes, tree.first_internal, tree.parent
    tree_left, tree_right, height_of = tree.left, tree.right, tree.height
    if tree.ground == "root":
        ground_leaf = {body: n for body in range(n)}
    else:
        ground_leaf = {body: n + k for k, body in enumerate(tree.grounded)}
    depth = [0] * nn
    for x in range(nn - 1, -1, -1):  # parents have larger ids than their children
        depth[x] = 0 if parent[x] < 0 else depth[parent[x]] + 1

    handle_set: list[set[int]] = [set() for _ in range(nn)]
    crossing: list[list[int]] = [[] for _ in range(nn)]
    for r in range(R):
        # The ground end of a row meets the ground leaf of the row's body.
        u = ground_leaf[b[r]] if a[r] < 0 else a[r]
        v = ground_leaf[a[r]] if b[r] < 0 else b[r]
        # Both ends climb to their lowest common ancestor, which owns the row;
        # every node passed on the way has the row as a handle.
        while u != v:
            if depth[u] < depth[v]:
                u, v = v, u
            if not n <= u < first:  # not a ground leaf
                handle_set[u].add(r)
            u = parent[u]
        crossing[u].append(r)

    handles: list[tuple[int, ...]] = [()] * nn
    for x in range(n):
        handles[x] = tuple(sorted(handle_set[x]))
    for x in range(first, nn):
        left, right = tree_left[x - first], tree_right[x - first]
        handles[x] = tuple(h for c in (left, right) for h in handles[c] if h in handle_set[x])
    w = max((len(h) for h in handles), default=0)

    def table(nodes: list[int], children: list[int], rows: list, size: int):
        """Per node, its `rows`' slots in the child's handle list, padded; the zero
        slot w where the child does not hold the row (the ground, or a handle
        that comes from the other child)."""
        return _padded(
            [
                [handles[c].index(r) if r in handles[c] else w for r in rows[x]]
                for x, c in zip(nodes, children, strict=True)
            ],
            size,
            w,
        )

    levels = []
    by_height: list[list[int]] = [[] for _ in range(max(height_of) + 1)]
    for x in range(first, nn):
        by_height[height_of[x]].append(x)
    for nodes in by_height[1:]:
        x_max = max(1, max(len(crossing[x]) for x in nodes))
        h_max = max(1, max(len(handles[x]) for x in nodes))
        left = [tree_left[x - first] for x in nodes]
        right = [tree_right[x - first] for x in nodes]

        levels.append(
            _LevelPlan(
                first=nodes[0],
                left=tuple(left),
                right=tuple(right),
                cross_rows=_padded([crossing[x] for x in nodes], x_max, R),
                cross_left=table(nodes, left, crossing, x_max),
                cross_right=table(nodes, right, crossing, x_max),
                handle_left=table(nodes, left, handles, h_max),
                handle_right=table(nodes, right, handles, h_max),
                handle_rows=_padded([list(handles[x]) for x in nodes], h_max, R),
            )
        )
    h0 = max(1, max((len(handles[x]) for x in range(n)), default=0))
    leaf_rows = _padded([list(handles[x]) for x in range(n)], h0, R)
    leaf_is_a = tuple(tuple(r < R and a[r] == x for r in leaf_rows[x]) for x in range(n))
    return DcaPlan(
        tree=tree,
        n_rows=R,
        body_a=tuple(a),
        body_b=tuple(b),
        joint_of_row=tuple(joint),
        crossing=tuple(tuple(c) for c in crossing),
        handles=tuple(handles),
        width=w,
        leaf_rows=leaf_rows,
        leaf_is_a=leaf_is_a,
        levels=tuple(levels),
    )


# ---------------------------------------------------------------------------
# Active rows and the per-node view
# ---------------------------------------------------------------------------


class ActiveRows(eqx.Module):
    """Which crossing rows each node keeps (static, hashable; decided once).

    - `active`: per node, one flag per row of `plan.crossing[node]`.
    - `nullity`: per node, how many of its crossing rows are dropped.
    - `dropped`: the dropped rows, ascending (the self-stresses' order).
    - `rtol`: the tolerance that decided.
    """

    active: tuple[tuple[bool, ...], ...] = eqx.field(static=True)
    nullity: tuple[int, ...] = eqx.field(static=True)
    dropped: tuple[int, ...] = eqx.field(static=True)
    rtol: float = eqx.field(static=True)

    @property
    def n_redundant(self) -> int:
        """p: the number of dropped rows, R − rank G."""
        return len(self.dropped)


class AssemblyNode(NamedTuple):
    """One internal node of the assembly, for analyses that walk the tree.

    `children` are node ids (a ground leaf among them: `plan.tree.is_ground`);
    `bodies` lists the moving bodies under the node only."""

    node: int
    children: tuple[int, int]
    parent: int
    height: int
    bodies: tuple[int, ...]
    crossing: tuple[int, ...]
    handles: tuple[int, ...]
    active: tuple[bool, ...]
    nullity: int


def assembly_nodes(plan: DcaPlan, active: ActiveRows) -> tuple[AssemblyNode, ...]:
    """Every internal node's rows, children, parent, height and nullity, from the
    leaves to the root (children before parents)."""
    tree = plan.tree
    return tuple(
        AssemblyNode(
            node=x,
            children=tree.children(x),
            parent=tree.parent[x],
            height=tree.height[x],
            bodies=tree.bodies(x),
            crossing=plan.crossing[x],
            handles=plan.handles[x],
            active=active.active[x],
            nullity=active.nullity[x],
        )
        for x in range(tree.first_internal, tree.n_nodes)
    )


# ---------------------------------------------------------------------------
# Numerics
# ---------------------------------------------------------------------------


class DcaSolution(eqx.Module):
    """- `accelerations`: per body, shape `(nb, dof)`.
    - `multipliers`: λ, shape `(nc,)`: zero on the dropped rows (one valid λ)."""

    accelerations: Float[Array, "nb dof"]
    multipliers: Float[Array, " nc"]


class _Leaves(NamedTuple):
    G: Array  # (nb, h0, dof): the handle rows' blocks on each body
    chol: Array  # (nb, dof, dof): Cholesky factors of the inertias
    psi: Array  # (nb, h0, h0)
    eta: Array  # (nb, h0)


class _Factors(NamedTuple):
    S: Array  # (m, x, x): −W, unmasked
    chol: Array  # (m, x, x): Cholesky factor of the masked S
    mask: np.ndarray  # (m, x): active and not padding (static)
    Y: Array  # (m, x, h): S⁻¹ K on the active rows
    y: Array  # (m, x): S⁻¹ r on the active rows


def _leaf_blocks(xp, plan: DcaPlan, G_a, G_b):
    """(nb, h0, dof): each body's handle rows' blocks on it, zero for padding."""
    rows = np.asarray(plan.leaf_rows, dtype=np.int64)
    is_a = np.asarray(plan.leaf_is_a, dtype=bool)
    zero = xp.zeros((1, G_a.shape[1]), G_a.dtype)
    G_a, G_b = xp.concatenate([G_a, zero]), xp.concatenate([G_b, zero])
    return xp.where(is_a[:, :, None], G_a[rows], G_b[rows])


def _selections(plan: DcaPlan, level: _LevelPlan) -> tuple[np.ndarray, ...]:
    """One-hot (m, x or h, w+1) matrices of a level's slot tables: the gathers
    from the children's Ψ become small matrix products, which XLA compiles
    about twice as fast as the equivalent gathers (a level per program)."""
    eye = np.eye(plan.width + 1)
    tables = (level.cross_left, level.cross_right, level.handle_left, level.handle_right)
    return tuple(eye[np.asarray(t, dtype=np.int64)] for t in tables)


def _level_system(xp, selections, psi_l, eta_l, psi_r, eta_r, gamma_x):
    """S = −W, K, D, e, r of a level's nodes from their children's (Ψ, η), in
    NumPy (`xp = np`, the host-side decision) or JAX (`xp = jnp`)."""
    Pl, Pr, Hl, Hr = selections
    EA = xp.einsum("mxi,mij->mxj", Pl, psi_l)  # Ψ^A_X·
    EB = xp.einsum("mxi,mij->mxj", Pr, psi_r)  # Ψ^B_X·
    W = xp.einsum("mxj,myj->mxy", EA, Pl) + xp.einsum("mxj,myj->mxy", EB, Pr)
    # A handle from A has B's zero slot and vice versa: K = [Ψ^A_XA', Ψ^B_XB'].
    K = xp.einsum("mxj,mhj->mxh", EA, Hl) + xp.einsum("mxj,mhj->mxh", EB, Hr)
    D = xp.einsum("mhi,mij,mkj->mhk", Hl, psi_l, Hl) + xp.einsum("mhi,mij,mkj->mhk", Hr, psi_r, Hr)
    e = xp.einsum("mhi,mi->mh", Hl, eta_l) + xp.einsum("mhi,mi->mh", Hr, eta_r)
    r = gamma_x - xp.einsum("mxi,mi->mx", Pl, eta_l) - xp.einsum("mxi,mi->mx", Pr, eta_r)
    return -W, K, D, e, r


def _host_level_system(level: _LevelPlan, psi_l, eta_l, psi_r, eta_r, gamma_x):
    """`_level_system` on the host: the same S = −W, K, D, e, r by gathering the
    children's slots (NumPy's gathers are cheap; the one-hot products cost
    O(m x w²), and their large temporaries made the host pass grow faster than the
    number of nodes). A slot w reads the children's zero slot, as there."""
    Pl, Pr, Hl, Hr = (
        np.asarray(t, dtype=np.int64)
        for t in (level.cross_left, level.cross_right, level.handle_left, level.handle_right)
    )
    m = np.arange(Pl.shape[0])[:, None, None]
    W = psi_l[m, Pl[:, :, None], Pl[:, None, :]] + psi_r[m, Pr[:, :, None], Pr[:, None, :]]
    K = psi_l[m, Pl[:, :, None], Hl[:, None, :]] + psi_r[m, Pr[:, :, None], Hr[:, None, :]]
    D = psi_l[m, Hl[:, :, None], Hl[:, None, :]] + psi_r[m, Hr[:, :, None], Hr[:, None, :]]
    rows = m[:, :, 0]
    e = eta_l[rows, Hl] + eta_r[rows, Hr]
    r = gamma_x - eta_l[rows, Pl] - eta_r[rows, Pr]
    return -W, K, D, e, r


def _masked(xp, S, K, mask):
    """S with the inactive and padded rows and columns replaced by the identity,
    and K with those rows zeroed: their λ is then exactly 0."""
    both = mask[..., :, None] & mask[..., None, :]
    eye = np.eye(mask.shape[-1])
    return xp.where(both, S, 0.0) + eye * (~mask)[..., None], xp.where(mask[..., None], K, 0.0)


def _level_mask(plan: DcaPlan, active: ActiveRows, level: _LevelPlan) -> np.ndarray:
    mask = np.zeros(np.shape(level.cross_rows), dtype=bool)
    for j in range(len(level.left)):
        flags = active.active[level.first + j]
        mask[j, : len(flags)] = flags
    return mask


def _leaf_terms(plan: DcaPlan, inertia, bias, G_a, G_b) -> _Leaves:
    G = _leaf_blocks(jnp, plan, G_a, G_b)
    chol = jnp.linalg.cholesky(inertia)
    # One solve for both right-hand sides [G_iᵀ | b_i].
    rhs = jnp.concatenate([jnp.swapaxes(G, 1, 2), bias[:, :, None]], axis=2)
    solved = jax.vmap(lambda c, v: cho_solve((c, True), v))(chol, rhs)
    psi = -jnp.einsum("nkd,ndl->nkl", G, solved[:, :, :-1])
    eta = jnp.einsum("nkd,nd->nk", G, solved[:, :, -1])
    return _Leaves(G, chol, psi, eta)


def _condense(S, K, D, e, r, mask):
    """One node: factor the masked S; the node's articulated equation."""
    Sm, Km = _masked(jnp, S, K, mask)
    chol = jnp.linalg.cholesky(Sm)
    rhs = jnp.concatenate([Km, jnp.where(mask, r, 0.0)[:, None]], axis=1)
    solved = cho_solve((chol, True), rhs)
    Y, y = solved[:, :-1], solved[:, -1]
    psi = D + Km.T @ Y
    # Symmetric in exact arithmetic; kept so, or round-off grows up the tree.
    psi = 0.5 * (psi + psi.T)
    return psi, e - Km.T @ y, chol, Y, y


def _main_pass(plan: DcaPlan, active: ActiveRows, leaves: _Leaves, gamma) -> list[_Factors]:
    """Leaves → root: each level's factors."""
    n, w, dtype = plan.n_bodies, plan.width, leaves.psi.dtype
    h0 = leaves.psi.shape[1]
    pool_psi = jnp.zeros((plan.tree.n_nodes, w + 1, w + 1), dtype)
    pool_eta = jnp.zeros((plan.tree.n_nodes, w + 1), dtype)
    if w:  # else no body has a handle (h0 = 1 is padding only)
        pool_psi = pool_psi.at[:n, :h0, :h0].set(leaves.psi)
        pool_eta = pool_eta.at[:n, :h0].set(leaves.eta)
    gamma_x = jnp.concatenate([gamma, jnp.zeros(1, dtype)])
    factors = []
    for level in plan.levels:
        left, right = np.asarray(level.left), np.asarray(level.right)
        S, K, D, e, r = _level_system(
            jnp,
            _selections(plan, level),
            pool_psi[left],
            pool_eta[left],
            pool_psi[right],
            pool_eta[right],
            gamma_x[np.asarray(level.cross_rows)],
        )
        mask = _level_mask(plan, active, level)
        psi, eta, chol, Y, y = jax.vmap(_condense)(S, K, D, e, r, mask)
        m, h = eta.shape
        # A preallocated pool and static bounds: an in-place update.
        pool_psi = pool_psi.at[level.first : level.first + m, :h, :h].set(psi)
        pool_eta = pool_eta.at[level.first : level.first + m, :h].set(eta)
        factors.append(_Factors(S, chol, mask, Y, y))
    return factors


def _back_substitute(plan: DcaPlan, factors: list[_Factors], lam, offset: bool):
    """Root → leaves: λ_X = Y λ_H − y per node (−y only when `offset`). `lam` is
    (R+1, p), the sink row last; the rows each node owns are added once."""
    for level, f in zip(reversed(plan.levels), reversed(factors), strict=True):
        lam_x = jnp.einsum("mxh,mhp->mxp", f.Y, lam[np.asarray(level.handle_rows)])
        if offset:
            lam_x = lam_x - f.y[:, :, None]
        lam = lam.at[np.asarray(level.cross_rows)].add(lam_x)
    return lam


def _check(plan: DcaPlan, active: ActiveRows | None, inertia_shape, rows_shape) -> None:
    problems = []
    if inertia_shape[0] != plan.n_bodies:
        problems.append(f"{inertia_shape[0]} inertias for a plan of {plan.n_bodies} bodies")
    if rows_shape[0] != plan.n_rows:
        problems.append(f"{rows_shape[0]} rows of G for a plan of {plan.n_rows} rows")
    if active is not None and tuple(map(len, active.active)) != tuple(map(len, plan.crossing)):
        problems.append("the active rows were decided for another plan")
    if problems:
        raise ValueError("DCA: " + "; ".join(problems) + ".")


def _independent(S: np.ndarray, own: np.ndarray, rtol: float) -> np.ndarray:
    """Greedy diagonally pivoted Cholesky of S scaled by the rows' own sizes."""
    keep = np.zeros(len(own), dtype=bool)
    remaining = own > 0  # a zero row is dependent on anything
    s = np.sqrt(np.where(remaining, own, 1.0))
    A = np.where(np.outer(remaining, remaining), S / np.outer(s, s), 0.0)
    while remaining.any():
        pivots = np.where(remaining, np.diag(A), -np.inf)
        j = int(np.argmax(pivots))
        if pivots[j] <= rtol:
            break
        keep[j], remaining[j] = True, False
        column = A[:, j] / np.sqrt(pivots[j])
        A = A - np.outer(column, column)
    return keep


class _HostLevel(NamedTuple):
    S: np.ndarray  # (m, x, x): −W, unmasked
    Sm: np.ndarray  # (m, x, x): masked (identity on inactive and padded rows)
    mask: np.ndarray  # (m, x)
    Y: np.ndarray  # (m, x, h): S⁻¹ K on the active rows
    y: np.ndarray  # (m, x): S⁻¹ r on the active rows


def _host_pass(plan: DcaPlan, inertia, G_a, G_b, bias=None, gamma=None, *, active=None, rtol=None):
    """The main pass in NumPy, on the host (no compilation; the solve's formulas,
    `_level_system`): `(leaf blocks G, per-level factors, per-node flags)`.

    Either `active` gives the rows each node keeps, or they are decided level by
    level with `rtol` (`decide_active_rows`); `bias` and `gamma` default to zero."""
    inertia, G_a, G_b = (np.asarray(x, dtype=float) for x in (inertia, G_a, G_b))
    n, R, w = plan.n_bodies, plan.n_rows, plan.width
    G = _leaf_blocks(np, plan, G_a, G_b)
    bias = np.zeros(inertia.shape[:2]) if bias is None else np.asarray(bias, dtype=float)
    gamma = np.zeros(R) if gamma is None else np.asarray(gamma, dtype=float)
    solved = np.linalg.solve(inertia, np.concatenate([np.swapaxes(G, 1, 2), bias[:, :, None]], 2))
    psi = -G @ solved[:, :, :-1]
    if rtol is not None:
        # Each row's own size G_r M⁻¹ G_rᵀ: minus the sum of its ends' leaf Ψ diagonals.
        own = np.zeros(R + 1)
        np.add.at(own, np.asarray(plan.leaf_rows), -np.diagonal(psi, axis1=1, axis2=2))
    pool_psi = np.zeros((plan.tree.n_nodes, w + 1, w + 1))
    pool_eta = np.zeros((plan.tree.n_nodes, w + 1))
    h0 = psi.shape[1]
    if w:
        pool_psi[:n, :h0, :h0] = psi
        pool_eta[:n, :h0] = np.einsum("nkd,nd->nk", G, solved[:, :, -1])
    gamma_x = np.append(gamma, 0.0)
    flags: list[tuple[bool, ...]] = [()] * plan.tree.n_nodes
    levels = []
    for level in plan.levels:
        left, right = np.asarray(level.left), np.asarray(level.right)
        S, K, D, e, r = _host_level_system(
            level, pool_psi[left], pool_eta[left], pool_psi[right], pool_eta[right],
            gamma_x[np.asarray(level.cross_rows)],
        )  # fmt: skip
        if rtol is None:
            mask = _level_mask(plan, active, level)
        else:
            mask = np.zeros(np.shape(level.cross_rows), dtype=bool)
            for j in range(len(level.left)):
                x = level.first + j
                c = len(plan.crossing[x])
                mask[j, :c] = _independent(S[j, :c, :c], own[list(plan.crossing[x])], rtol)
        for j in range(len(level.left)):
            flags[level.first + j] = tuple(
                bool(f) for f in mask[j, : len(plan.crossing[level.first + j])]
            )
        Sm, Km = _masked(np, S, K, mask)
        rhs = np.concatenate([Km, np.where(mask, r, 0.0)[:, :, None]], axis=2)
        solved = np.linalg.solve(Sm, rhs)
        Y, y = solved[:, :, :-1], solved[:, :, -1]
        psi = D + np.einsum("mxh,mxk->mhk", Km, Y)
        m, h = e.shape
        pool_psi[level.first : level.first + m, :h, :h] = 0.5 * (psi + np.swapaxes(psi, 1, 2))
        pool_eta[level.first : level.first + m, :h] = e - np.einsum("mxh,mx->mh", Km, y)
        levels.append(_HostLevel(S, Sm, mask, Y, y))
    return G, levels, flags


def decision_metric(inertia: Float[ArrayLike, "nb dof dof"]) -> np.ndarray:
    """The inertias in whose M⁻¹ metric the host-side decisions are taken
    (`decide_active_rows`, `self_stress_blocks`): the bodies' own, each eigenvalue
    raised to at least 1/`DECISION_SPREAD` of the largest of all bodies.

    What is decided is kinematic: which rows are dependent (the rank of G) and
    the self-stresses (Gᵀ N = 0) are the same in the metric of any positive
    definite inertia, but round-off is not. A body whose inertia is far from
    isotropic makes rows nearly parallel in its own metric: a pendulum bob of
    rotational inertia J pinned at a distance L weighs its pin's two rows by
    1/J in the direction across the rod, so they meet at an angle whose squared
    sine is about J/(m L²), and with J = 1e-10 m L² the decision (pivots at or
    below `DECISION_RTOL`) dropped one of them: the bob fell off its pin without a
    word. Within the spread the decisions are those of the bodies' own inertias
    (the rows' M⁻¹ metric, seed 002's); the dynamics always uses them."""
    inertia = np.asarray(inertia, dtype=float)
    if not inertia.size:
        return inertia
    eig, vec = np.linalg.eigh(inertia)
    floor = np.max(eig) / DECISION_SPREAD
    return np.einsum("nik,nk,njk->nij", vec, np.maximum(eig, floor), vec)


def decide_active_rows(
    plan: DcaPlan,
    inertia: Float[ArrayLike, "nb dof dof"],
    G_a: Float[ArrayLike, "nc dof"],
    G_b: Float[ArrayLike, "nc dof"],
    *,
    rtol: float = DECISION_RTOL,
) -> ActiveRows:
    """Decide once, on the host, which crossing rows each node keeps.

    Each node's S = −W (over the rows it owns, after its children's rows are
    eliminated) is factorised by a Cholesky with diagonal pivoting, scaled so that
    each row's own unconstrained size G_r M⁻¹ G_rᵀ is 1: a pivot is then the
    squared sine of the angle (in the M⁻¹ metric of `decision_metric`'s inertias)
    between the row and the span of the subassembly's rows and the crossing rows
    kept before it. A row is dropped
    when its pivot is at or below `rtol`. The scale is each row's own, not the
    node's largest pivot, because a node whose rows are all dependent has a W of
    pure round-off, which relative to itself would look full rank.

    The pass runs in NumPy with the solve's formulas (`_level_system`): a
    decision taken once should not cost a compilation per plan.

    **Arguments:**

    - `plan`: from `dca_plan`.
    - `inertia`, `G_a`, `G_b`: at the decision state (concrete arrays; W does not
      depend on the wrenches or γ).
    - `rtol`: the pivot threshold (default `DECISION_RTOL` = 1e-8).

    **Returns:** an `ActiveRows`; the number dropped is R − rank G.
    """
    _check(plan, None, np.shape(inertia), np.shape(G_a))
    _, _, flags = _host_pass(plan, decision_metric(inertia), G_a, G_b, rtol=rtol)
    nullity = tuple(sum(not f for f in fl) for fl in flags)
    dropped = tuple(
        sorted(
            r
            for x, fl in enumerate(flags)
            for r, f in zip(plan.crossing[x], fl, strict=True)
            if not f
        )
    )
    return ActiveRows(active=tuple(flags), nullity=nullity, dropped=dropped, rtol=float(rtol))


def host_solve(
    plan: DcaPlan,
    active: ActiveRows,
    inertia: Float[ArrayLike, "nb dof dof"],
    bias: Float[ArrayLike, "nb dof"],
    G_a: Float[ArrayLike, "nc dof"],
    G_b: Float[ArrayLike, "nc dof"],
    gamma: Float[ArrayLike, " nc"],
) -> tuple[np.ndarray, np.ndarray]:
    """`dca_solve` in NumPy on the host: `(accelerations, multipliers)`, for the
    host-side analyses (no compilation per plan; not differentiable).

    **Raises:** `ValueError` if the arrays or `active` do not match the plan."""
    _check(plan, active, np.shape(inertia), np.shape(G_a))
    G, levels, _ = _host_pass(plan, inertia, G_a, G_b, bias, gamma, active=active)
    lam = np.zeros(plan.n_rows + 1)
    for level, f in zip(reversed(plan.levels), reversed(levels), strict=True):
        lam_x = np.einsum("mxh,mh->mx", f.Y, lam[np.asarray(level.handle_rows)]) - f.y
        lam[np.asarray(level.cross_rows)] += lam_x
        lam[-1] = 0.0  # the sink row (padding adds zeros there)
    force = np.asarray(bias, dtype=float) - np.einsum(
        "nkd,nk->nd", G, lam[np.asarray(plan.leaf_rows)]
    )
    return np.linalg.solve(np.asarray(inertia, dtype=float), force[:, :, None])[:, :, 0], lam[:-1]


def dca_solve(
    plan: DcaPlan,
    active: ActiveRows,
    inertia: Float[Array, "nb dof dof"],
    bias: Float[Array, "nb dof"],
    G_a: Float[Array, "nc dof"],
    G_b: Float[Array, "nc dof"],
    gamma: Float[Array, " nc"],
) -> DcaSolution:
    """Accelerations and multipliers of [M Gᵀ; G 0][a; λ] = [b; γ] by the DCA.

    **Arguments:**

    - `plan`, `active`: from `dca_plan` and `decide_active_rows` (static).
    - `inertia`: per body, symmetric positive definite, shape `(nb, dof, dof)`.
    - `bias`: per body, the known wrench, shape `(nb, dof)`.
    - `G_a`, `G_b`: per row, its blocks on body_a and body_b, shape `(nc, dof)`
      (the block on the ground is ignored).
    - `gamma`: per row, the right-hand side, shape `(nc,)`; consistent with the
      dropped rows' dependence when rows are redundant.

    **Returns:** a `DcaSolution`: the unique accelerations, and one λ (zero on
    the dropped rows).

    **Raises:** `ValueError` if the arrays or `active` do not match the plan.

    Pure `jax.numpy`: `jit`, `vmap` and `grad` apply; gradients are those of the
    solve with the active rows fixed (meaningful while the rank does not change).

    !!! example

        ```python
        plan = dca_plan(assembly_tree(n, pairs), body_a, body_b, joint_of_row)
        active = decide_active_rows(plan, inertia, G_a, G_b)
        sol = jax.jit(dca_solve)(plan, active, inertia, bias, G_a, G_b, gamma)
        ```
    """
    _check(plan, active, inertia.shape, G_a.shape)
    leaves = _leaf_terms(plan, inertia, bias, G_a, G_b)
    factors = _main_pass(plan, active, leaves, gamma)
    lam = jnp.zeros((plan.n_rows + 1, 1), inertia.dtype)
    lam = _back_substitute(plan, factors, lam, offset=True)[:, 0]
    force = bias - jnp.einsum("nkd,nk->nd", leaves.G, lam[np.asarray(plan.leaf_rows)])
    a = jax.vmap(lambda c, v: cho_solve((c, True), v))(leaves.chol, force)
    return DcaSolution(accelerations=a, multipliers=lam[: plan.n_rows])


def _node_columns(plan: DcaPlan, active: ActiveRows) -> list[tuple[int, ...]]:
    """Per node, the columns of N seeded on the path root → node, root first (its
    own last); () for the leaves."""
    tree = plan.tree
    column = {r: j for j, r in enumerate(active.dropped)}
    columns: list[tuple[int, ...]] = [()] * tree.n_nodes
    for x in range(tree.n_nodes - 1, tree.first_internal - 1, -1):  # parents first
        parent = tree.parent[x]
        own = tuple(
            column[r]
            for r, keep in zip(plan.crossing[x], active.active[x], strict=True)
            if not keep
        )
        columns[x] = (columns[parent] if parent >= 0 else ()) + own
    return columns


def self_stress_columns(plan: DcaPlan, active: ActiveRows) -> np.ndarray:
    """Where `self_stress_blocks` keeps each self-stress (host side, static).

    A self-stress seeded at node X lives on the rows of X's subtree. Every node x
    holds the columns seeded at itself and at its ancestors, ordered root first:
    the ancestors' columns are then a prefix of x's, so a column has one *slot*, the
    same on every row it reaches. Row r (owned by node o) keeps its values in slots
    0…k_o − 1, k_o = the number of columns seeded on the path root → o.

    **Returns:** an `(nc, k)` integer table, entry `[r, s]` the column of N (the
    position of its dropped row in `active.dropped`) held in slot s of row r, or −1;
    k = max k_o (at least 1). A balanced tree with O(1) rows dropped per node has
    k = O(log n), so N takes O(n log n) numbers, not O(n p).
    """
    columns = _node_columns(plan, active)
    k = max(1, max(map(len, columns), default=0))
    table = np.full((plan.n_rows, k), -1, dtype=np.int64)
    for x in range(plan.tree.first_internal, plan.tree.n_nodes):
        if columns[x] and plan.crossing[x]:
            table[np.asarray(plan.crossing[x]), : len(columns[x])] = columns[x]
    return table


def self_stress_blocks(
    plan: DcaPlan,
    active: ActiveRows,
    inertia: Float[ArrayLike, "nb dof dof"],
    G_a: Float[ArrayLike, "nc dof"],
    G_b: Float[ArrayLike, "nc dof"],
) -> np.ndarray:
    """A basis N of the self-stresses (Gᵀ N = 0), one column per dropped row, kept
    sparse: slot s of row r holds N[r, j] for j = `self_stress_columns(plan,
    active)[r, s]` (every other entry of N is zero). Host side, in NumPy (an
    analysis: no compilation per plan).

    Column j belongs to d = `active.dropped[j]`, owned by node X: on X's rows it
    is z with z_d = 1, z_active = −W_aa⁻¹ W_ad (so W z = 0) and zero on X's other
    dropped rows; below X, the multipliers the homogeneous back-substitution
    (zero wrenches, zero γ) induces from z; zero outside X's subtree. Each column
    is 1 on its own dropped row and 0 on the others, so the columns are
    independent, and p = R − rank G.

    The back-substitution runs once, root → leaves, over the k slots (not the p
    columns): O(Σ_nodes x h k) work, linear in the number of bodies up to the
    slots' O(log n) for a balanced tree.

    **Arguments:** as `dca_solve` (concrete arrays).

    **Returns:** the slots, shape `(nc, k)`, `k` as `self_stress_columns`; not
    orthonormal.
    """
    _check(plan, active, np.shape(inertia), np.shape(G_a))
    columns = _node_columns(plan, active)
    k = max(1, max(map(len, columns), default=0))
    if not active.n_redundant:
        return np.zeros((plan.n_rows, k))
    _, levels, _ = _host_pass(plan, decision_metric(inertia), G_a, G_b, active=active)
    values = np.zeros((plan.n_rows + 1, k))  # the sink row R last, kept zero
    for level, f in zip(reversed(plan.levels), reversed(levels), strict=True):
        # A node reads its handles, owned by its ancestors (done: root first).
        lam_x = np.einsum("mxh,mhk->mxk", f.Y, values[np.asarray(level.handle_rows)])
        for j in range(len(level.left)):
            x = level.first + j
            first = len(columns[x]) - active.nullity[x]  # the slot of its first column
            dropped = [s for s, keep in enumerate(active.active[x]) if not keep]
            for i, slot in enumerate(dropped):
                # z = e_d − S_m⁻¹ (m ⊙ S e_d): zero on the other dropped and padded rows.
                z = -np.linalg.solve(f.Sm[j], np.where(f.mask[j], f.S[j, :, slot], 0.0))
                z[slot] += 1.0
                lam_x[j, :, first + i] += z
        values[np.asarray(level.cross_rows)] += lam_x
        values[-1] = 0.0
    return values[: plan.n_rows]


def self_stresses(
    plan: DcaPlan,
    active: ActiveRows,
    inertia: Float[ArrayLike, "nb dof dof"],
    G_a: Float[ArrayLike, "nc dof"],
    G_b: Float[ArrayLike, "nc dof"],
) -> np.ndarray:
    """The self-stresses of `self_stress_blocks` as a dense `(nc, p)` matrix N (for
    small problems and tests: O(nc p) memory). Host side, in NumPy.

    **Arguments:** as `dca_solve` (concrete arrays).

    **Returns:** N, shape `(nc, p)`, column j that of the dropped row
    `active.dropped[j]`; not orthonormal.
    """
    values = self_stress_blocks(plan, active, inertia, G_a, G_b)
    table = self_stress_columns(plan, active)
    p = active.n_redundant
    dense = np.zeros((plan.n_rows, p + 1))
    rows = np.broadcast_to(np.arange(plan.n_rows)[:, None], table.shape)
    np.add.at(dense, (rows, np.where(table >= 0, table, p)), values)
    return dense[:, :p]
