"""What `redundax simulate` says of any run, in absolute or joint coordinates: why an
integration failed, and the keys of the summary that describe the motion."""

from typing import Any

import diffrax
import numpy as np

from .. import ModelError
from ..drift._base import NoDriftControl
from ..drift._baumgarte import Baumgarte
from ..drift._projection import Projection
from ..drift._step_projection import StepProjection
from ..equations import marker_positions
from ..io.config import Config, SimulationOptions


def integration_failure(
    config: Config, options: SimulationOptions, trajectory, q, qd
) -> RuntimeError | None:
    """The error to report when the integration did not reach t_final (its result
    code, or non-finite saved states `q`, `qd`); None when it did, or when it
    stopped because the motion left its constraints (see `validity_keys`).
    Raises `ModelError` when the energy overflows (the model's units)."""
    if bool(getattr(trajectory, "left_constraints", False)):
        return None
    if trajectory.result == diffrax.RESULTS.max_steps_reached:
        return RuntimeError(
            f"{config.path}: the integrator took [simulation] max_steps = "
            f"{options.max_steps} steps before t_final = {options.t_final:g} s; raise "
            f"max_steps (the run needs more steps), or loosen rtol = {options.rtol:g}"
        )
    if trajectory.result != diffrax.RESULTS.successful:
        reason = diffrax.RESULTS[trajectory.result]
        return RuntimeError(
            f"{config.path}: integration failed at t ≤ {options.t_final:g} s: {reason} "
            f"([simulation] max_steps = {options.max_steps}, rtol = {options.rtol:g})"
        )
    if not (np.all(np.isfinite(np.asarray(q))) and np.all(np.isfinite(np.asarray(qd)))):
        return RuntimeError(f"{config.path}: integration failed: non-finite q or q̇")
    if not np.all(np.isfinite(np.asarray(trajectory.energy))):
        scale = float(np.max(np.abs(np.asarray(config.state.q)), initial=0.0))
        raise ModelError(
            "the energy is not finite: float64 overflows with the numbers of this model "
            f"(its initial coordinates reach {scale:.3g}); state the mechanism in units "
            "that keep its numbers of a sensible size (SI: m, kg, s)"
        )
    return None


def motion_keys(config: Config, trajectory, q, qd, correction) -> dict[str, Any]:
    """The summary's keys on the motion (DESIGN.md §7): counts, violations, the
    final state `q[-1]`, `qd[-1]` (absolute coordinates), tracked points, energy
    error; `correction`: max |Δq|, |Δq̇| of the initial projection."""
    position = float(np.max(np.asarray(trajectory.position_violation)))
    velocity = float(np.max(np.asarray(trajectory.velocity_violation)))
    tracked = np.asarray(marker_positions(config.model, q[-1]))
    energy = np.asarray(trajectory.energy)
    # Prescribed motion, dampers, time-dependent loads and torques on spatial bodies
    # do work that no potential describes: the energy is not conserved. Everything
    # else (every other pair, knife edges, gravity, constant loads, springs) keeps it.
    conservative = not (config.rheonomic or config.nonconservative)
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
        "initial_correction": [float(x) for x in correction],
        "final_q": [float(x) for x in q[-1]],
        "final_qd": [float(x) for x in qd[-1]],
        "tracked": {
            name: [float(x) for x in tracked[k]]
            for k, name in enumerate(config.model.markers.names)
        },
        "energy_error": float(np.max(np.abs(energy - energy[0]))) if conservative else None,
        "rheonomic": list(config.rheonomic),
        "nonconservative": list(config.nonconservative),
    }


def validity_keys(trajectory, error) -> dict[str, Any]:
    """The summary's keys on whether the run is the mechanism's motion: `valid`,
    `valid_until` (the last saved time on the constraints, or null),
    `left_constraints_at` and `left_violation` (null for a valid run). `error`:
    the run's `ConstraintsLeftError`, or None when it is valid."""
    if error is None:
        return {
            "valid": True,
            "valid_until": float(np.asarray(trajectory.ts)[-1]),
            "left_constraints_at": None,
            "left_violation": None,
        }
    return {
        "valid": False,
        "valid_until": error.valid_until,
        "left_constraints_at": error.t,
        "left_violation": error.violation,
    }


def describe_drift_control(drift_control) -> str:
    """The drift control a run used, in words, with its gains (for the summary's
    `drift_control` key and its text)."""

    def gains(b) -> str:
        if b is None:
            return "no Baumgarte terms"
        return f"Baumgarte terms α = {float(b.alpha):g}, β = {float(b.beta):g} /s"

    if isinstance(drift_control, StepProjection):
        return f"projection after every step ({gains(drift_control.baumgarte)} between)"
    if isinstance(drift_control, Projection):
        return f"projection at every saved state ({gains(drift_control.baumgarte)} between)"
    if isinstance(drift_control, Baumgarte):
        return gains(drift_control).replace("terms ", "", 1) + " (no projection)"
    if isinstance(drift_control, NoDriftControl) or drift_control is None:
        return "none"
    return type(drift_control).__name__
