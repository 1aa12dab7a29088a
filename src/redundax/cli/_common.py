"""What every subcommand of `redundax` shares: the command record, exit statuses,
error reporting, progress lines and argument types."""

import argparse
import contextlib
import dataclasses
import math
import sys
import threading
import time
from collections.abc import Callable

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # the shell's status for a process stopped by Ctrl-C (SIGINT)


@dataclasses.dataclass(frozen=True)
class Command:
    """One subcommand of `redundax`.

    **Attributes:**

    - `summary`: one line, shown in `redundax --help`.
    - `description`: the text of `redundax COMMAND --help`.
    - `add_arguments`: adds the subcommand's arguments to its parser.
    - `run`: the handler; takes the parsed arguments, prints its results on stdout
      and returns the exit status.
    """

    summary: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def config_argument(parser: argparse.ArgumentParser) -> None:
    """The positional argument CONFIG, a mechanism configuration."""
    parser.add_argument(
        "config",
        metavar="CONFIG",
        help="a mechanism configuration (TOML), e.g. configs/mobile_robot.toml, in the "
        "format of configs/README.md; or an MJCF (.xml) or URDF (.urdf) model, compiled "
        "by MuJoCo (pip install 'redundax[mjcf]'), e.g. configs/mjcf/four_bar_connect.xml",
    )


def positive_float(text: str) -> float:
    """An argument type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def unit_interval(text: str) -> float:
    """An argument type: a number strictly between 0 and 1 (a relative tolerance)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number between 0 and 1 (exclusive), got {text!r}"
        ) from None
    if not 0.0 < value < 1.0:
        why = (
            "a relative tolerance of 1 or more counts every pivot as zero"
            if value >= 1.0
            else "a relative tolerance must be positive"
        )
        raise argparse.ArgumentTypeError(
            f"expected a number between 0 and 1 (exclusive), got {text!r}: {why}"
        )
    return value


def check_out(option: str, check: Callable, *args):
    """`check(*args)` (a check of an output path, before anything is computed), with
    the option that named the path in front of its message: `--out: d.npz: is a
    directory, ...`. A `FileExistsError` (refused without `--force`, which the
    message says) is passed on as it is."""
    try:
        return check(*args)
    except FileExistsError:
        raise
    except OSError as error:
        raise type(error)(f"{option}: {_os_message(error)}") from None
    except ValueError as error:
        if type(error) is not ValueError:
            raise
        raise ValueError(f"{option}: {error}") from None


def _os_message(error: OSError) -> str:
    """The text of an `OSError`, `PATH: what` also for one raised by the OS (`[Errno
    21] Is a directory: 'PATH'`)."""
    if error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror.lower()}"
    return str(error)


PROGRESS_AFTER = 30.0
"""Seconds before the first line of `heartbeat`: a short run prints none."""

PROGRESS_INTERVAL = 10.0
"""Seconds between two lines of `heartbeat` (stderr not a terminal)."""


class Status:
    """What a long command is doing, for the lines of `heartbeat`: `text`, set
    by the command as it goes (e.g. `t = 3.2 s of 20 s, 512 steps`), is read by
    the heartbeat's thread."""

    text: str = ""


@contextlib.contextmanager
def heartbeat(what: str):
    """While the block runs with stderr not a terminal (a log file, a batch job:
    no progress bar there), after `PROGRESS_AFTER` s one line every
    `PROGRESS_INTERVAL` s of wall time,
    `redundax: <what>: <n> s elapsed[, <status>]`, from a thread that reads no
    computed value: the block gets a `Status` whose `text` it keeps current
    (the compiled programs stay free of host callbacks, so the compilation cache
    keeps them)."""
    status = Status()
    if sys.stderr.isatty():
        yield status
        return
    stop = threading.Event()
    start = time.perf_counter()

    def beat():
        if stop.wait(PROGRESS_AFTER):
            return
        while True:
            elapsed = time.perf_counter() - start
            line = f"redundax: {what}: {elapsed:.0f} s elapsed"
            text = status.text
            print(line + (f", {text}" if text else ""), file=sys.stderr, flush=True)
            if stop.wait(PROGRESS_INTERVAL):
                return

    thread = threading.Thread(target=beat, name="redundax-heartbeat", daemon=True)
    thread.start()
    try:
        yield status
    finally:
        stop.set()
        thread.join()


def progress(message: str) -> None:
    """A progress line on stderr, only for a person watching a terminal."""
    if sys.stderr.isatty():
        print(f"redundax: {message}", file=sys.stderr, flush=True)


def warn(message: str) -> None:
    """A warning on stderr, terminal or not: `redundax: warning: ` and the message."""
    print(f"redundax: warning: {message}", file=sys.stderr, flush=True)


def report(error: Exception) -> None:
    """An error on stderr: `redundax: error: ` and its first line, then the others."""
    lines = str(error).splitlines() or [type(error).__name__]
    print(f"redundax: error: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(line, file=sys.stderr)


def draw_bar(progress: float, done: bool = False) -> None:
    """One progress bar on stderr, redrawn in place (the line ends in a carriage
    return until the last one, which ends the line)."""
    width = 30
    filled = int(round(width * min(max(progress, 0.0), 1.0)))
    bar = "#" * filled + "-" * (width - filled)
    line = f"redundax: [{bar}] {100 * progress:5.1f} % of t_final"
    print(line, end="\n" if done else "\r", file=sys.stderr, flush=True)
