"""Running a sweep chunk by chunk: files, resuming, the combined results and summary.

Part of [`redundax.sweep`][], whose docstring describes the whole.
"""

import dataclasses
import hashlib
import json
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh

from .. import (
    __version__,
)
from ..io._atomic import atomic_write
from ._constants import AXIS, FORMAT
from ._evaluate import Evaluator, default_chunk_size
from ._file import Sweep


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
        with atomic_write(manifest, True, text=True) as file:
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
                with atomic_write(_chunk_path(out, k), True) as file:
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
