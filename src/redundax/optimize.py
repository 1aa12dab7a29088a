"""Design optimisation with gradients of unique reactions through the Diffrax solve.

A design study changes a few named dimensions of a mechanism (design variables)
to make a functional of its simulated manoeuvre smaller: the peak of a unique
reaction, its impulse. Every evaluation simulates the whole manoeuvre; the
gradient with respect to the design variables comes from reverse-mode autodiff
through the solve ([`redundax.simulate`][], Diffrax's checkpointed adjoint) and
is applied by an Optax optimiser.

**Design variables.** Each variable is one number x that moves several model
parameters together, affinely: every parameter address a (the addresses of
`redundax sweep FILE --list-parameters`, e.g. `pairs.D.point_j.x`) takes the
value a₀ + c_a (x − x₀), a₀ its nominal value, c_a the coefficient the design
file gives, x₀ the variable's initial value. So a left/right pair of joints
moves symmetrically (coefficients ±1), and a link that must keep spanning the
same points follows (e.g. c_x = 4a − b_x: coefficient −½ on each half-link
point). The optimiser works on z = (x − x₀)/s, s the variable's `scale` (a
typical change, in the variable's unit), so one learning rate suits every
variable; bounds are kept by projecting z onto its box after every step
(`optax.projections.projection_box`).

**Objective.** J(x) = Σ_k w_k f_k(x)/f_k(x₀) + penalty, each term normalised by
its initial value: a term is the smooth peak of a unique reaction over the
manoeuvre ([`redundax.peak_reaction`][], a power mean of order p) or the
magnitude of its impulse ([`redundax.reaction_impulse`][]). Only reactions a
rigid model determines can be design objectives; the design file is refused
otherwise (the others depend on the method of handling redundancy, not on the
design). The changed geometry makes the nominal initial state inconsistent: it
is projected onto the constraints first (a fixed number of Gauss–Newton steps,
differentiated too).

**Assemblability.** Near a singular configuration of the linkage (a dead point:
links and arms aligned) the constraint matrix C loses rank and the linkage
cannot be driven through it. The design file can require
σ_r(C)/σ_1(C) ≥ ρ_min at every saved state of the manoeuvre (r the nominal
rank, σ the singular values of C at q(t)): the penalty
weight · mean_t max(0, 1 − ρ(t)/ρ_min)² is added to J. A variant whose
simulation fails (the linkage locks or comes apart) gives a non-finite J and
its step is rejected.

**Steps.** Each iteration evaluates J and ∇J at the current design (one
compiled call). A step that does not decrease J (or gives a non-finite J) is
rejected: the design goes back and the learning rate is halved, so the accepted
objective history is monotone. The optimiser stops after `steps` iterations,
when the relative decrease of J over an accepted step falls below `tolerance`,
or after `max_rejections` rejections in a row.
"""

import argparse
import csv
import dataclasses
import difflib
import io
import json
import math
import sys
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import (
    Projection,
    analyze_solvability,
    peak_reaction,
    position_residual,
    reaction_impulse,
    simulate,
    velocity_residual,
)
from ._design import _first_moving_body
from ._diagnostics import _sigmas
from .io.config import Config, ConfigError, SimulationOptions, load_config
from .io.results import _atomic
from .sweep import Target, apply_parameters, parameter_targets, unknown_parameter

FORMAT = "redundax design 1"
"""The `format` entry of `design.json`."""

OBJECTIVES = ("peak-reaction", "reaction-impulse")
"""The kinds of objective term."""

OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd, "adabelief": optax.adabelief}
"""Optax optimisers by the name a design file gives."""

_DESIGN_KEYS = (
    "mechanism", "optimizer", "learning_rate", "steps", "tolerance", "max_rejections",
    "t_final", "n_save", "rtol", "atol", "variables", "objective", "assembly",
)  # fmt: skip
_VARIABLE_KEYS = ("name", "unit", "addresses", "initial", "lower", "upper", "scale")
_TERM_KEYS = ("type", "pair", "component", "order", "weight")
_ASSEMBLY_KEYS = ("min_singular_ratio", "weight")


# -------------------------------------------------------------------------- the file
@dataclasses.dataclass(frozen=True)
class Variable:
    """One design variable.

    **Attributes:**

    - `name`, `unit`: how it is reported.
    - `addresses`: (parameter address, coefficient) pairs: the parameter becomes
      nominal + coefficient · (x − `initial`).
    - `initial`: x₀ (default: the first address's nominal value divided by its
      coefficient).
    - `lower`, `upper`: bounds on x (±inf when absent).
    - `scale`: a typical change of x, the unit of the optimiser's step.
    """

    name: str
    unit: str
    addresses: tuple[tuple[str, float], ...]
    initial: float
    lower: float
    upper: float
    scale: float


@dataclasses.dataclass(frozen=True)
class Term:
    """One term of the objective: `kind` (one of [`OBJECTIVES`][]) of the reaction
    of `pair` (or of its `component`), weight `weight`; `order` is the power-mean
    order of a peak."""

    kind: str
    pair: str
    component: str | None = None
    order: float = 16.0
    weight: float = 1.0

    @property
    def label(self) -> str:
        what = self.pair if self.component is None else f"{self.pair} ({self.component})"
        return f"{self.kind} {what}"


@dataclasses.dataclass(frozen=True)
class Assembly:
    """Keep σ_r(C)/σ_1(C) ≥ `min_singular_ratio` along the manoeuvre, by a penalty
    of weight `weight` (see the module docstring)."""

    min_singular_ratio: float
    weight: float = 10.0


@dataclasses.dataclass(frozen=True, eq=False)
class Design:
    """A checked design file: the mechanism, what may change, what to minimise.

    **Attributes:**

    - `config`: the mechanism's [`Config`][] (its `[simulation]` options, with the
      design file's `t_final`, `n_save`, `rtol`, `atol` where given).
    - `variables`, `objective`, `assembly`: as above.
    - `optimizer`, `learning_rate`, `steps`, `tolerance`, `max_rejections`: the
      Optax optimiser by name and the stopping rules.
    - `path`: the design file.
    """

    config: Config
    variables: tuple[Variable, ...]
    objective: tuple[Term, ...]
    assembly: Assembly | None
    optimizer: str = "adam"
    learning_rate: float = 0.1
    steps: int = 20
    tolerance: float = 1e-4
    max_rejections: int = 4
    path: Path | None = None

    @property
    def simulation(self) -> SimulationOptions:
        return self.config.simulation


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unknown_keys(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> list[str]:
    out = []
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            out.append(f"{where}: unknown key {key!r} ({hint}allowed: {', '.join(allowed)})")
    return out


def _read_table(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise ConfigError(path, ["is a directory, not a design file"]) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(path, [f"TOML syntax error: {err}"]) from None
    problems = _unknown_keys(document, ("optimize",), "top level")
    table = document.get("optimize")
    if not isinstance(table, dict):
        problems.append(
            "top level: no [optimize] table; a design file names its mechanism with "
            '[optimize] mechanism = "FILE.toml" (configs/README.md, Design optimisation)'
        )
    if problems:
        raise ConfigError(path, problems)
    return table


def _variable(
    entry: Any, where: str, known: Mapping[str, Target], problems: list[str]
) -> Variable | None:
    if not isinstance(entry, dict):
        problems.append(f"{where}: expected a table, written [[optimize.variables]]")
        return None
    problems += _unknown_keys(entry, _VARIABLE_KEYS, where)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        problems.append(f"{where}: missing key 'name' (how the variable is reported)")
        return None
    where = f"{where} ({name!r})"
    addresses = entry.get("addresses")
    if not isinstance(addresses, dict) or not addresses:
        problems.append(
            f"{where} key 'addresses': expected a table of parameter address = coefficient, "
            'e.g. addresses = { "pairs.D.point_j.x" = -1.0, "pairs.E.point_j.x" = 1.0 }'
        )
        return None
    pairs = []
    for address, coefficient in addresses.items():
        if address not in known:
            problems.append(f"{where} key 'addresses': " + unknown_parameter(address, list(known)))
        elif not _is_number(coefficient) or coefficient == 0:
            problems.append(
                f"{where} key 'addresses': the coefficient of {address!r} must be a non-zero "
                f"number, got {coefficient!r}"
            )
        elif known[address].leaf == ("initial",):
            problems.append(f"{where} key 'addresses': {address!r} is not a design parameter")
        else:
            pairs.append((address, float(coefficient)))
    if len(pairs) != len(addresses):
        return None
    first, c0 = pairs[0]
    initial = entry.get("initial", known[first].nominal / c0)
    for key in ("initial", "lower", "upper", "scale"):
        value = entry.get(key)
        if value is not None and not _is_number(value):
            problems.append(f"{where} key {key!r}: expected a number, got {value!r}")
            return None
    lower = float(entry.get("lower", -math.inf))
    upper = float(entry.get("upper", math.inf))
    initial = float(initial)
    if not lower <= initial <= upper:
        problems.append(
            f"{where}: the initial value {initial:g} is outside [lower, upper] = "
            f"[{lower:g}, {upper:g}]"
        )
    scale = entry.get("scale")
    if scale is None:
        scale = 0.1 * abs(initial) if initial != 0 else 1.0
    if not float(scale) > 0:
        problems.append(f"{where} key 'scale': expected a positive number, got {scale!r}")
    unit = entry.get("unit", known[first].unit)
    return Variable(name, str(unit), tuple(pairs), initial, lower, upper, float(scale))


def _term(entry: Any, where: str, config: Config, problems: list[str]) -> Term | None:
    if not isinstance(entry, dict):
        problems.append(f"{where}: expected a table, written [[optimize.objective]]")
        return None
    problems += _unknown_keys(entry, _TERM_KEYS, where)
    kind = entry.get("type")
    if kind not in OBJECTIVES:
        problems.append(
            f"{where} key 'type': expected one of {', '.join(map(repr, OBJECTIVES))}, got {kind!r}"
        )
        return None
    pair = entry.get("pair")
    names = [p.name for p in config.model.pairs]
    if pair not in names:
        close = difflib.get_close_matches(str(pair), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(
            f"{where} key 'pair': no pair named {pair!r}{hint}; pairs: {', '.join(names)}"
        )
        return None
    component = entry.get("component")
    labels = config.model.pair(pair).components
    if component is not None and component not in labels:
        problems.append(
            f"{where} key 'component': pair {pair!r} has no component {component!r}; "
            f"its components: {', '.join(map(repr, labels)) or '(none)'}"
        )
        return None
    order, weight = entry.get("order", 16.0), entry.get("weight", 1.0)
    if not (_is_number(order) and order >= 2):
        problems.append(f"{where} key 'order': expected a number ≥ 2, got {order!r}")
        return None
    if not (_is_number(weight) and weight > 0):
        problems.append(f"{where} key 'weight': expected a positive number, got {weight!r}")
        return None
    return Term(kind, pair, component, float(order), float(weight))


def _not_unique(config: Config, terms: Sequence[Term]) -> list[str]:
    """Objective terms whose reaction a rigid model does not determine."""
    report = analyze_solvability(config.model, config.state.q, config.state.t)
    out = []
    for k, term in enumerate(terms):
        pair = config.model.pair(term.pair)
        if term.component is None:
            unique = bool(report.unique[report.names.index(term.pair)])
        else:
            row = pair.rows[pair.components.index(term.component)]
            unique = bool(report.row_unique[row])
        if not unique:
            parts = [
                lab
                for lab, r in zip(pair.components, pair.rows, strict=False)
                if report.row_unique[r]
            ]
            hint = (
                f"; its unique components: {', '.join(map(repr, parts))}"
                if parts
                else "; choose a pair the analysis reports unique"
            )
            out.append(
                f"objective[{k}] key 'pair': the reaction of {term.label.split(' ', 1)[1]} is "
                f"not unique (degree of redundancy {report.redundancy}): a rigid model does "
                f"not determine it, so no design can be judged by it{hint} "
                "(`redundax analyze` lists them)"
            )
    return out


def load_design(path: str | Path) -> Design:
    """Read and check a design file (format: configs/README.md, Design optimisation).

    **Returns:** a [`Design`][].

    **Raises:** `redundax.io.ConfigError` (a `ValueError`) listing every problem of
    the design file, each naming its table and key (an unknown parameter address
    with the closest known ones, a pair that is not unique), or those of the
    mechanism file it names.
    """
    path = Path(path)
    table = _read_table(path)
    problems = _unknown_keys(table, _DESIGN_KEYS, "optimize")
    mechanism = table.get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(
            path, [*problems, "optimize: missing key 'mechanism' (the mechanism's TOML file)"]
        )
    config = load_config(path.parent / mechanism)
    known = parameter_targets(config.model, config.state)

    def number(key, default, ok, expected):
        value = table.get(key, default)
        if not (_is_number(value) and ok(value)):
            problems.append(f"optimize key {key!r}: expected {expected}, got {value!r}")
            return default
        return value

    optimizer = table.get("optimizer", "adam")
    if optimizer not in OPTIMIZERS:
        problems.append(
            f"optimize key 'optimizer': expected one of {', '.join(map(repr, OPTIMIZERS))}, "
            f"got {optimizer!r}"
        )
    learning_rate = number("learning_rate", 0.1, lambda v: v > 0, "a positive number")
    steps = number("steps", 20, lambda v: isinstance(v, int) and v >= 1, "a positive integer")
    tolerance = number("tolerance", 1e-4, lambda v: v >= 0, "a number ≥ 0")
    rejections = number(
        "max_rejections", 4, lambda v: isinstance(v, int) and v >= 1, "a positive integer"
    )
    sim = {}
    for key, ok, expected in (
        ("t_final", lambda v: v > 0, "a positive number [s]"),
        ("n_save", lambda v: isinstance(v, int) and v >= 2, "an integer ≥ 2"),
        ("rtol", lambda v: v > 0, "a positive number"),
        ("atol", lambda v: v > 0, "a positive number"),
    ):
        if key in table:
            sim[key] = number(key, None, ok, expected)
    variables = table.get("variables")
    if not isinstance(variables, list) or not variables:
        problems.append(
            "optimize: no design variables; add [[optimize.variables]] entries "
            "(name, addresses, and optionally initial, lower, upper, scale)"
        )
        variables = []
    parsed_variables = [
        _variable(e, f"variables[{k}]", known, problems) for k, e in enumerate(variables)
    ]
    names = [v.name for v in parsed_variables if v is not None]
    problems += [
        f"variables: the name {n!r} is used twice"
        for n in sorted({n for n in names if names.count(n) > 1})
    ]
    terms = table.get("objective")
    if not isinstance(terms, list) or not terms:
        problems.append(
            "optimize: no objective; add [[optimize.objective]] entries "
            '(type = "peak-reaction" or "reaction-impulse", pair, and optionally '
            "component, order, weight)"
        )
        terms = []
    parsed_terms = [_term(e, f"objective[{k}]", config, problems) for k, e in enumerate(terms)]
    assembly = None
    if "assembly" in table:
        entry = table["assembly"]
        if not isinstance(entry, dict):
            problems.append("optimize key 'assembly': expected a table [optimize.assembly]")
        else:
            problems += _unknown_keys(entry, _ASSEMBLY_KEYS, "assembly")
            ratio, weight = entry.get("min_singular_ratio"), entry.get("weight", 10.0)
            if not (_is_number(ratio) and 0 < ratio < 1):
                problems.append(
                    f"assembly key 'min_singular_ratio': expected a number in (0, 1), got {ratio!r}"
                )
            elif not (_is_number(weight) and weight > 0):
                problems.append(
                    f"assembly key 'weight': expected a positive number, got {weight!r}"
                )
            else:
                assembly = Assembly(float(ratio), float(weight))
    if problems:
        raise ConfigError(path, problems)
    terms_ok = tuple(t for t in parsed_terms if t is not None)
    problems += _not_unique(config, terms_ok)
    if problems:
        raise ConfigError(path, problems)
    options = dataclasses.replace(
        config.simulation,
        **{k: (int(v) if k == "n_save" else float(v)) for k, v in sim.items()},
        initial_projection=Projection(),
    )
    config = dataclasses.replace(config, simulation=options)
    return Design(
        config=config,
        variables=tuple(v for v in parsed_variables if v is not None),
        objective=terms_ok,
        assembly=assembly,
        optimizer=optimizer,
        learning_rate=float(learning_rate),
        steps=int(steps),
        tolerance=float(tolerance),
        max_rejections=int(rejections),
        path=path,
    )


# ---------------------------------------------------------------------- evaluation
class Evaluation(eqx.Module):
    """What one evaluation of a design gives (arrays; batched over nothing).

    - `objective`: J (normalised terms plus penalty); `penalty`: its assembly part.
    - `terms`: each term's value in physical units [N, N m, N s] (the smooth peak
      for a peak term), shape `(K,)`; `peaks`: the sampled maximum of each term's
      magnitude, `(K,)`.
    - `magnitude`: each term's reaction magnitude at every saved time, `(K, T)`.
    - `ts`: the saved times; `min_ratio`: the smallest σ_r/σ_1 of C along the
      manoeuvre; `initial_correction`: how far the initial state was projected.
    """

    objective: Any
    penalty: Any
    terms: Any
    peaks: Any
    magnitude: Any
    ts: Any
    min_ratio: Any
    initial_correction: Any


class DesignProblem:
    """The objective of a [`Design`][] as a function of the scaled variables z,
    with its gradient from one compiled call.

    **Arguments:**

    - `design`: the checked design.

    `x(z)` maps scaled variables to physical ones; `variant(x)` gives the
    (model, initial state) of a design; `value_and_grad(z)` returns
    (J, [`Evaluation`][]) and ∇J; `value(z, reference)` the same without the
    gradient (the forward simulation only; `reference` holds the terms' values at
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
        self.lower = (np.array([v.lower for v in design.variables]) - self.x0) / self.scale
        self.upper = (np.array([v.upper for v in design.variables]) - self.x0) / self.scale
        report = analyze_solvability(self.model, self.state.q, self.state.t)
        self.rank = int(report.rank)
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
            method=options.method,
            solver=options.solver,
            rtol=options.rtol,
            atol=options.atol,
            stabilisation=options.stabilisation,
            projection=options.projection,
            initial_projection=options.initial_projection,
            n_save=options.n_save,
            max_steps=options.max_steps,
            throw=False,
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
                    stabilisation=options.stabilisation,
                    rank=self.rank,
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
                    stabilisation=options.stabilisation,
                    rank=self.rank,
                )
                if term.component is None:
                    body = _first_moving_body(model, term.pair)
                    vector = impulse.wrench[body, : model.dim]
                else:
                    vector = impulse.components
                value = jnp.sqrt(jnp.sum(vector**2))
                values.append(value)
                peaks.append(value)
                magnitudes.append(jnp.zeros_like(trajectory.ts))
        values = jnp.stack(values)
        weights = jnp.asarray([t.weight for t in design.objective])
        objective = jnp.sum(weights * values / reference)
        sigma = _sigmas(model, trajectory.ts, trajectory.q)
        ratio = sigma[:, self.rank - 1] / sigma[:, 0]
        penalty = jnp.zeros(())
        if design.assembly is not None:
            shortfall = jnp.maximum(0.0, 1.0 - ratio / design.assembly.min_singular_ratio)
            penalty = design.assembly.weight * jnp.mean(shortfall**2)
        ok = trajectory.result == diffrax.RESULTS.successful
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
        )


# ---------------------------------------------------------------------- optimiser
@dataclasses.dataclass
class Step:
    """One iteration: the design evaluated, its objective, whether it was accepted."""

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
    seconds: float


@dataclasses.dataclass
class DesignResult:
    """The outcome of [`optimize_design`][].

    **Attributes:**

    - `variables`: the variables' names and units; `initial`, `final`: x₀ and the
      best design found.
    - `history`: every [`Step`][], accepted or not (the accepted objectives
      decrease monotonically).
    - `initial_evaluation`, `final_evaluation`: the [`Evaluation`][] of x₀ and of
      the final design (NumPy arrays).
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

    @property
    def accepted(self) -> list[Step]:
        return [s for s in self.history if s.accepted]

    @property
    def decrease(self) -> float:
        """Relative decrease of J from the initial to the final design."""
        first, last = self.accepted[0].objective, self.accepted[-1].objective
        return (first - last) / first

    def to_dict(self) -> dict[str, Any]:
        def ev(e: Evaluation) -> dict[str, Any]:
            return {
                "objective": float(e.objective),
                "terms": [float(v) for v in e.terms],
                "peaks": [float(v) for v in e.peaks],
                "penalty": float(e.penalty),
                "min_singular_ratio": float(e.min_ratio),
            }

        return {
            "format": FORMAT,
            "variables": [
                {"name": n, "unit": u, "initial": float(a), "final": float(b)}
                for (n, u), a, b in zip(self.variables, self.initial, self.final, strict=True)
            ],
            "objective_terms": self.labels,
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

    - `design`: from [`load_design`][] (or built directly).
    - `steps`: the most iterations (default `design.steps`).
    - `on_step`: called after every iteration with its [`Step`][] (progress).
    - `problem`: the [`DesignProblem`][] of `design`, to reuse its compiled
      objective (default: a new one).

    **Returns:** a [`DesignResult`][].

    **Raises:** `ValueError` if the initial design cannot be simulated.
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
        raise ValueError(
            f"{design.path}: the initial design cannot be simulated over "
            f"{design.simulation.t_final:g} s (the solve failed or gave non-finite reactions)"
        )
    reference = jnp.asarray(np.where(first.terms > 0, first.terms, 1.0))
    optimizer = optax.inject_hyperparams(OPTIMIZERS[design.optimizer])(
        learning_rate=design.learning_rate
    )
    state = optimizer.init(z)
    best_z, best_value, best_grad, best_eval = None, math.inf, None, None
    history: list[Step] = []
    rejections, stopped = 0, f"{steps} steps done"
    lower, upper = jnp.asarray(problem.lower), jnp.asarray(problem.upper)
    for k in range(steps):
        (value, evaluation), grad = problem.value_and_grad(z, reference)
        value, evaluation, grad = float(value), _numpy(evaluation), np.asarray(grad)
        accepted = bool(np.isfinite(value) and np.all(np.isfinite(grad)) and value < best_value)
        lr = float(state.hyperparams["learning_rate"])
        step = Step(
            step=k,
            x=[float(v) for v in problem.x(np.asarray(z))],
            objective=value,
            terms=[float(v) for v in evaluation.terms],
            peaks=[float(v) for v in evaluation.peaks],
            penalty=float(evaluation.penalty),
            min_ratio=float(evaluation.min_ratio),
            gradient_norm=float(np.linalg.norm(grad)) if np.all(np.isfinite(grad)) else math.inf,
            learning_rate=lr,
            accepted=accepted,
            seconds=time.perf_counter() - start,
        )
        history.append(step)
        if on_step is not None:
            on_step(step)
        if accepted:
            previous = best_value
            best_z, best_value, best_grad, best_eval = z, value, jnp.asarray(grad), evaluation
            rejections = 0
            if k > 0 and (previous - value) <= design.tolerance * abs(previous):
                stopped = f"relative decrease below tolerance {design.tolerance:g}"
                break
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
        initial_evaluation=first,
        final_evaluation=best_eval,
        initial_rank=problem.rank,
        final_rank=int(report.rank),
        final_unique={name: bool(u) for name, u in zip(report.names, report.unique, strict=True)},
        stopped=stopped,
        labels=labels,
    )


# ------------------------------------------------------------------------- output
def _figure(result: DesignResult):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    accepted = result.accepted
    n_terms = len(result.labels)
    fig, axes = plt.subplots(1, 1 + n_terms, figsize=(5.0 * (1 + n_terms), 3.8))
    axes = np.atleast_1d(axes)
    ax = axes[0]
    ax.plot([s.step for s in accepted], [s.objective for s in accepted], "o-", color="C0")
    rejected = [s for s in result.history if not s.accepted and np.isfinite(s.objective)]
    if rejected:
        ax.plot(
            [s.step for s in rejected],
            [s.objective for s in rejected],
            "x",
            color="C3",
            label="rejected step",
        )
        ax.legend()
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective J (1 at the initial design)")
    ax.set_title(f"objective: −{100 * result.decrease:.1f} %")
    ax.grid(alpha=0.3)
    for k, label in enumerate(result.labels):
        ax = axes[1 + k]
        for evaluation, name, style in (
            (result.initial_evaluation, "initial design", "--"),
            (result.final_evaluation, "optimised design", "-"),
        ):
            ax.plot(
                evaluation.ts,
                evaluation.magnitude[k],
                style,
                label=f"{name}: peak {evaluation.peaks[k]:.4g}",
            )
        ax.set_xlabel("t [s]")
        ax.set_ylabel("reaction magnitude [N or N m]")
        ax.set_title(label)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _history_csv(result: DesignResult) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    names = [n for n, _ in result.variables]
    writer.writerow(
        ["step", *names, "objective", *result.labels, "penalty", "min_singular_ratio",
         "gradient_norm", "learning_rate", "accepted", "seconds"]
    )  # fmt: skip
    for s in result.history:
        writer.writerow(
            [s.step, *map(repr, s.x), repr(s.objective), *map(repr, s.terms), repr(s.penalty),
             repr(s.min_ratio), repr(s.gradient_norm), repr(s.learning_rate), s.accepted,
             f"{s.seconds:.3f}"]
        )  # fmt: skip
    return buffer.getvalue()


OUTPUTS = ("design.json", "history.csv", "design.png")
"""The files `redundax optimize` writes into its output folder."""


def write_result(result: DesignResult, out: str | Path, force: bool = False) -> list[Path]:
    """Write `design.json`, `history.csv` and `design.png` (objective history and
    the reactions before/after) into the folder `out`, atomically.

    **Raises:** `FileExistsError` naming the first existing file unless `force`.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder")
    paths = [out / name for name in OUTPUTS]
    if not force:
        for path in paths:
            if path.exists():
                raise FileExistsError(f"{path}: already exists; pass --force to overwrite it")
    out.mkdir(parents=True, exist_ok=True)
    with _atomic(paths[0], force, text=True) as file:
        json.dump(result.to_dict(), file, indent=2)
        file.write("\n")
    with _atomic(paths[1], force, text=True) as file:
        file.write(_history_csv(result))
    fig = _figure(result)
    with _atomic(paths[2], force, text=False) as file:
        fig.savefig(file, format="png", dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return paths


# ------------------------------------------------------------------- command line
SUMMARY = "design optimisation (Optax) of a unique reaction over a simulated manoeuvre"
DESCRIPTION = (
    "Change the design variables of the design file DESIGN (an [optimize] table naming "
    "the mechanism's configuration, the variables as affine combinations of parameter "
    "addresses, the objective terms and an assemblability requirement; see "
    "configs/README.md, Design optimisation) to minimise the peak (or impulse) of unique "
    "reactions over the simulated manoeuvre. Each iteration simulates the manoeuvre and "
    "takes the gradient through the solve; a step that does not decrease the objective "
    "is rejected and the learning rate halved. Writes OUT/design.json (variables before "
    "and after, objective history, the final design's rank), OUT/history.csv and "
    "OUT/design.png (objective history, reactions before and after). Exit status: 0 on "
    "success, 2 on invalid input, 1 if the initial design cannot be simulated."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax optimize`."""
    parser.add_argument(
        "design",
        metavar="DESIGN",
        help="a design file (TOML), e.g. configs/design_mobile_robot.toml",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output folder (created if absent)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        metavar="N",
        help="the most iterations (default: the file's)",
    )
    parser.add_argument(
        "--t-final", type=float, default=None, metavar="T", help="end time of the manoeuvre in s"
    )
    parser.add_argument("--force", action="store_true", help="overwrite the files in DIR")
    parser.add_argument("--json", action="store_true", help="print design.json on stdout")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _printer(design: Design, steps: int, quiet: bool) -> Callable[[Step], None] | None:
    if quiet:
        return None
    names = [v.name for v in design.variables]

    def show(step: Step) -> None:
        mark = "" if step.accepted else "  (rejected: no decrease; learning rate halved)"
        xs = ", ".join(f"{n} = {x:.6g}" for n, x in zip(names, step.x, strict=True))
        print(
            f"redundax: optimize step {step.step + 1}/{steps}: J = {step.objective:.6g} "
            f"[{xs}] {step.seconds:.0f} s{mark}",
            file=sys.stderr,
            flush=True,
        )

    return show


def run(args: argparse.Namespace) -> int:
    """`redundax optimize DESIGN --out DIR`."""
    design = load_design(args.design)
    if args.steps is not None:
        if args.steps < 1:
            raise ValueError(f"--steps: expected a positive integer, got {args.steps}")
        design = dataclasses.replace(design, steps=args.steps)
    if args.t_final is not None:
        if not args.t_final > 0:
            raise ValueError(f"--t-final: expected a positive time in s, got {args.t_final}")
        options = dataclasses.replace(design.simulation, t_final=args.t_final)
        design = dataclasses.replace(
            design, config=dataclasses.replace(design.config, simulation=options)
        )
    out = Path(args.out)
    if not args.force:
        for name in OUTPUTS:
            if (out / name).exists():
                raise FileExistsError(f"{out / name}: already exists; pass --force to overwrite it")
    if not args.quiet:
        print(
            f"redundax: optimizing {design.config.name}: {len(design.variables)} variable(s), "
            f"{design.steps} step(s), each a {design.simulation.t_final:g} s simulation and its "
            "gradient (the first compiles, about a minute)...",
            file=sys.stderr,
            flush=True,
        )
    try:
        result = optimize_design(design, on_step=_printer(design, design.steps, args.quiet))
    except ValueError as err:
        print(f"redundax: error: {err}", file=sys.stderr)
        return 1
    paths = write_result(result, out, force=args.force)
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    print(f"design study {design.path} ({design.config.name}):")
    for (name, unit), a, b in zip(result.variables, result.initial, result.final, strict=True):
        print(f"  {name:<12} {a:12.6g} -> {b:12.6g} {unit}")
    for k, label in enumerate(result.labels):
        before, after = result.initial_evaluation.peaks[k], result.final_evaluation.peaks[k]
        print(f"  {label}: peak {before:.6g} -> {after:.6g} ({100 * (after / before - 1):+.1f} %)")
    print(
        f"  objective {result.accepted[0].objective:.6g} -> {result.accepted[-1].objective:.6g} "
        f"(−{100 * result.decrease:.1f} %), {len(result.accepted)} accepted of "
        f"{len(result.history)} steps; stopped: {result.stopped}"
    )
    same = "same rank" if result.initial_rank == result.final_rank else "RANK CHANGED"
    print(f"  rank of C: {result.initial_rank} -> {result.final_rank} ({same})")
    print("  written: " + ", ".join(str(p) for p in paths))
    return 0
