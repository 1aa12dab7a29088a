"""Redundant-constraint elimination: drop chosen dependent rows."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int

from .._assembly import constraint_matrix
from .._errors import ModelError
from .._model import Model
from .._precision import precise
from .._qr import DECISION_RTOL, pivoted_qr
from .._structure import decide
from .._types import Scalar
from .._validation import given_numbers
from ._base import AbstractRedundancyMethod
from ._kernels import schur_solve

TIE = precise(1e-9, 1e-5)
"""[`eliminate`][redundax.methods.eliminate]'s automatic choice: rows whose weighted self-stress
shares (squared) are within this fraction of the best tie, and the lowest-numbered is dropped first.
Rows equal by symmetry differ by round-off (Bricard along its motion: nine joint rows
within 1e-11 of each other), and which of them won used to change with the machine
and the compiled program, and the run's cost with it (Bricard's 10 s at rtol 5e-6
takes 41 to 53 Dopri8 steps depending on the row)."""


class Elimination(AbstractRedundancyMethod):
    """Redundant-constraint elimination: the rows `keep` (0-based) form an
    independent set; the other rows are dropped and their multipliers are zero.

    Build it with [`redundax.methods.eliminate`][], which checks that the dropped rows are
    really redundant, or chooses them with the pivoted QR.
    """

    keep: Int[Array, " r"] = eqx.field(converter=lambda k: jnp.asarray(k, dtype=int))
    """The kept rows (an array, not a static field: choices of the same number of
    rows share one compiled program)."""
    n_rows: int = eqx.field(static=True)
    spans_holonomic: bool = eqx.field(static=True, default=False)
    """Whether the kept rows among the holonomic ones span Φ_q's rows (as many as
    its rank), found by [`redundax.methods.eliminate`][] on the host: a
    [`StepProjection`][redundax.drift.StepProjection] then corrects positions with the
    kept rows alone (one Cholesky, no regularisation); otherwise (and for an
    `Elimination` built by hand) with the structure's path over all rows."""
    needs_mass_inverse: ClassVar[bool] = True  # the Schur complement of the kept rows

    def __check_init__(self):
        keep = given_numbers(self.keep)
        if keep is None:
            return
        if keep.ndim != 1 or np.any((keep < 0) | (keep >= self.n_rows)):
            raise ValueError(
                f"Elimination field 'keep': expected 0-based rows in 0..{self.n_rows - 1} "
                f"(n_rows = {self.n_rows}), got {keep.astype(int).tolist()}"
            )
        if np.unique(keep).size != keep.size:
            repeated = keep.astype(int).tolist()
            raise ValueError(f"Elimination field 'keep': rows repeated in {repeated}")

    def _solve(self, terms, gamma):
        # M q̈ + C_sᵀ μ = F, C_s q̈ = Γ_s by the Schur complement (Cholesky of
        # C_s M⁻¹ C_sᵀ, M⁻¹ block by block).
        idx = self.keep
        qdd, mu = schur_solve(
            terms.C[idx], terms.M, terms.F, gamma[idx], terms.block, terms.mass_inverse
        )
        return qdd, jnp.zeros(self.n_rows).at[idx].set(mu)

    def acceleration(self, terms, gamma, structure):
        return self._solve(terms, gamma)[0]

    def multipliers(self, terms, gamma, qdd, structure):
        return self._solve(terms, gamma)[1]

    @property
    def eliminated(self) -> tuple[int, ...]:
        """Dropped rows, 0-based."""
        kept = {int(k) for k in np.asarray(self.keep)}
        return tuple(k for k in range(self.n_rows) if k not in kept)


def _self_stress_share(model: Model, qs: np.ndarray, ts: np.ndarray, rank: int) -> np.ndarray:
    """Per row of C: the smallest share ‖N_k‖ / max_j ‖N_j‖ of the self-stresses (N
    the left null space of C) over the configurations `qs` at times `ts` (host-side)."""
    shares = []
    for q, t in zip(qs, ts, strict=True):
        C = np.asarray(constraint_matrix(model, jnp.asarray(q), t))
        norms = np.linalg.norm(np.linalg.svd(C)[0][:, rank:], axis=1)
        shares.append(norms / max(float(np.max(norms)), 1e-300))
    return np.min(shares, axis=0)


def _error(problem: str) -> ModelError:
    return ModelError(f"eliminate: {problem}", [problem], "eliminate")


def eliminate(
    model: Model,
    q: Float[ArrayLike, " nq"],
    t: Scalar = 0.0,
    rows: tuple[int, ...] | None = None,
    rtol: float | None = None,
    along=None,
) -> Elimination:
    """An [`Elimination`][redundax.methods.Elimination] of `rows` (1-based, as numbered in the paper
    and in the solvability report), or of rows chosen at (q, t) when `rows` is None. Decided
    once, outside any trace, with the rank of the mechanism's [`Structure`][redundax.Structure] at
    (q, t) (`rtol`: its rank tolerance, default `DECISION_RTOL`).

    The automatic choice drops the p rows that carry the self-stresses best. With N
    an orthonormal basis of the left null space of C (m × p), dropping rows D is
    valid exactly when N[D] is non-singular; the p rows are the column pivots of
    the pivoted QR of Nᵀ, its columns weighted by each row's share ‖N_k‖ / max ‖N_j‖
    of the self-stresses: at (q, t), or its smallest value over the saved states of
    `along` (a [`Trajectory`][redundax.Trajectory], e.g. a null-space run of the same mechanism)
    when given. The rows dropped must stay redundant along the whole motion: where a
    dropped row's share vanishes, the kept rows become dependent and the
    integration stiff. At a symmetric configuration the shares tie, and the choice
    at (q, t) alone is arbitrary (Bricard's linkage: every joint row carries the
    same share at the square configuration, and half of them lose it within
    about a second of motion), so pass `along` or choose `rows` yourself there.
    Rows whose weights tie within `TIE` go by their number (the lowest first),
    so the choice does not depend on round-off. Rigid-body rows are never dropped.

    **Raises:** `ValueError` if a row is out of range, or if dropping the rows
    would lower the rank of C (the message names the rows that are not redundant).
    """
    if rows is not None:
        if isinstance(rows, (int, np.integer)) or not all(
            isinstance(r, (int, np.integer)) and not isinstance(r, bool) for r in rows
        ):
            raise _error(f"rows: expected a tuple of 1-based row numbers, got {rows!r}")
        repeated = sorted({int(r) for r in rows if list(rows).count(r) > 1})
        if repeated:
            raise _error(f"rows {repeated} given more than once")
    structure = decide(model, q, t, rtol=DECISION_RTOL if rtol is None else rtol)
    rtol = structure.rtol
    C = np.asarray(constraint_matrix(model, jnp.asarray(q, dtype=float), t))
    nc = C.shape[0]
    rank = int(structure.rank)
    internal = model.internal_rows
    if rows is None:
        p = nc - rank
        if p == 0:
            return _elimination(tuple(range(nc)), structure)
        null = np.asarray(structure.null_space)[:, rank:]  # left null space, (nc, p)
        if along is None:
            states, times = np.asarray(q, dtype=float)[None], np.asarray([t], dtype=float)
        else:
            states, times = np.asarray(along.q), np.asarray(along.ts)
        score = _self_stress_share(model, states, times, rank)
        weights = null.T * score[None, :]
        weights[:, list(internal)] = 0.0
        order = np.asarray(pivoted_qr(jnp.asarray(weights), rtol, tie=TIE).perm)
        drop = sorted(int(k) for k in order[:p])
        keep = tuple(k for k in range(nc) if k not in drop)
        if int(pivoted_qr(C[list(keep)].T, rtol).rank) != rank:
            raise _error(
                f"could not choose {rank} independent rows at this configuration; "
                "is it singular? Pass `rows` explicitly."
            )
        return _elimination(keep, structure)
    bad = [r for r in rows if not 1 <= int(r) <= nc]
    if bad:
        raise _error(f"rows {bad} out of range 1..{nc} (rows are 1-based)")
    inner = [int(r) for r in rows if int(r) - 1 in internal]
    if inner:
        raise _error(
            f"rows {inner} are rigid-body rows of the spatial bodies (rows "
            f"{internal[0] + 1}..{internal[-1] + 1}), not rows of a kinematic pair; they "
            "cannot be eliminated"
        )
    drop = sorted({int(r) - 1 for r in rows})
    keep = tuple(k for k in range(nc) if k not in drop)
    if len(keep) != rank or int(pivoted_qr(C[list(keep)].T, rtol).rank) != rank:
        names = {k: p.name for p in model.pairs for k in p.rows}
        desc = ", ".join(f"{k + 1} (pair {names[k]!r})" for k in drop)
        raise _error(
            f"dropping rows {desc} changes the motion: rank C = {rank} and "
            f"degree of redundancy {nc - rank}, but the kept rows have rank "
            f"{int(pivoted_qr(C[list(keep)].T, rtol).rank)} with {len(keep)} rows. Drop exactly "
            f"{nc - rank} rows that are dependent on the others (see the solvability report)."
        )
    return _elimination(keep, structure)


def _elimination(keep: tuple[int, ...], structure) -> Elimination:
    """The `Elimination` of the rows `keep`, with `spans_holonomic` from the
    structure's rank of Φ_q (host-side)."""
    kept_holonomic = sum(k < structure.m for k in keep)
    spans = kept_holonomic == int(structure.rank_holonomic)
    return Elimination(keep=keep, n_rows=structure.m + structure.h, spans_holonomic=spans)
