"""The `redundax` command line: parse, load, call the library, write. No physics here.

Each subcommand is one module of this package (`analyze`, `simulate`,
`equilibrium`, `tolerances`, `plot`, `sweep`, `optimize`) that defines its help texts
`SUMMARY` and `DESCRIPTION`, a function `add_arguments(parser)` and a handler
`run(args) -> exit status`; it is
one entry of `COMMANDS`. To add a subcommand, write such a module and add an
entry; `main` does the rest (parsing, error reporting, exit status).

User errors (an invalid configuration, a `ValueError` from the library, a missing
file, an output file that exists) are reported on stderr as one line
`redundax: error: ...`, possibly followed by the full list of problems, with exit
status 2 and never a traceback. A computation that fails (the integrator gives
up) is reported the same way with exit status 1.

Progress messages go to stderr, and only when stderr is a terminal, so that the
standard output of `--json` is exactly one JSON object.

Only the commands that draw import matplotlib (`plot`, and `optimize` when it
writes its figure), when they run. `main` turns on JAX's persistent
compilation cache (`_cache`), which the library never does.
"""

import argparse
import contextlib
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from types import ModuleType

import jax

from . import analyze, equilibrium, optimize, plot, simulate, sweep, tolerances
from ._cache import HELP as _CACHE_HELP, enable_compilation_cache
from ._common import (
    EXIT_FAILURE as EXIT_FAILURE,
    EXIT_INTERRUPTED as EXIT_INTERRUPTED,
    EXIT_OK as EXIT_OK,
    EXIT_USAGE as EXIT_USAGE,
    Command as Command,
    report,
    warn,
)


def _module_command(module: ModuleType) -> Command:
    """The `Command` of a module that defines `SUMMARY`, `DESCRIPTION`,
    `add_arguments(parser)` and `run(args)`."""
    return Command(
        summary=module.SUMMARY,
        description=module.DESCRIPTION,
        add_arguments=module.add_arguments,
        run=module.run,
    )


COMMANDS: dict[str, Command] = {
    "analyze": _module_command(analyze),
    "simulate": _module_command(simulate),
    "equilibrium": _module_command(equilibrium),
    "tolerances": _module_command(tolerances),
    "optimize": _module_command(optimize),
    "sweep": _module_command(sweep),
    "plot": _module_command(plot),
}
"""Subcommand name → `Command`."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="redundax",
        description=(
            "Dynamics of redundantly constrained planar and spatial mechanisms. A "
            "mechanism is described by a TOML configuration file (bodies, pairs, loads, "
            "tracked points; see configs/README.md). Start with: "
            "redundax analyze configs/mobile_robot.toml, then "
            "redundax simulate configs/mobile_robot.toml"
        ),
        epilog=f"Run 'redundax COMMAND --help' for the options of a command. {_CACHE_HELP}",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        sub = commands.add_parser(name, help=command.summary, description=command.description)
        command.add_arguments(sub)
    return parser


EXIT_TERMINATED = 128 + signal.SIGTERM
"""The shell's status for a process stopped by SIGTERM (143)."""


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread: every `finally` runs (a file being
    written is removed, as after Ctrl-C), which Python's default action skips."""


@contextlib.contextmanager
def _terminable():
    """SIGTERM as `_Terminated` while a command runs (main thread, default action
    only: an embedding program's own handler is left alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminate(signum, frame):
        raise _Terminated

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _warnings_as_lines():
    """Python warnings (e.g. what an MJCF import leaves out) as `redundax: warning:`
    lines on stderr, not Python's `file:line: Category: message`."""

    def show(message, category, filename, lineno, file=None, line=None):
        warn(str(message))

    with warnings.catch_warnings():
        warnings.simplefilter("default", UserWarning)  # shown, whatever the caller's filters
        warnings.showwarning = show
        yield


_MEMORY_OPTIONS = {
    "simulate": "lower [simulation] n_save or --memory-budget, or simulate a shorter span",
    "sweep": "lower [sweep] chunk_size (variants simulated at once) or n_save",
    "optimize": "lower [simulation] n_save or t_final of the design study",
}


def _out_of_memory(error: Exception) -> bool:
    text = str(error)
    return "RESOURCE_EXHAUSTED" in text or "Out of memory" in text


def _runtime_error(command: str, error: Exception) -> RuntimeError:
    """One line for an error raised by XLA while running a program."""
    first = (str(error).splitlines() or [type(error).__name__])[0]
    if _out_of_memory(error):
        advice = _MEMORY_OPTIONS.get(command, "make the problem smaller")
        return RuntimeError(f"out of memory while running the computation ({first}); {advice}")
    return RuntimeError(f"the computation failed in XLA: {first}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `redundax` command line.

    Before anything is computed, JAX's persistent compilation cache is turned on in
    `$REDUNDAX_CACHE_DIR` (default `~/.cache/redundax/jax`), unless
    `REDUNDAX_NO_CACHE=1`.

    **Arguments:**

    - `argv`: the arguments after the program name (default: `sys.argv[1:]`).

    **Returns:** the exit status: 0 on success, 2 on a usage error or invalid input,
    1 when a computation fails (the message is on stderr), 130 when interrupted (Ctrl-C).
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error already printed by argparse
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.cache = enable_compilation_cache()
    try:
        with _terminable(), _warnings_as_lines():
            return COMMANDS[args.command].run(args)
    except _Terminated:  # SIGTERM (kill, a batch system's time limit): files cleaned up
        print("redundax: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except (ValueError, OSError, ModuleNotFoundError) as error:  # ConfigError: a ValueError
        report(error)
        return EXIT_USAGE
    except MemoryError as error:  # a budget the run does not fit: says which option
        report(MemoryError(f"out of memory: {error}" if str(error) else "out of memory"))
        return EXIT_USAGE
    except jax.errors.JaxRuntimeError as error:  # from XLA: never a raw traceback
        report(_runtime_error(args.command, error))
        return EXIT_USAGE if _out_of_memory(error) else EXIT_FAILURE
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback (files are written atomically)
        print("redundax: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
