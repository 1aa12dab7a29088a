"""The Optax loop with rejected steps: `optimize_design`, `DesignResult`.

Part of [`redundax.optimize`][], whose docstring describes the whole.
"""

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from .. import analyze_solvability
from ..drift import Projection
from ..equations import position_residual, velocity_residual
from ..io._errors import ConfigError, Problem, Where
from ._constants import FORMAT, OPTIMIZERS, QUANTITIES
from ._file import _TINY, Design
from ._problem import DesignProblem, Evaluation


# ---------------------------------------------------------------------- rejections
def _where(design: Design) -> str:
    return "design" if design.path is None else str(design.path)


def _values(design: Design, x) -> str:
    """`name = value unit, ...` of a design (enough digits to find it again)."""
    return ", ".join(
        f"{v.name} = {float(value):.10g}{f' {v.unit}' if v.unit else ''}"
        for v, value in zip(design.variables, x, strict=True)
    )


def _failure(evaluation: Evaluation) -> str:
    """Why an evaluation gave no objective, in a few words."""
    left = float(evaluation.left_at)
    if math.isfinite(left):
        return f"the motion left its constraints at t = {left:.6g} s"
    return "the simulation failed (the integration did not reach t_final)"


def _rejection(design: Design, x, value: float, evaluation: Evaluation, grad, best: float) -> str:
    """Why the design `x` is rejected, in one line ("" when it is accepted)."""
    if not math.isfinite(value):
        return _failure(evaluation)
    bad = [k for k, g in enumerate(grad) if not math.isfinite(float(g))]
    if bad:
        variables = [design.variables[k] for k in bad]
        names = "; ".join(f"{v.name} ({', '.join(a for a, _ in v.addresses)})" for v in variables)
        kind = "NaN" if any(math.isnan(float(grad[k])) for k in bad) else "infinite"
        return (
            f"the gradient of the objective is not finite ({kind}) with respect to {names} "
            f"at {_values(design, x)}"
        )
    if not value < best:
        return "no decrease"
    return ""


# ---------------------------------------------------------------------- optimiser
@dataclasses.dataclass
class Step:
    """One iteration: the design evaluated, its objective, whether it was accepted.

    `terms` are the terms' values (the smooth peak of a peak-reaction term, the
    impulse of a reaction-impulse term), `peaks` the peak (sampled maximum) of a
    peak-reaction term's reaction (NaN for an impulse term), both in physical
    units. `rejection` says why a rejected step was rejected, in one line ("" when
    accepted): no decrease, the simulation failed, the motion left its constraints
    at a time, or a gradient that is not finite, naming the variables and the
    design."""

    step: int
    x: list[float]
    objective: float
    terms: list[float]
    peaks: list[float]
    penalty: float
    min_ratio: float
    gradient_norm: float
    learning_rate: float
    accepted: bool
    rejection: str
    seconds: float


@dataclasses.dataclass
class DesignResult:
    """The outcome of [`optimize_design`][redundax.optimize.optimize_design].

    **Attributes:**

    - `variables`: the variables' names and units; `initial`, `final`: x₀ and the
      best design found.
    - `history`: every [`Step`][redundax.optimize.Step], accepted or not (the accepted objectives
      decrease monotonically).
    - `initial_evaluation`, `final_evaluation`: the [`Evaluation`][redundax.optimize.Evaluation] of
      x₀ and of the final design (NumPy arrays), both normalised alike: `objective` is
      Σ_k weight_k · term_k / reference_k + penalty (1 + penalty at x₀), `terms`
      and `peaks` are in physical units.
    - `references`: each term's value at x₀ [N, N m, N s], its normaliser.
    - `quantities`: what each term's value is: "smooth peak" (a peak-reaction
      term: the power mean over the saved states) or "impulse"; a term's "peak"
      is always the sampled maximum.
    - `initial_rank`, `final_rank`: rank of C at the (projected) initial state of
      each design; `final_unique`: the solvability verdict per pair there.
    - `stopped`: why the optimiser stopped.
    """

    variables: list[tuple[str, str]]
    initial: np.ndarray
    final: np.ndarray
    history: list[Step]
    initial_evaluation: Evaluation
    final_evaluation: Evaluation
    initial_rank: int
    final_rank: int
    final_unique: dict[str, bool]
    stopped: str
    labels: list[str]
    references: list[float]
    quantities: list[str]

    @property
    def accepted(self) -> list[Step]:
        return [s for s in self.history if s.accepted]

    @property
    def decrease(self) -> float:
        """Relative decrease of J from the initial to the final design."""
        first, last = self.accepted[0].objective, self.accepted[-1].objective
        return (first - last) / first

    def to_dict(self) -> dict[str, Any]:
        """The content of `design.json`: plain JSON (a number that is not finite,
        such as the objective of a step whose simulation failed, is None)."""

        def ev(e: Evaluation) -> dict[str, Any]:
            return {
                "objective": float(e.objective),
                "terms": [float(v) for v in e.terms],
                "peaks": [float(v) for v in e.peaks],
                "penalty": float(e.penalty),
                "min_singular_ratio": float(e.min_ratio),
            }

        return _json_numbers(
            {
                "format": FORMAT,
                "variables": [
                    {"name": n, "unit": u, "initial": float(a), "final": float(b)}
                    for (n, u), a, b in zip(self.variables, self.initial, self.final, strict=True)
                ],
                "objective_terms": self.labels,
                "term_quantities": self.quantities,
                "objective_normalisation": NORMALISATION,
                "objective_references": self.references,
                "initial": ev(self.initial_evaluation),
                "final": ev(self.final_evaluation),
                "decrease": self.decrease,
                "initial_rank": self.initial_rank,
                "final_rank": self.final_rank,
                "same_rank": self.initial_rank == self.final_rank,
                "final_unique": self.final_unique,
                "stopped": self.stopped,
                "history": [dataclasses.asdict(s) for s in self.history],
            }
        )


NORMALISATION = (
    "objective = sum over the terms of weight * term / reference (the term's value at the "
    "initial design, in objective_references) + penalty: 1 + penalty at the initial design, "
    "in both 'initial' and 'final' and in every step; terms and peaks are in physical units "
    "(N, N m, N s): 'terms' hold each term's value (term_quantities: the smooth peak, a "
    "power mean over the saved states, of a peak-reaction term; the impulse of a "
    "reaction-impulse term), 'peaks' the peak, the sampled maximum over the saved states, "
    "of a peak-reaction term's reaction (null for an impulse term)"
)
"""How `design.json` says what its objective values are."""


def _json_numbers(tree: Any) -> Any:
    """`tree` with every float that is not finite replaced by None (JSON has no
    NaN or infinity)."""
    if isinstance(tree, dict):
        return {key: _json_numbers(value) for key, value in tree.items()}
    if isinstance(tree, list | tuple):
        return [_json_numbers(value) for value in tree]
    if isinstance(tree, float) and not math.isfinite(tree):
        return None
    return tree


def _numpy(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def optimize_design(
    design: Design,
    *,
    steps: int | None = None,
    on_step: Callable[[Step], None] | None = None,
    problem: "DesignProblem | None" = None,
) -> DesignResult:
    """Minimise the design's objective with Optax, gradients through the solve.

    **Arguments:**

    - `design`: from [`load_design`][redundax.optimize.load_design] (or built directly).
    - `steps`: the most iterations (default `design.steps`). Each evaluates J and
      ∇J at one design, the first at x₀, so `steps` iterations make at most
      `steps` − 1 optimiser updates (`steps = 1` evaluates x₀ only).
    - `on_step`: called after every iteration with its [`Step`][redundax.optimize.Step] (progress).
    - `problem`: the [`DesignProblem`][redundax.optimize.DesignProblem] of `design`, to reuse its
      compiled objective (default: a new one).

    **Returns:** a [`DesignResult`][redundax.optimize.DesignResult].

    **Raises:** `ValueError` in one line if the initial design cannot be simulated
    (naming the time at which its motion left its constraints, where it did) or
    is rejected (a gradient that is not finite there, naming the variables, their
    addresses and the design), the optimiser then having no design to step from;
    `redundax.io.ConfigError` naming the objective term whose reaction is zero
    throughout the initial design's manoeuvre (it has no scale to divide by, and
    nothing to minimise).
    """
    problem = DesignProblem(design) if problem is None else problem
    steps = design.steps if steps is None else steps
    labels = [t.label for t in design.objective]
    z = jnp.zeros(len(design.variables))
    start = time.perf_counter()
    # First call: J at x₀ with unit references gives the references themselves.
    (_, first), _ = problem.value_and_grad(z, jnp.ones(len(design.objective)))
    first = _numpy(first)
    if not np.isfinite(first.objective) or not np.all(np.isfinite(first.terms)):
        why = (
            _failure(first)
            if not np.isfinite(first.objective)
            else "the solve gave non-finite reactions"
        )
        raise ValueError(
            f"{_where(design)}: the initial design cannot be simulated over "
            f"{design.simulation.t_final:g} s: {why}"
        )
    zero = [k for k, value in enumerate(first.terms) if not value >= _TINY]
    if zero:
        # Each term is divided by its initial value: a zero one has no scale, and
        # nothing to decrease.
        raise ConfigError(
            "design" if design.path is None else design.path,
            [
                Problem(
                    Where(f"objective[{k}]", "pair"),
                    f"the {labels[k]} is zero throughout the initial design's "
                    f"{design.simulation.t_final:g} s manoeuvre ({first.terms[k]:g}): there is "
                    "nothing to minimise; choose a pair (or component) that carries load",
                )
                for k in zero
            ],
        )
    reference = jnp.asarray(first.terms)
    optimizer = optax.inject_hyperparams(OPTIMIZERS[design.optimizer])(
        learning_rate=design.learning_rate
    )
    state = optimizer.init(z)
    best_z, best_value, best_grad, best_eval = None, math.inf, None, None
    initial_evaluation = first
    history: list[Step] = []
    rejections, stopped = 0, f"{steps} iteration(s) done ({steps - 1} optimiser update(s))"
    lower, upper = jnp.asarray(problem.lower), jnp.asarray(problem.upper)
    for k in range(steps):
        (value, evaluation), grad = problem.value_and_grad(z, reference)
        value, evaluation, grad = float(value), _numpy(evaluation), np.asarray(grad)
        x = problem.x(np.asarray(z))
        rejection = _rejection(design, x, value, evaluation, grad, best_value)
        accepted = not rejection
        lr = float(state.hyperparams["learning_rate"])
        step = Step(
            step=k,
            x=[float(v) for v in x],
            objective=value,
            terms=[float(v) for v in evaluation.terms],
            peaks=[float(v) for v in evaluation.peaks],
            penalty=float(evaluation.penalty),
            min_ratio=float(evaluation.min_ratio),
            gradient_norm=float(np.linalg.norm(grad)) if np.all(np.isfinite(grad)) else math.inf,
            learning_rate=lr,
            accepted=accepted,
            rejection=rejection,
            seconds=time.perf_counter() - start,
        )
        history.append(step)
        if k == 0:
            initial_evaluation = evaluation  # x₀, normalised as every later one
        if on_step is not None:
            on_step(step)
        if accepted:
            previous = best_value
            best_z, best_value, best_grad, best_eval = z, value, jnp.asarray(grad), evaluation
            rejections = 0
            if k > 0 and (previous - value) <= design.tolerance * abs(previous):
                stopped = f"relative decrease below tolerance {design.tolerance:g}"
                break
        elif best_z is None:
            # Nothing accepted yet (the initial design): no design to step back to,
            # and no direction to step in.
            raise ValueError(
                f"{_where(design)}: the initial design was rejected: {rejection}; the "
                "optimiser has no design to step from (start from a design next to it: "
                "the variables' 'initial')"
            )
        else:
            rejections += 1
            if rejections >= design.max_rejections:
                stopped = f"{rejections} rejected steps in a row"
                break
            state.hyperparams["learning_rate"] = jnp.asarray(0.5 * lr)
        if k == steps - 1:
            break
        updates, state = optimizer.update(best_grad, state, best_z)
        z = optax.projections.projection_box(optax.apply_updates(best_z, updates), lower, upper)
    x_final = problem.x(np.asarray(best_z))
    model, s0 = problem.variant(jnp.asarray(x_final))
    q, qd = Projection(iterations=10)(model, s0.q, s0.qd, s0.t)
    report = analyze_solvability(model, q, s0.t)
    violation = float(
        max(
            np.max(np.abs(position_residual(model, q, s0.t)), initial=0.0),
            np.max(np.abs(velocity_residual(model, q, qd, s0.t)), initial=0.0),
        )
    )
    if violation > design.config.consistency_tolerance:
        stopped += (
            f"; warning: the final design's initial state is off its constraints by {violation:.2e}"
        )
    return DesignResult(
        variables=[(v.name, v.unit) for v in design.variables],
        initial=problem.x0.copy(),
        final=np.asarray(x_final),
        history=history,
        initial_evaluation=initial_evaluation,
        final_evaluation=best_eval,
        references=[float(v) for v in first.terms],
        initial_rank=problem.rank,
        final_rank=int(report.rank),
        final_unique={name: bool(u) for name, u in zip(report.names, report.unique, strict=True)},
        stopped=stopped,
        labels=labels,
        quantities=[QUANTITIES[t.kind] for t in design.objective],
    )
