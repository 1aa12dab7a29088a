"""The `redundax` command line: parse, load, call the library, write. No physics here.

Each subcommand is one entry of [`COMMANDS`][]: its help texts, a function that adds
its arguments, and a handler `(args) -> exit status`. To add a subcommand
(`simulate`, `optimize`, `sweep`, `plot`, ...), write those two functions and add an
entry; `main` does the rest (parsing, error reporting, exit status).

User errors (an invalid configuration, a `ValueError` from the library, a missing
file) are reported on stderr as one line `redundax: error: ...`, possibly followed
by the full list of problems, with exit status 2 and never a traceback.
"""

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence

import jax

from . import analyze_solvability
from .io.config import load_config

# The command line always works in float64 (the library import also enables it).
jax.config.update("jax_enable_x64", True)

EXIT_OK = 0
EXIT_USAGE = 2


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


def _config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config",
        metavar="CONFIG",
        help="a mechanism configuration (TOML), e.g. configs/mobile_robot.toml; "
        "the format is described in configs/README.md",
    )


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _add_analyze_arguments(parser: argparse.ArgumentParser) -> None:
    _config_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the table: n, m, h, rank, redundancy, dof "
        "and, for every pair, its rows (1-based), whether its reaction and its multipliers "
        "are unique, and the norm of B_X",
    )
    parser.add_argument(
        "--rtol",
        type=_positive_float,
        default=None,
        metavar="X",
        help="relative tolerance of the rank decision: a pivot of the QR factorisation "
        "counts as zero below X times the largest one (default: 2 · eps · max(rows, n), "
        "about 1e-14 for the mobile robot)",
    )


def _analyze(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    report = analyze_solvability(config.model, config.state.q, config.state.t, rtol=args.rtol)
    if args.json:
        print(json.dumps(report.to_dict()))
    else:
        print(f"{config.name} ({config.path}), initial configuration at t = 0 s\n")
        print(report)
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "analyze": Command(
        summary="rank, degree of redundancy and reaction uniqueness of a mechanism",
        description=(
            "Load the mechanism of CONFIG at its initial configuration and analyse its "
            "constraint matrix C = [Φ_q; Ψ] (holonomic rows first, then Pfaffian rows, "
            "each in the order of the file): its rank, the degree of redundancy "
            "p = rows − rank, the mobility n − rank, and for every pair whether its "
            "reaction is uniquely determined (B_X = 0, Wojtyra & Frączek 2013). "
            "Redundant constraints make some reactions indeterminate in a rigid model; "
            "this tells you which."
        ),
        add_arguments=_add_analyze_arguments,
        run=_analyze,
    ),
}
"""Subcommand name → [`Command`][]."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="redundax",
        description=(
            "Dynamics of redundantly constrained planar mechanisms. A mechanism is "
            "described by a TOML configuration file (bodies, pairs, loads, tracked "
            "points; see configs/README.md). Start with: "
            "redundax analyze configs/mobile_robot.toml"
        ),
        epilog="Run 'redundax COMMAND --help' for the options of a command.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        sub = commands.add_parser(name, help=command.summary, description=command.description)
        command.add_arguments(sub)
    return parser


def _report(error: Exception) -> None:
    lines = str(error).splitlines() or [type(error).__name__]
    print(f"redundax: error: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(line, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `redundax` command line.

    **Arguments:**

    - `argv`: the arguments after the program name (default: `sys.argv[1:]`).

    **Returns:** the exit status: 0 on success, 2 on a usage error or invalid input
    (the message is on stderr).
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error already printed by argparse
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return COMMANDS[args.command].run(args)
    except (ValueError, OSError) as error:  # ConfigError is a ValueError
        _report(error)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
