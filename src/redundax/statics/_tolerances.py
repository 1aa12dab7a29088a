"""Tolerance studies: the assembly stresses that manufacturing tolerances cause, from a
tolerance file (`redundax tolerances FILE`; format: configs/README.md, Tolerances).

Where: the mechanism's static equilibrium under its loads (or its initial
configuration). What: the first-order assembly stress of the nominal deviations,
its sensitivity dλ/dδ to each deviation by autodiff (exact: the formula is linear in
the misfit, and the misfit is differentiated through the geometry), and a Monte Carlo
over the deviations' distributions, run as a sweep
([`tolerance_sweep`][redundax.statics.tolerance_sweep]: [`redundax.sweep`][]'s chunk
files, resuming, devices and processes), reported per pair as percentiles of the
largest change of a force component and of a moment component.
"""

import dataclasses
import json
import math
import tempfile
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from .._model import Model, State, is_moment
from .._parameters import parameter_targets, unknown_parameter
from .._structure import Structure
from ..io._checks import is_integer, is_number, read_table, referenced_file, unknown_keys
from ..io._errors import ConfigError, Problem, Where
from ..io.config import load_config
from ..methods import joint_stiffness
from ._assembly_stress import assembly_stress, deviate
from ._equilibrium import equilibrium

if TYPE_CHECKING:  # the sweep is imported on first use, as `redundax.sweep` is
    from ..sweep import Progress, Sweep

DISTRIBUTIONS = ("normal", "uniform")
MAX_SAMPLES = 10_000_000
"""The most draws of a Monte Carlo: the sweep's `MAX_VARIANTS` (not imported from it, so
that `import redundax` does not load the sweep)."""

_KEYS = ("mechanism", "stiffness", "pair_stiffness", "samples", "seed", "at", "deviations")
_DEVIATION_KEYS = ("address", "value", "distribution", "std", "half_width")
_AT = ("equilibrium", "initial")
_DISTRIBUTION_OF = {"std": "normal", "half_width": "uniform"}
_MEANING = {"std": "standard deviation", "half_width": "half width"}


@dataclasses.dataclass(frozen=True)
class Deviation:
    """One toleranced parameter: its sweep address, the nominal deviation `value`
    (the part as drawn, for the nominal misfit stress), and its distribution about
    that value for the Monte Carlo: `"normal"` with standard deviation `spread`, or
    `"uniform"` on ±`spread` (the half width)."""

    address: str
    value: float
    distribution: str
    spread: float


@dataclasses.dataclass(frozen=True)
class Tolerances:
    """A tolerance study: the mechanism, per-row stiffnesses, the deviations, the
    Monte Carlo's sample count and seed, and where it is assembled (`at`)."""

    path: Path
    model: Model
    state: State
    name: str
    stiffness: Any
    deviations: tuple[Deviation, ...]
    samples: int
    seed: int
    at: str

    def with_std(self, std: dict[str, float], samples: int | None = None) -> "Tolerances":
        """This study with every deviation normal about zero with the standard
        deviation `std[address]` (e.g. an [`Allocation`][redundax.statics.Allocation]'s
        `std`, to check it by Monte Carlo), and `samples` draws (default: as is)."""
        deviations = tuple(
            dataclasses.replace(d, value=0.0, distribution="normal", spread=float(std[d.address]))
            for d in self.deviations
        )
        n = self.samples if samples is None else samples
        return dataclasses.replace(self, deviations=deviations, samples=n)


def load_tolerances(path: str | Path) -> Tolerances:
    """Read and validate a tolerance file.

    **Raises:** `redundax.io.ConfigError` listing every problem, each naming its entry
    and key (an unknown deviation address with the closest known ones, a negative
    standard deviation, an unknown distribution), or those of the mechanism file.
    """
    path = Path(path)
    table = read_table(
        path,
        "tolerances",
        'a tolerance file names its mechanism with [tolerances] mechanism = "FILE.toml" '
        "(configs/README.md, Tolerances)",
        "a tolerance file",
    )
    problems: list[str] = unknown_keys(table, _KEYS, "tolerances")
    mechanism = table.get("mechanism")
    if not isinstance(mechanism, str):
        raise ConfigError(
            path,
            [
                *problems,
                Problem("tolerances", "missing key 'mechanism' (the mechanism's TOML file)"),
            ],
        )
    config = load_config(referenced_file(path, "tolerances", mechanism))
    known = parameter_targets(config.model, config.state)

    stiffness = table.get("stiffness", [1e8, 1e6])
    if not (
        isinstance(stiffness, list)
        and len(stiffness) == 2
        and all(is_number(v) and math.isfinite(v) and v > 0 for v in stiffness)
    ) and not (is_number(stiffness) and math.isfinite(stiffness) and stiffness > 0):
        problems.append(
            Problem(
                Where("tolerances", "stiffness"),
                "expected a positive number or [force rows N/m, moment rows N m/rad], "
                f"got {stiffness!r}",
            )
        )
        stiffness = [1e8, 1e6]
    pair_stiffness = table.get("pair_stiffness", {})
    if not isinstance(pair_stiffness, dict):
        problems.append(
            Problem(Where("tolerances", "pair_stiffness"), "expected a table { PAIR = k }")
        )
        pair_stiffness = {}
    for name in pair_stiffness:
        if name not in config.model.pair_names:
            problems.append(
                Problem(
                    Where("tolerances", "pair_stiffness"),
                    f"no pair named {name!r}; pairs: {', '.join(config.model.pair_names)}",
                )
            )
    samples = table.get("samples", 1000)
    if not (is_integer(samples) and 0 <= samples <= MAX_SAMPLES):
        problems.append(
            Problem(
                Where("tolerances", "samples"),
                f"expected an integer from 0 to {MAX_SAMPLES:,}, got {samples!r}",
            )
        )
    seed = table.get("seed", 0)
    if not (is_integer(seed) and 0 <= seed < 2**32):
        problems.append(
            Problem(
                Where("tolerances", "seed"), f"expected an integer from 0 to 2^32 − 1, got {seed!r}"
            )
        )
    at = table.get("at", "equilibrium")
    if at not in _AT:
        problems.append(
            Problem(
                Where("tolerances", "at"),
                f"expected one of {', '.join(map(repr, _AT))}, got {at!r}",
            )
        )

    entries = table.get("deviations", [])
    if not isinstance(entries, list) or not entries:
        problems.append(
            Problem(
                Where("tolerances", "deviations"),
                "expected [[tolerances.deviations]] entries (at least one)",
            )
        )
        entries = []
    deviations = []
    for k, entry in enumerate(entries):
        where = f"deviations[{k}]"
        if not isinstance(entry, dict):
            problems.append(Problem(where, "expected a table, written [[tolerances.deviations]]"))
            continue
        problems += unknown_keys(entry, _DEVIATION_KEYS, where)
        address = entry.get("address")
        if not isinstance(address, str):
            problems.append(
                Problem(
                    Where(where, "address"),
                    'missing: the parameter\'s address, e.g. "pairs.J2.point_i.y"',
                )
            )
            continue
        if address not in known:
            problems.append(
                Problem(Where(where, "address"), unknown_parameter(address, list(known)))
            )
            continue
        if address in [d.address for d in deviations]:
            problems.append(Problem(Where(where, "address"), f"{address!r} is listed twice"))
        value = entry.get("value", 0.0)
        if not (is_number(value) and math.isfinite(value)):
            problems.append(
                Problem(Where(where, "value"), f"expected a finite number, got {value!r}")
            )
            value = 0.0
        distribution = entry.get("distribution", "normal")
        if distribution not in DISTRIBUTIONS:
            problems.append(
                Problem(
                    Where(where, "distribution"),
                    f"expected one of {', '.join(map(repr, DISTRIBUTIONS))}, got {distribution!r}",
                )
            )
            continue
        key = "std" if distribution == "normal" else "half_width"
        other = "half_width" if distribution == "normal" else "std"
        if other in entry:
            problems.append(
                Problem(
                    Where(where, other),
                    f"only for distribution = {_DISTRIBUTION_OF[other]!r}; use {key!r}",
                )
            )
        spread = entry.get(key, 0.0)
        if not (is_number(spread) and math.isfinite(spread) and spread >= 0):
            problems.append(
                Problem(
                    Where(where, key),
                    f"expected a number ≥ 0 (the {_MEANING[key]}, in the parameter's unit), "
                    f"got {spread!r}",
                )
            )
            continue
        deviations.append(Deviation(address, float(value), distribution, float(spread)))
    if problems:
        raise ConfigError(path, problems)
    try:
        k = joint_stiffness(
            config.model,
            tuple(stiffness) if isinstance(stiffness, list) else stiffness,
            pair_stiffness,
        )
    except ValueError as error:
        raise ConfigError(
            path, [Problem(Where("tolerances", "pair_stiffness"), str(error))]
        ) from None
    return Tolerances(
        path,
        config.model,
        config.state,
        config.name,
        k,
        tuple(deviations),
        int(samples),
        int(seed),
        at,
    )


@dataclasses.dataclass(frozen=True)
class ToleranceStudy:
    """What `tolerance_study` found (all host numbers, for reports).

    - `q`: where the mechanism was assembled; `redundancy`: p.
    - `nominal`: per pair, per component, `(change of the reaction component, unique)`
      under the nominal deviations.
    - `sensitivity`: per deviation address, per pair, per component, d(component)/dδ.
    - `percentiles`: per pair, `{"force": {...}, "moment": {...}}`: percentiles
      (`redundax.sweep.ASSEMBLY_PERCENTILES`: 50, 90, 99) and the maximum, over the
      draws, of the largest |change| of a force component and of a moment component
      (of a pair that has that kind).
    - `sweep`: the Monte Carlo's combined sweep file (`out/sweep.npz`: every draw's
      deviations and assembly stress, [`read_sweep`][redundax.sweep.read_sweep]), where
      the study was given `out`.
    """

    q: np.ndarray
    redundancy: int
    nominal: dict
    sensitivity: dict
    percentiles: dict
    samples: int
    sweep: Path | None = None

    def to_dict(self) -> dict:
        """The JSON of `redundax tolerances --json`."""
        return {
            "q": self.q.tolist(),
            "redundancy": self.redundancy,
            "nominal": {
                pair: {label: {"change": v, "unique": u} for label, (v, u) in comps.items()}
                for pair, comps in self.nominal.items()
            },
            "sensitivity": self.sensitivity,
            "monte_carlo": {
                "samples": self.samples,
                "pairs": self.percentiles,
                **({"sweep": str(self.sweep)} if self.sweep is not None else {}),
            },
        }


def tolerance_study(
    tol: Tolerances,
    *,
    structure: Structure | None = None,
    out: str | Path | None = None,
    force: bool = False,
    on_chunk: "Callable[[Progress], None] | None" = None,
) -> ToleranceStudy:
    """The nominal assembly stress, its sensitivities and the Monte Carlo of a
    [`Tolerances`][redundax.statics.Tolerances] (module docstring).

    **Arguments:**

    - `tol`: the study ([`load_tolerances`][redundax.statics.load_tolerances]).
    - `structure`: the nominal mechanism's verdicts where it is assembled (default:
      decided there).
    - `out`: a directory for the Monte Carlo's sweep files (its chunks, `sweep.npz`
      with every draw's assembly stress, `summary.json`); a study stopped part way
      resumes there. Default: a temporary directory, removed afterwards.
    - `force`, `on_chunk`: as [`run_sweep`][redundax.sweep.run_sweep]'s.

    **Raises:** as [`equilibrium`][redundax.statics.equilibrium] (no equilibrium near
    the initial configuration) and [`run_sweep`][redundax.sweep.run_sweep] (`out`
    holds another sweep)."""
    model, state = tol.model, tol.state
    if tol.at == "equilibrium":
        eq = equilibrium(model, state.q, state.t)
        q, structure = eq.q, eq.structure if structure is None else structure
    else:
        from .._structure import decide  # noqa: PLC0415

        q = state.q
        structure = decide(model, q, state.t) if structure is None else structure
    addresses = [d.address for d in tol.deviations]

    @eqx.filter_jit
    def stress(delta):
        deviated = deviate(model, dict(zip(addresses, delta, strict=True)), state)
        return assembly_stress(
            model, deviated, q, tol.stiffness, state.t, structure=structure
        ).multipliers

    nominal_delta = jnp.array([d.value for d in tol.deviations])
    lam = np.asarray(stress(nominal_delta))
    jac = np.asarray(jax.jacfwd(stress)(nominal_delta))  # (nc, deviations)
    unique = np.asarray(structure.stable_row_unique)
    rows = {p.name: p for p in model.pairs}
    nominal = {
        name: {
            label: (float(-lam[r]), bool(unique[r]))
            for label, r in zip(p.components, p.rows, strict=True)
        }
        for name, p in rows.items()
    }
    sensitivity = {
        a: {
            name: {label: float(-jac[r, j]) for label, r in zip(p.components, p.rows, strict=True)}
            for name, p in rows.items()
        }
        for j, a in enumerate(addresses)
    }
    percentiles, sweep_file = {}, None
    if tol.samples:
        from ..sweep import run_sweep  # noqa: PLC0415 - on first use

        sweep = tolerance_sweep(tol, q)
        with tempfile.TemporaryDirectory() if out is None else nullcontext(out) as where:
            path = run_sweep(sweep, where, force=force, on_chunk=on_chunk)
            percentiles = json.loads((path.parent / "summary.json").read_text())["assembly"]
        sweep_file = None if out is None else path
    redundancy = structure.m + structure.h - int(np.asarray(structure.rank))
    return ToleranceStudy(
        np.asarray(q), redundancy, nominal, sensitivity, percentiles, tol.samples, sweep_file
    )


def tolerance_sweep(tol: Tolerances, q: Float[ArrayLike, " nq"]) -> "Sweep":
    """The Monte Carlo of a tolerance study as a [`Sweep`][redundax.sweep.Sweep]: each
    deviation a parameter drawn about its nominal value plus `value` (normal with its
    standard deviation, or uniform on ± its half width), `tol.samples` draws with
    `tol.seed`, each evaluated as the first-order assembly stress of the parts so made,
    assembled at `q` ([`AssemblyStresses`][redundax.sweep.AssemblyStresses]).

    Run it with [`run_sweep`][redundax.sweep.run_sweep] like any sweep: chunk files,
    resuming, every device, several processes or hosts."""
    from ..sweep import AssemblyStresses, Parameter, RandomSample, Sweep  # noqa: PLC0415

    targets = parameter_targets(tol.model, tol.state)
    parameters = []
    for d in tol.deviations:
        centre = targets[d.address].nominal + d.value
        if d.distribution == "normal":
            parameters.append(Parameter(d.address, mean=centre, std=d.spread))
        else:
            parameters.append(Parameter(d.address, low=centre - d.spread, high=centre + d.spread))
    return Sweep(
        model=tol.model,
        state=tol.state,
        parameters=tuple(parameters),
        sample=RandomSample(max(tol.samples, 1), tol.seed),
        analyze=False,
        stresses=AssemblyStresses(np.asarray(tol.stiffness), np.asarray(q)),
        name=f"{tol.path.stem} ({tol.name}): Monte Carlo of the assembly stresses",
    )


Z99 = 2.5758293035489004
"""The two-sided 99 % point of the standard normal: the 99th percentile of |X|,
X ~ N(0, s²), is Z99 · s."""


@dataclasses.dataclass(frozen=True)
class Allocation:
    """Tolerances allocated by [`allocate_tolerances`][redundax.statics.allocate_tolerances].

    - `std`: per deviation address, the standard deviation allowed [its unit].
    - `p99`: per pair, the 99th percentile of the largest |change| of a force component
      the allocation gives (the Gaussian model: ≤ the bound, equal on the binding pair).
    - `objective`: Σ log std; `steps`: optimiser steps taken.
    """

    std: dict[str, float]
    p99: dict[str, float]
    objective: float
    steps: int


def allocate_tolerances(
    tol: Tolerances,
    max_force: float,
    *,
    steps: int = 2000,
    learning_rate: float = 0.05,
    initial: dict[str, float] | None = None,
    structure: Structure | None = None,
) -> Allocation:
    """The largest tolerances (maximum Σ log σ_i, σ_i the standard deviation of
    deviation i, zero mean) whose assembly forces stay within `max_force` [N] at the
    99th percentile on every force component, by Optax (Adam on the
    direction of log σ scaled onto the bound, so every iterate is feasible).

    The assembly stress is linear in the deviations, λ = J δ (J = dλ/dδ by autodiff at
    the study's configuration), so each component is normal with standard deviation
    s_r = ‖J_r diag σ‖ and its 99th percentile of |λ_r| is `Z99` · s_r: no sampling
    inside the optimisation (check the result with a Monte Carlo, `tolerance_study`).
    Components that no deviation loads are not constrained.

    `initial`: standard deviations to start from, by address (default: all equal);
    only their ratios matter.

    **Raises:** `ValueError` for a bound that is not a positive number, or for a
    deviation that loads no force component (any tolerance would do: remove it).
    """
    import optax  # noqa: PLC0415 - only here

    if not (isinstance(max_force, int | float) and math.isfinite(max_force) and max_force > 0):
        raise ValueError(
            f"allocate_tolerances: max_force: expected a positive number [N], got {max_force!r}"
        )
    model, state = tol.model, tol.state
    if tol.at == "equilibrium":
        eq = equilibrium(model, state.q, state.t)
        q, structure = eq.q, (eq.structure if structure is None else structure)
    else:
        from .._structure import decide  # noqa: PLC0415

        q = state.q
        structure = decide(model, q, state.t) if structure is None else structure
    addresses = [d.address for d in tol.deviations]

    def stress(delta):
        deviated = deviate(model, dict(zip(addresses, delta, strict=True)), state)
        return assembly_stress(
            model, deviated, q, tol.stiffness, state.t, structure=structure
        ).multipliers

    J = np.asarray(jax.jacfwd(stress)(jnp.zeros(len(addresses))))
    force_rows = [
        r
        for p in model.pairs
        for label, r in zip(p.components, p.rows, strict=True)
        if not is_moment(label)
    ]
    loads = np.abs(J[force_rows]).max(axis=0)
    idle = [
        a for a, v in zip(addresses, loads, strict=True) if not v > 1e-12 * loads.max(initial=0.0)
    ]
    if idle:
        raise ValueError(
            f"allocate_tolerances: {', '.join(map(repr, idle))} load(s) no assembly force at this "
            "configuration (motion absorbs the misfit): any tolerance would do; remove them"
        )
    G = jnp.asarray(J[force_rows])

    def p99(sigma):
        return Z99 * jnp.sqrt(jnp.sum((G * sigma[None, :]) ** 2, axis=1))

    def on_bound(w):
        # Every direction w of log σ, scaled onto the bound: always feasible, and
        # exactly at the bound (the percentile is homogeneous of degree one in σ).
        sigma = jnp.exp(w - jnp.max(w))
        return sigma * (max_force / jnp.max(p99(sigma)))

    def loss(w):
        return -jnp.sum(jnp.log(on_bound(w)))

    optimiser = optax.adam(learning_rate)

    @jax.jit
    def step(w, s):
        g = jax.grad(loss)(w)
        updates, s = optimiser.update(g, s)
        return optax.apply_updates(w, updates), s

    w = (
        jnp.zeros(len(addresses))
        if initial is None
        else jnp.log(jnp.array([initial[a] for a in addresses]))
    )
    state_opt = optimiser.init(w)
    for _ in range(steps):
        w, state_opt = step(w, state_opt)
    z = jnp.log(on_bound(w))
    per_row = np.asarray(
        Z99 * np.sqrt(((J[force_rows] * np.exp(np.asarray(z))[None, :]) ** 2).sum(axis=1))
    )
    row_p99 = dict(zip(force_rows, per_row, strict=True))
    p99_pairs = {
        p.name: float(
            max(
                (row_p99[r] for label, r in zip(p.components, p.rows, strict=True) if r in row_p99),
                default=0.0,
            )
        )
        for p in model.pairs
    }
    std = {a: float(v) for a, v in zip(addresses, np.exp(np.asarray(z)), strict=True)}
    return Allocation(std, p99_pairs, float(np.sum(np.asarray(z))), steps)
