"""The steering-linkage design study of the mobile robot, and what a gradient costs.

Runs `configs/design_mobile_robot.toml` (three symmetric linkage dimensions b_x, b_y,
c_y; objective: the smooth peak of the steering input's driving force over the 10 s
manoeuvre, a unique reaction; assemblability: σ_r/σ_1 of C ≥ 0.004 along the
manoeuvre) with `redundax.optimize.optimize_design`, and writes what
`redundax optimize` writes (design.json, history.csv, design.png) to
`experiments/results/design_mobile_robot/`, plus `cost.json`:

- the wall time of one forward evaluation of the objective (the 10 s simulation and
  the peak of the driving force; `DesignProblem.value`) and of one evaluation with its
  gradient (`DesignProblem.value_and_grad`, reverse mode through Diffrax's
  checkpointed adjoint), medians of `--repeats` warm calls, and their ratio
  (issue 5: at most 5);
- the compile times of both;
- the machine's load average (this 2-core machine is shared; timings vary ±30 %).

Run:  .venv/bin/python experiments/design_mobile_robot.py     (≈ 3–5 min on 2 cores)
"""

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from redundax.optimize import DesignProblem, load_design, optimize_design, write_result

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "experiments" / "results" / "design_mobile_robot"
DESIGN = ROOT / "configs" / "design_mobile_robot.toml"
TARGET_GRADIENT_RATIO = 5.0


def _time(function, *args, repeats: int) -> tuple[float, float, list[float]]:
    start = time.perf_counter()
    jax.block_until_ready(function(*args))
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        times.append(time.perf_counter() - start)
    return first - min(times), statistics.median(times), times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args()

    design = load_design(DESIGN)
    problem = DesignProblem(design)
    z = jnp.zeros(len(design.variables))
    ref = jnp.ones(len(design.objective))
    compile_value, forward, forward_all = _time(problem.value, z, ref, repeats=args.repeats)
    compile_grad, gradient, gradient_all = _time(
        problem.value_and_grad, z, ref, repeats=args.repeats
    )
    ratio = gradient / forward
    print(f"forward evaluation (10 s simulation + peak): {1e3 * forward:.0f} ms median")
    print(f"value and gradient:                          {1e3 * gradient:.0f} ms median")
    print(f"ratio {ratio:.2f} (target ≤ {TARGET_GRADIENT_RATIO:g})")
    print(f"compile: forward {compile_value:.1f} s, gradient {compile_grad:.1f} s")

    def progress(step):
        print(
            f"step {step.step + 1}: J = {step.objective:.6f} x = {np.round(step.x, 6)} "
            f"{'accepted' if step.accepted else 'rejected'}",
            file=sys.stderr,
        )

    result = optimize_design(design, steps=args.steps, on_step=progress, problem=problem)
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_result(result, RESULTS, force=True)
    cost = {
        "design": str(DESIGN.relative_to(ROOT)),
        "forward_s_median": forward,
        "forward_s_all": forward_all,
        "value_and_grad_s_median": gradient,
        "value_and_grad_s_all": gradient_all,
        "gradient_to_forward_ratio": ratio,
        "target_ratio": TARGET_GRADIENT_RATIO,
        "met": ratio <= TARGET_GRADIENT_RATIO,
        "compile_forward_s": compile_value,
        "compile_value_and_grad_s": compile_grad,
        "optimisation": {
            "steps": len(result.history),
            "accepted": len(result.accepted),
            "objective_decrease": result.decrease,
            "peak_drive_force_N": [
                float(result.initial_evaluation.peaks[0]),
                float(result.final_evaluation.peaks[0]),
            ],
            "variables": {
                name: [float(a), float(b)]
                for (name, _), a, b in zip(
                    result.variables, result.initial, result.final, strict=True
                )
            },
            "min_singular_ratio": [
                float(result.initial_evaluation.min_ratio),
                float(result.final_evaluation.min_ratio),
            ],
            "rank": [result.initial_rank, result.final_rank],
            "wall_s": result.history[-1].seconds,
        },
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "jax": jax.__version__,
            "device": str(jax.devices()[0]),
        },
    }
    (RESULTS / "cost.json").write_text(json.dumps(cost, indent=2) + "\n")
    o = cost["optimisation"]
    print(
        f"objective −{100 * o['objective_decrease']:.1f} %, peak driving force "
        f"{o['peak_drive_force_N'][0]:.4f} → {o['peak_drive_force_N'][1]:.4f} N, rank "
        f"{o['rank'][0]} → {o['rank'][1]}; written to {RESULTS}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
