"""The `redundax` command line: parse, load, call the library, write. No physics here.

Each subcommand is one entry of [`COMMANDS`][]: its help texts, a function that adds
its arguments, and a handler `(args) -> exit status`. To add a subcommand
(`optimize`, `sweep`, `plot`, ...), write those two functions and add an
entry; `main` does the rest (parsing, error reporting, exit status).

User errors (an invalid configuration, a `ValueError` from the library, a missing
file, an output file that exists) are reported on stderr as one line
`redundax: error: ...`, possibly followed by the full list of problems, with exit
status 2 and never a traceback. A computation that fails (the integrator gives
up) is reported the same way with exit status 1.

Progress messages go to stderr, and only when stderr is a terminal, so that the
standard output of `--json` is exactly one JSON object.
"""

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import diffrax
import jax
import jax.numpy as jnp
import numpy as np

from . import (
    Elimination,
    Model,
    Trajectory,
    analyze_solvability,
    marker_positions,
    optimize,
    plot,
    reaction_history,
    simulate,
    sweep,
)
from .io.config import Config, SimulationOptions, load_config
from .io.results import check_output, component_labels, write_run

# The command line always works in float64 (the library import also enables it).
jax.config.update("jax_enable_x64", True)

EXIT_OK = 0
EXIT_FAILURE = 1
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
        "are unique, the norm of B_X, and whether each labelled reaction component is "
        "unique",
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


def _component_legend(model: Model) -> list[str]:
    """What the per-row flags of each pair type stand for, once per type."""
    legend: dict[str, tuple[str, ...]] = {}
    for pair in model.pairs:
        if pair.components:
            legend.setdefault(pair.kind, pair.components)
    if not legend:
        return []
    width = max(len(kind) for kind in legend)
    return ["reaction components, in row order (the values are -λ of those rows):"] + [
        f"  {kind + ':':<{width + 1}} {', '.join(labels)}" for kind, labels in legend.items()
    ]


def _analyze(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    report = analyze_solvability(config.model, config.state.q, config.state.t, rtol=args.rtol)
    if args.json:
        print(json.dumps({**report.to_dict(), "dim": config.dim}))
    else:
        kind = "spatial" if config.dim == 3 else "planar"
        print(f"{config.name} ({config.path}), {kind}, initial configuration at t = 0 s\n")
        print(report)
        legend = _component_legend(config.model)
        if legend:
            print("\n" + "\n".join(legend))
    return EXIT_OK


def _add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    _config_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the summary: t_final, steps, "
        "max_constraint_violation, final_q, tracked (every marker's global position at "
        "t_final), energy_error (null when a driver prescribes motion), method, unique, "
        "components (per pair, whether each reaction component is unique), ...",
    )
    parser.add_argument(
        "--t-final",
        type=_positive_float,
        default=None,
        metavar="T",
        help="end time in s, overriding [simulation] t_final of CONFIG (default 10 s)",
    )
    parser.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="also write the time histories (t, q, q̇, q̈, tracked points, every pair's "
        "reaction with its unique flag, violations, energy) to FILE, as NPZ or CSV by its "
        "extension (.npz, .csv); an existing FILE is refused unless --force",
    )
    parser.add_argument(
        "--force", action="store_true", help="overwrite the --out file if it exists"
    )


def _progress(message: str) -> None:
    """A progress line on stderr, only for a person watching a terminal."""
    if sys.stderr.isatty():
        print(f"redundax: {message}", file=sys.stderr, flush=True)


def _draw_bar(progress: float, done: bool = False) -> None:
    """One progress bar on stderr, redrawn in place (the line ends in a carriage
    return until the last one, which ends the line)."""
    width = 30
    filled = int(round(width * min(max(progress, 0.0), 1.0)))
    bar = "#" * filled + "-" * (width - filled)
    line = f"redundax: [{bar}] {100 * progress:5.1f} % of t_final"
    print(line, end="\n" if done else "\r", file=sys.stderr, flush=True)


class _StderrProgressBar(diffrax.TextProgressMeter):
    """Diffrax's text progress meter, drawn as one bar on stderr (stdout stays the
    JSON). Used only when stderr is a terminal."""

    @staticmethod
    def _init_bar() -> list[float]:
        _draw_bar(0.0)
        return [0.0]

    @staticmethod
    def _step_bar(bar: list[float], progress: Any) -> None:
        bar[0] = float(np.asarray(progress))
        _draw_bar(bar[0])

    @staticmethod
    def _close_bar(bar: list[float]) -> None:
        _draw_bar(1.0, done=True)


def _summary(
    config: Config,
    options: SimulationOptions,
    trajectory: Trajectory,
    unique: dict[str, bool],
    components: dict[str, dict[str, bool]],
    out: Path | None,
) -> dict[str, Any]:
    """The JSON object of `simulate --json` (DESIGN.md §7, plus extra keys)."""
    position = float(jnp.max(trajectory.position_violation))
    velocity = float(jnp.max(trajectory.velocity_violation))
    tracked = np.asarray(marker_positions(config.model, trajectory.q[-1]))
    energy = np.asarray(trajectory.energy)
    # Prescribed motion does work on the mechanism: its energy is not conserved.
    # Everything else a configuration can hold (every other pair, planar or
    # spatial, knife edges, gravity and constant loads) conserves it.
    energy_error = None if config.rheonomic else float(np.max(np.abs(energy - energy[0])))
    method = options.method
    return {
        "config": str(config.path),
        "mechanism": config.name,
        "dim": config.dim,
        "t_final": float(trajectory.ts[-1]),
        "steps": int(trajectory.num_steps),
        "accepted_steps": int(trajectory.num_accepted_steps),
        "rejected_steps": int(trajectory.num_rejected_steps),
        "saved_states": int(trajectory.ts.shape[0]),
        "max_constraint_violation": max(position, velocity),
        "max_position_violation": position,
        "max_velocity_violation": velocity,
        "initial_correction": [float(x) for x in trajectory.initial_correction],
        "final_q": [float(x) for x in trajectory.q[-1]],
        "final_qd": [float(x) for x in trajectory.qd[-1]],
        "tracked": {
            name: [float(x) for x in tracked[k]]
            for k, name in enumerate(config.model.markers.names)
        },
        "energy_error": energy_error,
        "rheonomic": list(config.rheonomic),
        **options.choices,
        "eliminated_rows": (
            [k + 1 for k in method.eliminated] if isinstance(method, Elimination) else None
        ),
        "rtol": options.rtol,
        "atol": options.atol,
        "unique": unique,
        "components": components,
        "out": None if out is None else str(out),
    }


def _print_summary(summary: dict[str, Any], elapsed: float) -> None:
    s = summary
    print(f"{s['mechanism']} ({s['config']}): simulated 0 → {s['t_final']:g} s in {elapsed:.1f} s")
    method = s["method"]
    if s["eliminated_rows"]:
        method += f" of rows {', '.join(map(str, s['eliminated_rows']))}"
    elif s["eliminated_rows"] is not None:
        method += " (no redundant rows to drop)"
    print(
        f"  method {method}, solver {s['solver']} (rtol {s['rtol']:g}, atol {s['atol']:g}), "
        f"stabilisation {s['stabilisation']}, {s['saved_states']} saved states"
    )
    print(f"  steps: {s['steps']} ({s['accepted_steps']} accepted, {s['rejected_steps']} rejected)")
    print(
        f"  max constraint violation: {s['max_constraint_violation']:.3g} (position "
        f"{s['max_position_violation']:.3g}, velocity {s['max_velocity_violation']:.3g})"
    )
    if any(s["initial_correction"]):
        dq, dqd = s["initial_correction"]
        print(f"  initial state projected: max |Δq| {dq:.3g}, max |Δq̇| {dqd:.3g}")
    if s["energy_error"] is None:
        driven = ", ".join(s["rheonomic"])
        print(f"  energy error: n/a (not conservative: prescribed motion in {driven})")
    else:
        print(f"  energy error: {s['energy_error']:.3g} J (max |E(t) - E(0)|)")
    if s["tracked"]:
        print(f"tracked points at t = {s['t_final']:g} s [m]:")
        width = max(len(name) for name in s["tracked"])
        for name, point in s["tracked"].items():
            print(f"  {name:<{width}}" + "".join(f"  {x: .9f}" for x in point))
    unique = [name for name, u in s["unique"].items() if u]
    other = [name for name, u in s["unique"].items() if not u]
    print(f"unique reactions: {', '.join(unique) or 'none'}")
    if other:
        print(f"NOT unique (the method's choice only): {', '.join(other)}")
    # A pair whose reaction is not unique may still have unique components.
    for name in other:
        determined = [label for label, u in s["components"][name].items() if u]
        if determined:
            print(f"  {name}: unique components {', '.join(determined)}")
    if s["out"] is not None:
        print(f"wrote {s['out']}")


def _simulate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    options = config.simulation
    if args.t_final is not None:
        options = dataclasses.replace(options, t_final=args.t_final)
    out = None
    if args.out is not None:
        try:
            out = check_output(args.out, args.force)
        except FileExistsError:
            raise FileExistsError(
                f"{args.out}: already exists; pass --force to overwrite it"
            ) from None

    start = time.perf_counter()
    _progress(
        f"simulating {config.name} to t = {options.t_final:g} s "
        f"(method {options.choices['method']}; the first run of a mechanism compiles)..."
    )
    trajectory = simulate(
        config.model,
        config.state,
        options.t_final,
        method=options.method,
        solver=options.solver,
        rtol=options.rtol,
        atol=options.atol,
        stabilisation=options.stabilisation,
        projection=options.projection,
        initial_projection=options.initial_projection,
        consistency_tol=config.consistency_tolerance,
        n_save=options.n_save,
        max_steps=options.max_steps,
        throw=False,
        progress_meter=_StderrProgressBar() if sys.stderr.isatty() else diffrax.NoProgressMeter(),
    )
    if trajectory.result != diffrax.RESULTS.successful:
        reason = diffrax.RESULTS[trajectory.result]
        _report(
            RuntimeError(
                f"{config.path}: integration failed at t ≤ {options.t_final:g} s: {reason} "
                f"([simulation] max_steps = {options.max_steps}, rtol = {options.rtol:g})"
            )
        )
        return EXIT_FAILURE
    if not bool(jnp.all(jnp.isfinite(trajectory.q)) & jnp.all(jnp.isfinite(trajectory.qd))):
        _report(RuntimeError(f"{config.path}: integration failed: non-finite q or q̇"))
        return EXIT_FAILURE
    elapsed = time.perf_counter() - start
    _progress(f"integrated in {elapsed:.1f} s, {int(trajectory.num_steps)} steps")

    # Solvability is structural (DESIGN.md §3): decided once, at the initial state.
    q0, t0 = trajectory.q[0], trajectory.ts[0]
    report = analyze_solvability(config.model, q0, t0)
    unique = {
        name: bool(u) for name, u in zip(report.names, np.asarray(report.unique), strict=True)
    }
    row_unique = np.asarray(report.row_unique)
    components = {
        pair.name: {
            label: bool(row_unique[r])
            for label, r in zip(component_labels(pair), pair.rows, strict=True)
        }
        for pair in config.model.pairs
    }
    if out is not None:
        _progress(f"reactions at {trajectory.ts.shape[0]} saved states...")
        history = reaction_history(
            config.model,
            trajectory,
            method=options.method,
            stabilisation=options.stabilisation,
            rank=report.rank,
        )
        write_run(
            out,
            config,
            trajectory,
            history,
            unique=unique,
            component_unique={name: list(flags.values()) for name, flags in components.items()},
            metadata={**options.choices, "t_final": float(trajectory.ts[-1])},
            force=args.force,
        )
        _progress(f"wrote {out}")
    summary = _summary(config, options, trajectory, unique, components, out)
    if args.json:
        print(json.dumps(summary))
    else:
        _print_summary(summary, time.perf_counter() - start)
    return EXIT_OK


def _module_command(module: Any) -> Command:
    """The [`Command`][] of a module that defines `SUMMARY`, `DESCRIPTION`,
    `add_arguments(parser)` and `run(args)` (as `redundax.sweep` does)."""
    return Command(
        summary=module.SUMMARY,
        description=module.DESCRIPTION,
        add_arguments=module.add_arguments,
        run=module.run,
    )


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
    "simulate": Command(
        summary="forward dynamics: motion, constraint drift, energy, reactions over time",
        description=(
            "Integrate the equations of motion of the mechanism of CONFIG from its initial "
            "state, with the options of its [simulation] table (end time, tolerances, "
            "solver, redundancy method, stabilisation; see configs/README.md). Prints the "
            "number of steps, the largest constraint violation, the tracked points at the "
            "end, the energy error of a conservative mechanism, and which reactions a rigid "
            "model determines (--json adds the final coordinates). --out writes the time "
            "histories, reactions included (the non-unique ones marked as such). Exit "
            "status: 0 on success, 2 on invalid input, 1 if the integration fails."
        ),
        add_arguments=_add_simulate_arguments,
        run=_simulate,
    ),
    "optimize": _module_command(optimize),
    "sweep": _module_command(sweep),
    "plot": _module_command(plot),
}
"""Subcommand name → [`Command`][]."""


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

    **Returns:** the exit status: 0 on success, 2 on a usage error or invalid input,
    1 when a computation fails (the message is on stderr).
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
