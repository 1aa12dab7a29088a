"""`redundax sweep SWEEP --out DIR`: the command line of [`redundax.sweep`][], whose
docstring describes sweeps."""

import argparse
import contextlib
import dataclasses
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
from jax.experimental import multihost_utils

from ..io.config import ConfigError, load_config
from ..sweep import (
    MAX_VARIANTS,
    Progress,
    load_sweep,
    read_sweep,
    run_sweep,
    sweep_mechanism,
)
from ..sweep._file import swept_addresses
from ..sweep._store import check_out, plan_sweep
from ._common import EXIT_INTERRUPTED, EXIT_USAGE, check_out as _check_out, positive_float

SUMMARY = "solvability and simulation of a grid or random sample of parameter variants"
DESCRIPTION = (
    "Evaluate every variant of a mechanism described by the sweep file SWEEP (a [sweep] "
    "table naming the mechanism's configuration, the parameters and their values; see "
    "configs/README.md, Sweeps): the solvability analysis at its initial configuration "
    "(rank, degree of redundancy, which reactions are unique) and/or a simulation "
    "(success, final tracked points, largest constraint violation, rank along the "
    "motion). Variants are evaluated chunk by chunk over every device of the process "
    "(on a CPU one after another, each the run 'redundax simulate' makes of it; on a GPU "
    "with jax.vmap). Each chunk is written to OUT/chunks/ as soon as it is done: an "
    "interrupted sweep (Ctrl-C, kill) resumes where it stopped when the same command is "
    "run again. "
    "OUT/sweep.npz holds every result, OUT/summary.json the variants whose rank, "
    "solvability or simulation differs from the nominal model's. Exit status: 0 when "
    "the sweep is complete, 2 on invalid input, 130 when interrupted. On a machine "
    "without accelerators the sweep uses every core: it starts one worker process per "
    "core (one CPU device and one OpenBLAS thread each; at most one per 64 simulations "
    "or 1024 analyses), which divide the chunks among them (the same files as one "
    "process), then combines them and prints the summary; --processes N chooses the "
    "number (1: this process alone). Several processes "
    "(one per host of a cluster, or several on one machine) run one sweep together when "
    "each is started with the same SWEEP, --out (a directory they all share) and "
    "--coordinator, and its own --process-id: the missing chunks are divided among them, "
    "each process writes its own, and process 0 writes the combined files (the same "
    "bytes as one process with the same --chunk-size) and prints the summary."
)

JOIN_TIMEOUT = 300.0
"""Default of `--join-timeout` [s]: how long the processes of a run wait for each other
to start (JAX's own default)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax sweep`."""
    parser.add_argument(
        "sweep", metavar="SWEEP", help="a sweep file (TOML), e.g. configs/sweep_mobile_robot.toml"
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="output directory (required unless --list-parameters); an unfinished run of "
        "the same sweep there is resumed",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        default=None,
        metavar="N",
        help="variants per chunk (default: [sweep] chunk_size, else that of the run being "
        "resumed, else 64 simulations or 1024 analyses per CPU device, more on GPUs, and "
        "no more than each process's share of the variants)",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        metavar="N",
        help="local processes that share the sweep, one CPU device and one core each "
        "(default: one per core, no more than one per 64 simulations or 1024 analyses, "
        "where JAX has no accelerator and XLA_FLAGS sets no device count; 1: this "
        "process alone, on every device it has). The files are those of one process with "
        "the same --chunk-size. Not with --num-processes",
    )
    parser.add_argument(
        "--t-final",
        type=positive_float,
        default=None,
        metavar="T",
        help="end time of the simulations in s",
    )
    parser.add_argument(
        "--force", action="store_true", help="discard the results of another sweep in DIR"
    )
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument(
        "--list-parameters",
        action="store_true",
        help="list the parameter addresses of the mechanism (with their nominal values) and exit",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    group = parser.add_argument_group(
        "several processes started by hand (a cluster)",
        "Start the same command in every process, each with its own --process-id "
        "(jax.distributed.initialize; every device of every process is used). On one "
        "machine, --processes needs none of this.",
    )
    group.add_argument(
        "--num-processes",
        type=int,
        default=None,
        metavar="N",
        help="the number of processes of the run",
    )
    group.add_argument(
        "--process-id",
        type=int,
        default=None,
        metavar="K",
        help="this process's number, 0 to N-1; process 0 also hosts the coordinator",
    )
    group.add_argument(
        "--coordinator",
        default=None,
        metavar="HOST:PORT",
        help="the address of process 0, where the others reach it (default: "
        "$JAX_COORDINATOR_ADDRESS); process 0 listens on PORT on every interface",
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # I/N, internal
    group.add_argument(
        "--join-timeout",
        type=positive_float,
        default=JOIN_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for every process to join (default {JOIN_TIMEOUT:g})",
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `sweep` to the subparsers of `redundax` (the same help texts as `COMMANDS`)."""
    parser = subparsers.add_parser("sweep", help=SUMMARY, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def _list_parameters(path: Path) -> int:
    try:
        mechanism = sweep_mechanism(path)
    except ConfigError as error:
        if error.key == "mechanism":  # a sweep file whose mechanism file is missing
            raise
        mechanism = path  # a mechanism configuration itself
    config = load_config(mechanism)
    targets = swept_addresses(config.model, config.state)
    width = max(len(name) for name in targets)
    print(f"parameters of {config.name} ({mechanism}), nominal values:")
    for name, target in targets.items():
        print(f"  {name:<{width}}  {target.nominal: .10g} {target.unit}")
    return 0


def _coordinator(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[v6 address]:PORT` too) as (host, port), or a ValueError."""
    host, _, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--coordinator: expected HOST:PORT (e.g. node0:8476), got {text!r}")
    return host, int(port)


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2.0):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send what is written to file descriptor 1 to stderr meanwhile: the Gloo
    library of JAX's CPU collectives prints a line there when its processes
    connect, and the standard output of `--json` is one JSON object."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _join(args: argparse.Namespace) -> None:
    """Join a run of several processes (`jax.distributed.initialize`) if asked to.

    Must run before JAX starts its devices. JAX ends a process that waits for the
    others past its own timeout with a fatal error and a C++ stack trace, so a
    timer of ours ends it first, with one line naming the option.
    """
    n, k = args.num_processes, args.process_id
    if n is None:
        if k is not None or args.coordinator is not None:
            raise ValueError(
                "--process-id/--coordinator: give --num-processes N too (a run of N processes)"
            )
        return
    if n < 1:
        raise ValueError(f"--num-processes: expected a positive integer, got {n}")
    if k is None:
        raise ValueError(f"--process-id: required with --num-processes (0 to {n - 1})")
    if not 0 <= k < n:
        raise ValueError(f"--process-id: expected 0 to {n - 1} (--num-processes {n}), got {k}")
    if n == 1:
        return
    address = args.coordinator or os.environ.get("JAX_COORDINATOR_ADDRESS")
    if not address:
        raise ValueError(
            "--coordinator: required with --num-processes (HOST:PORT of process 0, or set "
            "JAX_COORDINATOR_ADDRESS)"
        )
    host, port = _coordinator(address)
    timeout = args.join_timeout

    def give_up() -> None:
        if k > 0 and not _answers(host, port):
            message = (
                f"--coordinator {address}: nothing answered there within {timeout:g} s "
                "(--join-timeout); start process 0 (--process-id 0) with the same "
                "--coordinator, on that host"
            )
        else:
            message = (
                f"--num-processes {n}: not every process joined at {address} within "
                f"{timeout:g} s (--join-timeout); start the same command with --process-id "
                f"0 to {n - 1}, each once"
            )
        print(f"redundax: error: {message}", file=sys.stderr, flush=True)
        os._exit(EXIT_USAGE)

    timer = threading.Timer(timeout, give_up)
    timer.daemon = True
    timer.start()
    # JAX's preemption service takes SIGTERM for itself (a notice it records, the
    # process going on): a sweep stops on SIGTERM as the command line does
    # elsewhere (`redundax: terminated`, exit status 143), the chunks written kept.
    jax.config.update("jax_enable_preemption_service", False)
    try:
        jax.distributed.initialize(
            address,
            n,
            k,
            # Longer than ours, so that our timer speaks first.
            initialization_timeout=math.ceil(timeout) + 60,
            shutdown_timeout_seconds=math.ceil(timeout),
        )
        with _stdout_to_stderr():
            multihost_utils.sync_global_devices("redundax sweep: joined")
    except RuntimeError as error:
        first = (str(error).splitlines() or [type(error).__name__])[0]
        # jaxlib's words when process 0 cannot listen on the port.
        busy = k == 0 and "RPC server" in first
        hint = f"; process 0 listens on port {port}: is another program using it?" if busy else ""
        raise ValueError(
            f"--coordinator {address}: could not join the run: {first}{hint}"
        ) from None
    finally:
        timer.cancel()


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _local_processes(args: argparse.Namespace, sweep, asked: int | None) -> tuple[int, int] | None:
    """`(processes, chunk size)` of a run of local processes (`--processes N`, or one
    per core by default), or None where this process runs the sweep alone.

    By default only where JAX has no accelerator (one process uses every device of
    an accelerator) and `XLA_FLAGS` sets no CPU device count (devices chosen by
    hand), one process per core and no more than the chunks this process alone
    would compute (its default chunk: 64 simulations, 1024 analyses), so that each
    process has at least that much to do for the program it compiles itself.
    Never more processes than chunks still to compute. The chunk size is fixed
    here, for all of them (the default: no more than each one's share of the
    variants, so that every process gets work).
    """
    if asked is None and (
        "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", "")
        or jax.default_backend() != "cpu"
    ):
        return None
    cpu = jax.local_devices(backend="cpu")[:1]
    options = {"chunk_size": args.chunk_size, "force": args.force, "devices": cpu}
    wanted = asked
    if wanted is None:
        wanted = min(_cores(), plan_sweep(sweep, args.out, **options).pending)
    if wanted < 2:
        return None
    plan = plan_sweep(sweep, args.out, processes=wanted, **options)
    count = min(wanted, plan.pending)
    return (count, plan.chunk_size) if count >= 2 else None


def _child_environment() -> dict[str, str]:
    """The environment of a local process: one CPU device (`XLA_FLAGS`, the
    user's flags kept), one OpenBLAS thread (unless the user set a number: jaxlib's
    LAPACK calls go to SciPy's OpenBLAS, whose threads spin while they wait for a
    core, so two processes on two cores wait for each other), CPU only, and this
    redundax importable first."""
    env = dict(os.environ)
    flags = [
        flag
        for flag in env.get("XLA_FLAGS", "").split()
        if not flag.startswith("--xla_force_host_platform_device_count")
    ]
    env["XLA_FLAGS"] = " ".join([*flags, "--xla_force_host_platform_device_count=1"])
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env["JAX_PLATFORMS"] = "cpu"
    source = str(Path(__file__).resolve().parents[2])  # the folder that holds redundax
    env["PYTHONPATH"] = os.pathsep.join(
        [source, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    return env


def _status(code: int) -> int:
    """A child's exit status as the shell reports it (a signal N: 128 + N)."""
    return 128 - code if code < 0 else code


def _run_local_processes(args: argparse.Namespace, sweep, count: int, chunk_size: int) -> int:
    """Run the sweep in `count` local worker processes and return the exit status.

    This process prepares `--out` (the manifest; `--force` applied here), starts
    `redundax sweep SWEEP --out OUT --chunk-size S --worker i/count` for i = 0 ...
    count - 1 (independent processes, no `jax.distributed`: each computes the
    missing chunks k with k mod count = i, with the program one process runs, so
    that the persistent compilation cache serves them all and the files are those
    of one process), waits for them, then combines the chunks and prints the
    summary itself. Worker 0 prints the progress lines (the others are quiet).

    The workers run in sessions of their own, so that Ctrl-C reaches this process
    alone, which passes it on to each of them once (a second Ctrl-C ends them);
    SIGTERM is passed on the same way. Each stops after its chunk in progress.
    Returns the status of the first worker that failed, 130 when interrupted.
    """
    cpu = jax.local_devices(backend="cpu")[:1]
    plan_sweep(sweep, args.out, chunk_size=chunk_size, force=args.force, devices=cpu, start=True)
    command = [
        sys.executable,
        "-m",
        "redundax.cli",
        "sweep",
        str(args.sweep),
        "--out",
        str(args.out),
        "--chunk-size",
        str(chunk_size),
    ]
    if args.t_final is not None:
        command += ["--t-final", repr(args.t_final)]
    if not args.quiet:
        print(
            f"redundax: sweep {sweep.name} in {count} local processes, one CPU device each "
            f"(chunks of {chunk_size}; --processes 1 for this process alone); the first "
            "chunk of each compiles",
            file=sys.stderr,
            flush=True,
        )
    env = _child_environment()
    children: list[subprocess.Popen] = []
    try:
        for i in range(count):
            quiet = ["--quiet"] if args.quiet or i > 0 else []
            children.append(
                subprocess.Popen(
                    [*command, "--worker", f"{i}/{count}", *quiet],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,  # Ctrl-C at a terminal reaches us alone
                )
            )
        status = _wait(children)
    except KeyboardInterrupt:
        _signal(children, signal.SIGINT)
        try:
            _wait(children)
        except KeyboardInterrupt:  # a second Ctrl-C: end them now
            _signal(children, signal.SIGKILL)
            _wait(children)
        status = EXIT_INTERRUPTED
    except BaseException:  # SIGTERM (the command line's _Terminated), or our own error
        _signal(children, signal.SIGTERM)
        _wait(children)
        raise
    if status == EXIT_INTERRUPTED:
        print(
            f"\nredundax: sweep interrupted; the finished chunks are in {args.out}/chunks. "
            "Run the same command again to resume.",
            file=sys.stderr,
        )
    if status:
        return status
    # Every chunk is on disk: combined here, nothing to compile.
    return _finish(args, run_sweep(sweep, args.out, chunk_size=chunk_size))


def _signal(children: list[subprocess.Popen], signum: int) -> None:
    for child in children:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)


def _wait(children: list[subprocess.Popen]) -> int:
    """Wait for every child; the exit status of the first that failed, else 0."""
    first = None
    while True:
        codes = [child.poll() for child in children]
        if first is None:
            first = next((_status(c) for c in codes if c is not None and c != 0), None)
        if all(code is not None for code in codes):
            return first or 0
        time.sleep(0.1)


def _printer(quiet: bool, who: str = "") -> Callable[[Progress], None] | None:
    if quiet:
        return None
    tty = sys.stderr.isatty()
    if jax.process_count() > 1:
        who = f" (process {jax.process_index()} of {jax.process_count()})"
    found = 0

    def show(p: Progress) -> None:
        nonlocal found
        rate = ""
        if p.computed and p.elapsed > 0:
            per_chunk = p.elapsed / p.computed
            left = p.left * per_chunk
            rate = f", {per_chunk:.1f} s per chunk, about {left / 60:.1f} min left"
        line = (
            f"redundax: sweep chunk {p.chunk + 1}/{p.chunks}{who}: "
            f"{p.done}/{p.variants} variants{rate}"
        )
        found += p.computed == 0
        if p.computed == 0 and found == p.resumed:
            line += f" ({p.resumed} chunk(s) found on disk)"
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=sys.stderr, flush=True)
        if tty and p.chunk + 1 == p.chunks:
            print(file=sys.stderr)

    return show


def _print_summary(summary: dict[str, Any], data: dict[str, Any], path: Path) -> None:
    s = summary
    print(
        f"{s['name']}: {s['variants']} variants of {', '.join(p['name'] for p in s['parameters'])}"
    )
    nominal = s["nominal"]
    if "rank" in nominal:
        not_unique = [name for name, u in nominal["unique"].items() if not u]
        print(
            f"  nominal: rank {nominal['rank']}, redundancy {nominal['redundancy']}, "
            f"mobility {nominal['dof']}; NOT unique: {', '.join(not_unique) or 'none'}"
        )
        print("  ranks: " + ", ".join(f"{r}: {c} variants" for r, c in s["ranks"].items()))
    if "success" in nominal:
        violation = nominal["max_constraint_violation"]
        print(f"  nominal simulation: max constraint violation {violation:.3g}")
    reasons = {
        "rank": "rank differs from the nominal",
        "uniqueness": "some pair's uniqueness differs",
        "singular_along": "rank C drops along the motion (a singular configuration)",
        "failed": "integration failed",
        "off_constraints": "the motion left its constraints (the variant cannot follow the "
        "prescribed motion, e.g. driven past the end of a joint's travel: the run stopped "
        "there, as `redundax simulate` stops it)",
        "inaccurate_path": "the solver's path, chosen on the nominal mechanism, is predicted "
        "inaccurate for it (simulated alone, e.g. by `redundax simulate`, it takes the right one)",
        "inconsistent": "initial state violates the constraints",
    }
    names = data["parameter_names"].tolist()
    for key, text in reasons.items():
        if key not in s["counts"] or not s["counts"][key]:
            continue
        examples = s["changed"][key][:3]
        shown = "; ".join(
            f"#{i} ("
            + ", ".join(f"{n} = {v:.6g}" for n, v in zip(names, data["values"][i], strict=True))
            + ")"
            for i in examples
        )
        print(f"  {s['counts'][key]} variant(s): {text}, e.g. {shown}")
    for pair, idx in s.get("uniqueness_changed_by_pair", {}).items():
        print(f"    pair {pair}: uniqueness differs in {len(idx)} variant(s)")
    print(f"  {s['counts']['any']} of {s['variants']} variants differ from the nominal model")
    print(f"wrote {path} and {path.parent / 'summary.json'}")


def _load(args: argparse.Namespace):
    sweep = load_sweep(Path(args.sweep))
    if args.t_final is not None:
        sweep = dataclasses.replace(
            sweep, simulation=dataclasses.replace(sweep.simulation, t_final=args.t_final)
        )
    return sweep


def _worker(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 0 <= int(index) < int(count)):
        raise ValueError(f"--worker: expected I/N with 0 <= I < N, got {text!r}")
    return int(index), int(count)


def _finish(args: argparse.Namespace, result: Path) -> int:
    """Print the summary of the combined file `result` (process 0's task)."""
    summary = json.loads((result.parent / "summary.json").read_text())
    if args.json:
        print(json.dumps({**summary, "out": str(result)}))
    else:
        _print_summary(summary, read_sweep(result), result)
    return 0


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax sweep`: returns the exit status."""
    path = Path(args.sweep)
    if args.list_parameters:
        return _list_parameters(path)
    if args.out is None:
        raise ValueError("sweep: --out DIR is required (the directory of the results)")
    if args.chunk_size is not None and not 1 <= args.chunk_size <= MAX_VARIANTS:
        raise ValueError(
            f"argument --chunk-size: expected an integer from 1 to {MAX_VARIANTS:,}, "
            f"got {args.chunk_size:,}"
        )
    processes = getattr(args, "processes", None)
    worker = getattr(args, "worker", None)
    if processes is not None and processes < 1:
        raise ValueError(f"--processes: expected a positive integer, got {processes}")
    by_hand = args.num_processes is not None or args.coordinator is not None
    if by_hand and processes not in (None, 1):
        raise ValueError(
            "--processes: not with --num-processes/--coordinator (a run of several "
            "processes started by hand); give one or the other"
        )
    if worker is not None:
        return _run_worker(args, _worker(worker))
    if not by_hand and args.process_id is None and processes != 1:
        sweep = _load(args)
        _check_out("--out", check_out, args.out, args.force)
        local = _local_processes(args, sweep, processes)
        if local is not None:
            return _run_local_processes(args, sweep, *local)
    else:
        _join(args)  # before anything starts JAX's devices
        sweep = _load(args)
        _check_out("--out", check_out, args.out, args.force)  # before the first progress line
    show = _printer(args.quiet)
    if show is not None:
        processes = (
            f" of {jax.process_count()} processes (this is process {jax.process_index()})"
            if jax.process_count() > 1
            else ""
        )
        print(
            f"redundax: sweep {sweep.name} on {jax.device_count()} device(s){processes} "
            f"({jax.devices()[0].platform}); the first chunk compiles",
            file=sys.stderr,
            flush=True,
        )
    try:
        result = run_sweep(
            sweep, args.out, chunk_size=args.chunk_size, force=args.force, on_chunk=show
        )
    except KeyboardInterrupt:
        if not (args.quiet and jax.process_index() > 0):  # process 0 says it for all
            print(
                f"\nredundax: sweep interrupted; the finished chunks are in {args.out}/chunks. "
                "Run the same command again to resume.",
                file=sys.stderr,
            )
        return EXIT_INTERRUPTED
    if jax.process_index() > 0:
        return 0  # process 0 prints the summary
    return _finish(args, result)


def _run_worker(args: argparse.Namespace, worker: tuple[int, int]) -> int:
    """`--worker I/N`: compute this worker's chunks of a prepared `--out` (a local
    process that `redundax sweep` started); the parent combines and reports."""
    if args.num_processes is not None or args.coordinator is not None or args.force:
        raise ValueError("--worker: not with --num-processes, --coordinator or --force")
    sweep = _load(args)
    show = _printer(args.quiet, f" (process {worker[0]} of {worker[1]})")
    try:
        run_sweep(sweep, args.out, chunk_size=args.chunk_size, on_chunk=show, worker=worker)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED  # the parent says where the finished chunks are
    return 0
