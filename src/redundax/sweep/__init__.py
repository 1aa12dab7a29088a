"""Parameter sweeps: solvability and simulation of thousands of variants of a mechanism.

A sweep changes a few named parameters of a mechanism (a body's mass, a joint point
coordinate, the amplitude of a prescribed motion, the initial speed, ...) over a grid
or a seeded random sample (uniform in a range, among values, or normal), and
evaluates every variant: the solvability analysis at its initial configuration
(rank, degree of redundancy, per-pair uniqueness), a simulation (success, final
tracked points, largest constraint violation, the rank of C along the motion),
and/or its assembly stress against the nominal mechanism
([`AssemblyStresses`][redundax.sweep.AssemblyStresses]: the Monte Carlo of a
tolerance study, [`redundax.statics.tolerance_sweep`][]). The result says which
variants differ from the nominal model.

A variant's simulation is `redundax.simulate` with the mechanism's `[simulation]`
options (the drift control too: a projection after every step by default), and the
rank of C along its motion (`rank_min`, `rank_max`, `sigma_ratio_min`) is the one
the run's singularity monitor records at every integrator step end
(`Trajectory.singularities`), not a decomposition of C at the saved states.

**Parameter addresses.** A parameter is one number, named by an address that the
model itself enumerates ([`parameter_targets`][redundax.sweep.parameter_targets];
`redundax sweep FILE
--list-parameters`), so a name is looked up, never parsed:

- `bodies.<BODY>.mass` [kg], `bodies.<BODY>.inertia` [kg m², planar]: the body's entry
  of `model.bodies.mass`, `.inertia`;
- `pairs.<PAIR>.<FIELD>.<x|y|z>` for the fields `point_i`, `point_j`, `point` [m],
  `normal`, `direction` [1], and `pairs.<PAIR>.angle` [rad]: the pair's member of its
  stacked constraint group; `normal` and `direction` are renormalised after a
  component is set, as the loader does;
- `pairs.<PAIR>.axis_i.<x|y|z>`, `axis_j` [1] of a spatial revolute, prismatic or
  cylindrical pair (or driver): the joint axis e₀ as carried by body i (j), body-frame
  components; the joint frame is made orthonormal again after a component is set
  (e₀ normalised, e₁ by Gram–Schmidt, e₂ = e₀ × e₁);
- `markers.<NAME>.point.<x|y|z>` [m]: a tracked point's body-frame coordinate;
- `pairs.<PAIR>.motion.amplitude` [m or rad] of a smooth-step motion: every knot
  value v_k ← v_0 + (A / A₀)(v_k − v_0), A₀ the nominal largest |v_k − v_0|;
  `.motion.values[k]`, `.motion.value`, `.motion.coefficients[k]`: one knot value, a
  constant's value, a polynomial's coefficient;
- `gravity.<x|y|z>` [m/s²]; `loads[k].force.<x|y|z>` [N], `loads[k].point.<x|y|z>` [m],
  `loads[k].torque[.<x|y|z>]` [N m];
- `initial.velocity_scale` [1]: q̇⁰ multiplied by the value; `initial.speed` [m/s]: q̇⁰
  scaled so that the first body's centre of mass moves at this speed.

Each is mapped once to a `Target` (a leaf, an index into it and a rule) and
applied with `eqx.tree_at` ([`apply_parameters`][redundax.sweep.apply_parameters]), a pure function
that `jax.vmap` batches. A variant whose geometry no longer fits the nominal initial
configuration is flagged (`consistent = False`) unless the sweep projects the
initial state onto its constraints first (`initial = "project"`).

**Evaluation.** The variants are evaluated `chunk_size` at a time, inside
`jax.shard_map` over a 1-D mesh of every device ([`default_mesh`][redundax.sweep.default_mesh]:
`jax.sharding.Mesh` of `jax.devices()` ordered process by process, `NamedSharding`
with `PartitionSpec("variants")`), each chunk padded to a multiple of one process's
device count. With `shard_map` every device evaluates its own part of the chunk,
with no communication between devices (a sharded `jit` would synchronise the
devices at every step, and leave the partitioning of the linear algebra's custom
calls to the compiler). On a CPU a device evaluates its variants one after another
(`jax.lax.map`; [`Evaluator`][redundax.sweep.Evaluator]'s `batch` = 1): each variant runs the
program that `redundax.simulate` runs for it alone, so the nominal row is `simulate`'s run to
the last bit (tested), a variant takes only its own steps, and rows of padding are
skipped; a vmapped batch gains nothing there that pays for its lockstep (the
robot's 1 s run: 29 against 45 ms a variant; measured, `Evaluator`). On
accelerators a device vmaps its whole share. One chunk shape is compiled once per
sweep. On a CPU, N devices made with `--xla_force_host_platform_device_count=N`
need more than N cores: jax 0.10's batched LAPACK kernels (eigh, svd) wait for
subtasks on the thread pool that runs the devices' programs, and deadlock when all
of its threads run one (seen on 2 cores with 2 devices from 6 variants per device;
[`Evaluator`][redundax.sweep.Evaluator] warns); one process per core (below) has no such limit.

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

**Several processes.** One sweep can run in several processes (one per host, or
several on one machine) with JAX's multi-controller runtime (below). On one machine
without accelerators, `redundax sweep` uses every core without it: it prepares
`OUT` ([`plan_sweep`][redundax.sweep.plan_sweep] with `start`: the manifest), starts
`k = min(cores, chunks
to compute)` local worker processes (`--processes N` chooses k; 1: the command's
own process alone), each `redundax sweep ... --worker i/k` with one CPU device and
one OpenBLAS thread, which computes the missing chunks k' with k' mod k = i
(`run_sweep(..., worker=(i, k))`) with the program one process runs, waits for
them (passing Ctrl-C and SIGTERM on), then combines the chunks and prints the
summary. By default there are no more workers than default chunks of one CPU
device (64 simulations, 1024 analyses): each loads or compiles the sweep's program
itself. The default chunk size is then no more than each worker's share of the
variants, so that every worker gets work. Independent processes rather than a
`jax.distributed` run of k processes: on a CPU, JAX's persistent compilation cache
keys a program by the topology as each process sees it, and only process 0 writes
the cache, so every other process compiled the sweep's program again on every run
(64 Bricard variants: 23 s warm on two processes against 11 s on one, load ~2);
and a program compiled for a mesh of two processes may round differently from the
one-process program (it did in the last bits of round-off-sized coordinates at
`--xla_backend_optimization_level=0` with the older fusion emitters), while
workers that run the one-process program write the one-process files whatever
the XLA flags. A `jax.distributed` run, started by hand (one process per host of
a cluster): each process calls
`jax.distributed.initialize(coordinator, num_processes, process_id)` before JAX's
first computation (`redundax sweep ... --num-processes N --process-id K --coordinator
HOST:PORT` does), then [`run_sweep`][redundax.sweep.run_sweep] with the same arguments and
the same `OUT`, a directory every process sees. The mesh then spans the devices of every process
(process by process), and each evaluation is one program over that global mesh:
process p feeds its own chunk into its block of the mesh
(`jax.make_array_from_process_local_data`) and reads its results back from its
addressable shards, so a round of the loop computes one chunk per process, with
no communication between processes. The chunks missing at the start are dealt out
round robin (process p computes missing chunks p, p + N, ...; a process without a
chunk in the last round computes a stand-in and keeps nothing), and each process
writes its own chunk files, as soon as each is done, with the same atomic write.
Process 0 alone reads and writes the manifest and decides which chunks are
missing, and tells the others (`multihost_utils` collectives); after the last
round it combines the chunks. Resuming is therefore per chunk, whatever process
wrote a chunk and with however many processes the sweep is resumed (the manifest
does not record them). The processes check at the start that they run the same
sweep (the fingerprints) and that they see process 0's manifest (a shared
directory), and a failure of one process (an unwritable chunk, another sweep in
`OUT`) is passed on at the next collective, so that every process stops with an
error instead of waiting for one that has stopped; a process that dies is JAX's
to notice (the coordination service's heartbeat ends the others).

Why chunks per process rather than each chunk split over every process and
gathered to process 0: a chunk file is written by the process that computed it,
with no results sent between hosts; the hosts need not run in step within a chunk;
and a chunk computed by one process on its L devices is exactly the chunk one
process with L devices computes, so the combined files are byte-identical to a
one-process run with the same chunk size (tested with two local CPU processes and
XLA's default code generation; at `--xla_backend_optimization_level=0` with the
older fusion emitters the program compiled for two processes rounds round-off-sized
coordinates differently in their last bits). The default chunk size is a multiple
of one process's device count for the same reason. The results depend on the
chunk size (the manifest records it; on a CPU a variant's numbers do not, as each
runs alone), not on the number of processes.

**Layout.** `redundax._parameters` (parameter addresses → `Target`,
`apply_parameters`; shared with `redundax.optimize`), `_file` (samples, `Sweep`, the
sweep file), `_evaluate` (`Evaluator`: a chunk under shard_map, one variant after
another or vmapped; the mesh), `_store` (chunk files, resuming, the processes'
agreement, `run_sweep` and its workers, `plan_sweep`, `read_sweep`); the command
`redundax sweep` (its local worker processes, and its joining of a run of several
processes) is `redundax.cli.sweep`.
"""

from .._parameters import (
    Rule as Rule,
    Target as Target,
    apply_parameters as apply_parameters,
    parameter_targets as parameter_targets,
    resolve_parameters as resolve_parameters,
    unknown_parameter as unknown_parameter,
)
from ._constants import (
    ASSEMBLY_PERCENTILES as ASSEMBLY_PERCENTILES,
    AXIS as AXIS,
    FORMAT as FORMAT,
    MAX_VARIANTS as MAX_VARIANTS,
    PROJECTION_STEPS as PROJECTION_STEPS,
)
from ._evaluate import (
    OUTPUTS as OUTPUTS,
    Evaluator as Evaluator,
    _violation as _violation,
    default_chunk_size as default_chunk_size,
    default_mesh as default_mesh,
)
from ._file import (
    AssemblyStresses as AssemblyStresses,
    Grid as Grid,
    Parameter as Parameter,
    RandomSample as RandomSample,
    Sweep as Sweep,
    load_sweep as load_sweep,
    sweep_mechanism as sweep_mechanism,
    sweep_problems as sweep_problems,
)
from ._store import (
    Plan as Plan,
    Progress as Progress,
    plan_sweep as plan_sweep,
    read_sweep as read_sweep,
    run_sweep as run_sweep,
)

__all__ = [
    "load_sweep",
    "Sweep",
    "Parameter",
    "Grid",
    "RandomSample",
    "AssemblyStresses",
    "Rule",
    "Plan",
    "plan_sweep",
    "run_sweep",
    "read_sweep",
    "Progress",
    "Evaluator",
    "apply_parameters",
    "parameter_targets",
    "default_chunk_size",
    "default_mesh",
    "sweep_mechanism",
    "sweep_problems",
]
