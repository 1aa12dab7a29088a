"""Andrews' squeezing mechanism against the Bari test set's reference (issue 14).

Hairer & Wanner, *Solving ODEs II*, 2nd ed., §VII.7 (Schiehlen 1990): seven bodies,
a spring (c0 = 4530 N/m, l0 = 0.07785 m) and a driving torque (0.033 N m), written
in absolute coordinates (`configs/andrews.toml`, identical to `models.andrews()`).
From the test set's consistent initial state y0 (at rest) to t = 0.03 s, with the
library's defaults (null-space method, a projection after every step, Dopri8 at
these tolerances) at rtol = 1e-8, 1e-10, 1e-12 (atol = rtol / 100):

- the seven angles (β, Θ, γ, Φ, δ, Ω, ε) and their rates at t = 0.03 s against the
  reference (`tests/data/A03_andrews_testset_y0_and_yref_t0.03.csv`: PSIDE at
  rtol = atol = 1e-14); β and Θ have turned about 2.5 times, and absolute angles are
  integrated continuously, so no multiple of 2π is lost;
- the initial accelerations β̈, Θ̈ against y0's (an independent check of the model);
- the energy E = T + V (V: the spring's ½ c0 (l − l0)² and the torque's −mom β; the
  mechanism is conservative) and the constraint violations over 31 saved states;
- wall time of the first call (compile and run, compilation cache as configured)
  and the median of 3 warm calls, and integrator steps.

Run:  cd /work/main && .venv/bin/python experiments/andrews.py
Writes experiments/results/andrews.json.
"""

import json
import pathlib
import platform
import statistics
import time

import diffrax
import jax
import numpy as np

import redundax as rx
from redundax import models
from redundax.io import load_config

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "andrews.toml"
REFERENCE = ROOT / "tests" / "data" / "A03_andrews_testset_y0_and_yref_t0.03.csv"
OUT = ROOT / "experiments" / "results" / "andrews.json"
T_FINAL = 0.03
TOLERANCES = (1e-8, 1e-10, 1e-12)
N_SAVE = 31
WARM_RUNS = 3
ANGLES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")


def read_reference():
    """{name: (y0 at t = 0, reference at t = 0.03 s)} from the vendored CSV."""
    lines = [
        line
        for line in REFERENCE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    header = lines[0].split(",")
    out = {}
    for line in lines[1:]:
        row = dict(zip(header, line.split(","), strict=True))
        out[row["name"]] = (float(row["y0_t0"]), float(row["yref_t0.03"]))
    return out


def hairer_wanner(x):
    """(β, Θ, γ, Φ, δ, Ω, ε) (or their rates) from the bodies' absolute angles (rates)."""
    return np.array(models.andrews_angles(np.asarray(x).reshape(7, 3)[:, 2]))


def run(model, state, rtol):
    tolerances = dict(
        stepsize_controller=diffrax.PIDController(rtol=rtol, atol=rtol / 100),
        saveat=rx.SaveAt(n=N_SAVE),
    )
    start = time.perf_counter()
    traj = rx.simulate(model, state, T_FINAL, **tolerances)
    traj.q.block_until_ready()
    first = time.perf_counter() - start
    warm = []
    for _ in range(WARM_RUNS):
        start = time.perf_counter()
        rx.simulate(model, state, T_FINAL, **tolerances).q.block_until_ready()
        warm.append(time.perf_counter() - start)
    return traj, first, statistics.median(warm)


def main():
    reference = read_reference()
    config = load_config(CONFIG)
    model, state = config.model, config.state
    y0 = np.array([reference[n][0] for n in ANGLES])
    same = jax.tree.structure(model) == jax.tree.structure(models.andrews(y0).build())
    angles_ref = np.array([reference[n][1] for n in ANGLES])
    rates_ref = np.array([reference[f"d{n}/dt"][1] for n in ANGLES])

    qdd, _ = rx.equations.solve_dynamics(model, state.q, state.qd, 0.0)
    accelerations = hairer_wanner(qdd)[:2]
    accelerations_ref = np.array([reference[f"d2{n}/dt2"][0] for n in ("beta", "Theta")])

    runs = []
    for rtol in TOLERANCES:
        traj, first, warm = run(model, state, rtol)
        angles = hairer_wanner(traj.q[-1])
        rates = hairer_wanner(traj.qd[-1])
        energy = np.asarray(traj.energy)
        runs.append(
            {
                "rtol": rtol,
                "atol": rtol / 100,
                "steps": int(traj.num_steps),
                "rejected_steps": int(traj.num_rejected_steps),
                "first_call_s": round(first, 3),
                "warm_call_s": round(warm, 4),
                "angles": dict(zip(ANGLES, angles.tolist(), strict=True)),
                "angle_error_rad": dict(zip(ANGLES, (angles - angles_ref).tolist(), strict=True)),
                "max_angle_error_rad": float(np.max(np.abs(angles - angles_ref))),
                "rate_error_rad_s": dict(zip(ANGLES, (rates - rates_ref).tolist(), strict=True)),
                "max_rate_error_relative": float(
                    np.max(np.abs(rates - rates_ref)) / np.max(np.abs(rates_ref))
                ),
                "energy_J": float(energy[0]),
                "max_energy_error_J": float(np.max(np.abs(energy - energy[0]))),
                "max_position_violation_m": float(np.max(traj.position_violation)),
                "max_velocity_violation_m_s": float(np.max(traj.velocity_violation)),
            }
        )
        print(
            f"rtol {rtol:g}: {runs[-1]['steps']} steps, first call {first:.2f} s, warm "
            f"{warm * 1e3:.1f} ms, max angle error {runs[-1]['max_angle_error_rad']:.2e} rad, "
            f"energy error {runs[-1]['max_energy_error_J']:.1e} J"
        )

    summary = {
        "mechanism": "Andrews' squeezing mechanism (Hairer & Wanner, Solving ODEs II, §VII.7)",
        "config": str(CONFIG.relative_to(ROOT)),
        "reference": str(REFERENCE.relative_to(ROOT)),
        "config_equals_models_andrews": bool(same),
        "t_final": T_FINAL,
        "n_save": N_SAVE,
        "method": "null-space (default), StepProjection (default), Dopri8 (default at rtol < 1e-6)",
        "reference_angles": dict(zip(ANGLES, angles_ref.tolist(), strict=True)),
        "initial_accelerations": {
            "beta_Theta": accelerations.tolist(),
            "reference": accelerations_ref.tolist(),
            "relative_error": float(
                np.max(np.abs(accelerations - accelerations_ref) / np.abs(accelerations_ref))
            ),
        },
        "runs": runs,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "jax": jax.__version__,
            "backend": jax.default_backend(),
        },
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
