"""The block solver's two forms side by side (issue 39 item 5; Kraus, Winckler & Bock
2001, §6: "By using a null-space method and exploiting the very simple structure of
the transformed and constant matrix G_RC D, we are able to further reduce the
overall computation time by a factor of two"): `rx.methods.BlockSparse()` (the
descriptor form: each body's six rigid-body rows a constraint block of S) against
`BlockSparse(form="null-space")` (the rigid-body rows eliminated body by body by the
basis D(p) N̄; S over the pairs alone, six coordinates per body).

Mechanisms (spatial, natural coordinates): the 6-bar (`models.six_bar()`), IFToMM
A02's chain of N parallelograms with spatial revolutes
(`models.spatial_twin(models.n_four_bar(N))`, N = 4 … 256) and the hexapod
(`models.hexapod()`, 13 bodies, 5 independent loops).

For each mechanism and form, at the initial state with Baumgarte's Γ, in one process,
warm (compiled beforehand), best of several runs:

- `rhs_us`: one right-hand side, assembly by autodiff (`rx.equations.local_terms`)
  and the solve, as `experiments/bench_scaling.py` times it: the marginal cost of
  one more evaluation inside a compiled loop, (time of 4k evaluations − time of k)
  / 3k, so that no dispatch is counted; the loops of both forms and of the
  assembly run in turn, several rounds, best of each (the machine is shared);
- `assembly_us`: the assembly alone, timed the same way; `solve_us` = `rhs_us` −
  `assembly_us`, the part the form changes;
- the same in process CPU time (`*_cpu_us`): on a shared machine the wall time
  also counts waits for a core, CPU time does not;
- `ratio_rhs`, `ratio_solve` (and `*_cpu`): descriptor time / null-space time
  (> 1: the null-space form is faster);
- `qdd_relative_difference`: max |q̈_null − q̈_descriptor| / max(max |q̈_descriptor|,
  g), and whether both forms keep the same rows active.

Run (pinned to one core: on a shared machine, XLA's hand-offs to its thread pool
otherwise wait for the other core, and the timings scatter by a factor of two):
    taskset -c 1 .venv/bin/python experiments/bench_block_forms.py [--quick]
Writes experiments/results/bench_block_forms/summary.json.
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
from redundax.methods.block import block_solve, mass_pivots, null_space_block_solve

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "bench_block_forms"
A02_SIZES = (4, 8, 16, 32, 64, 128, 256)


def _mechanisms(quick: bool) -> dict:
    sizes = A02_SIZES[:3] if quick else A02_SIZES
    out = {"six_bar": models.six_bar}
    for n in sizes:
        out[f"a02_{n}"] = lambda n=n: models.spatial_twin(models.n_four_bar(n))
    if hasattr(models, "hexapod"):
        out["hexapod"] = models.hexapod
    return out


def _time(run, *args) -> np.ndarray:
    """Wall time and process CPU time of one call of `run(*args)` [s]."""
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(run(*args))
    return np.asarray([time.perf_counter() - wall, time.process_time() - cpu])


def _loop(fn, n_calls: int):
    """A compiled loop of `n_calls` dependent evaluations of `fn(q, qd)` (so that XLA
    can neither skip, merge nor hoist them)."""

    @jax.jit
    def run(q, qd):
        def body(_, acc):
            return acc + fn(q + 1e-12 * acc, qd)

        return jax.lax.fori_loop(0, n_calls, body, jnp.zeros_like(qd))

    return run


def _marginals(fns: dict, n_calls: int, q, qd, rounds: int) -> dict:
    """Per function, the cost of one more evaluation inside a compiled loop [s], in
    wall time and in process CPU time (the machine is shared: CPU time does not
    count the waits for a core): the best time of a loop of 4 × `n_calls` minus
    the best of `n_calls`, over 3 × `n_calls`. The loops of all functions run in
    turn, `rounds` times, so that every function sees the same load."""
    loops = {k: (_loop(f, n_calls), _loop(f, 4 * n_calls)) for k, f in fns.items()}
    best = {k: np.full((2, 2), np.inf) for k in fns}
    for short, long in loops.values():  # compile and warm up
        _time(short, q, qd), _time(long, q, qd)
    for _ in range(rounds):
        for k, (short, long) in loops.items():
            best[k][0] = np.minimum(best[k][0], _time(short, q, qd))
            best[k][1] = np.minimum(best[k][1], _time(long, q, qd))
    return {k: (b[1] - b[0]) / (3 * n_calls) for k, b in best.items()}


def _functions(model):
    pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))
    pivots = mass_pivots(model.mass_facts)
    drift = rx.drift.Baumgarte()

    def terms(q, qd):
        return rx.equations.local_terms(model, q, qd, 0.0)

    def descriptor(q, qd):
        t = terms(q, qd)
        return block_solve(
            pattern,
            t.R,
            t.B,
            t.mass_blocks,
            t.F,
            drift.gamma(t),
            mass_inverse=t.mass_inverse,
            pivots=pivots,
        )

    def null_space(q, qd):
        t = terms(q, qd)
        return null_space_block_solve(
            pattern, t.R, t.B, t.mass_blocks, t.F, drift.gamma(t), pivots=pivots
        )

    def assembly(q, qd):
        t = terms(q, qd)
        # Every output of the assembly enters the result (nothing is dead code).
        return t.F + jnp.sum(t.R) + jnp.sum(drift.gamma(t)) + jnp.sum(t.mass_blocks)

    return pattern, pivots, {"descriptor": descriptor, "null_space": null_space}, assembly


def measure(name: str, build, rounds: int) -> dict:
    mech = build()
    model, state = mech.build(), mech.initial_state()
    pattern, pivots, forms, assembly = _functions(model)
    n_pairs_rows = sum(len(r) for g, r in enumerate(pattern.rows) if not pattern.rigid[g])
    row = {
        "bodies": model.bodies.count,
        "coordinates": model.n_coordinates,
        "rows": model.n_constraints,
        "pair_rows": n_pairs_rows,
        "blocks": pattern.n_blocks,
        "fill": len(pattern.fill),
        "pivots": pivots,
    }
    calls = 50 if model.bodies.count <= 40 else 10 if model.bodies.count <= 300 else 4
    q, qd = state.q, state.qd
    solutions = {}
    for form, fn in forms.items():
        start = time.perf_counter()
        solutions[form] = jax.block_until_ready(jax.jit(fn)(q, qd))
        row[f"{form}_first_call_s"] = time.perf_counter() - start
    timed = {"assembly": assembly} | {
        form: (lambda q, qd, fn=fn: fn(q, qd).qdd) for form, fn in forms.items()
    }
    seconds = _marginals(timed, calls, q, qd, rounds)
    for k, clock in enumerate(("", "cpu_")):
        row[f"assembly_{clock}us"] = 1e6 * seconds["assembly"][k]
        for form in forms:
            row[f"{form}_rhs_{clock}us"] = 1e6 * seconds[form][k]
            row[f"{form}_solve_{clock}us"] = (
                row[f"{form}_rhs_{clock}us"] - row[f"assembly_{clock}us"]
            )
    d, n = solutions["descriptor"], solutions["null_space"]
    # Relative to |q̈| or to g, whichever is larger: the driven hexapod at rest has
    # q̈ = 0 (its six drivers hold it; p = 0), up to round-off.
    scale = max(float(jnp.max(jnp.abs(d.qdd))), float(jnp.linalg.norm(model.gravity)))
    row["qdd_relative_difference"] = float(jnp.max(jnp.abs(n.qdd - d.qdd))) / scale
    row["qdd_max_abs"] = float(jnp.max(jnp.abs(d.qdd)))
    row["same_active_rows"] = bool(jnp.all(n.active == d.active))
    for clock in ("", "cpu_"):
        for part in ("rhs", "solve"):
            row[f"ratio_{part}{'_cpu' if clock else ''}"] = (
                row[f"descriptor_{part}_{clock}us"] / row[f"null_space_{part}_{clock}us"]
            )
    print(
        f"{name:9s} rhs {row['descriptor_rhs_us']:9.1f} / {row['null_space_rhs_us']:9.1f} µs"
        f" (×{row['ratio_rhs']:.2f}); solve {row['descriptor_solve_us']:9.1f} / "
        f"{row['null_space_solve_us']:9.1f} µs (×{row['ratio_solve']:.2f}); "
        f"CPU time ×{row['ratio_rhs_cpu']:.2f} / ×{row['ratio_solve_cpu']:.2f}; "
        f"q̈ {row['qdd_relative_difference']:.1e}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="A02 to N = 16, 3 repeats")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    mechanisms = _mechanisms(args.quick)
    load_before = os.getloadavg()
    rows = {
        name: measure(name, build, 3 if args.quick else 9) for name, build in mechanisms.items()
    }
    a02 = [rows[k] for k in rows if k.startswith("a02_")]
    summary = {
        "what": __doc__.split("\n")[0],
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "cores_allowed": sorted(os.sched_getaffinity(0)),
            "jax": jax.__version__,
            "jaxlib": importlib.metadata.version("jaxlib"),
            "backend": jax.default_backend(),
            "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        },
        "quick": args.quick,
        "hexapod": "included" if "hexapod" in rows else "models.hexapod does not exist yet",
        "summary": {
            **{
                f"ratio_{part}_by_mechanism": {k: r[f"ratio_{part}"] for k, r in rows.items()}
                for part in ("rhs", "solve", "rhs_cpu", "solve_cpu")
            },
            **{
                f"a02_ratio_{part}_median": float(np.median([r[f"ratio_{part}"] for r in a02]))
                for part in ("rhs", "solve", "rhs_cpu", "solve_cpu")
            },
            "max_qdd_relative_difference": max(r["qdd_relative_difference"] for r in rows.values()),
            "same_active_rows_everywhere": all(r["same_active_rows"] for r in rows.values()),
        },
        "mechanisms": rows,
    }
    (RESULTS / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary["summary"], indent=2))


if __name__ == "__main__":
    main()
