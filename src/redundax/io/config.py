"""Planar and spatial mechanisms, and the options of their simulation, from TOML files.

The format is documented in `configs/README.md`. A configuration holds numbers,
names and a few type strings; it never executes code (custom residuals exist in
Python only). Type strings (pair and motion types, solvers, redundancy methods,
stabilisation, the initial-state policy) are mapped to objects in exactly one
table, [`TYPES`][], and nowhere else.

A mechanism is planar unless its `[mechanism]` table says `dim = 3`; that one key
decides the schema of everything else (bodies with a rotation matrix and an
inertia tensor, the spatial pair types, vectors of 3 numbers).

Everything is validated before anything is built, and *every* problem found is
reported in one [`ConfigError`][] naming the file, the entry (`pairs[3] ("D")`,
entries counted from 0) and the key.
"""

import dataclasses
import difflib
import math
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import diffrax
import numpy as np

from .._assembly import CONSISTENCY_TOL, check_consistency
from .._dynamics import (
    AbstractRedundancyMethod,
    AugmentedLagrangian,
    Compliant,
    NullSpace,
    Penalty,
    WeightedMinimumNorm,
    eliminate,
    joint_stiffness,
)
from .._model import Model, State
from .._motion import Constant, Polynomial, SmoothSteps
from .._spatial_spec import (
    Cylindrical,
    Prismatic3D,
    Revolute3D,
    RevoluteDriver3D,
    SpatialBody,
    Spherical,
    TranslationalDriver3D,
    Universal,
    Weld3D,
    check_inertia,
    check_rotation,
)
from .._spec import (
    GROUND,
    Body,
    KnifeEdge,
    Load,
    Marker,
    Mechanism,
    Revolute,
    RevoluteDriver,
    Translational,
    TranslationalDriver,
    Weld,
)
from .._stabilisation import Baumgarte, Projection


class ConfigError(ValueError):
    """An invalid configuration file.

    The message starts with one line `FILE: first problem`, which names the entry
    and the key; when there are several problems, all of them follow, one per line.

    **Attributes:**

    - `path`: the file, as given.
    - `problems`: every problem found, each naming its entry and key.
    """

    def __init__(self, path: str | os.PathLike, problems: Sequence[str], hint: str | None = None):
        self.path = str(path)
        self.problems = tuple(problems)
        message = f"{self.path}: {self.problems[0]}"
        if len(self.problems) > 1:
            message += f" (and {len(self.problems) - 1} more problem(s), all listed below)"
            message += "".join(f"\n  - {p}" for p in self.problems)
        if hint is not None:
            message += f"\n{hint}"
        super().__init__(message)


@dataclasses.dataclass(frozen=True, eq=False)
class SimulationOptions:
    """The `[simulation]` table, checked and mapped to objects (defaults where a key
    is absent), ready for [`redundax.simulate`][].

    **Attributes:**

    - `t_final`: end time [s] (`t_final`, default 10).
    - `rtol`, `atol`: tolerances of the step-size controller (1e-8, 1e-10).
    - `n_save`: number of equally spaced saved states in [0, t_final] (201).
    - `max_steps`: the most integrator steps before giving up (100000).
    - `solver`: the Diffrax solver (`solver`, default `diffrax.Tsit5()`).
    - `method`: the [`redundax.AbstractRedundancyMethod`][] (`method`, default
      `NullSpace()`); `"elimination"` is decided by [`redundax.eliminate`][] at the
      initial configuration.
    - `stabilisation`: `Baumgarte(alpha, beta)` or None (`stabilisation`).
    - `projection`: `Projection()` at every saved state, or None (`projection`).
    - `initial_projection`: `Projection()` when `initial = "project"`, None when
      the initial state is refused unless consistent (`initial = "refuse"`).
    - `choices`: the type string chosen (or defaulted) for each of `solver`,
      `method`, `stabilisation` and `initial`, for reports.
    - `raw`: the table as written in the file (`{}` when absent).
    """

    t_final: float = 10.0
    rtol: float = 1e-8
    atol: float = 1e-10
    n_save: int = 201
    max_steps: int = 100_000
    solver: diffrax.AbstractSolver = dataclasses.field(default_factory=diffrax.Tsit5)
    method: AbstractRedundancyMethod = dataclasses.field(default_factory=NullSpace)
    stabilisation: Baumgarte | None = dataclasses.field(default_factory=Baumgarte)
    projection: Projection | None = None
    initial_projection: Projection | None = None
    choices: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: dict(_SIMULATION_CHOICES)
    )
    raw: Mapping[str, Any] = dataclasses.field(default_factory=dict)


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
    - `simulation`: the [`SimulationOptions`][] of the `[simulation]` table
      (defaults when absent); `simulation.raw` is the table as written.
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


# --------------------------------------------------------------------------- values
# A check takes (value, where, problems) and returns the parsed value, or None after
# recording a problem.
_Check = Callable[[Any, str, list[str]], Any]


def _describe(value: Any) -> str:
    """A value and its TOML type, for messages."""
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return f"an array of length {len(value)}"
    kinds = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}
    text = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"{text} ({kinds.get(type(value), type(value).__name__)})"


def _number(value: Any, where: str, problems: list[str]) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = ""
        if isinstance(value, str):
            try:
                float(value)
                hint = "; write the number without quotes"
            except ValueError:
                pass
        problems.append(f"{where}: expected a number, got {_describe(value)}{hint}")
        return None
    if not math.isfinite(value):
        problems.append(f"{where}: must be finite, got {value}")
        return None
    return float(value)


def _positive(value: Any, where: str, problems: list[str]) -> float | None:
    x = _number(value, where, problems)
    if x is not None and x <= 0.0:
        problems.append(f"{where}: must be positive, got {x}")
        return None
    return x


def _numbers(value: Any, where: str, problems: list[str]) -> np.ndarray | None:
    if not isinstance(value, list) or not value:
        problems.append(f"{where}: expected a non-empty array of numbers, got {_describe(value)}")
        return None
    out = [_number(v, f"{where}[{k}]", problems) for k, v in enumerate(value)]
    return None if None in out else np.asarray(out, dtype=float)


def _vector(value: Any, where: str, problems: list[str]) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) != 2:
        problems.append(f"{where}: expected a vector [x, y] of 2 numbers, got {_describe(value)}")
        return None
    out = _numbers(value, where, problems)
    return None if out is None else (float(out[0]), float(out[1]))


def _direction(value: Any, where: str, problems: list[str]) -> tuple[float, float] | None:
    v = _vector(value, where, problems)
    if v is not None and v == (0.0, 0.0):
        problems.append(f"{where}: must be a non-zero vector (it is normalised to unit length)")
        return None
    return v


def _vector3(value: Any, where: str, problems: list[str]) -> tuple[float, float, float] | None:
    if not isinstance(value, list) or len(value) != 3:
        problems.append(
            f"{where}: expected a vector [x, y, z] of 3 numbers, got {_describe(value)}"
        )
        return None
    out = _numbers(value, where, problems)
    return None if out is None else (float(out[0]), float(out[1]), float(out[2]))


def _direction3(value: Any, where: str, problems: list[str]) -> tuple[float, float, float] | None:
    v = _vector3(value, where, problems)
    if v is not None and v == (0.0, 0.0, 0.0):
        problems.append(f"{where}: must be a non-zero vector (it is normalised to unit length)")
        return None
    return v


class _Collector:
    """The `add` interface of the library's checks, appending to a problem list."""

    def __init__(self, problems: list[str]):
        self.problems = problems

    def add(self, message: str) -> None:
        self.problems.append(message)


def _matrix3(value: Any, where: str, problems: list[str]) -> np.ndarray | None:
    shape = "a 3 × 3 matrix written as its 3 rows, [[a, b, c], [d, e, f], [g, h, i]]"
    if not isinstance(value, list) or len(value) != 3:
        problems.append(f"{where}: expected {shape}, got {_describe(value)}")
        return None
    before = len(problems)
    rows = []
    for k, row in enumerate(value):
        if not isinstance(row, list) or len(row) != 3:
            problems.append(f"{where}[{k}]: expected a row of 3 numbers, got {_describe(row)}")
            continue
        rows.append(_numbers(row, f"{where}[{k}]", problems))
    return None if len(problems) > before else np.asarray(rows, dtype=float)


def _rotation(value: Any, where: str, problems: list[str]) -> tuple[tuple[float, ...], ...] | None:
    R = _matrix3(value, where, problems)
    if R is None:
        return None
    before = len(problems)
    check_rotation(_Collector(problems), R, where)
    return None if len(problems) > before else tuple(tuple(float(x) for x in r) for r in R)


def _inertia3(value: Any, where: str, problems: list[str]) -> Any:
    """Principal moments `[Ixx, Iyy, Izz]`, or a symmetric 3 × 3 tensor."""
    if isinstance(value, list) and len(value) == 3 and not any(isinstance(v, list) for v in value):
        arr = _numbers(value, where, problems)
    elif isinstance(value, list) and len(value) == 3:
        arr = _matrix3(value, where, problems)
    else:
        problems.append(
            f"{where}: expected 3 principal moments [Ixx, Iyy, Izz] or a 3 × 3 tensor "
            f"(3 rows of 3 numbers), got {_describe(value)}"
        )
        return None
    if arr is None:
        return None
    before = len(problems)
    check_inertia(_Collector(problems), arr, where)
    if len(problems) > before:
        return None
    return tuple(arr.tolist()) if arr.ndim == 1 else tuple(tuple(r) for r in arr.tolist())


def _name(value: Any, where: str, problems: list[str]) -> str | None:
    if not isinstance(value, str) or not value:
        problems.append(f"{where}: expected a non-empty string, got {_describe(value)}")
        return None
    return value


def _non_negative(value: Any, where: str, problems: list[str]) -> float | None:
    x = _number(value, where, problems)
    if x is not None and x < 0.0:
        problems.append(f"{where}: must be zero or positive, got {x}")
        return None
    return x


def _dimension(value: Any, where: str, problems: list[str]) -> int | None:
    k = _integer(value, where, problems)
    if k is not None and k not in (2, 3):
        problems.append(f"{where}: must be 2 (planar) or 3 (spatial), got {k}")
        return None
    return k


def _integer(value: Any, where: str, problems: list[str]) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(f"{where}: expected an integer, got {_describe(value)}")
        return None
    return value


def _save_count(value: Any, where: str, problems: list[str]) -> int | None:
    k = _integer(value, where, problems)
    if k is not None and k < 2:
        problems.append(f"{where}: must be at least 2 (the initial and the final state), got {k}")
        return None
    return k


def _positive_integer(value: Any, where: str, problems: list[str]) -> int | None:
    k = _integer(value, where, problems)
    if k is not None and k < 1:
        problems.append(f"{where}: must be a positive integer, got {k}")
        return None
    return k


def _boolean(value: Any, where: str, problems: list[str]) -> bool | None:
    if not isinstance(value, bool):
        problems.append(f"{where}: expected true or false, got {_describe(value)}")
        return None
    return value


def _rows(value: Any, where: str, problems: list[str]) -> tuple[int, ...] | None:
    if not isinstance(value, list) or not value:
        problems.append(
            f"{where}: expected a non-empty array of row numbers (1-based), such as [6, 21], "
            f"got {_describe(value)}"
        )
        return None
    rows = [_integer(v, f"{where}[{k}]", problems) for k, v in enumerate(value)]
    if None in rows:
        return None
    if any(r < 1 for r in rows):
        problems.append(f"{where}: rows are numbered from 1, got {rows}")
        return None
    if len(set(rows)) != len(rows):
        problems.append(f"{where}: duplicate rows in {rows}")
        return None
    return tuple(rows)


def _motion(value: Any, where: str, problems: list[str]) -> Any:
    if not isinstance(value, dict):
        problems.append(
            f'{where}: expected a table such as {{ type = "constant", value = 0.0 }}, '
            f"got {_describe(value)}"
        )
        return None
    return _typed(value, "motion", where, problems)


def _increasing_knots(values: dict[str, Any], where: str, problems: list[str]) -> None:
    times, knots = values["times"], values["values"]
    if len(times) != len(knots):
        problems.append(
            f"{where}: 'times' and 'values' must have the same length, got {len(times)} and "
            f"{len(knots)}"
        )
    if len(times) < 2 or np.any(np.diff(times) <= 0.0):
        problems.append(f"{where} key 'times': expected at least 2 strictly increasing times")


# --------------------------------------------------------------------------- schemas
@dataclasses.dataclass(frozen=True)
class Kind:
    """What one kind of entry is built into, and the keys it accepts.

    **Attributes:**

    - `build`: the constructor, called with the parsed keys as keyword arguments.
    - `keys`: every accepted key and the check that parses its value.
    - `required`: the keys that must be present; the others take the defaults of
      `build` (listed in `configs/README.md`).
    - `check`: an optional cross-key check on the parsed values.
    - `names`: the keyword of `build` for a key whose name differs from it
      (`baumgarte_alpha` → `alpha`).
    """

    build: Callable[..., Any]
    keys: Mapping[str, _Check]
    required: tuple[str, ...]
    check: Callable[[dict[str, Any], str, list[str]], None] | None = None
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of `build` from parsed key values."""
        return {self.names.get(key, key): value for key, value in values.items()}


@dataclasses.dataclass(frozen=True)
class EliminatedRows:
    """`method = "elimination"` as read from a file, before the model exists.

    `rows`: the rows of C to drop (1-based), or None to let the pivoted QR choose.
    [`load_config`][] turns it into `redundax.eliminate(model, q0, t0, rows)`.
    """

    rows: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class JointStiffnesses:
    """`method = "compliant"` as read from a file, before the model exists.

    `joint_stiffness`: one stiffness for every joint row, or (force rows, moment
    rows) [N/m, N m/rad]; `pair_stiffness`: {pair: k or one k per row}.
    [`load_config`][] turns it into `redundax.Compliant(redundax.joint_stiffness(
    model, joint_stiffness, pair_stiffness))`.
    """

    joint_stiffness: float | tuple[float, float] = 1.0
    pair_stiffness: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _stiffness(value: Any, where: str, problems: list[str]) -> Any:
    """A positive number, or [force rows, moment rows] of two."""
    if isinstance(value, list):
        parsed = [_positive(v, where, problems) for v in value]
        if len(value) != 2:
            problems.append(
                f"{where}: expected a stiffness or [force rows, moment rows], got {len(value)} "
                "numbers"
            )
            return None
        return None if None in parsed else (parsed[0], parsed[1])
    return _positive(value, where, problems)


def _pair_stiffness(value: Any, where: str, problems: list[str]) -> Any:
    """A table {pair: stiffness or [one per row]}."""
    if not isinstance(value, dict):
        problems.append(
            f"{where}: expected a table {{ PAIR = stiffness, ... }}, got {_describe(value)}"
        )
        return None
    out = {}
    for name, k in value.items():
        if isinstance(k, list):
            ks = [_positive(v, f"{where} ({name!r})", problems) for v in k]
            out[name] = None if None in ks else tuple(ks)
        else:
            out[name] = _positive(k, f"{where} ({name!r})", problems)
    return None if None in out.values() else out


def _nothing() -> None:
    """The object of a choice that means "none" (`stabilisation = "none"`)."""
    return None


_TWO_BODIES: Final = {
    "name": _name,
    "body_i": _name,
    "body_j": _name,
    "point_i": _vector,
    "point_j": _vector,
}
_TWO_BODIES_REQUIRED: Final = ("name", "body_i", "body_j")


def _joint_geometry(universal: bool) -> Callable[[dict[str, Any], str, list[str]], None]:
    """The cross-key check of a spatial joint: where its point is, and its frame."""

    def check(values: dict[str, Any], where: str, problems: list[str]) -> None:
        local = [key for key in ("point_i", "point_j") if key in values]
        if "point" in values and local:
            problems.append(
                f"{where} key {local[0]!r}: give either 'point' (global, at the initial "
                "configuration) or 'point_i' and 'point_j' (body frames), not both"
            )
        elif "point" not in values and len(local) < 2:
            missing = "'point'" if not local else f"{({'point_i', 'point_j'} - set(local)).pop()!r}"
            problems.append(
                f"{where}: missing required key {missing}: give 'point' (global, at the initial "
                "configuration) or both 'point_i' and 'point_j' (body frames)"
            )
        axis, normal = values.get("axis"), values.get("normal")
        if normal is None:
            return
        if axis is None:
            problems.append(
                f"{where} key 'normal': needs 'axis' (it sets the direction e1, perpendicular "
                "to the axis e0)"
            )
            return
        a, n = np.asarray(axis), np.asarray(normal)
        cos = abs(float(a @ n)) / float(np.linalg.norm(a) * np.linalg.norm(n))
        if universal and cos > _PERPENDICULAR_TOL:
            problems.append(
                f"{where} key 'normal': the pins 'axis' (body i) and 'normal' (body j) of a "
                f"universal joint must be perpendicular, got cos = {cos:.3g}"
            )
        elif 1.0 - cos <= _PERPENDICULAR_TOL:
            problems.append(f"{where} key 'normal': must not be parallel to 'axis'")

    return check


_PERPENDICULAR_TOL: Final = 1e-9
"""|cos| of the angle between the pins of a universal joint, above which they are not
perpendicular (the library's test)."""


def _joint3d(spec: type, motion: bool = False) -> Kind:
    """The keys of a spatial joint `spec` (every field of it can be set from a file)."""
    keys: dict[str, _Check] = {
        "name": _name,
        "body_i": _name,
        "body_j": _name,
        "point": _vector3,
        "point_i": _vector3,
        "point_j": _vector3,
        "axis": _direction3,
        "normal": _direction3,
    }
    required = list(_TWO_BODIES_REQUIRED)
    if motion:
        keys["motion"] = _motion
        required.append("motion")
    if spec.axis_required:
        required.append("axis")
    universal = spec is Universal
    if universal:
        required.append("normal")
    return Kind(spec, keys, tuple(required), _joint_geometry(universal))


TYPES: Final[Mapping[str, Mapping[str, Kind]]] = {
    "pair": {
        "revolute": Kind(Revolute, _TWO_BODIES, _TWO_BODIES_REQUIRED),
        "translational": Kind(
            Translational,
            {**_TWO_BODIES, "normal": _direction, "angle": _number},
            _TWO_BODIES_REQUIRED,
        ),
        "weld": Kind(Weld, {**_TWO_BODIES, "angle": _number}, _TWO_BODIES_REQUIRED),
        "translational-driver": Kind(
            TranslationalDriver,
            {**_TWO_BODIES, "direction": _direction, "motion": _motion},
            (*_TWO_BODIES_REQUIRED, "motion"),
        ),
        "revolute-driver": Kind(
            RevoluteDriver,
            {"name": _name, "body_i": _name, "body_j": _name, "motion": _motion},
            (*_TWO_BODIES_REQUIRED, "motion"),
        ),
        "knife-edge": Kind(
            KnifeEdge,
            {"name": _name, "body": _name, "point": _vector, "normal": _direction},
            ("name", "body"),
        ),
    },
    "spatial-pair": {
        "revolute-3d": _joint3d(Revolute3D),
        "spherical": _joint3d(Spherical),
        "universal": _joint3d(Universal),
        "weld-3d": _joint3d(Weld3D),
        "prismatic-3d": _joint3d(Prismatic3D),
        "cylindrical": _joint3d(Cylindrical),
        "revolute-driver-3d": _joint3d(RevoluteDriver3D, motion=True),
        "translational-driver-3d": _joint3d(TranslationalDriver3D, motion=True),
    },
    "motion": {
        "constant": Kind(Constant, {"value": _number}, ("value",)),
        "polynomial": Kind(Polynomial, {"coefficients": _numbers}, ("coefficients",)),
        "smooth-steps": Kind(
            SmoothSteps,
            {"times": _numbers, "values": _numbers},
            ("times", "values"),
            _increasing_knots,
        ),
    },
    "solver": {
        "tsit5": Kind(diffrax.Tsit5, {}, ()),
        "dopri5": Kind(diffrax.Dopri5, {}, ()),
        "dopri8": Kind(diffrax.Dopri8, {}, ()),
        "kvaerno5": Kind(diffrax.Kvaerno5, {}, ()),
    },
    "method": {
        "null-space": Kind(NullSpace, {}, ()),
        "weighted-minimum-norm": Kind(WeightedMinimumNorm, {}, ()),
        "elimination": Kind(EliminatedRows, {"eliminate": _rows}, (), names={"eliminate": "rows"}),
        "augmented-lagrangian": Kind(AugmentedLagrangian, {"penalty": _positive}, ()),
        "penalty": Kind(
            Penalty, {"stiffness": _positive, "omega": _non_negative, "xi": _non_negative}, ()
        ),
        "compliant": Kind(
            JointStiffnesses,
            {"joint_stiffness": _stiffness, "pair_stiffness": _pair_stiffness},
            (),
        ),
    },
    "stabilisation": {
        "baumgarte": Kind(
            Baumgarte,
            {"baumgarte_alpha": _non_negative, "baumgarte_beta": _non_negative},
            (),
            names={"baumgarte_alpha": "alpha", "baumgarte_beta": "beta"},
        ),
        "none": Kind(_nothing, {}, ()),
    },
    "initial": {
        "refuse": Kind(_nothing, {}, ()),
        "project": Kind(Projection, {}, ()),
    },
}
"""The one table from type strings to objects. `TYPES["pair"]` for `[[pairs]] type`
of a planar mechanism, `TYPES["spatial-pair"]` of a spatial one (`[mechanism] dim =
3`; the strings are the `Pair.kind` of the pairs they build), `TYPES["motion"]` for
the `motion` tables of drivers; `TYPES["solver"]`,
`TYPES["method"]`, `TYPES["stabilisation"]` and `TYPES["initial"]` for the keys of
the same names in `[simulation]`, whose other keys depend on the choice (`eliminate`
for `"elimination"`, `stiffness` for `"penalty"`, ...)."""

_SIMULATION_CHOICES: Final = {
    "solver": "tsit5",
    "method": "null-space",
    "stabilisation": "baumgarte",
    "initial": "refuse",
}
"""The `[simulation]` keys that choose an entry of `TYPES[key]`, and their defaults."""

_SIMULATION: Final = Kind(
    SimulationOptions,
    {
        "t_final": _positive,
        "rtol": _positive,
        "atol": _positive,
        "n_save": _save_count,
        "max_steps": _positive_integer,
        "projection": _boolean,
    },
    (),
)
"""The `[simulation]` keys that do not depend on a choice."""

_BODY: Final = Kind(
    Body,
    {
        "name": _name,
        "mass": _positive,
        "inertia": _positive,
        "position": _vector,
        "angle": _number,
        "velocity": _vector,
        "angular_velocity": _number,
    },
    ("name", "mass", "inertia"),
)
_LOAD: Final = Kind(
    Load, {"body": _name, "force": _vector, "point": _vector, "torque": _number}, ("body",)
)
_MARKER: Final = Kind(Marker, {"name": _name, "body": _name, "point": _vector}, ("name", "body"))
_SPATIAL_BODY: Final = Kind(
    SpatialBody,
    {
        "name": _name,
        "mass": _positive,
        "inertia": _inertia3,
        "position": _vector3,
        "rotation": _rotation,
        "velocity": _vector3,
        "angular_velocity": _vector3,
    },
    ("name", "mass", "inertia"),
)
_SPATIAL_LOAD: Final = Kind(
    Load, {"body": _name, "force": _vector3, "point": _vector3, "torque": _vector3}, ("body",)
)
_SPATIAL_MARKER: Final = Kind(
    Marker, {"name": _name, "body": _name, "point": _vector3}, ("name", "body")
)


def _mechanism_kind(gravity: _Check) -> Kind:
    return Kind(
        dict,
        {
            "name": _name,
            "description": _name,
            "dim": _dimension,
            "gravity": gravity,
            "consistency_tolerance": _positive,
        },
        (),
    )


@dataclasses.dataclass(frozen=True)
class _Schema:
    """What the entries of a planar (`dim = 2`) or spatial (`dim = 3`) mechanism are."""

    mechanism: Kind
    body: Kind
    pair_types: str  # the table of TYPES for `[[pairs]] type`
    load: Kind
    marker: Kind
    word: str  # "planar" or "spatial", for messages


_SCHEMAS: Final = {
    2: _Schema(_mechanism_kind(_vector), _BODY, "pair", _LOAD, _MARKER, "planar"),
    3: _Schema(
        _mechanism_kind(_vector3),
        _SPATIAL_BODY,
        "spatial-pair",
        _SPATIAL_LOAD,
        _SPATIAL_MARKER,
        "spatial",
    ),
}
"""`[mechanism] dim` → the schema of the file's entries (default 2)."""

_UNKNOWN_DIMENSION: Final = _mechanism_kind(lambda value, where, problems: value)
"""`[mechanism]` with an invalid `dim`: the length of `gravity` cannot be checked."""

_DRIVERS: Final = (TranslationalDriver, RevoluteDriver, TranslationalDriver3D, RevoluteDriver3D)
"""The pairs whose `motion` may prescribe work-doing motion (`Config.rheonomic`)."""
_ARRAYS: Final = ("bodies", "pairs", "loads", "markers")
_TOP_LEVEL: Final = ("mechanism", *_ARRAYS, "simulation")
_BODY_KEYS: Final = ("body", "body_i", "body_j")


def _suggest(key: str, choices: Sequence[str], label: str = "allowed") -> str:
    """`(did you mean 'mass'? allowed: ...)` for a misspelt key or name."""
    close = difflib.get_close_matches(key, choices, n=1)
    did_you_mean = f"did you mean {close[0]!r}? " if close else ""
    return f"({did_you_mean}{label}: {', '.join(choices)})"


def _keys(
    raw: dict[str, Any], kind: Kind, where: str, problems: list[str], extra: Sequence[str] = ()
) -> dict[str, Any] | None:
    """Check the keys of one table against `kind` and parse their values.

    Returns the parsed values, or None when a problem was recorded.
    """
    before = len(problems)
    allowed = [*extra, *kind.keys]
    for key in raw:
        if key not in allowed:
            problems.append(f"{where}: unknown key {key!r} {_suggest(key, allowed)}")
    for key in kind.required:
        if key not in raw:
            problems.append(f"{where}: missing required key {key!r}")
    values = {
        key: check(raw[key], f"{where} key {key!r}", problems)
        for key, check in kind.keys.items()
        if key in raw
    }
    if len(problems) == before and kind.check is not None:
        kind.check(values, where, problems)
    return None if len(problems) > before else values


def _typed(raw: dict[str, Any], table: str, where: str, problems: list[str]) -> Any:
    """Build an entry whose `type` key selects its kind in `TYPES[table]`."""
    kinds = TYPES[table]
    other = {"pair": ("spatial-pair", "spatial", 2), "spatial-pair": ("pair", "planar", 3)}
    if "type" not in raw:
        problems.append(f"{where}: missing required key 'type' (known: {', '.join(kinds)})")
        return None
    kind_name = raw["type"]
    if not isinstance(kind_name, str):
        problems.append(
            f"{where} key 'type': expected a string, got {_describe(kind_name)} "
            f"(known: {', '.join(kinds)})"
        )
        return None
    if kind_name not in kinds:
        known = _suggest(kind_name, list(kinds), "known")
        if table in other and kind_name in TYPES[other[table][0]]:
            _, word, dim = other[table]
            problems.append(
                f"{where} key 'type': {kind_name!r} is a {word} pair type, but the mechanism "
                f"is {_SCHEMAS[dim].word} ([mechanism] dim = {dim}) {known}"
            )
        else:
            label = "pair" if table in other else table
            problems.append(f"{where} key 'type': unknown {label} type {kind_name!r} {known}")
        return None
    kind = kinds[kind_name]
    values = _keys(raw, kind, where, problems, extra=("type",))
    return None if values is None else kind.build(**values)


def _entries(document: dict[str, Any], table: str, problems: list[str]) -> list[tuple[str, dict]]:
    """The entries of the array of tables `[[table]]`, each with its location."""
    raw = document.get(table, [])
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        problems.append(f"{table}: expected an array of tables, written [[{table}]]")
        return []
    out = []
    for k, entry in enumerate(raw):
        name = entry.get("name")
        where = f'{table}[{k}] ("{name}")' if isinstance(name, str) else f"{table}[{k}]"
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
                problems.append(f"{where}: duplicate {what} name {name!r}; names must be unique")
            seen.add(name)
    for where, raw in bodies:
        if raw.get("name") == GROUND:
            problems.append(f"{where} key 'name': {GROUND!r} is reserved for the fixed frame")
    names = {raw["name"] for _, raw in bodies if isinstance(raw.get("name"), str)}
    known = [*sorted(names - {GROUND}), GROUND]
    for entries in others.values():
        for where, raw in entries:
            for key in _BODY_KEYS:
                body = raw.get(key)
                if isinstance(body, str) and body not in known:
                    problems.append(
                        f"{where} key {key!r}: unknown body {body!r} "
                        f"{_suggest(body, known, 'known bodies')}"
                    )
            if isinstance(raw.get("body_i"), str) and raw.get("body_i") == raw.get("body_j"):
                problems.append(f"{where}: body_i and body_j are the same body {raw['body_i']!r}")


def _simulation(raw: dict[str, Any], problems: list[str]) -> dict[str, Any] | None:
    """Check the `[simulation]` table and map its choices to objects.

    Returns the keyword arguments of [`SimulationOptions`][], or None after
    recording problems. Keys that belong to a choice other than the one made
    (`stiffness` with `method = "null-space"`) are reported as such, not as unknown
    keys. An `"elimination"` is returned as [`EliminatedRows`][]: it needs the model.
    """
    where = "simulation"
    before = len(problems)
    chosen: dict[str, str] = {}
    for table, default in _SIMULATION_CHOICES.items():
        name = raw.get(table, default)
        kinds = TYPES[table]
        if not isinstance(name, str):
            problems.append(
                f"{where} key {table!r}: expected a string, got {_describe(name)} "
                f"(known: {', '.join(kinds)})"
            )
        elif name not in kinds:
            problems.append(
                f"{where} key {table!r}: unknown {table} {name!r} "
                f"{_suggest(name, list(kinds), 'known')}"
            )
        else:
            chosen[table] = name
    kinds = {table: TYPES[table][name] for table, name in chosen.items()}

    owners: dict[str, list[tuple[str, str]]] = {}
    for table in _SIMULATION_CHOICES:
        for name, kind in TYPES[table].items():
            for key in kind.keys:
                owners.setdefault(key, []).append((table, name))
    allowed = [*_SIMULATION_CHOICES, *_SIMULATION.keys, *owners]
    for key in raw:
        if key in _SIMULATION_CHOICES or key in _SIMULATION.keys:
            continue
        if key not in owners:
            problems.append(f"{where}: unknown key {key!r} {_suggest(key, allowed)}")
            continue
        table = owners[key][0][0]
        if table in chosen and all(chosen[t] != n for t, n in owners[key]):
            needed = " or ".join(f"{t} = {n!r}" for t, n in owners[key])
            problems.append(
                f"{where} key {key!r}: applies only with {needed}, but {table} = {chosen[table]!r}"
            )

    values = _keys(
        {key: value for key, value in raw.items() if key in _SIMULATION.keys},
        _SIMULATION,
        where,
        problems,
    )
    objects = {}
    for table, kind in kinds.items():
        parsed = _keys(
            {key: value for key, value in raw.items() if key in kind.keys}, kind, where, problems
        )
        if parsed is not None:
            objects[table] = kind.build(**kind.arguments(parsed))
    if len(problems) > before or values is None:
        return None
    projection = values.pop("projection", False)
    return {
        **values,
        "solver": objects["solver"],
        "method": objects["method"],
        "stabilisation": objects["stabilisation"],
        "projection": Projection() if projection else None,
        "initial_projection": objects["initial"],
        "choices": chosen,
        "raw": dict(raw),
    }


def _bullets(message: str) -> list[str]:
    """The `- item` lines of a library error, or its whole text when it has none."""
    items = [line.strip()[2:] for line in message.splitlines() if line.strip().startswith("- ")]
    return items or [message]


# --------------------------------------------------------------------------- loading
@dataclasses.dataclass(frozen=True)
class _Parsed:
    mechanism: Mechanism
    options: dict[str, Any]
    simulation: dict[str, Any]


def _parse(path: Path, document: dict[str, Any]) -> _Parsed:
    """Validate a parsed TOML document and describe its `Mechanism`."""
    problems: list[str] = []
    for key in document:
        if key not in _TOP_LEVEL:
            problems.append(f"top level: unknown table {key!r} {_suggest(key, _TOP_LEVEL)}")
    if "bodies" not in document:
        problems.append("top level: no bodies; add at least one [[bodies]] entry")

    header = document.get("mechanism", {})
    if not isinstance(header, dict):
        problems.append("mechanism: expected a table, written [mechanism]")
        header = {}
    dim = header.get("dim", 2)
    schema = _SCHEMAS.get(dim) if isinstance(dim, int) and not isinstance(dim, bool) else None
    kind = _UNKNOWN_DIMENSION if schema is None else schema.mechanism
    options = _keys(header, kind, "mechanism", problems) or {}
    simulation_table = document.get("simulation", {})
    if not isinstance(simulation_table, dict):
        problems.append("simulation: expected a table, written [simulation]")
        simulation_table = {}
    simulation = _simulation(simulation_table, problems)
    if schema is None:  # reported by `_keys`; every entry's schema depends on it
        raise ConfigError(path, problems)

    raw = {table: _entries(document, table, problems) for table in _ARRAYS}

    def build(table: str, kind: Kind) -> list[Any]:
        parsed = [_keys(entry, kind, where, problems) for where, entry in raw[table]]
        return [kind.build(**values) for values in parsed if values is not None]

    bodies = build("bodies", schema.body)
    pairs = [_typed(entry, schema.pair_types, where, problems) for where, entry in raw["pairs"]]
    loads = build("loads", schema.load)
    markers = build("markers", schema.marker)
    _check_names(
        raw["bodies"],
        {"pair": raw["pairs"], "load": raw["loads"], "marker": raw["markers"]},
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

    - `path`: a TOML file in the format of `configs/README.md`.

    **Returns:** a [`Config`][] with the mechanism, its `Model`, its initial `State`
    and its [`SimulationOptions`][].

    **Raises:** [`ConfigError`][] (a `ValueError`) listing every problem: a missing
    file, a TOML syntax error (with its line), unknown or missing keys, values of
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
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(path, ["no such file"]) from None
    except IsADirectoryError:
        raise ConfigError(path, ["is a directory, not a configuration file"]) from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(path, [f"TOML syntax error: {err}"]) from None
    except UnicodeDecodeError:
        raise ConfigError(path, ["not a text file (TOML files are UTF-8)"]) from None

    parsed = _parse(path, document)
    mechanism, options, simulation = parsed.mechanism, parsed.options, parsed.simulation
    try:
        model = mechanism.build()
        state = mechanism.initial_state()
    except ValueError as err:
        raise ConfigError(path, _bullets(str(err))) from None

    tol = options.get("consistency_tolerance", CONSISTENCY_TOL)
    if simulation["initial_projection"] is None:
        try:
            check_consistency(model, state, tol)
        except ValueError as err:
            raise ConfigError(
                path,
                [f"inconsistent initial configuration: {item}" for item in _bullets(str(err))],
                hint="fix the bodies' position/angle/velocity so that every pair is assembled, "
                'loosen [mechanism] consistency_tolerance, or set [simulation] initial = "project"',
            ) from None

    stiff = simulation["method"]
    if isinstance(stiff, JointStiffnesses):
        try:
            k = joint_stiffness(model, stiff.joint_stiffness, dict(stiff.pair_stiffness))
        except ValueError as err:
            message = str(err).removeprefix("joint_stiffness: ")
            raise ConfigError(path, [f"simulation key 'pair_stiffness': {message}"]) from None
        simulation["method"] = Compliant(k)

    rows = simulation["method"]
    if isinstance(rows, EliminatedRows):
        key = "method" if rows.rows is None else "eliminate"
        try:
            simulation["method"] = eliminate(model, state.q, state.t, rows=rows.rows)
        except ValueError as err:
            message = str(err).removeprefix("eliminate: ")
            raise ConfigError(path, [f"simulation key {key!r}: {message}"]) from None

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


def load_mechanism(path: str | os.PathLike) -> Mechanism:
    """Read and validate a configuration and return only its `Mechanism`.

    **Arguments:**

    - `path`: a TOML file in the format of `configs/README.md`.

    **Returns:** the [`redundax.Mechanism`][] (validated: it builds, and its initial
    state satisfies the constraints).

    **Raises:** [`ConfigError`][], as [`load_config`][].
    """
    return load_config(path).mechanism
