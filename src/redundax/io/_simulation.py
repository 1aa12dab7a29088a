"""The `[simulation]` table of a configuration: its options, checked and mapped to
objects through [`TYPES`][redundax.io.TYPES]."""

import dataclasses
from collections.abc import Mapping
from typing import Any, Final

import diffrax

from .._options import DEFAULT_SAVES, AbstractInitial, CheckInitial, ProjectInitial, SaveAt
from .._run import ATOL, RTOL
from .._simulate import default_solver
from ..drift._base import AbstractDriftControl
from ..drift._projection import Projection, drift_control_of
from ..drift._step_projection import StepProjection
from ..methods import AbstractRedundancyMethod, NullSpace
from . import _checks as checks
from ._errors import Problem, Where
from ._schema import TYPES, Kind, parse_table


@dataclasses.dataclass(frozen=True, eq=False)
class SimulationOptions:
    """The `[simulation]` table, checked and mapped to the objects
    [`redundax.simulate`][] takes (defaults where a key is absent).

    **Attributes:**

    - `t_final`: end time [s] (`t_final`, default 10).
    - `method`: the redundancy method (`method`, default `NullSpace()`);
      `"elimination"` is decided by [`redundax.methods.eliminate`][] at the initial
      configuration.
    - `solver`: the Diffrax solver (`solver`; default `diffrax.Dopri8()` when
      rtol < 1e-6, else `diffrax.Tsit5()`, as `redundax.simulate`).
    - `stepsize_controller`: `diffrax.PIDController(rtol, atol)` (`rtol`, `atol`:
      1e-8, 1e-10).
    - `drift_control`: from `stabilisation` (Baumgarte's α, β or none) and
      `projection`: [`redundax.drift.StepProjection`][] after every integrator step
      (`"steps"`, the default but for the penalty method, with α = β = 1 /s
      between unless the file gives them), [`redundax.drift.Projection`][] at every saved
      state (`true`), or Baumgarte's terms alone (`false`, α = β = 10 /s).
    - `initial`: [`redundax.CheckInitial`][] (`initial = "refuse"`, the default) or
      [`redundax.ProjectInitial`][] (`initial = "project"`).
    - `saveat`: [`redundax.SaveAt`][]`(n=n_save)` (`n_save`, 201).
    - `max_steps`: the most integrator steps before giving up (100000).
    - `choices`: the type string chosen (or defaulted) for each of `solver`,
      `method`, `stabilisation` and `initial`, for reports.
    - `raw`: the table as written in the file (`{}` when absent).
    """

    t_final: float = 10.0
    method: AbstractRedundancyMethod = dataclasses.field(default_factory=NullSpace)
    solver: diffrax.AbstractSolver = dataclasses.field(default_factory=diffrax.Dopri8)
    stepsize_controller: diffrax.PIDController = dataclasses.field(
        default_factory=lambda: diffrax.PIDController(rtol=1e-8, atol=1e-10)
    )
    drift_control: AbstractDriftControl = dataclasses.field(default_factory=StepProjection)
    initial: AbstractInitial = dataclasses.field(default_factory=CheckInitial)
    saveat: SaveAt = dataclasses.field(default_factory=lambda: SaveAt(n=201))
    max_steps: int = 100_000
    choices: Mapping[str, str] = dataclasses.field(default_factory=lambda: dict(SIMULATION_CHOICES))
    raw: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def rtol(self) -> float:
        """The step-size controller's relative tolerance (`rtol`)."""
        return self.stepsize_controller.rtol

    @property
    def atol(self) -> float:
        """The step-size controller's absolute tolerance (`atol`)."""
        return self.stepsize_controller.atol

    @property
    def n_save(self) -> int:
        """The number of saved states (`n_save`)."""
        return self.saveat.n

    def keywords(self, **overrides: Any) -> dict[str, Any]:
        """The keyword arguments of [`redundax.simulate`][] these options stand for
        (everything but `t_final`, its third positional argument), with `overrides`
        replacing any of them: the one mapping from a configuration's
        `[simulation]` table to a simulation, used by `redundax simulate`, sweeps
        and design studies alike."""
        keywords = {
            "method": self.method,
            "solver": self.solver,
            "stepsize_controller": self.stepsize_controller,
            "drift_control": self.drift_control,
            "initial": self.initial,
            "saveat": self.saveat,
            "max_steps": self.max_steps,
        }
        unknown = set(overrides) - set(keywords) - {"structure", "throw", "monitor", "progress"}
        if unknown:
            raise TypeError(f"SimulationOptions.keywords: unknown {', '.join(sorted(unknown))}")
        return {**keywords, **overrides}


SIMULATION_CHOICES: Final = {
    "solver": "dopri8",  # at the default rtol; absent, it follows rtol (parse_simulation)
    "method": "null-space",
    "stabilisation": "baumgarte",
    "initial": "refuse",
}
"""The `[simulation]` keys that choose an entry of `TYPES[key]`, and their defaults."""

_SIMULATION: Final = Kind(
    SimulationOptions,
    {
        "t_final": checks.positive,
        "rtol": checks.positive,
        "atol": checks.positive,
        "n_save": checks.save_count,
        "max_steps": checks.step_count,
        "projection": checks.projection,
    },
    (),
)
"""The `[simulation]` keys that do not depend on a choice."""


def simulation_keys() -> tuple[str, ...]:
    """Every key a `[simulation]` table may have (for one choice or another)."""
    keys = [*SIMULATION_CHOICES, *_SIMULATION.keys]
    for table in SIMULATION_CHOICES:
        for kind in TYPES[table].values():
            keys += [key for key in kind.keys if key not in keys]
    return tuple(keys)


def parse_simulation(raw: dict[str, Any], problems: list[str]) -> dict[str, Any] | None:
    """Check the `[simulation]` table and map its choices to objects.

    Returns the keyword arguments of [`SimulationOptions`][redundax.io.SimulationOptions], or None
    after recording problems. Keys that belong to a choice other than the one made
    (`stiffness` with `method = "null-space"`) are reported as such, not as unknown
    keys. An `"elimination"` is returned as [`EliminatedRows`][redundax.io.EliminatedRows]: it needs
    the model.
    """
    where = "simulation"
    before = len(problems)
    chosen: dict[str, str] = {}
    for table, default in SIMULATION_CHOICES.items():
        name = raw.get(table, default)
        kinds = TYPES[table]
        if not isinstance(name, str):
            problems.append(
                Problem(
                    Where(where, table),
                    f"expected a string, got {checks.describe(name)} (known: {', '.join(kinds)})",
                )
            )
        elif name not in kinds:
            problems.append(
                Problem(
                    Where(where, table),
                    f"unknown {table} {name!r} {checks.suggest(name, list(kinds), 'known')}",
                )
            )
        else:
            chosen[table] = name
    kinds = {table: TYPES[table][name] for table, name in chosen.items()}

    owners: dict[str, list[tuple[str, str]]] = {}
    for table in SIMULATION_CHOICES:
        for name, kind in TYPES[table].items():
            for key in kind.keys:
                owners.setdefault(key, []).append((table, name))
    allowed = [*SIMULATION_CHOICES, *_SIMULATION.keys, *owners]
    for key in raw:
        if key in SIMULATION_CHOICES or key in _SIMULATION.keys:
            continue
        if key not in owners:
            problems.append(Problem(where, f"unknown key {key!r} {checks.suggest(key, allowed)}"))
            continue
        table = owners[key][0][0]
        if table in chosen and all(chosen[t] != n for t, n in owners[key]):
            needed = " or ".join(f"{t} = {n!r}" for t, n in owners[key])
            problems.append(
                Problem(
                    Where(where, key),
                    f"applies only with {needed}, but {table} = {chosen[table]!r}",
                )
            )

    values = parse_table(
        {key: value for key, value in raw.items() if key in _SIMULATION.keys},
        _SIMULATION,
        where,
        problems,
    )
    objects = {}
    for table, kind in kinds.items():
        parsed = parse_table(
            {key: value for key, value in raw.items() if key in kind.keys}, kind, where, problems
        )
        if parsed is not None:
            try:
                objects[table] = kind.build(**kind.arguments(parsed))
            except ValueError as error:  # the object's own checks: name the key they name
                text = str(error).partition(": ")[2] or str(error)
                named = [key for key in kind.keys if text.startswith(f"{key} ")]
                problems.append(Problem(Where(where, named[0]) if named else where, text))
    if len(problems) > before or values is None:
        return None
    if "solver" not in raw:
        # The solver redundax.simulate takes at these tolerances: one set of defaults.
        objects["solver"] = default_solver(values.get("rtol", RTOL))
        chosen["solver"] = type(objects["solver"]).__name__.lower()
    # Default: after every step (rx.drift.default_drift_control), except for a method
    # whose equations carry their own drift terms (the penalty method).
    default = False if getattr(objects["method"], "stabilises_itself", False) else "steps"
    projection = values.pop("projection", default)
    stabilisation = objects["stabilisation"]
    if projection == "steps":
        # Baumgarte terms between the step projections: the file's, else the mild
        # default of StepProjection (the config default α = β = 10 /s would make the
        # step size follow the drift again).
        projection = StepProjection()
        if not {"stabilisation", "baumgarte_alpha", "baumgarte_beta"} & set(raw):
            stabilisation = projection.baumgarte
    else:
        projection = Projection() if projection else None
    initial = objects["initial"]
    return {
        "t_final": values.get("t_final", SimulationOptions.t_final),
        "max_steps": values.get("max_steps", SimulationOptions.max_steps),
        "solver": objects["solver"],
        "method": objects["method"],
        "stepsize_controller": diffrax.PIDController(
            rtol=values.get("rtol", RTOL), atol=values.get("atol", ATOL)
        ),
        "drift_control": drift_control_of(stabilisation, projection),
        "initial": CheckInitial() if initial is None else ProjectInitial(initial),
        "saveat": SaveAt(n=values.get("n_save", DEFAULT_SAVES)),
        "choices": chosen,
        "raw": dict(raw),
    }
