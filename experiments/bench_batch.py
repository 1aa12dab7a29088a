# ruff: noqa: E402  (JAX_PLATFORMS is set from the arguments before JAX is imported)
"""Throughput of batched simulation: the mobile robot's 10 s manoeuvre, many variants at once.

Each batch is a `redundax.sweep.Evaluator` call (what `redundax sweep` runs per chunk):
`jax.vmap` over the variants inside `jax.shard_map` over every device of the chosen
platform. The variants differ slightly (platform mass 9.5–10.5 kg, initial speed
0.095–0.105 m/s, seeded), so every batch integrates the same manoeuvre with its own
step sizes, and a batch runs until its slowest member is done. Simulation options: the
library's defaults for `rx.simulate` at rtol = 1e-8, atol = 1e-10 (Dopri8, PID
controller stepping onto the steering knots, null-space method, projection onto the
constraints after every step with Baumgarte α = β = 1/s between),
as in `bench_dynamics.py`, with `n_save` = 11 saved states (one per second; the sweep
outputs: final tracked points, the largest constraint violation and the rank of C at
the saved states).

Throughput = batch × t_final / wall time of a warm call [simulated mechanism-seconds
per wall-second]. Compile time = first call − fastest warm call. With `--device cpu`,
batches above `--extrapolate-above` (default 256) are timed with t_final =
`--short-t-final` (default 1 s) and scaled to 10 s by the ratio of the 10 s and 1 s
wall times measured at the largest batch timed in full; the JSON says so
(`extrapolated`). A profile gives the cost per variant of the right-hand side's two
parts (`rx.equations.dynamics_terms` and `rx.methods.schur_acceleration`) inside one compiled loop at
batch 1 and 256: what batching does and does not amortise.

Targets (issue 5): on the CPU, batch 256 at least 20× the throughput of batch 1; on one
H100/H200 GPU, at least 10,000 simulations of the 10 s manoeuvre in under 60 s. Issue 11
asks 10× on the CPU; the JSON gives both verdicts.

Run:
    .venv/bin/python experiments/bench_batch.py            # CPU, ≈ 7 min on 2 cores
    python experiments/bench_batch.py --device gpu --out experiments/results/bench_batch/gpu.json
Writes experiments/results/bench_batch/cpu.json (or --out) and prints a table.
"""

import argparse
import importlib.metadata
import json
import os
import pathlib
import platform
import sys
import time

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "bench_batch"
TARGETS = {
    "cpu_speedup_256_vs_1": 20.0,  # issue 5
    "cpu_speedup_256_vs_1_issue_11": 10.0,
    "gpu_simulations": 10_000,
    "gpu_wall_time_s": 60.0,
}


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument(
        "--out", default=None, help="JSON file (default results/bench_batch/DEVICE.json)"
    )
    parser.add_argument(
        "--batches",
        default=None,
        help="comma-separated batch sizes (default 1,16,64,256,4096; on a GPU 10000 first, "
        "then 1,16,256,4096)",
    )
    parser.add_argument("--t-final", type=float, default=10.0)
    parser.add_argument("--short-t-final", type=float, default=1.0)
    parser.add_argument(
        "--extrapolate-above",
        type=int,
        default=None,
        help="time larger batches with --short-t-final and scale "
        "(default: 256 on CPU, never on GPU)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3, help="warm calls per batch (fewer above 1000)"
    )
    parser.add_argument("--no-profile", action="store_true")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=480.0,
        help="skip what is left after this many seconds (the JSON is written after every "
        "measurement and says what was skipped); default 480",
    )
    return parser.parse_args()


ARGS = _arguments()
# The platform must be chosen before JAX starts (experiments are scripts, not library code).
os.environ.setdefault("JAX_PLATFORMS", "cuda" if ARGS.device == "gpu" else "cpu")

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import redundax as rx
from redundax import models, sweep as sw
from redundax.io import SimulationOptions

RTOL, ATOL, N_SAVE = 1e-8, 1e-10, 11
VERSIONED = (
    "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "numpy", "diffrax", "equinox",
    "redundax",
)  # fmt: skip


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _sweep(model, state, batch: int, t_final: float) -> sw.Sweep:
    options = SimulationOptions(
        t_final=t_final,
        stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
        saveat=rx.SaveAt(n=N_SAVE),
        solver=diffrax.Dopri8(),
    )
    return sw.Sweep(
        model,
        state,
        (
            sw.Parameter("bodies.platform.mass", low=9.5, high=10.5),
            sw.Parameter("initial.speed", low=0.095, high=0.105),
        ),
        sample=sw.RandomSample(batch, seed=0),
        analyze=False,
        simulate=True,
        simulation=options,
        name=f"bench_batch {batch}",
    )


def _time_batch(model, state, batch: int, t_final: float, repeats: int) -> dict:
    sweep = _sweep(model, state, batch, t_final)
    # The whole batch under one vmap (the Evaluator's default on a CPU is one variant
    # after another, `lax.map`: what this benchmark measures is vmap's batching).
    evaluator = sw.Evaluator(sweep, batch=batch)
    values = sweep.table()
    load = os.getloadavg()
    start = time.perf_counter()
    out = evaluator(values)
    first = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = evaluator(values)
        warm.append(time.perf_counter() - start)
    best = min(warm)
    steps = float(np.mean(out["steps"]))
    return {
        "batch": batch,
        "t_final": t_final,
        "first_call_s": first,
        "compile_time_s": first - best,
        "warm_times_s": warm,
        "warm_min_s": best,
        "throughput_mech_s_per_s": batch * t_final / best,
        "simulations_per_s": batch / best,
        "steps_max": int(np.max(out["steps"])),
        "steps_mean": steps,
        # A batch steps until its slowest member is done: per variant and mean step.
        "wall_per_variant_step_us": 1e6 * best / (batch * steps),
        "successful": int(np.sum(out["success"])),
        "max_constraint_violation": float(np.max(out["max_constraint_violation"])),
        "loadavg_before": list(load),
        "loadavg_after": list(os.getloadavg()),
    }


def _single(model, state, t_final: float, repeats: int) -> dict:
    """One plain `rx.simulate` call (host-side decisions, no vmap), same options."""

    def call():
        trajectory = rx.simulate(
            model,
            state,
            t_final,
            stepsize_controller=diffrax.PIDController(rtol=RTOL, atol=ATOL),
            saveat=rx.SaveAt(n=N_SAVE),
            throw=False,
        )
        jax.block_until_ready(trajectory.q)
        return trajectory

    start = time.perf_counter()
    trajectory = call()
    first = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        warm.append(time.perf_counter() - start)
    return {
        "first_call_s": first,
        "compile_time_s": first - min(warm),
        "warm_times_s": warm,
        "warm_min_s": min(warm),
        "throughput_mech_s_per_s": t_final / min(warm),
        "steps": int(trajectory.num_steps),
    }


def _profile(model, state, batches=(1, 16, 256), reps: int = 100) -> dict:
    """µs per variant of the right-hand side and of its assembly, in one compiled loop.

    The right-hand side is what the integrator evaluates 13 times per Dopri8 step:
    `rx.equations.dynamics_terms` (C, b, Γ, Φ, M, F by autodiff), the Baumgarte terms and the
    null-space q̈ (`NullSpace.acceleration`, the Schur complement for this model).
    For comparison, the same with the block solver (`rx.equations.local_terms` and
    `BlockSparse.acceleration`: pure `jax.numpy`, no LAPACK call)."""
    method, stabilisation = rx.methods.NullSpace(), rx.drift.Baumgarte()
    structure = rx.decide(model, state.q, state.t)
    method = rx.methods.specialise(method, structure, model)
    block = rx.methods.specialise(rx.methods.BlockSparse(), structure, model)  # pivots from M

    def assembly(q, qd, t):
        terms = rx.equations.dynamics_terms(model, q, qd, t)
        return sum(jnp.sum(leaf) for leaf in jax.tree.leaves(terms))

    def right_hand_side(q, qd, t):
        terms = rx.equations.dynamics_terms(model, q, qd, t)
        return jnp.sum(method.acceleration(terms, stabilisation.gamma(terms), structure))

    def block_right_hand_side(q, qd, t):
        terms = rx.equations.local_terms(model, q, qd, t)
        return jnp.sum(block.acceleration(terms, stabilisation.gamma(terms), structure))

    out = {}
    for name, f in (
        ("dynamics_terms", assembly),
        ("right-hand side (terms, Baumgarte, null-space q̈)", right_hand_side),
        ("right-hand side (local terms, Baumgarte, block q̈)", block_right_hand_side),
    ):
        for batch in batches:
            qs = state.q[None, :] + 1e-6 * jnp.arange(batch, dtype=float)[:, None]
            qds = jnp.broadcast_to(state.qd, qs.shape)

            @eqx.filter_jit
            def loop(qs, qds, f=f):
                def body(i, acc):
                    t = 0.01 * i
                    return acc + jnp.sum(jax.vmap(lambda q, qd: f(q + 1e-12 * acc, qd, t))(qs, qds))

                return jax.lax.fori_loop(0, reps, body, jnp.zeros(()))

            jax.block_until_ready(loop(qs, qds))
            start = time.perf_counter()
            jax.block_until_ready(loop(qs, qds))
            out[f"{name}, batch {batch}"] = 1e6 * (time.perf_counter() - start) / reps / batch
    return out


def _targets(runs: list[dict], single: dict | None) -> dict:
    by_batch = {r["batch"]: r for r in runs}
    out: dict = {}
    if 1 in by_batch and 256 in by_batch:
        ratio = by_batch[256]["throughput_mech_s_per_s"] / by_batch[1]["throughput_mech_s_per_s"]
        out["speedup_256_vs_1 (same batched code)"] = ratio
        if single is not None:
            out["speedup_256_vs_plain_simulate"] = (
                by_batch[256]["throughput_mech_s_per_s"] / single["throughput_mech_s_per_s"]
            )
        if ARGS.device == "cpu":
            out["cpu_target_20x_met"] = bool(ratio >= TARGETS["cpu_speedup_256_vs_1"])
            out["cpu_target_10x_met (issue 11)"] = bool(
                ratio >= TARGETS["cpu_speedup_256_vs_1_issue_11"]
            )
    big = [r for r in runs if r["batch"] >= TARGETS["gpu_simulations"] and not r["extrapolated"]]
    if ARGS.device == "gpu" and big:
        r = big[0]
        out["gpu_10000_simulations_warm_s"] = (
            r["warm_min_s"] * TARGETS["gpu_simulations"] / r["batch"]
        )
        out["gpu_10000_simulations_first_call_s (with compilation)"] = r["first_call_s"]
        out["gpu_target_met"] = bool(
            out["gpu_10000_simulations_warm_s"] < TARGETS["gpu_wall_time_s"]
        )
    return out


def main() -> None:
    start = time.perf_counter()
    device = jax.devices()[0]
    wanted = "gpu" if ARGS.device == "gpu" else "cpu"
    if device.platform != wanted:
        sys.exit(f"bench_batch: asked for --device {ARGS.device} but JAX runs on {device.platform}")
    # On a GPU the 10,000-simulation target first, in case the time budget runs out.
    default = "1,16,64,256,4096" if ARGS.device == "cpu" else "10000,1,16,256,4096"
    batches = [int(b) for b in (ARGS.batches or default).split(",")]
    above = ARGS.extrapolate_above
    if above is None:
        above = 256 if ARGS.device == "cpu" else max(batches)
    out_path = pathlib.Path(ARGS.out) if ARGS.out else RESULTS / f"{ARGS.device}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)

    mech = models.mobile_robot()
    model, state = mech.build(), mech.initial_state()
    runs: list[dict] = []
    skipped: list[str] = []
    result = {
        "problem": {
            "mechanism": "mobile robot (Wojtyra & Frączek 2013), 10 s manoeuvre",
            "t_final": ARGS.t_final,
            "rtol": RTOL,
            "atol": ATOL,
            "solver": "Dopri8 (rx.simulate's default at rtol < 1e-6), PID, steps on the knots",
            "method": "NullSpace (Schur complement q̈), StepProjection() with Baumgarte(1, 1)",
            "n_save": N_SAVE,
            "variants": "platform mass U(9.5, 10.5) kg, initial speed U(0.095, 0.105) m/s, seed 0",
            "evaluation": "redundax.sweep.Evaluator: shard_map over the devices, vmap inside",
        },
        "machine": {
            "device": ARGS.device,
            "jax_devices": [str(d) for d in jax.devices()],
            "device_kind": device.device_kind,
            "device_count": jax.device_count(),
            "os.cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            **{name: _version(name) for name in VERSIONED},
            "loadavg_before": list(os.getloadavg()),
        },
        "batches": runs,
        "plain_simulate_batch_1": None,
        "profile_us_per_variant": {},
        "targets": dict(TARGETS),
        "skipped": skipped,
        "complete": False,
    }

    def save() -> None:
        # Written after every measurement: a run stopped by a time limit keeps its results.
        runs.sort(key=lambda r: r["batch"])
        result["machine"]["loadavg_after"] = list(os.getloadavg())
        result["targets"] = {**TARGETS, **_targets(runs, result["plain_simulate_batch_1"])}
        result["wall_time_s"] = time.perf_counter() - start
        out_path.write_text(json.dumps(result, indent=1) + "\n")

    def in_budget(what: str) -> bool:
        if time.perf_counter() - start < ARGS.max_seconds:
            return True
        skipped.append(f"{what} (--max-seconds {ARGS.max_seconds:g} reached)")
        print(f"skipped: {skipped[-1]}", flush=True)
        return False

    for batch in [b for b in batches if b <= above]:
        if not in_budget(f"batch {batch}"):
            continue
        repeats = ARGS.repeats if batch <= 1000 else 1
        print(f"batch {batch}, t_final {ARGS.t_final:g} s ...", flush=True)
        run = _time_batch(model, state, batch, ARGS.t_final, repeats)
        runs.append({**run, "extrapolated": False})
        print(
            f"  {run['warm_min_s']:.3f} s warm, {run['compile_time_s']:.1f} s compile", flush=True
        )
        save()
    short = [b for b in batches if b > above]
    full = [r for r in runs if not r["extrapolated"]]
    if short and full and in_budget("extrapolated batches"):
        ref_full = max(full, key=lambda r: r["batch"])
        reference = ref_full["batch"]
        print(f"batch {reference}, t_final {ARGS.short_t_final:g} s (to scale) ...", flush=True)
        ref_short = _time_batch(model, state, reference, ARGS.short_t_final, 1)
        scale = ref_full["warm_min_s"] / ref_short["warm_min_s"]
        for batch in short:
            if not in_budget(f"batch {batch}"):
                continue
            print(f"batch {batch}, t_final {ARGS.short_t_final:g} s (extrapolated) ...", flush=True)
            measured = _time_batch(model, state, batch, ARGS.short_t_final, 1)
            estimate = measured["warm_min_s"] * scale
            runs.append(
                {
                    "batch": batch,
                    "t_final": ARGS.t_final,
                    "extrapolated": True,
                    "extrapolation": (
                        f"wall time measured at t_final = {ARGS.short_t_final:g} s, multiplied by "
                        f"{scale:.4g} = (warm time at t_final = {ARGS.t_final:g} s) / (warm time "
                        f"at t_final = {ARGS.short_t_final:g} s), both at batch {reference}"
                    ),
                    "warm_min_s": estimate,
                    "throughput_mech_s_per_s": batch * ARGS.t_final / estimate,
                    "simulations_per_s": batch / estimate,
                    "measured_at_short_t_final": measured,
                    "scaling_reference": {"short": ref_short, "full": ref_full["warm_min_s"]},
                }
            )
            print(f"  {measured['warm_min_s']:.2f} s at {ARGS.short_t_final:g} s", flush=True)
            save()

    if in_budget("plain rx.simulate"):
        print("one plain rx.simulate call ...", flush=True)
        result["plain_simulate_batch_1"] = _single(model, state, ARGS.t_final, ARGS.repeats)
        save()
    if not ARGS.no_profile and in_budget("profile"):
        print("profile ...", flush=True)
        result["profile_us_per_variant"] = _profile(model, state)
    result["complete"] = not skipped
    save()

    header = ("batch", "t_final", "warm s", "mech-s/s", "sims/s", "compile s")
    print("\n" + " ".join(f"{h:>10}" for h in header) + "  steps")
    for r in runs:
        compile_s = "" if r["extrapolated"] else f"{r['compile_time_s']:.1f}"
        steps = "" if r["extrapolated"] else f"{r['steps_max']}"
        flag = " (extrapolated)" if r["extrapolated"] else ""
        print(
            f"{r['batch']:>10} {r['t_final']:>10g} {r['warm_min_s']:>10.3f} "
            f"{r['throughput_mech_s_per_s']:>10.1f} {r['simulations_per_s']:>10.2f} "
            f"{compile_s:>10}  {steps}{flag}"
        )
    single = result["plain_simulate_batch_1"]
    if single is not None:
        plain = single["throughput_mech_s_per_s"]
        print(f"plain rx.simulate: {single['warm_min_s']:.3f} s, {plain:.1f} mech-s/s")
    for key, value in result["targets"].items():
        print(f"{key}: {value}")
    for key, value in result["profile_us_per_variant"].items():
        print(f"profile {key}: {value:.2f} µs per variant")
    print(f"load average before/after: {result['machine']['loadavg_before']} / {os.getloadavg()}")
    print(f"wrote {out_path}")


if __name__ == "__main__":
    main()
