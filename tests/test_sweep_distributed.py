"""Sweeps over several processes (`redundax sweep --num-processes N --process-id K
--coordinator HOST:PORT`, `jax.distributed`): two local CPU processes write the same
`sweep.npz` and `summary.json` bytes as one process, each process writes its own
chunks, a chunk deleted afterwards is the only one computed again, and mistakes in
the options end the command with one line that names the option."""

import argparse
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from redundax import cli
from redundax.cli import sweep as sweep_command

ROOT = Path(__file__).resolve().parents[1]
FOUR_BAR = ROOT / "configs" / "four_bar.toml"

# The four-bar's analysis at 6 variants (3 × 2) and the nominal model: 7 rows in
# chunks of 2, so 4 chunks, two per process. Compiling the analysis is most of the
# time of each process.
SWEEP = """\
[sweep]
mechanism = "{mechanism}"
initial = "project"
chunk_size = 2

[[sweep.parameters]]
name = "pairs.D.point_j.x"
values = [0.9, 1.0, 1.1]

[[sweep.parameters]]
name = "bodies.crank.mass"
values = [0.3, 0.4]
"""
TIMEOUT = 240  # [s] for one command: minutes only if something hangs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment() -> dict[str, str]:
    # This process's XLA flags (tests/run_files.py sets an LLVM level) in every
    # child: code generated with other flags may round differently.
    return {**os.environ, "JAX_PLATFORMS": "cpu"}


def _sweep(*argv: str) -> list[str]:
    return [sys.executable, "-m", "redundax.cli", "sweep", *argv]


def _together(commands: list[list[str]]) -> list[subprocess.CompletedProcess]:
    """Run the commands at the same time; wait for all of them."""
    procs = [
        subprocess.Popen(
            command,
            env=_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    done = []
    try:
        for command, proc in zip(commands, procs, strict=True):
            out, err = proc.communicate(timeout=TIMEOUT)
            done.append(subprocess.CompletedProcess(command, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def _two_processes(path: Path, out: Path) -> list[list[str]]:
    address = f"localhost:{_free_port()}"
    return [
        _sweep(str(path), "--out", str(out), "--json", "--num-processes", "2")
        + ["--process-id", str(k), "--coordinator", address, "--join-timeout", "120"]
        for k in range(2)
    ]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _chunks_written(stderr: str) -> list[int]:
    """The chunks (0-based) a process reports as computed: its progress lines with
    a rate ("s per chunk"), which the chunks found on disk do not have."""
    return [int(m) - 1 for m in re.findall(r"sweep chunk (\d+)/\d+ .*s per chunk", stderr)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One process's run and two processes' run of the same sweep file."""
    folder = tmp_path_factory.mktemp("distributed")
    path = folder / "sweep.toml"
    path.write_text(SWEEP.format(mechanism=FOUR_BAR.as_posix()))
    # The reference in a process of its own too (the same flags and devices), at
    # the same time as the other two.
    one = _sweep(str(path), "--out", str(folder / "one"), "--json")
    procs = _together([one, *_two_processes(path, folder / "two")])
    for proc in procs:
        assert proc.returncode == 0, f"{proc.args}:\n{proc.stderr}"
    return path, folder / "one", folder / "two", procs[1:]


def test_two_processes_write_the_bytes_of_one(runs):
    _, one, two, procs = runs
    assert _sha(two / "sweep.npz") == _sha(one / "sweep.npz")
    assert _sha(two / "summary.json") == _sha(one / "summary.json")
    # Each process computed and wrote two of the four chunks (round robin).
    assert [_chunks_written(proc.stderr) for proc in procs] == [[0, 2], [1, 3]]
    assert sorted(p.name for p in (two / "chunks").iterdir()) == [
        f"chunk-{k:06d}.npz" for k in range(4)
    ]
    # Process 0 prints the summary: exactly one JSON object on its standard output
    # (the line Gloo prints when the processes connect goes to stderr); the other
    # process prints nothing there.
    summary = json.loads(procs[0].stdout)
    assert summary["variants"] == 6 and summary["nominal"]["rank"] == 8
    assert procs[1].stdout == ""


def test_a_deleted_chunk_is_the_only_one_computed_again(runs, tmp_path):
    path, one, two, _ = runs
    out = tmp_path / "resumed"
    (out / "chunks").mkdir(parents=True)
    for name in ("manifest.json", "chunks/chunk-000000.npz", "chunks/chunk-000001.npz"):
        (out / name).write_bytes((two / name).read_bytes())
    (out / "chunks" / "chunk-000003.npz").write_bytes(
        (two / "chunks/chunk-000003.npz").read_bytes()
    )
    kept = {p.name: p.stat().st_mtime_ns for p in (out / "chunks").iterdir()}
    procs = _together(_two_processes(path, out))
    for k, proc in enumerate(procs):
        assert proc.returncode == 0, f"process {k}:\n{proc.stderr}"
        assert "(3 chunk(s) found on disk)" in proc.stderr
    # The one missing chunk goes to process 0; process 1 computes nothing of its own.
    assert [_chunks_written(proc.stderr) for proc in procs] == [[2], []]
    assert {name: (out / "chunks" / name).stat().st_mtime_ns for name in kept} == kept
    assert _sha(out / "sweep.npz") == _sha(one / "sweep.npz")
    assert _sha(out / "summary.json") == _sha(one / "summary.json")


def test_every_process_stops_with_one_line_on_a_mistake(runs, tmp_path):
    """Two runs at once: the processes of one were given different output
    directories (no shared one); process 0 of the other finds another sweep's
    results. Each process stops at once with exit status 2, none waiting for the
    other."""
    path, one, _, _ = runs
    apart = _two_processes(path, tmp_path / "apart")
    apart[1][apart[1].index("--out") + 1] = str(tmp_path / "elsewhere")
    other = [command + ["--chunk-size", "3"] for command in _two_processes(path, one)]
    procs = _together(apart + other)
    assert [proc.returncode for proc in procs] == [2, 2, 2, 2]
    errors = [[line for line in proc.stderr.splitlines() if "error" in line] for proc in procs]
    for lines in errors[:2]:
        assert len(lines) == 1 and lines[0].endswith(
            ": process(es) 1 do not see the manifest that process 0 wrote there; every "
            "process needs the same output directory (a shared file system)"
        )
    assert errors[2] == [
        f"redundax: error: {one}: holds another sweep (its manifest differs in: chunk_size); "
        "use another output directory, or pass --force (force=True) to discard its results"
    ]
    assert errors[3] == [
        f"redundax: error: {one}: process(es) 0 stopped with an error (see their messages)"
    ]


def test_a_missing_coordinator_or_process_is_one_line():
    """Process 1 with nobody at the coordinator's address, and process 0 alone: each
    gives up after --join-timeout with one line (JAX's own timeout would end the
    process with a C++ stack trace, minutes later)."""
    addresses = [f"localhost:{_free_port()}" for _ in range(2)]  # one each: never met
    first, second = _together(
        [
            _sweep(str(FOUR_BAR), "--out", "unused", "--num-processes", "2")
            + ["--process-id", str(k), "--coordinator", address, "--join-timeout", "2"]
            for k, address in zip((1, 0), addresses, strict=True)
        ]
    )
    assert first.returncode == 2 and second.returncode == 2
    assert first.stderr.strip().splitlines() == [
        f"redundax: error: --coordinator {addresses[0]}: nothing answered there within 2 s "
        "(--join-timeout); start process 0 (--process-id 0) with the same --coordinator, "
        "on that host"
    ]
    assert second.stderr.strip().splitlines() == [
        f"redundax: error: --num-processes 2: not every process joined at {addresses[1]} "
        "within 2 s (--join-timeout); start the same command with --process-id 0 to 1, "
        "each once"
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--num-processes", "2", "--process-id", "2", "--coordinator", "localhost:1234"],
            "--process-id: expected 0 to 1 (--num-processes 2), got 2",
        ),
        (["--num-processes", "2"], "--process-id: required with --num-processes (0 to 1)"),
        (
            ["--num-processes", "2", "--process-id", "1", "--coordinator", "node0"],
            "--coordinator: expected HOST:PORT (e.g. node0:8476), got 'node0'",
        ),
        (["--process-id", "1"], "--process-id/--coordinator: give --num-processes N too"),
    ],
)
def test_invalid_process_options_are_named(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("JAX_COORDINATOR_ADDRESS", raising=False)
    status = cli.main(["sweep", str(FOUR_BAR), "--out", str(tmp_path / "out"), *argv])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith(f"redundax: error: {message}"), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_process_options_are_in_the_help():
    parser = argparse.ArgumentParser()
    sweep_command.add_arguments(parser)
    text = parser.format_help()
    for option in ("--num-processes", "--process-id", "--coordinator", "--join-timeout"):
        assert option in text
