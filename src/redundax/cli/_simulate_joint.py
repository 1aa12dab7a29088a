"""`redundax simulate CONFIG --coordinates joint`: the same mechanism in joint
coordinates (a spanning tree of its joints, the other pairs as cut joints), the
accelerations and reactions by the divide-and-conquer algorithm, the verdicts by
seed 002's analysis; the same summary, JSON and run files as in absolute
coordinates, with what is particular to joint coordinates added. The run claims
the report's stable verdicts (also unique at the generic configuration next to the
initial one), as an absolute run does; the run file's `meta["solvability"]` keeps
the analysis at the initial configuration, as an absolute run's does.

A run that leaves its constraints, or runs into the edge of its workspace where
the motion cannot go on (`redundax.joint_coordinates._run_validity`), is a
failure, as an absolute run that leaves them: exit status 1 with one line naming
the time and max |Φ|; `--json` still prints the summary of the part that was
valid, with `"valid": false`, `"valid_until"` (the last saved time on the
constraints), `"left_constraints_at"` and `"left_violation"`, claiming no reaction
unique (every flag of `unique` and `components` false, `decided_by` empty);
`--out` writes that part, every pair flagged not unique and the metadata saying
the run is not valid."""

import argparse
import json
import sys
import time
from typing import Any

import equinox as eqx
import jax
import numpy as np

from .. import ModelError, State
from .._options import initial_projection
from .._progress import Progress
from .._run import simulate
from .._simulate import _initial_state, raise_if_not_projected
from ..drift._projection import Projection
from ..io.config import Config, SimulationOptions
from ..io.results import component_labels, write_run
from ..joint_coordinates import (
    JointModel,
    JointTrajectory,
    JointUniquenessReport,
    decide_joint,
    joint_model,
    joint_reaction_history,
    joint_uniqueness,
    to_joint_state,
)
from ..joint_coordinates._reactions import METHOD
from ..joint_coordinates._run_validity import constraints_left_error
from ..joint_coordinates._uniqueness import STEPS
from ..monitors._rank_history import rank_history, singular_instants
from ..monitors._singularity import THRESHOLD
from ._common import (
    EXIT_FAILURE,
    Status,
    draw_bar,
    progress as _progress,
    report as _report,
    warn as _warn,
)
from ._run_summary import (
    describe_drift_control,
    integration_failure,
    motion_keys,
    validity_keys,
)

ACTIONS = {
    True: "projection onto the manifold after every integrator step (solved by the DCA)",
    False: "none (Baumgarte terms only): the motion may have left its branch",
}
"""What a joint-coordinate run did at a singular configuration, by whether it
projected after every step (as in absolute coordinates, what keeps a closed chain
on its branch: IFToMM A02 in joint coordinates passes its flat poses on the
parallelogram branch, B0 within 2e-7 m of the exact motion)."""


def _start(config: Config, options: SimulationOptions) -> tuple[State, list[float]]:
    """The initial absolute state (projected when the file says so, and refused as
    `redundax simulate` refuses it when the projection could not assemble it) and
    the size of the projection's correction."""
    state = config.state
    if initial_projection(options.initial) is None:
        return state, [0.0, 0.0]
    q, qd, correction, phi, vel = _initial_state(
        config.model, state, initial_projection(options.initial)
    )
    if not (np.all(np.isfinite(np.asarray(q))) and np.all(np.isfinite(np.asarray(qd)))):
        _refuse_weightless(config)
    raise_if_not_projected(config.model, phi, vel, options.initial.tol)
    return State(state.t, q, qd), [float(x) for x in np.asarray(correction)]


def _refuse_weightless(config: Config) -> None:
    """The initial projection is weighted by the mass matrix in natural coordinates,
    whose block of a flat plate (a lamina: I_z = I_x + I_y about its normal) is
    singular; the projection then gives NaN, which `raise_if_not_projected` would
    blame on the lengths. Refused naming the bodies (the run itself, in joint
    coordinates, weighs by the bodies' twists and needs no M⁻¹ of one body)."""
    inverse = np.asarray(config.model.bodies.inverse_mass_blocks())
    names = config.model.bodies.names
    flat = [names[b] for b in range(len(names)) if not np.all(np.isfinite(inverse[b]))]
    if flat:
        moments = np.linalg.eigvalsh(np.asarray(config.model.bodies.inertia)[names.index(flat[0])])
        raise ModelError(
            f'[simulation] initial = "project" cannot project this state: it '
            "weighs the correction by the mass matrix in natural coordinates, which is "
            f"singular for body {', '.join(map(repr, flat))} (principal moments "
            f"{', '.join(f'{m:.6g}' for m in moments)}: a flat plate, the largest the sum of "
            "the other two); give the bodies' positions and angles of an assembled state "
            '(initial = "refuse", the default)'
        )


def _drift_control(config: Config, options: SimulationOptions):
    drift = options.drift_control
    if isinstance(drift, Projection):
        raise ModelError(
            f"{config.path}: [simulation] projection = true (at the saved states only) is "
            'not offered in joint coordinates; use projection = "steps" (the default: '
            "after every step) or false (Baumgarte's terms only)"
        )
    return drift


def _singular(model, trajectory: JointTrajectory) -> dict[str, Any]:
    """The singular configurations the motion passed, from its saved absolute
    states (σ_r/σ_1 of C, refined between saves): reported, as in absolute runs."""
    if model.n_constraints == 0:
        return {
            "singular_passages": [],
            "singularity_measure": None,
            "min_sigma_ratio": None,
            "rank_changes": [],
        }
    absolute = trajectory.absolute
    gap = np.asarray(rank_history(model, absolute).relative_gap())
    ts = np.asarray(trajectory.ts)
    passages = [
        {"t": t, "sigma_ratio": ratio, "window": [], "action": ACTIONS[trajectory.projected]}
        for t, ratio, _ in singular_instants(model, absolute, threshold=THRESHOLD)
    ]
    for p in passages:  # the save interval around the instant
        k = int(np.searchsorted(ts, p["t"]))
        p["window"] = [float(ts[max(k - 1, 0)]), float(ts[min(k, ts.size - 1)])]
    return {
        "singular_passages": passages,
        "singularity_measure": "singular_values",
        "min_sigma_ratio": float(np.min(gap)),
        "rank_changes": [],
    }


def _verdicts(model, report: JointUniquenessReport):
    """What the run claims, per pair and per component: the report's stable
    verdicts (unique at the initial configuration and at the generic one next to
    it, the absolute run's decision), not those at the initial configuration only."""
    unique = dict(zip(report.names, report.stable_unique, strict=True))
    components = {
        pair.name: dict(zip(component_labels(pair), flags, strict=True))
        for pair, flags in zip(model.pairs, report.stable_row_unique, strict=True)
    }
    return unique, components


class _Progress(Progress):
    """The progress of `redundax simulate --coordinates joint`: the run in segments
    (`simulate(jm, ..., progress=...)`); after each segment the heartbeat's status
    (`t = 3.2 s of 20 s, 512 steps`, as an absolute run's), and the bar when stderr
    is a terminal."""

    def __init__(self, status: Status):
        self.status = status
        self.bar = sys.stderr.isatty()

    def report(self, t: float, t1: float, steps: int) -> None:
        self.status.text = f"t = {t:.4g} s of {t1:g} s, {steps} steps"
        if self.bar:
            draw_bar(t / t1, done=t >= t1)


def _valid_part(trajectory: JointTrajectory) -> JointTrajectory:
    """The saved states before the first invalid one (host-side)."""
    valid = np.asarray(trajectory.valid)
    k = valid.size if np.all(valid) else int(np.argmin(valid))
    per_save = lambda t: (  # noqa: E731
        t.ts, t.q, t.qd, t.x, t.xd, t.position_violation, t.velocity_violation, t.energy,
        t.valid,
    )  # fmt: skip
    return eqx.tree_at(per_save, trajectory, tuple(a[:k] for a in per_save(trajectory)))


def summary(
    config: Config,
    options: SimulationOptions,
    jm: JointModel,
    trajectory: JointTrajectory,
    report: JointUniquenessReport,
    correction: list[float],
    singular: dict[str, Any],
    out,
    validity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON object of `simulate --coordinates joint --json`: the keys of an
    absolute run (q, q̇ and the tracked points in the file's absolute coordinates;
    `valid`, `valid_until`, `left_constraints_at`, `left_violation`), and
    `coordinates`, `joint_coordinates` (names), `final_joint_q`, `final_joint_qd`,
    `tree_joints`, `cut_joints`, `decided_by`. `validity`: the keys of a run that
    left its constraints (`trajectory` its valid part), which claims no reaction
    unique (every flag false, `decided_by` empty)."""
    model = config.model
    validity = validity_keys(trajectory, None) if validity is None else validity
    claims = validity["valid"]
    unique, components = _verdicts(model, report)
    if not claims:
        unique = dict.fromkeys(unique, False)
        components = {name: dict.fromkeys(flags, False) for name, flags in components.items()}
    names = model.pair_names
    decided = zip(report.names, report.stable_step, strict=True)
    return {
        **motion_keys(config, trajectory, trajectory.x, trajectory.xd, correction),
        "coordinates": "joint",
        "joint_coordinates": list(jm.coordinate_names),
        "final_joint_q": [float(x) for x in trajectory.q[-1]],
        "final_joint_qd": [float(x) for x in trajectory.qd[-1]],
        "tree_joints": [names[k] for k in jm.tree_pairs],
        "cut_joints": [names[k] for k in jm.cut_pairs],
        **singular,
        **options.choices,
        "method": METHOD,
        "eliminated_rows": None,
        "redundancy": report.redundancy,
        "rtol": options.rtol,
        "atol": options.atol,
        "drift_control": describe_drift_control(options.drift_control),
        **validity,
        "unique": unique,
        "components": components,
        "decided_by": {n: STEPS[s] for n, s in decided} if claims else {},
        "out": None if out is None else str(out),
    }


def _write(args, config, options, jm, trajectory, report, singular, out, validity) -> None:
    """The run file: the DCA's reactions at the saved states of `trajectory` with
    the verdicts the run claims (none, every pair flagged not unique, for a run
    that is not valid: `meta["valid"]` false)."""
    _progress(f"reactions at {trajectory.ts.shape[0]} saved states...")
    history = joint_reaction_history(
        jm, trajectory, report, memory_budget=int(args.memory_budget * 2**30)
    )
    jax.block_until_ready(history.multipliers)
    model = config.model
    unique, components = _verdicts(model, report)
    flags = {name: list(f.values()) for name, f in components.items()}
    if not validity["valid"]:
        unique = dict.fromkeys(unique, False)
        flags = {name: [False] * len(f) for name, f in flags.items()}
    write_run(
        out,
        config,
        trajectory,
        history,
        unique=unique,
        component_unique=flags,
        joint_report=report,
        metadata={
            **options.choices,
            "method": METHOD,
            "t_final": float(trajectory.ts[-1]),
            **singular,
            **validity,
        },
        force=args.force,
    )
    _progress(f"wrote {out}")


def integrate(
    args: argparse.Namespace, config: Config, options: SimulationOptions, out, status: Status
) -> tuple[int, dict[str, Any] | None]:
    """Run the mechanism of `config` in joint coordinates: `(exit status, summary)`
    (the summary None when the run failed, already reported: a run that left its
    constraints prints its `--json` summary here)."""
    start = time.perf_counter()
    model = config.model
    drift = _drift_control(config, options)
    if options.choices.get("method", "null-space") != "null-space":
        _warn(
            f"{config.path}: [simulation] method = {options.choices['method']!r} is not used in "
            "joint coordinates: the DCA drops each redundant row at the assembly where it "
            "closes (one valid set of multipliers; the verdicts say which are unique)"
        )
    _progress(
        f"simulating {config.name} to t = {options.t_final:g} s in joint coordinates "
        "(the DCA; the first run of a mechanism compiles)..."
    )
    state, correction = _start(config, options)
    jm = joint_model(model, state.q)
    try:
        jstate = to_joint_state(jm, state)
    except ValueError as error:
        raise ModelError(f"{config.path}: {error}") from None
    structure = decide_joint(jm, jstate)
    report = joint_uniqueness(jm, structure, jstate)
    trajectory = simulate(
        jm,
        jstate,
        options.t_final,
        structure=structure,
        saveat=options.saveat,
        stepsize_controller=options.stepsize_controller,
        solver=options.solver,
        drift_control=drift,
        max_steps=options.max_steps,
        throw=False,
        progress=_Progress(status),
    )
    failure = integration_failure(config, options, trajectory, trajectory.q, trajectory.qd)
    if failure is not None:
        _report(failure)
        return EXIT_FAILURE, None
    left = None
    if bool(trajectory.left_constraints):
        left = constraints_left_error(jm, trajectory, str(config.path), hint="")
        status.text = f"stopped at t = {left.t:.4g} s"
        # What follows is about the part of the run that is the mechanism's motion.
        trajectory = _valid_part(trajectory)
        if trajectory.ts.shape[0] < 2:
            _report(left)
            return EXIT_FAILURE, None
    else:
        elapsed = time.perf_counter() - start
        _progress(f"integrated in {elapsed:.1f} s, {int(trajectory.num_steps)} steps")
        status.text = f"integrated ({int(trajectory.num_steps)} steps)"
    singular = _singular(model, trajectory)
    if singular["singular_passages"] and not trajectory.projected:
        first = singular["singular_passages"][0]["t"]
        _warn(
            f"{config.path}: the motion passed {len(singular['singular_passages'])} singular "
            f"configuration(s), the first at t = {first:.4g} s, with Baumgarte's terms only, "
            "which do not keep a closed chain on its branch there: the motion may have left "
            'it; set [simulation] projection = "steps" (the default)'
        )
    validity = validity_keys(trajectory, left)
    if validity["left_violation"] is not None and not np.isfinite(validity["left_violation"]):
        validity["left_violation"] = None  # the state blew up: no number to print
    if out is not None:
        _write(args, config, options, jm, trajectory, report, singular, out, validity)
    s = summary(config, options, jm, trajectory, report, correction, singular, out, validity)
    if left is None:
        return 0, s
    # One line on the error stream; with --json the object too (valid: false).
    if args.json:
        print(json.dumps(s, allow_nan=False))
    _report(left)
    return EXIT_FAILURE, None
