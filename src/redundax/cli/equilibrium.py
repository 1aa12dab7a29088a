"""`redundax equilibrium CONFIG`: static equilibrium, its reactions and its modes."""

import argparse
import json
import math

import numpy as np

from .. import ModelError
from .._figure_files import FORMATS
from ..io._atomic import atomic_write
from ..io.config import load_config
from ..io.results import check_output
from ..statics import Equilibrium, equilibrium
from ._common import EXIT_OK, config_argument

SUMMARY = "static equilibrium, its reactions with their verdicts, and its modes"
DESCRIPTION = (
    "Find the static equilibrium of the mechanism of CONFIG nearest its initial "
    "configuration (moved onto the constraints first) under its loads at t = 0: "
    "gravity, constant loads, springs and bushings. Prints the configuration, the "
    "forces left unbalanced (the residual), whether it is stable (the stiffness "
    "positive definite on the null space of C), the natural frequencies, damping "
    "ratios and mode shapes of small motions about it, and every pair's static "
    "reaction with whether a rigid model determines it (redundant constraints are "
    "handled as the dynamics handles them; self-stresses change no frequency). A "
    "mechanism with drivers, nonholonomic constraints, or no equilibrium near its "
    "initial configuration (an unbounded fall) is refused by name."
)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax equilibrium`."""
    config_argument(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: q (the file's coordinates: x, y, angle per planar "
        "body, natural coordinates r, u, v, w per spatial body, in file order), "
        "coordinates (their labels), residual [N, N m], violation [m, rad], stable, "
        "frequencies_hz, damping_ratios, modes (one shape per mode, over q) and pairs "
        "(per pair: unique, force, moment, rows, components)",
    )
    parser.add_argument(
        "--figure",
        default=None,
        metavar="FILE",
        help="also draw the mode shapes (redundax.plot.plot_modes) into FILE (.png, .pdf "
        "or .svg); an existing file is kept unless --force",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --figure file")
    parser.add_argument(
        "--modes",
        type=_non_negative_int,
        default=None,
        metavar="K",
        help="report the K lowest modes (default: all of them, one per degree of freedom)",
    )


def _pairs(model, eq: Equilibrium) -> dict:
    """Per pair: the force and moment it exerts on its first moving body (global components,
    the moment about the joint point), its rows (1-based), whether its reaction is
    unique, and each reaction component's value (−λ) and verdict."""
    r = eq.reactions
    lam = np.asarray(r.multipliers)
    row_unique = np.asarray(r.component_unique)
    out = {}
    for k, name in enumerate(r.names):
        rows = r.rows[k]
        wrench = np.asarray(r.wrench[k])
        moment = np.asarray(r.joint_moment[k])
        body = next(model.body_index(b) for b in model.pair(name).bodies if b != "ground")
        out[name] = {
            "unique": bool(r.unique[k]),
            "force": wrench[body, : r.dim].tolist(),
            "moment": moment[body].tolist(),
            "rows": [row + 1 for row in rows],
            "components": {
                label: {"value": float(-lam[row]), "unique": bool(row_unique[row])}
                for label, row in zip(r.labels[k], rows, strict=True)
            },
        }
    return out


def _summary(model, eq: Equilibrium, k: int | None) -> dict:
    modes = eq.linearization.modes()
    count = len(modes.frequencies_hz) if k is None else min(k, len(modes.frequencies_hz))
    return {
        "q": np.asarray(eq.q).tolist(),
        "coordinates": list(modes.labels),
        "residual": float(eq.residual),
        "violation": float(eq.violation),
        "stable": bool(eq.stable),
        "steps": int(eq.steps),
        "mobility": eq.linearization.mobility,
        "frequencies_hz": np.asarray(modes.frequencies_hz[:count]).tolist(),
        "damping_ratios": np.asarray(modes.damping_ratios[:count]).tolist(),
        "modes": np.asarray(modes.shapes[:count]).tolist(),
        "pairs": _pairs(model, eq),
    }


def _table(config, s: dict) -> str:
    lines = [
        f"{config.name} ({config.path}): static equilibrium at t = 0 s",
        f"  residual {s['residual']:.3g} (unbalanced generalised force), "
        f"max |Φ| {s['violation']:.3g}, {s['steps']} Levenberg-Marquardt steps",
        f"  {'stable' if s['stable'] else 'NOT stable'}; mobility {s['mobility']}",
        "",
        "  q:",
    ]
    lines += [
        f"    {label:<24} {value:+.9g}"
        for label, value in zip(s["coordinates"], s["q"], strict=True)
    ]
    if s["frequencies_hz"]:
        lines += ["", "  modes (an unstable one has a negative frequency: -growth rate / 2π):"]
        for n, (f, z) in enumerate(zip(s["frequencies_hz"], s["damping_ratios"], strict=True)):
            lines.append(f"    {n + 1:3d}  {f:+.6g} Hz  damping ratio {z:.4g}")
    lines += [
        "",
        "  static reactions (on the pair's first body; the moment about the joint point):",
    ]
    for name, p in s["pairs"].items():
        force = ", ".join(f"{v:+.6g}" for v in p["force"])
        moment = p["moment"] if isinstance(p["moment"], list) else [p["moment"]]
        moment = ", ".join(f"{v:+.6g}" for v in moment)
        verdict = "unique" if p["unique"] else "NOT unique"
        lines.append(f"    {name}: force [{force}] N, moment [{moment}] N m  {verdict}")
        if not p["unique"]:
            determined = [label for label, c in p["components"].items() if c["unique"]]
            if determined:
                lines.append(f"      unique components: {', '.join(determined)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """The handler of `redundax equilibrium`: returns the exit status."""
    config = load_config(args.config)
    figure = None
    if args.figure is not None:  # checked before the computation
        figure = check_output(args.figure, args.force, tuple(f".{f}" for f in FORMATS))
    try:
        eq = equilibrium(config.model, config.state.q, 0.0)
    except ModelError as error:  # name the file, as the other commands do
        raise ModelError(f"{config.path}: {error}", error.problems, error.source) from None
    s = _summary(config.model, eq, args.modes)
    if not all(math.isfinite(v) for v in (s["residual"], s["violation"])):
        raise ModelError(f"{config.path}: equilibrium: the solve did not give a finite result")
    if figure is not None:
        from ..plot import plot_modes  # noqa: PLC0415 - matplotlib only when drawing

        fig = plot_modes(config.model, eq.linearization, count=args.modes)
        with atomic_write(figure, args.force) as file:
            fig.savefig(file, format=figure.suffix[1:].lower(), dpi=120)
    if args.json:
        print(json.dumps(s))
    else:
        print(_table(config, s))
    return EXIT_OK
