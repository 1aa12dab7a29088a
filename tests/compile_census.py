"""A pytest plugin that says where a test file's time goes: `-p compile_census`.

Not loaded by `make test`. With it, JAX logs every tracing, lowering and XLA
compilation (`jax_log_compiles`), and at the end of the session pytest prints, per
test, the number of programs compiled and the seconds spent tracing, lowering and
compiling them, then the programs that took longest. For work on the suite's time
(issue 40): the floor of a test is the programs it compiles, not what they run.

    python tests/run_files.py tests/test_sweep.py -- -p compile_census -s
    .venv/bin/python -m pytest -p compile_census -s tests/test_sweep.py   # one process

Programs read back from the persistent cache are traced and lowered but not
compiled: a second run with the cache warm shows what tracing and lowering cost.
"""

import collections
import logging
import re

import jax
import pytest

_PATTERN = re.compile(
    r"Finished (tracing \+ transforming|jaxpr to MLIR module conversion|XLA compilation of) "
    r"(.*?) (?:for .*? )?in ([0-9.e+-]+) sec"
)
_KIND = {"tracing + transforming": "trace", "jaxpr to MLIR module conversion": "lower"}
_records: list[tuple[str, str, str, float]] = []
_current = ["<collection>"]


class _Handler(logging.Handler):
    def emit(self, record):
        match = _PATTERN.search(record.getMessage())
        if match:
            kind = _KIND.get(match.group(1), "compile")
            _records.append((_current[0], kind, match.group(2), float(match.group(3))))


def pytest_configure(config):
    jax.config.update("jax_log_compiles", True)
    handler = _Handler(level=logging.DEBUG)
    for name in ("jax._src.dispatch", "jax._src.interpreters.pxla", "jax._src.pjit", "jax"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False  # the census, not a wall of log lines


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    _current[0] = item.nodeid + " (setup)"
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _current[0] = item.nodeid
    yield


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    per_test = collections.defaultdict(lambda: collections.Counter())
    programs = collections.Counter()
    compiled = collections.Counter()
    for test, kind, name, seconds in _records:
        per_test[test][kind] += seconds
        if kind == "compile":
            per_test[test]["programs"] += 1
            compiled[name] += 1
        programs[name] += seconds
    write("compile census: per test, programs compiled and seconds tracing/lowering/compiling")
    rows = sorted(
        per_test.items(), key=lambda kv: -sum(v for k, v in kv[1].items() if k != "programs")
    )
    for test, c in rows[:40]:
        total = c["trace"] + c["lower"] + c["compile"]
        write(
            f"  {total:7.1f} s  {int(c['programs']):4d} programs  trace {c['trace']:6.1f}  "
            f"lower {c['lower']:6.1f}  compile {c['compile']:6.1f}  {test}"
        )
    write("compile census: the programs that took longest (all tests; times compiled)")
    for name, seconds in programs.most_common(25):
        write(f"  {seconds:7.1f} s  x{compiled[name]:<3d} {name}")
