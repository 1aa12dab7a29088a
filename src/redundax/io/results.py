"""Time histories of a simulated run, written as NPZ or CSV (chosen by extension).

A run is a [`redundax.Trajectory`][] and the [`redundax.Reactions`][] evaluated at
every saved state (batched with `jax.vmap`). [`write_run`][redundax.io.write_run] stores the saved
times, q, q̇, q̈, the tracked points, every pair's reaction wrench with its
`unique` flag, its moment about the joint point, its reaction components (−λ of
each of its rows, labelled as in `Pair.components`) with a `unique` flag each, the
multipliers, the constraint violations and the energy, the rank of C along the
run ([`redundax.monitors.rank_history`][]) and the solvability report at the first saved
state ([`redundax.analyze_solvability`][]: rank, p, mobility, and per pair its
verdict and the norm of B_X).

Planar runs (dim 2) have 2-vectors, wrenches [Fx, Fy, Mz] and a scalar joint
moment Mz; spatial runs (dim 3) have 3-vectors, wrenches [Fx, Fy, Fz, Mx, My, Mz]
and joint moments [Mx, My, Mz], all in global components.

Files are written atomically (a temporary file in the same directory, then
`os.replace`), so a reader never sees half a file, and an existing file is never
overwritten unless `force=True`.

**NPZ layout** (`numpy.load`, no pickles):

| array | shape | meaning |
|---|---|---|
| `t` | (T,) | saved times [s] |
| `q`, `qd`, `qdd` | (T, nq) | coordinates and derivatives (see below) |
| `tracked` | (T, nm, dim) | global positions of the tracked points [m] |
| `tracked_names` | (nm,) | their names |
| `reaction/<PAIR>` | (T, nb, 3 or 6) | wrench [N, N m] of the pair on each body |
| `joint_moment/<PAIR>` | (T, nb[, 3]) | its moment about the joint point [N m] |
| `unique/<PAIR>` | () bool | whether a rigid model determines the pair's reaction |
| `rows/<PAIR>` | (k,) int | the pair's rows of C, 1-based |
| `components/<PAIR>` | (T, k) | per row, −λ [N or N m]: the reaction component |
| `component_labels/<PAIR>` | (k,) str | their labels (`Pair.components`) |
| `component_unique/<PAIR>` | (k,) bool | whether a rigid model determines each component |
| `multipliers` | (T, nc) | λ as chosen by the method (rows in the order of C) |
| `total_reaction` | (T, nq) | f = F − M q̈ = Cᵀ λ, always unique |
| `position_violation` | (T,) | max \\|Φ\\| [m, rad] |
| `velocity_violation` | (T,) | max \\|C q̇ + b\\| [m/s, rad/s] |
| `energy` | (T,) | kinetic + potential energy [J] |
| `rank` | (T,) int | rank of C at each saved state (SVD, relative tolerance 1e-8) |
| `rank_gap` | (T,) | σ_r / σ_1 of C, r the rank at the first saved state (→ 0: singular) |
| `active_set/initial` | (nc,) bool | partitioning (`BlockSparse`) runs: active rows at t0 |
| `active_set/steps` | (k, 2) | the step [t_before, t_after] of each change [s] |
| `active_set/active` | (k, nc) bool | the active rows after each change |
| `b_norm/<PAIR>` | () | ‖B_X‖_F of the pair at the first saved state: 0 (round-off) iff unique |
| `component_b_norm/<PAIR>` | (k,) | the same for each of its rows (reaction components) |
| `pair_bodies/<PAIR>` | (1 or 2,) str | the bodies it connects (`ground` included) |
| `body_names`, `pair_names` | (nb,), (npairs,) | names in model order |
| `joint/q`, `joint/qd` | (T, nj) | joint-coordinate runs: the joint coordinates and rates |
| `joint/names` | (nj,) str | their names, `PAIR.coordinate` |
| `meta` | () str | JSON: mechanism, configuration file, method, units, `solvability`, ... |

`meta["solvability"]` is the report at the first saved state: `t`, `n`, `m`, `h`,
`rows` (m + h), `rank`, `redundancy` (p), `dof`, `utol` (B_X counts as zero when
‖B_X‖_F ≤ utol ‖C_X‖_F), `unique` ({pair: bool}) and `rank_rtol`, the relative
tolerance of the `rank` history (1e-8, the one the simulation's own rank decisions
use: saved states sit off the constraint manifold by the integration error, which
makes dependent rows independent by about that much); `meta["rheonomic"]` names the
pairs that prescribe motion (their work changes the energy) when the run came from
a configuration. Runs written before these entries existed lack them;
[`read_run`][redundax.io.read_run]
then returns `rank` None and empty dicts.

A run in joint coordinates ([`redundax.simulate`][]) is written in the same
layout: `q`, `q̇`, `q̈` are the absolute coordinates of the same motion, the
reactions are the DCA's (`method` "DCA"), the verdicts and `b_norm` those of seed
002's analysis ([`redundax.joint_coordinates.joint_uniqueness`][]: `meta["solvability"]` then has
`coordinates` "joint", `n` the bodies' twist coordinates and `rows` every pair's
rows, on which the DCA decides (n − rank is the mobility), and `decided_by`, per
pair the step that decided it), and the joint coordinates and rates are stored
besides (`joint/...`; CSV columns `joint.<NAME>` and `joint_rate.<NAME>`).

Coordinates: a planar body b has x, y, φ at 3b, 3b+1, 3b+2; a spatial body b has
the natural coordinates r (its centre of mass), u, v, w (its axes, global
components) at 12b … 12b+11. The wrench of a pair acts on every moving body at
the body's centre of mass, in global axes (zero for the bodies the pair does not
connect): [Fx, Fy, Mz] planar, [Fx, Fy, Fz, Mx, My, Mz] spatial; the joint moment
is Mz or [Mx, My, Mz]. A reaction component (a force along, or a moment about, the
labelled axis of the joint frame: "axial force", "bending moment e1", ...) is −λ of
its row, acting on the pair's first body unless its label names another.

**CSV layout**: a first line `# redundax run: {JSON metadata}`, then one header
row and one row per saved time. Columns: `t`; `q[k]`, `qd[k]`, `qdd[k]` (k
0-based, as in `q`); `tracked.<MARKER>.x`, `.y` (, `.z`); for every pair and every
moving body it connects, `reaction.<PAIR>.<BODY>.Fx`, `.Fy`, `.Mz` (spatial: `.Fx`,
`.Fy`, `.Fz`, `.Mx`, `.My`, `.Mz`), each suffixed ` (not unique)` when a rigid
model does not determine that pair's reaction (the numbers are then only the
method's choice); then every pair's `joint_moment.<PAIR>.<BODY>.Mz` (spatial
`.Mx`, `.My`, `.Mz`) with the same suffix; `component.<PAIR>.<LABEL>` for each of
its rows, suffixed ` (not unique)` when that component is not determined;
`position_violation`, `velocity_violation`, `energy`, `rank` (an integer). Read it with
`pandas.read_csv(path, comment="#")` or
`numpy.genfromtxt(path, delimiter=",", skip_header=2)`.
"""

import datetime
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from .._assembly import marker_positions
from .._model import Model, Pair
from .._qr import DECISION_RTOL
from .._reactions import Reactions
from .._simulate import Trajectory
from .._solvability import solvability_report
from .._spec import GROUND
from ..joint_coordinates import JointTrajectory, JointUniquenessReport
from ..joint_coordinates._uniqueness import STEPS
from ..monitors._rank_history import rank_history
from ._atomic import EXISTS, NOT_WRITABLE, atomic_write
from .config import Config

FORMAT = "redundax run 1"
"""The `format` entry of the metadata; changes when the layout does."""

SUFFIXES = (".npz", ".csv")
"""File extensions [`write_run`][redundax.io.write_run] understands."""

NOT_UNIQUE = " (not unique)"
"""Suffix of the CSV columns of reactions that a rigid model does not determine."""

WRENCH_COMPONENTS = {2: ("Fx", "Fy", "Mz"), 3: ("Fx", "Fy", "Fz", "Mx", "My", "Mz")}
"""Names of the wrench components, planar (dim 2) and spatial (dim 3)."""

MOMENT_COMPONENTS = {2: ("Mz",), 3: ("Mx", "My", "Mz")}
"""Names of the components of a moment about a joint point."""

AXES = {2: ("x", "y"), 3: ("x", "y", "z")}
"""Names of the components of a tracked point."""

_HISTORIES = (
    "t", "q", "qd", "qdd", "multipliers", "total_reaction",
    "position_violation", "velocity_violation", "energy",
)  # fmt: skip
"""The arrays stored under their own name, as they are."""


def check_output(
    path: str | os.PathLike, force: bool = False, suffixes: Sequence[str] = SUFFIXES
) -> Path:
    """Check, before a long computation, that [`write_run`][redundax.io.write_run] can write `path`.

    **Arguments:**

    - `suffixes`: the accepted extensions (default `.npz`, `.csv`; the figures of
      `redundax.plot` pass theirs).

    **Returns:** `path` as a `Path`.

    **Raises:** `ValueError` for an extension not in `suffixes`;
    `IsADirectoryError` if `path` is a directory (even with `force`);
    `FileExistsError` if the file exists and `force` is False; `FileNotFoundError`
    if its directory does not exist; `PermissionError` if the process may not
    write in it (permissions, or a read-only file system).
    """
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise ValueError(
            f"{path}: unknown output format {path.suffix or '(no extension)'!r}; "
            f"use a file name ending in {' or '.join(suffixes)}"
        )
    if path.is_dir():  # --force cannot replace a directory with a file
        raise IsADirectoryError(f"{path}: is a directory; name a file ({' or '.join(suffixes)})")
    if path.exists() and not force:
        raise FileExistsError(f"{path}: {EXISTS}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"{path}: no such directory {str(path.parent)!r}")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise PermissionError(
            f"{path}: cannot write in the directory {str(path.parent)!r}: {NOT_WRITABLE}"
        )
    return path


def _histories(
    model: Model,
    trajectory: Trajectory | JointTrajectory,
    reactions: Reactions,
    unique: Mapping[str, bool] | None,
    component_unique: Mapping[str, Sequence[bool]] | None,
) -> dict[str, Any]:
    names = model.pair_names
    if tuple(reactions.names) != names:
        raise ValueError(
            f"the reactions are of pairs {reactions.names}, the model has pairs {names}"
        )
    T = trajectory.ts.shape[0]
    if reactions.wrench.shape[0] != T:
        raise ValueError(
            f"reactions at {reactions.wrench.shape[0]} states for a trajectory of {T}: "
            "evaluate them at every saved state (jax.vmap over trajectory.q, qd, ts)"
        )
    if unique is None:
        # Unique throughout the run: a verdict that changes (at a singular
        # configuration) counts as not unique.
        flags = np.all(np.asarray(reactions.unique), axis=0)
        unique = {name: bool(flag) for name, flag in zip(names, flags, strict=True)}
    missing = [name for name in names if name not in unique]
    if missing:
        raise ValueError(f"unique: no flag for pair(s) {', '.join(missing)}")
    if component_unique is None:
        rows = np.all(np.asarray(reactions.component_unique), axis=0)
        component_unique = {p.name: [bool(rows[r]) for r in p.rows] for p in model.pairs}
    for pair in model.pairs:
        flags = component_unique.get(pair.name)
        if flags is None or len(flags) != len(pair.rows):
            raise ValueError(
                f"component_unique: expected {len(pair.rows)} flag(s) for pair {pair.name!r} "
                f"(one per row), got {flags!r}"
            )
    lam = np.asarray(reactions.multipliers)
    joint = isinstance(trajectory, JointTrajectory)
    return {
        "t": np.asarray(trajectory.ts),
        "q": np.asarray(trajectory.x if joint else trajectory.q),
        "qd": np.asarray(trajectory.xd if joint else trajectory.qd),
        "qdd": np.asarray(reactions.qdd),
        "tracked": np.asarray(
            jax.vmap(lambda q: marker_positions(model, q))(trajectory.x if joint else trajectory.q)
        ),
        "wrench": np.asarray(reactions.wrench),
        "joint_moment": np.asarray(reactions.joint_moment),
        "unique": {name: bool(unique[name]) for name in names},
        # Row k's reaction component is −λ_k (see `Pair.components`).
        "components": {p.name: -lam[:, list(p.rows)] for p in model.pairs},
        "component_unique": {
            p.name: [bool(u) for u in component_unique[p.name]] for p in model.pairs
        },
        "multipliers": np.asarray(reactions.multipliers),
        "total_reaction": np.asarray(reactions.total),
        "position_violation": np.asarray(trajectory.position_violation),
        "velocity_violation": np.asarray(trajectory.velocity_violation),
        "energy": np.asarray(trajectory.energy),
        "joint": (
            {
                "names": trajectory.coordinate_names,
                "q": np.asarray(trajectory.q),
                "qd": np.asarray(trajectory.qd),
            }
            if joint
            else None
        ),
    }


def _active_set(trajectory: Trajectory) -> dict[str, np.ndarray] | None:
    """The partitioning's log of the run (its stored changes), or None."""
    log = trajectory.active_set
    if log is None:
        return None
    stored = min(int(log.count), log.t_before.shape[0])
    return {
        "initial": np.asarray(log.initial),
        "steps": np.stack([np.asarray(log.t_before), np.asarray(log.t_after)], axis=1)[:stored],
        "active": np.asarray(log.active)[:stored],
    }


def _structure(model: Model, trajectory: Trajectory) -> dict[str, Any]:
    """The rank of C along the run and the solvability report of its structure."""
    T = trajectory.ts.shape[0]
    names = model.pair_names
    if model.n_constraints == 0:  # nothing to decide: no rows, no reactions
        return {
            "rank": np.zeros(T, dtype=np.int64),
            "rank_gap": np.full(T, np.nan),
            "b_norm": {},
            "component_b_norm": {},
            "solvability": None,
        }
    # Saved states sit off the constraint manifold by the integration error, which
    # makes dependent rows independent by about that much (Bricard's mechanism:
    # σ_60/σ_1 up to 8e-14 in 0.2 s at rtol 1e-10): decide with the tolerance of the
    # simulation's own rank decisions, not the round-off default.
    history = rank_history(model, trajectory, rtol=DECISION_RTOL)
    t0 = trajectory.ts[0]
    # The Structure the motion was simulated with, decided at its initial state:
    # the same verdicts as the reactions' and the command line's (no new decision).
    report = solvability_report(trajectory.structure)
    b_norm = np.asarray(report.b_norm)
    row_b_norm = np.asarray(report.row_b_norm)
    unique = np.asarray(report.unique)
    return {
        "active_set": _active_set(trajectory),
        "rank": np.asarray(history.rank, dtype=np.int64),
        "rank_gap": np.asarray(history.relative_gap()),
        "b_norm": {name: float(b_norm[g]) for g, name in enumerate(names)},
        "component_b_norm": {p.name: row_b_norm[list(p.rows)] for p in model.pairs},
        "solvability": {
            "t": float(t0),
            "n": report.n,
            "m": report.m,
            "h": report.h,
            "rows": report.m + report.h,
            "rank": int(report.rank),
            "redundancy": int(report.redundancy),
            "dof": int(report.dof),
            "utol": float(report.tolerance),
            "rank_rtol": DECISION_RTOL,
            "unique": {name: bool(unique[g]) for g, name in enumerate(names)},
        },
    }


def _joint_structure(model: Model, trajectory, report: JointUniquenessReport) -> dict[str, Any]:
    """The rank of C along a joint-coordinate run (of its absolute states) and the
    verdicts of seed 002's analysis the run was reported with."""
    structure = trajectory.structure
    names = model.pair_names
    if report.names != names:
        raise ValueError(f"the report is of pairs {report.names}, the model has pairs {names}")
    carried = np.asarray(structure.rows.rows)
    m = int(np.sum(carried < model.n_holonomic))
    history = (
        rank_history(model, trajectory.absolute, rtol=DECISION_RTOL)
        if model.n_constraints
        else None
    )
    T = trajectory.ts.shape[0]
    return {
        "active_set": None,
        "rank": (
            np.zeros(T, dtype=np.int64)
            if history is None
            else np.asarray(history.rank, dtype=np.int64)
        ),
        "rank_gap": np.full(T, np.nan) if history is None else np.asarray(history.relative_gap()),
        "b_norm": dict(zip(names, report.b_norm, strict=True)),
        "component_b_norm": {
            name: np.asarray(rows) for name, rows in zip(names, report.row_b_norm, strict=True)
        },
        "solvability": {
            "coordinates": "joint",
            "t": float(trajectory.ts[0]),
            "n": int(model.bodies.count * (3 if model.dim == 2 else 6)),
            "m": m,
            "h": int(carried.size - m),
            "rows": int(carried.size),
            "rank": int(carried.size - report.redundancy),
            "redundancy": int(report.redundancy),
            "dof": int(report.mobility),
            "utol": float(report.utol),
            "rank_rtol": DECISION_RTOL,
            "unique": dict(zip(names, report.unique, strict=True)),
            "decided_by": {
                name: STEPS[step] for name, step in zip(names, report.step, strict=True)
            },
        },
    }


_COORDINATES = {
    2: "q[k], k 0-based: body b has x, y, phi at 3b, 3b+1, 3b+2",
    3: "q[k], k 0-based: body b has natural coordinates r (x, y, z of its centre of mass), "
    "u, v, w (its axes, global components) at 12b ... 12b+11",
}


def _metadata(model: Model, source: Config | Model, method: str, extra: Mapping[str, Any] | None):
    meta: dict[str, Any] = {"format": FORMAT}
    if isinstance(source, Config):
        meta.update(mechanism=source.name, config=str(source.path))
    dim = model.dim
    wrench = ", ".join(WRENCH_COMPONENTS[dim])
    meta.update(
        method=method,
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        dim=dim,
        units="SI: s, m, rad, N, N m, J",
        coordinates=_COORDINATES[dim],
        reactions=f"wrench [{wrench}] a pair exerts on a moving body at its centre of "
        "mass, global axes; a reaction that is not unique is only the method's choice",
        components="per row of a pair, -lambda: the force along or moment about the "
        "labelled joint axis, on the pair's first body unless the label names another",
    )
    if isinstance(source, Config):
        meta["rheonomic"] = list(source.rheonomic)
    meta.update(extra or {})
    return meta


def _write_npz(file, model: Model, data: dict[str, Any], meta: dict[str, Any]) -> None:
    arrays = {key: data[key] for key in ("tracked", *_HISTORIES, "rank", "rank_gap")}
    arrays["tracked_names"] = np.asarray(model.markers.names, dtype=str)
    arrays["body_names"] = np.asarray(model.bodies.names, dtype=str)
    arrays["pair_names"] = np.asarray(model.pair_names, dtype=str)
    for k, pair in enumerate(model.pairs):
        arrays[f"reaction/{pair.name}"] = data["wrench"][:, k]
        arrays[f"joint_moment/{pair.name}"] = data["joint_moment"][:, k]
        arrays[f"unique/{pair.name}"] = np.asarray(data["unique"][pair.name])
        arrays[f"rows/{pair.name}"] = np.asarray([r + 1 for r in pair.rows], dtype=np.int64)
        arrays[f"pair_bodies/{pair.name}"] = np.asarray(pair.bodies, dtype=str)
        if pair.name in data["b_norm"]:
            arrays[f"b_norm/{pair.name}"] = np.asarray(data["b_norm"][pair.name])
            arrays[f"component_b_norm/{pair.name}"] = data["component_b_norm"][pair.name]
        arrays[f"components/{pair.name}"] = data["components"][pair.name]
        arrays[f"component_labels/{pair.name}"] = np.asarray(component_labels(pair), dtype=str)
        arrays[f"component_unique/{pair.name}"] = np.asarray(
            data["component_unique"][pair.name], dtype=bool
        )
    if data.get("active_set") is not None:
        for key, values in data["active_set"].items():
            arrays[f"active_set/{key}"] = values
    if data["joint"] is not None:
        arrays["joint/q"], arrays["joint/qd"] = data["joint"]["q"], data["joint"]["qd"]
        arrays["joint/names"] = np.asarray(data["joint"]["names"], dtype=str)
    arrays["meta"] = np.asarray(json.dumps(meta))
    np.savez(file, **arrays)


def _write_csv(file, model: Model, data: dict[str, Any], meta: dict[str, Any]) -> None:
    T, nq = data["q"].shape
    names, columns = ["t"], [data["t"][:, None]]
    for key in ("q", "qd", "qdd"):
        names += [f"{key}[{k}]" for k in range(nq)]
        columns.append(data[key])
    if data["joint"] is not None:
        for key, values in (("joint", data["joint"]["q"]), ("joint_rate", data["joint"]["qd"])):
            names += [f"{key}.{name}" for name in data["joint"]["names"]]
            columns.append(values)
    dim = model.dim
    for m, marker in enumerate(model.markers.names):
        names += [f"tracked.{marker}.{axis}" for axis in AXES[dim]]
        columns.append(data["tracked"][:, m])
    bodies = model.bodies.names
    moments = data["joint_moment"].reshape(*data["joint_moment"].shape[:3], -1)
    for key, values, labels in (
        ("reaction", data["wrench"], WRENCH_COMPONENTS[dim]),
        ("joint_moment", moments, MOMENT_COMPONENTS[dim]),
    ):
        for k, pair in enumerate(model.pairs):
            suffix = "" if data["unique"][pair.name] else NOT_UNIQUE
            for body in pair.bodies:
                if body == GROUND:
                    continue
                b = bodies.index(body)
                names += [f"{key}.{pair.name}.{body}.{c}{suffix}" for c in labels]
                columns.append(values[:, k, b])
    for pair in model.pairs:
        flags = data["component_unique"][pair.name]
        names += [
            f"component.{pair.name}.{label}{'' if u else NOT_UNIQUE}"
            for label, u in zip(component_labels(pair), flags, strict=True)
        ]
        columns.append(data["components"][pair.name])
    for key in ("position_violation", "velocity_violation", "energy"):
        names.append(key)
        columns.append(data[key][:, None])
    names.append("rank")
    table = np.concatenate(columns, axis=1)
    file.write(f"# redundax run: {json.dumps(meta)}\n")
    file.write(",".join(_csv_field(name) for name in names) + "\n")
    for row, rank in zip(table.tolist(), data["rank"].tolist(), strict=True):
        file.write(",".join(repr(x) for x in row) + f",{rank}\n")


def component_labels(pair: Pair) -> tuple[str, ...]:
    """The labels of a pair's reaction components, one per row (`Pair.components`;
    `row k`, 1-based, where the pair has none)."""
    return tuple(pair.components) or tuple(f"row {r + 1}" for r in pair.rows)


def _csv_field(name: str) -> str:
    """Quote a column name that contains a comma or a quote (RFC 4180)."""
    if any(c in name for c in ',"\n'):
        return '"' + name.replace('"', '""') + '"'
    return name


def write_run(
    path: str | os.PathLike,
    source: Config | Model,
    trajectory: Trajectory | JointTrajectory,
    reactions: Reactions,
    *,
    unique: Mapping[str, bool] | None = None,
    component_unique: Mapping[str, Sequence[bool]] | None = None,
    metadata: Mapping[str, Any] | None = None,
    force: bool = False,
    joint_report: JointUniquenessReport | None = None,
) -> Path:
    """Write the time histories of a run to `path`, as NPZ or CSV by its extension.

    Besides the histories it is given, it computes and stores the rank of C at
    every saved state ([`redundax.monitors.rank_history`][]) and the solvability report at
    the first one ([`redundax.analyze_solvability`][]).

    **Arguments:**

    - `path`: a file name ending in `.npz` or `.csv` (layouts in the module
      docstring).
    - `source`: the [`Config`][redundax.io.Config] the run came from (its name and file go into the
      metadata), or just the `Model`.
    - `trajectory`: the [`redundax.Trajectory`][] of `simulate`, or the
      [`redundax.JointTrajectory`][] of a joint-coordinate run (then pass `joint_report`).
    - `reactions`: [`redundax.Reactions`][] at every saved state, batched:
      `jax.vmap(lambda q, qd, t: reactions(model, q, qd, t, method=...))(
      trajectory.q, trajectory.qd, trajectory.ts)`.
    - `unique`: the verdict per pair name; default: unique at every saved state
      (from `reactions.unique`). Pass the verdict of
      [`redundax.analyze_solvability`][] at the initial configuration to state the
      structural answer.
    - `component_unique`: per pair name, one flag per row of the pair (its
      reaction components); default: unique at every saved state (from
      `reactions.component_unique`). Pass the report's `row_unique` of those rows
      for the structural answer.
    - `metadata`: extra JSON-serialisable entries for the metadata.
    - `force`: overwrite an existing file.
    - `joint_report`: for a joint-coordinate run, the
      [`redundax.joint_coordinates.JointUniquenessReport`][] its verdicts come from (the default
      `unique` and `component_unique`, `b_norm` and `meta["solvability"]`).

    **Returns:** the path written.

    **Raises:** as [`check_output`][redundax.io.check_output]: `ValueError` for an unknown
    extension, `FileExistsError` if the file exists and `force` is False; `ValueError` if the
    reactions do not belong to the model or to the trajectory, or a joint run
    comes without its report.

    !!! example
        ```python
        traj = rx.simulate(config.model, config.state, 10.0)
        reac = jax.vmap(lambda q, qd, t: rx.reactions(config.model, q, qd, t))(
            traj.q, traj.qd, traj.ts
        )
        write_run("run.npz", config, traj, reac)
        ```
    """
    path = check_output(path, force)
    model = source.model if isinstance(source, Config) else source
    if isinstance(trajectory, JointTrajectory):
        if joint_report is None:
            raise ValueError(
                "write_run: a joint-coordinate run needs joint_report= "
                "(redundax.joint_coordinates.joint_uniqueness)"
            )
        # The verdicts a run claims (as an absolute run's file): the stable ones.
        if unique is None:
            unique = dict(zip(joint_report.names, joint_report.stable_unique, strict=True))
        if component_unique is None:
            rows = joint_report.stable_row_unique
            component_unique = dict(zip(joint_report.names, rows, strict=True))
    data = _histories(model, trajectory, reactions, unique, component_unique)
    if isinstance(trajectory, JointTrajectory):
        data.update(_joint_structure(model, trajectory, joint_report))
    else:
        data.update(_structure(model, trajectory))
    meta = _metadata(model, source, reactions.method, metadata)
    if data["joint"] is not None:
        meta["joint_coordinates"] = list(data["joint"]["names"])
    if data["solvability"] is not None:
        meta["solvability"] = data["solvability"]
    if path.suffix.lower() == ".npz":
        with atomic_write(path, force, text=False) as file:
            _write_npz(file, model, data, meta)
    else:
        with atomic_write(path, force, text=True) as file:
            _write_csv(file, model, data, meta)
    return path


def read_run(path: str | os.PathLike) -> dict[str, Any]:
    """Read a run written by [`write_run`][redundax.io.write_run] as NPZ.

    **Returns:** a dict with the arrays `t`, `q`, `qd`, `qdd`, `multipliers`,
    `total_reaction`, `position_violation`, `velocity_violation`, `energy`
    (NumPy), and
    - `dim`: 2 (planar) or 3 (spatial);
    - `tracked`: {marker: (T, dim) array}, in model order;
    - `reactions`: {pair: (T, nb, 3) planar or (T, nb, 6) spatial wrench array}, in
      model order;
    - `joint_moment`: {pair: (T, nb) planar or (T, nb, 3) spatial array};
    - `unique`: {pair: bool}; `rows`: {pair: tuple of 1-based rows};
    - `components`: {pair: {label: (T,) array}}, −λ of each row of the pair;
    - `component_unique`: {pair: {label: bool}};
    - `bodies`: the body names, in the order of the wrenches' second axis;
    - `pair_bodies`: {pair: its bodies, first body first}, `ground` included;
    - `rank`: (T,) int array, rank of C at each saved state; `rank_gap`: (T,)
      σ_r/σ_1 (r the rank at the first saved state);
    - `active_set`: for a run of a partitioning method, {`initial`: (nc,) bool,
      `steps`: (k, 2) the integrator step of each change, `active`: (k, nc) bool
      the rows active after it}; else None;
    - `b_norm`: {pair: ‖B_X‖_F at the first saved state}; `component_b_norm`:
      {pair: {label: ‖B_k‖ of that row}};
    - `solvability`: the report at the first saved state (`meta["solvability"]`:
      `n`, `m`, `h`, `rows`, `rank`, `redundancy`, `dof`, `utol`, `unique`; for a
      joint-coordinate run also `coordinates` "joint" and `decided_by`);
    - `joint`: for a joint-coordinate run {`names`, `q`, `qd`}, else None;
    - `meta`: the metadata dict.

    (`joint_moment`, `components`, `component_unique`, `pair_bodies`, `b_norm`,
    `component_b_norm` and `solvability` are empty, and `rank` and `rank_gap`
    None, for runs written before they were stored.)

    **Raises:** `ValueError` if the file is not an NPZ run of this format;
    `FileNotFoundError` if it does not exist.
    """
    path = Path(path)
    if path.suffix.lower() != ".npz":
        raise ValueError(f"{path}: read_run reads .npz runs only (CSV is for other tools)")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    # The file is opened here, and closed here whatever np.load makes of it.
    with path.open("rb") as file:
        magic = file.read(6)
        file.seek(0)
        if magic.startswith(b"\x93NUMPY"):
            raise ValueError(
                f"{path}: not a redundax run (a single NumPy array, not an NPZ archive)"
            )
        if not magic.startswith(b"PK"):
            # np.load would try it as a pickle, and say so.
            raise ValueError(f"{path}: not a redundax run (not an NPZ archive: not a zip file)")
        try:
            npz = np.load(file, allow_pickle=False)
        except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(f"{path}: not a redundax run (not an NPZ archive: {error})") from None
        try:
            out = _read_entries(path, npz)
        except _NotARun:
            raise
        except _DAMAGED as error:
            # Entries missing, of the wrong kind, or unreadable (a corrupt member).
            what = str(error.args[0]) if isinstance(error, KeyError) else str(error)
            raise ValueError(f"{path}: a damaged or incomplete redundax run ({what})") from None
        finally:
            npz.close()
    _check_shapes(path, out)
    return out


class _NotARun(ValueError):
    """A readable NPZ archive that is not a redundax run (its message says why)."""


_DAMAGED = (KeyError, ValueError, TypeError, IndexError, OSError, EOFError, zipfile.BadZipFile)
"""What reading the entries of a damaged or foreign NPZ archive raises."""


def _read_entries(path: Path, npz: Any) -> dict[str, Any]:
    """The entries of an open run archive, as [`read_run`][redundax.io.read_run] returns them."""
    files = set(npz.files)
    if "meta" not in files:
        raise _NotARun(f"{path}: not a redundax run (no 'meta' entry)")
    try:
        meta = json.loads(str(npz["meta"]))
    except ValueError:
        meta = None
    if not isinstance(meta, dict):
        raise _NotARun(f"{path}: not a redundax run (its 'meta' entry is not a JSON object)")
    if meta.get("format") != FORMAT:
        raise _NotARun(f"{path}: unknown run format {meta.get('format')!r}, expected {FORMAT!r}")
    out: dict[str, Any] = {key: npz[key] for key in _HISTORIES}
    tracked = npz["tracked"]
    out["tracked"] = {
        str(name): tracked[:, m] for m, name in enumerate(npz["tracked_names"].tolist())
    }
    pairs = [str(name) for name in npz["pair_names"].tolist()]
    out["reactions"] = {name: npz[f"reaction/{name}"] for name in pairs}
    out["unique"] = {name: bool(npz[f"unique/{name}"]) for name in pairs}
    out["rows"] = {name: tuple(int(r) for r in npz[f"rows/{name}"]) for name in pairs}
    out["dim"] = int(meta.get("dim", 2))
    out["joint_moment"] = {
        name: npz[f"joint_moment/{name}"] for name in pairs if f"joint_moment/{name}" in files
    }
    out["components"], out["component_unique"] = {}, {}
    for name in pairs:
        if f"components/{name}" not in files:
            continue
        labels = [str(label) for label in npz[f"component_labels/{name}"].tolist()]
        values, flags = npz[f"components/{name}"], npz[f"component_unique/{name}"]
        out["components"][name] = {label: values[:, c] for c, label in enumerate(labels)}
        out["component_unique"][name] = {label: bool(flags[c]) for c, label in enumerate(labels)}
    out["bodies"] = tuple(str(name) for name in npz["body_names"].tolist())
    out["pair_bodies"] = {
        name: tuple(str(b) for b in npz[f"pair_bodies/{name}"].tolist())
        for name in pairs
        if f"pair_bodies/{name}" in files
    }
    out["rank"] = npz["rank"] if "rank" in files else None
    out["rank_gap"] = npz["rank_gap"] if "rank_gap" in files else None
    out["active_set"] = (
        {key: npz[f"active_set/{key}"] for key in ("initial", "steps", "active")}
        if "active_set/initial" in files
        else None
    )
    out["b_norm"] = {
        name: float(npz[f"b_norm/{name}"]) for name in pairs if f"b_norm/{name}" in files
    }
    out["component_b_norm"] = {}
    for name in pairs:
        if f"component_b_norm/{name}" in files and name in out["components"]:
            values = npz[f"component_b_norm/{name}"]
            out["component_b_norm"][name] = {
                label: float(values[c]) for c, label in enumerate(out["components"][name])
            }
    out["solvability"] = meta.get("solvability", {})
    out["joint"] = (
        {
            "names": tuple(str(name) for name in npz["joint/names"].tolist()),
            "q": npz["joint/q"],
            "qd": npz["joint/qd"],
        }
        if "joint/q" in files
        else None
    )
    out["meta"] = meta
    return out


def _check_shapes(path: Path, run: dict[str, Any]) -> None:
    """Refuse a run whose arrays do not fit together (a foreign or edited file),
    naming the first entry that does not, before anything draws it."""
    T = run["t"].shape[0] if run["t"].ndim == 1 else -1
    nq = run["q"].shape[1] if run["q"].ndim == 2 else -1
    dim, nb = run["dim"], len(run["bodies"])
    width = {2: 3, 3: 6}.get(dim, -1)
    expected: list[tuple[str, Any, tuple[int | None, ...]]] = [
        ("t", run["t"], (None,)),
        ("q", run["q"], (T, None)),
        ("qd", run["qd"], (T, nq)),
        ("qdd", run["qdd"], (T, nq)),
        ("multipliers", run["multipliers"], (T, None)),
        ("total_reaction", run["total_reaction"], (T, nq)),
        ("position_violation", run["position_violation"], (T,)),
        ("velocity_violation", run["velocity_violation"], (T,)),
        ("energy", run["energy"], (T,)),
        *((f"tracked ({name!r})", a, (T, dim)) for name, a in run["tracked"].items()),
        *((f"reaction/{name}", a, (T, nb, width)) for name, a in run["reactions"].items()),
        *(
            (f"components/{name} ({label!r})", a, (T,))
            for name, labels in run["components"].items()
            for label, a in labels.items()
        ),
        *((key, run[key], (T,)) for key in ("rank", "rank_gap") if run[key] is not None),
        *(
            (f"joint/{key}", run["joint"][key], (T, len(run["joint"]["names"])))
            for key in ("q", "qd")
            if run["joint"] is not None
        ),
    ]
    if dim not in (2, 3):
        raise ValueError(f"{path}: a damaged redundax run (its 'meta' says dim = {dim!r})")
    for name, array, shape in expected:
        fits = (
            np.issubdtype(array.dtype, np.number)
            and array.ndim == len(shape)
            and all(n is None or n == m for n, m in zip(shape, array.shape, strict=True))
        )
        if not fits:
            wanted = "(" + ", ".join("T" if n == T else "*" if n is None else str(n) for n in shape)
            raise ValueError(
                f"{path}: a damaged redundax run: entry {name!r} has {array.dtype} values "
                f"of shape {array.shape}, expected numbers of shape "
                f"{wanted}{',' if len(shape) == 1 else ''})"
                + (f" (T = {T} saved times)" if T >= 0 else "")
            )
