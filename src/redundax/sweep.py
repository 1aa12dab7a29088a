"""Parameter sweeps: solvability and simulation of thousands of variants of a mechanism.

A sweep changes a few named parameters of a mechanism (a body's mass, a joint point
coordinate, the amplitude of a prescribed motion, the initial speed, ...) over a grid
or a seeded random sample, and evaluates every variant: the solvability analysis at
its initial configuration (rank, degree of redundancy, per-pair uniqueness) and/or a
simulation (success, final tracked points, largest constraint violation, the rank of
C along the motion). The result says which variants differ from the nominal model.

**Parameter addresses.** A parameter is one number, named by an address that the
model itself enumerates ([`parameter_targets`][]; `redundax sweep FILE
--list-parameters`), so a name is looked up, never parsed:

- `bodies.<BODY>.mass` [kg], `bodies.<BODY>.inertia` [kg m², planar]: the body's entry
  of `model.bodies.mass`, `.inertia`;
- `pairs.<PAIR>.<FIELD>.<x|y|z>` for the fields `point_i`, `point_j`, `point` [m],
  `normal`, `direction` [1], and `pairs.<PAIR>.angle` [rad]: the pair's member of its
  stacked constraint group; `normal` and `direction` are renormalised after a
  component is set, as the loader does;
- `pairs.<PAIR>.motion.amplitude` [m or rad] of a smooth-step motion: every knot
  value v_k ← v_0 + (A / A₀)(v_k − v_0), A₀ the nominal largest |v_k − v_0|;
  `.motion.values[k]`, `.motion.value`, `.motion.coefficients[k]`: one knot value, a
  constant's value, a polynomial's coefficient;
- `gravity.<x|y|z>` [m/s²]; `loads[k].force.<x|y|z>` [N], `loads[k].point.<x|y|z>` [m],
  `loads[k].torque[.<x|y|z>]` [N m];
- `initial.velocity_scale` [1]: q̇⁰ multiplied by the value; `initial.speed` [m/s]: q̇⁰
  scaled so that the first body's centre of mass moves at this speed.

Each is mapped once to a [`Target`][] (a leaf, an index into it and a rule) and
applied with `eqx.tree_at` ([`apply_parameters`][]), a pure function that
`jax.vmap` batches. A variant whose geometry no longer fits the nominal initial
configuration is flagged (`consistent = False`) unless the sweep projects the
initial state onto its constraints first (`initial = "project"`).

**Evaluation.** The variants are evaluated `chunk_size` at a time: `jax.vmap` over
the chunk, inside `jax.shard_map` over a 1-D mesh of every local device
(`jax.sharding.Mesh(jax.devices(), ("variants",))`, `NamedSharding` with
`PartitionSpec("variants")`), each chunk padded to a multiple of the device count.
With `shard_map` every device integrates its own part of the chunk in its own
`while` loop, with no communication between devices (a sharded `jit` would
synchronise the devices at every step, and leave the partitioning of the linear
algebra's custom calls to the compiler). One chunk shape is compiled once per sweep.
On a CPU, N devices made with `--xla_force_host_platform_device_count=N` need more
than N cores: jax 0.10's batched LAPACK kernels (eigh, svd) wait for subtasks on the
thread pool that runs the devices' programs, and deadlock when all of its threads
run one (seen on 2 cores with 2 devices from 6 variants per device; [`Evaluator`][]
warns).

**Storage and resuming.** `OUT/manifest.json` describes the sweep (a fingerprint of
the model, the table of parameter values, the options and the chunk size);
`OUT/chunks/chunk-NNNNNN.npz` holds the results of one chunk, written atomically (a
temporary file in the same directory, then `os.replace`); `OUT/sweep.npz` and
`OUT/summary.json` are combined from the chunks once all exist. One file per chunk
rather than an append-only store: a file either exists complete or not at all, so
a sweep stopped anywhere (Ctrl-C, `kill -9`, a crash) loses at most the chunk in
progress, resuming needs no repair of a half-written record, and the files do
not depend on each other. Rerunning the same sweep with the same `OUT` computes
only the missing chunks; the combined files do not depend on the interruption: the
chunk boundaries are fixed by the manifest, the NPZ is written with fixed zip
timestamps, and nothing in it records when or where it ran (byte-identical files,
tested).

**Past one machine.** Every device JAX sees is used. On a cluster, call
`jax.distributed.initialize(...)` at the start of every process (one per host);
`jax.devices()` then lists the devices of every host, the same mesh spans them all,
each process builds its part of a chunk with `jax.make_array_from_callback` (every
process computes the same table of values from the same seed), the results are
gathered with `multihost_utils.process_allgather`, and only process 0 writes files
(its list of missing chunks is broadcast to the others), to a directory it can
see. This code path is written for multi-host use but has only been run with one
process (several CPU devices via `--xla_force_host_platform_device_count`).
"""

import argparse
import dataclasses
import difflib
import enum
import hashlib
import json
import os
import sys
import time
import tomllib
import warnings
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Float

from . import (
    Constant,
    Model,
    Polynomial,
    Projection,
    SmoothSteps,
    State,
    __version__,
    analyze_solvability,
    marker_positions,
    position_residual,
    rank_history,
    simulate,
    velocity_residual,
)
from .io.config import ConfigError, SimulationOptions, load_config
from .io.results import _atomic

FORMAT = "redundax sweep 1"
"""The `format` entry of the manifest and of the combined file."""

AXIS = "variants"

PROJECTION_STEPS = 10
"""Gauss–Newton steps of the initial projection (`initial = "project"`). Four (the
`Projection` default) leave 1e-12 m to 3.5e-9 m at steering offsets of 4–6 cm of the
mobile robot, which the rank test (tolerance ~1e-14) reads as a broken constraint
(rank 21 instead of 20); ten converge to round-off."""
"""Name of the mesh axis the variants are sharded over."""

SINGULAR_RTOL = 1e-8
"""Relative tolerance of the rank of C along a simulated motion (`rank_min`,
`rank_max`): a singular value below `SINGULAR_RTOL · σ₁` counts as zero. Drift of
the order of the integrator's tolerance makes dependent rows independent by far
less, and a singular configuration passed between two saved states by more."""

_AXES = ("x", "y", "z")
_PAIR_FIELDS = {
    "point_i": ("s_i", "m"),
    "point_j": ("s_j", "m"),
    "point": ("point", "m"),
    "normal": ("normal", "1"),
    "direction": ("direction", "1"),
    "angle": ("angle", "rad"),
}
"""Configuration key → (field of the constraint member, unit)."""
_UNIT_VECTORS = ("normal", "direction")
_LOAD_FIELDS = {"force": ("forces", "N"), "point": ("points", "m"), "torque": ("torques", "N m")}


# ----------------------------------------------------------------------- addresses
class Rule(enum.Enum):
    """How a parameter's value changes its leaf."""

    SET = "set"
    """The indexed entry becomes the value."""
    AMPLITUDE = "amplitude"
    """The indexed row v becomes v₀ + (value / reference)(v − v₀)."""
    SCALE = "scale"
    """The whole leaf is multiplied by value / reference."""


@dataclasses.dataclass(frozen=True)
class Target:
    """Where one named parameter lives in a (`Model`, `State`) pair.

    **Attributes:**

    - `name`: the address, e.g. `"bodies.platform.mass"`.
    - `leaf`: the path of the leaf: `("bodies", field)`, `("holonomic" or
      "pfaffian", group, field, ...)`, `("gravity",)`, `("loads", field)` or
      `("initial",)` (the initial velocities q̇⁰).
    - `index`: the entry of the leaf (the member of a stacked group first).
    - `rule`: how the value is applied ([`Rule`][]).
    - `unit`: the value's unit, for reports.
    - `nominal`: the value of the nominal model.
    - `reference`: the nominal amplitude or speed (the rules `AMPLITUDE`, `SCALE`).
    - `normalise`: renormalise the indexed vector (`index[:-1]`) after setting.
    """

    name: str
    leaf: tuple[str | int, ...]
    index: tuple[int, ...]
    rule: Rule
    unit: str
    nominal: float
    reference: float = 1.0
    normalise: bool = False


def _get(model: Model, leaf: tuple[str | int, ...]) -> Any:
    head = leaf[0]
    if head == "gravity":
        return model.gravity
    if head in ("holonomic", "pfaffian"):
        node, fields = getattr(model, str(head))[int(leaf[1])], leaf[2:]
    else:
        node, fields = getattr(model, str(head)), leaf[1:]
    for field in fields:
        node = getattr(node, str(field))
    return node


def _members(model: Model) -> dict[int, tuple[str, int, int, Any]]:
    """First row of C of every stacked member → (section, group, member, group)."""
    out = {}
    for section, groups, offset in (
        ("holonomic", model.holonomic, 0),
        ("pfaffian", model.pfaffian, model.n_holonomic),
    ):
        for g, group in enumerate(groups):
            rows = np.asarray(group.rows)
            for k in range(rows.shape[0]):
                out[int(rows[k, 0]) + offset] = (section, g, k, group)
    return out


def _vector_targets(prefix, leaf, index, values, unit, normalise=False) -> list[Target]:
    return [
        Target(f"{prefix}.{_AXES[c]}", leaf, (*index, c), Rule.SET, unit, float(v), 1.0, normalise)
        for c, v in enumerate(values)
    ]


def _motion_targets(prefix, leaf, k, motion, unit) -> list[Target]:
    out = []
    if isinstance(motion, SmoothSteps):
        values = np.asarray(motion.values)[k]
        amplitude = float(np.max(np.abs(values - values[0])))
        path = (*leaf, "motion", "values")
        if amplitude > 0.0:
            out.append(
                Target(
                    f"{prefix}.amplitude", path, (k,), Rule.AMPLITUDE, unit, amplitude, amplitude
                )
            )
        out += [
            Target(f"{prefix}.values[{i}]", path, (k, i), Rule.SET, unit, float(v))
            for i, v in enumerate(values)
        ]
    elif isinstance(motion, Constant):
        value = float(np.asarray(motion.value)[k])
        out.append(
            Target(f"{prefix}.value", (*leaf, "motion", "value"), (k,), Rule.SET, unit, value)
        )
    elif isinstance(motion, Polynomial):
        path = (*leaf, "motion", "coefficients")
        out += [
            Target(f"{prefix}.coefficients[{i}]", path, (k, i), Rule.SET, f"{unit}/s^{i}", float(c))
            for i, c in enumerate(np.asarray(motion.coefficients)[k])
        ]
    return out


def parameter_targets(model: Model, state: State) -> dict[str, Target]:
    """Every parameter a sweep can change, by address (see the module's table).

    **Arguments:**

    - `model`, `state`: the nominal mechanism and its initial state (concrete).

    **Returns:** `{address: Target}`, in model order: bodies, pairs, gravity,
    loads, initial state.
    """
    targets: list[Target] = []
    bodies = model.bodies
    for b, name in enumerate(bodies.names):
        mass = float(np.asarray(bodies.mass)[b])
        targets.append(
            Target(f"bodies.{name}.mass", ("bodies", "mass"), (b,), Rule.SET, "kg", mass)
        )
        if model.dim == 2:
            inertia = float(np.asarray(bodies.inertia)[b])
            targets.append(
                Target(
                    f"bodies.{name}.inertia",
                    ("bodies", "inertia"),
                    (b,),
                    Rule.SET,
                    "kg m²",
                    inertia,
                )
            )
    members = _members(model)
    for pair in model.pairs:
        section, g, k, group = members[pair.rows[0]]
        fields = {f.name for f in dataclasses.fields(group)}
        prefix = f"pairs.{pair.name}"
        for key, (field, unit) in _PAIR_FIELDS.items():
            if field not in fields:
                continue
            leaf = (section, g, field)
            value = np.asarray(getattr(group, field))[k]
            if value.ndim == 0:
                targets.append(Target(f"{prefix}.{key}", leaf, (k,), Rule.SET, unit, float(value)))
            elif value.ndim == 1:
                targets += _vector_targets(
                    f"{prefix}.{key}", leaf, (k,), value, unit, key in _UNIT_VECTORS
                )
        if "motion" in fields:
            unit = "rad" if "revolute" in pair.kind else "m"
            targets += _motion_targets(f"{prefix}.motion", (section, g), k, group.motion, unit)
    targets += _vector_targets("gravity", ("gravity",), (), np.asarray(model.gravity), "m/s²")
    loads = model.loads
    for k in range(np.asarray(loads.bodies).shape[0]):
        for key, (field, unit) in _LOAD_FIELDS.items():
            value = np.asarray(getattr(loads, field))[k]
            if value.ndim == 0:
                targets.append(
                    Target(
                        f"loads[{k}].{key}", ("loads", field), (k,), Rule.SET, unit, float(value)
                    )
                )
            else:
                targets += _vector_targets(f"loads[{k}].{key}", ("loads", field), (k,), value, unit)
    targets.append(Target("initial.velocity_scale", ("initial",), (), Rule.SCALE, "1", 1.0, 1.0))
    speed = float(np.linalg.norm(np.asarray(state.qd)[: model.dim])) if bodies.count else 0.0
    if speed > 0.0:
        targets.append(Target("initial.speed", ("initial",), (), Rule.SCALE, "m/s", speed, speed))
    return {t.name: t for t in targets}


_ADDRESS_FORMS = (
    "bodies.<BODY>.mass|inertia, pairs.<PAIR>.point_i|point_j|point|normal|direction.x|y|z, "
    "pairs.<PAIR>.angle, pairs.<PAIR>.motion.amplitude|value|values[k]|coefficients[k], "
    "gravity.x|y|z, loads[k].force|point|torque..., initial.speed, initial.velocity_scale"
)


def unknown_parameter(name: str, known: Sequence[str]) -> str:
    """The message for a parameter address the model does not have."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return (
        f"unknown sweep parameter {name!r}{hint}; addresses are {_ADDRESS_FORMS} "
        f"({len(known)} for this mechanism: list them with `redundax sweep FILE "
        "--list-parameters`)"
    )


def resolve_parameters(model: Model, state: State, names: Sequence[str]) -> tuple[Target, ...]:
    """The [`Target`][] of every name, in order.

    **Raises:** `ValueError` naming every unknown or repeated name (with the closest
    known addresses).
    """
    known = parameter_targets(model, state)
    problems = []
    for k, name in enumerate(names):
        if name not in known:
            problems.append(unknown_parameter(name, list(known)))
        elif name in names[:k]:
            problems.append(f"sweep parameter {name!r} is listed twice")
    if problems:
        raise ValueError("\n".join(problems))
    return tuple(known[name] for name in names)


def apply_parameters(
    model: Model, state: State, targets: Sequence[Target], x: Float[Any, " p"]
) -> tuple[Model, State]:
    """The variant of (`model`, `state`) with parameter k set to `x[k]`.

    Pure (`eqx.tree_at`), so `jax.vmap` over `x` batches it. Several parameters
    of one leaf are applied in the order given; unit vectors are renormalised last.
    """
    leaves: dict[tuple, Any] = {}
    for k, target in enumerate(targets):
        if target.leaf in leaves:
            current = leaves[target.leaf]
        else:
            source = state.qd if target.leaf == ("initial",) else _get(model, target.leaf)
            current = jnp.asarray(source, dtype=float)
        value = x[k]
        if target.rule is Rule.SET:
            current = current.at[target.index].set(value)
        elif target.rule is Rule.AMPLITUDE:
            row = current[target.index]
            current = current.at[target.index].set(
                row[0] + (value / target.reference) * (row - row[0])
            )
        else:
            current = current * (value / target.reference)
        leaves[target.leaf] = current
    for leaf, member in dict.fromkeys((t.leaf, t.index[:-1]) for t in targets if t.normalise):
        v = leaves[leaf][member]
        leaves[leaf] = leaves[leaf].at[member].set(v / jnp.linalg.norm(v))
    qd = leaves.pop(("initial",), None)
    if leaves:
        keys = list(leaves)
        model = eqx.tree_at(
            lambda m: [_get(m, key) for key in keys], model, [leaves[k] for k in keys]
        )
    if qd is not None:
        state = State(state.t, state.q, qd)
    return model, state


# ------------------------------------------------------------------------ samples
@dataclasses.dataclass(frozen=True)
class Parameter:
    """One swept parameter: its address and its values.

    Give either `values` (a grid axis, or the choices of a random sample) or the
    range `low`, `high` (a grid of `count` equally spaced values, ends included,
    or uniform samples).
    """

    name: str
    values: tuple[float, ...] | None = None
    low: float | None = None
    high: float | None = None
    count: int | None = None


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
    parameter's range, or uniformly among its `values`; parameters in order."""

    count: int
    seed: int = 0

    def table(self, parameters: Sequence[Parameter]) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        columns = [
            rng.choice(np.asarray(p.values, dtype=float), size=self.count)
            if p.values is not None
            else rng.uniform(p.low, p.high, size=self.count)
            for p in parameters
        ]
        return np.stack(columns, axis=1).reshape(self.count, len(parameters))


def _parameter_problems(p: Parameter, grid: bool) -> list[str]:
    problems = []
    if (p.values is None) == (p.low is None or p.high is None):
        problems.append("give either 'values' or 'range' = [low, high]")
    if p.values is not None and len(p.values) == 0:
        problems.append("'values' is empty")
    if p.low is not None and p.high is not None and not p.low <= p.high:
        problems.append(f"range [{p.low}, {p.high}]: low must not exceed high")
    if p.low is not None and grid and p.count is None:
        problems.append("a grid over a range needs 'count' (the number of values, ends included)")
    if p.count is not None and not grid:
        problems.append("'count' is for grid sweeps; a random sample has [sweep] samples")
    if p.count is not None and p.values is not None:
        problems.append("'count' goes with 'range', not with 'values'")
    if p.count is not None and p.count < 1:
        problems.append(f"'count' must be at least 1, got {p.count}")
    return problems


# -------------------------------------------------------------------------- sweep
@dataclasses.dataclass(frozen=True, eq=False)
class Sweep:
    """A sweep: the nominal mechanism, the parameters and what to evaluate.

    **Attributes:**

    - `model`, `state`: the nominal mechanism and its initial state.
    - `parameters`: the swept [`Parameter`][]s (at least one).
    - `sample`: [`Grid`][] or [`RandomSample`][].
    - `analyze`: evaluate the solvability at each variant's initial configuration.
    - `simulate`: simulate each variant with the options `simulation` (its
      `t_final`, method, solver, tolerances, stabilisation, `n_save`, `max_steps`).
    - `project_initial`: project each variant's initial state onto its constraints
      (`rx.Projection(iterations=PROJECTION_STEPS)`) before it is analysed and simulated.
    - `consistency_tolerance`: a variant's initial state is `consistent` when its
      constraint residuals are at most this [m, m/s].
    - `chunk_size`: variants per chunk (None: [`default_chunk_size`][]).
    - `name`: shown in reports.

    **Raises:** `ValueError` listing every problem (unknown parameter addresses,
    parameters without values, nothing to evaluate).
    """

    model: Model
    state: State
    parameters: tuple[Parameter, ...]
    sample: Grid | RandomSample = Grid()
    analyze: bool = True
    simulate: bool = False
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
    problems = []
    if not sweep.parameters:
        problems.append("no parameters: give at least one [[sweep.parameters]] entry")
    if not (sweep.analyze or sweep.simulate):
        problems.append("nothing to evaluate: set analyze = true and/or simulate = true")
    if isinstance(sweep.sample, RandomSample) and sweep.sample.count < 1:
        problems.append(f"samples must be at least 1, got {sweep.sample.count}")
    if sweep.chunk_size is not None and sweep.chunk_size < 1:
        problems.append(f"chunk_size must be at least 1, got {sweep.chunk_size}")
    known = parameter_targets(sweep.model, sweep.state)
    grid = isinstance(sweep.sample, Grid)
    names = [p.name for p in sweep.parameters]
    for k, p in enumerate(sweep.parameters):
        where = f"parameters[{k}] ({p.name!r})"
        if p.name not in known:
            problems.append(f"{where} key 'name': {unknown_parameter(p.name, list(known))}")
        elif p.name in names[:k]:
            problems.append(f"{where} key 'name': listed twice")
        problems += [f"{where}: {problem}" for problem in _parameter_problems(p, grid)]
    return problems


# ---------------------------------------------------------------------- TOML file
_SWEEP_KEYS = (
    "mechanism", "sample", "samples", "seed", "analyze", "simulate", "initial",
    "chunk_size", "t_final", "max_steps", "parameters",
)  # fmt: skip
_PARAMETER_KEYS = ("name", "values", "range", "count")
_SAMPLES = ("grid", "random")
_INITIAL = ("keep", "project")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _unknown_keys(table: Mapping[str, Any], allowed: Sequence[str], where: str) -> list[str]:
    out = []
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            out.append(f"{where}: unknown key {key!r} ({hint}allowed: {', '.join(allowed)})")
    return out


def _parse_parameter(entry: Any, where: str, problems: list[str]) -> Parameter | None:
    if not isinstance(entry, dict):
        problems.append(f"{where}: expected a table, written [[sweep.parameters]]")
        return None
    problems += _unknown_keys(entry, _PARAMETER_KEYS, where)
    name = entry.get("name")
    if not isinstance(name, str):
        problems.append(
            f"{where}: missing key 'name' (a parameter address)"
            if name is None
            else f"{where} key 'name': expected a string, got {name!r}"
        )
        return None
    where = f"{where} ({name!r})"
    values = entry.get("values")
    if values is not None and not (isinstance(values, list) and all(map(_is_number, values))):
        problems.append(f"{where} key 'values': expected an array of numbers, got {values!r}")
        return None
    bounds = entry.get("range")
    if bounds is not None and not (
        isinstance(bounds, list) and len(bounds) == 2 and all(map(_is_number, bounds))
    ):
        problems.append(f"{where} key 'range': expected [low, high], two numbers, got {bounds!r}")
        return None
    count = entry.get("count")
    if count is not None and not _is_integer(count):
        problems.append(f"{where} key 'count': expected an integer, got {count!r}")
        return None
    return Parameter(
        name=name,
        values=None if values is None else tuple(float(v) for v in values),
        low=None if bounds is None else float(bounds[0]),
        high=None if bounds is None else float(bounds[1]),
        count=count,
    )


def _sweep_table(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(path, ["no such file"]) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(path, [f"TOML syntax error: {err}"]) from None
    problems = _unknown_keys(document, ("sweep",), "top level")
    table = document.get("sweep")
    if not isinstance(table, dict):
        problems.append(
            "top level: no [sweep] table; a sweep file names its mechanism with "
            '[sweep] mechanism = "FILE.toml" (configs/README.md, Sweeps)'
        )
    if problems:
        raise ConfigError(path, problems)
    return table


def sweep_mechanism(path: str | Path) -> Path:
    """The mechanism configuration a sweep file names (relative to the sweep file)."""
    path = Path(path)
    mechanism = _sweep_table(path).get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(path, ["sweep: missing key 'mechanism' (the mechanism's TOML file)"])
    return path.parent / mechanism


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (format: configs/README.md, section Sweeps).

    **Returns:** a [`Sweep`][] of the mechanism its `[sweep] mechanism` key names,
    with that file's `[simulation]` options (`t_final` overridden by the sweep's).

    **Raises:** `redundax.io.ConfigError` (a `ValueError`) listing every problem of
    the sweep file, each naming its entry and key (an unknown parameter address
    with the closest known ones), or those of the mechanism file.
    """
    path = Path(path)
    table = _sweep_table(path)
    problems = _unknown_keys(table, _SWEEP_KEYS, "sweep")
    mechanism = table.get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(
            path, [*problems, "sweep: missing key 'mechanism' (the mechanism's TOML file)"]
        )
    config = load_config(path.parent / mechanism)

    def check(key: str, ok: Callable[[Any], bool], expected: str) -> None:
        if key in table and not ok(table[key]):
            problems.append(f"sweep key {key!r}: expected {expected}, got {table[key]!r}")

    check("sample", lambda v: v in _SAMPLES, f"one of {', '.join(map(repr, _SAMPLES))}")
    check("initial", lambda v: v in _INITIAL, f"one of {', '.join(map(repr, _INITIAL))}")
    check("samples", _is_integer, "an integer")
    check("seed", _is_integer, "an integer")
    check("chunk_size", _is_integer, "an integer")
    check("analyze", lambda v: isinstance(v, bool), "true or false")
    check("simulate", lambda v: isinstance(v, bool), "true or false")
    check("t_final", lambda v: _is_number(v) and v > 0, "a positive number [s]")
    check("max_steps", lambda v: _is_integer(v) and v > 0, "a positive integer")
    entries = table.get("parameters", [])
    if not isinstance(entries, list):
        problems.append("sweep key 'parameters': expected [[sweep.parameters]] entries")
        entries = []
    parsed = [_parse_parameter(e, f"parameters[{k}]", problems) for k, e in enumerate(entries)]
    sample_kind = table.get("sample", "grid")
    if sample_kind == "random" and "samples" not in table:
        problems.append("sweep: sample = \"random\" needs 'samples' (the number of variants)")
    if sample_kind == "grid" and "samples" in table:
        problems.append("sweep key 'samples': only for sample = \"random\"")
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
    default_initial = "keep" if options.initial_projection is None else "project"
    try:
        return Sweep(
            model=config.model,
            state=config.state,
            parameters=tuple(p for p in parsed if p is not None),
            sample=sample,
            analyze=bool(table.get("analyze", True)),
            simulate=bool(table.get("simulate", False)),
            project_initial=table.get("initial", default_initial) == "project",
            simulation=options,
            consistency_tolerance=config.consistency_tolerance,
            chunk_size=table.get("chunk_size"),
            name=f"{path.stem} ({config.name})",
        )
    except ValueError as err:
        raise ConfigError(path, [line.strip()[2:] for line in str(err).splitlines()[1:]]) from None


# --------------------------------------------------------------------- evaluation
def _max_abs(x) -> Any:
    return jnp.max(jnp.abs(x), initial=0.0)


def _violation(model: Model, q, qd, t) -> Any:
    return jnp.maximum(
        _max_abs(position_residual(model, q, t)), _max_abs(velocity_residual(model, q, qd, t))
    )


def _knots(model: Model) -> dict[int, Any]:
    """The knot times of the nominal model's smooth-step drivers, as concrete arrays."""
    return {
        g: jnp.asarray(np.asarray(group.motion.times))
        for g, group in enumerate(model.holonomic)
        if "motion" in {f.name for f in dataclasses.fields(group)}
        and isinstance(group.motion, SmoothSteps)
    }


class Evaluator:
    """The compiled evaluation of batches of variants of one [`Sweep`][].

    Built once per sweep; every call with the same number of variants reuses one
    compilation. `evaluator(values)` returns a dict of NumPy arrays with one row
    per row of `values` (see [`OUTPUTS`][]).
    """

    def __init__(self, sweep: Sweep, mesh: Mesh | None = None):
        self.sweep = sweep
        self.mesh = Mesh(np.asarray(jax.devices()), (AXIS,)) if mesh is None else mesh
        self.devices = int(self.mesh.devices.size)
        cores = os.cpu_count() or 1
        if (
            self.devices > 1
            and self.mesh.devices.flat[0].platform == "cpu"
            and self.devices >= cores
        ):
            warnings.warn(
                f"{self.devices} CPU devices on {cores} cores: jaxlib's batched LAPACK "
                "kernels (eigh, svd, ...) wait for work on the thread pool that runs the "
                "devices' programs, and a sweep can deadlock when every thread of it runs "
                "one (seen with jax 0.10 and chunks of 6 or more variants per device); use "
                "fewer devices than cores (--xla_force_host_platform_device_count)",
                RuntimeWarning,
                stacklevel=2,
            )
        targets = sweep.targets
        options = sweep.simulation
        # Knot times stay concrete (closed over, not traced) so that `simulate`
        # passes them to the step-size controller as `step_ts`, as it does for a
        # single concrete model: the steps land on the knots instead of being
        # rejected across them (half the steps for the mobile robot). They are not
        # sweepable parameters.
        knots = _knots(sweep.model)
        dynamic, static = eqx.partition((sweep.model, sweep.state, options.method), eqx.is_array)
        self._dynamic = dynamic

        def variant(model: Model, state: State, method, x) -> dict[str, Any]:
            model, state = apply_parameters(model, state, targets, x)
            for g, times in knots.items():
                model = eqx.tree_at(lambda m, g=g: m.holonomic[g].motion.times, model, times)
            t, q, qd = state.t, state.q, state.qd
            out = {"initial_violation": _violation(model, q, qd, t)}
            if sweep.project_initial:
                q, qd = Projection(iterations=PROJECTION_STEPS)(model, q, qd, t)
            out["consistent"] = _violation(model, q, qd, t) <= sweep.consistency_tolerance
            if sweep.analyze:
                report = analyze_solvability(model, q, t)
                out.update(
                    rank=report.rank,
                    rank_holonomic=report.rank_holonomic,
                    rank_pfaffian=report.rank_pfaffian,
                    redundancy=report.redundancy,
                    dof=report.dof,
                    unique=report.unique,
                    multipliers_unique=report.multipliers_unique,
                    b_norm=report.b_norm,
                    row_unique=report.row_unique,
                )
            if sweep.simulate:
                trajectory = simulate(
                    model,
                    State(t, q, qd),
                    options.t_final,
                    method=method,
                    solver=options.solver,
                    rtol=options.rtol,
                    atol=options.atol,
                    stabilisation=options.stabilisation,
                    projection=options.projection,
                    n_save=options.n_save,
                    max_steps=options.max_steps,
                    throw=False,
                )
                # A failed integration leaves non-finite saved states after the
                # failure: everything below is taken over the states reached.
                reached = jnp.all(jnp.isfinite(trajectory.q), axis=1) & jnp.all(
                    jnp.isfinite(trajectory.qd), axis=1
                )
                last = jnp.max(jnp.where(reached, jnp.arange(reached.shape[0]), 0))
                history = rank_history(model, trajectory, SINGULAR_RTOL)
                position = jnp.max(jnp.where(reached, trajectory.position_violation, 0.0))
                velocity = jnp.max(jnp.where(reached, trajectory.velocity_violation, 0.0))
                big = jnp.iinfo(history.rank.dtype).max
                out.update(
                    success=(trajectory.result == diffrax.RESULTS.successful) & jnp.all(reached),
                    steps=trajectory.num_steps,
                    time_reached=trajectory.ts[last],
                    final_q=trajectory.q[last],
                    final_qd=trajectory.qd[last],
                    final_markers=marker_positions(model, trajectory.q[last]),
                    max_constraint_violation=jnp.maximum(position, velocity),
                    max_position_violation=position,
                    max_velocity_violation=velocity,
                    rank_start=history.rank[0],
                    rank_min=jnp.min(jnp.where(reached, history.rank, big)),
                    rank_max=jnp.max(jnp.where(reached, history.rank, 0)),
                    sigma_ratio_min=jnp.min(jnp.where(reached, history.relative_gap(), jnp.inf)),
                )
            return out

        def shard(dynamic, values):
            model, state, method = eqx.combine(dynamic, static)
            return jax.vmap(lambda x: variant(model, state, method, x))(values)

        sharded = jax.shard_map(
            shard,
            mesh=self.mesh,
            in_specs=(PartitionSpec(), PartitionSpec(AXIS)),
            out_specs=PartitionSpec(AXIS),
            check_vma=False,
        )
        self._call = eqx.filter_jit(sharded)

    def __call__(self, values: Float[np.ndarray, "batch p"]) -> dict[str, np.ndarray]:
        values = np.asarray(values, dtype=float)
        n = values.shape[0]
        padded = -(-n // self.devices) * self.devices
        x = np.concatenate([values, np.repeat(values[-1:], padded - n, axis=0)])
        sharding = NamedSharding(self.mesh, PartitionSpec(AXIS))
        array = jax.make_array_from_callback(x.shape, sharding, lambda index: x[index])
        out = self._call(self._dynamic, array)
        if jax.process_count() > 1:
            out = multihost_utils.process_allgather(out, tiled=True)
        return {key: np.asarray(value)[:n] for key, value in out.items()}


OUTPUTS = {
    "initial_violation": "max |Φ|, |C q̇ + b| of the variant's initial state as built [m, m/s]",
    "consistent": 'the state analysed and simulated (projected with initial = "project") '
    "satisfies the constraints to consistency_tolerance",
    "rank": "rank C at the initial configuration",
    "rank_holonomic": "rank Φ_q",
    "rank_pfaffian": "rank Ψ",
    "redundancy": "degree of redundancy p = rows − rank",
    "dof": "mobility n − rank",
    "unique": "(variants, pairs): whether each pair's reaction is unique",
    "multipliers_unique": "(variants, pairs): whether each pair's multipliers are unique",
    "b_norm": "(variants, pairs): ‖B_X‖_F of the QR test",
    "row_unique": "(variants, rows): whether each reaction component is unique",
    "success": "the integration reached t_final with finite q, q̇ at every saved state",
    "steps": "integrator steps",
    "time_reached": "the last saved time with a finite state (t_final on success) [s]",
    "final_q": "(variants, nq): q at time_reached",
    "final_qd": "(variants, nq): q̇ at time_reached",
    "final_markers": "(variants, markers, dim): the tracked points at time_reached [m]",
    "max_constraint_violation": "max over the saved states reached of max |Φ| and max |C q̇ + b|",
    "max_position_violation": "max |Φ| over the saved states reached [m, rad]",
    "max_velocity_violation": "max |C q̇ + b| over the saved states reached",
    "rank_start": "rank C at t = 0 with SINGULAR_RTOL",
    "rank_min": "min of rank C over the saved states reached (SINGULAR_RTOL)",
    "rank_max": "max of rank C over the saved states reached (SINGULAR_RTOL)",
    "sigma_ratio_min": "min over the saved states reached of σ_r / σ_1, r = rank_start: "
    "how close the motion comes to a singular configuration (0: it passes one)",
}
"""Per-variant results (the analysis ones with `analyze`, the others with `simulate`)."""


def default_chunk_size(sweep: Sweep, devices: Sequence[Any] | None = None) -> int:
    """Variants per chunk when none is given: a multiple of the device count.

    On CPUs, 64 simulations (1024 analyses) per device: larger batches gain
    little there, and a chunk of that size takes seconds to minutes, which bounds
    the work an interruption loses. On accelerators, a quarter of the device's
    memory divided by a generous estimate of one variant's working set (its saved
    states, the constraint matrices of the rank check at every saved state, and
    the solver's intermediates), between 256 and 16384 per device.
    """
    devices = list(jax.devices()) if devices is None else list(devices)
    if devices[0].platform == "cpu":
        return (64 if sweep.simulate else 1024) * len(devices)
    model = sweep.model
    nq, nc, saved = model.n_coordinates, model.n_constraints, sweep.simulation.n_save
    per_variant = 8 * (saved * (4 * nq + nc * nq) + 64 * (nc * nq + nq * nq + nc * nc))
    stats = devices[0].memory_stats() or {}
    limit = stats.get("bytes_limit")
    per_device = 16384 if limit is None else int(limit) // 4 // per_variant
    return min(max(per_device, 256), 16384) * len(devices)


# ------------------------------------------------------------------- files, resume
@dataclasses.dataclass(frozen=True)
class Progress:
    """What [`run_sweep`][] reports after each chunk.

    - `chunk`: the chunk just finished (0-based), of `chunks`.
    - `done`, `variants`: variants finished (this run and earlier ones), of all.
    - `computed`: chunks computed by this run so far; `resumed`: chunks found on disk.
    - `elapsed`: seconds since this run started (the first chunk includes compilation).
    """

    chunk: int
    chunks: int
    done: int
    variants: int
    computed: int
    resumed: int
    elapsed: float


def _digest(tree: Any) -> str:
    """A SHA-256 of a pytree: its structure (static fields included) and every leaf."""
    h = hashlib.sha256()
    leaves, treedef = jax.tree.flatten(tree)
    h.update(str(treedef).encode())
    for leaf in leaves:
        if eqx.is_array(leaf):
            a = np.asarray(leaf)
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(leaf).encode())
    return h.hexdigest()


def _describe(sweep: Sweep, table: np.ndarray, chunk_size: int) -> dict[str, Any]:
    """Everything the results depend on; its hash is the fingerprint."""
    options = sweep.simulation
    return {
        "format": FORMAT,
        "redundax": __version__,
        "name": sweep.name,
        "parameters": [p.name for p in sweep.parameters],
        "variants": int(table.shape[0] - 1),
        "chunk_size": chunk_size,
        "sample": repr(sweep.sample),
        "analyze": sweep.analyze,
        "simulate": sweep.simulate,
        "project_initial": sweep.project_initial,
        "consistency_tolerance": sweep.consistency_tolerance,
        "simulation": {
            "t_final": options.t_final,
            "rtol": options.rtol,
            "atol": options.atol,
            "n_save": options.n_save,
            "max_steps": options.max_steps,
            **dict(options.choices),
            "objects (sha256)": _digest(
                (options.method, options.solver, options.stabilisation, options.projection)
            ),
        }
        if sweep.simulate
        else None,
        "model (sha256)": _digest((sweep.model, sweep.state)),
        "values (sha256)": hashlib.sha256(np.ascontiguousarray(table).tobytes()).hexdigest(),
    }


def _write_npz(file, arrays: Mapping[str, Any]) -> None:
    """NPZ with fixed timestamps and sorted entries: equal arrays give equal bytes."""
    with zipfile.ZipFile(file, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            with archive.open(info, "w", force_zip64=True) as entry:
                np.lib.format.write_array(entry, np.asarray(arrays[name]), allow_pickle=False)


def _chunk_path(out: Path, k: int) -> Path:
    return out / "chunks" / f"chunk-{k:06d}.npz"


def _read_chunk(path: Path, k: int, fingerprint: str) -> dict[str, np.ndarray] | None:
    """The arrays of a finished chunk file, or None if it is absent or not this sweep's."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            if str(npz["fingerprint"]) != fingerprint or int(npz["chunk"]) != k:
                return None
            return {name: npz[name] for name in npz.files}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None


def _start(out: Path, describe: dict[str, Any], force: bool) -> None:
    """Create `out` with its manifest, or check that its manifest is this sweep's."""
    manifest = out / "manifest.json"
    fingerprint = describe["fingerprint"]
    if manifest.exists() and not force:
        try:
            old = json.loads(manifest.read_text())
        except (OSError, ValueError):
            old = {}
        if old.get("fingerprint") != fingerprint:
            differ = [k for k in describe if k != "fingerprint" and old.get(k) != describe[k]]
            raise ValueError(
                f"{out}: holds another sweep (its manifest differs in: "
                f"{', '.join(differ) or 'format'}); use another output directory, or pass "
                "--force (force=True) to discard its results"
            )
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    if force:
        for path in [
            *(out / "chunks").glob("chunk-*.npz"),
            out / "sweep.npz",
            out / "summary.json",
        ]:
            path.unlink(missing_ok=True)
    # Temporary files of writes that a kill interrupted.
    for path in [*(out / "chunks").glob(".*.tmp"), *out.glob(".*.tmp")]:
        path.unlink(missing_ok=True)
    if force or not manifest.exists():
        with _atomic(manifest, True, True) as file:
            file.write(json.dumps(describe, indent=1) + "\n")


def _manifest_chunk_size(out: Path) -> int | None:
    try:
        return int(json.loads((out / "manifest.json").read_text())["chunk_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    chunk_size: int | None = None,
    force: bool = False,
    on_chunk: Callable[[Progress], None] | None = None,
    mesh: Mesh | None = None,
    evaluator: Evaluator | None = None,
) -> Path:
    """Evaluate every variant of `sweep`, chunk by chunk, into the directory `out`.

    **Arguments:**

    - `sweep`: the [`Sweep`][].
    - `out`: the output directory (created). If it holds an unfinished run of the
      same sweep, only the missing chunks are computed.
    - `chunk_size`: variants per chunk; default `sweep.chunk_size`, else the chunk
      size of the run being resumed, else [`default_chunk_size`][].
    - `force`: discard the results of another sweep found in `out`.
    - `on_chunk`: called with a [`Progress`][] after each chunk is on disk (and
      once per chunk found there). An exception it raises stops the sweep; the
      chunks already written stay.
    - `mesh`: the 1-D device mesh (axis `"variants"`; default: every device).
    - `evaluator`: an [`Evaluator`][] of this same `sweep` to reuse (its compiled
      code and its mesh), e.g. when one process runs a sweep several times.

    **Returns:** the combined file `out/sweep.npz` (see [`read_sweep`][]); beside
    it, `summary.json` lists the variants that differ from the nominal model.

    **Raises:** `ValueError` if `out` holds another sweep (unless `force`), or if
    `evaluator` belongs to another sweep.
    """
    if evaluator is not None:
        if evaluator.sweep is not sweep:
            raise ValueError("run_sweep: the evaluator was built for another Sweep object")
        mesh = evaluator.mesh
    out = Path(out)
    table = np.concatenate([sweep.nominal()[None, :], sweep.table()])  # row 0: nominal
    mesh = Mesh(np.asarray(jax.devices()), (AXIS,)) if mesh is None else mesh
    size = chunk_size or sweep.chunk_size or _manifest_chunk_size(out)
    size = size or default_chunk_size(sweep, list(mesh.devices.flat))
    describe = _describe(sweep, table, size)
    describe["fingerprint"] = hashlib.sha256(
        json.dumps(describe, sort_keys=True).encode()
    ).hexdigest()
    fingerprint = describe["fingerprint"]
    chunks = -(-table.shape[0] // size)
    writer = jax.process_index() == 0
    if writer:
        _start(out, describe, force)
    pending = np.asarray(
        [writer and _read_chunk(_chunk_path(out, k), k, fingerprint) is None for k in range(chunks)]
    )
    if jax.process_count() > 1:
        pending = np.asarray(multihost_utils.broadcast_one_to_all(pending))
    start = time.perf_counter()
    resumed = int(chunks - pending.sum())
    computed = 0
    done = 0
    for k in range(chunks):
        rows = slice(k * size, min((k + 1) * size, table.shape[0]))
        n = rows.stop - rows.start
        if pending[k]:
            evaluator = evaluator or Evaluator(sweep, mesh)
            # Every chunk is padded to the full chunk size: one compiled shape.
            x = np.concatenate(
                [table[rows], np.repeat(table[rows.stop - 1 : rows.stop], size - n, 0)]
            )
            results = {key: value[:n] for key, value in evaluator(x).items()}
            if writer:
                results.update(chunk=np.asarray(k), start=np.asarray(rows.start))
                results["fingerprint"] = np.asarray(fingerprint)
                with _atomic(_chunk_path(out, k), True, False) as file:
                    _write_npz(file, results)
            computed += 1
        done += n - (1 if k == 0 else 0)
        if on_chunk is not None:
            on_chunk(
                Progress(
                    k,
                    chunks,
                    done,
                    table.shape[0] - 1,
                    computed,
                    resumed,
                    time.perf_counter() - start,
                )
            )
    if writer:
        _combine(sweep, out, table, describe, chunks)
    return out / "sweep.npz"


def _changes(sweep: Sweep, nominal: Mapping[str, np.ndarray], data: Mapping[str, np.ndarray]):
    """Per-variant masks of what differs from the nominal model."""
    n = data["consistent"].shape[0]
    masks = {"inconsistent": ~data["consistent"]}
    if sweep.analyze:
        masks["rank"] = data["rank"] != nominal["rank"]
        masks["uniqueness"] = np.any(data["unique"] != nominal["unique"][None, :], axis=1)
    if sweep.simulate:
        masks["failed"] = ~data["success"]
        masks["singular_along"] = data["rank_min"] < data["rank_start"]
    masks["any"] = np.any(np.stack(list(masks.values())), axis=0).reshape(n)
    return masks


def _combine(sweep: Sweep, out: Path, table: np.ndarray, describe: dict, chunks: int) -> None:
    parts = [_read_chunk(_chunk_path(out, k), k, describe["fingerprint"]) for k in range(chunks)]
    missing = [k for k, part in enumerate(parts) if part is None]
    if missing:
        raise OSError(
            f"{out}: chunk files {missing} are missing or unreadable; run the sweep again"
        )
    keys = [key for key in parts[0] if key not in ("chunk", "start", "fingerprint")]
    everything = {key: np.concatenate([part[key] for part in parts]) for key in keys}
    nominal = {key: value[0] for key, value in everything.items()}
    data = {key: value[1:] for key, value in everything.items()}
    masks = _changes(sweep, nominal, data)
    targets = sweep.targets
    arrays: dict[str, Any] = {
        **data,
        **{f"nominal/{key}": value for key, value in nominal.items()},
        **{f"changed/{key}": value for key, value in masks.items()},
        "values": table[1:],
        "nominal_values": table[0],
        "parameter_names": np.asarray([t.name for t in targets], dtype=str),
        "parameter_units": np.asarray([t.unit for t in targets], dtype=str),
        "pair_names": np.asarray(sweep.model.pair_names, dtype=str),
        "marker_names": np.asarray(sweep.model.markers.names, dtype=str),
        "meta": np.asarray(json.dumps(describe)),
    }
    with _atomic(out / "sweep.npz", True, False) as file:
        _write_npz(file, arrays)
    summary = _summary(sweep, describe, nominal, data, masks)
    with _atomic(out / "summary.json", True, True) as file:
        file.write(json.dumps(summary, indent=1) + "\n")


def _summary(sweep, describe, nominal, data, masks) -> dict[str, Any]:
    def indices(mask):
        return [int(i) for i in np.flatnonzero(mask)]

    pairs = sweep.model.pair_names
    summary: dict[str, Any] = {
        "format": FORMAT,
        "name": sweep.name,
        "variants": describe["variants"],
        "parameters": [
            {"name": t.name, "unit": t.unit, "nominal": t.nominal} for t in sweep.targets
        ],
        "nominal": {"consistent": bool(nominal["consistent"])},
        "changed": {key: indices(mask) for key, mask in masks.items()},
        "counts": {key: int(np.sum(mask)) for key, mask in masks.items()},
    }
    if sweep.analyze:
        summary["nominal"].update(
            rank=int(nominal["rank"]),
            redundancy=int(nominal["redundancy"]),
            dof=int(nominal["dof"]),
            unique={name: bool(u) for name, u in zip(pairs, nominal["unique"], strict=True)},
        )
        ranks, counts = np.unique(data["rank"], return_counts=True)
        summary["ranks"] = {str(int(r)): int(c) for r, c in zip(ranks, counts, strict=True)}
        flips = data["unique"] != nominal["unique"][None, :]
        summary["uniqueness_changed_by_pair"] = {
            name: indices(flips[:, g]) for g, name in enumerate(pairs) if np.any(flips[:, g])
        }
    if sweep.simulate:
        violation = data["max_constraint_violation"]
        summary["nominal"].update(
            success=bool(nominal["success"]),
            max_constraint_violation=float(nominal["max_constraint_violation"]),
            rank_min=int(nominal["rank_min"]),
        )
        ok = data["success"]
        summary["max_constraint_violation"] = (
            {"max": float(np.max(violation[ok])), "median": float(np.median(violation[ok]))}
            if np.any(ok)
            else None
        )
    return summary


def read_sweep(path: str | Path) -> dict[str, Any]:
    """The arrays of a combined sweep file (`OUT/sweep.npz`), with `meta` parsed.

    Per-variant arrays under their [`OUTPUTS`][] names (first axis: variants), the
    nominal model's under `nominal/<name>`, the masks of [`run_sweep`][]'s summary
    under `changed/<reason>`, and `values` (variants, parameters),
    `nominal_values`, `parameter_names`, `parameter_units`, `pair_names`,
    `marker_names`.
    """
    with np.load(path, allow_pickle=False) as npz:
        data: dict[str, Any] = {name: npz[name] for name in npz.files}
    data["meta"] = json.loads(str(data["meta"]))
    if data["meta"].get("format") != FORMAT:
        raise ValueError(f"{path}: not a redundax sweep ({FORMAT!r})")
    return data


# ------------------------------------------------------------------- command line
SUMMARY = "solvability and simulation of a grid or random sample of parameter variants"
DESCRIPTION = (
    "Evaluate every variant of a mechanism described by the sweep file SWEEP (a [sweep] "
    "table naming the mechanism's configuration, the parameters and their values; see "
    "configs/README.md, Sweeps): the solvability analysis at its initial configuration "
    "(rank, degree of redundancy, which reactions are unique) and/or a simulation "
    "(success, final tracked points, largest constraint violation, rank along the "
    "motion). Variants are batched with jax.vmap, chunk by chunk, over every local "
    "device. Each chunk is written to OUT/chunks/ as soon as it is done: an interrupted "
    "sweep (Ctrl-C, kill) resumes where it stopped when the same command is run again. "
    "OUT/sweep.npz holds every result, OUT/summary.json the variants whose rank, "
    "solvability or simulation differs from the nominal model's. Exit status: 0 when "
    "the sweep is complete, 2 on invalid input, 130 when interrupted."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax sweep`."""
    parser.add_argument(
        "sweep", metavar="SWEEP", help="a sweep file (TOML), e.g. configs/sweep_mobile_robot.toml"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (required unless --list-parameters); an unfinished run of "
        "the same sweep there is resumed",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="variants per chunk (default: [sweep] chunk_size, else that of the run being "
        "resumed, else 64 simulations or 1024 analyses per CPU device, more on GPUs)",
    )
    parser.add_argument(
        "--t-final", type=float, default=None, metavar="T", help="end time of the simulations in s"
    )
    parser.add_argument(
        "--force", action="store_true", help="discard the results of another sweep in DIR"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument(
        "--list-parameters",
        action="store_true",
        help="list the parameter addresses of the mechanism (with their nominal values) and exit",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `sweep` to the subparsers of `redundax` (the same help texts as `COMMANDS`)."""
    parser = subparsers.add_parser("sweep", help=SUMMARY, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def _list_parameters(path: Path) -> int:
    try:
        mechanism = sweep_mechanism(path)
    except ConfigError:
        mechanism = path  # a mechanism configuration itself
    config = load_config(mechanism)
    targets = parameter_targets(config.model, config.state)
    width = max(len(name) for name in targets)
    print(f"parameters of {config.name} ({mechanism}), nominal values:")
    for name, target in targets.items():
        print(f"  {name:<{width}}  {target.nominal: .10g} {target.unit}")
    return 0


def _printer(quiet: bool) -> Callable[[Progress], None] | None:
    if quiet:
        return None
    tty = sys.stderr.isatty()

    def show(p: Progress) -> None:
        rate = ""
        if p.computed and p.elapsed > 0:
            per_chunk = p.elapsed / p.computed
            left = (p.chunks - p.chunk - 1) * per_chunk
            rate = f", {per_chunk:.1f} s per chunk, about {left / 60:.1f} min left"
        line = (
            f"redundax: sweep chunk {p.chunk + 1}/{p.chunks}: {p.done}/{p.variants} variants{rate}"
        )
        if p.resumed and p.chunk + 1 == p.resumed:
            line += f" ({p.resumed} chunk(s) found on disk)"
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
        if tty and p.chunk + 1 == p.chunks:
            print(file=sys.stderr)

    return show


def _print_summary(summary: dict[str, Any], data: dict[str, Any], path: Path) -> None:
    s = summary
    print(
        f"{s['name']}: {s['variants']} variants of {', '.join(p['name'] for p in s['parameters'])}"
    )
    nominal = s["nominal"]
    if "rank" in nominal:
        not_unique = [name for name, u in nominal["unique"].items() if not u]
        print(
            f"  nominal: rank {nominal['rank']}, redundancy {nominal['redundancy']}, "
            f"mobility {nominal['dof']}; NOT unique: {', '.join(not_unique) or 'none'}"
        )
        print("  ranks: " + ", ".join(f"{r}: {c} variants" for r, c in s["ranks"].items()))
    if "success" in nominal:
        violation = nominal["max_constraint_violation"]
        print(f"  nominal simulation: max constraint violation {violation:.3g}")
    reasons = {
        "rank": "rank differs from the nominal",
        "uniqueness": "some pair's uniqueness differs",
        "singular_along": "rank C drops along the motion (a singular configuration)",
        "failed": "integration failed",
        "inconsistent": "initial state violates the constraints",
    }
    names = data["parameter_names"].tolist()
    for key, text in reasons.items():
        if key not in s["counts"] or not s["counts"][key]:
            continue
        examples = s["changed"][key][:3]
        shown = "; ".join(
            f"#{i} ("
            + ", ".join(f"{n} = {v:.6g}" for n, v in zip(names, data["values"][i], strict=True))
            + ")"
            for i in examples
        )
        print(f"  {s['counts'][key]} variant(s): {text}, e.g. {shown}")
    for pair, idx in s.get("uniqueness_changed_by_pair", {}).items():
        print(f"    pair {pair}: uniqueness differs in {len(idx)} variant(s)")
    print(f"  {s['counts']['any']} of {s['variants']} variants differ from the nominal model")
    print(f"wrote {path} and {path.parent / 'summary.json'}")


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax sweep`: returns the exit status."""
    path = Path(args.sweep)
    if args.list_parameters:
        return _list_parameters(path)
    if args.out is None:
        raise ValueError("sweep: --out DIR is required (the directory of the results)")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise ValueError(f"--chunk-size: expected a positive integer, got {args.chunk_size}")
    if args.t_final is not None and not args.t_final > 0:
        raise ValueError(f"--t-final: expected a positive number, got {args.t_final}")
    sweep = load_sweep(path)
    if args.t_final is not None:
        sweep = dataclasses.replace(
            sweep, simulation=dataclasses.replace(sweep.simulation, t_final=args.t_final)
        )
    show = _printer(args.quiet)
    if show is not None:
        print(
            f"redundax: sweep {sweep.name} on {jax.device_count()} device(s) "
            f"({jax.devices()[0].platform}); the first chunk compiles",
            file=sys.stderr,
            flush=True,
        )
    try:
        result = run_sweep(
            sweep, args.out, chunk_size=args.chunk_size, force=args.force, on_chunk=show
        )
    except KeyboardInterrupt:
        print(
            f"\nredundax: sweep interrupted; the finished chunks are in {args.out}/chunks. "
            "Run the same command again to resume.",
            file=sys.stderr,
        )
        return 130
    summary = json.loads((result.parent / "summary.json").read_text())
    if args.json:
        print(json.dumps({**summary, "out": str(result)}))
    else:
        _print_summary(summary, read_sweep(result), result)
    return 0
