"""`redundax sweep SWEEP --out DIR`: the command line of [`redundax.sweep`][], whose
docstring describes sweeps."""

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

from ..io.config import ConfigError, load_config
from ..sweep import (
    Progress,
    load_sweep,
    parameter_targets,
    read_sweep,
    run_sweep,
    sweep_mechanism,
)

SUMMARY = "solvability and simulation of a grid or random sample of parameter variants"
DESCRIPTION = (
    "Evaluate every variant of a mechanism described by the sweep file SWEEP (a [sweep] "
    "table naming the mechanism's configuration, the parameters and their values; see "
    "configs/README.md, Sweeps): the solvability analysis at its initial configuration "
    "(rank, degree of redundancy, which reactions are unique) and/or a simulation "
    "(success, final tracked points, largest constraint violation, rank along the "
    "motion). Variants are batched with jax.vmap, chunk by chunk, over every local "
    "device. Each chunk is written to OUT/chunks/ as soon as it is done: an interrupted "
    "sweep (Ctrl-C, kill) resumes where it stopped when the same command is run again. "
    "OUT/sweep.npz holds every result, OUT/summary.json the variants whose rank, "
    "solvability or simulation differs from the nominal model's. Exit status: 0 when "
    "the sweep is complete, 2 on invalid input, 130 when interrupted."
)


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
        "resumed, else 64 simulations or 1024 analyses per CPU device, more on GPUs)",
    )
    parser.add_argument(
        "--t-final", type=float, default=None, metavar="T", help="end time of the simulations in s"
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


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `sweep` to the subparsers of `redundax` (the same help texts as `COMMANDS`)."""
    parser = subparsers.add_parser("sweep", help=SUMMARY, description=DESCRIPTION)
    add_arguments(parser)
    return parser


def _list_parameters(path: Path) -> int:
    try:
        mechanism = sweep_mechanism(path)
    except ConfigError:
        mechanism = path  # a mechanism configuration itself
    config = load_config(mechanism)
    targets = parameter_targets(config.model, config.state)
    width = max(len(name) for name in targets)
    print(f"parameters of {config.name} ({mechanism}), nominal values:")
    for name, target in targets.items():
        print(f"  {name:<{width}}  {target.nominal: .10g} {target.unit}")
    return 0


def _printer(quiet: bool) -> Callable[[Progress], None] | None:
    if quiet:
        return None
    tty = sys.stderr.isatty()

    def show(p: Progress) -> None:
        rate = ""
        if p.computed and p.elapsed > 0:
            per_chunk = p.elapsed / p.computed
            left = (p.chunks - p.chunk - 1) * per_chunk
            rate = f", {per_chunk:.1f} s per chunk, about {left / 60:.1f} min left"
        line = (
            f"redundax: sweep chunk {p.chunk + 1}/{p.chunks}: {p.done}/{p.variants} variants{rate}"
        )
        if p.resumed and p.chunk + 1 == p.resumed:
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


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax sweep`: returns the exit status."""
    path = Path(args.sweep)
    if args.list_parameters:
        return _list_parameters(path)
    if args.out is None:
        raise ValueError("sweep: --out DIR is required (the directory of the results)")
    if args.chunk_size is not None and args.chunk_size < 1:
        raise ValueError(f"--chunk-size: expected a positive integer, got {args.chunk_size}")
    if args.t_final is not None and not args.t_final > 0:
        raise ValueError(f"--t-final: expected a positive number, got {args.t_final}")
    sweep = load_sweep(path)
    if args.t_final is not None:
        sweep = dataclasses.replace(
            sweep, simulation=dataclasses.replace(sweep.simulation, t_final=args.t_final)
        )
    show = _printer(args.quiet)
    if show is not None:
        print(
            f"redundax: sweep {sweep.name} on {jax.device_count()} device(s) "
            f"({jax.devices()[0].platform}); the first chunk compiles",
            file=sys.stderr,
            flush=True,
        )
    try:
        result = run_sweep(
            sweep, args.out, chunk_size=args.chunk_size, force=args.force, on_chunk=show
        )
    except KeyboardInterrupt:
        print(
            f"\nredundax: sweep interrupted; the finished chunks are in {args.out}/chunks. "
            "Run the same command again to resume.",
            file=sys.stderr,
        )
        return 130
    summary = json.loads((result.parent / "summary.json").read_text())
    if args.json:
        print(json.dumps({**summary, "out": str(result)}))
    else:
        _print_summary(summary, read_sweep(result), result)
    return 0
