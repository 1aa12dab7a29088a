"""`redundax simulate CONFIG`: forward dynamics, its summary and its time histories."""

import argparse
import dataclasses
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import (
    Model,
    ModelError,
    Progress,
    State,
    Trajectory,
    decide,
    reaction_history,
    simulate,
    singularity_report,
)
from .._friction import has_friction
from .._friction_report import friction_report
from .._options import Singularities, initial_projection
from .._reactions import MEMORY_BUDGET, chunk_size
from .._simulate import SingularPassageWarning, constraints_left_error
from .._structure import judged
from ..io.config import Config, SimulationOptions, load_config
from ..io.results import check_output, component_labels, write_run
from ..methods import AbstractNullSpaceMethod, Elimination, specialise
from ..monitors._singularity import SingularityReport
from . import _simulate_joint
from ._common import (
    EXIT_FAILURE,
    EXIT_OK,
    Status,
    check_out as _check_out,
    config_argument,
    draw_bar,
    heartbeat as _heartbeat,
    positive_float,
    progress as _progress,
    report as _report,
    warn as _warn,
)
from ._initial import _start, check_projected
from ._programs import cached_call
from ._run_summary import (
    describe_drift_control,
    integration_failure,
    motion_keys,
    validity_keys,
)

SUMMARY = "forward dynamics: motion, constraint drift, energy, reactions over time"
DESCRIPTION = (
    "Integrate the equations of motion of the mechanism of CONFIG from its initial "
    "state, with the options of its [simulation] table (end time, tolerances, "
    "solver, redundancy method, stabilisation; see configs/README.md). Prints the "
    "number of steps, the largest constraint violation, the tracked points at the "
    "end, the energy error of a conservative mechanism, and which reactions a rigid "
    "model determines (--json adds the final coordinates). --out writes the time "
    "histories, reactions included (the non-unique ones marked as such). Exit "
    "status: 0 on success, 2 on invalid input, 1 if the integration fails."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `redundax simulate`."""
    config_argument(parser)
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
        type=positive_float,
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
    parser.add_argument(
        "--coordinates",
        choices=("absolute", "joint"),
        default="absolute",
        help="absolute (default): the file's absolute (planar) or natural (spatial) "
        "coordinates; joint: a spanning tree of the joints with joint coordinates, the "
        "other pairs as cut joints, accelerations and reactions by the divide-and-conquer "
        "algorithm and the verdicts of seed 002's analysis (the JSON adds "
        "joint_coordinates, final_joint_q, tree_joints, cut_joints, decided_by; the run "
        "file adds the joint histories)",
    )
    parser.add_argument(
        "--memory-budget",
        type=positive_float,
        default=MEMORY_BUDGET / 2**30,
        metavar="GB",
        help="working memory in GiB for the reactions along the run written by --out: "
        "the saved states are solved in chunks that fit (default %(default)g)",
    )


class _Progress(Progress):
    """The progress of `redundax simulate`: the run in segments (`simulate(progress=
    ...)`), each compiled stage through the store of exported programs; after each
    segment the heartbeat's status, and the bar when stderr is a terminal."""

    def __init__(self, cache, status: Status):
        self.cache = cache
        self.status = status
        self.bar = sys.stderr.isatty()

    def report(self, t: float, t1: float, steps: int) -> None:
        self.status.text = f"t = {t:.4g} s of {t1:g} s, {steps} steps"
        if self.bar:
            draw_bar(t / t1, done=t >= t1)

    def call(self, fn, /, *args):
        return cached_call(self.cache, fn, *args)


def _summary(
    config: Config,
    options: SimulationOptions,
    trajectory: Trajectory,
    unique: dict[str, bool],
    components: dict[str, dict[str, bool]],
    singular: SingularityReport | None,
    out: Path | None,
) -> dict[str, Any]:
    """The JSON object of `simulate --json` (DESIGN.md §7, plus extra keys)."""
    method = options.method
    return {
        **motion_keys(
            config, trajectory, trajectory.q, trajectory.qd, trajectory.initial_correction
        ),
        **_singular_keys(singular),
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


def _not_finite(value: Any) -> bool:
    """Whether a JSON value holds a NaN or an infinity anywhere."""
    if isinstance(value, float):
        return not np.isfinite(value)
    if isinstance(value, dict):
        return any(_not_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_not_finite(v) for v in value)
    return False


def _singular_keys(report: SingularityReport | None) -> dict[str, Any]:
    """`singular_passages`, `singularity_measure`, `min_sigma_ratio`, `rank_changes`
    of the JSON (empty lists and nulls for a mechanism without constraints)."""
    if report is None:
        return {
            "singular_passages": [],
            "singularity_measure": None,
            "min_sigma_ratio": None,
            "rank_changes": [],
        }
    return report.as_dict()


def _print_summary(summary: dict[str, Any], elapsed: float) -> None:
    s = summary
    print(f"{s['mechanism']} ({s['config']}): simulated 0 → {s['t_final']:g} s in {elapsed:.1f} s")
    method = s["method"]
    if s["eliminated_rows"]:
        method += f" of rows {', '.join(map(str, s['eliminated_rows']))}"
    elif s["eliminated_rows"] is not None:
        method += " (no redundant rows to drop)"
    if s.get("coordinates") == "joint":
        print(
            f"  joint coordinates ({len(s['joint_coordinates'])}): tree joints "
            f"{', '.join(s['tree_joints']) or 'none'}; cut joints "
            f"{', '.join(s['cut_joints']) or 'none'}; p = {s['redundancy']}"
        )
    print(
        f"  method {method}, solver {s['solver']} (rtol {s['rtol']:g}, atol {s['atol']:g}), "
        f"drift control: {s['drift_control']}, {s['saved_states']} saved states"
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
        why = [f"prescribed motion in {', '.join(s['rheonomic'])}"] if s["rheonomic"] else []
        why += s["nonconservative"]
        print(f"  energy error: n/a (not conservative: {'; '.join(why)})")
    else:
        print(f"  energy error: {s['energy_error']:.3g} J (max |E(t) - E(0)|)")
    passages = s["singular_passages"]
    measure = "pivot sine" if s["singularity_measure"] == "pivots" else "sigma_r/sigma_1"
    if passages:
        times = ", ".join(f"{p['t']:.4g}" for p in passages[:6])
        more = f" and {len(passages) - 6} more" if len(passages) > 6 else ""
        print(
            f"  singular configurations passed: {len(passages)} (t = {times}{more} s), "
            f"smallest {measure} {s['min_sigma_ratio']:.3g}; {passages[0]['action']}"
        )
    elif s["min_sigma_ratio"] is not None:
        ratio = s["min_sigma_ratio"]
        print(f"  no singular configuration passed (smallest {measure} {ratio:.3g})")
    if s["rank_changes"]:
        print(f"  rank of C changed {len(s['rank_changes'])} time(s) between integrator steps")
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
    if s.get("decided_by"):
        print("decided by (seed 002's propagation in the DCA):")
        width = max(len(name) for name in s["decided_by"])
        for name, step in s["decided_by"].items():
            print(f"  {name:<{width}}  {step}")
    if s["out"] is not None:
        print(f"wrote {s['out']}")


def _decision(model: Model, state: State, initial_projection):
    """The Structure of the run: decided at the initial state, projected first when
    the configuration says so (as `redundax.simulate` does); and the constraint
    residuals (Φ, C q̇ + b) of that state."""
    q, _, _, residuals = _start(model, state, initial_projection)
    return decide(model, q, state.t), residuals  # `judged` by the caller: see there


def _reactions(model: Model, trajectory: Trajectory, method, memory_budget: float):
    """The reactions at every saved state (one program, kept by `cached_call`)."""
    return reaction_history(
        model, trajectory, method=method, memory_budget=int(memory_budget * 2**30)
    )


def _simulation(model: Model, state: State, t_final: float, keywords: dict) -> Trajectory:
    return simulate(model, state, t_final, **keywords)


def _simulate(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    options = config.simulation
    if args.t_final is not None:
        options = dataclasses.replace(options, t_final=args.t_final)
    out = None
    if args.out is not None:
        try:
            out = _check_out("--out", check_output, args.out, args.force)
        except FileExistsError:
            raise FileExistsError(
                f"{args.out}: already exists; pass --force to overwrite it"
            ) from None

    if out is not None:  # before the run: a budget one state does not fit is refused now
        chunk_size(config.model, options.n_save, int(args.memory_budget * 2**30))
    with _heartbeat(f"simulating {config.name} to t = {options.t_final:g} s") as status:
        return _run(args, config, options, out, status)


def _run(
    args: argparse.Namespace, config: Config, options: SimulationOptions, out, status: Status
) -> int:
    """The run of `redundax simulate` once its input is checked."""
    try:
        return _integrate(args, config, options, out, status)
    except ModelError as error:  # found by the library's checks: name the file
        raise ModelError(f"{config.path}: {error}", error.problems, error.source) from None


def _integrate(
    args: argparse.Namespace, config: Config, options: SimulationOptions, out, status: Status
) -> int:
    start = time.perf_counter()
    if getattr(args, "coordinates", "absolute") == "joint":
        code, summary = _simulate_joint.integrate(args, config, options, out, status)
        if summary is not None:
            summary.setdefault("drift_control", describe_drift_control(options.drift_control))
        return code if summary is None else _finish(args, summary, start)
    _progress(
        f"simulating {config.name} to t = {options.t_final:g} s "
        f"(method {options.choices['method']}; the first run of a mechanism compiles)..."
    )
    cache = getattr(args, "cache", None)
    # The decisions on the host, once, from the (projected) initial state; the
    # initial state was checked for consistency when the file was read.
    structure, residuals = cached_call(
        cache, _decision, config.model, config.state, initial_projection(options.initial)
    )
    # Its verdict on the Schur path, judged here on the host: the exported program
    # that computed it traced `decide` (one compiled path for the run).
    structure = judged(structure)
    check_projected(config, residuals)  # `simulate` checks it only when not traced
    if isinstance(options.method, AbstractNullSpaceMethod) and config.model.n_constraints:
        structure.raise_if_singular()
    keywords = options.keywords(
        structure=structure,
        method=specialise(options.method, structure, config.model),
        throw=False,
        # The JSON's min_sigma_ratio and passages are σ_r/σ_1 (DESIGN.md), also where
        # the block solver runs (whose own default monitor reads its pivots).
        monitor=Singularities("singular_values"),
    )
    with warnings.catch_warnings():
        # Reported below from the log, the same whether the run was cached or not.
        warnings.simplefilter("ignore", SingularPassageWarning)
        if not options.drift_control.projects:  # in segments: progress lines or a bar
            trajectory = simulate(
                config.model,
                config.state,
                options.t_final,
                **keywords,
                progress=_Progress(cache, status),
            )
        else:  # projected at every saved time: one program, the heartbeat's time only
            trajectory = cached_call(
                cache, _simulation, config.model, config.state, options.t_final, keywords
            )
    failure = integration_failure(config, options, trajectory, trajectory.q, trajectory.qd)
    if failure is not None:
        _report(failure)
        return EXIT_FAILURE
    left = None
    if bool(trajectory.left_constraints):
        left = constraints_left_error(trajectory, str(config.path), hint="")
    if left is not None:
        # What follows is about the part of the run that is the mechanism's motion;
        # no reaction is claimed unique for a run that left its constraints.
        trajectory = trajectory.until_valid()
        if trajectory.ts.shape[0] < 2:
            _report(left)
            return EXIT_FAILURE
    elapsed = time.perf_counter() - start
    _progress(f"integrated in {elapsed:.1f} s, {int(trajectory.num_steps)} steps")
    status.text = f"integrated ({int(trajectory.num_steps)} steps)"
    singular = singularity_report(trajectory, options.method)
    if singular is not None and singular.passages and not singular.branch_kept:
        _warn(
            f"{config.path}: the motion passed {len(singular.passages)} singular "
            f"configuration(s), the first at t = {singular.passages[0].t:.4g} s, with "
            f"drift control {describe_drift_control(trajectory.drift_control)}, "
            f"which does not keep a closed chain on its branch there: the motion may have "
            f'left it; set [simulation] projection = "steps" (the default)'
        )

    # Every verdict comes from the Structure the motion was simulated with (decided
    # once, at the initial state): the JSON, the reactions and the run file agree.
    structure = trajectory.structure
    stable = np.asarray(structure.stable_unique) & (left is None)
    unique = {name: bool(stable[g]) for g, name in enumerate(config.model.pair_names)}
    row_unique = np.asarray(structure.stable_row_unique) & (left is None)
    components = {
        pair.name: {
            label: bool(row_unique[r])
            for label, r in zip(component_labels(pair), pair.rows, strict=True)
        }
        for pair in config.model.pairs
    }
    if out is not None:
        _progress(f"reactions at {trajectory.ts.shape[0]} saved states...")
        status.text = f"integrated ({int(trajectory.num_steps)} steps), reactions along the run"
        history = cached_call(
            cache, _reactions, config.model, trajectory, options.method, args.memory_budget
        )
        write_run(
            out,
            config,
            trajectory,
            history,
            unique=unique,
            component_unique={name: list(flags.values()) for name, flags in components.items()},
            metadata={
                **options.choices,
                "t_final": float(trajectory.ts[-1]),
                **_singular_keys(singular),
                **validity_keys(trajectory, left),
            },
            force=args.force,
        )
        _progress(f"wrote {out}")
    summary = _summary(config, options, trajectory, unique, components, singular, out)
    if has_friction(config.model) and left is None:
        report = friction_report(config.model, trajectory, method=options.method)
        summary["friction"] = {
            f"forces[{k}]": {
                "pair": pair,
                "work": float(report.work[e]),
                "stiction_share": float(report.stiction_share[e]),
                **(
                    {}
                    if report.stiffness_sensitivity is None
                    else {
                        "stiffness_sensitivity": {
                            name: float(report.stiffness_sensitivity[e, p])
                            for p, name in enumerate(config.model.pair_names)
                        }
                    }
                ),
            }
            for e, (k, pair) in enumerate(zip(report.forces, report.pairs, strict=True))
        }
    summary.update(validity_keys(trajectory, left))
    summary["drift_control"] = describe_drift_control(trajectory.drift_control)
    if left is not None:
        # One line on the error stream; with --json the object too (valid: false).
        if args.json:
            _finish(args, summary, start)
        _report(left)
        return EXIT_FAILURE
    return _finish(args, summary, start)


def _finish(args: argparse.Namespace, summary: dict[str, Any], start: float) -> int:
    """Print the summary of a run (JSON or text)."""
    bad = [key for key, value in summary.items() if _not_finite(value)]
    if bad:  # never NaN or Infinity in the output (not JSON)
        raise ModelError(f"the results are not finite ({', '.join(bad)}): check the numbers")
    if args.json:
        print(json.dumps(summary, allow_nan=False))
    else:
        _print_summary(summary, time.perf_counter() - start)
    return EXIT_OK


run = _simulate
"""The handler of `redundax simulate`: returns the exit status."""
