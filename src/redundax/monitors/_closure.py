"""Where the redundancy of a closed chain comes from, and the smallest change of its
closures that removes it: [`closure_report`][redundax.monitors.closure_report].

A model read from MJCF or URDF is a tree of joints (MuJoCo's body tree) whose loops
are closed by equalities (`connect`: a ball joint, 3 rows; `weld`: 6 rows). A tree
is never redundant, so every self-stress of C passes through the closures. Of the
degree of redundancy p = rows − rank, the report separates

- the redundancy of the **closure's form**: rows of one closure (all the closures
  between the same two bodies, taken together as one joint) that are dependent among
  themselves whatever the rest of the mechanism: two `connect`s on one axis make a
  hinge and one row more than a hinge needs (1); one `connect` or one `weld` have
  none;
- the redundancy of the **mechanism**: the rest, p minus the above, which the loops'
  geometry makes (the parallel axes of a planar linkage built of 3-D joints, the
  special geometry of Bricard's linkage).

It also says what each closure does to the motion (a `weld` where a `connect` would
leave the mechanism its motion locks degrees of freedom), and proposes the minimal
closure: the p closure rows to drop so that the rank — the motion — is kept and
every reaction becomes unique (p = 0), by the pivoted QR of the self-stresses
restricted to the closures' rows (as [`redundax.methods.eliminate`][] chooses rows), and
which change of one joint or equality type that MuJoCo can express would do the same
(a `weld` → `connect` at its anchor, a hinge → a ball joint at its point), or that
none would without changing the motion.

Host-side and discrete (ranks and pivots), like [`redundax.methods.eliminate`][]: a report,
not a function to differentiate.
"""

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from .._assembly import constraint_matrix
from .._model import Model
from .._qr import default_rtol, pivoted_qr
from .._structure import left_null_space
from .._types import Scalar

_FORCE = "force"  # the reaction components of a joint's point coincidence
# Pair kinds whose point-coincidence rows alone are a MuJoCo type: the change's name.
_WEAKER = {"weld-3d": "weld → connect", "revolute-3d": "hinge → ball joint"}


@dataclasses.dataclass(frozen=True)
class Closure:
    """The closures between one pair of bodies, with any tree joint between them,
    taken together as one joint.

    - `pairs`: their names; `bodies`: the two bodies.
    - `rows`: their rows of C (0-based).
    - `joint_rank`: how many relative motions of the two bodies they remove.
    - `form_redundancy`: `len(rows) − joint_rank`, rows dependent among themselves.
    - `redundant_rows`: rows that the rest of the mechanism makes dependent too:
      `len(rows)` minus what they add to the rank of the others.
    - `locks`: degrees of freedom that their moment rows remove beyond what their
      point coincidences (a `connect` at each anchor) remove, for welds (0 for
      other closures): > 0 for a weld that stops a motion the linkage has.
    """

    pairs: tuple[str, ...]
    bodies: tuple[str, str]
    rows: tuple[int, ...]
    joint_rank: int
    form_redundancy: int
    redundant_rows: int
    locks: int


@dataclasses.dataclass(frozen=True)
class ClosureChange:
    """A change of one pair's type that MuJoCo can express, and its effect.

    - `pair`: the pair; `change`: e.g. `"weld → connect"`.
    - `redundancy`, `dof`: p and the mobility after the change.
    - `keeps_motion`: whether the mobility is unchanged.
    """

    pair: str
    change: str
    redundancy: int
    dof: int
    keeps_motion: bool


@dataclasses.dataclass(frozen=True)
class ClosureReport:
    """The answer of [`closure_report`][redundax.monitors.closure_report].

    - `n`, `rows`, `rank`, `redundancy`, `dof`: coordinates, rows of C, its rank,
      p and the mobility (as the solvability report).
    - `tree`: the pairs of the spanning tree, in the model's order.
    - `closures`: one [`Closure`][redundax.monitors.Closure] per pair of bodies joined by closures.
    - `form_redundancy`, `mechanism_redundancy`: the two parts of p (module
      docstring).
    - `drop`: the minimal closure, `(pair, component label, row)` (row 1-based) for
      each of the p rows to drop: what is left has the same rank and p = 0, so every
      reaction is unique.
    - `changes`: the changes of one joint or equality type considered
      ([`ClosureChange`][redundax.monitors.ClosureChange]).
    """

    n: int
    rows: int
    rank: int
    tree: tuple[str, ...]
    closures: tuple[Closure, ...]
    drop: tuple[tuple[str, str, int], ...]
    changes: tuple[ClosureChange, ...]

    @property
    def redundancy(self) -> int:
        """Degree of redundancy p = rows − rank."""
        return self.rows - self.rank

    @property
    def dof(self) -> int:
        """Mobility n − rank."""
        return self.n - self.rank

    @property
    def form_redundancy(self) -> int:
        """The part of p that the closures' form brings (module docstring)."""
        return sum(c.form_redundancy for c in self.closures)

    @property
    def mechanism_redundancy(self) -> int:
        """The part of p that the loops' geometry makes."""
        return self.redundancy - self.form_redundancy

    def to_dict(self) -> dict:
        """The `closures` object of `redundax analyze --json` (rows 1-based)."""
        return {
            "redundancy": self.redundancy,
            "form_redundancy": self.form_redundancy,
            "mechanism_redundancy": self.mechanism_redundancy,
            "tree": list(self.tree),
            "closures": [
                {
                    "pairs": list(c.pairs),
                    "bodies": list(c.bodies),
                    "rows": [k + 1 for k in c.rows],
                    "joint_rank": c.joint_rank,
                    "form_redundancy": c.form_redundancy,
                    "redundant_rows": c.redundant_rows,
                    "locks": c.locks,
                }
                for c in self.closures
            ],
            "drop": [{"pair": p, "component": label, "row": row} for p, label, row in self.drop],
            "changes": [dataclasses.asdict(c) for c in self.changes],
        }

    def __str__(self) -> str:
        p = self.redundancy
        tree = ", ".join(self.tree)
        lines = [
            f"closures: {len(self.closures)} closure joint(s) on a tree of {len(self.tree)} "
            f"pair(s) ({tree})",
            f"degree of redundancy p = {p}: {self.form_redundancy} from the form of the "
            f"closures, {self.mechanism_redundancy} from the mechanism's geometry",
        ]
        for c in self.closures:
            what = (
                f"  {' + '.join(c.pairs)} ({c.bodies[0]}–{c.bodies[1]}): {len(c.rows)} rows "
                f"removing {c.joint_rank} relative motions"
            )
            if c.form_redundancy:
                what += f" ({c.form_redundancy} row(s) dependent among themselves)"
            lines.append(what + f"; {c.redundant_rows} redundant in the mechanism")
            if c.locks:
                lines.append(
                    f"    it locks {c.locks} degree(s) of freedom that a connect at its "
                    "anchor would leave: is that intended?"
                )
        if p == 0:
            lines.append("minimal closure: this one (p = 0, every reaction is unique)")
            return "\n".join(lines)
        rows = ", ".join(f"{pair} {label!r} (row {row})" for pair, label, row in self.drop)
        lines.append(
            f"minimal closure: drop {rows}: the motion kept, p = 0, every reaction unique "
            f"(rx.methods.eliminate(model, q, rows={tuple(row for *_, row in self.drop)}))"
        )
        good = [c for c in self.changes if c.keeps_motion and c.redundancy == 0]
        lines += [f"  or {c.pair}: {c.change} (p = 0, the same motion)" for c in good]
        if not good:
            lines.append(
                "  no change of one MuJoCo joint or equality type does it and keeps the motion"
            )
            lines += [
                f"    {c.pair}: {c.change} gives p = {c.redundancy} but mobility {c.dof}"
                for c in self.changes
                if c.redundancy < p and not c.keeps_motion
            ][:3]
        return "\n".join(lines)


def _spanning(model: Model) -> tuple[list[int], list[int]]:
    """`(tree, closures)`: the two-body holonomic pairs, in the model's order, that
    join two parts not yet joined (union–find), and those that close a loop."""
    parent = list(range(model.bodies.count + 1))

    def root(b: int) -> int:
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = parent[b]
        return b

    tree, closures = [], []
    holonomic = set(range(model.n_holonomic))
    for k, pair in enumerate(model.pairs):
        bodies = [model.body_index(b) for b in pair.bodies]
        if len(set(bodies)) != 2 or not set(pair.rows) <= holonomic or "driver" in pair.kind:
            continue
        i, j = root(bodies[0]), root(bodies[1])
        if i == j:
            closures.append(k)
        else:
            parent[i] = j
            tree.append(k)
    return tree, closures


def closure_report(
    model: Model,
    q: Float[ArrayLike, " nq"],
    t: Scalar = 0.0,
    *,
    closures: Sequence[str] | None = None,
    rtol: float | None = None,
) -> ClosureReport:
    """Where the redundancy of `model` at (q, t) comes from, and its minimal closure
    (module docstring).

    **Arguments:**

    - `model`, `q`, `t`: the mechanism and a regular configuration on its
      constraint manifold.
    - `closures`: the names of the loop-closing pairs (for a model from
      [`redundax.io.from_mjcf`][]: its `connect` and `weld` equalities). Default: the
      pairs that close a loop when the two-body joints are added in the model's
      order (the equalities of an MJCF model come after its tree).
    - `rtol`: the rank tolerance, as [`redundax.analyze_solvability`][] (default
      `2 · eps · max(rows, n)`).

    **Returns:** a [`ClosureReport`][redundax.monitors.ClosureReport]; `str()` of it is the text of
    `redundax analyze`.

    **Raises:** `KeyError` for a name in `closures` that is not a pair.
    """
    C = np.asarray(constraint_matrix(model, jnp.asarray(q, dtype=float), t))
    nc, n = C.shape
    rtol = default_rtol((nc, n)) if rtol is None else float(rtol)

    def rank(rows) -> int:
        mask = np.zeros(nc)
        mask[sorted(rows)] = 1.0
        return int(_masked_rank(jnp.asarray(C), jnp.asarray(mask), rtol))

    tree, loop = _spanning(model)
    if closures is not None:
        loop = [model.pair_names.index(model.pair(name).name) for name in closures]
        tree = [k for k in tree if k not in loop]
    everything = set(range(nc))
    r = rank(everything)
    internal = set(model.internal_rows)
    # A closure and every pair between the same two bodies (a tree joint it doubles,
    # other closures) make one joint.
    closed = {frozenset(model.pairs[k].bodies) for k in loop}
    groups: dict[frozenset, list[int]] = {}
    for k in sorted((*tree, *loop)):
        if (key := frozenset(model.pairs[k].bodies)) in closed:
            groups.setdefault(key, []).append(k)

    found = []
    for members in groups.values():
        pairs = [model.pairs[k] for k in members]
        rows = sorted(row for pair in pairs for row in pair.rows)
        joint = rank(internal | set(rows)) - rank(internal)
        others = everything - set(rows)
        added = r - rank(others)
        forces = {
            row
            for pair in pairs
            for row, label in zip(pair.rows, _labels(pair), strict=True)
            if _FORCE in label
        }
        welded = any(pair.kind == "weld-3d" for pair in pairs)
        # Degrees of freedom with the welds' point coincidences only, minus with all.
        locks = r - rank(others | forces) if welded else 0
        bodies = tuple(pairs[0].bodies)
        found.append(
            Closure(
                pairs=tuple(pair.name for pair in pairs),
                bodies=(bodies[0], bodies[-1]),
                rows=tuple(rows),
                joint_rank=joint,
                form_redundancy=len(rows) - joint,
                redundant_rows=len(rows) - added,
                locks=locks,
            )
        )

    drop = _minimal_closure(model, C, r, rtol, [row for k in loop for row in model.pairs[k].rows])
    changes = []
    for k in (*loop, *tree):
        pair = model.pairs[k]
        change = _WEAKER.get(pair.kind)
        if change is None:
            continue
        kept = everything - {
            row for row, label in zip(pair.rows, _labels(pair), strict=True) if _FORCE not in label
        }
        rk = rank(kept)
        changes.append(
            ClosureChange(pair.name, change, len(kept) - rk, n - rk, keeps_motion=rk == r)
        )
    return ClosureReport(
        n=n,
        rows=nc,
        rank=r,
        tree=tuple(model.pairs[k].name for k in tree),
        closures=tuple(found),
        drop=drop,
        changes=tuple(changes),
    )


@functools.partial(jax.jit, static_argnums=2)
def _masked_rank(C, mask, rtol: float):
    """The rank of the rows of C where `mask` is 1 (the others zeroed: one shape, one
    compilation for every subset)."""
    return pivoted_qr((C * mask[:, None]).T, rtol, compute_q=False).rank


def _minimal_closure(model: Model, C, rank: int, rtol: float, rows: list[int]):
    """The p closure rows whose removal keeps the rank: the first p column pivots of
    the pivoted QR of the self-stresses (the left null space of C) restricted to the
    closures' rows; every self-stress loads a closure (the tree is independent), so
    these p columns are independent and the rows kept are too."""
    p = C.shape[0] - rank
    if p == 0 or not rows:
        return ()
    null = np.asarray(left_null_space(jnp.asarray(C), rtol, rank)[0])[:, rank:]  # (nc, p)
    weights = np.zeros_like(null.T)
    weights[:, rows] = null.T[:, rows]
    order = np.asarray(pivoted_qr(jnp.asarray(weights), rtol, compute_q=False).perm)
    drop = sorted(int(k) for k in order[:p])
    labels = {
        row: (pair.name, label)
        for pair in model.pairs
        for row, label in zip(pair.rows, _labels(pair), strict=True)
    }
    return tuple((*labels[row], row + 1) for row in drop)


def _labels(pair) -> tuple[str, ...]:
    return pair.components or tuple(f"row {k + 1}" for k in pair.rows)
