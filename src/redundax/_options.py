"""The options of [`redundax.simulate`][], one object per concern (as Diffrax's
`SaveAt` and step-size controllers): where to save ([`SaveAt`][redundax.SaveAt]), what to do with
an initial state off its constraints ([`CheckInitial`][redundax.CheckInitial],
[`ProjectInitial`][redundax.ProjectInitial]),
and how to watch for singular configurations ([`Singularities`][redundax.Singularities])."""

from collections.abc import Sequence

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ._assembly import CONSISTENCY_TOL
from ._validation import given_numbers
from ._validity import PROJECTED_TOL
from .drift._projection import Projection
from .monitors._singularity import MEASURES, THRESHOLD

DEFAULT_SAVES = 201
"""Saved states of an adaptive run when [`SaveAt`][redundax.SaveAt] gives neither `n` nor `ts`."""


class SaveAt(eqx.Module):
    """Which states a run saves: `n` equally spaced in [t0, t1], or the times `ts`
    (from t0 to t1, first and last included); neither: 201 equally spaced for the
    adaptive solvers, every step for [`redundax.GonzalezStepper`][] (where `n` − 1
    must divide the number of steps).

    !!! example
        ```python
        rx.SaveAt(n=11)
        rx.SaveAt(ts=jnp.linspace(0.0, 1.0, 5))
        ```
    """

    n: int | None = eqx.field(static=True)
    ts: Float[Array, " T"] | None

    def __init__(
        self, n: int | None = None, ts: Float[ArrayLike, " T"] | Sequence[float] | None = None
    ):
        self.n = n
        self.ts = None if ts is None else jnp.asarray(ts, dtype=float)

    def __check_init__(self):
        if self.n is not None and self.ts is not None:
            raise ValueError("SaveAt: give n (a count) or ts (the times), not both")
        if self.n is not None and (
            isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 2
        ):
            raise ValueError(
                f"SaveAt field 'n': expected an integer of at least 2 (t0 and t1), got {self.n!r}"
            )
        if self.ts is not None and np.ndim(self.ts) != 1:
            raise ValueError(
                f"SaveAt field 'ts': expected a vector of save times, got shape {np.shape(self.ts)}"
            )


class AbstractInitial(eqx.Module):
    """What [`redundax.simulate`][] does with its initial state:
    [`CheckInitial`][redundax.CheckInitial]
    (refuse one off its constraints) or [`ProjectInitial`][redundax.ProjectInitial] (project it
    first)."""

    tol: eqx.AbstractVar[float]

    def __check_init__(self):
        tol = given_numbers(self.tol)
        if tol is not None and not (tol.ndim == 0 and np.isfinite(tol) and tol > 0.0):
            raise ValueError(
                f"{type(self).__name__} field 'tol': expected a number > 0 [m, rad, m/s], "
                f"got {self.tol!r}"
            )


class CheckInitial(AbstractInitial):
    """Start from the initial state as given; refuse it (a
    [`redundax.ModelError`][] naming the violated pairs) where a constraint residual
    (max |Φ|, max |C q̇ + b|) exceeds `tol`. Checked on concrete inputs (outside
    `jax.jit`)."""

    tol: float = CONSISTENCY_TOL


class ProjectInitial(AbstractInitial):
    """Project the initial state onto its constraints first with `projection` (a
    [`redundax.drift.Projection`][]: positions, then velocities); the correction is
    reported in `Trajectory.initial_correction`. A state the projection cannot
    bring within `tol` (where the mechanism cannot be assembled) is refused."""

    projection: Projection = Projection()
    tol: float = PROJECTED_TOL


class Singularities(eqx.Module):
    """Watch for singular configurations: after every integrator step, how far C
    is from losing rank (`Trajectory.singularities`, read by
    [`redundax.singularity_report`][]).

    - `measure`: `"singular_values"` (σ_r/σ_1 of the dense C by a singular value
      decomposition, O(n³)), `"pivots"` (the r-th largest pivot sine of the block
      elimination of C Cᵀ, linear in the number of bodies), or None (default): the
      pivots where the method uses the block solver, else the singular values.
    - `threshold`: a local minimum of the measure is a passage when below this
      fraction of its largest value in the run.

    Joint-coordinate and González runs keep no such record (`measure` must then be
    None).
    """

    measure: str | None = eqx.field(static=True, default=None)
    threshold: float = eqx.field(static=True, default=THRESHOLD)

    def __check_init__(self):
        if self.measure is not None and self.measure not in MEASURES:
            raise ValueError(
                "Singularities field 'measure': expected None, "
                f"{' or '.join(map(repr, MEASURES))}, "
                f"got {self.measure!r}"
            )
        if not (isinstance(self.threshold, float | int) and 0.0 < self.threshold < 1.0):
            raise ValueError(
                "Singularities field 'threshold': expected a number in (0, 1), got "
                f"{self.threshold!r}"
            )


def initial_projection(initial: AbstractInitial) -> Projection | None:
    """The projection `initial` applies to the initial state (None: none)."""
    return initial.projection if isinstance(initial, ProjectInitial) else None
