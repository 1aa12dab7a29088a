"""The schema of a configuration file: what each kind of entry is built into, and the
keys it accepts.

[`TYPES`][redundax.io.TYPES] is the one table from the type strings of a file (pair and motion
types, solvers, redundancy methods, stabilisation, the initial-state policy) to objects.
`SCHEMAS` gives the entries of a planar (`dim = 2`) or spatial (`dim = 3`)
mechanism. `parse_table` checks one table against a `Kind` and parses its
values with the checks of `_checks`.
"""

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import diffrax
import numpy as np

from .._force_specs import (
    Bushing,
    JointFriction,
    RotationalSpringDamper,
    SpringDamper,
    TimeDependentLoad,
)
from .._motion import Constant, Polynomial, SmoothSteps
from .._spatial_body import SpatialBody
from .._spec import Body, Load, Marker
from ..drift._baumgarte import Baumgarte
from ..drift._projection import Projection
from ..joints._planar import (
    KnifeEdge,
    Revolute,
    RevoluteDriver,
    Translational,
    TranslationalDriver,
    Weld,
)
from ..joints._spatial import (
    Cylindrical,
    Prismatic3D,
    Revolute3D,
    RevoluteDriver3D,
    Spherical,
    TranslationalDriver3D,
    Universal,
    Weld3D,
)
from ..methods import (
    AugmentedLagrangian,
    BlockSparse,
    NullSpace,
    Penalty,
    WeightedMinimumNorm,
)
from . import _checks as checks
from ._errors import Problem, Where


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
    keys: Mapping[str, checks.Check]
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
    [`load_config`][redundax.io.load_config] turns it into
    `redundax.methods.eliminate(model, q0, t0, rows)`.
    """

    rows: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class JointStiffnesses:
    """`method = "compliant"` as read from a file, before the model exists.

    `joint_stiffness`: one stiffness for every joint row, or (force rows, moment
    rows) [N/m, N m/rad]; `pair_stiffness`: {pair: k or one k per row}.
    [`load_config`][redundax.io.load_config] turns it into
    `redundax.methods.Compliant(redundax.methods.joint_stiffness(
    model, joint_stiffness, pair_stiffness))`.
    """

    joint_stiffness: float | tuple[float, float] = 1.0
    pair_stiffness: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def _motion(value: Any, where: Where, problems: list[str]) -> Any:
    if not isinstance(value, dict):
        problems.append(
            Problem(
                where,
                'expected a table such as { type = "constant", value = 0.0 }, '
                f"got {checks.describe(value)}",
            )
        )
        return None
    return parse_typed(value, "motion", str(where), problems)


def increasing_knots(values: dict[str, Any], where: str, problems: list[str]) -> None:
    times, knots = values["times"], values["values"]
    if len(times) != len(knots):
        problems.append(
            Problem(
                where,
                f"'times' and 'values' must have the same length, got {len(times)} and "
                f"{len(knots)}",
            )
        )
    if len(times) < 2 or np.any(np.diff(times) <= 0.0):
        problems.append(
            Problem(Where(where, "times"), "expected at least 2 strictly increasing times")
        )


def _nothing() -> None:
    """The object of a choice that means "none" (`stabilisation = "none"`)."""
    return None


_TWO_BODIES: Final = {
    "name": checks.name,
    "body_i": checks.name,
    "body_j": checks.name,
    "point_i": checks.vector,
    "point_j": checks.vector,
}
_TWO_BODIES_REQUIRED: Final = ("name", "body_i", "body_j")


def _joint_geometry(universal: bool) -> Callable[[dict[str, Any], str, list[str]], None]:
    """The cross-key check of a spatial joint: where its point is, and its frame."""

    def check(values: dict[str, Any], where: str, problems: list[str]) -> None:
        local = [key for key in ("point_i", "point_j") if key in values]
        if "point" in values and local:
            problems.append(
                Problem(
                    Where(where, local[0]),
                    "give either 'point' (global, at the initial configuration) or 'point_i' "
                    "and 'point_j' (body frames), not both",
                )
            )
        elif "point" not in values and len(local) < 2:
            missing = "'point'" if not local else f"{({'point_i', 'point_j'} - set(local)).pop()!r}"
            problems.append(
                Problem(
                    where,
                    f"missing required key {missing}: give 'point' (global, at the initial "
                    "configuration) or both 'point_i' and 'point_j' (body frames)",
                )
            )
        axis, normal = values.get("axis"), values.get("normal")
        if normal is None:
            return
        if axis is None:
            problems.append(
                Problem(
                    Where(where, "normal"),
                    "needs 'axis' (it sets the direction e1, perpendicular to the axis e0)",
                )
            )
            return
        a, n = np.asarray(axis), np.asarray(normal)
        cos = abs(float(a @ n)) / float(np.linalg.norm(a) * np.linalg.norm(n))
        if universal and cos > _PERPENDICULAR_TOL:
            problems.append(
                Problem(
                    Where(where, "normal"),
                    "the pins 'axis' (body i) and 'normal' (body j) of a universal joint must "
                    f"be perpendicular, got cos = {cos:.3g}",
                )
            )
        elif 1.0 - cos <= _PERPENDICULAR_TOL:
            problems.append(Problem(Where(where, "normal"), "must not be parallel to 'axis'"))

    return check


_PERPENDICULAR_TOL: Final = 1e-9
"""|cos| of the angle between the pins of a universal joint, above which they are not
perpendicular (the library's test)."""


def _joint3d(spec: type, motion: bool = False) -> Kind:
    """The keys of a spatial joint `spec` (every field of it can be set from a file)."""
    keys: dict[str, checks.Check] = {
        "name": checks.name,
        "body_i": checks.name,
        "body_j": checks.name,
        "point": checks.vector3,
        "point_i": checks.vector3,
        "point_j": checks.vector3,
        "axis": checks.direction3,
        "normal": checks.direction3,
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


def _spring_law(values: dict[str, Any], where: str, problems: list[str]) -> None:
    """A force element whose stiffness, damping and preload are all zero does nothing."""
    keys = ("stiffness", "rotational_stiffness", "damping", "rotational_damping", "preload")
    if not any(np.any(np.asarray(values.get(k, 0.0)) != 0.0) for k in keys):
        problems.append(
            Problem(
                where,
                "stiffness, damping and preload are all zero or absent (the element does "
                "nothing); give at least one",
            )
        )


def _force_kinds(vector: checks.Check, spatial: bool) -> dict[str, Kind]:
    """The `[[forces]] type`s of a planar or spatial mechanism."""
    two_bodies = {"body_i": checks.name, "body_j": checks.name}
    law = {
        "stiffness": checks.non_negative,
        "damping": checks.non_negative,
        "preload": checks.number,
    }
    rotational = {**two_bodies, **law, "free_angle": checks.number}
    kinds = {
        "spring-damper": Kind(
            SpringDamper,
            {
                **two_bodies,
                **law,
                "free_length": checks.non_negative,
                "point_i": vector,
                "point_j": vector,
            },
            ("body_i", "body_j"),
            _spring_law,
        ),
        "rotational-spring-damper": Kind(
            RotationalSpringDamper,
            {**rotational, "axis": checks.direction3} if spatial else rotational,
            ("body_i", "body_j", "axis") if spatial else ("body_i", "body_j"),
            _spring_law,
        ),
        "time-dependent-load": Kind(
            TimeDependentLoad,
            {
                "body": checks.name,
                "profile": _motion,
                "force": vector,
                "point": vector,
                "torque": vector if spatial else checks.number,
            },
            ("body", "profile"),
        ),
    }
    kinds["joint-friction"] = Kind(
        JointFriction,
        {
            "pair": checks.name,
            "coefficient": checks.non_negative,
            "inputs": checks.lever_arms,
            "preload": checks.non_negative,
            "transition_velocity": checks.positive,
        },
        ("pair", "coefficient"),
    )
    if spatial:
        kinds["bushing"] = Kind(
            Bushing,
            {
                **two_bodies,
                "point": checks.vector3,
                "axes": checks.rotation,
                "stiffness": checks.non_negative3,
                "rotational_stiffness": checks.non_negative3,
                "damping": checks.non_negative3,
                "rotational_damping": checks.non_negative3,
            },
            ("body_i", "body_j", "point"),
            _spring_law,
        )
    return kinds


TYPES: Final[Mapping[str, Mapping[str, Kind]]] = {
    "pair": {
        "revolute": Kind(Revolute, _TWO_BODIES, _TWO_BODIES_REQUIRED),
        "translational": Kind(
            Translational,
            {**_TWO_BODIES, "normal": checks.direction, "angle": checks.number},
            _TWO_BODIES_REQUIRED,
        ),
        "weld": Kind(Weld, {**_TWO_BODIES, "angle": checks.number}, _TWO_BODIES_REQUIRED),
        "translational-driver": Kind(
            TranslationalDriver,
            {**_TWO_BODIES, "direction": checks.direction, "motion": _motion},
            (*_TWO_BODIES_REQUIRED, "motion"),
        ),
        "revolute-driver": Kind(
            RevoluteDriver,
            {"name": checks.name, "body_i": checks.name, "body_j": checks.name, "motion": _motion},
            (*_TWO_BODIES_REQUIRED, "motion"),
        ),
        "knife-edge": Kind(
            KnifeEdge,
            {
                "name": checks.name,
                "body": checks.name,
                "point": checks.vector,
                "normal": checks.direction,
            },
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
    "force": _force_kinds(checks.vector, spatial=False),
    "spatial-force": _force_kinds(checks.vector3, spatial=True),
    "motion": {
        "constant": Kind(Constant, {"value": checks.number}, ("value",)),
        "polynomial": Kind(Polynomial, {"coefficients": checks.numbers}, ("coefficients",)),
        "smooth-steps": Kind(
            SmoothSteps,
            {"times": checks.numbers, "values": checks.numbers},
            ("times", "values"),
            increasing_knots,
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
        "block": Kind(BlockSparse, {"pivot_rtol": checks.positive, "pivots": checks.pivots}, ()),
        "elimination": Kind(
            EliminatedRows, {"eliminate": checks.rows}, (), names={"eliminate": "rows"}
        ),
        "augmented-lagrangian": Kind(AugmentedLagrangian, {"penalty": checks.positive}, ()),
        "penalty": Kind(
            Penalty,
            {"stiffness": checks.positive, "omega": checks.non_negative, "xi": checks.non_negative},
            (),
        ),
        "compliant": Kind(
            JointStiffnesses,
            {"joint_stiffness": checks.stiffness, "pair_stiffness": checks.pair_stiffness},
            (),
        ),
    },
    "stabilisation": {
        "baumgarte": Kind(
            Baumgarte,
            {"baumgarte_alpha": checks.gain, "baumgarte_beta": checks.gain},
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
3`; the strings are the `Pair.kind` of the pairs they build), `TYPES["force"]` and
`TYPES["spatial-force"]` for `[[forces]] type`, `TYPES["motion"]` for
the `motion` tables of drivers (and the `profile` of time-dependent loads); `TYPES["solver"]`,
`TYPES["method"]`, `TYPES["stabilisation"]` and `TYPES["initial"]` for the keys of
the same names in `[simulation]`, whose other keys depend on the choice (`eliminate`
for `"elimination"`, `stiffness` for `"penalty"`, ...)."""

_BODY: Final = Kind(
    Body,
    {
        "name": checks.name,
        "mass": checks.positive,
        "inertia": checks.positive,
        "position": checks.vector,
        "angle": checks.number,
        "velocity": checks.vector,
        "angular_velocity": checks.number,
    },
    ("name", "mass", "inertia"),
)
_LOAD: Final = Kind(
    Load,
    {"body": checks.name, "force": checks.vector, "point": checks.vector, "torque": checks.number},
    ("body",),
)
_MARKER: Final = Kind(
    Marker, {"name": checks.name, "body": checks.name, "point": checks.vector}, ("name", "body")
)
_SPATIAL_BODY: Final = Kind(
    SpatialBody,
    {
        "name": checks.name,
        "mass": checks.positive,
        "inertia": checks.inertia3,
        "position": checks.vector3,
        "rotation": checks.rotation,
        "velocity": checks.vector3,
        "angular_velocity": checks.vector3,
    },
    ("name", "mass", "inertia"),
)
_SPATIAL_LOAD: Final = Kind(
    Load,
    {
        "body": checks.name,
        "force": checks.vector3,
        "point": checks.vector3,
        "torque": checks.vector3,
    },
    ("body",),
)
_SPATIAL_MARKER: Final = Kind(
    Marker, {"name": checks.name, "body": checks.name, "point": checks.vector3}, ("name", "body")
)


def _mechanism_kind(gravity: checks.Check) -> Kind:
    return Kind(
        dict,
        {
            "name": checks.name,
            "description": checks.name,
            "dim": checks.dimension,
            "gravity": gravity,
            "consistency_tolerance": checks.positive,
        },
        (),
    )


@dataclasses.dataclass(frozen=True)
class Schema:
    """What the entries of a planar (`dim = 2`) or spatial (`dim = 3`) mechanism are."""

    mechanism: Kind
    body: Kind
    pair_types: str  # the table of TYPES for `[[pairs]] type`
    load: Kind
    marker: Kind
    word: str  # "planar" or "spatial", for messages
    force_types: str = "force"  # the table of TYPES for `[[forces]] type`


SCHEMAS: Final = {
    2: Schema(_mechanism_kind(checks.vector), _BODY, "pair", _LOAD, _MARKER, "planar"),
    3: Schema(
        _mechanism_kind(checks.vector3),
        _SPATIAL_BODY,
        "spatial-pair",
        _SPATIAL_LOAD,
        _SPATIAL_MARKER,
        "spatial",
        "spatial-force",
    ),
}
"""`[mechanism] dim` → the schema of the file's entries (default 2)."""

UNKNOWN_DIMENSION: Final = _mechanism_kind(lambda value, where, problems: value)
"""`[mechanism]` with an invalid `dim`: the length of `gravity` cannot be checked."""


def parse_table(
    raw: dict[str, Any], kind: Kind, where: str, problems: list[str], extra: Sequence[str] = ()
) -> dict[str, Any] | None:
    """Check the keys of one table against `kind` and parse their values.

    Returns the parsed values, or None when a problem was recorded.
    """
    before = len(problems)
    allowed = [*extra, *kind.keys]
    problems += checks.unknown_keys(raw, allowed, where)
    for key in kind.required:
        if key not in raw:
            problems.append(Problem(where, f"missing required key {key!r}"))
    values = {
        key: check(raw[key], Where(where, key), problems)
        for key, check in kind.keys.items()
        if key in raw
    }
    if len(problems) == before and kind.check is not None:
        kind.check(values, where, problems)
    return None if len(problems) > before else values


def parse_typed(raw: dict[str, Any], table: str, where: str, problems: list[str]) -> Any:
    """Build an entry whose `type` key selects its kind in `TYPES[table]`."""
    kinds = TYPES[table]
    other = {
        "pair": ("spatial-pair", "spatial", 2),
        "spatial-pair": ("pair", "planar", 3),
        "force": ("spatial-force", "spatial", 2),
        "spatial-force": ("force", "planar", 3),
    }
    if "type" not in raw:
        problems.append(Problem(where, f"missing required key 'type' (known: {', '.join(kinds)})"))
        return None
    kind_name = raw["type"]
    if not isinstance(kind_name, str):
        problems.append(
            Problem(
                Where(where, "type"),
                f"expected a string, got {checks.describe(kind_name)} (known: {', '.join(kinds)})",
            )
        )
        return None
    if kind_name not in kinds:
        known = checks.suggest(kind_name, list(kinds), "known")
        noun = "force" if table.endswith("force") else "pair"
        if table in other and kind_name in TYPES[other[table][0]]:
            _, word, dim = other[table]
            problems.append(
                Problem(
                    Where(where, "type"),
                    f"{kind_name!r} is a {word} {noun} type, but the mechanism is "
                    f"{SCHEMAS[dim].word} ([mechanism] dim = {dim}) {known}",
                )
            )
        else:
            label = noun if table in other else table
            problems.append(
                Problem(Where(where, "type"), f"unknown {label} type {kind_name!r} {known}")
            )
        return None
    kind = kinds[kind_name]
    values = parse_table(raw, kind, where, problems, extra=("type",))
    return None if values is None else kind.build(**values)
