"""What the command line costs before it computes anything: matplotlib is imported
only by the commands that draw, and JAX's persistent compilation cache is on for the
command line only (`REDUNDAX_CACHE_DIR`, `REDUNDAX_NO_CACHE`). Each case runs in a
fresh interpreter, since both are decided when a process starts."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOUR_BAR = ROOT / "configs" / "four_bar.toml"


# What tests/run_files.py sets for the suite's own processes (a shared compilation
# cache, quiet C++ logs): not part of the fresh interpreter these cases are about.
RUNNER = (
    "JAX_COMPILATION_CACHE_DIR",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES",
    "TF_CPP_MIN_LOG_LEVEL",
)


def _environment(**variables: str) -> dict[str, str]:
    """This process's environment without any REDUNDAX_ variable or the test
    runner's (RUNNER), plus `variables`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REDUNDAX_") and k not in RUNNER}
    return {**env, **variables}


def _python(code: str, **variables: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=_environment(**{"REDUNDAX_NO_CACHE": "1", **variables}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _cli(*argv: str, **variables: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "redundax.cli", *argv],
        cwd=ROOT,
        env=_environment(**variables),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_matplotlib_only_where_drawn_and_the_cache_for_the_command_line_only(tmp_path):
    """One fresh interpreter, in order: importing redundax and its command line,
    I/O and sweeps leaves JAX's compilation cache off (the library never turns it
    on, REDUNDAX_NO_CACHE unset); building the parser, `analyze` and `simulate` of
    the four-bar import no matplotlib; the command line's runs fill the cache
    folder. A second interpreter's `analyze` (`python -m redundax.cli`) then reads
    its programs back: the same output, nothing new compiled, nothing on stderr.
    (One process for what were five: each fresh interpreter costs JAX's start-up
    and the four-bar's tracing again.)"""
    cache = tmp_path / "cache"
    out = {name: tmp_path / f"{name}.json" for name in ("analyze", "simulate")}
    code = (
        "import contextlib, sys\n"
        "import jax, redundax, redundax.cli, redundax.io, redundax.sweep\n"
        "assert jax.config.jax_compilation_cache_dir is None, 'the library turned it on'\n"
        "redundax.cli._parser().parse_args(['plot', 'run.npz'])\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported by the parser'\n"
        f"for command, extra, path in (('analyze', [], {str(out['analyze'])!r}),\n"
        f"        ('simulate', ['--t-final', '0.05'], {str(out['simulate'])!r})):\n"
        "    with open(path, 'w') as file, contextlib.redirect_stdout(file):\n"
        f"        status = redundax.cli.main([command, {str(FOUR_BAR)!r}, '--json', *extra])\n"
        "    assert status == 0, (command, status)\n"
        "    assert 'matplotlib' not in sys.modules, f'matplotlib imported by {command}'\n"
    )
    first = _python(code, REDUNDAX_NO_CACHE="", REDUNDAX_CACHE_DIR=str(cache))
    assert first.returncode == 0, first.stderr
    analysis = out["analyze"].read_text()
    assert json.loads(analysis)["dim"] == 2
    assert json.loads(analysis)["rank"] == 8
    assert json.loads(out["simulate"].read_text())["dim"] == 2
    entries = sorted(p.name for p in cache.iterdir())
    assert entries, "no compiled program was cached"
    second = _cli("analyze", str(FOUR_BAR), "--json", REDUNDAX_CACHE_DIR=str(cache))
    assert second.returncode == 0, second.stderr
    assert second.stdout == analysis
    # Programs loaded from the cache leave stderr as it was (no C++ log lines).
    assert second.stderr == ""
    assert sorted(p.name for p in cache.iterdir()) == entries  # nothing new to compile


def test_no_cache_leaves_the_folder_empty(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    proc = _cli(
        "analyze", str(FOUR_BAR), "--json", REDUNDAX_CACHE_DIR=str(cache), REDUNDAX_NO_CACHE="1"
    )
    assert proc.returncode == 0, proc.stderr
    assert list(cache.iterdir()) == []


def test_a_cache_folder_that_cannot_be_made_is_no_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = _cli("analyze", str(FOUR_BAR), "--json", REDUNDAX_CACHE_DIR=str(blocker / "cache"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["rank"] == 8
