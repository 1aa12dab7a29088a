"""Redundancy and reaction-solvability analysis (Wojtyra & Frączek 2013, §3).

For a pair X with rows C_X of C, the reaction f_X = C_Xᵀ λ_X is unique iff the
row spaces satisfy span(Cᵀ) = span(C_Xᵀ) ⊕ span(C_Yᵀ). Three independent tests
are offered:

- **QR** (the paper's method, Eq. 27): C E = Q R with column pivoting; the last
  p = m + h − r columns N of Q span the left null space of C, and
  B_X = C_Xᵀ N_X (N_X: the rows of N belonging to X). f_X is unique iff B_X = 0.
- **SVD**: the same B_X with N from the left singular vectors of the zero singular
  values. ‖B_X‖_F does not depend on the orthonormal basis N, so the two norms agree.
- **Rank**: f_X is unique iff rank C_X + rank C_Y = rank C.

λ_X itself is unique iff N_X = 0 (equivalently: f_X unique and C_X of full row rank).
"""

import warnings
from collections.abc import Mapping, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._assembly import CONSISTENCY_TOL, position_residual
from ._model import Model, unkeyed
from ._qr import default_rtol
from ._structure import (
    UNIQUENESS_RTOL,
    Structure,
    Verdicts,
    groups_of,
    left_null_space,
    pair_verdicts,
    ranks_of_blocks,
    verdicts_at,
)
from ._types import Scalar
from ._validation import check_vector, host_values


class Solvability(eqx.Module):
    """Per-group verdicts computed from a constraint matrix alone."""

    rank: Int[Array, ""]
    unique: Bool[Array, " g"]
    multipliers_unique: Bool[Array, " g"]
    b_norm: Float[Array, " g"]
    n_norm: Float[Array, " g"]


def _solvability(rank, v: Verdicts) -> "Solvability":
    return Solvability(
        rank=rank,
        unique=v.unique,
        multipliers_unique=v.multipliers_unique,
        b_norm=v.b_norm,
        n_norm=v.n_norm,
    )


def solvability_by_qr(
    C: Float[Array, "nc nq"],
    S: Float[Array, "g nc"],
    *,
    rtol: float | None = None,
    utol: float = UNIQUENESS_RTOL,
    rank: Int[ArrayLike, ""] | None = None,
) -> Solvability:
    """The QR test of Wojtyra & Frączek (Eq. 27) for every group (row of `S`, see
    [`membership`][redundax.analysis.membership]). `rank`, if given, imposes the rank (see
    `pivoted_qr`)."""
    N, rank = left_null_space(C, rtol, rank)
    return _solvability(rank, pair_verdicts(C, N, S, utol))


def _svd_rank(s: Float[Array, " k"], shape: tuple[int, int], rtol: float | None):
    rtol = default_rtol(shape) if rtol is None else rtol
    if s.shape[0] == 0:
        return jnp.asarray(0, dtype=jnp.int32)
    return jnp.sum(s > rtol * s[0]).astype(jnp.int32)


def solvability_by_svd(
    C: Float[Array, "nc nq"],
    S: Float[Array, "g nc"],
    *,
    rtol: float | None = None,
    utol: float = UNIQUENESS_RTOL,
) -> Solvability:
    """The B_X test with the left null space taken from the SVD of C."""
    U, s, _ = jnp.linalg.svd(C, full_matrices=True)
    rank = _svd_rank(s, C.shape, rtol)
    N = jnp.where(jnp.arange(C.shape[0])[None, :] >= rank, U, 0.0)
    return _solvability(rank, pair_verdicts(C, N, S, utol))


def _masked_rank(A, rtol):
    s = jnp.linalg.svd(A, compute_uv=False)
    return _svd_rank(s, A.shape, rtol)


def solvability_by_rank(
    C: Float[Array, "nc nq"], S: Float[Array, "g nc"], *, rtol: float | None = None
) -> Solvability:
    """The rank test: f_X unique iff rank C_X + rank C_Y = rank C; λ_X unique iff,
    in addition, rank C_X equals the number of rows of X. `b_norm` and `n_norm`
    are not defined by this test and are returned as NaN."""
    rank = _masked_rank(C, rtol)

    def one(s):
        rx = _masked_rank(C * s[:, None], rtol)
        ry = _masked_rank(C * (1.0 - s)[:, None], rtol)
        return rx, ry

    rx, ry = jax.vmap(one)(S)
    unique = rx + ry == rank
    full_row = rx == jnp.round(jnp.sum(S, axis=1)).astype(rx.dtype)
    nan = jnp.full(S.shape[0], jnp.nan)
    return Solvability(
        rank=rank, unique=unique, multipliers_unique=unique & full_row, b_norm=nan, n_norm=nan
    )


class SolvabilityReport(eqx.Module):
    """What a rigid model can say about its reactions at one configuration.

    Fields are arrays so that reports batch under `jax.vmap`; the pair names and
    rows are static. `str(report)` is a readable table, `report.to_dict()` the
    JSON contract of the command line.
    """

    n: int = eqx.field(static=True)
    m: int = eqx.field(static=True)
    h: int = eqx.field(static=True)
    names: tuple[str, ...] = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    rows: tuple[tuple[int, ...], ...] = eqx.field(static=True)
    labels: tuple[tuple[str, ...], ...] = eqx.field(static=True)
    rank: Int[Array, ""]
    rank_holonomic: Int[Array, ""]
    rank_pfaffian: Int[Array, ""]
    unique: Bool[Array, " g"]
    multipliers_unique: Bool[Array, " g"]
    b_norm: Float[Array, " g"]
    row_unique: Bool[Array, " nc"]
    row_b_norm: Float[Array, " nc"]
    tolerance: Float[Array, ""]

    @property
    def redundancy(self) -> Int[Array, ""]:
        """Degree of redundancy p = m + h − r."""
        return self.m + self.h - self.rank

    @property
    def dof(self) -> Int[Array, ""]:
        """Mobility n − r."""
        return self.n - self.rank

    def verdict(self, name: str) -> bool:
        """Whether the reaction of group `name` is unique (unbatched reports).
        Raises `KeyError` naming the known groups."""
        if name not in self.names:
            raise KeyError(f"no pair or group named {name!r}; known: {', '.join(self.names)}")
        if self.unique.ndim != 1:
            raise ValueError(
                f"verdict({name!r}): a batched report (unique of shape "
                f"{tuple(self.unique.shape)}); index report.unique[..., k] instead"
            )
        return bool(self.unique[self.names.index(name)])

    def to_dict(self, frames: Mapping[str, ArrayLike] | None = None) -> dict:
        """The JSON contract of the command line (rows 1-based; configs/README.md).

        With `frames` (the `joint_frames` at the analysed configuration), every
        pair also gets a key `"frame"`: `{"e0": [x, y, z], "e1": ..., "e2": ...}`,
        the axes its components ("bending moment e1") refer to, or `None` for a pair
        without a joint frame (planar pairs, whose component labels name their
        directions: "force x", "normal force on body_j along n"). Every other key
        is the same with or without it.
        """
        out = self._dict()
        if frames is not None:
            for name, entry in out["pairs"].items():
                frame = frames.get(name)
                entry["frame"] = (
                    None
                    if frame is None
                    else {f"e{k}": [_tidy(x) for x in np.asarray(frame)[k]] for k in range(3)}
                )
        return out

    def _dict(self) -> dict:
        return {
            "n": self.n,
            "m": self.m,
            "h": self.h,
            "rank": int(self.rank),
            "rank_holonomic": int(self.rank_holonomic),
            "rank_pfaffian": int(self.rank_pfaffian),
            "redundancy": int(self.redundancy),
            "dof": int(self.dof),
            "pairs": {
                name: {
                    "kind": kind,
                    "rows": [r + 1 for r in rows],
                    "unique": bool(self.unique[g]),
                    "multipliers_unique": bool(self.multipliers_unique[g]),
                    "b_norm": float(self.b_norm[g]),
                    "row_unique": [bool(self.row_unique[r]) for r in rows],
                    "components": {
                        label: bool(self.row_unique[r])
                        for label, r in zip(labels, rows, strict=True)
                    },
                }
                for g, (name, kind, rows, labels) in enumerate(
                    zip(self.names, self.kinds, self.rows, self.labels, strict=True)
                )
            },
        }

    def __str__(self) -> str:
        return self.table()

    def table(self, frames: Mapping[str, ArrayLike] | None = None) -> str:
        """The readable table of `str(report)`; with `frames` (the
        `joint_frames` at the analysed configuration) each spatial pair's
        component verdicts are listed with the axes e0, e1, e2 they refer to."""
        frames = {} if frames is None else frames
        d = self.to_dict()
        width = max([14] + [len(",".join(map(str, e["rows"]))) + 2 for e in d["pairs"].values()])
        lines = [
            f"n = {d['n']} coordinates, m = {d['m']} holonomic + h = {d['h']} Pfaffian rows",
            f"rank C = {d['rank']} (rank Φ_q = {d['rank_holonomic']}, rank Ψ = "
            f"{d['rank_pfaffian']}), degree of redundancy p = {d['redundancy']}, "
            f"mobility = {d['dof']}",
            "",
            f"{'pair':<12}{'kind':<22}{'rows':<{width}}{'reaction':<12}{'multipliers':<13}"
            f"{'‖B_X‖':>10}  per-row",
        ]
        for name, e in d["pairs"].items():
            rows = ",".join(str(r) for r in e["rows"])
            per_row = " ".join("u" if u else "-" for u in e["row_unique"])
            lines.append(
                f"{name:<12}{e['kind']:<22}{rows:<{width}}"
                f"{'unique' if e['unique'] else 'NOT unique':<12}"
                f"{'unique' if e['multipliers_unique'] else 'not unique':<13}"
                f"{e['b_norm']:>10.4g}  {per_row}"
            )
        lines.append("")
        lines.append("per-row: u = that reaction component is unique, - = it is not")
        mixed = [
            (name, e)
            for name, e in d["pairs"].items()
            if e["kind"] != "group"
            and name not in frames
            and 0 < sum(e["components"].values()) < len(e["rows"])
        ]
        if mixed:
            lines.append("")
            lines.append("components of pairs whose reaction is partly unique:")
            for name, e in mixed:
                lines.append(f"  {name}: {_verdicts(e)}")
        framed = [(name, e) for name, e in d["pairs"].items() if name in frames]
        if framed:
            lines += [
                "",
                "components of the spatial pairs and their joint frames (e0, e1, e2: unit "
                "axes in global coordinates at this configuration, fixed on the pair's "
                "second body; a component is the force along, or the moment about, the "
                "axis it names, on the pair's first body):",
            ]
            for name, e in framed:
                frame = np.asarray(frames[name])
                axes = "  ".join(
                    f"e{k} = ({', '.join(f'{_tidy(x):+.4f}' for x in frame[k])})" for k in range(3)
                )
                lines.append(f"  {name}: {_verdicts(e)}")
                lines.append(f"  {' ' * len(name)}  frame: {axes}")
        return "\n".join(lines)


def _verdicts(entry: dict) -> str:
    return ", ".join(
        f"{label} {'unique' if u else 'NOT unique'}" for label, u in entry["components"].items()
    )


def _tidy(x) -> float:
    """A frame component for printing: round-off below 1e-12 read as 0 (no "-0")."""
    return round(float(x), 12) + 0.0


def joint_frames(model: Model, q: ArrayLike) -> dict[str, np.ndarray]:
    """The joint frame of every spatial pair at the configuration `q` (concrete).

    A spatial pair's reaction components ("transverse force e1", "bending moment
    e2") are the force along, or the moment about, the axes of its joint frame
    fixed on the pair's second body (body j; the ground's frame is the global
    one), acting on its first body.

    **Arguments:**

    - `model`: the mechanism; `q`: its coordinates, shape `(nq,)`.

    **Returns:** `{pair name: (3, 3) array}` whose rows are e0, e1, e2 in global
    coordinates, for the pairs that have a joint frame (spatial joints and
    drivers), in model order; empty for a planar mechanism.
    """
    from ._assembly import _coords
    from ._bodies import axes

    check_vector(q, model.n_coordinates, "q", "joint_frames")
    found: dict[int, np.ndarray] = {}
    Q = None
    for group in model.holonomic:
        frame_j = getattr(group, "frame_j", None)
        if frame_j is None:
            continue
        if Q is None:
            Q = _coords(model, jnp.asarray(q, dtype=float))
        bodies, rows = np.asarray(group.bodies), np.asarray(group.rows)
        for k in range(rows.shape[0]):
            X = axes(Q[int(bodies[k, 1])])  # body j's axes, as columns
            found[int(rows[k, 0])] = np.asarray(X @ frame_j[k].T).T
    return {
        pair.name: found[pair.rows[0]]
        for pair in model.pairs
        if pair.rows and pair.rows[0] in found
    }


def solvability_report(structure: Structure) -> SolvabilityReport:
    """The [`SolvabilityReport`][redundax.SolvabilityReport] of a [`Structure`][redundax.Structure]:
    its verdicts at the
    configuration where it was decided (no new computation)."""
    return SolvabilityReport(
        n=structure.n,
        m=structure.m,
        h=structure.h,
        names=structure.names,
        kinds=structure.kinds,
        rows=structure.rows,
        labels=structure.labels,
        rank=structure.rank,
        rank_holonomic=structure.rank_holonomic,
        rank_pfaffian=structure.rank_pfaffian,
        unique=structure.unique,
        multipliers_unique=structure.multipliers_unique,
        b_norm=structure.b_norm,
        row_unique=structure.row_unique,
        row_b_norm=structure.row_b_norm,
        tolerance=jnp.asarray(structure.utol),
    )


def analyze_solvability(
    model: Model,
    q: Float[Array, " nq"],
    t: Scalar = 0.0,
    *,
    groups: Mapping[str, Sequence[str | int]] | None = None,
    rtol: float | None = None,
    utol: float = UNIQUENESS_RTOL,
) -> SolvabilityReport:
    """Rank, degree of redundancy, mobility and reaction uniqueness at (q, t).

    **Arguments:**

    - `model`: the mechanism.
    - `q`: generalised coordinates, shape `(nq,)` [m, rad].
    - `t`: time [s].
    - `groups`: extra groups of rows to test, `{name: [pair names or 1-based rows]}`.
    - `rtol`: relative rank tolerance of the pivoted QR (default `2 eps max(m+h, n)`).
    - `utol`: relative threshold for B_X = 0 (see `UNIQUENESS_RTOL`).

    **Returns:** a [`SolvabilityReport`][redundax.SolvabilityReport]. Works under `jax.jit` and
    `jax.vmap` (batch over `q`); the verdicts are discrete and carry no gradient.

    !!! example
        ```python
        report = rx.analyze_solvability(model, state.q)
        print(report)              # table
        report.redundancy          # p
        report.verdict("B")        # False for the mobile robot
        ```
    """
    check_vector(q, model.n_coordinates, "q", "analyze_solvability")
    _warn_if_unassembled(model, q, t)
    names, kinds, rows, labels = groups_of(model, groups)
    return _analyze(unkeyed(model), q, t, names, kinds, rows, labels, rtol, utol)


def _warn_if_unassembled(model: Model, q, t) -> None:
    """A `RuntimeWarning` naming the pairs whose position residual exceeds
    `CONSISTENCY_TOL` at a concrete (q, t): the rank and the verdicts are those of
    the mechanism only on its constraint manifold (off it, dependent rows are
    independent by about the residual, and redundancy disappears)."""
    known = host_values(q, t)
    if known is None or model.n_holonomic == 0:
        return
    phi = np.abs(np.asarray(_position_residual(model, *known)))
    worst = []
    for pair in model.pairs:
        rows = [k for k in pair.rows if k < model.n_holonomic]  # Pfaffian pairs: none
        if rows and np.max(phi[rows]) > CONSISTENCY_TOL:
            worst.append((float(np.max(phi[rows])), pair.name))
    if not worst and not np.max(phi) > CONSISTENCY_TOL:
        return
    listed = ", ".join(f"{name!r} ({value:.3g})" for value, name in sorted(worst, reverse=True))
    warnings.warn(
        f"analyze_solvability: q is not an assembled configuration (largest |Φ| "
        f"{np.max(phi):.3g} > {CONSISTENCY_TOL:g}{'; pairs ' + listed if listed else ''}): "
        "the rank and the verdicts hold on the constraint manifold only; project q "
        "onto the constraints first",
        RuntimeWarning,
        stacklevel=3,
    )


_position_residual = eqx.filter_jit(position_residual)


@eqx.filter_jit
def _analyze(model, q, t, names, kinds, rows, labels, rtol, utol) -> SolvabilityReport:
    C, _, rank, groups, (row_unique, row_b) = verdicts_at(model, q, t, rows, rtol, utol)
    rank_h, rank_p = ranks_of_blocks(C, model.n_holonomic, rtol, rank)
    return SolvabilityReport(
        n=model.n_coordinates,
        m=model.n_holonomic,
        h=model.n_pfaffian,
        names=names,
        kinds=kinds,
        rows=rows,
        labels=labels,
        rank=rank,
        rank_holonomic=rank_h,
        rank_pfaffian=rank_p,
        unique=groups.unique,
        multipliers_unique=groups.multipliers_unique,
        b_norm=groups.b_norm,
        row_unique=row_unique,
        row_b_norm=row_b,
        tolerance=jnp.asarray(utol),
    )


def analyze_many(
    model: Model,
    qs: Float[Array, "batch nq"],
    ts: Float[Array, " batch"] | None = None,
    *,
    chunk_size: int = 32,
    groups: Mapping[str, Sequence[str | int]] | None = None,
    rtol: float | None = None,
    utol: float = UNIQUENESS_RTOL,
) -> SolvabilityReport:
    """[`analyze_solvability`][redundax.analyze_solvability] for a batch of configurations `qs` (and
    times `ts`).

    Equivalent to `jax.vmap` over `qs`, evaluated `chunk_size` configurations at a
    time (`jax.lax.map(..., batch_size=chunk_size)`): the factorisations of a
    small chunk stay in the CPU caches, which on a CPU makes large batches several
    times faster than one vmap over everything. Returns a report whose array
    fields carry a leading batch axis (the rank may differ between configurations).
    """
    names, kinds, rows, labels = groups_of(model, groups)
    ts = jnp.zeros(qs.shape[0]) if ts is None else jnp.asarray(ts, dtype=float)
    return _analyze_many(model, qs, ts, names, kinds, rows, labels, rtol, utol, chunk_size)


@eqx.filter_jit
def _analyze_many(model, qs, ts, names, kinds, rows, labels, rtol, utol, chunk_size):
    def one(qt):
        return _analyze(model, qt[0], qt[1], names, kinds, rows, labels, rtol, utol)

    return jax.lax.map(one, (qs, ts), batch_size=chunk_size)
