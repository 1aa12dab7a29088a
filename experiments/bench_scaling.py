"""How the cost of one right-hand side grows with the number of bodies: the block-sparse
solver (`rx.methods.BlockSparse`, Kraus et al. 2001 §6) against the dense null-space paths.

Two families of spatial mechanisms in natural coordinates (12 coordinates and 6
rigid-body rows per body):

- `a02`: IFToMM A02's chain of N four-bar parallelograms (`models.n_four_bar(N)`)
  built with spatial revolute joints (`models.spatial_twin`): 2N + 1 bodies, N
  loops, each redundant three times (p = 3N);
- `pendulums`: an open chain of N rods joined by spherical joints
  (`models.spherical_chain(N)`): a tree, no redundancy;
- `a02_planar`: the same A02 chain as a planar model (3 coordinates per body, no
  redundancy at regular configurations): where the block solver overtakes the
  dense path for planar mechanisms (`BLOCK_MIN_COORDINATES`).

For each N the right-hand side q̈(q, q̇) with Baumgarte's Γ — assembly by autodiff
and the solve, what `simulate` evaluates 13 times per Dopri8 step — is timed inside
one compiled loop (so no Python dispatch is counted). For the block solver the cost
is the *marginal* one, (time of 4k evaluations − time of k) / 3k: what one more
evaluation costs inside a running `simulate`. One execution of a program also pays
fixed costs — dispatch, and the operating system's first touch of the program's
temporary memory, which glibc's malloc returns to the system after every call
(~10 ms at N = 1024: 41.6 ms for one call, 31.0 ms with
`GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295`)
— paid once per `simulate`, not per step; `block_per_program_us` keeps the time per
evaluation of a loop of k (so with them) for comparison. `block` = `rx.equations.local_terms` +
the block factorisation (no dense matrix anywhere); `schur` = `rx.equations.dynamics_terms` +
the dense all-rows Schur complement (the null-space method's default path);
`qr` = the same with the pivoted QR of Cᵀ (the null-space method's path when the
Schur complement is ill conditioned). Dense paths stop where they would take too
long (`--dense-max`). Reported: µs per right-hand side, the log–log slope of the
block solver between N = 64 and the largest N, the speed-up over the dense Schur
path at N = 256, and, for the A02 chain with N = 8, the block solver's cost per
variant under `jax.vmap` at batch 1, 16, 256 and 4096.

Run:
    .venv/bin/python experiments/bench_scaling.py        # ≈ 10 min on 2 cores
Writes experiments/results/bench_scaling/cpu.json and scaling.png.
"""

import argparse
import importlib.metadata
import json
import os
import pathlib
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

import redundax as rx
from redundax import models
from redundax.methods import block_solve, schur_acceleration

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "bench_scaling"
FAMILIES = {
    "a02": lambda n: models.spatial_twin(models.n_four_bar(n)),
    "pendulums": models.spherical_chain,
    "a02_planar": models.n_four_bar,
}


def _per_call(run, *args, budget: float = 1.0) -> float:
    """Best wall time of `run(*args)` over a few calls [s] (compiled beforehand)."""
    jax.block_until_ready(run(*args))
    start = time.perf_counter()
    jax.block_until_ready(run(*args))
    once = time.perf_counter() - start
    best = once
    for _ in range(max(1, min(5, int(budget / max(once, 1e-9))))):
        start = time.perf_counter()
        jax.block_until_ready(run(*args))
        best = min(best, time.perf_counter() - start)
    return best


def _marginal(rhs, n_calls: int, q, qd) -> float:
    """Cost of one more evaluation of `rhs` inside a compiled loop [s]: the best time
    of a loop of 4 × `n_calls` evaluations minus that of `n_calls`, per extra call.
    This is what an integrator's step pays per right-hand side; the costs of one
    execution of a program — dispatch, and the operating system's first touch of
    the program's temporary memory, ~10 ms per call at N = 1024, growing faster
    than N — are paid once per `simulate`, not per evaluation."""
    short, long = _loop(rhs, n_calls), _loop(rhs, 4 * n_calls)
    return (_per_call(long, q, qd) - _per_call(short, q, qd)) / (3 * n_calls)


def _loop(rhs, n_calls: int):
    """A compiled loop of `n_calls` dependent evaluations of `rhs` (so that XLA can
    neither skip nor merge them)."""

    @jax.jit
    def run(q, qd):
        def body(_, acc):
            return acc + rhs(q + 1e-12 * acc, qd)

        return jax.lax.fori_loop(0, n_calls, body, jnp.zeros_like(qd))

    return run


def right_hand_sides(model):
    pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))
    drift = rx.drift.Baumgarte()
    dof = model.bodies.dof

    def block(q, qd):
        t = rx.equations.local_terms(model, q, qd, 0.0)
        return block_solve(pattern, t.R, t.B, t.mass_blocks, t.F, drift.gamma(t)).qdd

    def schur(q, qd):
        t = rx.equations.dynamics_terms(model, q, qd, 0.0)
        return schur_acceleration(t.C, t.M, t.F, drift.gamma(t), dof)

    def qr(q, qd):
        t = rx.equations.dynamics_terms(model, q, qd, 0.0)
        return rx.methods.null_space_acceleration(t.C, t.M, t.F, drift.gamma(t), rx.internal.DECISION_RTOL)

    return pattern, {"block": block, "schur": schur, "qr": qr}


def time_rhs(family: str, n: int, dense_max: int) -> dict:
    mech = FAMILIES[family](n)
    model, state = mech.build(), mech.initial_state()
    pattern, fns = right_hand_sides(model)
    row = {
        "N": n,
        "bodies": model.bodies.count,
        "coordinates": model.n_coordinates,
        "rows": model.n_constraints,
        "blocks": pattern.n_blocks,
        "fill": len(pattern.fill),
        "bandwidth": pattern.bandwidth,
    }
    reference = None
    for name, rhs in fns.items():
        if name != "block" and n > dense_max:
            continue
        if name == "qr" and n > dense_max // 4:
            continue
        if name == "block":
            calls = 200 if n <= 16 else 20 if n <= 256 else 5
        else:  # a dense solve costs O(N³): seconds from N = 128 on
            calls = 200 if n <= 16 else 10 if n <= 64 else 1
        run = _loop(rhs, calls)
        start = time.perf_counter()
        jax.block_until_ready(run(state.q, state.qd))
        compile_s = time.perf_counter() - start
        if name == "block":
            row["block_us"] = 1e6 * _marginal(rhs, calls, state.q, state.qd)
            row["block_per_program_us"] = 1e6 * _per_call(run, state.q, state.qd) / calls
        else:  # seconds per call from N = 128 on: one program's fixed costs are noise
            row[f"{name}_us"] = 1e6 * _per_call(run, state.q, state.qd) / calls
        row[f"{name}_compile_s"] = compile_s
        qdd = jax.jit(rhs)(state.q, state.qd)
        if reference is None:
            reference = qdd
        else:
            scale = float(jnp.max(jnp.abs(reference)))
            row[f"{name}_vs_block_relative"] = float(jnp.max(jnp.abs(qdd - reference))) / scale
        print(f"  {family} N={n:5d} {name:6s} {row[f'{name}_us']:12.1f} µs", flush=True)
    return row


def batched(n: int, batches) -> list[dict]:
    model, state = (m := FAMILIES["a02"](n)).build(), m.initial_state()
    _, fns = right_hand_sides(model)
    out = []
    key = jax.random.PRNGKey(0)
    for batch in batches:
        noise = 1e-9 * jax.random.normal(key, (batch, state.q.shape[0]))
        q = state.q + noise
        qd = jnp.broadcast_to(state.qd, q.shape)
        calls = 50 if batch <= 256 else 5
        run = _loop(jax.vmap(fns["block"]), calls)
        seconds = _per_call(run, q, qd) / calls
        out.append({"batch": batch, "us_per_variant": 1e6 * seconds / batch})
        print(f"  batch {batch:5d}: {out[-1]['us_per_variant']:.2f} µs per variant", flush=True)
    return out


MONITORS = {
    True: rx.Singularities(),
    "singular_values": rx.Singularities("singular_values"),
    False: None,
}
"""The singularity monitor of each timed run: the default, the dense SVD's, none."""


def simulated_second(n: int, t_final: float, dense_max: int) -> dict:
    """Wall time of `rx.simulate` per simulated second for IFToMM A02's spatial chain
    of `n` loops, with the library's defaults (`NullSpace()`: the block solver from
    `BLOCK_MIN_COORDINATES` on; `StepProjection()`; the integrator of the default
    rtol), the singularity monitor on (the default: the pivot sines with the block
    solver), by a dense SVD, and off, the structure decided
    beforehand (its time, first call, reported apart); and, up to `dense_max`, the
    dense Schur path (`NullSpace(block=False)`) for comparison. Warm calls."""
    mech = FAMILIES["a02"](n)
    model, state = mech.build(), mech.initial_state()
    start = time.perf_counter()
    structure = rx.decide(model, state.q, state.t)
    jax.block_until_ready(structure.rank)
    row = {"N": n, "coordinates": model.n_coordinates, "decide_s": time.perf_counter() - start}
    runs = {"default": rx.methods.NullSpace()}  # the block solver from 150 coordinates on
    if n <= dense_max:
        runs["dense"] = rx.methods.NullSpace(block=False)
    for name, method in runs.items():
        # The default monitor reads the block solver's pivots where it runs, else
        # σ_r/σ_1 by a dense SVD; the block runs are also timed with the SVD's.
        monitors = (True, "singular_values", False) if name == "default" else (True, False)
        for monitor in monitors:

            def run(method=method, monitor=monitor):
                return rx.simulate(
                    model, state, t_final, structure=structure, method=method,
                    saveat=rx.SaveAt(n=3), monitor=MONITORS[monitor],
                )  # fmt: skip

            trajectory = run()
            jax.block_until_ready(trajectory.q)
            best = np.inf
            for _ in range(2):
                start = time.perf_counter()
                jax.block_until_ready(run().q)
                best = min(best, time.perf_counter() - start)
            suffix = {True: "", "singular_values": "_svd_monitor", False: "_no_monitor"}
            key = name + suffix[monitor]
            if trajectory.singularities is not None:
                row[f"{key}_measure"] = trajectory.singularities.measure
            row[f"{key}_s_per_simulated_s"] = best / t_final
            row[f"{key}_ms_per_step"] = 1e3 * best / int(trajectory.num_steps)
            row[f"{key}_steps"] = int(trajectory.num_steps)
    print(row, flush=True)
    return row


def slope(rows, key, lo):
    pts = [(r["N"], r[key]) for r in rows if key in r and r["N"] >= lo]
    if len(pts) < 2:
        return None
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), sharey=True)
    for ax, (family, rows) in zip(axes, results.items(), strict=True):
        for key, style in (("block", "o-"), ("schur", "s--"), ("qr", "^:")):
            pts = [(r["N"], r[f"{key}_us"]) for r in rows if f"{key}_us" in r]
            if pts:
                ax.loglog(*zip(*pts, strict=True), style, label=key)
        ax.set_title(family)
        ax.set_xlabel("N")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs per right-hand side")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2,4,8,16,32,64,128,256,512,1024")
    parser.add_argument("--dense-max", type=int, default=256)
    parser.add_argument("--batches", default="1,16,256,4096")
    parser.add_argument("--out", default=str(RESULTS / "cpu.json"))
    parser.add_argument("--simulate-sizes", default="2,4,8,16,32,64")
    parser.add_argument("--simulate-t-final", type=float, default=0.2)
    parser.add_argument(
        "--only-simulate",
        action="store_true",
        help="only the cost per simulated second (merged into the results file)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load_before = os.getloadavg()
    simulate_sizes = [int(s) for s in args.simulate_sizes.split(",")]
    if args.only_simulate:
        out = pathlib.Path(args.out)
        record = json.loads(out.read_text())
        rows = [simulated_second(n, args.simulate_t_final, 32) for n in simulate_sizes]
        record["per_simulated_second_a02"] = {
            "t_final_s": args.simulate_t_final,
            "load_average_before_after": [load_before[0], os.getloadavg()[0]],
            "rows": rows,
        }
        out.write_text(json.dumps(record, indent=2) + "\n")
        return
    results = {}
    for family in FAMILIES:
        results[family] = [time_rhs(family, n, args.dense_max) for n in sizes]
    batch = batched(8, [int(b) for b in args.batches.split(",")])
    a02 = {r["N"]: r for r in results["a02"]}
    summary = {
        f"{family}_block_slope_from_64": slope(rows, "block_us", 64)
        for family, rows in results.items()
    } | {
        f"{family}_block_per_program_slope_from_64": slope(rows, "block_per_program_us", 64)
        for family, rows in results.items()
    }
    if 256 in a02 and "schur_us" in a02[256]:
        summary["a02_speedup_vs_schur_at_256"] = a02[256]["schur_us"] / a02[256]["block_us"]
    summary["a02_8_batch_256_throughput_vs_batch_1"] = (
        batch[0]["us_per_variant"] / next(b for b in batch if b["batch"] == 256)["us_per_variant"]
        if any(b["batch"] == 256 for b in batch)
        else None
    )
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "what": __doc__.splitlines()[0],
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "jax": importlib.metadata.version("jax"),
            "jaxlib": importlib.metadata.version("jaxlib"),
            "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        },
        "summary": summary,
        "right_hand_side": results,
        "batched_a02_8": batch,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    plot(results, out.with_name("scaling.png"))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
