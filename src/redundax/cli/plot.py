"""`redundax plot RUN`: the figures of a saved run, written to a folder.

The figures themselves are [`redundax.plot`][]'s, imported when the command runs, so
that building the parser (and every other command) does not import matplotlib.
"""

import argparse
import json
from pathlib import Path

from .._figure_files import FIGURES, FORMATS
from ..io._atomic import check_directory
from ._common import check_out

SUMMARY = "figures of a saved run: trajectories, reactions, violation and energy, solvability, rank"
DESCRIPTION = (
    "Draw the figures of a run saved by 'redundax simulate CONFIG --out RUN.npz' (RUN is "
    "that .npz file) and write them, one file each, to a folder (default: RUN_plots/ "
    "beside RUN, e.g. runs/robot.npz → runs/robot_plots/): trajectories (the tracked "
    "points in the plane; x-y and x-z for spatial mechanisms), reactions (per pair, the "
    "magnitude of the force on its first moving body over time; a pair that is not unique "
    "as a whole but has unique components, e.g. the in-plane components of a spatial or "
    "MJCF model of a planar mechanism, is drawn as its components; --components draws "
    "every pair's components, --magnitudes every pair's magnitude. Solid lines are unique "
    "reactions (a rigid model determines them); dashed ones are not (their values are "
    "only the method's choice; whole pairs also grey on grey); dotted grey ones are where "
    "the run is off its constraints (the run's valid flags), where no line is solid and "
    "no reaction is unique), violation (position and velocity "
    "constraint violation, energy change), solvability (the norm of B_X per pair, the "
    "uniqueness test, with rank C, the degree of redundancy p and the mobility) and rank "
    "(rank of C along the run). Existing files are refused unless --force. Example: "
    "redundax simulate configs/mobile_robot.toml --out runs/robot.npz && "
    "redundax plot runs/robot.npz. Exit status: 0 on success, 2 on invalid input."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax plot`."""
    parser.add_argument(
        "run",
        metavar="RUN",
        help="a run file (.npz) written by 'redundax simulate CONFIG --out RUN'",
    )
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="folder of the figures (created; default: RUN's folder/RUN's name_plots, "
        "e.g. runs/robot_plots for runs/robot.npz)",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=FIGURES,
        default=None,
        help="write only this figure (repeat for several; default: all)",
    )
    parser.add_argument(
        "--pairs",
        action="append",
        default=None,
        metavar="NAMES",
        help="comma-separated pair names for the reactions and solvability figures "
        "(repeatable; default: all pairs)",
    )
    drawn = parser.add_mutually_exclusive_group()
    drawn.add_argument(
        "--components",
        action="store_const",
        const=True,
        dest="components",
        default=None,
        help="draw every pair's reaction components (-λ of each row) instead of the "
        "magnitude of the force on its first moving body (default: components only for "
        "a pair that is not unique as a whole but has unique components)",
    )
    drawn.add_argument(
        "--magnitudes",
        action="store_const",
        const=False,
        dest="components",
        help="draw every pair's magnitude, also where its components would show what is unique",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="png", help="file format (default: png)"
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing figures")
    parser.add_argument(
        "--json", action="store_true", help='print {"figures": [paths]} as one JSON object'
    )


def _folder(out: Path) -> None:
    """The folder of the figures: an existing file, or a file on the way to it, is refused."""
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: exists and is not a directory")
    check_directory(out)


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax plot`: returns the exit status (0)."""
    # matplotlib is imported by the one command that draws, and only when it runs.
    from ..plot import _load, _select_pairs, save_all  # noqa: PLC0415 - matplotlib, on use

    path = Path(args.run)
    if args.out is not None:  # a folder: checked before anything is read or drawn
        check_out("--out", _folder, Path(args.out))
    data = _load(path)
    pairs = None
    if args.pairs is not None:
        pairs = [name.strip() for entry in args.pairs for name in entry.split(",") if name.strip()]
        try:
            pairs = _select_pairs(data, pairs)
        except ValueError as error:
            raise ValueError(f"{path}: --pairs: {error}") from None
    out = Path(args.out) if args.out is not None else path.with_name(f"{path.stem}_plots")
    figures = save_all(
        data,
        out,
        force=args.force,
        format=args.format,
        only=args.only,
        pairs=pairs,
        components=args.components,
    )
    if args.json:
        print(json.dumps({"figures": [str(p) for p in figures]}))
    else:
        for figure in figures:
            print(f"wrote {figure}")
    return 0
