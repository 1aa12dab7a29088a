"""`redundax analyze CONFIG`: rank, degree of redundancy and reaction uniqueness."""

import argparse
import json

from .. import Model, ModelError, SolvabilityReport, State, analyze_solvability
from .._options import initial_projection
from .._solvability import joint_frames
from ..io.config import MUJOCO_SUFFIXES, load_config
from ..joint_coordinates import (
    JointUniquenessReport,
    decide_joint,
    joint_model,
    joint_uniqueness,
    to_joint_state,
)
from ..monitors._closure import ClosureReport, closure_report
from ._common import EXIT_OK, config_argument, unit_interval
from ._initial import initial_state
from ._programs import cached_call

SUMMARY = "rank, degree of redundancy and reaction uniqueness of a mechanism"
DESCRIPTION = (
    "Load the mechanism of CONFIG at its initial configuration (projected onto the "
    'constraints first when its [simulation] table says initial = "project", as '
    "simulate does) and analyse its "
    "constraint matrix C = [Φ_q; Ψ] (holonomic rows first, then Pfaffian rows, "
    "each in the order of the file): its rank, the degree of redundancy "
    "p = rows − rank, the mobility n − rank, and for every pair whether its "
    "reaction is uniquely determined at that configuration (B_X = 0, Wojtyra & "
    "Frączek 2013). "
    "Redundant constraints make some reactions indeterminate in a rigid model; "
    "this tells you which. 'redundax simulate' reports the stable verdicts instead, "
    "those that also hold at a generic configuration next to it: a reaction determined "
    "only at a special configuration (the mobile robot's pair B, x force, with its "
    "wheels straight) is unique here and not in a run (configs/README.md, 'Which "
    "verdict each command reports'). For an MJCF or URDF file, also where the redundancy comes "
    "from (the form of its connect/weld closures, or the mechanism's geometry) and "
    "the minimal closure: the closure rows to drop, or the change of one joint or "
    "equality type, that makes every reaction unique."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax analyze`."""
    config_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of the table: n, m, h, rank, redundancy, dof "
        "and, for every pair, its rows (1-based), whether its reaction and its multipliers "
        "are unique, the norm of B_X, whether each labelled reaction component is "
        "unique, and the joint frame its components refer to: "
        '"frame": {"e0", "e1", "e2"} in global coordinates at the configuration '
        "analysed (spatial pairs; null for a planar pair, whose component labels name "
        "their directions: global x, y or the pair's own normal)",
    )
    parser.add_argument(
        "--coordinates",
        choices=("absolute", "joint"),
        default="absolute",
        help="absolute (default): the QR test on C in the file's absolute coordinates; "
        "joint: the mechanism in joint coordinates (a spanning tree of its joints, the "
        "other pairs as cut joints) and seed 002's analysis inside the divide-and-conquer "
        "algorithm, with the step that decided each pair",
    )
    parser.add_argument(
        "--rtol",
        type=unit_interval,
        default=None,
        metavar="X",
        help="relative tolerance of the rank decision, 0 < X < 1: a pivot of the QR "
        "factorisation counts as zero below X times the largest one (default: "
        "2 · eps · max(rows, n), about 1e-14 for the mobile robot)",
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


def _analysis(model: Model, q, t, rtol: float | None) -> SolvabilityReport:
    return analyze_solvability(model, q, t, rtol=rtol)


def _closures(model: Model, q, t, rtol: float | None) -> ClosureReport:
    return closure_report(model, q, t, rtol=rtol)


def _joint(config, state: State, rtol: float | None) -> JointUniquenessReport:
    jm = joint_model(config.model, state.q)
    joint_state = to_joint_state(jm, state)
    kw = {} if rtol is None else {"rtol": rtol}
    return joint_uniqueness(jm, decide_joint(jm, joint_state, **kw), joint_state)


def _heading(config, correction: list[float]) -> str:
    """The first line of the table: the mechanism and the configuration analysed."""
    kind = "spatial" if config.dim == 3 else "planar"
    where = "initial configuration at t = 0 s"
    if initial_projection(config.simulation.initial) is not None:
        dq, dqd = correction
        where += (
            ', projected onto the constraints ([simulation] initial = "project"; '
            f"max |Δq| {dq:.3g}, max |Δq̇| {dqd:.3g})"
        )
    return f"{config.name} ({config.path}), {kind}, {where}\n"


def _initial_keys(config, correction: list[float]) -> dict:
    """The JSON's keys on the state analysed, as those of `redundax simulate --json`."""
    return {"initial": config.simulation.choices["initial"], "initial_correction": correction}


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax analyze`: returns the exit status."""
    config = load_config(args.config)
    cache = getattr(args, "cache", None)
    try:
        # The state `redundax simulate` starts from: projected first when the file
        # says initial = "project" (and refused when that fails).
        state, correction = initial_state(cache, config)
    except ModelError as error:  # name the file, as `simulate` does
        raise ModelError(f"{config.path}: {error}", error.problems, error.source) from None
    if getattr(args, "coordinates", "absolute") == "joint":
        joint = _joint(config, state, args.rtol)
        if args.json:
            print(
                json.dumps(
                    {**joint.to_dict(), "dim": config.dim, **_initial_keys(config, correction)}
                )
            )
        else:
            print(_heading(config, correction))
            print(joint)
        return EXIT_OK
    report = cached_call(cache, _analysis, config.model, state.q, state.t, args.rtol)
    closures = None
    if config.path.suffix.lower() in MUJOCO_SUFFIXES:
        closures = _closures(config.model, state.q, state.t, args.rtol)
    # The axes that the spatial pairs' components ("bending moment e1") refer to
    # (none for a planar mechanism: its labels name their directions).
    frames = joint_frames(config.model, state.q)
    if args.json:
        extra = {} if closures is None else {"closures": closures.to_dict()}
        print(
            json.dumps(
                {
                    **report.to_dict(frames),
                    "dim": config.dim,
                    **_initial_keys(config, correction),
                    **extra,
                }
            )
        )
    else:
        print(_heading(config, correction))
        print(report.table(frames))
        legend = _component_legend(config.model)
        if legend:
            print("\n" + "\n".join(legend))
        if closures is not None:
            print("\n" + str(closures))
    return EXIT_OK
