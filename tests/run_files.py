"""Run the test suite one test file per process, two processes at a time (`make test`).

Why not one `pytest` process: every program XLA:CPU compiles keeps its kernels in
memory maps of their own (about three per kernel) for the life of the process, and
`jax.clear_caches()` does not unmap them. The whole suite compiles some 20,000
kernels, more than Linux's default `vm.max_map_count` (65,530) allows, and the
process then dies with a segmentation fault inside the compiler. One process per
file stays far below it, and two at a time use both cores of a small machine (most
of the time goes into compiling, which runs on one thread).

One compilation cache for all of them: each file's process, and the processes it
starts (the command-line tests' `redundax ...`, the notebooks' kernels), gets
`JAX_COMPILATION_CACHE_DIR` = `.pytest_jax_cache/` in the repository (unless the
environment already names one) with no minimum compile time or entry size, so a
program compiled once (the mobile robot's `simulate` run by several command-line
tests, ...) is read back from disk instead of compiled again, in this run and the
next. Programs with host callbacks (`eqx.error_if`, `jax.debug.callback`) are never
written to it (JAX's rule). Entries are keyed by the program, jax/jaxlib versions
and XLA flags, so a stale entry is never used; `make clean` deletes the folder.

LLVM at -O0: the children's XLA_FLAGS get `--xla_backend_optimization_level=0`
(unless they set a level), which halves XLA:CPU's compile time (LLVM's
optimisation passes are most of it) for code that runs a little slower, a good
trade for tests that compile far more than they run. Measured one file at a time on
the 2-core machine (jaxlib 0.9.2, other load 2-5): test_compliance 56 -> 40 s (XLA
backend compile 39 -> 23 s), test_dynamics backend compile 197 -> 108 s. The whole
`make test` of a fresh clone, idle 2-core machine: 649 s wall with 25 files (2026-11-24), where
the last complete run at the default level had taken 1,367 s (under other load of
3-4.5, so not a like-for-like figure); every test passes as before.
`--xla_llvm_disable_expensive_passes=true` changed nothing measurable.
Fusions by XLA:CPU's older (non-MLIR) emitters: `--xla_cpu_use_fusion_emitters=false`
(unless the children's XLA_FLAGS name it). Measured alone on the 2-core machine,
no cache, one script (the robot's 2 s run, Bricard's 1 s run, a jitted gradient
through the robot's 0.5 s run: 106 programs): backend compile 21.1 -> 14.7 s at
-O0 (29.7 -> 25.0 s at the default level), the same results to the last digit and
the runs no slower. Of the other XLA:CPU flags, none took off more than 2 s
(`xla_cpu_enable_concurrency_optimized_scheduler`,
`xla_cpu_copy_insertion_use_region_analysis`, `xla_cpu_parallel_codegen_split_count`,
`xla_cpu_use_thunk_runtime`). With both (and one OpenBLAS thread per process, see
`_environment`), a fresh clone's `time make test` on the idle 2-core machine:
8:17 wall, 475 s of tests (2026-11-25), where the same suite without them had
taken 11:33-12:29 (673-726 s) on the same machine the day before.
Generated code rounds differently at -O0 than at the default level, so a test that
starts a process with XLA_FLAGS of its own must keep these (test_sweep does).

2026-11-27, 40 files (the suite has grown by the generated mechanisms and the
validity tests), empty cache, this machine under no other load: 934–1,031 s of tests,
15:34–17:11 wall, over the 15 minutes CI allows with its set-up; CI measured 990 s. The
cache helped less than it could: JAX never writes a program with host callbacks to it,
and every `simulate` program held two (Diffrax's checks of the save times). Since
then the saved states are written by the solver (`redundax._saving`) and simulation
programs hold none, so files that run the same simulations share them through the
cache; and building a model compiles no program (0.7-2.4 s per process before).

2026-11-28, 42 files (short files in two processes, test_generated alone; the
heaviest tests compile one program where they compiled two): all pass in 910 s wall
(15:10), empty cache, this machine otherwise idle — still above what CI allows with
its set-up. Later that day (43 files, idle, a fresh clone with Python 3.11): 841 s of tests,
14:38 wall with the set-up; with Python 3.12 and 3.13 (jax 0.12.0.1, whose XLA no longer
has the older emitters) 1,108 and 1,202 s of tests, 19:00 and 20:40 wall. `-- --durations=N`
prints each file's slowest tests.

2026-11-28, later (46-47 files, a fresh clone, empty cache, the machine idle): 1,081 s,
1,041 s and 997 s wall, all passing — still over CI's 15 minutes with the set-up. Where the
time goes (JAX's own monitoring events, `jax.monitoring`, one file): tracing ~45 %,
XLA's backend compile ~40 %, lowering to MLIR ~12 %, running the programs under 5 %;
a first `rx.simulate` of the robot compiles 21 programs (the simulation 4.4 s, `decide`
1.6 s, its initial state 0.4 s, fifteen small eager operations ~0.02 s each); Diffrax
asks for the vector field five times while tracing a solve, and it is traced once (a
jitted function). Tried and measured, not kept: `jax_disable_most_optimizations`
(the first robot run 18 -> 27 s: without XLA's fusions more kernels to compile); every
file of a worker in one process (a segmentation fault in the compiler after 516 s, as
before, and no faster); mid-size files grouped (below). The number of distinct programs
the tests compile is the floor, and the large ones dominate: in test_structure.py, 31
programs took 40.6 s of XLA's 41.3 s (the other 52, eager operations between them,
0.7 s). What moves it is fewer large programs (a test that compiles a run eagerly, under
`jit` and under `vmap` pays three) or smaller ones.

2026-11-28, evening (48 files: issue 37's test_statics.py and notebook 07 added; a fresh
clone, empty cache, idle): 974 s and 1,041 s of tests, all passing (the two workers
balanced: the files' times sum to twice the wall time). A census of the whole suite's
compilations (a pytest plugin logging JAX's compile events) put XLA's compile at 963 s
and lowering at 254 s of the ~1,940 worker-seconds; `jit(_simulate)` 96 compiles,
313 s; reverse-mode gradients through Diffrax 20-45 s each are the heaviest single
tests. A third worker (`-j 3`) on the 2-core machine made every file ~1.5x slower.

2026-11-29 (51 files; a fresh clone, empty cache, Python 3.11, the machine idle after
the first six minutes): 1,873 s wall, 3,744 s of files (2,828 s wall the evening before).
Two changes: the run-time type checks (jaxtyping + beartype, `TYPECHECKED`) only in the
short files' process, and fewer programs per test (`tests/compile_census.py` says which
test compiles what). Still over CI's 15 minutes; the largest files now: the joint
coordinates' group 316 s, the short files' first group 351 s, notebooks 342 s, test_block
232 s, docs 222 s.

2026-11-29, later: this machine now runs the same code about 1.7x slower than on
2026-11-28 (commit c033cc4's Bricard run, 0.0875 s median then, 0.161 s now; commit
f1d1e27's test_dynamics.py, 92 s in that day's full run, 163 s alone and idle now), and
CI's figures moved alike (990 s on 2026-11-27, 2,167-2,899 s since). A fresh clone's
`make test PYTHON=python3.13` (jax 0.12.0.1, lineax 0.1.1) took 4,671 s wall under load
~3.7 (other measurements alongside); every file passed but test_statics and notebook 07
(the equilibrium solve, fixed since). Notebook 07 was not compile-bound: its 20,000-draw
Monte Carlo ran 187 s (the nominal self-stresses recomputed per draw, fixed since: 14 s).
Then, with both fixes (146f806), a fresh clone's `make test PYTHON=python3.12` (jax 0.12.0.1),
the machine otherwise idle: all 51 files passed, 2,808 s of tests, 48:10 wall with the set-up.
2026-11-29, a new session: a fresh clone's `make test PYTHON=python3.13` at b619e00 (jax and
jaxlib 0.12.0.1, lineax 0.1.1, equinox 0.13.8, diffrax 0.7.2), under load 4-6 (other test
runs and experiments alongside): all 51 files passed, 4,550 s of tests, 1:17:15 wall.
At e5afa67 (joint coordinates' decisions fixed; property e of test_generated added), a fresh
clone's `make test` with Python 3.11 (jax 0.9.2), the machine otherwise idle: all 51 files
passed, 2,402 s of tests, 41:38 wall with the set-up.

Files that compile the same programs share a process (`TOGETHER`): the joint
coordinates' two files build the same joint models, structures and DCA programs
(measured cold: 129 s as two processes, 105 s as one). So do the twelve short
files (each under ~15 s): every process pays Python's and JAX's start-up and its
own first compilations of the common models (measured: 99 s as twelve processes in
a fresh-clone `make test`, 61 s as one, alone on the machine).

Usage: `python tests/run_files.py [-j N] [--smoke] [FILE ...] [-- PYTEST ARGS]`; with no
FILE, every `tests/test_*.py`; `--smoke`, the subset `SMOKE`. Prints one line per file as
it finishes and, for a file that fails, its whole pytest output; exits with status 1 if
any file failed.
"""

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CACHE = TESTS.parent / ".pytest_jax_cache"
XLA_OPTIMIZATION = "--xla_backend_optimization_level=0"  # see the module docstring
XLA_EMITTERS = "--xla_cpu_use_fusion_emitters=false"  # see the module docstring
# Files that take longest first, so that two workers finish together (measured in a
# fresh-cache `make test` on the 2-core machine, load ~2, 2026-11-27; a group of
# `TOGETHER` goes by its first file; unknown files go after these, in name order).
LONGEST_FIRST = (
    # Measured in a fresh-cache `make test` of a fresh clone on the idle 2-core machine,
    # 2026-11-28 (1,041-1,081 s wall; a group goes by its first file):
    "test_dca_kernel.py",  # with five other short files: 222-229 s
    "test_joint_coordinates.py",  # with test_joint_runs.py: 195-207 s
    "test_validity.py",  # with the other files of issue 34: 140-161 s
    "test_optimize.py",  # with test_cli_simulate.py: 146 s
    "test_statics.py",  # 105 s alone (issue 37), 145 s in a full run
    "test_friction.py",  # issue 38: 235 s in a full run on a machine ~2x slower than above
    "test_plot.py",  # with the force elements' and user mistakes' files: 121-154 s
    "test_block.py",  # 134-147 s
    "test_docs.py",  # every python block of the site's pages: 129-145 s
    "test_notebooks.py",  # 134-144 s
    "test_solvability.py",  # with ten other short files: 122 s
    "test_config_spatial.py",  # with the MJCF files: 93-115 s
    "test_sweep.py",  # 94 s
    "test_dynamics.py",  # 92 s
    "test_generated.py",  # 64-70 s
    "test_design.py",  # 64 s
    "test_hexapod.py",  # issue 39: 66 s under load ~4
    "test_step_projection.py",  # 61 s
    "test_spatial.py",  # 59 s
    "test_structure.py",  # 58 s
    "test_sweep_distributed.py",  # 28 s
    "test_export.py",  # 27 s
    "test_precision.py",  # a float32 process of its own: 27 s
)


TOGETHER = (
    ("test_joint_coordinates.py", "test_joint_runs.py"),
    # The 3-RRR driven in and out of its workspace, in absolute and joint
    # coordinates, and the generated mechanisms (measured as four processes in a
    # `make test` under load ~2: 83 + 83 + 52 + 77 s).
    # test_generated.py runs alone: with it the group's process compiled more
    # kernels than vm.max_map_count allows (a segmentation fault in the compiler or
    # the cache's serialisation, 2026-11-28; module docstring).
    ("test_validity.py", "test_joint_validity.py", "test_issue34_findings.py"),
    # Short files that build the same spatial and imported models (MJCF, spatial
    # TOML files), and those of force elements and user mistakes: each process
    # pays JAX's start-up and its own first compilations of the common models
    # (a fresh-cache `make test`, load ~2: 33 + 33 + 27 + 31 s and 28 + 25 + 31 +
    # 23 + 38 s as separate processes).
    ("test_config_spatial.py", "test_mujoco_compare.py", "test_mjcf.py", "test_cli_imports.py"),
    (
        "test_plot.py",
        "test_forces.py",
        "test_compliance.py",
        "test_compliant_stepping.py",
        "test_user_mistakes.py",
    ),
    # The design problem's file and the command line's simulations (the robot's
    # configuration file): 146 s as one process, 88 + 67 s as two (fresh-clone `make
    # test`, idle, 2026-11-28). Other mid-size files measured slower in one process
    # than apart on the same run (test_dynamics + test_structure 161 s against 92 +
    # 58 s; test_step_projection + test_design + test_export 172 s against 61 + 64 +
    # 27 s; test_spatial + test_sweep_distributed + test_readme 111 s against 59 + 28 +
    # 10 s): a process that has traced and compiled more traces more slowly, which
    # outweighs the programs they share, so they stay apart.
    ("test_optimize.py", "test_cli_simulate.py"),
    # The short files in two processes: as one (fourteen files, 2026-11-28) the
    # process ran out of memory maps (module docstring) near its end.
    (
        "test_dca_kernel.py",
        "test_singularity.py",
        "test_progress.py",
        "test_assembly.py",
        "test_natural.py",
        "test_paths.py",
    ),
    (
        "test_solvability.py",
        "test_qr.py",
        "test_block_pattern.py",
        "test_models.py",
        "test_cli.py",
        "test_config.py",
        "test_batch.py",
        "test_data.py",
        "test_api_mistakes.py",
        "test_citation.py",
        "test_release.py",
        "test_door.py",
    ),
)
"""Files run in one process, in this order (the group takes its first file's place)."""


TYPECHECKED = frozenset(TOGETHER[-1])  # the twelve short files of the last group
"""Files whose process checks redundax's signatures at run time (jaxtyping's import
hook with beartype, `--jaxtyping-packages=redundax,beartype.beartype`): every
annotated function's arguments and results, shapes included, on every call. The
short files that call the public functions of every part (models, configuration
files, the solvability analysis, the command line, batches, the one `simulate` door
on every path). Not every file: the hook made `import redundax` take 12-17 s instead
of 3 s and a first `simulate` of the mobile robot (compilation read from the cache,
so tracing and lowering) 18-25 s instead of 15-16 s (2026-11-29, the 2-core machine
under load ~3), in each of the suite's ~20 processes."""
TYPECHECK = "--jaxtyping-packages=redundax,beartype.beartype"


SMOKE = (
    ("test_readme.py", "test_release.py", "test_door.py"),
    (
        "test_dynamics.py::test_methods_give_the_same_motion",
        "test_compliant_stepping.py::test_first_order_convergence_to_the_rigid_pendulum",
        "test_sweep.py::test_batched_simulations_equal_single_ones",
        "test_design.py::test_unique_reaction_gradient_four_bar",
    ),
)
"""`--smoke`: what CI runs on the newest Python beside the whole suite on the default
one (`.ci/run`; issue 40): the README's example; the release checks (the API surface,
the site under `strict`, the wheel in a fresh environment); Bricard through the one
door (absolute, joint-coordinate and González runs) and eager ≡ `jit` ≡ `vmap` of the
joint and González paths; the robot's 10 s run by the null-space method and by three
eliminations, against each other; González's stepper against the rigid pendulum; one
sweep against single runs; one gradient against central differences. Two processes.
(Eager ≡ `jit` ≡ `vmap` on each absolute solver path, `test_paths.py`, and a joint run
under `grad`, `test_joint_runs.py`, ran here too until 2026-11-28: 75 s of the subset's
time, for checks the default interpreter's suite makes.)"""


def _order(files: list[Path]) -> list[tuple[Path, ...]]:
    """The files in groups of one (or of `TOGETHER`), longest first."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    files = sorted(files, key=lambda f: (rank.get(f.name, len(rank)), f.name))
    partner = {name: group for group in TOGETHER for name in group}
    groups, seen = [], set()
    for f in files:
        if f in seen:
            continue
        members = [g for g in files if g.name in partner.get(f.name, (f.name,))]
        members.sort(key=lambda g: partner.get(f.name, (f.name,)).index(g.name))
        seen.update(members)
        groups.append(tuple(members))
    return groups


def _xla_knows(flag: str) -> bool:
    """Whether this jaxlib's XLA accepts `flag` (an unknown flag in XLA_FLAGS aborts
    the process): a probe of under a second, so that a newer jaxlib without it
    still runs the tests, only slower."""
    env = {**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    probe = [sys.executable, "-c", "import jax; jax.devices()"]
    return subprocess.run(probe, env=env, capture_output=True).returncode == 0


def _environment() -> dict[str, str]:
    """The children's environment: this one, with the shared compilation cache (an
    environment that already sets one of these variables keeps its value)."""
    env = dict(os.environ)
    env.setdefault("JAX_COMPILATION_CACHE_DIR", str(CACHE))
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    env.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
    # The command line's own cache setting (tests/conftest.py sets the same).
    env.setdefault("REDUNDAX_CACHE_DIR", env["JAX_COMPILATION_CACHE_DIR"])
    # jaxlib 0.9 logs two ERROR lines (~3 kB) for every program it loads from the
    # cache (CPU tuning flags taken for missing features; jax-ml/jax#38445) and
    # loads it all the same: only fatal C++ messages, as `redundax` itself does.
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # One OpenBLAS thread per process: jaxlib's LAPACK calls (Cholesky, QR, SVD) go
    # to SciPy's OpenBLAS, whose threads spin while they wait for a core; with two
    # processes on two cores they wait for each other. Measured on the 2-core machine,
    # test_block's ten-loop partitioning test twice at once: 173 s each with
    # OpenBLAS's default threads, 27 s each with one (alone: 20 s either way).
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    flags = env.get("XLA_FLAGS", "")
    if "xla_backend_optimization_level" not in flags:  # a level set by hand stays
        flags = f"{flags} {XLA_OPTIMIZATION}".strip()
    if "xla_cpu_use_fusion_emitters" not in flags and _xla_knows(XLA_EMITTERS):
        flags = f"{flags} {XLA_EMITTERS}".strip()
    env["XLA_FLAGS"] = flags
    return env


def _run(
    files: tuple[Path, ...], pytest_args: list[str], env: dict[str, str]
) -> tuple[str, int, float, str]:
    start = time.perf_counter()
    checked = any(Path(str(f).split("::")[0]).name in TYPECHECKED for f in files)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, files)]
        + ([TYPECHECK] if checked else [])
        + pytest_args,
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
    )
    name = " + ".join(f.name for f in files)
    return name, proc.returncode, time.perf_counter() - start, proc.stdout + proc.stderr


def main() -> int:
    argv = sys.argv[1:]
    pytest_args: list[str] = []
    if "--" in argv:
        k = argv.index("--")
        argv, pytest_args = argv[:k], argv[k + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", type=int, default=min(2, os.cpu_count() or 1), metavar="N")
    parser.add_argument("--smoke", action="store_true", help="the smoke subset (SMOKE) only")
    parser.add_argument("files", nargs="*", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        files = [tuple(TESTS / test for test in group) for group in SMOKE]
    else:
        files = _order(args.files or sorted(TESTS.glob("test_*.py")))
    start = time.perf_counter()
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        env = _environment()
        futures = [pool.submit(_run, f, pytest_args, env) for f in files]
        for future in as_completed(futures):
            name, status, seconds, output = future.result()
            lines = [line for line in output.splitlines() if line.strip()]
            summary = lines[-1] if lines else "(no output)"
            print(f"{name:<28} {seconds:7.1f} s  {summary}", flush=True)
            if any(a.startswith("--durations") for a in pytest_args):
                # pytest's table of the slowest tests, indented under the file.
                after = output.split("slowest", 1)[1] if "slowest" in output else "\n"
                table = after.split("\n", 1)[1].split("=" * 5, 1)[0]
                for line in table.splitlines():
                    if line.strip():
                        print(f"    {line.strip()}", flush=True)
            # Exit status 5: the file collected no tests (all deselected by -k/-m).
            if status not in (0, 5):
                failed.append(name)
                print(output, flush=True)
    total = time.perf_counter() - start
    verdict = f"FAILED: {', '.join(failed)}" if failed else "all passed"
    count = sum(len(group) for group in files)
    print(f"{count} test files in {total:.0f} s: {verdict}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
