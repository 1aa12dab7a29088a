"""The design file: variables, objective terms, assemblability, `load_design`.

Part of [`redundax.optimize`][], whose docstring describes the whole.
"""

import dataclasses
import difflib
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import diffrax

from .. import decide
from .._options import PROJECTED_TOL, ProjectInitial, SaveAt
from .._parameters import Target
from ..drift import Projection
from ..io._checks import (
    MAX_SAVED_STATES,
    is_number,
    read_table,
    referenced_file,
    unknown_keys,
)
from ..io._errors import Problem, Where
from ..io.config import Config, ConfigError, SimulationOptions, load_config
from ..sweep._file import swept_addresses, unknown_address
from ._constants import (
    _ASSEMBLY_KEYS,
    _DESIGN_KEYS,
    _TERM_KEYS,
    _VARIABLE_KEYS,
    OBJECTIVES,
    OPTIMIZERS,
)

_TINY = sys.float_info.min
"""The smallest normal float64 (2.2e-308). A coefficient, scale or weight below it
is subnormal: it carries fewer digits, and its reciprocal (the optimiser works on
(x − x₀)/scale) overflows."""


def _normal(value: Any, nonzero: bool = False) -> bool:
    """A finite number that is zero (unless `nonzero`) or a normal float64."""
    if not is_number(value) or not math.isfinite(value):
        return False
    return abs(value) >= _TINY or (value == 0 and not nonzero)


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
    """One term of the objective: `kind` (one of `OBJECTIVES`) of the reaction
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

    - `config`: the mechanism's [`Config`][redundax.io.Config] (its `[simulation]` options, with the
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


def _read_table(path: Path) -> dict[str, Any]:
    return read_table(
        path,
        "optimize",
        'a design file names its mechanism with [optimize] mechanism = "FILE.toml" '
        "(configs/README.md, Design optimisation)",
        "a design file",
    )


def _variable(
    entry: Any, where: str, known: Mapping[str, Target], config: Config, problems: list[str]
) -> Variable | None:
    if not isinstance(entry, dict):
        problems.append(Problem(where, "expected a table, written [[optimize.variables]]"))
        return None
    problems += unknown_keys(entry, _VARIABLE_KEYS, where)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        problems.append(Problem(where, "missing key 'name' (how the variable is reported)"))
        return None
    where = f"{where} ({name!r})"
    addresses = entry.get("addresses")
    if not isinstance(addresses, dict) or not addresses:
        problems.append(
            Problem(
                Where(where, "addresses"),
                "expected a table of parameter address = coefficient, "
                'e.g. addresses = { "pairs.D.point_j.x" = -1.0, "pairs.E.point_j.x" = 1.0 }',
            )
        )
        return None
    pairs = []
    for address, coefficient in addresses.items():
        if address not in known:
            problems.append(
                Problem(
                    Where(where, "addresses"),
                    unknown_address(address, config.model, config.state, list(known)),
                )
            )
        elif not _normal(coefficient, nonzero=True):
            problems.append(
                Problem(
                    Where(where, "addresses").entry(address),
                    f"the coefficient must be a finite non-zero number of at least "
                    f"{_TINY:.3g} in magnitude, got {coefficient!r}",
                )
            )
        elif known[address].leaf == ("initial",):
            problems.append(
                Problem(Where(where, "addresses"), f"{address!r} is not a design parameter")
            )
        else:
            pairs.append((address, float(coefficient)))
    if len(pairs) != len(addresses):
        return None
    first, c0 = pairs[0]
    for key in ("initial", "lower", "upper", "scale"):
        value = entry.get(key)
        if value is not None and not is_number(value):
            problems.append(Problem(Where(where, key), f"expected a number, got {value!r}"))
            return None
        if value is not None and math.isnan(value):
            problems.append(Problem(Where(where, key), f"expected a number, got {value!r}"))
            return None
        if key in ("initial", "scale") and value is not None and not math.isfinite(value):
            problems.append(Problem(Where(where, key), f"must be finite, got {value!r}"))
            return None
    initial = float(entry.get("initial", known[first].nominal / c0))
    if not math.isfinite(initial):
        problems.append(
            Problem(
                Where(where, "initial"),
                f"the default, {known[first].nominal:g} / {c0:g} (the nominal value of "
                f"{first!r} over its coefficient), is not finite; give 'initial'",
            )
        )
        return None
    lower = float(entry.get("lower", -math.inf))
    upper = float(entry.get("upper", math.inf))
    if not lower <= initial <= upper:
        problems.append(
            Problem(
                where,
                f"the initial value {initial:g} is outside [lower, upper] = [{lower:g}, {upper:g}]",
            )
        )
    scale = entry.get("scale")
    default = "" if scale is not None else " (the default, 10 % of |initial|)"
    if scale is None:
        scale = 0.1 * abs(initial) if initial != 0 else 1.0
    if not (_normal(scale) and scale > 0):
        problems.append(
            Problem(
                Where(where, "scale"),
                f"expected a positive number of at least {_TINY:.3g}, got {scale!r}{default}",
            )
        )
    unit = entry.get("unit", known[first].unit)
    return Variable(name, str(unit), tuple(pairs), initial, lower, upper, float(scale))


def _term(entry: Any, where: str, config: Config, problems: list[str]) -> Term | None:
    if not isinstance(entry, dict):
        problems.append(Problem(where, "expected a table, written [[optimize.objective]]"))
        return None
    problems += unknown_keys(entry, _TERM_KEYS, where)
    kind = entry.get("type")
    if kind not in OBJECTIVES:
        problems.append(
            Problem(
                Where(where, "type"),
                f"expected one of {', '.join(map(repr, OBJECTIVES))}, got {kind!r}",
            )
        )
        return None
    pair = entry.get("pair")
    names = [p.name for p in config.model.pairs]
    if pair not in names:
        close = difflib.get_close_matches(str(pair), names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(
            Problem(
                Where(where, "pair"), f"no pair named {pair!r}{hint}; pairs: {', '.join(names)}"
            )
        )
        return None
    component = entry.get("component")
    labels = config.model.pair(pair).components
    if component is not None and component not in labels:
        problems.append(
            Problem(
                Where(where, "component"),
                f"pair {pair!r} has no component {component!r}; "
                f"its components: {', '.join(map(repr, labels)) or '(none)'}",
            )
        )
        return None
    order, weight = entry.get("order", 16.0), entry.get("weight", 1.0)
    if not (_normal(order) and order >= 2):
        problems.append(
            Problem(Where(where, "order"), f"expected a finite number ≥ 2, got {order!r}")
        )
        return None
    if not (_normal(weight) and weight > 0):
        problems.append(
            Problem(
                Where(where, "weight"),
                f"expected a finite positive number of at least {_TINY:.3g}, got {weight!r}",
            )
        )
        return None
    return Term(kind, pair, component, float(order), float(weight))


def _not_unique(config: Config, terms: Sequence[Term]) -> list[str]:
    """Objective terms whose reaction a rigid model does not determine along the
    motion: the verdicts a run claims (`Structure.stable_unique` /
    `stable_row_unique`: unique at the initial configuration and at a generic one
    next to it), the ones the evaluation of the objective reads."""
    report = decide(config.model, config.state.q, config.state.t)
    unique_pairs, unique_rows = report.stable_unique, report.stable_row_unique
    out = []
    for k, term in enumerate(terms):
        pair = config.model.pair(term.pair)
        if term.component is None:
            unique = bool(unique_pairs[report.names.index(term.pair)])
        else:
            row = pair.rows[pair.components.index(term.component)]
            unique = bool(unique_rows[row])
        if not unique:
            parts = [
                lab for lab, r in zip(pair.components, pair.rows, strict=False) if unique_rows[r]
            ]
            hint = (
                f"; its unique components: {', '.join(map(repr, parts))}"
                if parts
                else "; choose a pair that a run reports unique"
            )
            out.append(
                Problem(
                    Where(f"objective[{k}]", "pair"),
                    f"the reaction of {term.label.split(' ', 1)[1]} is not unique (degree of "
                    f"redundancy {report.redundancy}): a rigid model does not determine it, so "
                    f"no design can be judged by it{hint} (`redundax simulate --json` lists "
                    "the verdicts a run claims: unique at the initial configuration and next "
                    "to it)",
                )
            )
    return out


def load_design(path: str | Path) -> Design:
    """Read and check a design file (format: configs/README.md, Design optimisation).

    **Returns:** a [`Design`][redundax.optimize.Design].

    **Raises:** `redundax.io.ConfigError` (a `ValueError`) listing every problem of
    the design file, each naming its table and key (an unknown parameter address
    with the closest known ones, a pair that is not unique), or those of the
    mechanism file it names.
    """
    path = Path(path)
    table = _read_table(path)
    problems = unknown_keys(table, _DESIGN_KEYS, "optimize")
    mechanism = table.get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(
            path,
            [*problems, Problem("optimize", "missing key 'mechanism' (the mechanism's TOML file)")],
        )
    config = load_config(referenced_file(path, "optimize", mechanism))
    known = swept_addresses(config.model, config.state)

    def number(key, default, ok, expected):
        value = table.get(key, default)
        if is_number(value) and not math.isfinite(value):
            problems.append(Problem(Where("optimize", key), f"must be finite, got {value!r}"))
            return default
        if not (is_number(value) and ok(value)):
            problems.append(Problem(Where("optimize", key), f"expected {expected}, got {value!r}"))
            return default
        return value

    optimizer = table.get("optimizer", "adam")
    if optimizer not in OPTIMIZERS:
        problems.append(
            Problem(
                Where("optimize", "optimizer"),
                f"expected one of {', '.join(map(repr, OPTIMIZERS))}, got {optimizer!r}",
            )
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
        (
            "n_save",
            lambda v: isinstance(v, int) and 2 <= v <= MAX_SAVED_STATES,
            f"an integer from 2 to {MAX_SAVED_STATES:,}",
        ),
        ("rtol", lambda v: v > 0, "a positive number"),
        ("atol", lambda v: v > 0, "a positive number"),
    ):
        if key in table:
            sim[key] = number(key, None, ok, expected)
    variables = table.get("variables")
    if not isinstance(variables, list) or not variables:
        problems.append(
            Problem(
                "optimize",
                "no design variables; add [[optimize.variables]] entries "
                "(name, addresses, and optionally initial, lower, upper, scale)",
            )
        )
        variables = []
    parsed_variables = [
        _variable(e, f"variables[{k}]", known, config, problems) for k, e in enumerate(variables)
    ]
    names = [v.name for v in parsed_variables if v is not None]
    problems += [
        Problem("variables", f"the name {n!r} is used twice")
        for n in sorted({n for n in names if names.count(n) > 1})
    ]
    terms = table.get("objective")
    if not isinstance(terms, list) or not terms:
        problems.append(
            Problem(
                "optimize",
                "no objective; add [[optimize.objective]] entries "
                '(type = "peak-reaction" or "reaction-impulse", pair, and optionally '
                "component, order, weight)",
            )
        )
        terms = []
    parsed_terms = [_term(e, f"objective[{k}]", config, problems) for k, e in enumerate(terms)]
    assembly = None
    if "assembly" in table:
        entry = table["assembly"]
        if not isinstance(entry, dict):
            problems.append(
                Problem(Where("optimize", "assembly"), "expected a table [optimize.assembly]")
            )
        else:
            problems += unknown_keys(entry, _ASSEMBLY_KEYS, "assembly")
            ratio, weight = entry.get("min_singular_ratio"), entry.get("weight", 10.0)
            if not (is_number(ratio) and 0 < ratio < 1):
                problems.append(
                    Problem(
                        Where("assembly", "min_singular_ratio"),
                        f"expected a number in (0, 1), got {ratio!r}",
                    )
                )
            elif not (_normal(weight) and weight > 0):
                problems.append(
                    Problem(
                        Where("assembly", "weight"),
                        f"expected a finite positive number, got {weight!r}",
                    )
                )
            else:
                assembly = Assembly(float(ratio), float(weight))
    if problems:
        raise ConfigError(path, problems)
    terms_ok = tuple(t for t in parsed_terms if t is not None)
    problems += _not_unique(config, terms_ok)
    if problems:
        raise ConfigError(path, problems)
    simulation = config.simulation
    changes = {"initial": ProjectInitial(Projection(), max(simulation.initial.tol, PROJECTED_TOL))}
    if "t_final" in sim:
        changes["t_final"] = float(sim["t_final"])
    if "n_save" in sim:
        changes["saveat"] = SaveAt(n=int(sim["n_save"]))
    if {"rtol", "atol"} & set(sim):
        changes["stepsize_controller"] = diffrax.PIDController(
            rtol=float(sim.get("rtol", simulation.rtol)),
            atol=float(sim.get("atol", simulation.atol)),
        )
    options = dataclasses.replace(simulation, **changes)
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
