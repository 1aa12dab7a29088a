"""Bricard's mechanism with González et al.'s semi-implicit Euler stepper (seed 001:
González, Kövecses, Teichmann & Courchesne 2011, §2.1–2.2 and Fig. 2).

The seed integrates Bricard's mechanism (IFToMM A04, DESIGN.md §8) for 10 s with
h = 1e-2 s and reports that
(a) with (near-)rigid constraints and no projection the constraint violation
    (‖Φ‖ < 1e-4) makes the step's equations incompatible: the mechanism turns into
    a structure over parts of its motion (P3's x stops oscillating between −1 and 1);
(b) angular compliance in the joints restores the motion, with a somewhat larger
    constraint violation;
(c) projecting positions and velocities onto the constraint manifold after every
    step (seed Eqs. 2–3) restores it as well, with the violation at machine
    precision.

Here, with `rx.simulate(..., solver=rx.GonzalezStepper(h=1e-2, ...))` over 10 s:
(a) every joint row gets a tiny compliance c (a redundant set of exactly rigid rows
    makes the step matrix A M⁻¹ Aᵀ + C̄ singular, which the library refuses), swept
    over RIGID_SWEEP; the figure shows the stiffest c whose run completes;
(b) as (a), plus the angular compliance B_BENDING on the bending rows of every
    revolute joint (component labels containing "moment"); B_SWEEP in the summary;
(c) as (a), plus the projection after every step;
and the null-space reference (`rx.simulate`, Dopri8, rtol 1e-10).
Locking is detected on x(P3): the mechanism counts as locked from the first time
after which x varies by less than LOCK_RANGE over the next half period (2.5 s).

Run:  cd /work/main && .venv/bin/python experiments/bricard_gonzalez.py [--quick]
Writes experiments/results/bricard_gonzalez/: summary.json, fig2_x_violation.png
(x of P3, max |Φ| and E(t) − E(0) over time), series.csv.
(--quick writes to $TMPDIR/redundax_quick/bricard_gonzalez/ instead, leaving the results alone.)
"""

import os

# On this shared 2-core machine OpenBLAS's worker threads contend with the other
# jobs: a 60 × 60 SVD (LAPACK, as in the projection) took 45–130 ms with the
# default threads and 2 ms with one, at a load average of 9–11. One thread unless
# the shell says otherwise; set before NumPy and JAX load OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import csv
import json
import pathlib
import platform
import subprocess
import tempfile
import time

import diffrax
import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import redundax as rx  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent / "results" / "bricard_gonzalez"
OUT_QUICK = pathlib.Path(tempfile.gettempdir()) / "redundax_quick" / "bricard_gonzalez"
T_FINAL = 10.0
H = 1e-2
HALF_PERIOD = 2.5  # [s], of the rigid motion (period 4.99 s, results/bricard)
LOCK_RANGE = 0.1  # [m]: x varying by less than this over a half period = locked
RIGID_SWEEP = [1e-10, 1e-12, 1e-14, 1e-15, 1e-16, 5e-17, 2e-17, 1e-17]  # [m/N, rad/(N m)]
QUICK_SWEEP = [1e-12, 1e-16]
B_BENDING = 1e-4  # [rad/(N m)]
B_SWEEP = [1e-7, 1e-6, 1e-5, 1e-4]


def git_info():
    """Commit of the library the results were computed with (the tree is shared)."""
    root = pathlib.Path(__file__).resolve().parent.parent

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False
        ).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "src_modified": git("status", "--porcelain", "src").splitlines(),
    }


def lock_time(ts, x):
    """First t from which x varies by less than LOCK_RANGE over the next half
    period (None: never)."""
    dt = ts[1] - ts[0]
    w = int(round(HALF_PERIOD / dt))
    for k in range(len(ts) - w):
        seg = x[k : k + w + 1]
        if seg.max() - seg.min() < LOCK_RANGE:
            return float(ts[k])
    return None


def turning_points(ts, x):
    dx = np.diff(x)
    idx = np.flatnonzero(np.sign(dx[1:]) != np.sign(dx[:-1])) + 1
    # Ignore wiggles smaller than 1 mm.
    out = [(float(ts[k]), float(x[k])) for k in idx]
    kept = []
    for t, v in out:
        if not kept or abs(v - kept[-1][1]) > 1e-3:
            kept.append((t, v))
    return kept


def run_variant(model, state0, markers, compliance, projection, ref):
    start = time.perf_counter()
    traj = rx.simulate(
        model,
        state0,
        T_FINAL,
        solver=rx.GonzalezStepper(h=H, compliance=compliance, projection=projection),
    )
    jax.block_until_ready(traj.q)
    wall = time.perf_counter() - start
    ts = np.asarray(traj.ts)
    P = np.asarray(markers(traj.q))[:, 0]
    x = P[:, 0]
    energy = np.asarray(traj.energy)
    lam = np.abs(np.asarray(traj.multipliers))
    tp = turning_points(ts, x)
    entry = {
        "first_call_wall_s (incl. compile)": wall,
        "num_steps": int(traj.num_steps),
        "projection_converged": bool(traj.projection_converged),
        "x_min": float(x.min()),
        "x_max": float(x.max()),
        "x_after_5s_min_max": [float(x[ts >= 5.0].min()), float(x[ts >= 5.0].max())],
        "lock_time_s": lock_time(ts, x),
        "x_turning_points (t, x)": tp,
        "position_violation_max": float(np.max(traj.position_violation)),
        "position_violation_median": float(np.median(traj.position_violation)),
        "velocity_violation_max": float(np.max(traj.velocity_violation)),
        "energy_initial_J": float(energy[0]),
        "energy_final_J": float(energy[-1]),
        "energy_change_max_abs_J": float(np.max(np.abs(energy - energy[0]))),
        "multipliers_max_abs": float(lam.max()),
        "multipliers_median_of_max_abs": float(np.median(lam.max(axis=1))),
        "P3_error_vs_null_space_max_m": float(np.max(np.linalg.norm(P - ref, axis=1))),
    }
    series = {
        "ts": ts,
        "x": x,
        "violation": np.asarray(traj.position_violation),
        "energy": energy,
    }
    return entry, series


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="sweep two compliances only")
    args = parser.parse_args()
    out = OUT_QUICK if args.quick else OUT  # a quick run leaves the results alone
    sweep = QUICK_SWEEP if args.quick else RIGID_SWEEP
    load_before = os.getloadavg()
    wall0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)

    mech = rx.models.bricard()
    model, state0 = mech.build(), mech.initial_state()
    markers = jax.jit(jax.vmap(lambda q: rx.equations.marker_positions(model, q)))
    nc = model.n_constraints
    joint_rows = np.array([r for p in model.pairs for r in p.rows])
    bending_rows = np.array(
        [
            r
            for p in model.pairs
            for r, lab in zip(p.rows, p.components, strict=True)
            if "moment" in lab
        ]
    )

    def compliance(c_joint, c_bending=None):
        c = np.zeros(nc)  # rigid-body rows of the rods stay exactly rigid
        c[joint_rows] = c_joint
        if c_bending is not None:
            c[bending_rows] = c_bending
        return rx.Compliance(c)

    # Null-space reference at the stepper's output times.
    ts_ref = jnp.linspace(0.0, T_FINAL, round(T_FINAL / H) + 1)
    ref = rx.simulate(
        model,
        state0,
        T_FINAL,
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
        solver=diffrax.Dopri8(),
        saveat=rx.SaveAt(ts=ts_ref),
    )
    P_ref = np.asarray(markers(ref.q))[:, 0]
    reference = {
        "solver": "Dopri8, rtol 1e-10, atol 1e-12, NullSpace, Baumgarte(10, 10)",
        "num_steps": int(ref.num_steps),
        "position_violation_max": float(jnp.max(ref.position_violation)),
        "x_min_max": [float(P_ref[:, 0].min()), float(P_ref[:, 0].max())],
        "lock_time_s": lock_time(np.asarray(ts_ref), P_ref[:, 0]),
    }

    results, series = {}, {}
    # (a) near-rigid joints, no projection: sweep of the compliance, from soft to
    # stiff. The figure shows the stiffest one whose run completes (stiffer ones make
    # the Cholesky factorisation of the step matrix fail).
    sweep_results, sweep_series = {}, {}
    for c in sweep:
        key = f"{c:g}"
        try:
            entry, s = run_variant(model, state0, markers, compliance(c), False, P_ref)
        except Exception as e:  # noqa: BLE001 — a failed run is a result here
            lines = [ln for ln in str(e).splitlines() if "simulate (GonzalezStepper)" in ln]
            sweep_results[key] = {"failed": f"{type(e).__name__}: {(lines or [str(e)])[-1]}"}
            print(f"(a) c = {c:g}: failed ({sweep_results[key]['failed'][:100]})")
            continue
        sweep_results[key], sweep_series[c] = entry, s
        print(
            f"(a) c = {c:g}: x ∈ [{entry['x_min']:.3f}, {entry['x_max']:.3f}], after 5 s "
            f"{np.round(entry['x_after_5s_min_max'], 3).tolist()}, lock at "
            f"{entry['lock_time_s']}, |Φ| ≤ {entry['position_violation_max']:.1e}, "
            f"ΔE {entry['energy_final_J'] - entry['energy_initial_J']:+.2f} J, "
            f"|λ| ≤ {entry['multipliers_max_abs']:.1e}"
        )
    c_rigid = min(sweep_series)
    results["(a) near-rigid, no projection"] = sweep_results[f"{c_rigid:g}"]
    series["(a)"] = sweep_series[c_rigid]
    # (b) angular compliance on the bending rows: a sweep, then the figure's value.
    bending_sweep = {}
    for cb in [] if args.quick else B_SWEEP:
        entry, _ = run_variant(model, state0, markers, compliance(c_rigid, cb), False, P_ref)
        bending_sweep[f"{cb:g}"] = entry
        print(
            f"(b) bending c = {cb:g}: x ∈ [{entry['x_min']:.4f}, {entry['x_max']:.4f}], "
            f"|Φ| ≤ {entry['position_violation_max']:.1e}, "
            f"ΔE {entry['energy_final_J'] - entry['energy_initial_J']:+.3f} J"
        )

    results["(b) compliant bending rows"], series["(b)"] = run_variant(
        model, state0, markers, compliance(c_rigid, B_BENDING), False, P_ref
    )
    # (c) projection after every step.
    results["(c) near-rigid + projection"], series["(c)"] = run_variant(
        model, state0, markers, compliance(c_rigid), True, P_ref
    )
    for name, e in results.items():
        print(
            f"{name}: x ∈ [{e['x_min']:.3f}, {e['x_max']:.3f}], lock at {e['lock_time_s']}, "
            f"|Φ| ≤ {e['position_violation_max']:.1e}, P3 error vs null space "
            f"{e['P3_error_vs_null_space_max_m']:.2e} m, "
            f"{e['first_call_wall_s (incl. compile)']:.1f} s"
        )

    # ---- figure (seed Fig. 2) ----------------------------------------------------------
    styles = {
        "(a)": ("tab:red", "-", f"(a) near-rigid c = {c_rigid:g}, no projection"),
        "(b)": ("tab:blue", "-", f"(b) + bending compliance {B_BENDING:g} rad/(N m)"),
        "(c)": ("tab:green", "--", "(c) near-rigid + projection"),
    }
    fig, axes = plt.subplots(
        3, 1, figsize=(9.0, 9.0), sharex=True, gridspec_kw={"height_ratios": (3, 3, 1.6)}
    )
    ax = axes[0]
    ax.plot(
        np.asarray(ts_ref), P_ref[:, 0], color="k", lw=2.6, alpha=0.35, label="null-space reference"
    )
    for key, (c, ls, label) in styles.items():
        ax.plot(series[key]["ts"], series[key]["x"], color=c, ls=ls, lw=1.2, label=label)
    lock = results["(a) near-rigid, no projection"]["lock_time_s"]
    if lock is not None:
        ax.axvline(lock, color="tab:red", lw=0.8, ls=":")
        ax.text(lock, 1.05, f" (a) locked from t ≈ {lock:.2f} s", color="tab:red", fontsize=8)
    else:
        tp = results["(a) near-rigid, no projection"]["x_turning_points (t, x)"]
        if tp:
            ax.annotate(
                f"(a) turns back at x = {tp[0][1]:.2f}",
                tp[0],
                xytext=(12, 10),
                textcoords="offset points",
                color="tab:red",
                fontsize=8,
            )
    ax.set(ylabel="x of P3 [m]", ylim=(-1.15, 1.75))
    ax.set_title(
        f"Bricard A04, González et al. stepper, h = {H:g} s (seed 001, Fig. 2)", fontsize=10
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper center", ncols=2)
    ax = axes[1]
    ax.semilogy(
        np.asarray(ts_ref),
        np.maximum(np.asarray(ref.position_violation), 1e-17),
        color="k",
        lw=2.0,
        alpha=0.35,
        label="null-space reference",
    )
    for key, (c, ls, label) in styles.items():
        ax.semilogy(
            series[key]["ts"],
            np.maximum(series[key]["violation"], 1e-17),
            color=c,
            ls=ls,
            lw=1.0,
            label=label,
        )
    ax.set(
        ylabel="constraint violation max |Φ| [m]",
        xlim=(0, T_FINAL),
        ylim=(1e-17, 1.0),
    )
    ax.grid(alpha=0.3, which="both")
    ax = axes[2]
    ax.plot(
        np.asarray(ts_ref), np.asarray(ref.energy - ref.energy[0]), color="k", lw=2.0, alpha=0.35
    )
    for key, (c, ls, _) in styles.items():
        e = series[key]["energy"]
        ax.plot(series[key]["ts"], e - e[0], color=c, ls=ls, lw=1.0)
    ax.set(xlabel="time t [s]", ylabel="E(t) − E(0) [J]", xlim=(0, T_FINAL))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "fig2_x_violation.png", dpi=150)
    plt.close(fig)

    with open(out / "series.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["t", "x_ref", "viol_ref"]
            + [f"{k}_{q}" for k in styles for q in ("x", "violation", "energy")]
        )
        for i, t in enumerate(np.asarray(ts_ref)):
            row = [f"{t:.4f}", f"{P_ref[i, 0]:.10g}", f"{float(ref.position_violation[i]):.3e}"]
            for k in styles:
                row += [
                    f"{series[k]['x'][i]:.10g}",
                    f"{series[k]['violation'][i]:.3e}",
                    f"{series[k]['energy'][i]:.8g}",
                ]
            w.writerow(row)

    summary = {
        "mechanism": "Bricard, IFToMM A04 (rx.models.bricard())",
        "h": H,
        "t_final": T_FINAL,
        "compliance_rows": {
            "joint rows": int(joint_rows.size),
            "bending rows (labels with 'moment')": int(bending_rows.size),
            "rigid-body rows of the rods": "compliance 0",
            "damping_time": 0.0,
        },
        "lock_criterion": f"x(P3) varies by < {LOCK_RANGE} m over the next {HALF_PERIOD} s",
        "reference": reference,
        "sweep_a_near_rigid_no_projection": sweep_results,
        "sweep_b_bending_compliance_rad_per_Nm": bending_sweep,
        "variants": results,
        "settings": {
            "near-rigid compliance of (a), (b), (c) [m/N, rad/(N m)]": c_rigid,
            "bending compliance of (b) [rad/(N m)]": B_BENDING,
        },
        "quick": args.quick,
        "machine": {
            "os.cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "diffrax": diffrax.__version__,
            "numpy": np.__version__,
            "redundax": rx.__version__,
            "loadavg_before": list(load_before),
            "loadavg_after": list(os.getloadavg()),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "git": git_info(),
        },
        "script_wall_s": time.perf_counter() - wall0,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"wall {summary['script_wall_s']:.1f} s; wrote {out}")


if __name__ == "__main__":
    main()
