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

The seed says the propagation covers "a particular class of systems"; what it
leaves undecided is decided exactly by the self-stresses the DCA builds
(`self_stresses`: one per dropped row, propagated down its assembly): a pair's
reaction is unique iff B_X = G_Xᵀ N_X = 0 (Wojtyra & Frączek 2013's test, on the
twist-space rows), a component iff its row of N is zero. The report names the
step that decided each pair.

These are the verdicts *at the configuration* analysed (what `analyze` reports). A
run claims less: only what is also unique at the generic configuration next to it
(the mobile robot's B and C x forces are unique while its wheels point straight
ahead, not in a turn). The report carries that too, `stable_unique` /
`stable_row_unique`: its own verdicts and the absolute model's
[`redundax.Structure`][]'s `stable_unique` / `stable_row_unique` at the same
configuration (`rx.decide`: the decision an absolute run reports), so a run in
joint coordinates claims what the same run in absolute coordinates claims.
"""

import dataclasses

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from .._model import State
from .._structure import UNIQUENESS_RTOL, decide
from ._dca import assembly_nodes, self_stresses
from ._dynamics import JointStructure
from ._model import JointModel
from ._terms import jitted_body_terms

_self_stresses = eqx.filter_jit(self_stresses)

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
    - `b_norm`: per pair, ‖B_X‖_F = ‖G_Xᵀ N_X‖_F over the orthonormalised
      self-stresses N (zero, up to round-off, iff the reaction is unique, for a
      pair whose rows are independent); `g_norm`: ‖G_X‖_F, its scale;
      `row_b_norm`: per row of the pair, the norm of its row of N (zero iff that
      component is unique); `utol`: the relative tolerance of the test.
    - `stable_unique`, `stable_row_unique`: what a run claims, per pair and per
      row of the pair: unique here (`unique`, `row_unique`) *and* in the absolute
      model's `Structure` decided at the same configuration, whose
      `stable_unique` / `stable_row_unique` also ask the generic configuration
      next to it (the verdicts an absolute run reports); `stable_step`: per pair,
      `step`, or `"nearby"` where the pair is unique here but not stable.
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


def joint_uniqueness(
    jm: JointModel, structure: JointStructure, state: State, utol: float = UNIQUENESS_RTOL
) -> JointUniquenessReport:
    """The reaction-uniqueness analysis of seed 002 at the joint-coordinate `state`
    (host side: its results are discrete decisions).

    **Arguments:**

    - `jm`, `structure`: the model and its decisions
      ([`redundax.joint_coordinates.decide_joint`][]).
    - `state`: the joint-coordinate state whose configuration is analysed.
    - `utol`: the self-stress test's tolerance (as the absolute-coordinate test's).

    **Returns:** a [`JointUniquenessReport`][redundax.joint_coordinates.JointUniquenessReport]; its
    `stable_unique` / `stable_row_unique` (what a run claims) also read `rx.decide` of the absolute
    model at the same configuration (with `utol`).
    """
    model, plan, active, rows = jm.model, structure.plan, structure.active, structure.rows
    terms = jitted_body_terms(jm, rows, state.q, state.qd, state.t)
    G_a, G_b = np.asarray(terms.G_a), np.asarray(terms.G_b)
    n_pairs = len(model.pairs)
    # Rows of each pair in the plan's row order, and the node owning them.
    row_index = {r: k for k, r in enumerate(rows.rows)}
    pair_rows = [[row_index[r] for r in p.rows if r in row_index] for p in model.pairs]
    nodes = assembly_nodes(plan, active)
    owner = {}
    dropped = set(active.dropped)
    for node in nodes:
        for r in node.crossing:
            owner[r] = node
    verdict: list[bool | None] = [None] * n_pairs
    step = [""] * n_pairs
    for k, prs in enumerate(pair_rows):
        if not prs:  # a pair without carried rows cannot occur, but be explicit
            verdict[k], step[k] = True, "assembly"
    pair_of = rows.pair_of_row  # row (in the plan's order) → pair

    def independent(k):
        g = np.concatenate([G_a[pair_rows[k]], G_b[pair_rows[k]]], axis=1)
        s = np.linalg.svd(g, compute_uv=False)
        return s.size and s[-1] > 1e-8 * s[0]

    def propagate():
        changed = False
        for node in reversed(nodes):  # root first
            handles_unique = all(verdict[pair_of[h]] is True for h in node.handles)
            for r in node.crossing:
                k = pair_of[r]
                if verdict[k] is not None:
                    continue
                if r in dropped and independent(k):
                    verdict[k], step[k], changed = False, "dropped", True
                elif node.nullity == 0 and handles_unique:
                    verdict[k], step[k], changed = True, "assembly", True
        return changed

    propagate()
    nb = model.bodies.count
    body_pairs = [
        sorted({pair_of[r] for r in range(len(rows.rows)) if b in (rows.body_a[r], rows.body_b[r])})
        for b in range(nb)
    ]
    for b in range(nb):
        if len(body_pairs[b]) == 1 and verdict[body_pairs[b][0]] is None:
            verdict[body_pairs[b][0]], step[body_pairs[b][0]] = True, "one pair"
    propagate()
    changed = True
    while changed:
        changed = False
        for b in range(nb):
            if len(body_pairs[b]) != 2:
                continue
            k1, k2 = body_pairs[b]
            for known, other in ((k1, k2), (k2, k1)):
                if verdict[known] is not None and verdict[other] is None:
                    if verdict[known] or independent(other):
                        verdict[other], step[other], changed = verdict[known], "two pairs", True
        changed = propagate() or changed
    # The self-stresses: the exact test, for what is undecided and for components.
    N = np.asarray(_self_stresses(plan, active, terms.inertia, terms.G_a, terms.G_b))
    if N.shape[1]:
        N, _ = np.linalg.qr(N)
    row_norm = np.linalg.norm(N, axis=1) if N.shape[1] else np.zeros(len(rows.rows))
    row_zero = row_norm <= utol
    b_norm, g_norm = [], []
    for prs in pair_rows:
        B = np.concatenate(
            [np.einsum("rd,rp->dp", G_a[prs], N[prs]), np.einsum("rd,rp->dp", G_b[prs], N[prs])]
        )
        b_norm.append(float(np.linalg.norm(B)))
        g_norm.append(float(np.linalg.norm(np.concatenate([G_a[prs], G_b[prs]], axis=1))))
    for k in range(n_pairs):
        if verdict[k] is None:
            verdict[k] = bool(b_norm[k] <= utol * g_norm[k])
            step[k] = "self-stress"
    # rank G = R − p, and the bodies' twists less rank G is the mobility.
    mobility = nb * G_a.shape[1] - (len(rows.rows) - active.n_redundant)
    unique = tuple(bool(v) for v in verdict)
    row_unique = tuple(
        tuple(bool(verdict[k] or row_zero[r]) for r in prs) for k, prs in enumerate(pair_rows)
    )
    # What a run claims: the absolute path's decision at the same configuration,
    # which also asks the generic configuration next to it (no test of our own).
    absolute = decide(model, jm.absolute_coordinates(jnp.asarray(state.q)), state.t, utol=utol)
    stable = np.asarray(absolute.stable_unique)[:n_pairs]
    stable_rows = np.asarray(absolute.stable_row_unique)
    return JointUniquenessReport(
        names=tuple(p.name for p in model.pairs),
        kinds=tuple(p.kind for p in model.pairs),
        tree=tuple(k in set(jm.tree_pairs) for k in range(n_pairs)),
        unique=unique,
        step=tuple(step),
        assembly=tuple(owner[prs[0]].node if prs else -1 for prs in pair_rows),
        row_unique=row_unique,
        labels=tuple(p.components for p in model.pairs),
        redundancy=active.n_redundant,
        mobility=int(mobility),
        b_norm=tuple(b_norm),
        g_norm=tuple(g_norm),
        row_b_norm=tuple(tuple(float(row_norm[r]) for r in prs) for prs in pair_rows),
        utol=float(utol),
        stable_unique=tuple(bool(u and s) for u, s in zip(unique, stable, strict=True)),
        stable_row_unique=tuple(
            tuple(bool(u and stable_rows[r]) for u, r in zip(flags, pair.rows, strict=True))
            for flags, pair in zip(row_unique, model.pairs, strict=True)
        ),
    )
