"""What a sweep varies and how: samples, the `Sweep` description, the sweep file.

Part of [`redundax.sweep`][], whose docstring describes the whole.
"""

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._model import Model, State
from .._options import initial_projection
from .._parameters import Target, parameter_targets, resolve_parameters, unknown_parameter
from ..io._checks import (
    MAX_STEPS,
    is_integer,
    is_number,
    read_table,
    referenced_file,
    unknown_keys,
)
from ..io._errors import Problem, Where
from ..io.config import ConfigError, SimulationOptions, load_config
from ._constants import MAX_VARIANTS


# ---------------------------------------------------------------------- addresses
def swept_addresses(model: Model, state: State) -> dict[str, Target]:
    """The parameter addresses of a mechanism that can change something, by name
    (`redundax sweep --list-parameters`, sweep and design files): those of
    `parameter_targets`, which offers neither `initial.velocity_scale` nor
    `initial.speed` when the mechanism starts at rest (q̇⁰ = 0: nothing to scale)."""
    return parameter_targets(model, state)


def _at_rest(state: State) -> bool:
    return not np.any(np.asarray(state.qd))


def _forms(model: Model, known: Sequence[str]) -> str:
    """The forms of the addresses `known`, e.g. `bodies.<BODY>.mass|inertia`,
    `loads[k].force.x|y`: what a mechanism offers, not what another one would."""
    forms: list[str] = []
    for name in known:
        form = name
        for table, names, placeholder in (
            ("bodies", model.bodies.names, "<BODY>"),
            ("pairs", model.pair_names, "<PAIR>"),
        ):
            for item in names:
                if name.startswith(f"{table}.{item}."):
                    form = f"{table}.{placeholder}.{name[len(table) + len(item) + 2 :]}"
        form = re.sub(r"^(loads|forces)\[\d+\]", r"\1[k]", form)
        form = re.sub(r"\[\d+\]$", "[k]", form)
        if form not in forms:
            forms.append(form)
    grouped: dict[str, list[str]] = {}
    for form in forms:  # the same form but for its last part: one entry, a|b|c
        head, _, last = form.rpartition(".")
        grouped.setdefault(head, []).append(last)
    return ", ".join(f"{head}.{'|'.join(lasts)}" for head, lasts in grouped.items())


def unknown_address(name: str, model: Model, state: State, known: Sequence[str]) -> str:
    """The message for an address `name` that is not one of `known` (those of
    `swept_addresses`): why, for an initial velocity of a mechanism at rest;
    else the closest addresses and the forms this mechanism offers."""
    if name in ("initial.speed", "initial.velocity_scale") and name not in known:
        first = model.bodies.names[0] if model.bodies.count else "the first body"
        if _at_rest(state):
            why = (
                f"the mechanism starts at rest (every initial velocity is 0), so its initial "
                f"{'speed' if name == 'initial.speed' else 'velocity'} cannot be scaled; give "
                "its bodies an initial velocity in the mechanism file to sweep it"
            )
        else:
            why = (
                f"the first body ({first!r}) starts at rest, and initial.speed sets the speed "
                "of the first body's centre of mass; sweep initial.velocity_scale instead"
            )
        return f"sweep parameter {name!r} has no effect on this mechanism: {why}"
    text = unknown_parameter(name, list(known))
    generic, _, count = text.partition("; addresses are ")
    _, _, count = count.rpartition(" (")
    return f"{generic}; this mechanism's addresses are {_forms(model, known)} ({count}"


# ------------------------------------------------------------------------ samples
@dataclasses.dataclass(frozen=True)
class Parameter:
    """One swept parameter: its address and its values.

    Give one of: `values` (a grid axis, or the choices of a random sample); the
    range `low`, `high` (a grid of `count` equally spaced values, ends included,
    or uniform samples); `mean` and `std` (normal samples, a random sample only:
    manufacturing deviations, [`redundax.statics.tolerance_study`][]).
    """

    name: str
    values: tuple[float, ...] | None = None
    low: float | None = None
    high: float | None = None
    count: int | None = None
    mean: float | None = None
    std: float | None = None

    @property
    def normal(self) -> bool:
        """Whether the parameter is drawn from a normal distribution."""
        return self.mean is not None or self.std is not None


@dataclasses.dataclass(frozen=True)
class Grid:
    """Every combination of the parameters' values (the first parameter varies
    slowest, as in `itertools.product`)."""

    def table(self, parameters: Sequence[Parameter]) -> np.ndarray:
        axes = [
            np.asarray(p.values, dtype=float)
            if p.values is not None
            else np.linspace(p.low, p.high, p.count)
            for p in parameters
        ]
        grids = np.meshgrid(*axes, indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1).reshape(-1, len(parameters))


@dataclasses.dataclass(frozen=True)
class RandomSample:
    """`count` variants drawn with `numpy.random.default_rng(seed)`: uniform in a
    parameter's range, uniformly among its `values`, or normal with its `mean` and
    `std`; parameters in order."""

    count: int
    seed: int = 0

    def table(self, parameters: Sequence[Parameter]) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        columns = [
            rng.choice(np.asarray(p.values, dtype=float), size=self.count)
            if p.values is not None
            else rng.normal(p.mean, p.std, size=self.count)
            if p.normal
            else rng.uniform(p.low, p.high, size=self.count)
            for p in parameters
        ]
        return np.stack(columns, axis=1).reshape(self.count, len(parameters))


def _variant_count(parameters: Sequence[Parameter], sample: "Grid | RandomSample") -> int:
    """How many variants the sample has (a Python integer: no overflow, nothing
    allocated)."""
    if isinstance(sample, RandomSample):
        return sample.count
    return math.prod(
        len(p.values) if p.values is not None else max(p.count or 0, 0) for p in parameters
    )


_POSITIVE = {
    ("bodies", "mass"): "a mass [kg]",
    ("bodies", "inertia"): "a moment of inertia [kg m²]",
}
"""Parameters that the model accepts only positive (its leaf → what it is)."""


def _domain_problems(p: Parameter, target: Target, where: str) -> list[str]:
    """A parameter whose values leave the model's domain: a mass or an inertia
    that is not positive (the mechanism file refuses them too)."""
    what = _POSITIVE.get(target.leaf[:2])
    if what is None:
        return []
    if p.normal:
        return [
            Problem(
                where,
                f"{what} must be positive, and a normal distribution draws values of any "
                "sign; give a 'range' = [low, high] with low > 0",
            )
        ]
    if p.values is not None:
        bad = [v for v in p.values if not v > 0]
        if bad:
            return [
                Problem(
                    Where(where, "values"),
                    f"{what} must be positive, got {bad[0]:g}; give values > 0",
                )
            ]
    elif p.low is not None and not p.low > 0:
        return [
            Problem(
                Where(where, "range"),
                f"{what} must be positive, but the range [{p.low:g}, {p.high:g}] reaches "
                f"{p.low:g}; give low > 0",
            )
        ]
    return []


def _parameter_problems(p: Parameter, grid: bool, where: str) -> list[str]:
    problems = []
    kinds = (p.values is not None) + (p.low is not None or p.high is not None) + p.normal
    if kinds != 1 or (p.low is None) != (p.high is None):
        problems.append(
            Problem(
                where,
                "give one of 'values', 'range' = [low, high], or 'mean' and 'std' (normal draws)",
            )
        )
    if p.normal and (p.mean is None or p.std is None):
        problems.append(Problem(where, "a normal distribution needs both 'mean' and 'std'"))
    if p.normal and grid:
        problems.append(
            Problem(where, "'mean' and 'std' draw random values: use sample = \"random\"")
        )
    if p.std is not None and not p.std >= 0:
        problems.append(
            Problem(
                Where(where, "std"),
                f"expected a standard deviation ≥ 0 (in the parameter's unit), got {p.std:g}",
            )
        )
    if p.values is not None and len(p.values) == 0:
        problems.append(Problem(Where(where, "values"), "is empty"))
    key = "values" if p.values is not None else "mean" if p.normal else "range"
    given = [v for v in (*(p.values or ()), p.low, p.high, p.mean, p.std) if v is not None]
    infinite = [v for v in given if not math.isfinite(v)]
    if infinite:
        problems.append(
            Problem(
                Where(where, key),
                f"expected finite numbers, got {infinite[0]}",
            )
        )
    elif p.low is not None and p.high is not None and not p.low <= p.high:
        problems.append(
            Problem(Where(where, "range"), f"[{p.low}, {p.high}]: low must not exceed high")
        )
    if p.low is not None and grid and p.count is None:
        problems.append(
            Problem(
                where, "a grid over a range needs 'count' (the number of values, ends included)"
            )
        )
    if p.count is not None and not grid:
        problems.append(
            Problem(
                Where(where, "count"), "is for grid sweeps; a random sample has [sweep] samples"
            )
        )
    if p.count is not None and p.values is not None:
        problems.append(Problem(Where(where, "count"), "goes with 'range', not with 'values'"))
    if p.count is not None and p.count < 1:
        problems.append(Problem(Where(where, "count"), f"must be at least 1, got {p.count}"))
    return problems


# -------------------------------------------------------------------------- sweep
@dataclasses.dataclass(frozen=True, eq=False)
class AssemblyStresses:
    """Evaluate each variant's first-order assembly stress: the variant is the nominal
    mechanism made with deviations (its parameter values), assembled at the nominal
    configuration `q` with the compliance 1/`stiffness` per row
    ([`redundax.statics.assembly_stress`][]; the outputs `assembly_multipliers`,
    `assembly_force`, `assembly_moment`).

    - `stiffness`: per row of C [N/m, N m/rad], ∞ for rigid rows
      ([`redundax.methods.joint_stiffness`][] makes them).
    - `q`: where the nominal mechanism is assembled (on its constraints; default: the
      sweep's initial configuration), e.g. its static equilibrium.
    """

    stiffness: Any
    q: Any = None


def _stresses_problems(model: Model, stresses: AssemblyStresses) -> list[str]:
    problems = []
    k = np.asarray(stresses.stiffness, dtype=float)
    if k.shape != (model.n_constraints,):
        problems.append(
            Problem(
                Where("sweep", "stresses"),
                f"stiffness: expected one per row of C ({model.n_constraints}; "
                f"redundax.methods.joint_stiffness makes them), got shape {k.shape}",
            )
        )
    elif not np.all(k > 0):
        problems.append(Problem(Where("sweep", "stresses"), "stiffness: must be positive"))
    if stresses.q is not None and np.shape(stresses.q) != (model.n_coordinates,):
        problems.append(
            Problem(
                Where("sweep", "stresses"),
                f"q: expected {model.n_coordinates} coordinates, got shape {np.shape(stresses.q)}",
            )
        )
    if model.n_pfaffian:
        problems.append(
            Problem(
                Where("sweep", "stresses"),
                "assembly stresses are a static question of holonomic constraints; this "
                "mechanism has Pfaffian pairs",
            )
        )
    return problems


@dataclasses.dataclass(frozen=True, eq=False)
class Sweep:
    """A sweep: the nominal mechanism, the parameters and what to evaluate.

    **Attributes:**

    - `model`, `state`: the nominal mechanism and its initial state.
    - `parameters`: the swept [`Parameter`][redundax.sweep.Parameter]s (at least one).
    - `sample`: [`Grid`][redundax.sweep.Grid] or [`RandomSample`][redundax.sweep.RandomSample].
    - `analyze`: evaluate the solvability at each variant's initial configuration.
    - `simulate`: simulate each variant with the options `simulation` (its
      `t_final`, method, solver, tolerances, stabilisation, `n_save`, `max_steps`).
    - `stresses`: [`AssemblyStresses`][redundax.sweep.AssemblyStresses]: evaluate
      each variant's assembly stress against the nominal mechanism (a Monte Carlo
      of manufacturing deviations), or None.
    - `project_initial`: project each variant's initial state onto its constraints
      (`rx.drift.Projection(iterations=PROJECTION_STEPS)`) before it is analysed and simulated.
    - `consistency_tolerance`: a variant's initial state is `consistent` when its
      constraint residuals are at most this [m, m/s].
    - `chunk_size`: variants per chunk (None:
      [`default_chunk_size`][redundax.sweep.default_chunk_size]).
    - `name`: shown in reports.

    **Raises:** `ValueError` listing every problem (unknown parameter addresses,
    parameters without values, values that are not finite, masses and inertias
    that are not positive, more than `MAX_VARIANTS` variants or a larger
    `chunk_size`, nothing to evaluate).
    """

    model: Model
    state: State
    parameters: tuple[Parameter, ...]
    sample: Grid | RandomSample = Grid()
    analyze: bool = True
    simulate: bool = False
    stresses: AssemblyStresses | None = None
    project_initial: bool = False
    simulation: SimulationOptions = dataclasses.field(default_factory=SimulationOptions)
    consistency_tolerance: float = 1e-8
    chunk_size: int | None = None
    name: str = "sweep"

    def __post_init__(self):
        problems = sweep_problems(self)
        if problems:
            raise ValueError("invalid sweep:\n" + "\n".join(f"  - {p}" for p in problems))

    @property
    def targets(self) -> tuple[Target, ...]:
        return resolve_parameters(self.model, self.state, [p.name for p in self.parameters])

    def table(self) -> np.ndarray:
        """The parameter values of every variant, shape `(variants, parameters)`."""
        return self.sample.table(self.parameters)

    def nominal(self) -> np.ndarray:
        """The parameter values of the nominal model, shape `(parameters,)`."""
        return np.asarray([t.nominal for t in self.targets], dtype=float)


def sweep_problems(sweep: Sweep) -> list[str]:
    """Every problem of a sweep, each naming its parameter (empty: valid)."""
    problems = _problems(
        sweep.model,
        sweep.state,
        sweep.parameters,
        sweep.sample,
        sweep.analyze or sweep.simulate or sweep.stresses is not None,
        sweep.chunk_size,
    )
    if sweep.stresses is not None:
        problems += _stresses_problems(sweep.model, sweep.stresses)
    return problems


def _problems(
    model: Model,
    state: State,
    parameters: Sequence[Parameter],
    sample: Grid | RandomSample,
    evaluates: bool,
    chunk_size: int | None,
) -> list[str]:
    problems = []
    if not parameters:
        problems.append("no parameters: give at least one [[sweep.parameters]] entry")
    if not evaluates:
        problems.append("nothing to evaluate: set analyze = true and/or simulate = true")
    if isinstance(sample, RandomSample) and sample.count < 1:
        problems.append(
            Problem(Where("sweep", "samples"), f"must be at least 1, got {sample.count}")
        )
    if chunk_size is not None and not 1 <= chunk_size <= MAX_VARIANTS:
        problems.append(
            Problem(
                Where("sweep", "chunk_size"),
                f"expected an integer from 1 to {MAX_VARIANTS:,}, got {chunk_size:,}",
            )
        )
    known = swept_addresses(model, state)
    grid = isinstance(sample, Grid)
    names = [p.name for p in parameters]
    for k, p in enumerate(parameters):
        where = f"parameters[{k}] ({p.name!r})"
        if p.name not in known:
            problems.append(
                Problem(Where(where, "name"), unknown_address(p.name, model, state, list(known)))
            )
        elif p.name in names[:k]:
            problems.append(Problem(Where(where, "name"), "listed twice"))
        own = _parameter_problems(p, grid, where)
        problems += own
        if p.name in known and not own:
            problems += _domain_problems(p, known[p.name], where)
    return problems + _size_problems(parameters, sample)


def _size_problems(parameters: Sequence[Parameter], sample: "Grid | RandomSample") -> list[str]:
    """More variants than `MAX_VARIANTS`, refused before anything is allocated."""
    n = _variant_count(parameters, sample)
    if n <= MAX_VARIANTS:
        return []
    if isinstance(sample, RandomSample):
        return [
            Problem(
                Where("sweep", "samples"),
                f"at most {MAX_VARIANTS:,} variants, got {n:,}; sweep fewer, or split the "
                "sweep into several files (seeds)",
            )
        ]
    sizes = " × ".join(
        f"{len(p.values) if p.values is not None else p.count:,}" for p in parameters
    )
    return [
        Problem(
            Where("sweep", "parameters"),
            f"the grid has {sizes} = {n:.3g} variants, more than {MAX_VARIANTS:,}; give "
            "fewer 'values' or a smaller 'count', or draw samples (sample = \"random\")",
        )
    ]


# ---------------------------------------------------------------------- TOML file
_SWEEP_KEYS = (
    "mechanism", "sample", "samples", "seed", "analyze", "simulate", "initial",
    "chunk_size", "t_final", "max_steps", "parameters",
)  # fmt: skip
_PARAMETER_KEYS = ("name", "values", "range", "count", "mean", "std")
_SAMPLES = ("grid", "random")
_MISSING_MECHANISM = Problem("sweep", "missing key 'mechanism' (the mechanism's TOML file)")
_INITIAL = ("keep", "project")


def _parse_parameter(entry: Any, where: str, problems: list[str]) -> Parameter | None:
    if not isinstance(entry, dict):
        problems.append(Problem(where, "expected a table, written [[sweep.parameters]]"))
        return None
    problems += unknown_keys(entry, _PARAMETER_KEYS, where)
    name = entry.get("name")
    if not isinstance(name, str):
        problems.append(
            Problem(where, "missing key 'name' (a parameter address)")
            if name is None
            else Problem(Where(where, "name"), f"expected a string, got {name!r}")
        )
        return None
    where = f"{where} ({name!r})"
    values = entry.get("values")
    if values is not None and not (isinstance(values, list) and all(map(is_number, values))):
        problems.append(
            Problem(Where(where, "values"), f"expected an array of numbers, got {values!r}")
        )
        return None
    bounds = entry.get("range")
    if bounds is not None and not (
        isinstance(bounds, list) and len(bounds) == 2 and all(map(is_number, bounds))
    ):
        problems.append(
            Problem(Where(where, "range"), f"expected [low, high], two numbers, got {bounds!r}")
        )
        return None
    count = entry.get("count")
    if count is not None and not is_integer(count):
        problems.append(Problem(Where(where, "count"), f"expected an integer, got {count!r}"))
        return None
    for key in ("mean", "std"):
        if key in entry and not is_number(entry[key]):
            problems.append(Problem(Where(where, key), f"expected a number, got {entry[key]!r}"))
            return None
    return Parameter(
        name=name,
        values=None if values is None else tuple(float(v) for v in values),
        low=None if bounds is None else float(bounds[0]),
        high=None if bounds is None else float(bounds[1]),
        count=count,
        mean=None if "mean" not in entry else float(entry["mean"]),
        std=None if "std" not in entry else float(entry["std"]),
    )


def _sweep_table(path: Path) -> dict[str, Any]:
    return read_table(
        path,
        "sweep",
        'a sweep file names its mechanism with [sweep] mechanism = "FILE.toml" '
        "(configs/README.md, Sweeps)",
        "a sweep file",
    )


def sweep_mechanism(path: str | Path) -> Path:
    """The mechanism configuration a sweep file names (relative to the sweep file)."""
    path = Path(path)
    mechanism = _sweep_table(path).get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(path, [_MISSING_MECHANISM])
    return referenced_file(path, "sweep", mechanism)


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (format: configs/README.md, section Sweeps).

    **Returns:** a [`Sweep`][redundax.sweep.Sweep] of the mechanism its `[sweep] mechanism` key
    names, with that file's `[simulation]` options (`t_final` overridden by the sweep's).

    **Raises:** `redundax.io.ConfigError` (a `ValueError`) listing every problem of
    the sweep file, each naming its entry and key (an unknown parameter address
    with the closest known ones), or those of the mechanism file.
    """
    path = Path(path)
    table = _sweep_table(path)
    problems = unknown_keys(table, _SWEEP_KEYS, "sweep")
    mechanism = table.get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(path, [*problems, _MISSING_MECHANISM])
    config = load_config(referenced_file(path, "sweep", mechanism))

    def check(key: str, ok: Callable[[Any], bool], expected: str) -> None:
        if key in table and not ok(table[key]):
            problems.append(
                Problem(Where("sweep", key), f"expected {expected}, got {table[key]!r}")
            )

    check("sample", lambda v: v in _SAMPLES, f"one of {', '.join(map(repr, _SAMPLES))}")
    check("initial", lambda v: v in _INITIAL, f"one of {', '.join(map(repr, _INITIAL))}")
    check("samples", is_integer, "an integer")
    check("seed", lambda v: is_integer(v) and 0 <= v < 2**63, "an integer from 0 to 2^63 − 1")
    check("chunk_size", is_integer, "an integer")
    check("analyze", lambda v: isinstance(v, bool), "true or false")
    check("simulate", lambda v: isinstance(v, bool), "true or false")
    check(
        "t_final",
        lambda v: is_number(v) and math.isfinite(v) and v > 0,
        "a positive finite number [s]",
    )
    check(
        "max_steps",
        lambda v: is_integer(v) and 0 < v <= MAX_STEPS,
        f"an integer from 1 to {MAX_STEPS:,}",
    )
    entries = table.get("parameters", [])
    if not isinstance(entries, list):
        problems.append(
            Problem(Where("sweep", "parameters"), "expected [[sweep.parameters]] entries")
        )
        entries = []
    parsed = [_parse_parameter(e, f"parameters[{k}]", problems) for k, e in enumerate(entries)]
    sample_kind = table.get("sample", "grid")
    if sample_kind == "random" and "samples" not in table:
        problems.append(
            Problem("sweep", "sample = \"random\" needs 'samples' (the number of variants)")
        )
    if sample_kind == "grid" and "samples" in table:
        problems.append(Problem(Where("sweep", "samples"), 'only for sample = "random"'))
    if problems:
        raise ConfigError(path, problems)
    sample = (
        RandomSample(int(table["samples"]), int(table.get("seed", 0)))
        if sample_kind == "random"
        else Grid()
    )
    options = config.simulation
    if "t_final" in table:
        options = dataclasses.replace(options, t_final=float(table["t_final"]))
    if "max_steps" in table:
        options = dataclasses.replace(options, max_steps=int(table["max_steps"]))
    default_initial = "keep" if initial_projection(options.initial) is None else "project"
    parameters = tuple(p for p in parsed if p is not None)
    analyze, simulate = bool(table.get("analyze", True)), bool(table.get("simulate", False))
    chunk_size = table.get("chunk_size")
    # The checks of `Sweep`, reported as the file's problems.
    problems = _problems(
        config.model, config.state, parameters, sample, analyze or simulate, chunk_size
    )
    if problems:
        raise ConfigError(path, problems)
    return Sweep(
        model=config.model,
        state=config.state,
        parameters=parameters,
        sample=sample,
        analyze=analyze,
        simulate=simulate,
        project_initial=table.get("initial", default_initial) == "project",
        simulation=options,
        consistency_tolerance=config.consistency_tolerance,
        chunk_size=chunk_size,
        name=f"{path.stem} ({config.name})",
    )
