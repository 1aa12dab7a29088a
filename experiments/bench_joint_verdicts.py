"""Seed 002's verdicts in joint coordinates without a second model (issue 39 item 2):
how the cost of a joint-coordinate run's verdicts grows with the number of bodies.

`rx.joint_coordinates.joint_uniqueness` decides every verdict inside the
divide-and-conquer algorithm (DCA): the propagation (seed 002's steps 1-4), the
self-stress test on the DCA's self-stresses kept sparse (each assembly keeps only
the columns seeded on its path to the root), and what a run claims
(`stable_unique` / `stable_row_unique`) by the same test at the generic
configuration next to the one analysed, reached and closed again by the DCA's own
solves. No absolute-coordinate model is decided (`rx.decide` is not called: the
script replaces it by a function that raises, as the test does).

Mechanism: IFToMM A02's chain of N parallelograms with spatial revolute joints
(`models.spatial_twin(models.n_four_bar(N))`: 2N + 1 bodies, 2N + 1 joint angles,
N cut joints, p = 3N), N = 16 … 1024, at its initial state.

For each N, in one process:

- `decide_joint_s`: `decide_joint` (the plan, the rows each assembly keeps), warm;
- `verdicts_s`: `joint_uniqueness`, warm: the best of `--repeats` calls after a
  first call (`first_call_s`, which compiles the body terms and the joint
  increment for this model: `compile_s` = first − best, reported apart);
- `verdicts_cpu_s`: the same call's process CPU time (on a shared machine the wall
  time also counts waits for a core);
- the report's p, the pairs unique, and those a run claims.

The log–log slope of `verdicts_s` (and of its CPU time) against N from N = 64 to
1024 is fitted (least squares); the issue asks for ≤ 1.15 (linear in the bodies,
like the DCA).

Run (pinned to one core, as the other benchmarks on a shared machine):
    taskset -c 1 .venv/bin/python experiments/bench_joint_verdicts.py [--quick]
Writes experiments/results/bench_joint_verdicts/summary.json (`--quick`: N ≤ 128,
to $TMPDIR).
"""

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import platform
import tempfile
import time

import jax
import numpy as np

import redundax as rx
import redundax._structure
from redundax import models

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "bench_joint_verdicts"
SIZES = (16, 32, 64, 128, 256, 512, 1024)
SLOPE_FROM = 64


def _refuse_absolute_decisions() -> None:
    """Every absolute-model decision raises (the verdicts must not need one)."""

    def refused(*args, **kwargs):
        raise AssertionError("the joint-coordinate verdicts decided the absolute model")

    for module in (rx, redundax._structure):
        module.decide = refused
    rx.analyze_solvability = refused


def _timed(fn) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def measure(n: int, repeats: int) -> dict:
    mech = models.spatial_twin(models.n_four_bar(n))
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    structure, first_decide, _ = _timed(lambda: rx.joint_coordinates.decide_joint(jm, jstate))
    decide = min(_timed(lambda: rx.joint_coordinates.decide_joint(jm, jstate))[1] for _ in range(2))

    def verdicts():
        return rx.joint_coordinates.joint_uniqueness(jm, structure, jstate)

    report, first, _ = _timed(verdicts)
    times = [_timed(verdicts)[1:] for _ in range(repeats)]
    wall = min(t[0] for t in times)
    cpu = min(t[1] for t in times)
    row = {
        "N": n,
        "bodies": model.bodies.count,
        "joint_coordinates": jm.n_coordinates,
        "rows": len(structure.rows.rows),
        "redundancy": report.redundancy,
        "mobility": report.mobility,
        "assembly_levels": len(structure.plan.levels),
        "decide_joint_first_s": first_decide,
        "decide_joint_s": decide,
        "first_call_s": first,
        "verdicts_s": wall,
        "verdicts_cpu_s": cpu,
        "compile_s": first - wall,
        "verdicts_s_all": [t[0] for t in times],
        "pairs": len(report.names),
        "pairs_unique": int(sum(report.unique)),
        "pairs_claimed": int(sum(report.stable_unique)),
        "components_unique": int(sum(map(sum, report.row_unique))),
        "components_claimed": int(sum(map(sum, report.stable_row_unique))),
        "steps": {s: report.step.count(s) for s in sorted(set(report.step))},
        "nearby_residual": report.nearby_residual,
    }
    print(
        f"N={n:5d} bodies {row['bodies']:5d} p {row['redundancy']:5d}  verdicts "
        f"{wall * 1e3:9.1f} ms (cpu {cpu * 1e3:9.1f} ms, first {first:6.2f} s)  "
        f"decide_joint {decide * 1e3:8.1f} ms",
        flush=True,
    )
    return row


def slope(rows, key, lo=SLOPE_FROM):
    pts = [(r["N"], r[key]) for r in rows if r["N"] >= lo]
    if len(pts) < 2:
        return None
    return float(np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="N ≤ 128, 2 repeats, to $TMPDIR")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    _refuse_absolute_decisions()
    sizes = [n for n in SIZES if n <= 128] if args.quick else SIZES
    repeats = 2 if args.quick else args.repeats
    load_before = os.getloadavg()
    rows = [measure(n, repeats) for n in sizes]
    summary = {
        "what": __doc__.split("\n")[0],
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "cores_allowed": sorted(os.sched_getaffinity(0)),
            "jax": jax.__version__,
            "jaxlib": importlib.metadata.version("jaxlib"),
            "numpy": np.__version__,
            "redundax": importlib.metadata.version("redundax"),
            "backend": jax.default_backend(),
            "load_average_before_after": [load_before[0], os.getloadavg()[0]],
        },
        "quick": args.quick,
        "repeats": repeats,
        "slope_from": SLOPE_FROM,
        "slope_verdicts": slope(rows, "verdicts_s"),
        "slope_verdicts_cpu": slope(rows, "verdicts_cpu_s"),
        "slope_decide_joint": slope(rows, "decide_joint_s"),
        "required_slope_at_most": 1.15,
        "rows": rows,
    }
    out = pathlib.Path(tempfile.gettempdir()) / "bench_joint_verdicts" if args.quick else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    slopes = {k: summary[k] for k in ("slope_verdicts", "slope_verdicts_cpu", "slope_decide_joint")}
    print(f"log-log slopes from N = {SLOPE_FROM}: {slopes}; written to {out / 'summary.json'}")


if __name__ == "__main__":
    main()
