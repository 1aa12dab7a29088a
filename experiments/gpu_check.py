"""The GPU check: the three batch and scaling benchmarks on one CUDA device, in ≤ 8 minutes.

Run when a GPU is lent (the device machine has JAX with CUDA, Diffrax, Equinox, Lineax,
Optimistix and Optax; redundax is taken from `src/`):

    PYTHONPATH=src python experiments/gpu_check.py [--out-dir DIR]

Runs, one after the other, each in its own process with its own time limit (a
benchmark that overruns is stopped and the check goes on; its JSON says what it
finished where the benchmark writes as it goes):

- `bench_batch.py --device gpu`: the mobile robot's 10 s manoeuvre, 10,000 variants
  first (issue 5's target: < 60 s warm), then batches 1, 16, 256, 4096;
- `bench_scaling.py`: µs per right-hand side of the block-sparse and dense paths for
  spatial A02 chains and spherical pendulum chains, N = 2 and 8, and the block solver
  under `vmap` at batch 1, 256, 4096;
- `bench_dca.py`: the divide-and-conquer algorithm against the dense joint-space solve
  and the absolute path, N = 2 and 8, and under `vmap` at batch 1, 256, 4096.

The sizes are small because on the GPU every size compiles for 5–15 s and one
right-hand side is launch-bound (2026-11-27, H200: N = 2, 8, 32 with the sizes' other
families did not finish in 170 s; `results/gpu_check.json` holds what they printed).

Writes `experiments/results/{bench_batch,bench_scaling,bench_dca}/gpu.json` (or under
`--out-dir`) and `gpu_check.json` beside them: the device (name, driver, memory), the
versions, and for each benchmark its exit status, wall time and the tail of its output.
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
# (name, arguments, time limit in seconds): together ≤ 8 minutes.
BENCHMARKS = (
    ("bench_batch", ["--device", "gpu", "--repeats", "2", "--no-profile", "--max-seconds", "150"], 210),
    ("bench_scaling", ["--sizes", "2,8", "--dense-max", "8", "--batches", "1,256,4096"], 150),
    ("bench_dca", ["--sizes", "2,8", "--dense-max", "8", "--batches", "1,256,4096"], 150),
)  # fmt: skip


def _nvidia_smi() -> str | None:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=False,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", default=str(HERE / "results"))
    args = parser.parse_args()
    out_dir = pathlib.Path(args.out_dir)
    env = {**os.environ, "JAX_PLATFORMS": "cuda", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE.parent / "src"), str(HERE), env.get("PYTHONPATH", "")]
    )
    record = {
        "what": __doc__.splitlines()[0],
        "gpu": _nvidia_smi(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "benchmarks": {},
    }
    probe = subprocess.run(
        [sys.executable, "-c", "import jax, jaxlib; print(jax.__version__, jaxlib.__version__, jax.devices())"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    record["jax"] = (probe.stdout + probe.stderr).strip()[-2000:]
    print(record["gpu"], record["jax"], flush=True)
    for name, extra, limit in BENCHMARKS:
        out = out_dir / name / "gpu.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, str(HERE / f"{name}.py"), *extra, "--out", str(out)]
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, env=env, timeout=limit, check=False
            )
            rc, output = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as stopped:
            rc = "timed out"
            output = "".join(
                part.decode() if isinstance(part, bytes) else (part or "")
                for part in (stopped.stdout, stopped.stderr)
            )
        wall = time.perf_counter() - start
        record["benchmarks"][name] = {
            "command": " ".join(command[1:]),
            "time_limit_s": limit,
            "exit": rc,
            "wall_s": round(wall, 1),
            "wrote": out.exists(),
            "output_tail": output[-3000:],
        }
        print(f"{name}: exit {rc} in {wall:.0f} s\n{output[-1500:]}", flush=True)
        (out_dir / "gpu_check.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
