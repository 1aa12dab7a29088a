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

**Layout.** `redundax._parameters` (parameter addresses → `Target`,
`apply_parameters`; shared with `redundax.optimize`), `_file` (samples, `Sweep`, the
sweep file), `_evaluate` (`Evaluator`: a chunk under vmap and shard_map), `_store`
(chunk files, resuming, `run_sweep`, `read_sweep`); the command `redundax sweep` is
`redundax.cli.sweep`.
"""

from typing import Any

from .._parameters import (
    Rule as Rule,
    Target as Target,
    apply_parameters as apply_parameters,
    parameter_targets as parameter_targets,
    resolve_parameters as resolve_parameters,
    unknown_parameter as unknown_parameter,
)
from ._constants import (
    AXIS as AXIS,
    FORMAT as FORMAT,
    PROJECTION_STEPS as PROJECTION_STEPS,
    SINGULAR_RTOL as SINGULAR_RTOL,
)
from ._evaluate import (
    OUTPUTS as OUTPUTS,
    Evaluator as Evaluator,
    _violation as _violation,
    default_chunk_size as default_chunk_size,
)
from ._file import (
    Grid as Grid,
    Parameter as Parameter,
    RandomSample as RandomSample,
    Sweep as Sweep,
    load_sweep as load_sweep,
    sweep_mechanism as sweep_mechanism,
    sweep_problems as sweep_problems,
)
from ._store import Progress as Progress, read_sweep as read_sweep, run_sweep as run_sweep

_COMMAND_LINE = ("DESCRIPTION", "SUMMARY", "add_arguments", "add_parser", "run")


def __getattr__(name: str) -> Any:
    # The `redundax sweep` command lives in `redundax.cli.sweep`; its names stay
    # importable from here, imported on first use.
    if name in _COMMAND_LINE:
        from ..cli import sweep as command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
