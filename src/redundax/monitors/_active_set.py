"""The active set of a partitioning method along a motion: recorded step by step
during the integration, and reported next to the rank history.

A method that partitions the constraints (`method.partitions`, e.g.
[`BlockSparse`][redundax.methods.BlockSparse]) keeps some rows of C active and drops the
rows its factorisation finds dependent, state by state. `simulate` wraps the ODE
solver in [`ActiveSetMonitor`][redundax.monitors.ActiveSetMonitor]: after every step the active rows
are evaluated at the step's end state and compared with those after the last accepted step; a
change is written to a fixed-size [`ActiveSetLog`][redundax.monitors.ActiveSetLog] carried in the
solver's state (Diffrax keeps the state of accepted steps only), so the log is exact to the
integrator's own steps and costs one more solve per step, whatever the save times.
"""

from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from .._model import Model
from .._wrapped_solver import AbstractMonitor
from ..methods import BlockSparse
from ..methods._specialise import block_pivots

CAPACITY = 256
"""Changes of the active set a run records (later ones are counted, not stored)."""


class ActiveSetLog(eqx.Module):
    """Every change of the active set during one integration, as the integrator
    stepped through it.

    - `initial` (nc,): the active rows at the initial state; `current` (nc,): after
      the last accepted step.
    - `t_before`, `t_after` (K,), `active` (K, nc): change k happened in the step
      [t_before[k], t_after[k]] and left the rows `active[k]` active (a change made
      by a projection at a save time t has t_before = t_after = t).
    - `count`: the changes seen; those beyond the capacity K are not stored.
    """

    initial: Bool[Array, " nc"]
    current: Bool[Array, " nc"]
    t_before: Float[Array, " K"]
    t_after: Float[Array, " K"]
    active: Bool[Array, "K nc"]
    count: Int[Array, ""]

    @classmethod
    def start(cls, active: Bool[Array, " nc"], capacity: int = CAPACITY) -> "ActiveSetLog":
        """An empty log of a run whose initial active set is `active`."""
        times = jnp.full(capacity, jnp.nan)
        return cls(
            active,
            active,
            times,
            times,
            jnp.zeros((capacity, active.shape[0]), bool),
            jnp.asarray(0, dtype=jnp.int32),
        )

    def record(self, t0, t1, active: Bool[Array, " nc"]) -> "ActiveSetLog":
        """The log after a step [t0, t1] that ends with `active` rows."""
        changed = jnp.any(active != self.current)
        k = jnp.where(changed, self.count, self.t_before.shape[0])  # out of range: dropped
        return ActiveSetLog(
            self.initial,
            active,
            self.t_before.at[k].set(t0, mode="drop"),
            self.t_after.at[k].set(t1, mode="drop"),
            self.active.at[k].set(active, mode="drop"),
            self.count + changed.astype(jnp.int32),
        )


def active_rows(args, t, y) -> Bool[Array, " nc"]:
    """The active rows of the vector field's method at (t, y): a discrete fact,
    through which no derivative flows (so none is traced)."""
    args, t, y = jax.tree.map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, (args, t, y)
    )
    model, structure, method, drift_control = args
    q, qd = y
    terms = method.terms(model, q, qd, t)
    return method.active_rows(terms, drift_control.gamma(terms), structure)


class ActiveSetMonitor(AbstractMonitor):
    """A Diffrax solver that steps like `solver` and records the active set of the
    vector field's partitioning method after every step in an
    [`ActiveSetLog`][redundax.monitors.ActiveSetLog]
    (the second half of its solver state). `log`: the log to continue (a run
    integrated save interval by save interval continues one log)."""

    solver: diffrax.AbstractSolver
    log: ActiveSetLog

    def observe(self, args, t, y):
        return active_rows(args, t, y)

    def init(self, terms, t0, t1, y0, args):
        # A projection between two solves may have changed the active set.
        state, log = super().init(terms, t0, t1, y0, args)
        return state, log.record(t0, t0, self.observe(args, t0, y0))


class ActiveSetHistory(eqx.Module):
    """The constraint partitioning of a method like [`BlockSparse`][redundax.methods.BlockSparse]
    along a motion.

    - `ts` (T,), `active` (T, nc): the active rows at each saved time.
    - `changes`: one entry per change, `(t_before, t_after, entered, left)` with the
      rows (0-based) that became active and those that were dropped. From the log
      the integration kept (`Trajectory.active_set`): the change happened in the
      integrator's step [t_before, t_after]; else from the saved states: in that
      save interval (changes undone within one interval are then not seen).
    - `unrecorded`: changes the run saw beyond its log's capacity (not listed).
    """

    ts: Float[Array, " T"]
    active: Bool[Array, "T nc"]
    changes: tuple[tuple[float, float, tuple[int, ...], tuple[int, ...]], ...] = eqx.field(
        static=True
    )
    unrecorded: int = eqx.field(static=True, default=0)


@eqx.filter_jit
def _active_along(model, structure, method, drift_control, ts, q, qd):
    args = (model, structure, method, drift_control)
    return jax.vmap(lambda t, q, qd: active_rows(args, t, (q, qd)))(ts, q, qd)


def _differences(intervals, flags) -> list[tuple[float, float, tuple[int, ...], tuple[int, ...]]]:
    """The changes from `flags[k - 1]` to `flags[k]`, in `intervals[k - 1]`."""
    changes = []
    for k in range(1, flags.shape[0]):
        entered = tuple(int(r) for r in np.flatnonzero(flags[k] & ~flags[k - 1]))
        left = tuple(int(r) for r in np.flatnonzero(~flags[k] & flags[k - 1]))
        if entered or left:
            t0, t1 = intervals[k - 1]
            changes.append((float(t0), float(t1), entered, left))
    return changes


def active_set_history(model: Model, trajectory, method: Any = None) -> ActiveSetHistory:
    """The active set of a partitioning method's factorisation at every saved state
    of `trajectory` (with its structure and drift control), and every change of it:
    a decision of the factorisation, reported next to the rank history
    ([`rank_history`][redundax.monitors.rank_history]). `method`: the partitioning method
    whose threshold applies to the saved states (default `BlockSparse()`; pass the
    one simulated with). Host-side (the changes are a Python list)."""
    # The pivot metric `simulate` fixed for the run (from the model's mass).
    method = block_pivots(BlockSparse() if method is None else method, model)
    active = _active_along(
        model,
        trajectory.structure,
        method,
        trajectory.drift_control,
        trajectory.ts,
        trajectory.q,
        trajectory.qd,
    )
    log = trajectory.active_set
    if log is None:
        ts = np.asarray(trajectory.ts)
        changes = _differences(np.stack([ts[:-1], ts[1:]], axis=1), np.asarray(active))
        return ActiveSetHistory(trajectory.ts, active, tuple(changes))
    count = int(log.count)
    stored = min(count, log.t_before.shape[0])
    flags = np.concatenate([np.asarray(log.initial)[None], np.asarray(log.active[:stored])])
    times = np.stack([np.asarray(log.t_before[:stored]), np.asarray(log.t_after[:stored])], axis=1)
    changes = _differences(times, flags)
    return ActiveSetHistory(trajectory.ts, active, tuple(changes), count - stored)
