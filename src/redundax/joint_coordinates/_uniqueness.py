"""Which reactions are unique, decided inside the divide-and-conquer algorithm
(Pękal, Wojtyra, Malczyk & Frączek, seed 002 §2).

After the main pass the mechanism is one articulated body (with `ground="root"`,
the seed's assembly, joined to the ground last; with the default split ground,
each body's joints to the ground were eliminated at its first assembly). The
seed's propagation then decides pair by pair:

1. **Assemblies, root → leaves.** The rows an assembly owns (its *crossing* rows)
   are unique when the assembly keeps all of them (its W is regular) and the
   reactions at its handles (rows to the rest of the mechanism, decided at its
   ancestors) are unique: λ_X = W⁻¹(r − K λ_H). A row the assembly drops (it
   depends on the others there) seeds a self-stress, so its pair is not unique.
2. **Bodies with one pair**: that pair's reaction balances the body's inertia and
   applied forces alone, so it is unique; propagate again (step 1).
3. **Bodies with two pairs**, one decided: the other's wrench on the body is the
   body's balance minus the first's, so it has the same verdict; propagate.
4. Repeat 3 until nothing changes.

The propagation is event driven (a pair decided wakes the assemblies that have its
rows as handles and the two-pair bodies it acts on), in the seed's order: each
step-1 pass root first, each step-3 pass body by body, so a pair is named with the
step that would decide it in sweeps, at a cost linear in the bodies and rows.

The seed says the propagation covers "a particular class of systems"; what it
leaves undecided is decided exactly by the self-stresses the DCA builds
(`self_stress_blocks`: one per dropped row, propagated down its assembly and kept
on the rows of that assembly's subtree only): a pair's reaction is unique iff
B_X = G_Xᵀ N_X = 0 (Wojtyra & Frączek 2013's test, on the twist-space rows), a
component iff its row of N is zero. The report names the step that decided each
pair.

These are the verdicts *at the configuration* analysed (what `analyze` reports). A
run claims less: only what is also unique at the generic configuration next to it
(the mobile robot's B and C x forces are unique while its wheels point straight
ahead, not in a turn). The report carries that too, `stable_unique` /
`stable_row_unique`, decided by the DCA itself as [`redundax.decide`][] decides
its `Structure`'s: a small step (`NEARBY_STEP` relative to max(1, max |q|)) along
a fixed pseudo-random direction of the mechanism's admissible motion with the
drivers and the Pfaffian rows free (the direction projected by the DCA onto the
non-driving holonomic rows, least kinetic metric), the loops closed again by at
most `NEARBY_ITERATIONS` Newton steps of the DCA's projection (fewer once max |Φ|
is below `NEARBY_CLOSED`), the rows each assembly keeps decided there, and the
self-stress test there. The configurations differ from `decide`'s (another
direction, in other coordinates), but both are generic: the stable verdicts are
the same (the ten mechanisms of `tests/test_joint_coordinates.py`, per pair and
component).

No absolute-coordinate model is decided (issue 39: no second model; the tests
refuse every absolute decision while the verdicts are taken). Everything runs on
the host in NumPy but for the body terms and the joint increment (two small
compiled programs per model), and every part is linear in the number of bodies
(the self-stresses O(n log n) numbers for a balanced tree): IFToMM A02's spatial
chain, 2049 bodies and p = 3072, takes 1.4 s, a log–log slope of 0.89 from 129 to
2049 bodies (`experiments/bench_joint_verdicts.py`).
"""

import dataclasses
import heapq

import equinox as eqx
import numpy as np

from .._model import State
from .._qr import DECISION_RTOL
from .._structure import (
    NEARBY_ITERATIONS,
    NEARBY_STEP,
    UNIQUENESS_RTOL,
    _is_driver,
    _regular_direction,
)
from ._dca import (
    ActiveRows,
    decide_active_rows,
    decision_metric,
    host_solve,
    self_stress_blocks,
    self_stress_columns,
)
from ._dynamics import JointStructure
from ._model import TREE_TOLERANCE, JointModel
from ._simulate import joint_increment
from ._terms import BodyTerms, jitted_body_terms

# The analysis runs on the host (NumPy: no compilation per plan) but for the body
# terms (the program `decide_joint` compiled) and this small one.
_joint_increment = eqx.filter_jit(joint_increment)

NEARBY_CLOSED = 1e-12
"""max |Φ| of the rows kept, relative to max(1, max |x|) of the bodies' absolute
coordinates, at which the Newton steps to the generic configuration next to the one
analysed stop before `NEARBY_ITERATIONS` (from a step of `NEARBY_STEP` Newton
reaches it in one or two; each costs a pass of the DCA)."""

STEPS = {
    "assembly": "1: assembly regular, handles unique",
    "dropped": "1: a row dropped at its assembly (a self-stress)",
    "one pair": "2: its body has no other pair",
    "two pairs": "3: the other pair of a two-pair body",
    "self-stress": "self-stress test (the propagation cannot decide)",
    "nearby": "unique here, not at the generic configuration next to it",
}
"""What decided each pair's verdict. `"nearby"` only in `stable_step`: a pair unique
at the configuration analysed (by another step) but not at the generic
configuration next to it, so not claimed for a run."""


@dataclasses.dataclass(frozen=True)
class JointUniquenessReport:
    """Per pair of a joint-coordinate model: is its reaction unique, and which step
    of the propagation (or the self-stress test) decided it.

    - `names`, `kinds`: the pairs; `tree`: whether each is a tree joint.
    - `unique`: per pair; `step`: per pair, a key of `STEPS`; `assembly`: the node of
      the assembly tree owning the pair's rows.
    - `row_unique`: per row of the pair (its reaction components), in pair order.
    - `labels`: the components' names.
    - `redundancy`: p; `mobility`: joint coordinates − rank of the rows the tree
      does not hold.
    - `b_norm`: per pair, ‖B_X‖_F = ‖G_Xᵀ N_X‖_F over the DCA's self-stresses N
      scaled to unit columns (not orthogonalised: orthogonalising couples the
      assemblies and costs O(n p²); each column is 1 on its own dropped row and 0
      on the others, so the basis is well conditioned and the test is the QR
      test's up to that conditioning); zero, up to round-off, iff the reaction is
      unique, for a pair whose rows are independent; `g_norm`: ‖G_X‖_F, its
      scale; `row_b_norm`: per row of the pair, the norm of its row of N (zero iff
      that component is unique); `utol`: the relative tolerance of the test.
    - `stable_unique`, `stable_row_unique`: what a run claims, per pair and per
      row of the pair: unique here (`unique`, `row_unique`) *and* at the generic
      configuration next to it (the module docstring: the same notion as
      [`redundax.Structure`][]'s `stable_unique` / `stable_row_unique`, decided by
      the DCA); `stable_step`: per pair, `step`, or `"nearby"` where the pair is
      unique here but not stable.
    - `nearby_residual`: max |Φ| of the non-driving holonomic rows at that
      generic configuration (the loops closed there).
    """

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    tree: tuple[bool, ...]
    unique: tuple[bool, ...]
    step: tuple[str, ...]
    assembly: tuple[int, ...]
    row_unique: tuple[tuple[bool, ...], ...]
    labels: tuple[tuple[str, ...], ...]
    redundancy: int
    mobility: int
    b_norm: tuple[float, ...]
    g_norm: tuple[float, ...]
    row_b_norm: tuple[tuple[float, ...], ...]
    utol: float
    stable_unique: tuple[bool, ...]
    stable_row_unique: tuple[tuple[bool, ...], ...]
    nearby_residual: float = 0.0

    @property
    def stable_step(self) -> tuple[str, ...]:
        """Per pair, the key of `STEPS` that decided its `stable_unique`."""
        return tuple(
            "nearby" if u and not su else s
            for u, su, s in zip(self.unique, self.stable_unique, self.step, strict=True)
        )

    def verdict(self, name: str) -> bool:
        return self.unique[self.names.index(name)]

    def decided_by(self, name: str) -> str:
        return self.step[self.names.index(name)]

    def to_dict(self) -> dict:
        return {
            "coordinates": "joint",
            "redundancy": self.redundancy,
            "dof": self.mobility,
            "pairs": [
                {
                    "name": n,
                    "kind": k,
                    "tree_joint": tr,
                    "unique": u,
                    "decided_by": STEPS[s],
                    "assembly": a,
                    "components": [
                        {"component": lab, "unique": ru}
                        for lab, ru in zip(labels, rows, strict=True)
                    ],
                }
                for n, k, tr, u, s, a, rows, labels in zip(
                    self.names,
                    self.kinds,
                    self.tree,
                    self.unique,
                    self.step,
                    self.assembly,
                    self.row_unique,
                    self.labels,
                    strict=True,
                )  # fmt: skip
            ],
        }

    def __str__(self) -> str:
        lines = [
            f"joint coordinates: p = {self.redundancy}, mobility = {self.mobility}",
            f"{'pair':<12}{'kind':<22}{'':<6}{'reaction':<12}{'components':<12}decided by",
        ]
        for n, k, tr, u, s, rows in zip(
            self.names, self.kinds, self.tree, self.unique, self.step, self.row_unique,
            strict=True,
        ):  # fmt: skip
            comps = "".join("u" if r else "-" for r in rows)
            lines.append(
                f"{n:<12}{k:<22}{'tree' if tr else 'cut':<6}"
                f"{'unique' if u else 'NOT unique':<12}{comps:<12}{STEPS[s]}"
            )
        return "\n".join(lines)


class _SelfStressTest:
    """The self-stress test of every pair and row at one configuration, from the
    DCA's sparse self-stresses (host side, vectorised over rows: O(nc k))."""

    def __init__(self, values, table, G_a, G_b, pair_of_row, n_pairs):
        p = int(table.max(initial=-1)) + 1
        column = np.where(table >= 0, table, p)
        values = np.asarray(values)
        norm2 = np.bincount(column.ravel(), weights=(values**2).ravel(), minlength=p + 1)
        # Every column is 1 on its own dropped row: its norm is at least 1.
        scale = np.append(1.0 / np.sqrt(np.maximum(norm2[:p], 1.0)), 0.0)
        unit = values * scale[column]
        self.row_norm = np.linalg.norm(unit, axis=1)
        # A pair's rows share their bodies, so their owner, so their slots.
        order = np.argsort(pair_of_row, kind="stable")
        pairs = np.asarray(pair_of_row)[order]
        starts = np.flatnonzero(np.r_[True, pairs[1:] != pairs[:-1]])

        def per_pair(x):  # (rows, ...) summed over each pair's rows
            out = np.zeros((n_pairs, *x.shape[1:]))
            if len(order):
                out[pairs[starts]] = np.add.reduceat(x[order], starts, axis=0)
            return out

        B_a = per_pair(G_a[:, :, None] * unit[:, None, :])
        B_b = per_pair(G_b[:, :, None] * unit[:, None, :])
        self.b_norm = np.sqrt(np.sum(B_a**2, axis=(1, 2)) + np.sum(B_b**2, axis=(1, 2)))
        self.g_norm = np.sqrt(per_pair(np.sum(G_a**2, axis=1) + np.sum(G_b**2, axis=1)))


def _self_stress_test(plan, active, terms: BodyTerms, rows, n_pairs) -> _SelfStressTest:
    G_a, G_b = np.asarray(terms.G_a), np.asarray(terms.G_b)
    values = self_stress_blocks(plan, active, np.asarray(terms.inertia), G_a, G_b)
    return _SelfStressTest(
        values, self_stress_columns(plan, active), G_a, G_b, rows.pair_of_row, n_pairs
    )


def _nearby(jm: JointModel, moving: JointStructure, keep, q, t):
    """The generic configuration next to q and the terms there: a step of
    `NEARBY_STEP` · max(1, max|q|) along a fixed pseudo-random direction projected
    onto the admissible motion of the rows `keep` (least kinetic metric of
    `decision_metric`'s inertias: the DCA with `moving`, whose assemblies keep only
    rows of `keep`), then
    at most `NEARBY_ITERATIONS` Newton steps of the DCA's projection onto Φ = 0 of
    those rows (as `project_joint_state`, on the host), fewer once max |Φ| is below
    `NEARBY_CLOSED`."""
    plan, active, rows = moving.plan, moving.active, moving.rows
    q = np.asarray(q, dtype=float)
    direction = _regular_direction(q.shape[0])
    rest = np.zeros_like(q)

    def correction(q, terms, target):
        """The joint increment of least kinetic metric with G δ = target, in the
        decisions' metric (`decision_metric`: a step is kinematic, and a body's own
        inertia, a rod's axial moment of 1e-13 of the others, made the DCA's
        systems singular in NumPy)."""
        twists, _ = host_solve(
            plan, active, decision_metric(terms.inertia), np.zeros(np.shape(terms.bias)),
            terms.G_a, terms.G_b, np.where(keep, target, 0.0),
        )  # fmt: skip
        return np.asarray(_joint_increment(jm, q, terms.x, terms.E, twists))

    terms = jitted_body_terms(jm, rows, q, rest, t)
    moved = jitted_body_terms(jm, rows, q, direction, t)
    rates = np.asarray(moved.velocity_error) - np.asarray(terms.velocity_error)  # G J w
    v = direction - correction(q, terms, rates)  # G J v = 0 on the rows kept
    norm = np.linalg.norm(v)
    # Mobility 0 (nothing moves): v is round-off, and q is its own neighbour.
    if norm > DECISION_RTOL * np.linalg.norm(direction):
        q = q + NEARBY_STEP * max(1.0, float(np.max(np.abs(q), initial=0.0))) / norm * v
    for _ in range(NEARBY_ITERATIONS):
        terms = jitted_body_terms(jm, rows, q, rest, t)
        phi = np.where(keep, np.asarray(terms.phi), 0.0)
        size = max(1.0, float(np.max(np.abs(np.asarray(terms.x)), initial=0.0)))
        if np.max(np.abs(phi), initial=0.0) <= NEARBY_CLOSED * size:
            return q, terms  # closed: Newton's next steps would change nothing
        q = q - correction(q, terms, phi)
    return q, jitted_body_terms(jm, rows, q, rest, t)


class _Propagation:
    """Seed 002's steps 1–4, event driven (module docstring)."""

    def __init__(self, plan, active, rows, pair_rows, n_pairs, nb, independent):
        self.plan, self.active, self.rows = plan, active, rows
        self.pair_rows, self.independent = pair_rows, independent
        self.verdict: list[bool | None] = [None] * n_pairs
        self.step = [""] * n_pairs
        tree = plan.tree
        self.internal = range(tree.first_internal, tree.n_nodes)
        self.dropped = set(active.dropped)
        # Per row, the assemblies that have it as a handle; per assembly, how many
        # of its handles' pairs are not (yet) unique.
        self.handle_of: list[list[int]] = [[] for _ in range(len(rows.rows))]
        self.missing = [0] * tree.n_nodes
        for x in self.internal:
            for h in plan.handles[x]:
                self.handle_of[h].append(x)
            self.missing[x] = len(plan.handles[x])
        body_pairs: list[set[int]] = [set() for _ in range(nb)]
        for a, b, k in zip(rows.body_a, rows.body_b, rows.pair_of_row, strict=True):
            for body in (a, b):
                if body >= 0:
                    body_pairs[body].add(k)
        self.body_pairs = [sorted(s) for s in body_pairs]
        self.bodies_of = [[] for _ in range(n_pairs)]
        for b, ks in enumerate(self.body_pairs):
            for k in ks:
                self.bodies_of[k].append(b)
        self.nodes: list[int] = []  # heap of −node: root first
        self.queued = set()
        self.bodies_now: list[int] = []  # heap: the current step-3 pass, body order
        self.bodies_next: set[int] = set()
        self.body_at = -1  # the body the step-3 pass is at

    def decide(self, k, value, step):
        self.verdict[k], self.step[k] = value, step
        if value:
            for r in self.pair_rows[k]:
                for x in self.handle_of[r]:
                    self.missing[x] -= 1
                    if self.missing[x] == 0:
                        self._wake(x)
        for b in self.bodies_of[k]:
            if len(self.body_pairs[b]) == 2:
                if b > self.body_at:
                    heapq.heappush(self.bodies_now, b)
                else:
                    self.bodies_next.add(b)

    def _wake(self, x):
        if x not in self.queued:
            self.queued.add(x)
            heapq.heappush(self.nodes, -x)

    def assemblies(self, every=False) -> bool:
        """A step-1 pass, root first (a decision wakes only assemblies below)."""
        if every:
            for x in self.internal:
                self._wake(x)
        changed = False
        pair_of = self.rows.pair_of_row
        while self.nodes:
            x = -heapq.heappop(self.nodes)
            self.queued.discard(x)
            handles_unique = self.missing[x] == 0
            for r in self.plan.crossing[x]:
                k = pair_of[r]
                if self.verdict[k] is not None:
                    continue
                if r in self.dropped and self.independent(k):
                    self.decide(k, False, "dropped")
                    changed = True
                elif self.active.nullity[x] == 0 and handles_unique:
                    self.decide(k, True, "assembly")
                    changed = True
        return changed

    def one_pair(self):
        for ks in self.body_pairs:
            if len(ks) == 1 and self.verdict[ks[0]] is None:
                self.decide(ks[0], True, "one pair")

    def two_pairs(self, every=False) -> bool:
        """A step-3 pass in body order (a decision wakes later bodies in this pass,
        earlier ones in the next)."""
        if every:
            self.bodies_next |= {b for b, ks in enumerate(self.body_pairs) if len(ks) == 2}
        self.bodies_now = sorted(self.bodies_next)
        self.bodies_next = set()
        changed, self.body_at = False, -1
        while self.bodies_now:
            b = heapq.heappop(self.bodies_now)
            if b == self.body_at:
                continue
            self.body_at = b
            k1, k2 = self.body_pairs[b]
            for known, other in ((k1, k2), (k2, k1)):
                if self.verdict[known] is not None and self.verdict[other] is None:
                    if self.verdict[known] or self.independent(other):
                        self.decide(other, self.verdict[known], "two pairs")
                        changed = True
        self.body_at = len(self.body_pairs)  # between passes: every body waits
        return changed

    def run(self):
        self.body_at = len(self.body_pairs)
        self.assemblies(every=True)
        self.one_pair()
        self.assemblies()
        changed, every = True, True
        while changed:
            changed = self.two_pairs(every)
            changed = self.assemblies() or changed
            every = False


def _keep_rows(jm: JointModel, rows) -> np.ndarray:
    """Per carried row, whether it is a non-driving holonomic row (the rows the
    generic configuration next to q satisfies: drivers and Pfaffian rows free)."""
    model = jm.model
    pairs = model.pairs
    return np.array(
        [
            r < model.n_holonomic and not _is_driver(pairs[k].kind)
            for r, k in zip(rows.rows, rows.pair_of_row, strict=True)
        ],
        dtype=bool,
    )


def joint_uniqueness(
    jm: JointModel, structure: JointStructure, state: State, utol: float = UNIQUENESS_RTOL
) -> JointUniquenessReport:
    """The reaction-uniqueness analysis of seed 002 at the joint-coordinate `state`
    (host side: its results are discrete decisions), and what a run claims.

    **Arguments:**

    - `jm`, `structure`: the model and its decisions
      ([`redundax.joint_coordinates.decide_joint`][]).
    - `state`: the joint-coordinate state whose configuration is analysed.
    - `utol`: the self-stress test's tolerance (as the absolute-coordinate test's).

    **Returns:** a [`JointUniquenessReport`][redundax.joint_coordinates.JointUniquenessReport];
    its `stable_unique` / `stable_row_unique` (what a run claims) are decided by the
    DCA at the generic configuration next to `state` (module docstring), as
    [`redundax.decide`][] decides them in absolute coordinates; no absolute model is
    decided. The cost is linear in the number of bodies (the self-stresses O(n log
    n) numbers for a balanced assembly tree).

    **Raises:** `ValueError` when the loops cannot be closed again at the
    configuration next to `state` (max |Φ| above `TREE_TOLERANCE` after the
    projection: a configuration at the edge of the workspace).
    """
    model, plan, active, rows = jm.model, structure.plan, structure.active, structure.rows
    q = state.q
    terms = jitted_body_terms(jm, rows, q, state.qd, state.t)
    G_a, G_b = np.asarray(terms.G_a), np.asarray(terms.G_b)
    n_pairs, nb = len(model.pairs), model.bodies.count
    # Each pair's carried rows (indices into the plan's rows) in the pair's order.
    index = {r: i for i, r in enumerate(rows.rows)}
    pair_rows = [[index[r] for r in p.rows if r in index] for p in model.pairs]
    owner = [-1] * len(rows.rows)
    for x in range(plan.tree.first_internal, plan.tree.n_nodes):
        for r in plan.crossing[x]:
            owner[r] = x
    known_independent: dict[int, bool] = {}

    def independent(k):
        if k not in known_independent:
            g = np.concatenate([G_a[pair_rows[k]], G_b[pair_rows[k]]], axis=1)
            s = np.linalg.svd(g, compute_uv=False)
            known_independent[k] = bool(s.size and s[-1] > 1e-8 * s[0])
        return known_independent[k]

    propagation = _Propagation(plan, active, rows, pair_rows, n_pairs, nb, independent)
    for k, prs in enumerate(pair_rows):
        if not prs:  # a pair without carried rows cannot occur, but be explicit
            propagation.verdict[k], propagation.step[k] = True, "assembly"
    propagation.run()
    verdict, step = propagation.verdict, propagation.step
    # The self-stresses: the exact test, for what is undecided and for components.
    here = _self_stress_test(plan, active, terms, rows, n_pairs)
    for k in range(n_pairs):
        if verdict[k] is None:
            verdict[k] = bool(here.b_norm[k] <= utol * here.g_norm[k])
            step[k] = "self-stress"
    # rank G = R − p, and the bodies' twists less rank G is the mobility.
    mobility = nb * G_a.shape[1] - (len(rows.rows) - active.n_redundant)
    unique = tuple(bool(v) for v in verdict)
    row_unique = tuple(
        tuple(bool(verdict[k] or here.row_norm[r] <= utol) for r in prs)
        for k, prs in enumerate(pair_rows)
    )
    nearby, residual = _nearby_verdicts(jm, structure, terms, q, state.t, utol, pair_rows)
    stable, stable_rows = nearby
    tree = set(jm.tree_pairs)
    return JointUniquenessReport(
        names=tuple(p.name for p in model.pairs),
        kinds=tuple(p.kind for p in model.pairs),
        tree=tuple(k in tree for k in range(n_pairs)),
        unique=unique,
        step=tuple(step),
        assembly=tuple(owner[prs[0]] if prs else -1 for prs in pair_rows),
        row_unique=row_unique,
        labels=tuple(p.components for p in model.pairs),
        redundancy=active.n_redundant,
        mobility=int(mobility),
        b_norm=tuple(float(b) for b in here.b_norm),
        g_norm=tuple(float(g) for g in here.g_norm),
        row_b_norm=tuple(tuple(float(here.row_norm[r]) for r in prs) for prs in pair_rows),
        utol=float(utol),
        stable_unique=tuple(bool(u and s) for u, s in zip(unique, stable, strict=True)),
        stable_row_unique=tuple(
            tuple(bool(u and s) for u, s in zip(flags, near, strict=True))
            for flags, near in zip(row_unique, stable_rows, strict=True)
        ),
        nearby_residual=residual,
    )


def _nearby_verdicts(jm, structure, terms, q, t, utol, pair_rows):
    """`((unique per pair, unique per row of each pair), max |Φ|)` at the generic
    configuration next to q (module docstring), by the self-stress test there."""
    plan, active, rows = structure.plan, structure.active, structure.rows
    keep = _keep_rows(jm, rows)
    moving = structure
    if not keep.all():  # drivers and Pfaffian rows free: assemblies keep only the rest
        mask = keep[:, None]
        G_a, G_b = np.asarray(terms.G_a) * mask, np.asarray(terms.G_b) * mask
        moving = JointStructure(rows, plan, _decided(plan, terms, G_a, G_b, active.rtol))
    _, terms1 = _nearby(jm, moving, keep, q, t)
    residual = float(np.max(np.abs(np.asarray(terms1.phi)[keep]), initial=0.0))
    if not residual <= TREE_TOLERANCE:
        raise ValueError(
            f"joint_uniqueness: the loops do not close at the configuration next to the one "
            f"analysed (max |Φ| = {residual:.3g} after {NEARBY_ITERATIONS} Newton steps, "
            f"above {TREE_TOLERANCE:g}), so what a run claims cannot be decided there; analyse "
            "a regular configuration inside the workspace"
        )
    active1 = _decided(plan, terms1, np.asarray(terms1.G_a), np.asarray(terms1.G_b), active.rtol)
    there = _self_stress_test(plan, active1, terms1, rows, len(pair_rows))
    unique = there.b_norm <= utol * there.g_norm
    row_unique = tuple(
        tuple(bool(unique[k] or there.row_norm[r] <= utol) for r in prs)
        for k, prs in enumerate(pair_rows)
    )
    return (tuple(bool(u) for u in unique), row_unique), residual


def _decided(plan, terms, G_a, G_b, rtol) -> ActiveRows:
    return decide_active_rows(plan, np.asarray(terms.inertia), G_a, G_b, rtol=rtol)
