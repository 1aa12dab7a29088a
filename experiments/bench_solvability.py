"""Speed of the reaction-solvability analysis (`rx.analyze_solvability`), mobile robot.

Reports, for the mobile robot of Wojtyra & Frączek (2013, §4; DESIGN.md §6):

- compile time of the jitted analysis (trace + XLA compile, ahead of time);
- time per analysis of one configuration after compilation (median of many jitted
  calls: this includes Python dispatch);
- throughput of a jitted, vmapped batch of 10,000 configurations (time per analysis
  inside the batch, µs; target ≤ 50 µs on this 2-core CPU);
- a profile of the batched analysis, piece by piece (each piece jitted and vmapped
  over the same batch, timed alone), to show where the time goes.

The batch holds consistent configurations: rigid motions (random heading and
position) of q⁰ with the trolley turned about joint A by a random angle; every one
has the paper's answer (rank 20, p = 2), which the script checks.

Run:  cd /work/main && .venv/bin/python experiments/bench_solvability.py
Writes experiments/results/bench_solvability.json and prints a table.
"""

import json
import math
import os
import pathlib
import platform
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import redundax as rx
from redundax import models

OUT = pathlib.Path(__file__).resolve().parent / "results" / "bench_solvability.json"
BATCH = 10_000
CHUNK = 32  # rx.analysis.analyze_many's default
SINGLE_CALLS = 300
BATCH_RUNS = 5
TARGET_US_PER_ANALYSIS_IN_BATCH = 50.0
A = 0.05  # the paper's length unit a [m]


def configurations(q0: np.ndarray, count: int, seed: int = 0) -> np.ndarray:
    """`count` consistent configurations: q⁰ with the trolley (body 7) turned about
    joint A, then the whole robot rotated and shifted (every joint is unchanged)."""
    rng = np.random.default_rng(seed)
    Q = np.broadcast_to(q0.reshape(7, 3), (count, 7, 3)).copy()
    beta = rng.uniform(-0.8, 0.8, count)
    pin = Q[:, 0, :2] + np.array([-8 * A, 0.0])
    rel = Q[:, 6, :2] - pin
    c, s = np.cos(beta), np.sin(beta)
    Q[:, 6, :2] = pin + np.stack([c * rel[:, 0] - s * rel[:, 1], s * rel[:, 0] + c * rel[:, 1]], 1)
    Q[:, 6, 2] += beta
    heading = rng.uniform(-math.pi, math.pi, count)
    shift = rng.uniform(-5.0, 5.0, (count, 2))
    c, s = np.cos(heading)[:, None], np.sin(heading)[:, None]
    x, y = Q[:, :, 0].copy(), Q[:, :, 1].copy()
    Q[:, :, 0] = c * x - s * y + shift[:, :1]
    Q[:, :, 1] = s * x + c * y + shift[:, 1:]
    Q[:, :, 2] += heading[:, None]
    return Q.reshape(count, 21)


def block(tree):
    return jax.block_until_ready(tree)


def time_calls(fn, *args, runs: int, cpu: list | None = None) -> list[float]:
    """Wall-clock seconds of `runs` calls; the process CPU seconds go to `cpu` (all
    threads: robust to other processes competing for the cores, unlike wall time)."""
    out = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        block(fn(*args))
        out.append(time.perf_counter() - t0)
        if cpu is not None:
            cpu.append(time.process_time() - c0)
    return out


def compile_ahead(jitted, *args) -> tuple[object, float, float]:
    t0 = time.perf_counter()
    lowered = jitted.lower(*args)
    t1 = time.perf_counter()
    compiled = lowered.compile()
    t2 = time.perf_counter()
    return compiled, t1 - t0, t2 - t1


def batched(fn):
    """`fn(model, q)` jitted and vmapped over q."""
    return eqx.filter_jit(eqx.filter_vmap(fn, in_axes=(None, 0)))


def main() -> dict:
    load_before = os.getloadavg()
    mech = models.mobile_robot()
    model = mech.build()
    q0 = np.asarray(mech.initial_state().q)
    qs = jnp.asarray(configurations(q0, BATCH))

    # --- one configuration ---
    # Ahead-of-time trace and compile of a fresh wrapper (nothing cached yet), then
    # the usual first call of another fresh wrapper, then warm calls.
    fresh = eqx.filter_jit(lambda model, q: rx.analyze_solvability(model, q))
    _, trace_s, compile_s = compile_ahead(fresh, model, jnp.asarray(q0))
    analyze = eqx.filter_jit(rx.analyze_solvability)
    t0 = time.perf_counter()
    block(analyze(model, jnp.asarray(q0)))
    first_call = time.perf_counter() - t0
    single = time_calls(analyze, model, jnp.asarray(q0), runs=SINGLE_CALLS)
    report = analyze(model, jnp.asarray(q0))
    assert int(report.rank) == 20 and int(report.redundancy) == 2
    # What a jitted call costs before any arithmetic: the same call signature, no work.
    noop = eqx.filter_jit(lambda model, q: q)
    block(noop(model, jnp.asarray(q0)))
    dispatch = time_calls(noop, model, jnp.asarray(q0), runs=SINGLE_CALLS)

    # --- a batch of 10,000 ---
    analyze_batch = batched(rx.analyze_solvability)
    t0 = time.perf_counter()
    reports = block(analyze_batch(model, qs))
    batch_first_call = time.perf_counter() - t0
    assert np.all(np.asarray(reports.rank) == 20)
    assert np.all(np.asarray(reports.unique) == np.asarray(report.unique)[None, :])
    batch_cpu: list[float] = []
    batch_runs = time_calls(analyze_batch, model, qs, runs=BATCH_RUNS, cpu=batch_cpu)
    batch_median = statistics.median(batch_runs)
    vmap_us_per_analysis = batch_median / BATCH * 1e6

    # --- the same batch through rx.analysis.analyze_many (chunks that stay in cache) ---
    t0 = time.perf_counter()
    many = block(rx.analysis.analyze_many(model, qs, chunk_size=CHUNK))
    many_first_call = time.perf_counter() - t0
    assert np.array_equal(np.asarray(many.unique), np.asarray(reports.unique))
    many_cpu: list[float] = []
    many_runs = time_calls(
        lambda model, qs: rx.analysis.analyze_many(model, qs, chunk_size=CHUNK),
        model,
        qs,
        runs=BATCH_RUNS,
        cpu=many_cpu,
    )
    us_per_analysis = statistics.median(many_runs) / BATCH * 1e6

    # --- profile: the pieces of analyze_solvability, each batched alone ---
    m = model.n_holonomic
    nc = model.n_constraints
    pair_rows = [p.rows for p in model.pairs]
    S_pairs = rx.analysis.membership(nc, pair_rows)
    S_rows = jnp.eye(nc)
    Cs = block(batched(rx.equations.constraint_matrix)(model, qs))

    def on_c(fn):
        return eqx.filter_jit(jax.vmap(fn))

    qrs = block(on_c(rx.internal.pivoted_qr)(Cs))
    Ns = jnp.where(jax.vmap(lambda qr: qr.null_mask())(qrs)[:, None, :], qrs.q, 0.0)

    pieces = {
        "constraint_matrix C (assembly by autodiff)": (batched(rx.equations.constraint_matrix), (model, qs)),
        "pivoted_qr(C), 22 x 21": (on_c(rx.internal.pivoted_qr), (Cs,)),
        "solvability_by_qr(C, pairs): QR + B_X of 14 pairs": (
            on_c(lambda C: rx.analysis.solvability_by_qr(C, S_pairs)),
            (Cs,),
        ),
        "solvability_by_qr(C, rows): QR + B_X of 22 rows": (
            on_c(lambda C: rx.analysis.solvability_by_qr(C, S_rows)),
            (Cs,),
        ),
        "pivoted_qr(Phi_q), 17 x 21 (rank_holonomic)": (
            on_c(lambda C: rx.internal.pivoted_qr(C[:m])),
            (Cs,),
        ),
        "pivoted_qr(Psi), 5 x 21 (rank_pfaffian)": (on_c(lambda C: rx.internal.pivoted_qr(C[m:])), (Cs,)),
        "for comparison: jnp.linalg.svd(C) (LAPACK gesdd)": (on_c(jnp.linalg.svd), (Cs,)),
        "for comparison: jax.lax.linalg.qr(C, pivoting=True) (LAPACK geqp3)": (
            on_c(lambda C: jax.lax.linalg.qr(C, pivoting=True)),
            (Cs,),
        ),
        "B_X tensor einsum('gk,ka,kc->gac') alone, 14 pairs (given N)": (
            eqx.filter_jit(jax.vmap(lambda C, N: _b_tensor_norms(C, N, S_pairs))),
            (Cs, Ns),
        ),
        "B_X tensor einsum alone, 22 rows (given N)": (
            eqx.filter_jit(jax.vmap(lambda C, N: _b_tensor_norms(C, N, S_rows))),
            (Cs, Ns),
        ),
        "for comparison: the same norms from (C Cᵀ) ∘ (N Nᵀ), 14 pairs (given N)": (
            eqx.filter_jit(jax.vmap(lambda C, N: _projector_norms(C, N, S_pairs))),
            (Cs, Ns),
        ),
        "for comparison: rows' norms from diag(C Cᵀ) ∘ diag(N Nᵀ), 22 rows (given N)": (
            eqx.filter_jit(jax.vmap(lambda C, N: _projector_norms(C, N, S_rows))),
            (Cs, Ns),
        ),
    }
    # The two ways of computing the norms agree (so the cheaper one is a drop-in).
    check = slice(0, 100)
    np.testing.assert_allclose(
        jax.vmap(lambda C, N: _b_tensor_norms(C, N, S_pairs))(Cs[check], Ns[check]),
        jax.vmap(lambda C, N: _projector_norms(C, N, S_pairs))(Cs[check], Ns[check]),
        atol=1e-10,
    )
    profile, profile_cpu = {}, {}
    for name, (fn, args) in pieces.items():
        block(fn(*args))  # compile
        cpu: list[float] = []
        runs = time_calls(fn, *args, runs=3, cpu=cpu)
        profile[name] = statistics.median(runs) / BATCH * 1e6
        profile_cpu[name] = statistics.median(cpu) / BATCH * 1e6

    result = {
        "problem": {
            "mechanism": "mobile robot (DESIGN.md §6): n = 21, m + h = 22, 14 pairs",
            "function": "redundax.analyze_solvability (QR test, per pair and per row)",
            "batch": BATCH,
            "batch_contents": "rigid motions of q0 with the trolley turned about A",
            "single_calls": SINGLE_CALLS,
            "batch_runs": BATCH_RUNS,
        },
        "machine": {
            "os.cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jax_devices": [f"{d.platform}:{d.id}" for d in jax.devices()],
            "loadavg_before": list(load_before),
            "loadavg_after": list(os.getloadavg()),
        },
        "single": {
            "first_call_s": first_call,
            "trace_s": trace_s,
            "compile_s": compile_s,
            "median_us": statistics.median(single) * 1e6,
            "min_us": min(single) * 1e6,
            "dispatch_only_median_us": statistics.median(dispatch) * 1e6,
        },
        "batch": {
            "function": f"rx.analysis.analyze_many(model, qs, chunk_size={CHUNK})",
            "first_call_s": many_first_call,
            "median_s": statistics.median(many_runs),
            "min_s": min(many_runs),
            "us_per_analysis": us_per_analysis,
            "us_per_analysis_best_run": min(many_runs) / BATCH * 1e6,
            "cpu_us_per_analysis": statistics.median(many_cpu) / BATCH * 1e6,
            "one_vmap_over_the_whole_batch": {
                "first_call_s": batch_first_call,
                "median_s": batch_median,
                "us_per_analysis": vmap_us_per_analysis,
                "cpu_us_per_analysis": statistics.median(batch_cpu) / BATCH * 1e6,
            },
            "target_us_per_analysis": TARGET_US_PER_ANALYSIS_IN_BATCH,
            "meets_target": us_per_analysis <= TARGET_US_PER_ANALYSIS_IN_BATCH,
        },
        "profile_us_per_configuration_in_batch": profile,
        "profile_cpu_us_per_configuration_in_batch": profile_cpu,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    return result


def _b_tensor_norms(C, N, S):
    """‖B_X‖ the way `solvability_by_qr` forms them: the (g, n, nc) tensor B."""
    B = jnp.einsum("gk,ka,kc->gac", S, C, N)
    return jnp.sqrt(jnp.sum(B**2, axis=(1, 2)))


def _projector_norms(C, N, S):
    """The same numbers by ‖B_X‖² = Σ_{k,l ∈ X} (C Cᵀ)_kl (N Nᵀ)_kl, without B."""
    H = (C @ C.T) * (N @ N.T)
    return jnp.sqrt(jnp.maximum(jnp.einsum("gk,kl,gl->g", S, H, S), 0.0))


def show(result: dict) -> None:
    s, b, m = result["single"], result["batch"], result["machine"]
    print(
        f"machine: {m['os.cpu_count']} CPUs, jax {m['jax']}, {m['jax_devices']}, "
        f"load {m['loadavg_before'][0]:.2f} → {m['loadavg_after'][0]:.2f}"
    )
    print(
        f"compile (one configuration): trace {s['trace_s']:.2f} s + XLA {s['compile_s']:.2f} s"
        f" (first call {s['first_call_s']:.2f} s)"
    )
    print(
        f"one analysis after compilation: median {s['median_us']:.0f} µs "
        f"(min {s['min_us']:.0f} µs), dispatch included; a jitted no-op with the same "
        f"arguments: {s['dispatch_only_median_us']:.0f} µs"
    )
    print(
        f"batch of {result['problem']['batch']}: first call {b['first_call_s']:.2f} s,"
        f" then median {b['median_s']:.3f} s → {b['us_per_analysis']:.1f} µs per analysis "
        f"(target ≤ {b['target_us_per_analysis']:.0f} µs: "
        f"{'met' if b['meets_target'] else 'NOT met'})"
    )
    print(
        f"  ({b['function']}; best run {b['us_per_analysis_best_run']:.1f} µs; process CPU "
        f"time {b['cpu_us_per_analysis']:.1f} µs per analysis)"
    )
    v = b["one_vmap_over_the_whole_batch"]
    print(f"  one jax.vmap over all {result['problem']['batch']}: {v['us_per_analysis']:.1f} µs")
    print("profile, µs per configuration inside a batch (each piece alone): wall, CPU")
    cpu = result["profile_cpu_us_per_configuration_in_batch"]
    for name, us in result["profile_us_per_configuration_in_batch"].items():
        print(f"  {us:9.1f} {cpu[name]:9.1f}  {name}")


if __name__ == "__main__":
    show(main())
