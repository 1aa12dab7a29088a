"""Evaluating a chunk of variants: vmap inside shard_map over the devices of every process.

Part of [`redundax.sweep`][], whose docstring describes the whole.
"""

import dataclasses
import os
import warnings
from collections.abc import Sequence
from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Float

from .._model import Model, State
from .._options import CheckInitial, Singularities
from .._parameters import apply_parameters
from .._reactions import MEMORY_BUDGET
from .._run import simulate
from .._solvability import analyze_solvability
from .._structure import decide
from ..drift import Projection
from ..equations import marker_positions, position_residual, velocity_residual
from ..methods import path_accurate, specialise
from ..motions import SmoothSteps
from ..statics._assembly_stress import checked, self_stress_basis, stress_along
from ._constants import AXIS, PROJECTION_STEPS
from ._file import Sweep


# --------------------------------------------------------------------- evaluation
def _max_abs(x) -> Any:
    return jnp.max(jnp.abs(x), initial=0.0)


def _violation(model: Model, q, qd, t) -> Any:
    return jnp.maximum(
        _max_abs(position_residual(model, q, t)), _max_abs(velocity_residual(model, q, qd, t))
    )


def _knots(model: Model) -> dict[int, Any]:
    """The knot times of the nominal model's smooth-step drivers, as concrete arrays."""
    return {
        g: jnp.asarray(np.asarray(group.motion.times))
        for g, group in enumerate(model.holonomic)
        if "motion" in {f.name for f in dataclasses.fields(group)}
        and isinstance(group.motion, SmoothSteps)
    }


def _rank_along(structure, log) -> dict[str, Any]:
    """`rank_start`, `rank_min`, `rank_max`, `sigma_ratio_min` of one run from its
    [`SingularityLog`][redundax.monitors.SingularityLog] (the monitor `simulate` runs after
    every integrator step): no decomposition at the saved states.

    The start rank is the structure's; the run's rank is logged at every step end
    where it changes (`rank_value[:rank_changes]`, up to the log's capacity; `rank`
    is the last). Where the monitor measured nothing (no constraints), the rank is
    the start rank throughout and `sigma_ratio_min` is NaN, as where the run took
    no step."""
    start = jnp.asarray(structure.rank)
    if log is None:
        nan = jnp.asarray(jnp.nan)
        return dict(rank_start=start, rank_min=start, rank_max=start, sigma_ratio_min=nan)
    logged = jnp.arange(log.rank_value.shape[0]) < log.rank_changes
    ends = jnp.stack([start, log.rank.astype(start.dtype)])
    values = jnp.concatenate([ends, log.rank_value.astype(start.dtype)])
    seen = jnp.concatenate([jnp.ones(2, bool), logged])
    low, high = jnp.iinfo(values.dtype).max, jnp.iinfo(values.dtype).min
    return dict(
        rank_start=start,
        rank_min=jnp.min(jnp.where(seen, values, low)),
        rank_max=jnp.max(jnp.where(seen, values, high)),
        sigma_ratio_min=jnp.where(jnp.isfinite(log.min_ratio), log.min_ratio, jnp.nan),
    )


def default_mesh() -> Mesh:
    """The 1-D mesh (axis `AXIS`) of every device of every process, process by
    process: `jax.devices()` of one process, or of a run of several processes that
    called `jax.distributed.initialize`."""
    devices = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    return Mesh(np.asarray(devices), (AXIS,))


def local_devices(mesh: Mesh) -> list[Any]:
    """The devices of `mesh` that belong to this process, in mesh order.

    **Raises:** `ValueError` unless `mesh` is 1-D and holds the same number of
    devices of every process, process by process (the layout of
    [`default_mesh`][redundax.sweep.default_mesh]):
    each process then owns one contiguous block of every batch.
    """
    devices = list(mesh.devices.flat)
    owners = [d.process_index for d in devices]
    count = jax.process_count()
    blocks = [p for p in range(count) for _ in range(len(devices) // count)]
    if mesh.devices.ndim != 1 or owners != blocks:
        raise ValueError(
            f"sweep mesh: expected a 1-D mesh holding as many devices of each of the "
            f"{count} process(es), process by process (its devices belong to processes "
            f"{owners}); use redundax.sweep.default_mesh()"
        )
    return [d for d in devices if d.process_index == jax.process_index()]


def _local_rows(array: jax.Array) -> np.ndarray:
    """This process's rows of an array sharded along its first axis, in order."""
    shards = sorted(array.addressable_shards, key=lambda shard: shard.index[0].start or 0)
    return np.concatenate([np.asarray(shard.data) for shard in shards])


class Evaluator:
    """The compiled evaluation of batches of variants of one [`Sweep`][redundax.sweep.Sweep].

    Built once per sweep; every call with the same number of variants reuses one
    compilation. `evaluator(values)` returns a dict of NumPy arrays with one row
    per row of `values` (see `OUTPUTS`).

    `batch`: how many variants one device evaluates together under `jax.vmap`.
    1 runs them one after another (`jax.lax.map`): each variant is then the
    program `redundax.simulate` runs for it alone (the same steps and results to
    the last bit, whatever else is in the chunk) and takes only its own steps;
    n > 1 vmaps groups of n, whose variants step together, as many steps as the
    slowest of the group takes. Default: 1 on CPUs, where a vmapped batch gains
    nothing that pays for its lockstep (measured on one core: the mobile robot's
    1 s run 29 ms a variant one after another against 45 ms in a vmapped batch of
    32, Bricard's 10 s run 58 against 62 ms); on accelerators the device's whole
    share of the chunk.

    In a run of several processes (`jax.distributed.initialize`), the mesh spans
    the devices of all of them, and every process calls the evaluator together
    with as many rows of its own: each gets the results of its rows, computed on
    its own devices (one program over the global mesh, with no communication).
    """

    def __init__(self, sweep: Sweep, mesh: Mesh | None = None, batch: int | None = None):
        self.sweep = sweep
        self.mesh = default_mesh() if mesh is None else mesh
        self.devices = int(self.mesh.devices.size)
        self.local_devices = len(local_devices(self.mesh))
        platform = self.mesh.devices.flat[0].platform
        if batch is not None and (isinstance(batch, bool) or not int(batch) >= 1):
            raise ValueError(f"Evaluator field 'batch': expected an integer >= 1, got {batch!r}")
        # Variants one device evaluates together (None: its whole share of a chunk).
        self.batch = (1 if platform == "cpu" else None) if batch is None else int(batch)
        cores = os.cpu_count() or 1
        if self.local_devices > 1 and platform == "cpu" and self.local_devices >= cores:
            warnings.warn(
                f"{self.local_devices} CPU devices on {cores} cores: jaxlib's batched LAPACK "
                "kernels (eigh, svd, ...) wait for work on the thread pool that runs the "
                "devices' programs, and a sweep can deadlock when every thread of it runs "
                "one (seen with jax 0.10 and chunks of 6 or more variants per device); use "
                "fewer devices than cores (--xla_force_host_platform_device_count), or "
                "one process per core (redundax sweep --processes)",
                RuntimeWarning,
                stacklevel=2,
            )
        targets = sweep.targets
        options = sweep.simulation
        # Knot times stay concrete (closed over, not traced) so that `simulate`
        # passes them to the step-size controller as `step_ts`, as it does for a
        # single concrete model: the steps land on the knots instead of being
        # rejected across them (half the steps for the mobile robot). They are not
        # sweepable parameters.
        knots = _knots(sweep.model)
        # The null-space method's path (Schur complement or pivoted QR) is chosen on
        # the nominal mechanism, once, so that every variant takes the same one
        # (`path_accurate` says where it does not suit a variant): a per-variant
        # choice would compile both, and evaluate both under vmap.
        nominal = decide(sweep.model, sweep.state.q, sweep.state.t)
        method = specialise(options.method, nominal, sweep.model)
        dynamic, static = eqx.partition((sweep.model, sweep.state, method), eqx.is_array)
        # Every process holds the same nominal model: a replicated global array
        # made from each one's own copy, with no communication (`device_put` to a
        # sharding over several processes checks that every process passed the
        # same value, a collective per leaf: 8 s of a Bricard sweep on 2 processes).
        replicated = NamedSharding(self.mesh, PartitionSpec())

        def put(a):
            a = np.asarray(a)
            return jax.make_array_from_process_local_data(replicated, a, a.shape)

        self._dynamic = jax.tree.map(put, dynamic)
        stresses = sweep.stresses
        if stresses is not None:
            # Where the nominal mechanism is assembled, and its verdicts there: the
            # same for every variant (concrete, closed over).
            assembled = np.asarray(sweep.state.q if stresses.q is None else stresses.q, float)
            assembled_structure = decide(sweep.model, assembled, sweep.state.t)
            compliance, rank = checked(
                sweep.model, assembled, np.asarray(stresses.stiffness, float), assembled_structure
            )
            split = [p.split_rows() for p in sweep.model.pairs]

        def variant(model: Model, state: State, method, x, basis) -> dict[str, Any]:
            nominal = model
            model, state = apply_parameters(model, state, targets, x)
            for g, times in knots.items():
                model = eqx.tree_at(lambda m, g=g: m.holonomic[g].motion.times, model, times)
            t, q, qd = state.t, state.q, state.qd
            out = {"initial_violation": _violation(model, q, qd, t)}
            if sweep.project_initial:
                q, qd = Projection(iterations=PROJECTION_STEPS)(model, q, qd, t)
            out["consistent"] = _violation(model, q, qd, t) <= sweep.consistency_tolerance
            if sweep.analyze:
                report = analyze_solvability(model, q, t)
                out.update(
                    rank=report.rank,
                    rank_holonomic=report.rank_holonomic,
                    rank_pfaffian=report.rank_pfaffian,
                    redundancy=report.redundancy,
                    dof=report.dof,
                    unique=report.unique,
                    multipliers_unique=report.multipliers_unique,
                    b_norm=report.b_norm,
                    row_unique=report.row_unique,
                )
            if sweep.simulate:
                structure = decide(model, q, t)
                # The paths were fixed on the nominal mechanism: are they right here?
                out["path_accurate"] = path_accurate(method, structure, model)
                trajectory = simulate(
                    model,
                    State(t, q, qd),
                    options.t_final,
                    **options.keywords(
                        structure=structure,
                        method=method,
                        initial=CheckInitial(),  # projected above, if asked for
                        throw=False,
                        # The rank along the motion is the run's own record (its
                        # measure: simulate's default for the method).
                        monitor=Singularities(),
                    ),
                )
                # A failed integration leaves non-finite saved states after the
                # failure: everything below is taken over the states reached.
                reached = jnp.all(jnp.isfinite(trajectory.q), axis=1) & jnp.all(
                    jnp.isfinite(trajectory.qd), axis=1
                )
                last = jnp.max(jnp.where(reached, jnp.arange(reached.shape[0]), 0))
                position = jnp.max(jnp.where(reached, trajectory.position_violation, 0.0))
                velocity = jnp.max(jnp.where(reached, trajectory.velocity_violation, 0.0))
                out.update(
                    success=(trajectory.result == diffrax.RESULTS.successful) & jnp.all(reached),
                    left_constraints=trajectory.left_constraints,
                    left_at=jnp.where(trajectory.left_constraints, trajectory.left_at, jnp.nan),
                    steps=trajectory.num_steps,
                    time_reached=trajectory.ts[last],
                    final_q=trajectory.q[last],
                    final_qd=trajectory.qd[last],
                    final_markers=marker_positions(model, trajectory.q[last]),
                    max_constraint_violation=jnp.maximum(position, velocity),
                    max_position_violation=position,
                    max_velocity_violation=velocity,
                    **_rank_along(structure, trajectory.singularities),
                )
            if stresses is not None:
                lam = stress_along(
                    basis, nominal, model, assembled, sweep.state.t, compliance,
                    assembled_structure.stable_row_unique,
                ).multipliers  # fmt: skip
                out.update(
                    assembly_multipliers=lam,
                    assembly_force=jnp.stack([_max_abs(lam[np.asarray(f, int)]) for f, _ in split]),
                    assembly_moment=jnp.stack(
                        [_max_abs(lam[np.asarray(m, int)]) for _, m in split]
                    ),
                )
            return out

        batch = self.batch

        def shard(dynamic, values, valid):
            model, state, method = eqx.combine(dynamic, static)
            # The nominal mechanism's self-stresses, once per chunk (the same for every
            # variant; inside `lax.map` XLA would compute them again per variant).
            basis = (
                None
                if stresses is None
                else self_stress_basis(model, assembled, sweep.state.t, rank)
            )

            def one(x):
                return variant(model, state, method, x, basis)

            if batch is None:
                return jax.vmap(one)(values)
            if batch > 1:
                return jax.lax.map(one, values, batch_size=batch)
            # One after another: a row of padding is not evaluated (zeros).
            shapes = jax.eval_shape(one, values[0])
            blank = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

            def step(row):
                x, ok = row
                return jax.lax.cond(ok, one, lambda x: blank, x)

            return jax.lax.map(step, (values, valid))

        sharded = jax.shard_map(
            shard,
            mesh=self.mesh,
            in_specs=(PartitionSpec(), PartitionSpec(AXIS), PartitionSpec(AXIS)),
            out_specs=PartitionSpec(AXIS),
            check_vma=False,
        )
        self._call = eqx.filter_jit(sharded)

    def __call__(
        self, values: Float[np.ndarray, "batch p"], count: int | None = None
    ) -> dict[str, np.ndarray]:
        """The outputs of the first `count` rows of `values` (default: all). The
        rows after them only give the call its shape (a chunk padded to the
        compiled size): evaluated one after another (`batch` 1), they are skipped."""
        values = np.asarray(values, dtype=float)
        n = values.shape[0]
        count = n if count is None else int(count)
        if not 0 <= count <= n:
            raise ValueError(f"Evaluator: count must lie in 0 ... {n}, got {count}")
        padded = -(-n // self.local_devices) * self.local_devices
        x = np.concatenate([values, np.repeat(values[-1:], padded - n, axis=0)])
        valid = np.arange(padded) < count
        sharding = NamedSharding(self.mesh, PartitionSpec(AXIS))
        processes = self.devices // self.local_devices

        def global_array(local):
            return jax.make_array_from_process_local_data(
                sharding, local, (processes * padded, *local.shape[1:])
            )

        out = self._call(self._dynamic, global_array(x), global_array(valid))
        return {key: _local_rows(value)[:count] for key, value in out.items()}


OUTPUTS = {
    "initial_violation": "max |Φ|, |C q̇ + b| of the variant's initial state as built [m, m/s]",
    "consistent": 'the state analysed and simulated (projected with initial = "project") '
    "satisfies the constraints to consistency_tolerance",
    "rank": "rank C at the initial configuration",
    "rank_holonomic": "rank Φ_q",
    "rank_pfaffian": "rank Ψ",
    "redundancy": "degree of redundancy p = rows − rank",
    "dof": "mobility n − rank",
    "unique": "(variants, pairs): whether each pair's reaction is unique",
    "multipliers_unique": "(variants, pairs): whether each pair's multipliers are unique",
    "b_norm": "(variants, pairs): ‖B_X‖_F of the QR test",
    "row_unique": "(variants, rows): whether each reaction component is unique",
    "path_accurate": "the solver's paths, fixed on the nominal mechanism (Schur complement or "
    "QR, block solver and its pivot metric), are accurate for this variant "
    "(`redundax.methods.path_accurate`): false where, e.g., a swept inertia makes C M⁻¹ Cᵀ "
    "ill conditioned for the Schur path",
    "success": "the integration reached t_final with finite q, q̇ at every saved state "
    "and every saved state on its constraints",
    "left_constraints": "the motion left its constraints (the validity criterion of "
    "`redundax.simulate`: max |Φ| above what the drift control promises at a step end or "
    "a saved state): the variant cannot follow the prescribed motion, e.g. driven past "
    "the end of a joint's travel; the integration stopped there",
    "left_at": "the time the motion left its constraints [s] (NaN where it did not)",
    "steps": "integrator steps",
    "time_reached": "the last saved time with a finite state (t_final on success) [s]",
    "final_q": "(variants, nq): q at time_reached",
    "final_qd": "(variants, nq): q̇ at time_reached",
    "final_markers": "(variants, markers, dim): the tracked points at time_reached [m]",
    "max_constraint_violation": "max over the saved states reached of max |Φ| and max |C q̇ + b|",
    "max_position_violation": "max |Φ| over the saved states reached [m, rad]",
    "max_velocity_violation": "max |C q̇ + b| over the saved states reached",
    "assembly_multipliers": "(variants, rows): the first-order assembly stress λ_s of the "
    "variant's deviations from the nominal mechanism, assembled at the nominal configuration "
    "(`redundax.statics.assembly_stress`; the reaction components change by −λ_s) [N, N m]",
    "assembly_force": "(variants, pairs): the largest |λ_s| of a pair's force components [N]",
    "assembly_moment": "(variants, pairs): the largest |λ_s| of a pair's moment components "
    "[N m] (0 for a pair without any)",
    "rank_start": "rank C at the variant's initial state (its `Structure`, relative tolerance "
    "1e-8)",
    "rank_min": "min of rank C over the start and the integrator's step ends, as the run's "
    "singularity monitor (`Trajectory.singularities`) counts it (relative tolerance 1e-8; "
    "for the pivot sines, the rows the block elimination keeps); it logs every change "
    "between two step ends (the first 128 of a run, and the last rank)",
    "rank_max": "max of rank C over the start and the integrator's step ends (as rank_min)",
    "sigma_ratio_min": "min over the integrator's step ends of the monitor's measure of how "
    "far C is from losing rank: σ_r / σ_1 (r = rank_start) by a singular value decomposition "
    "per step, or for a method that uses the block solver the r-th largest pivot sine "
    "(`simulate`'s default, `SingularityLog.measure`); passages between step ends refined; "
    "near 0: the motion passes close to a singular configuration (NaN where the run took no "
    "step or has no constraints)",
}
"""Per-variant results (the analysis ones with `analyze`, the `assembly_*` ones with
`stresses`, the others with `simulate`)."""


def default_chunk_size(
    sweep: Sweep,
    devices: Sequence[Any] | None = None,
    *,
    rows: int | None = None,
    processes: int = 1,
) -> int:
    """Variants per chunk when none is given: a multiple of the device count
    (`devices`: one process's, default `jax.local_devices()`; a chunk is one
    process's batch).

    On CPUs, 64 simulations (1024 analyses) per device: larger batches gain
    little there, and a chunk of that size takes seconds to minutes, which bounds
    the work an interruption loses; fewer simulations when that many would not fit
    in `MEMORY_BUDGET` (1 GiB) by the estimate below. On accelerators, a quarter of
    the device's memory divided by a generous estimate of one variant's working set
    (its saved states and the solver's intermediates), between 256 and 16384 per
    device.

    Given the sweep's `rows` (its variants and the nominal one) and the number of
    `processes` that share them, no more than each process's share (rounded up to
    the device count): every process gets work (513 rows on 2 processes of one
    device: 64; 65 rows: 33 each, not 64 and 1).
    """
    size = _per_device_chunk(sweep, devices)
    if rows is None:
        return size
    devices = len(list(jax.local_devices()) if devices is None else list(devices))
    share = -(-int(rows) // max(int(processes), 1))
    return max(devices, min(size, -(-share // devices) * devices))


def _per_device_chunk(sweep: Sweep, devices: Sequence[Any] | None) -> int:
    """[`default_chunk_size`][redundax.sweep.default_chunk_size] before it is bounded by the sweep's
    size."""
    devices = list(jax.local_devices()) if devices is None else list(devices)
    model = sweep.model
    nq, nc, saved = model.n_coordinates, model.n_constraints, sweep.simulation.n_save
    per_variant = 8 * (saved * 4 * nq + 64 * (nc * nq + nq * nq + nc * nc))
    if devices[0].platform == "cpu":
        if not sweep.simulate:
            return 1024 * len(devices)
        # Within the memory budget of the reactions (1 GiB per device): IFToMM A02
        # with 40 loops and 401 saved states takes ~0.09 GB a variant, so 11, not 64.
        return max(1, min(64, MEMORY_BUDGET // per_variant)) * len(devices)
    stats = devices[0].memory_stats() or {}
    limit = stats.get("bytes_limit")
    per_device = 16384 if limit is None else int(limit) // 4 // per_variant
    return min(max(per_device, 256), 16384) * len(devices)
