"""`redundax optimize DESIGN --out DIR`: the command line of [`redundax.optimize`][],
whose docstring describes design studies.

The figure of the study (`OUT/design.png`) is drawn by [`redundax.optimize.write_result`][],
which imports matplotlib only then.
"""

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ..io._atomic import check_directory
from ..io._errors import ConfigError
from ..optimize import (
    OUTPUTS,
    QUANTITIES,
    Design,
    Step,
    load_design,
    optimize_design,
    write_history,
    write_result,
)
from ._common import check_out, positive_float, warn

SUMMARY = "design optimisation (Optax) of a unique reaction over a simulated manoeuvre"
DESCRIPTION = (
    "Change the design variables of the design file DESIGN (an [optimize] table naming "
    "the mechanism's configuration, the variables as affine combinations of parameter "
    "addresses, the objective terms and an assemblability requirement; see "
    "configs/README.md, Design optimisation) to minimise the peak (or impulse) of unique "
    "reactions over the simulated manoeuvre. Each iteration simulates the manoeuvre and "
    "takes the gradient through the solve; a step that does not decrease the objective, "
    "whose simulation fails or leaves its constraints, or whose gradient is not finite is "
    "rejected (one line says why) and the learning rate halved. Writes OUT/history.csv "
    "after every iteration, then OUT/design.json (variables before and after, objective "
    "history, the final design's rank) and OUT/design.png (objective history, reactions "
    "before and after). 'peak' is the sampled maximum of a reaction's magnitude, 'smooth "
    "peak' the power mean that the objective minimises. Exit status: 0 on success, 2 on "
    "invalid input, 1 if the initial design cannot be simulated or is rejected (the "
    "iterations so far stay in OUT/history.csv)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax optimize`."""
    parser.add_argument(
        "design",
        metavar="DESIGN",
        help="a design file (TOML), e.g. configs/design_mobile_robot.toml",
    )
    parser.add_argument(
        "--out", required=True, metavar="DIR", help="output folder (created if absent)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        metavar="N",
        help="the most iterations (default: the file's [optimize] steps). Each iteration "
        "evaluates the objective and its gradient at one design, the first at the initial "
        "design, so N iterations make at most N - 1 optimiser updates (N = 1 evaluates the "
        "initial design only); fewer when the decrease falls below the file's tolerance or "
        "max_rejections steps in a row are rejected",
    )
    parser.add_argument(
        "--t-final",
        type=positive_float,
        default=None,
        metavar="T",
        help="end time of the manoeuvre in s",
    )
    parser.add_argument("--force", action="store_true", help="overwrite the files in DIR")
    parser.add_argument("--json", action="store_true", help="print design.json on stdout")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def _printer(design: Design, steps: int, quiet: bool) -> Callable[[Step], None] | None:
    if quiet:
        return None
    names = [v.name for v in design.variables]

    def show(step: Step) -> None:
        mark = ""
        if not step.accepted:
            then = "; learning rate halved" if step.step > 0 else ""
            mark = f"  (rejected: {step.rejection}{then})"
        xs = ", ".join(f"{n} = {x:.6g}" for n, x in zip(names, step.x, strict=True))
        print(
            f"redundax: optimize iteration {step.step + 1}/{steps}: J = {step.objective:.6g} "
            f"[{xs}] {step.seconds:.0f} s{mark}",
            file=sys.stderr,
            flush=True,
        )

    return show


def _recorder(
    design: Design, out: Path, force: bool, show: Callable[[Step], None] | None
) -> tuple[Callable[[Step], None], list[Step]]:
    """`on_step` for the optimiser: the progress line, then OUT/history.csv with the
    iterations so far (a run that stops or is interrupted keeps them). The first
    write replaces an existing file only with `force`; later ones replace this
    run's own."""
    history: list[Step] = []

    def record(step: Step) -> None:
        if show is not None:
            show(step)
        history.append(step)
        write_history(design, history, out, force=force or len(history) > 1)

    return record, history


def _folder(out: Path) -> None:
    """The output folder: an existing file, or a file on the way to it, is refused."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: exists and is not a folder")
    check_directory(out)


def run(args: argparse.Namespace) -> int:
    """`redundax optimize DESIGN --out DIR`."""
    design = load_design(args.design)
    if args.steps is not None:
        if args.steps < 1:
            raise ValueError(f"--steps: expected a positive integer, got {args.steps}")
        design = dataclasses.replace(design, steps=args.steps)
    if args.t_final is not None:
        options = dataclasses.replace(design.simulation, t_final=args.t_final)
        design = dataclasses.replace(
            design, config=dataclasses.replace(design.config, simulation=options)
        )
    out = Path(args.out)
    check_out("--out", _folder, out)  # before the computation, not after it
    if not args.force:
        for name in OUTPUTS:
            if (out / name).exists():
                raise FileExistsError(f"{out / name}: already exists; pass --force to overwrite it")
    if design.steps == 1:
        warn(
            f"{'--steps' if args.steps is not None else f'{design.path}: [optimize] steps'} = 1: "
            "one iteration evaluates the initial design only, with no optimiser update (N "
            "iterations make at most N - 1 updates)"
        )
    if not args.quiet:
        print(
            f"redundax: optimizing {design.config.name}: {len(design.variables)} variable(s), "
            f"at most {design.steps} iteration(s) ({design.steps - 1} optimiser update(s)), "
            f"each a {design.simulation.t_final:g} s simulation and its gradient (the first "
            "compiles, about a minute)...",
            file=sys.stderr,
            flush=True,
        )
    record, history = _recorder(design, out, args.force, _printer(design, design.steps, args.quiet))
    try:
        result = optimize_design(design, on_step=record)
    except ConfigError:
        raise  # a design that makes no sense (exit 2), e.g. an objective that is zero
    except ValueError as err:
        kept = (
            f" ({out / OUTPUTS[1]} keeps the {len(history)} iteration(s) done)" if history else ""
        )
        print(f"redundax: error: {err}{kept}", file=sys.stderr)
        return 1
    paths = write_result(result, out, force=args.force, replace=(OUTPUTS[1],) if history else ())
    if args.json:
        print(json.dumps(result.to_dict(), allow_nan=False))
        return 0
    print(f"design study {design.path} ({design.config.name}):")
    for (name, unit), a, b in zip(result.variables, result.initial, result.final, strict=True):
        print(f"  {name:<12} {a:12.6g} -> {b:12.6g} {unit}")
    for k, label in enumerate(result.labels):
        # One word per quantity (as in history.csv and design.json): 'peak' is the
        # sampled maximum, 'smooth peak' the power mean that the objective holds.
        first, last = result.initial_evaluation, result.final_evaluation
        changes = [(result.quantities[k], first.terms[k], last.terms[k])]
        if result.quantities[k] == QUANTITIES["peak-reaction"]:
            changes.insert(0, ("peak", first.peaks[k], last.peaks[k]))
        print(
            f"  {label}: "
            + ", ".join(
                f"{word} {before:.6g} -> {after:.6g} ({100 * (after / before - 1):+.1f} %)"
                for word, before, after in changes
            )
        )
    print(
        f"  objective {result.accepted[0].objective:.6g} -> {result.accepted[-1].objective:.6g} "
        f"(−{100 * result.decrease:.1f} %), {len(result.accepted)} accepted of "
        f"{len(result.history)} iterations; stopped: {result.stopped}"
    )
    same = "same rank" if result.initial_rank == result.final_rank else "RANK CHANGED"
    print(f"  rank of C: {result.initial_rank} -> {result.final_rank} ({same})")
    print("  written: " + ", ".join(str(p) for p in paths))
    return 0
