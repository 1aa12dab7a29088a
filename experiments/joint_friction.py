"""Joint friction where the reactions it needs do not exist (issue 38): Bricard's
linkage (p = 1, no reaction component unique) against the planar four-bar built with
spatial revolutes (p = 3, in-plane pin forces unique), each with pin friction at
every joint from the joint's radial force (μ = 0.1, pin radius 1 cm, v_t = 0.01
rad/s), falling from rest under gravity for 2 s.

1. Rigid: Bricard's friction is refused before the run (its radial forces are not
   unique); the four-bar's runs, the same under every method.
2. Compliant joints in their rigid limit (`methods.Compliant`, bearings 1e8 N/m and
   1e6 N m/rad), the stiffness of one joint (J0, or the crank pin O) scaled by r =
   1e-2 … 1e2 against the others: the energy friction dissipates. Where the friction
   reads unique components it does not move (four-bar); where it reads non-unique
   ones it is a function of r, a parameter the rigid model does not have (Bricard).
3. Finite stiffness (`methods.Penalty`, all joints k = 1e5 … 1e8 N/m, moment rows
   k/100; at 1e4 the joints give more than the validity criterion allows and the run
   is refused as having left its constraints, at 1e9 its multipliers, α times a
   residual at round-off, are too noisy for the friction's fixed point, and the run
   stops saying so): as k grows the dissipated energy converges (the rigid limit of
   a compliant model exists, Wojtyra & Frączek 2013), for the four-bar to the rigid
   answer, for Bricard to a value that depends on how the stiffness is distributed.

Run:
    .venv/bin/python experiments/joint_friction.py     # ≈ 5 min on 2 cores
    .venv/bin/python experiments/joint_friction.py --figure-only   # from summary.json
Writes experiments/results/joint_friction/summary.json and joint_friction.png.
"""

import dataclasses
import json
import pathlib
import platform
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import redundax as rx  # noqa: E402
from redundax import models  # noqa: E402
from redundax.forces import JointFriction  # noqa: E402
from redundax.io.config import load_config  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "experiments" / "results" / "joint_friction"
T_END, N_SAVE = 2.0, 401
RATIOS = np.logspace(-2, 2, 9)
STIFFNESS = np.logspace(5, 8, 4)


def _with_friction(mech):
    friction = [
        JointFriction(
            p.name, coefficient=0.1, inputs={"radial force": 0.01}, transition_velocity=1e-2
        )
        for p in mech.pairs
    ]
    return dataclasses.replace(mech, forces=friction)


def _dissipated(model, state, method) -> float:
    run = rx.simulate(model, state, T_END, method=method, saveat=rx.SaveAt(n=N_SAVE))
    assert bool(np.all(run.valid)), "the run left its constraints"
    report = rx.analysis.friction_report(model, run, method=method)
    return float(-np.sum(np.asarray(report.work)))


def _study(name: str, mech, scaled_pair: str) -> dict:
    mech = _with_friction(mech)
    model, state = mech.build(), mech.initial_state()
    out: dict = {"mechanism": name, "scaled_pair": scaled_pair}
    try:
        out["rigid_dissipated_J"] = _dissipated(model, state, rx.methods.NullSpace())
        out["rigid"] = "runs"
    except rx.ModelError as error:
        out["rigid"] = str(error).splitlines()[1].strip()
    base = np.asarray(rx.methods.joint_stiffness(model, (1e8, 1e6)))
    rows = list(model.pair(scaled_pair).rows)
    ratio = []
    for r in RATIOS:
        k = base.copy()
        k[rows] *= r
        ratio.append(_dissipated(model, state, rx.methods.Compliant(k)))
    out["compliant_ratio"] = {"r": RATIOS.tolist(), "dissipated_J": ratio}
    penalty = []
    for k in STIFFNESS:
        stiffness = rx.methods.joint_stiffness(model, (float(k), float(k) * 1e-2))
        penalty.append(_dissipated(model, state, rx.methods.Penalty(stiffness)))
    out["penalty_stiffness"] = {"k_N_per_m": STIFFNESS.tolist(), "dissipated_J": penalty}
    spread = (max(ratio) - min(ratio)) / np.mean(ratio)
    out["relative_spread_over_r"] = float(spread)
    out["penalty_vs_compliant_r1_relative"] = float(
        abs(penalty[-1] - ratio[len(RATIOS) // 2]) / ratio[len(RATIOS) // 2]
    )
    return out


def main() -> None:
    start = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    bricard = load_config(ROOT / "configs" / "bricard.toml").mechanism
    four_bar = models.spatial_twin(models.four_bar(crank_angle=0.6))
    studies = [
        _study("Bricard (configs/bricard.toml), p = 1", bricard, "J0"),
        _study("four-bar with spatial revolutes, p = 3", four_bar, "O"),
    ]
    summary = {
        "friction": "μ = 0.1 on the radial force, pin radius 0.01 m, v_t = 0.01 rad/s, "
        "every joint; 2 s from rest under gravity",
        "studies": studies,
        "wall_s": round(time.perf_counter() - start, 1),
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    figure(summary)
    print(json.dumps(summary, indent=1))


def figure(summary: dict) -> None:
    """The energy dissipated against the stiffness ratio (compliant limit), and its
    distance from the stiffest penalty run's against the stiffness (penalty)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for study, marker in zip(summary["studies"], ("o", "s"), strict=True):
        label = study["mechanism"].split(" (")[0].split(",")[0]
        ratio = study["compliant_ratio"]
        left.semilogx(ratio["r"], ratio["dissipated_J"], marker=marker, label=label)
        pen = study["penalty_stiffness"]
        last = pen["dissipated_J"][-1]  # the stiffest
        gap = [abs(e - last) / last for e in pen["dissipated_J"][:-1]]
        right.loglog(pen["k_N_per_m"][:-1], gap, marker=marker, label=label)
    left.set_xlabel("stiffness ratio r of one joint (J0 / O) to the others")
    left.set_ylabel("energy dissipated by friction in 2 s [J]")
    left.set_title(
        "compliant limit: the energy depends on r\nwhere the friction's inputs are not unique"
    )
    right.set_xlabel("joint stiffness k [N/m] (moment rows k/100)")
    right.set_ylabel("|E(k) − E(1e8 N/m)| / E")
    right.set_title("finite stiffness (penalty): converges as k grows")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "joint_friction.png", dpi=120)


if __name__ == "__main__":
    if sys.argv[1:] == ["--figure-only"]:  # from the committed summary
        figure(json.loads((OUT / "summary.json").read_text()))
    else:
        main()
