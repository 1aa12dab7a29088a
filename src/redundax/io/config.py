"""Planar and spatial mechanisms, and the options of their simulation, from TOML files.

The format is documented in `configs/README.md`. A configuration holds numbers,
names and a few type strings; it never executes code (custom residuals exist in
Python only). Type strings (pair and motion types, solvers, redundancy methods,
stabilisation, the initial-state policy) are mapped to objects in exactly one
table, [`TYPES`][redundax.io.TYPES], and nowhere else.

A mechanism is planar unless its `[mechanism]` table says `dim = 3`; that one key
decides the schema of everything else (bodies with a rotation matrix and an
inertia tensor, the spatial pair types, vectors of 3 numbers).

Everything is validated before anything is built, and *every* problem found is
reported in one [`ConfigError`][redundax.io.ConfigError] naming the file, the entry
(`pairs[3] ("D")`, entries counted from 0) and the key.

This module is the loader. The layers below it: `_errors` (`ConfigError` and the
place of a problem), `_checks` (value checks, shared with the sweep and design
files), `_schema` (the kinds of entries and [`TYPES`][redundax.io.TYPES]) and `_simulation` (the
`[simulation]` table, [`SimulationOptions`][redundax.io.SimulationOptions]).
"""

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from .._assembly import CONSISTENCY_TOL, check_consistency
from .._errors import ModelError
from .._model import Model, State
from .._motion import Constant
from .._options import PROJECTED_TOL, CheckInitial, ProjectInitial
from .._spec import GROUND, Mechanism
from ..joints._planar import RevoluteDriver, TranslationalDriver
from ..joints._spatial import RevoluteDriver3D, TranslationalDriver3D
from ..methods import Compliant, eliminate, joint_stiffness
from . import _checks as checks
from ._errors import ConfigError as ConfigError, Problem, Where
from ._schema import (
    SCHEMAS,
    TYPES as TYPES,
    UNKNOWN_DIMENSION,
    EliminatedRows as EliminatedRows,
    JointStiffnesses as JointStiffnesses,
    Kind as Kind,
    parse_table,
    parse_typed,
)
from ._simulation import (
    SimulationOptions as SimulationOptions,
    parse_simulation,
    simulation_keys,
)


@dataclasses.dataclass(frozen=True, eq=False)
class Config:
    """A loaded configuration: the mechanism, its model, its initial state.

    **Attributes:**

    - `path`: the file it was read from.
    - `name`: `[mechanism] name` (default: the file name without extension).
    - `dim`: 2 for a planar mechanism, 3 for a spatial one (`[mechanism] dim`).
    - `mechanism`: the [`redundax.Mechanism`][] described by the file.
    - `model`: `mechanism.build()`.
    - `state`: the initial [`redundax.State`][] (t = 0) from the bodies' poses and
      velocities; it satisfies the constraints to `consistency_tolerance`.
    - `simulation`: the [`SimulationOptions`][redundax.io.SimulationOptions] of the `[simulation]`
      table (defaults when absent); `simulation.raw` is the table as written.
    - `tracked`: names of the tracked points (`[[markers]]`), in file order.
    - `consistency_tolerance`: the tolerance the initial state was checked with
      (with `[simulation] initial = "project"` the state is not checked here but
      projected by `simulate`).
    """

    path: Path
    name: str
    mechanism: Mechanism
    model: Model
    state: State
    simulation: SimulationOptions
    tracked: tuple[str, ...]
    consistency_tolerance: float
    dim: int = 2

    @property
    def rheonomic(self) -> tuple[str, ...]:
        """Names of the pairs that prescribe motion: drivers whose d(t) is not a
        `"constant"` motion. Their reactions do work, so the mechanical energy of
        the mechanism is not conserved; knife edges are workless and do not count."""
        return tuple(
            pair.name
            for pair in self.mechanism.pairs
            if isinstance(pair, _DRIVERS) and not isinstance(pair.motion, Constant)
        )

    @property
    def nonconservative(self) -> tuple[str, ...]:
        """What does work that no potential describes, besides prescribed motion
        (`rheonomic`): force elements with damping (`forces[k] (damper)`),
        time-dependent loads (`forces[k] (time-dependent load)`) and user forces
        (`forces[k] (user force)`, Python only), joint friction (`forces[k] (joint
        friction)`), and constant
        torques on spatial bodies (`loads[k] (torque on a spatial body)`). The
        potential energy of gravity, constant loads and springs is in E; with any of
        these the mechanical energy E is not conserved."""
        what = {
            "time-dependent-load": "time-dependent load",
            "custom-force": "user force",
            "joint-friction": "joint friction",
        }
        out = [
            f"forces[{k}] ({what.get(f.kind, 'damper')})"
            for k, f in enumerate(self.mechanism.forces)
            if not f.conservative()
        ]
        if self.dim == 3:
            out += [
                f"loads[{k}] (torque on a spatial body)"
                for k, load in enumerate(self.mechanism.loads)
                if load.torque is not None and any(float(x) != 0.0 for x in load.torque)
            ]
        return tuple(out)


_DRIVERS: Final = (TranslationalDriver, RevoluteDriver, TranslationalDriver3D, RevoluteDriver3D)
"""The pairs whose `motion` may prescribe work-doing motion (`Config.rheonomic`)."""
_ARRAYS: Final = ("bodies", "pairs", "loads", "markers", "forces")
_TOP_LEVEL: Final = ("mechanism", *_ARRAYS, "simulation")
_BODY_KEYS: Final = ("body", "body_i", "body_j")


def _entries(document: dict[str, Any], table: str, problems: list[str]) -> list[tuple[str, dict]]:
    """The entries of the array of tables `[[table]]`, each with its location."""
    raw = document.get(table, [])
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        problems.append(Problem(table, f"expected an array of tables, written [[{table}]]"))
        return []
    out = []
    for k, entry in enumerate(raw):
        name = entry.get("name")
        shown = f'"{name}"' if isinstance(name, str) and name.isprintable() else repr(name)
        where = f"{table}[{k}] ({shown})" if isinstance(name, str) else f"{table}[{k}]"
        out.append((where, entry))
    return out


def _check_names(
    bodies: list[tuple[str, dict]],
    others: Mapping[str, list[tuple[str, dict]]],
    problems: list[str],
) -> None:
    """Duplicate names, the reserved name, and references to unknown bodies."""
    for what, entries in {"body": bodies, **others}.items():
        seen: set[str] = set()
        for where, raw in entries:
            name = raw.get("name")
            if not isinstance(name, str):
                continue
            if name in seen:
                problems.append(
                    Problem(where, f"duplicate {what} name {name!r}; names must be unique")
                )
            seen.add(name)
    for where, raw in bodies:
        if raw.get("name") == GROUND:
            problems.append(
                Problem(Where(where, "name"), f"{GROUND!r} is reserved for the fixed frame")
            )
    names = {raw["name"] for _, raw in bodies if isinstance(raw.get("name"), str)}
    known = [*sorted(names - {GROUND}), GROUND]
    for entries in others.values():
        for where, raw in entries:
            for key in _BODY_KEYS:
                body = raw.get(key)
                if isinstance(body, str) and body not in known:
                    problems.append(
                        Problem(
                            Where(where, key),
                            f"unknown body {body!r} {checks.suggest(body, known, 'known bodies')}",
                        )
                    )
            if isinstance(raw.get("body_i"), str) and raw.get("body_i") == raw.get("body_j"):
                problems.append(
                    Problem(where, f"body_i and body_j are the same body {raw['body_i']!r}")
                )
    pairs = [raw["name"] for _, raw in others.get("pair", []) if isinstance(raw.get("name"), str)]
    for where, raw in others.get("force", []):
        pair = raw.get("pair")
        if isinstance(pair, str) and pair not in pairs:
            problems.append(
                Problem(
                    Where(where, "pair"),
                    f"unknown pair {pair!r} {checks.suggest(pair, pairs, 'known pairs')}",
                )
            )


def _table_keys() -> dict[str, set[str]]:
    """The keys of each top-level table, planar and spatial alike (of every type of
    pair and force element, and of every `[simulation]` choice)."""
    schemas = SCHEMAS.values()

    def typed(table: Callable[[Any], str]) -> set[str]:
        return {
            "type",
            *(k for s in schemas for kind in TYPES[table(s)].values() for k in kind.keys),
        }

    return {
        "mechanism": {k for s in schemas for k in s.mechanism.keys},
        "simulation": set(simulation_keys()),
        "bodies": {k for s in schemas for k in s.body.keys},
        "pairs": typed(lambda s: s.pair_types),
        "loads": {k for s in schemas for k in s.load.keys},
        "markers": {k for s in schemas for k in s.marker.keys},
        "forces": typed(lambda s: s.force_types),
    }


def _unknown_top_level(key: str, value: Any) -> Problem:
    """An unknown key of the top level: a table (`[simulaton]`), or a key written
    before the first table header (`t_final = 1.0` above `[mechanism]`), which TOML
    puts at the top level; named with the table it belongs in, if any."""
    is_table = isinstance(value, dict) or (
        isinstance(value, list) and bool(value) and all(isinstance(e, dict) for e in value)
    )
    if is_table:
        return Problem("top level", f"unknown table {key!r} {checks.suggest(key, _TOP_LEVEL)}")
    headers = {
        table: f"[{table}]" if table in ("mechanism", "simulation") else f"[[{table}]]"
        for table in _TOP_LEVEL
    }
    owners = [headers[table] for table, keys in _table_keys().items() if key in keys]
    at_top = "a key above the first header is at the top level, where only tables are allowed"
    if len(owners) == 1:
        fix = f"it belongs in the {owners[0]} table: write it below the {owners[0]} header"
    elif owners:
        fix = (
            f"it is a key of {', '.join(owners[:-1])} and {owners[-1]}: write it below the "
            "header of the table it belongs in"
        )
    else:
        fix = f"the top level has only the tables {', '.join(headers.values())}"
    return Problem(Where("top level", key), f"unknown key; {fix} ({at_top})")


def _problems(error: ValueError) -> list[str]:
    """The problems a library check found (its `ModelError.problems`)."""
    return list(error.problems) if isinstance(error, ModelError) else [str(error)]


# --------------------------------------------------------------------------- loading
@dataclasses.dataclass(frozen=True)
class _Parsed:
    mechanism: Mechanism
    options: dict[str, Any]
    simulation: dict[str, Any]


def _parse(path: Path, document: dict[str, Any]) -> _Parsed:
    """Validate a parsed TOML document and describe its `Mechanism`."""
    problems: list[str] = []
    for key, value in document.items():
        if key not in _TOP_LEVEL:
            problems.append(_unknown_top_level(key, value))
    if "bodies" not in document:
        problems.append(Problem("top level", "no bodies; add at least one [[bodies]] entry"))

    header = document.get("mechanism", {})
    if not isinstance(header, dict):
        problems.append(Problem("mechanism", "expected a table, written [mechanism]"))
        header = {}
    dim = header.get("dim", 2)
    schema = SCHEMAS.get(dim) if isinstance(dim, int) and not isinstance(dim, bool) else None
    kind = UNKNOWN_DIMENSION if schema is None else schema.mechanism
    options = parse_table(header, kind, "mechanism", problems) or {}
    simulation_table = document.get("simulation", {})
    if not isinstance(simulation_table, dict):
        problems.append(Problem("simulation", "expected a table, written [simulation]"))
        simulation_table = {}
    simulation = parse_simulation(simulation_table, problems)
    if schema is None:  # reported by `_keys`; every entry's schema depends on it
        raise ConfigError(path, problems)

    raw = {table: _entries(document, table, problems) for table in _ARRAYS}

    def build(table: str, kind: Kind) -> list[Any]:
        parsed = [parse_table(entry, kind, where, problems) for where, entry in raw[table]]
        return [kind.build(**values) for values in parsed if values is not None]

    bodies = build("bodies", schema.body)
    pairs = [
        parse_typed(entry, schema.pair_types, where, problems) for where, entry in raw["pairs"]
    ]
    loads = build("loads", schema.load)
    markers = build("markers", schema.marker)
    forces = [
        parse_typed(entry, schema.force_types, where, problems) for where, entry in raw["forces"]
    ]
    _check_names(
        raw["bodies"],
        {
            "pair": raw["pairs"],
            "load": raw["loads"],
            "marker": raw["markers"],
            "force": raw["forces"],
        },
        problems,
    )
    if problems or simulation is None:
        raise ConfigError(path, problems, hint=_dimension_hint(dim, raw))
    mechanism = Mechanism(
        bodies=bodies,
        pairs=pairs,
        gravity=options.get("gravity", (0.0,) * dim),
        loads=loads,
        markers=markers,
        forces=forces,
    )
    return _Parsed(mechanism, {**options, "dim": dim}, simulation)


def _dimension_hint(dim: int, raw: Mapping[str, list[tuple[str, dict]]]) -> str | None:
    """A hint when the entries look like those of the other dimension."""
    bodies = [entry for _, entry in raw["bodies"]]
    types = [entry.get("type") for _, entry in raw["pairs"]]
    sizes = {len(b["position"]) for b in bodies if isinstance(b.get("position"), list)}
    if dim == 2 and (
        any("rotation" in b for b in bodies)
        or 3 in sizes
        or any(isinstance(t, str) and t in TYPES["spatial-pair"] for t in types)
    ):
        return (
            "hint: this looks like a spatial mechanism; a file is planar unless its "
            "[mechanism] table says dim = 3 (configs/README.md)"
        )
    if dim == 3 and (
        any("angle" in b for b in bodies)
        or 2 in sizes
        or any(isinstance(t, str) and t in TYPES["pair"] for t in types)
    ):
        return (
            "hint: this looks like a planar mechanism, but [mechanism] dim = 3; remove that "
            "key for a planar one (configs/README.md)"
        )
    return None


def load_config(path: str | os.PathLike) -> Config:
    """Read, validate and build a mechanism configuration.

    **Arguments:**

    - `path`: a TOML file in the format of `configs/README.md`, or an MJCF
      (`.xml`) or URDF (`.urdf`) file, read by [`redundax.io.from_mjcf`][] (needs the
      `mjcf` extra) at its reference configuration with the default
      [`SimulationOptions`][redundax.io.SimulationOptions].

    **Returns:** a [`Config`][redundax.io.Config] with the mechanism, its `Model`, its initial
    `State` and its [`SimulationOptions`][redundax.io.SimulationOptions].

    **Raises:** [`ConfigError`][redundax.io.ConfigError] (a `ValueError`) listing every problem: a
    missing file, a TOML syntax error (with its line), unknown or missing keys, values of
    the wrong type or length, non-positive masses or inertias, unknown pair or
    motion types, unknown or duplicate names; for spatial files (`[mechanism]
    dim = 3`) also improper rotation matrices, unrealisable inertia tensors,
    planar pair types, missing axes or points, and universal joints whose pins
    are not perpendicular; an initial state that violates
    the constraints by more than `[mechanism] consistency_tolerance` (unless
    `[simulation] initial = "project"`), invalid `[simulation]` options, and
    `eliminate` rows that are not redundant.

    !!! example
        ```python
        from redundax.io import load_config
        config = load_config("configs/mobile_robot.toml")
        report = rx.analyze_solvability(config.model, config.state.q)
        ```
    """
    path = Path(path)
    if path.suffix.lower() in MUJOCO_SUFFIXES:
        return _load_mujoco(path)
    document = checks.read_toml(path, "a configuration file")

    parsed = _parse(path, document)
    mechanism, options, simulation = parsed.mechanism, parsed.options, parsed.simulation
    try:
        model = mechanism.build()
        state = mechanism.initial_state()
    except ValueError as err:
        raise ConfigError(path, _problems(err)) from None

    tol = options.get("consistency_tolerance", CONSISTENCY_TOL)
    projecting = isinstance(simulation["initial"], ProjectInitial)
    # The initial state is checked with the file's tolerance (after a projection,
    # with what the projection promises at least).
    simulation["initial"] = (
        ProjectInitial(simulation["initial"].projection, max(tol, PROJECTED_TOL))
        if projecting
        else CheckInitial(tol)
    )
    if not projecting:
        _check_initial(
            path,
            model,
            state,
            tol,
            hint="fix the bodies' position/angle/velocity so that every pair is assembled, "
            'loosen [mechanism] consistency_tolerance, or set [simulation] initial = "project"',
        )

    stiff = simulation["method"]
    if isinstance(stiff, JointStiffnesses):
        try:
            k = joint_stiffness(model, stiff.joint_stiffness, dict(stiff.pair_stiffness))
        except ValueError as err:
            raise ConfigError(
                path,
                [Problem(Where("simulation", "pair_stiffness"), m) for m in _problems(err)],
            ) from None
        simulation["method"] = Compliant(k)

    rows = simulation["method"]
    if isinstance(rows, EliminatedRows):
        key = "method" if rows.rows is None else "eliminate"
        # Rows are chosen where the run starts: the projected state when the file
        # asks for the projection (off the constraints, dependent rows look independent).
        q = state.q
        if projecting:
            q, _ = simulation["initial"].projection(model, state.q, state.qd, state.t)
        try:
            simulation["method"] = eliminate(model, q, state.t, rows=rows.rows)
        except ValueError as err:
            raise ConfigError(
                path, [Problem(Where("simulation", key), m) for m in _problems(err)]
            ) from None

    return Config(
        path=path,
        name=options.get("name", path.stem),
        mechanism=mechanism,
        model=model,
        state=state,
        simulation=SimulationOptions(**simulation),
        tracked=tuple(mk.name for mk in mechanism.markers),
        consistency_tolerance=tol,
        dim=options["dim"],
    )


def _check_initial(path: Path, model: Model, state: State, tol: float, hint: str) -> None:
    """[`ConfigError`][redundax.io.ConfigError] naming every pair the initial state violates by more
    than
    `tol`."""
    try:
        check_consistency(model, state, tol)
    except ValueError as err:
        raise ConfigError(
            path,
            [f"inconsistent initial configuration: {item}" for item in _problems(err)],
            hint=hint,
        ) from None


MUJOCO_SUFFIXES: Final = (".xml", ".urdf", ".mjcf")
"""The file name extensions [`load_config`][redundax.io.load_config] hands to MuJoCo's compiler."""


def _load_mujoco(path: Path) -> Config:
    """A [`Config`][redundax.io.Config] from an MJCF or URDF file: the mechanism MuJoCo compiles, at
    its reference configuration, with the default simulation options."""
    from ._mujoco import from_mjcf  # noqa: PLC0415 - mujoco is optional

    mechanism = from_mjcf(path)
    try:
        model = mechanism.build()
        state = mechanism.initial_state()
    except ValueError as err:
        raise ConfigError(path, _problems(err)) from None
    _check_initial(
        path,
        model,
        state,
        CONSISTENCY_TOL,
        hint="the reference configuration (qpos0) must close every loop: set the "
        "joints' ref (or the bodies' poses) so that each connect and weld holds",
    )
    return Config(
        path=path,
        name=path.stem,
        mechanism=mechanism,
        model=model,
        state=state,
        simulation=SimulationOptions(),
        tracked=tuple(mk.name for mk in mechanism.markers),
        consistency_tolerance=CONSISTENCY_TOL,
        dim=3,
    )


def load_mechanism(path: str | os.PathLike) -> Mechanism:
    """Read and validate a configuration and return only its `Mechanism`.

    **Arguments:**

    - `path`: a TOML file in the format of `configs/README.md`.

    **Returns:** the [`redundax.Mechanism`][] (validated: it builds, and its initial
    state satisfies the constraints).

    **Raises:** [`ConfigError`][redundax.io.ConfigError], as
    [`load_config`][redundax.io.load_config].
    """
    return load_config(path).mechanism
