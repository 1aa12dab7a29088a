"""The objective of a design and its gradient through the solve: `DesignProblem`.

Part of [`redundax.optimize`][], whose docstring describes the whole.
"""

import math
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .. import decide, simulate
from .._options import initial_projection
from .._parameters import apply_parameters, parameter_targets
from .._reaction_quantities import first_moving_body
from ..analysis import peak_reaction, reaction_impulse
from ..methods import specialise
from ..monitors._rank_history import singular_values_along
from ._file import Design


# ---------------------------------------------------------------------- evaluation
class Evaluation(eqx.Module):
    """What one evaluation of a design gives (arrays; batched over nothing).

    - `objective`: J (normalised terms plus penalty), `inf` when the evaluation
      failed (the integration did not reach t_final, or the motion left its
      constraints); `penalty`: its assembly part.
    - `terms`: each term's value in physical units [N, N m, N s], shape `(K,)`:
      the *smooth peak* (power mean of order p over the saved states) of a
      peak-reaction term, the *impulse* (magnitude of the time integral) of a
      reaction-impulse term. `peaks`: the *peak* (the sampled maximum over the
      saved states) of a peak-reaction term's reaction magnitude, NaN for an
      impulse term, `(K,)`. (The same words name them on the command line, in
      `history.csv` and in `design.json`.)
    - `magnitude`: each peak term's reaction magnitude at every saved time, zeros
      for an impulse term, `(K, T)`.
    - `ts`: the saved times; `min_ratio`: the smallest σ_r/σ_1 of C along the
      manoeuvre; `initial_correction`: how far the initial state was projected.
    - `left_at`: the time [s] at which the motion left its constraints
      ([`redundax.Trajectory`][]'s `valid` and `left_at`: the drive took the
      mechanism out of its workspace), `inf` when it did not.
    """

    objective: Any
    penalty: Any
    terms: Any
    peaks: Any
    magnitude: Any
    ts: Any
    min_ratio: Any
    initial_correction: Any
    left_at: Any = math.inf


class DesignProblem:
    """The objective of a [`Design`][redundax.optimize.Design] as a function of the scaled variables
    z, with its gradient from one compiled call.

    **Arguments:**

    - `design`: the checked design.

    `x(z)` maps scaled variables to physical ones; `variant(x)` gives the
    (model, initial state) of a design; `value_and_grad(z)` returns
    (J, [`Evaluation`][redundax.optimize.Evaluation]) and ∇J; `value(z, reference)` the same without
    the gradient (the forward simulation only; `reference` holds the terms' values at
    the initial design, ones for physical units).
    """

    def __init__(self, design: Design):
        self.design = design
        config = design.config
        self.model, self.state = config.model, config.state
        targets = parameter_targets(self.model, self.state)
        addresses = list(dict.fromkeys(a for v in design.variables for a, _ in v.addresses))
        self.targets = tuple(targets[a] for a in addresses)
        self.nominal = np.array([targets[a].nominal for a in addresses])
        self.matrix = np.zeros((len(addresses), len(design.variables)))
        for j, v in enumerate(design.variables):
            for a, c in v.addresses:
                self.matrix[addresses.index(a), j] = c
        self.x0 = np.array([v.initial for v in design.variables])
        self.scale = np.array([v.scale for v in design.variables])
        # A bound far beyond the scale may overflow to ±inf: unbounded, as it should be.
        with np.errstate(over="ignore"):
            self.lower = (np.array([v.lower for v in design.variables]) - self.x0) / self.scale
            self.upper = (np.array([v.upper for v in design.variables]) - self.x0) / self.scale
        # Every discrete decision (rank, verdicts, the null-space path) is taken once,
        # on the initial design, and shared by every design the optimiser visits.
        options = design.simulation
        q, qd, t = self.state.q, self.state.qd, self.state.t
        if initial_projection(options.initial) is not None:
            q, qd = initial_projection(options.initial)(self.model, q, qd, t)
        self.structure = decide(self.model, q, t)
        self.method = specialise(options.method, self.structure, self.model)
        self.rank = int(self.structure.rank)
        self.reference = np.ones(len(design.objective))
        self.value_and_grad = eqx.filter_jit(
            jax.value_and_grad(lambda z, ref: self._evaluate(z, ref), has_aux=True)
        )
        self.value = eqx.filter_jit(lambda z, ref: self._evaluate(z, ref))

    def x(self, z) -> Any:
        return self.x0 + self.scale * z

    def variant(self, x):
        """The (model, initial state) of the design with variables `x`."""
        values = jnp.asarray(self.nominal) + jnp.asarray(self.matrix) @ (x - self.x0)
        return apply_parameters(self.model, self.state, self.targets, values)

    def _evaluate(self, z, reference):
        design, options = self.design, self.design.simulation
        model, state = self.variant(self.x(z))
        trajectory = simulate(
            model,
            state,
            options.t_final,
            **options.keywords(structure=self.structure, method=self.method, throw=False),
        )
        values, peaks, magnitudes = [], [], []
        for term in design.objective:
            if term.kind == "peak-reaction":
                peak = peak_reaction(
                    model,
                    trajectory,
                    pair=term.pair,
                    component=term.component,
                    order=term.order,
                    structure=self.structure,
                )
                values.append(peak.value)
                peaks.append(peak.max)
                magnitudes.append(peak.magnitude)
            else:
                impulse = reaction_impulse(
                    model,
                    trajectory,
                    pair=term.pair,
                    component=term.component,
                    structure=self.structure,
                )
                if term.component is None:
                    body = first_moving_body(model, term.pair)
                    vector = impulse.wrench[body, : model.dim]
                else:
                    vector = impulse.components
                value = jnp.sqrt(jnp.sum(vector**2))
                values.append(value)
                peaks.append(jnp.full_like(value, jnp.nan))  # an impulse has no peak
                magnitudes.append(jnp.zeros_like(trajectory.ts))
        values = jnp.stack(values)
        weights = jnp.asarray([t.weight for t in design.objective])
        objective = jnp.sum(weights * values / reference)
        sigma = singular_values_along(model, trajectory.ts, trajectory.q)
        ratio = sigma[:, self.rank - 1] / sigma[:, 0]
        penalty = jnp.zeros(())
        if design.assembly is not None:
            shortfall = jnp.maximum(0.0, 1.0 - ratio / design.assembly.min_singular_ratio)
            penalty = design.assembly.weight * jnp.mean(shortfall**2)
        ok, left_at = _succeeded(trajectory)
        objective = jnp.where(ok, objective + penalty, jnp.inf)
        return objective, Evaluation(
            objective=objective,
            penalty=penalty,
            terms=values,
            peaks=jnp.stack(peaks),
            magnitude=jnp.stack(magnitudes),
            ts=trajectory.ts,
            min_ratio=jnp.min(ratio),
            initial_correction=trajectory.initial_correction,
            left_at=left_at,
        )


def _succeeded(trajectory):
    """Whether a simulated design is a design: the integration reached t_final
    (`diffrax.RESULTS.successful`; a run stopped where the motion left its
    constraints ends with `event_occurred`) and the motion is on its constraints at
    every saved state (`Trajectory.valid`; None, not judged, on a trajectory built
    by hand). Returns `(ok, left_at)`, `left_at` the time the motion left its
    constraints (where the integration stopped, or the first saved state off
    them), `inf` when it did not."""
    ok = trajectory.result == diffrax.RESULTS.successful
    if trajectory.valid is None:
        return ok, jnp.asarray(jnp.inf)
    off = ~trajectory.valid
    first = jnp.where(jnp.any(off), trajectory.ts[jnp.argmax(off)], jnp.inf)
    stopped = trajectory.left_at
    left_at = first if stopped is None else jnp.minimum(stopped, first)
    return ok & jnp.all(trajectory.valid), left_at
