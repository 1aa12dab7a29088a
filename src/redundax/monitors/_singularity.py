"""Singular configurations met along a motion, seen at every integrator step.

A closed chain passes a singular configuration when rows of C that are
independent elsewhere become dependent: σ_r, the r-th singular value of C (r the
regular rank), falls to zero and rises again. Saved states rarely land on such a
pose (IFToMM A02's parallelograms are flat for an instant, twice a second), so
`simulate` wraps the ODE solver in [`SingularityMonitor`][redundax.monitors.SingularityMonitor]:
after every step it takes the singular values of C at the step's end and writes to a fixed-size
[`SingularityLog`][redundax.monitors.SingularityLog] carried in the solver's state (Diffrax keeps
the state of accepted steps only):

- the smallest σ_r/σ_1 over the step ends, and where;
- every **passage**: a local minimum of σ_r/σ_1 over three consecutive step ends
  below `threshold` times the largest σ_r/σ_1 seen so far. Its instant and depth
  are refined from those three values: near a passage σ_r(t)² is, to leading
  order, a quadratic c²(t − t*)² + d² (exactly so where C loses rank at t*, d = 0),
  so the parabola through the three (t, (σ_r/σ_1)²) gives t* and the depth d
  without another decomposition;
- every change of the numerical rank of C (relative tolerance `structure.rtol`;
  for the pivots, below) from one step end to the next.

What keeps the motion on its branch through a passage is the drift control
(`StepProjection`, the default, projects after every step); the log only says
where the passages were and how deep. Nothing flows under `jax.grad` (a discrete
record, `stop_gradient`).

Two measures of how far C is from losing rank (`SingularityLog.measure`):

- `"singular_values"`: σ_r/σ_1 of the dense C, by one singular value
  decomposition per step, O(n³) (as the dense methods' own solve); its rank
  changes at the structure's relative tolerance (`Structure.rtol`).
- `"pivots"`: the block solver's own quantity (Kraus et al. §8: a monitor on the
  pivots of the joint blocks), linear in the number of bodies. The block
  elimination of C Cᵀ in the [`BlockPattern`][redundax.internal.BlockPattern]'s order gives
  each row j its relative pivot d_j / (C Cᵀ)_jj = sin² of the angle between row j
  and the rows kept before it ([`row_pivots`][redundax.methods.block.row_pivots]).
  The measure is the r-th largest sine (r the regular rank): redundant rows have
  sines at round-off (≈ 1e-8 at most), and at a singular configuration the sine
  of a row that becomes dependent falls to zero, linearly in time as σ_r does, so
  the same passage test and refinement apply. Its rank is the number of rows kept
  by that elimination (sine above √`PIVOT_RTOL` = 1e-3): sines cannot resolve the
  structure's 1e-8 (the pivots are accurate to round-off, 1e-16, in their
  squares). Measured on IFToMM A02's chain of three spatial parallelograms: the
  r-th sine is 3.7–4.5 × σ_r/σ_1 along the motion and has its minima at the same
  step ends; the dense SVD takes 14× the block solver's step at 64 loops.

`simulate` takes "pivots" where the run's method uses the block solver and
"singular_values" elsewhere ([`redundax.Singularities`][]).
"""

import dataclasses

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._assembly import constraint_matrix, constraint_rows
from .._precision import precise
from .._wrapped_solver import AbstractMonitor
from ..drift._projection import Projection
from ..drift._step_projection import StepProjection
from ..methods.block import PIVOT_RTOL, row_pivots

THRESHOLD = 0.1
"""A local minimum of σ_r/σ_1 is a passage when it is below this fraction of the
largest σ_r/σ_1 of the run (A02's parallelogram: 0.25 away from the flat poses)."""

CAPACITY = 128
"""Passages and rank changes a run records (later ones are counted, not stored)."""

TIE = precise(1e-12, 1e-5)
"""A smaller σ_r/σ_1 replaces the run's minimum only when smaller by more than this
fraction (round-off of the SVD): where the ratio is constant (a pendulum, a rigid
rotation) `t_min` is the first step end that reaches it, not whichever one round-off
made the smallest (which changes with the compiled program)."""


MEASURES = ("singular_values", "pivots")
"""What the monitor measures (module docstring)."""

PIVOT_SINE_RTOL = float(np.sqrt(PIVOT_RTOL))
"""A row counts towards the `"pivots"` measure's rank when its sine is above this
(the rows the coordinates' block elimination keeps)."""


class SingularityLog(eqx.Module):
    """The singular configurations one integration met, step by step.

    - `measure`: `"singular_values"` (σ_r/σ_1 of C) or `"pivots"` (the r-th
      largest pivot sine of the block elimination of C Cᵀ); module docstring. The
      fields named "ratio" hold that measure.
    - `regular_rank`: r, the rank of C the run was decided with.
    - `t_last`, `ratio_last` (2,): the last two step ends and their σ_r/σ_1.
    - `max_ratio`: the largest σ_r/σ_1 so far (the decision state's included).
    - `min_ratio`, `t_min`: the smallest σ_r/σ_1 over the step ends (or refined
      passages), and when (the first time, within round-off: `TIE`).
    - `rank`: the numerical rank of C at the last step end.
    - `passage_t`, `passage_ratio`, `passage_window` (K,), (K,), (K, 2): every
      passage: its refined instant and σ_r/σ_1 there, and the integrator's step
      ends around it; `passages`: how many were seen.
    - `rank_t`, `rank_value` (K, 2), (K,): every rank change, in the step
      `rank_t[k]`, to `rank_value[k]`; `rank_changes`: how many were seen.
    """

    regular_rank: Int[Array, ""]
    rtol: Float[Array, ""]
    threshold: Float[Array, ""]
    t_last: Float[Array, " 2"]
    ratio_last: Float[Array, " 2"]
    max_ratio: Float[Array, ""]
    min_ratio: Float[Array, ""]
    t_min: Float[Array, ""]
    rank: Int[Array, ""]
    passage_t: Float[Array, " K"]
    passage_ratio: Float[Array, " K"]
    passage_window: Float[Array, "K 2"]
    passages: Int[Array, ""]
    rank_t: Float[Array, "K 2"]
    rank_value: Int[Array, " K"]
    rank_changes: Int[Array, ""]
    measure: str = eqx.field(static=True, default="singular_values")

    @classmethod
    def start(
        cls,
        structure,
        t0,
        threshold: float = THRESHOLD,
        capacity: int = CAPACITY,
        measure: str = "singular_values",
        sigma0: Float[Array, " k"] | None = None,
    ):
        """An empty log of a run decided as `structure` that starts at `t0`. The
        largest ratio so far and the rank start from the structure's, or, given
        `sigma0` (the measure's values at the start, descending), from those."""
        if measure not in MEASURES:
            raise ValueError(
                f"SingularityLog field 'measure': expected one of {MEASURES}, got {measure!r}"
            )
        nan = jnp.full(capacity, jnp.nan)
        t0 = jnp.asarray(t0, dtype=float)
        rank = jnp.asarray(structure.rank)
        rtol = structure.rtol if measure == "singular_values" else PIVOT_SINE_RTOL
        if sigma0 is None:
            ratio, rank0 = jnp.asarray(structure.sigma_ratio, dtype=float), rank
        else:  # the measure's own rank at the start: the first change is a real one
            sigma0 = jnp.asarray(sigma0, dtype=float)
            ratio = _ratio(sigma0, rank)
            rank0 = jnp.sum(sigma0 > rtol * sigma0[0]).astype(rank.dtype)
        return cls(
            measure=measure,
            regular_rank=rank,
            rtol=jnp.asarray(rtol, dtype=float),
            threshold=jnp.asarray(threshold, dtype=float),
            t_last=jnp.stack([t0, t0]),
            ratio_last=jnp.full(2, jnp.inf),
            max_ratio=ratio,
            min_ratio=jnp.asarray(jnp.inf),
            t_min=t0,
            rank=rank0,
            passage_t=nan,
            passage_ratio=nan,
            passage_window=jnp.full((capacity, 2), jnp.nan),
            passages=jnp.asarray(0, dtype=jnp.int32),
            rank_t=jnp.full((capacity, 2), jnp.nan),
            rank_value=jnp.zeros(capacity, dtype=jnp.asarray(structure.rank).dtype),
            rank_changes=jnp.asarray(0, dtype=jnp.int32),
        )

    def record(self, t0, t1, sigma: Float[Array, " k"]) -> "SingularityLog":
        """The log after a step [t0, t1] whose end has singular values `sigma`
        (descending)."""
        r = self.regular_rank
        ratio = _ratio(sigma, r)
        rank = jnp.sum(sigma > self.rtol * sigma[0]).astype(self.rank.dtype)
        # A passage: the previous step end is a local minimum, deep enough.
        (ta, tb), (ra, rb) = self.t_last, self.ratio_last
        minimum = (rb <= ra) & (rb < ratio) & jnp.isfinite(ra)
        t_star, depth = _vertex(ta, tb, t1, ra, rb, ratio)
        passage = minimum & (depth < self.threshold * self.max_ratio)
        k = jnp.where(passage, self.passages, self.passage_t.shape[0])  # out of range: dropped
        changed = rank != self.rank
        j = jnp.where(changed, self.rank_changes, self.rank_t.shape[0])
        lowest = jnp.where(passage, jnp.minimum(depth, ratio), ratio)
        new_min = lowest < self.min_ratio * (1.0 - TIE)
        return SingularityLog(
            measure=self.measure,
            regular_rank=r,
            rtol=self.rtol,
            threshold=self.threshold,
            t_last=jnp.stack([tb, t1]),
            ratio_last=jnp.stack([rb, ratio]),
            max_ratio=jnp.maximum(self.max_ratio, ratio),
            min_ratio=jnp.where(new_min, lowest, self.min_ratio),
            t_min=jnp.where(new_min, jnp.where(passage & (depth < ratio), t_star, t1), self.t_min),
            rank=rank,
            passage_t=self.passage_t.at[k].set(t_star, mode="drop"),
            passage_ratio=self.passage_ratio.at[k].set(depth, mode="drop"),
            passage_window=self.passage_window.at[k].set(jnp.stack([ta, t1]), mode="drop"),
            passages=self.passages + passage.astype(jnp.int32),
            rank_t=self.rank_t.at[j].set(jnp.stack([t0, t1]), mode="drop"),
            rank_value=self.rank_value.at[j].set(rank, mode="drop"),
            rank_changes=self.rank_changes + changed.astype(jnp.int32),
        )


def _ratio(sigma, r):
    """σ_r/σ_1 of descending values `sigma` (1 where r = 0, 0 where σ_1 = 0)."""
    s1 = sigma[0]
    ratio = jnp.where(s1 > 0, jnp.take(sigma, jnp.maximum(r - 1, 0)) / s1, 0.0)
    return jnp.where(r > 0, ratio, 1.0)


def _vertex(t0, t1, t2, r0, r1, r2):
    """Instant and value of the minimum of σ_r/σ_1 from three step ends around
    it: the vertex of the parabola through (t_i, r_i²) (module docstring),
    clamped to [t0, t2] and to values ≥ 0."""
    y0, y1, y2 = r0 * r0, r1 * r1, r2 * r2
    f01 = (y1 - y0) / jnp.where(t1 > t0, t1 - t0, 1.0)
    f12 = (y2 - y1) / jnp.where(t2 > t1, t2 - t1, 1.0)
    a = (f12 - f01) / jnp.where(t2 > t0, t2 - t0, 1.0)
    ok = a > 0
    t_star = jnp.clip(0.5 * (t0 + t1) - f01 / (2.0 * jnp.where(ok, a, 1.0)), t0, t2)
    y_star = y0 + f01 * (t_star - t0) + a * (t_star - t0) * (t_star - t1)
    depth = jnp.sqrt(jnp.clip(y_star, 0.0, y1))
    return jnp.where(ok, t_star, t1), jnp.where(ok, depth, r1)


@eqx.filter_jit
def step_sigma(args, t, y) -> Float[Array, " k"]:
    """Singular values of C at (t, y), descending: a record, through which no
    derivative flows."""
    args, t, y = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, (args, t, y)
    )
    model = args[0]
    return jnp.linalg.svd(constraint_matrix(model, y[0], t), compute_uv=False)


@eqx.filter_jit
def step_pivot_sines(args, t, y) -> Float[Array, " nc"]:
    """The sines of C's rows against the rows kept before them in the block
    elimination of C Cᵀ at (t, y), descending (module docstring): a record, linear
    in the number of bodies."""
    args, t, y = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, (args, t, y)
    )
    model, structure = args[0], args[1]
    R, B = constraint_rows(model, y[0], t)
    sines = jnp.sqrt(jnp.clip(row_pivots(structure.blocks, R, B), 0.0, 1.0))
    return -jnp.sort(-sines)


def observe(measure: str, args, t, y) -> Float[Array, " k"]:
    """The values `measure` reads at (t, y), descending."""
    return step_pivot_sines(args, t, y) if measure == "pivots" else step_sigma(args, t, y)


@dataclasses.dataclass(frozen=True)
class Watch:
    """What `simulate` monitors: the passage `threshold` and the `measure`."""

    threshold: float
    measure: str


class SingularityMonitor(AbstractMonitor):
    """A Diffrax solver that steps like `solver` and records, after every step, how
    far C is from losing rank (σ_r/σ_1 or the pivot sines: `log.measure`) in a
    [`SingularityLog`][redundax.monitors.SingularityLog] (the second half of its solver state).
    `log`: the log to continue (a run integrated save interval by save interval continues one
    log)."""

    solver: diffrax.AbstractSolver
    log: SingularityLog

    def observe(self, args, t, y):
        return observe(self.log.measure, args, t, y)


@dataclasses.dataclass(frozen=True)
class SingularPassage:
    """One singular configuration a motion passed (host-side values).

    - `t`: the instant of the smallest σ_r/σ_1 [s], refined between the
      integrator's step ends `window` (t_before, t_after).
    - `sigma_ratio`: σ_r/σ_1 there (0: C lost rank).
    - `action`: what kept the motion on its branch (from the drift control)."""

    t: float
    sigma_ratio: float
    window: tuple[float, float]
    action: str

    def as_dict(self) -> dict:
        return {
            "t": self.t,
            "sigma_ratio": self.sigma_ratio,
            "window": list(self.window),
            "action": self.action,
        }


@dataclasses.dataclass(frozen=True)
class SingularityReport:
    """What a run's [`SingularityLog`][redundax.monitors.SingularityLog] says, on the host.

    - `passages`: the [`SingularPassage`][redundax.monitors.SingularPassage]s, in time order.
    - `min_sigma_ratio`, `t_min`: the smallest σ_r/σ_1 met (of the `measure`:
      the r-th pivot sine where it is `"pivots"`), and when.
    - `rank_changes`: `(t_before, t_after, rank)` per change of the numerical rank
      of C between two step ends.
    - `unrecorded`: passages and rank changes seen beyond the log's capacity.
    - `branch_kept`: whether the drift control projects after every step (what
      keeps a closed chain on its branch through a passage)."""

    passages: tuple[SingularPassage, ...]
    min_sigma_ratio: float
    t_min: float
    rank_changes: tuple[tuple[float, float, int], ...]
    unrecorded: int
    branch_kept: bool
    measure: str = "singular_values"

    def as_dict(self) -> dict:
        """The report in the JSON of `redundax simulate`."""
        return {
            "singular_passages": [p.as_dict() for p in self.passages],
            "singularity_measure": self.measure,
            "min_sigma_ratio": self.min_sigma_ratio,
            "rank_changes": [
                {"t_before": a, "t_after": b, "rank": r} for a, b, r in self.rank_changes
            ],
        }


def _action(drift_control, method) -> tuple[str, bool]:
    if isinstance(drift_control, StepProjection) and drift_control.tolerance is not None:
        # Step ends within τ are left alone, and a passage can be crossed there: with
        # τ = 1e-3, 13 of 14 runs of experiments/six_bar_projection.py switched branch.
        what = "projection after the integrator steps whose residual exceeds its tolerance"
        kept = False
    elif isinstance(drift_control, StepProjection):
        what, kept = "projection onto the manifold after every integrator step", True
    elif getattr(method, "partitions", False):
        # Kraus et al. §8: the rows that become dependent drop out of the active set
        # near the passage, so the factorisation does not follow them off the branch.
        what, kept = "constraint partitioning: dependent rows dropped (active set logged)", True
    elif isinstance(drift_control, Projection):
        what, kept = "projection at the saved times only: the branch is not guaranteed", False
    else:
        name = type(drift_control).__name__
        what, kept = f"none ({name} terms only): the motion may have left its branch", False
    return what, kept


def singularity_report(trajectory, method=None) -> SingularityReport | None:
    """The singular passages, the smallest σ_r/σ_1 and the rank changes a
    simulated `trajectory` recorded step by step (None if it was simulated
    without the monitor). Host-side; `method`: the method simulated with (names
    what was done at a passage)."""
    log = trajectory.singularities
    if log is None:
        return None
    # Every leaf to the host at once: NumPy slices below, not one dispatched
    # program per slice (~0.5 ms of a warm 30 ms Bricard run).
    log = jax.device_get(log)
    what, kept = _action(trajectory.drift_control, method)
    n = int(log.passages)
    stored = min(n, log.passage_t.shape[0])
    t, ratio, window = (
        np.asarray(x[:stored]) for x in (log.passage_t, log.passage_ratio, log.passage_window)
    )
    passages = tuple(
        SingularPassage(float(t[k]), float(ratio[k]), tuple(map(float, window[k])), what)
        for k in range(stored)
    )
    m = int(log.rank_changes)
    logged = min(m, log.rank_t.shape[0])
    rank_t, rank_value = np.asarray(log.rank_t[:logged]), np.asarray(log.rank_value[:logged])
    changes = tuple(
        (float(a), float(b), int(r)) for (a, b), r in zip(rank_t, rank_value, strict=True)
    )
    min_ratio = float(log.min_ratio)
    return SingularityReport(
        passages=passages,
        min_sigma_ratio=min_ratio if np.isfinite(min_ratio) else float(log.max_ratio),
        t_min=float(log.t_min),
        rank_changes=changes,
        unrecorded=(n - stored) + (m - logged),
        branch_kept=kept,
        measure=log.measure,
    )
