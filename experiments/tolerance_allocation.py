"""How accurately must Bricard's joints be made? Assembly stresses of manufacturing
tolerances (issue 37): the first-order formula against the exact compliant assembly
over three decades of misfit, and the tolerances allocated for a bound on the
assembly force, checked by Monte Carlo.

Bricard's linkage (`configs/bricard.toml`, IFToMM A04; p = 1, no reaction component
unique) rests under gravity; its joints are stiff bearings (1e8 N/m, 1e6 N m/rad).
The three joints of `configs/tolerances_bricard.toml` have their points made off
along their axes (the directions no motion of the loop absorbs).

1. Misfit sweep: J2's point off by δ = 1e-7 … 1e-4 m; the largest assembly force by
   the first-order formula λ_s = N (Nᵀ W N)⁻¹ Nᵀ g and by the exact compliant
   equilibrium (`compliant_equilibrium` of the nominal and the deviated model), their
   ratio, and the largest change of any component elsewhere.
2. Stiffness sweep: the same δ = 1e-4 m with bearings 1e6 … 1e10 N/m (moment rows
   1e-2 of that): the assembly force grows with the stiffness (stiffness × misfit
   until the moment rows and the force rows share the load).
3. Allocation: the largest tolerances σ_i (max Σ log σ_i, Optax) with the 99th
   percentile of the assembly force ≤ 50 N, then a Monte Carlo of 20,000 draws at them.

Run:
    .venv/bin/python experiments/tolerance_allocation.py     # ≈ 1-2 min on 2 cores
Writes experiments/results/tolerance_allocation/summary.json and tolerance_allocation.png.
"""

import json
import pathlib
import platform
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import redundax as rx  # noqa: E402
from redundax import statics  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "experiments" / "results" / "tolerance_allocation"
BOUND = 50.0  # N


def main() -> None:
    start = time.perf_counter()
    tol = statics.load_tolerances(ROOT / "configs" / "tolerances_bricard.toml")
    model = tol.model
    eq = rx.equilibrium(model, tol.state.q)
    nominal = statics.compliant_equilibrium(model, eq.q, tol.stiffness)

    misfit = []
    for delta in np.logspace(-7, -4, 7):
        deviated = statics.deviate(model, {"pairs.J2.point_i.y": float(delta)})
        first = np.asarray(
            statics.assembly_stress(
                model, deviated, eq.q, tol.stiffness, structure=eq.structure
            ).multipliers
        )
        exact = np.asarray(
            statics.compliant_equilibrium(deviated, eq.q, tol.stiffness).multipliers
            - nominal.multipliers
        )
        i = int(np.argmax(np.abs(first)))
        misfit.append(
            {
                "delta_m": float(delta),
                "largest_first_order_N": float(np.abs(first).max()),
                "largest_exact_N": float(np.abs(exact).max()),
                "ratio": float(exact[i] / first[i]),
                "largest_mismatch_relative": float(
                    np.abs(exact - first).max() / np.abs(first).max()
                ),
            }
        )

    stiffness = []
    for k in np.logspace(6, 10, 5):
        rows = rx.methods.joint_stiffness(model, (float(k), float(k) * 1e-2))
        deviated = statics.deviate(model, {"pairs.J2.point_i.y": 1e-4})
        lam = np.asarray(
            statics.assembly_stress(model, deviated, eq.q, rows, structure=eq.structure).multipliers
        )
        stiffness.append({"force_rows_N_per_m": float(k), "largest_N": float(np.abs(lam).max())})

    allocation = statics.allocate_tolerances(tol, BOUND, structure=eq.structure)
    drawn = tol.with_std(allocation.std, samples=20_000)
    study = statics.tolerance_study(drawn, structure=eq.structure)
    summary = {
        "mechanism": "Bricard (configs/bricard.toml) at rest under gravity, p = 1",
        "stiffness": "1e8 N/m force rows, 1e6 N m/rad moment rows",
        "misfit_sweep": misfit,
        "stiffness_sweep": stiffness,
        "allocation": {
            "bound_p99_N": BOUND,
            "std_m": allocation.std,
            "p99_gaussian_N": allocation.p99,
            "monte_carlo_20000": {p: v["force"] for p, v in study.percentiles.items()},
        },
        "wall_s": round(time.perf_counter() - start, 1),
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    d = [m["delta_m"] for m in misfit]
    a.loglog(
        d, [m["largest_first_order_N"] for m in misfit], "o-", label="first order N (NᵀWN)⁻¹Nᵀg"
    )
    a.loglog(d, [m["largest_exact_N"] for m in misfit], "x--", label="exact compliant equilibrium")
    a.set_xlabel("J2's point off along its axis, δ [m]")
    a.set_ylabel("largest assembly force or moment [N, N m]")
    a.legend(fontsize=8)
    a.set_title("Bricard, bearings 1e8 N/m, 1e6 N m/rad", fontsize=9)
    b.loglog(
        [s["force_rows_N_per_m"] for s in stiffness], [s["largest_N"] for s in stiffness], "o-"
    )
    b.set_xlabel("bearing stiffness (force rows) [N/m]")
    b.set_ylabel("largest assembly force, δ = 0.1 mm [N]")
    b.set_title(
        f"allocated σ for p99 ≤ {BOUND:g} N: "
        + ", ".join(f"{v * 1e6:.1f}" for v in allocation.std.values())
        + " µm",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(OUT / "tolerance_allocation.png", dpi=120)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
