"""`redundax tolerances FILE`: assembly stresses of manufacturing tolerances."""

import argparse
import json

from ..statics import load_tolerances, tolerance_study
from ..sweep._store import check_out
from ._common import EXIT_OK, check_out as _check_out

SUMMARY = "assembly stresses that manufacturing tolerances cause (a tolerance file)"
DESCRIPTION = (
    "Read a tolerance file (configs/README.md, Tolerances): a mechanism, joint "
    "stiffnesses, and deviations of its parameters by address with their "
    "distributions. At the mechanism's static equilibrium (or its initial "
    "configuration), print the first-order assembly stress of the nominal deviations "
    "(which reaction components change, and by how much: the unique ones do not), "
    "its sensitivity to each deviation (dλ/dδ by autodiff), and a Monte Carlo over "
    "the distributions, run as a sweep (--out keeps its files: every draw's deviations "
    "and assembly stress, resumable): per pair, percentiles of the largest change of a "
    "force and of a moment component. A rigid model of a redundant mechanism assumes perfect "
    "parts; this is what imperfect ones do to it."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax tolerances`."""
    parser.add_argument(
        "file", metavar="FILE", help="a tolerance file, e.g. configs/tolerances_bricard.toml"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: q, redundancy, nominal (per pair, per component: "
        "change, unique), sensitivity (per address, per pair, per component: d change/dδ) "
        "and monte_carlo (samples; per pair, force and moment: p50, p90, p99, max; sweep: "
        "the combined sweep file, with --out)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="keep the Monte Carlo's sweep files in DIR (chunks, sweep.npz, summary.json; "
        "redundax.sweep.read_sweep reads them); the same command resumes an interrupted "
        "run there. Default: a temporary directory",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="discard the results of another sweep found in --out",
    )


def _table(tol, study) -> str:
    lines = [
        f"{tol.name} ({tol.path}): assembly stresses at its "
        f"{'static equilibrium' if tol.at == 'equilibrium' else 'initial configuration'}, "
        f"p = {study.redundancy}",
        "",
        "  nominal deviations: " + ", ".join(f"{d.address} = {d.value:g}" for d in tol.deviations),
        "  change of the reaction components (N, N m):",
    ]
    largest = max(
        (abs(v) for comps in study.nominal.values() for v, _ in comps.values()), default=0.0
    )
    for pair, comps in study.nominal.items():
        # Round-off (below 1e-9 of the largest change) is shown as 0.
        parts = [
            f"{label} {0.0 if abs(v) <= 1e-9 * largest else v:+.4g}{' (unique)' if u else ''}"
            for label, (v, u) in comps.items()
        ]
        lines.append(f"    {pair}: " + "; ".join(parts))
    if tol.samples:
        lines += ["", f"  Monte Carlo over {tol.samples} draws: the largest |change| per pair"]
        for pair, kinds in study.percentiles.items():
            for kind, stats in kinds.items():
                lines.append(
                    f"    {pair} {kind:<6} " + "  ".join(f"{k} {v:.4g}" for k, v in stats.items())
                )
        if study.sweep is not None:
            lines.append(f"  every draw: {study.sweep}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax tolerances`: returns the exit status."""
    tol = load_tolerances(args.file)
    if args.out is not None:
        _check_out("--out", check_out, args.out, args.force)  # before anything is computed
    study = tolerance_study(tol, out=args.out, force=args.force)
    if args.json:
        print(json.dumps(study.to_dict()))
    else:
        print(_table(tol, study))
    return EXIT_OK
