"""Running a sweep chunk by chunk: files, resuming, the combined results and summary.

Part of [`redundax.sweep`][], whose docstring describes the whole.
"""

import dataclasses
import hashlib
import json
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from .._version import __version__
from ..io._atomic import atomic_write, check_directory
from ._constants import ASSEMBLY_PERCENTILES, FORMAT
from ._evaluate import Evaluator, default_chunk_size, default_mesh, local_devices
from ._file import Sweep


# ------------------------------------------------------------------- files, resume
@dataclasses.dataclass(frozen=True)
class Progress:
    """What [`run_sweep`][redundax.sweep.run_sweep] reports after each chunk.

    - `chunk`: the chunk just finished (0-based), of `chunks`.
    - `done`, `variants`: variants finished (found on disk, or computed by this
      process in this run), of all.
    - `computed`: chunks computed by this process in this run so far; `resumed`:
      chunks found on disk.
    - `elapsed`: seconds since this run started (the first chunk includes compilation).
    - `left`: chunks this process has still to compute.

    The chunks found on disk are reported first (`computed == 0`), then the chunks
    computed, as each is written. In a run of several processes each process
    reports its own chunks.
    """

    chunk: int
    chunks: int
    done: int
    variants: int
    computed: int
    resumed: int
    elapsed: float
    left: int = 0


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
            # How rank_min, rank_max and sigma_ratio_min are taken (a manifest of
            # an older redundax, which took them at the saved states, differs).
            "rank_along": "singularity monitor at the integrator's step ends",
            "objects (sha256)": _digest(
                (options.method, options.solver, options.drift_control, options.initial)
            ),
        }
        if sweep.simulate
        else None,
        "stresses": None
        if sweep.stresses is None
        else {
            "(stiffness, q) (sha256)": _digest(
                (np.asarray(sweep.stresses.stiffness, float), sweep.stresses.q)
            )
        },
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


def check_out(out: str | Path, force: bool = False) -> None:
    """Check, before anything is computed, that a sweep may write into `out`.

    **Raises:** `PermissionError` or `NotADirectoryError` (as
    [`redundax.io._atomic.check_directory`][]) naming the directory;
    `FileExistsError` if `out` holds files a sweep writes (`sweep.npz`,
    `summary.json`, chunk files) but no manifest of a sweep, unless `force`:
    they are someone else's.
    """
    out = Path(out)
    check_directory(out)
    if force or (out / "manifest.json").exists():
        return
    theirs = [
        str(path.relative_to(out))
        for path in [
            out / "sweep.npz",
            out / "summary.json",
            *sorted((out / "chunks").glob("chunk-*.npz"))[:1],
        ]
        if path.exists()
    ]
    if theirs:
        raise FileExistsError(
            f"{out}: holds {', '.join(theirs)} but no manifest.json of a redundax sweep, "
            "so they are not a sweep's to replace; use another output directory, or pass "
            "--force (force=True) to overwrite them"
        )


def _start(out: Path, describe: dict[str, Any], force: bool) -> None:
    """Create `out` with its manifest, or check that its manifest is this sweep's."""
    manifest = out / "manifest.json"
    check_out(out, force)
    if manifest.exists() and not force:
        _check_manifest(out, describe)
    (out / "chunks").mkdir(parents=True, exist_ok=True)
    check_directory(out / "chunks")
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
        with atomic_write(manifest, True, text=True) as file:
            file.write(json.dumps(describe, indent=1) + "\n")


def _another_sweep(out: Path, describe: dict[str, Any], old: dict[str, Any]) -> ValueError:
    differ = [k for k in describe if k != "fingerprint" and old.get(k) != describe[k]]
    return ValueError(
        f"{out}: holds another sweep (its manifest differs in: "
        f"{', '.join(differ) or 'format'}); use another output directory, or pass "
        "--force (force=True) to discard its results"
    )


def _fingerprinted(sweep: Sweep, table: np.ndarray, size: int) -> dict[str, Any]:
    """The manifest of a sweep: `_describe` with its fingerprint."""
    describe = _describe(sweep, table, size)
    describe["fingerprint"] = hashlib.sha256(
        json.dumps(describe, sort_keys=True).encode()
    ).hexdigest()
    return describe


@dataclasses.dataclass(frozen=True)
class Plan:
    """What [`plan_sweep`][redundax.sweep.plan_sweep] finds: the chunk size `run_sweep` would use,
    the
    number of chunks, and how many of them are still to compute."""

    chunk_size: int
    chunks: int
    pending: int


def plan_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    chunk_size: int | None = None,
    force: bool = False,
    devices: Sequence[Any] | None = None,
    processes: int = 1,
    start: bool = False,
) -> Plan:
    """The work [`run_sweep`][redundax.sweep.run_sweep] would do in `out` with these arguments,
    shared by `processes` processes of `devices` each (default: this process's): what
    `redundax sweep` divides among its local worker processes.

    Nothing is computed. With `start`, `out` is prepared as `run_sweep` prepares
    it (its manifest written, with `force` the results of another sweep deleted,
    the temporary files of interrupted writes removed), so that workers
    (`run_sweep(..., worker=...)`) can run in it; else nothing is written.

    **Raises:** as `run_sweep` before it computes: `ValueError` if `out` holds
    another sweep (unless `force`), the errors of `check_out`.
    """
    out = Path(out)
    check_out(out, force)
    table = np.concatenate([sweep.nominal()[None, :], sweep.table()])
    size = chunk_size or sweep.chunk_size or _manifest_chunk_size(out)
    size = size or default_chunk_size(sweep, devices, rows=table.shape[0], processes=processes)
    chunks = -(-table.shape[0] // size)
    describe = _fingerprinted(sweep, table, size)
    if start:
        _start(out, describe, force)
    elif force or not (out / "manifest.json").exists():
        return Plan(size, chunks, chunks)
    else:
        _check_manifest(out, describe)
    fingerprint = describe["fingerprint"]
    done = sum(_read_chunk(_chunk_path(out, k), k, fingerprint) is not None for k in range(chunks))
    return Plan(size, chunks, chunks - done)


def _check_manifest(out: Path, describe: dict[str, Any]) -> None:
    """Raise unless `out` holds the manifest of the sweep `describe` (a
    `ValueError` naming what differs)."""
    try:
        old = json.loads((out / "manifest.json").read_text())
    except (OSError, ValueError):
        old = {}
    if old.get("fingerprint") != describe["fingerprint"]:
        raise _another_sweep(out, describe, old)


def _manifest_chunk_size(out: Path) -> int | None:
    try:
        return int(json.loads((out / "manifest.json").read_text())["chunk_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _manifest_fingerprint(out: Path) -> str | None:
    try:
        return str(json.loads((out / "manifest.json").read_text())["fingerprint"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


class _Processes:
    """What the processes of a run tell each other (`jax.experimental.multihost_utils`
    collectives over every device); with one process, nothing is sent.

    Every process makes the same calls in the same order. A failure that one
    process meets (an unwritable chunk, a directory of another sweep) is passed on
    at the next of these calls, so that every process stops with an error, none
    waiting for another that has stopped.
    """

    def __init__(self):
        self.count = jax.process_count()
        self.index = jax.process_index()

    def gather(self, x: np.ndarray) -> np.ndarray:
        """`x` of every process (same shape and dtype everywhere), stacked."""
        if self.count == 1:
            return np.asarray(x)[None]
        return np.asarray(multihost_utils.process_allgather(np.asarray(x)))

    def from_first(self, x: np.ndarray) -> np.ndarray:
        """Process 0's `x`."""
        if self.count == 1:
            return np.asarray(x)
        return np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(x)))

    def check(self, error: BaseException | None, what: str) -> None:
        """Raise `error` here, and an error naming the processes that met one in
        every other process."""
        failed = np.flatnonzero(self.gather(np.asarray(error is not None)))
        if error is not None:
            raise error
        if failed.size:
            raise OSError(
                f"{what}: process(es) {', '.join(map(str, failed))} stopped with an error "
                "(see their messages)"
            )


def run_sweep(
    sweep: Sweep,
    out: str | Path,
    *,
    chunk_size: int | None = None,
    force: bool = False,
    on_chunk: Callable[[Progress], None] | None = None,
    mesh: Mesh | None = None,
    evaluator: Evaluator | None = None,
    worker: tuple[int, int] | None = None,
) -> Path:
    """Evaluate every variant of `sweep`, chunk by chunk, into the directory `out`.

    **Arguments:**

    - `sweep`: the [`Sweep`][redundax.sweep.Sweep].
    - `out`: the output directory (created). If it holds an unfinished run of the
      same sweep, only the missing chunks are computed.
    - `chunk_size`: variants per chunk; default `sweep.chunk_size`, else the chunk
      size of the run being resumed, else [`default_chunk_size`][redundax.sweep.default_chunk_size]
      (of one process's devices).
    - `force`: discard the results of another sweep found in `out`.
    - `on_chunk`: called with a [`Progress`][redundax.sweep.Progress] once per chunk found on disk,
      then after each chunk this process writes. An exception it raises stops the
      sweep; the chunks already written stay. (With several processes, raise it in
      all of them, as Ctrl-C does.)
    - `mesh`: the 1-D device mesh (axis `"variants"`; default
      [`default_mesh`][redundax.sweep.default_mesh]:
      every device of every process).
    - `evaluator`: an [`Evaluator`][redundax.sweep.Evaluator] of this same `sweep` to reuse (its
      compiled code and its mesh), e.g. when one process runs a sweep several times.
    - `worker`: `(i, n)`: this process is worker i of n independent processes
      that share the sweep (`redundax sweep`'s local processes): it computes the
      missing chunks k with k mod n = i and writes them, nothing else: `out` must
      have been prepared ([`plan_sweep`][redundax.sweep.plan_sweep] with `start`; `force` is
      refused) and nothing is combined (run `run_sweep` again once every worker is done).
      Each worker runs the program one process runs, so the files are those of
      one process with the same chunk size.

    **Several processes.** Called by every process of a run that has called
    `jax.distributed.initialize`, with the same arguments and the same `out`, a
    directory that they all share: the missing chunks are divided among the
    processes, each process computes its chunks on its own devices and writes
    them, and process 0 writes the manifest and the combined files. The files are
    those of one process with the same chunk size.

    **Returns:** the combined file `out/sweep.npz` (see [`read_sweep`][redundax.sweep.read_sweep]);
    beside it, `summary.json` lists the variants that differ from the nominal model (a
    worker writes neither).

    **Raises:** as `check_out` (an unwritable `out`; someone else's
    `sweep.npz`, `summary.json` or chunk files in it, unless `force`);
    `ValueError` if `out` holds another sweep (unless `force`), if
    `evaluator` belongs to another sweep, or if the processes of a run were given
    different sweeps or do not share `out`.
    """
    if worker is not None:
        index, count = worker
        if not 0 <= index < count or jax.process_count() > 1 or force:
            raise ValueError(
                f"run_sweep: worker {worker!r} must be (i, n) with 0 <= i < n, in a process "
                "of its own (no jax.distributed run), without force"
            )
    if evaluator is not None:
        if evaluator.sweep is not sweep:
            raise ValueError("run_sweep: the evaluator was built for another Sweep object")
        mesh = evaluator.mesh
    out = Path(out)
    table = np.concatenate([sweep.nominal()[None, :], sweep.table()])  # row 0: nominal
    mesh = default_mesh() if mesh is None else mesh
    size = chunk_size or sweep.chunk_size or _manifest_chunk_size(out)
    size = size or default_chunk_size(
        sweep, local_devices(mesh), rows=table.shape[0], processes=jax.process_count()
    )
    describe = _fingerprinted(sweep, table, size)
    fingerprint = describe["fingerprint"]
    chunks = -(-table.shape[0] // size)
    processes = _Processes()
    writer = processes.index == 0

    digests = processes.gather(np.frombuffer(bytes.fromhex(fingerprint), dtype=np.uint8))
    if np.any(digests != digests[0]):
        raise ValueError(
            f"{out}: the processes of this run were given different sweeps (manifest "
            "fingerprints differ); run the same command, with the same sweep file and "
            "options, in every process, with one output directory that they share"
        )
    # Process 0 alone reads and writes the manifest, finds the missing chunks and
    # tells the others: every process then has the same list, whatever its view of
    # the directory.
    pending = np.zeros(chunks, dtype=bool)
    error: BaseException | None = None
    if writer:
        try:
            if worker is None:
                _start(out, describe, force)
            elif (out / "manifest.json").exists():
                _check_manifest(out, describe)
            else:
                raise ValueError(
                    f"{out}: no manifest of the sweep; a worker needs the directory "
                    "prepared (plan_sweep(..., start=True))"
                )
            pending = np.asarray(
                [_read_chunk(_chunk_path(out, k), k, fingerprint) is None for k in range(chunks)]
            )
        except (ValueError, OSError) as e:
            error = e
    processes.check(error, str(out))
    pending = processes.from_first(pending.astype(np.uint8)) != 0
    if processes.count > 1:
        # Each process writes its own chunks beside process 0's manifest: the
        # directory must be the same one everywhere.
        seen = processes.gather(np.asarray(_manifest_fingerprint(out) == fingerprint))
        unseen = np.flatnonzero(~seen)
        if unseen.size:
            raise ValueError(
                f"{out}: process(es) {', '.join(map(str, unseen))} do not see the manifest "
                "that process 0 wrote there; every process needs the same output directory "
                "(a shared file system)"
            )

    start = time.perf_counter()
    resumed = int(chunks - pending.sum())
    done = 0

    def rows(k: int) -> slice:
        return slice(k * size, min((k + 1) * size, table.shape[0]))

    def variants(k: int) -> int:
        return rows(k).stop - rows(k).start - (1 if k == 0 else 0)  # row 0: nominal

    # Round r computes the missing chunks r P, ..., r P + P - 1, one per process, in
    # one call of the evaluator over the global mesh; a process without a chunk in
    # the last round computes the last chunk's rows again and keeps nothing.
    missing = np.flatnonzero(pending)
    mine = [int(k) for k in missing[processes.index :: processes.count]]
    rounds = -(-missing.size // processes.count)
    if worker is not None:
        mine = [int(k) for k in missing if k % worker[1] == worker[0]]
        rounds = len(mine)
    for k in map(int, np.flatnonzero(~pending)):
        done += variants(k)
        if on_chunk is not None:
            on_chunk(Progress(k, chunks, done, table.shape[0] - 1, 0, resumed, 0.0, len(mine)))
    computed = 0
    for r in range(rounds):
        k = mine[r] if r < len(mine) else int(missing[-1])
        evaluator = evaluator or Evaluator(sweep, mesh)
        x = table[rows(k)]
        # Every chunk is padded to the full chunk size: one compiled shape. The
        # padding, and the whole stand-in chunk, is not evaluated where the
        # variants run one after another (on CPUs).
        count = x.shape[0] if r < len(mine) else 0
        x = np.concatenate([x, np.repeat(x[-1:], size - x.shape[0], 0)])
        results = evaluator(x, count)
        if r >= len(mine) or error is not None:
            continue
        results.update(chunk=np.asarray(k), start=np.asarray(rows(k).start))
        results["fingerprint"] = np.asarray(fingerprint)
        try:
            with atomic_write(_chunk_path(out, k), True) as file:
                _write_npz(file, results)
        except OSError as e:
            error = e  # the other processes are told after the last round
            continue
        computed += 1
        done += variants(k)
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
                    len(mine) - computed,
                )
            )
    processes.check(error, str(out))
    if writer and worker is None:
        try:
            _combine(sweep, out, table, describe, chunks)
        except (ValueError, OSError) as e:
            error = e
    processes.check(error, str(out))
    return out / "sweep.npz"


def _changes(sweep: Sweep, nominal: Mapping[str, Any], data: Mapping[str, np.ndarray]):
    """Per-variant masks of what differs from the nominal model (`nominal`: its
    row of each output, NumPy scalars for the per-variant scalars)."""
    n = data["consistent"].shape[0]
    # A variant's parts made with deviations do not fit the nominal configuration:
    # that is what an assembly-stress sweep measures, not a defect of the variant.
    masks = {"inconsistent": ~data["consistent"]} if sweep.analyze or sweep.simulate else {}
    if sweep.analyze:
        masks["rank"] = data["rank"] != nominal["rank"]
        masks["uniqueness"] = np.any(data["unique"] != nominal["unique"][None, :], axis=1)
    if sweep.simulate:
        # The validity criterion of `simulate` (redundax._validity), per variant: the
        # rank of C is not part of it (off the manifold a geometrically redundant
        # mechanism's C is full rank; on it the rank cannot rise above its start).
        masks["off_constraints"] = data["left_constraints"]
        masks["failed"] = ~data["success"] & ~data["left_constraints"]
        masks["inaccurate_path"] = ~data["path_accurate"]
        masks["singular_along"] = data["rank_min"] < data["rank_start"]
    masks["any"] = (
        np.any(np.stack(list(masks.values())), axis=0).reshape(n) if masks else np.zeros(n, bool)
    )
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
    with atomic_write(out / "sweep.npz", True) as file:
        _write_npz(file, arrays)
    summary = _summary(sweep, describe, nominal, data, masks)
    with atomic_write(out / "summary.json", True, text=True) as file:
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
            left_constraints=bool(nominal["left_constraints"]),
            max_constraint_violation=float(nominal["max_constraint_violation"]),
            # From the start rank and the run's singularity log: always a number.
            rank_min=int(nominal["rank_min"]),
        )
        ok = data["success"]
        summary["max_constraint_violation"] = (
            {"max": float(np.max(violation[ok])), "median": float(np.median(violation[ok]))}
            if np.any(ok)
            else None
        )
    if sweep.stresses is not None:
        summary["assembly"] = {
            pair.name: {
                kind: _percentiles(data[f"assembly_{kind}"][:, g])
                for kind, rows in zip(("force", "moment"), pair.split_rows(), strict=True)
                if rows
            }
            for g, pair in enumerate(sweep.model.pairs)
        }
    return summary


def _percentiles(values: np.ndarray) -> dict[str, float]:
    """`ASSEMBLY_PERCENTILES` and the maximum of per-variant values (0 without any)."""
    if values.size == 0:
        return {**{f"p{p:g}": 0.0 for p in ASSEMBLY_PERCENTILES}, "max": 0.0}
    return {
        **{f"p{p:g}": float(np.percentile(values, p)) for p in ASSEMBLY_PERCENTILES},
        "max": float(np.max(values)),
    }


def read_sweep(path: str | Path) -> dict[str, Any]:
    """The arrays of a combined sweep file (`OUT/sweep.npz`), with `meta` parsed.

    Per-variant arrays under their `OUTPUTS` names (first axis: variants), the
    nominal model's under `nominal/<name>`, the masks of [`run_sweep`][redundax.sweep.run_sweep]'s
    summary under `changed/<reason>`, and `values` (variants, parameters),
    `nominal_values`, `parameter_names`, `parameter_units`, `pair_names`,
    `marker_names`.
    """
    with np.load(path, allow_pickle=False) as npz:
        data: dict[str, Any] = {name: npz[name] for name in npz.files}
    data["meta"] = json.loads(str(data["meta"]))
    if data["meta"].get("format") != FORMAT:
        raise ValueError(f"{path}: not a redundax sweep ({FORMAT!r})")
    return data
