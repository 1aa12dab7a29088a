"""Bricard's mechanism, IFToMM benchmark A04 (DESIGN.md §8; seed 001, González et al. 2011).

1. Solvability analysis: the Grübler–Kutzbach count 6·5 − 5·6 = 0 against the
   rank of C (mobility 1, degree of redundancy 1), and which joint reactions and
   which reaction components are unique, at the initial (square) configuration and
   at two later configurations of the simulated motion (projected onto the
   constraint manifold first, so that the rank decision is not blurred by drift).
2. The 10 s benchmark motion under gravity, null-space method, Dopri8 at
   rtol = 1e-10, atol = 1e-12, default Baumgarte stabilisation: the trajectory of
   the tracked point P3 (far end of rod 2), the energy error and the constraint
   violations over time.
3. For comparison, a planar four-bar (the geometry of `models.four_bar()`) built
   from spatial bodies and spatial revolute joints with parallel z axes (González
   et al.'s example of redundancy that a generic 3-D model creates): its degree of
   redundancy and which reaction components are unique.

Run:  cd /work/main && .venv/bin/python experiments/bricard.py [--quick]
Writes experiments/results/bricard/: summary.json, solvability_*.txt,
fig_p3.png, fig_energy_violation.png, p3.csv.
(--quick writes to $TMPDIR/redundax_quick/bricard/ instead, leaving the results alone.)
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
import math
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

OUT = pathlib.Path(__file__).resolve().parent / "results" / "bricard"
OUT_QUICK = pathlib.Path(tempfile.gettempdir()) / "redundax_quick" / "bricard"
T_FINAL = 10.0
FULL = {"rtol": 1e-10, "atol": 1e-12, "n_save": 1001}
QUICK = {"rtol": 1e-8, "atol": 1e-10, "n_save": 401}
PROJECTION = rx.drift.Projection(iterations=6)
# Four-bar geometry of `rx.models.four_bar()` (its defaults) [m, rad].
FOUR_BAR = {"ground": 1.0, "crank": 0.4, "coupler": 1.2, "rocker": 0.8, "crank_angle": math.pi / 3}
ROD_SIDE = 0.02  # square cross-section of the four-bar's links [m] (inertia only)


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


def machine_info(load_before):
    return {
        "os.cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
        "diffrax": diffrax.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "redundax": rx.__version__,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
        "git": git_info(),
    }


def analysis_entry(report):
    """The report's JSON, plus the component verdicts in a compact form."""
    d = report.to_dict()
    row_b = np.asarray(report.row_b_norm)
    joint_rows = [r for rows in report.rows for r in rows]
    d["unique_pairs"] = [n for n, e in d["pairs"].items() if e["unique"]]
    d["non_unique_pairs"] = [n for n, e in d["pairs"].items() if not e["unique"]]
    d["unique_components"] = {
        n: [lab for lab, u in e["components"].items() if u] for n, e in d["pairs"].items()
    }
    d["non_unique_components"] = {
        n: [lab for lab, u in e["components"].items() if not u] for n, e in d["pairs"].items()
    }
    # How far from the threshold the per-row verdicts are (‖B_k‖ = ‖C_k‖ ‖N_k‖).
    d["joint_rows_b_norm_min_max"] = [
        float(row_b[joint_rows].min()),
        float(row_b[joint_rows].max()),
    ]
    d["tolerance_utol"] = float(report.tolerance)
    return d


def four_bar_3d():
    """The planar four-bar of `rx.models.four_bar()` as a spatial mechanism: three
    slender links in the z = 0 plane (m = 1 kg/m · length, thin square section) and
    four spatial revolute joints O, A, B, D, all about z."""
    g, a, c, r, th = (FOUR_BAR[k] for k in ("ground", "crank", "coupler", "rocker", "crank_angle"))
    O = np.array([0.0, 0.0])  # noqa: E741 (the joint's name in models.four_bar)
    A = np.array([a * math.cos(th), a * math.sin(th)])
    D = np.array([g, 0.0])
    # B: |B − A| = coupler, |B − D| = rocker, upper branch (as models.four_bar).
    d = D - A
    dist = float(np.hypot(*d))
    along = (c**2 - r**2 + dist**2) / (2 * dist)
    h = math.sqrt(max(c**2 - along**2, 0.0))
    B = A + along * d / dist + h * np.array([-d[1], d[0]]) / dist

    def link(name, start, end):
        u = end - start
        length = float(np.hypot(*u))
        u = u / length
        m = 1.0 * length
        rotation = np.array([[u[0], -u[1], 0.0], [u[1], u[0], 0.0], [0.0, 0.0, 1.0]])
        inertia = (
            m * 2 * ROD_SIDE**2 / 12,
            m * (length**2 + ROD_SIDE**2) / 12,
            m * (length**2 + ROD_SIDE**2) / 12,
        )
        centre = (*(0.5 * (start + end)), 0.0)
        return rx.SpatialBody(name, m, inertia, position=centre, rotation=rotation)

    z = (0.0, 0.0, 1.0)

    def p3(x):
        return (float(x[0]), float(x[1]), 0.0)

    mech = rx.Mechanism(
        bodies=[link("crank", O, A), link("coupler", A, B), link("rocker", D, B)],
        pairs=[
            rx.joints.Revolute3D("O", "crank", "ground", point=p3(O), axis=z),
            rx.joints.Revolute3D("A", "crank", "coupler", point=p3(A), axis=z),
            rx.joints.Revolute3D("B", "coupler", "rocker", point=p3(B), axis=z),
            rx.joints.Revolute3D("D", "rocker", "ground", point=p3(D), axis=z),
        ],
        gravity=(0.0, -9.81, 0.0),
    )
    return mech, {"O": p3(O), "A": p3(A), "B": p3(B), "D": p3(D)}


def first_index(mask):
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else None


def fig_p3(ts, P, path, tag):
    fig = plt.figure(figsize=(11.0, 6.4))
    gs = fig.add_gridspec(3, 2, width_ratios=(1.6, 1.0))
    labels = ("x", "y", "z")
    for k in range(3):
        ax = fig.add_subplot(gs[k, 0])
        ax.plot(ts, P[:, k], "k", lw=1.3)
        ax.set_ylabel(f"P3 {labels[k]} [m]")
        ax.set_xlim(0, T_FINAL)
        ax.grid(alpha=0.3)
        if k == 0:
            ax.set_title(f"Bricard A04: tracked point P3, null-space method ({tag})", fontsize=10)
        if k == 2:
            ax.set_xlabel("time t [s]")
    ax3 = fig.add_subplot(gs[:, 1], projection="3d")
    ax3.plot(P[:, 0], P[:, 2], P[:, 1], "k", lw=1.0)
    ax3.plot([P[0, 0]], [P[0, 2]], [P[0, 1]], "o", color="tab:red", label="t = 0")
    ax3.set(xlabel="x [m]", ylabel="z [m]", zlabel="y [m]", title="path of P3")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def fig_energy_violation(ts, energy_error, pos, vel, path, tag):
    fig, axes = plt.subplots(2, 1, figsize=(7.5, 6.0), sharex=True)
    ax = axes[0]
    ax.semilogy(ts[1:], np.maximum(np.abs(energy_error[1:]), 1e-18), "k", lw=1.0)
    ax.set_ylabel("|E(t) − E(0)| [J]")
    ax.set_title(f"Bricard A04: energy error and constraint violation ({tag})", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax = axes[1]
    ax.semilogy(ts, np.maximum(pos, 1e-18), "tab:blue", lw=1.0, label="max |Φ| [m]")
    ax.semilogy(ts, np.maximum(vel, 1e-18), "tab:orange", lw=1.0, label="max |C q̇| [m/s]")
    ax.set(xlabel="time t [s]", ylabel="constraint violation", xlim=(0, T_FINAL))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="looser tolerance, fewer saves")
    args = parser.parse_args()
    out = OUT_QUICK if args.quick else OUT  # a quick run leaves the results alone
    cfg = QUICK if args.quick else FULL
    tag = f"Dopri8, rtol {cfg['rtol']:g}, atol {cfg['atol']:g}"
    load_before = os.getloadavg()
    wall0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)

    mech = rx.models.bricard()
    model, state0 = mech.build(), mech.initial_state()
    n_links = len(mech.bodies) + 1  # with the ground
    n_joints = len(mech.pairs)
    gruebler = 6 * (n_links - 1) - 5 * n_joints

    # ---- 1. solvability at the initial configuration --------------------------------
    report0 = rx.analyze_solvability(model, state0.q)
    (out / "solvability_initial.txt").write_text(str(report0) + "\n")
    print(report0)

    # ---- 2. the 10 s motion ---------------------------------------------------------
    start = time.perf_counter()
    traj = rx.simulate(
        model,
        state0,
        T_FINAL,
        stepsize_controller=diffrax.PIDController(rtol=cfg["rtol"], atol=cfg["atol"]),
        solver=diffrax.Dopri8(),
        saveat=rx.SaveAt(n=cfg["n_save"]),
    )
    traj.q.block_until_ready()
    sim_wall = time.perf_counter() - start
    ts = np.asarray(traj.ts)
    P = np.asarray(jax.jit(jax.vmap(lambda q: rx.equations.marker_positions(model, q)))(traj.q))[:, 0]
    energy = np.asarray(traj.energy)
    energy_error = energy - energy[0]
    pos, vel = np.asarray(traj.position_violation), np.asarray(traj.velocity_violation)

    # Turning points of x(P3): sign changes of its finite difference.
    dx = np.diff(P[:, 0])
    turns = np.flatnonzero(np.sign(dx[1:]) != np.sign(dx[:-1])) + 1
    turning_points = [{"t": float(ts[k]), "x": float(P[k, 0])} for k in turns]
    minima = [tp["t"] for tp in turning_points if tp["x"] < 0]
    maxima = [0.0] + [tp["t"] for tp in turning_points if tp["x"] > 0]
    period = float(np.mean(np.diff(maxima))) if len(maxima) > 1 else None

    # ---- 1b. solvability at two later configurations ---------------------------------
    # x(P3) = 0 on the way down, and the first turning point (x ≈ −1).
    k_mid = first_index(P[:, 0] <= 0.0)
    k_turn = int(turns[0]) if turns.size else len(ts) - 1
    project = jax.jit(lambda q, qd, t: PROJECTION(model, q, qd, t))
    later = {}
    for label, k in (("x(P3) = 0", k_mid), ("first turning point", k_turn)):
        q, qd = project(traj.q[k], traj.qd[k], traj.ts[k])
        before = float(traj.position_violation[k])
        after = float(jnp.max(jnp.abs(rx.equations.position_residual(model, q, traj.ts[k]))))
        report = rx.analyze_solvability(model, q, traj.ts[k])
        name = f"solvability_t{float(ts[k]):.3f}.txt"
        (out / name).write_text(
            f"t = {ts[k]:.4f} s ({label}), P3 = {np.round(P[k], 5).tolist()}, "
            f"max |Φ| {before:.2e} → {after:.2e} after projection\n\n{report}\n"
        )
        print(f"\nt = {ts[k]:.3f} s ({label}):\n{report}")
        later[label] = {
            "t": float(ts[k]),
            "P3": P[k].tolist(),
            "max_abs_phi_before_projection": before,
            "max_abs_phi_after_projection": after,
            "analysis": analysis_entry(report),
        }

    # ---- 3. four-bar with spatial revolute joints --------------------------------------
    fb_mech, fb_points = four_bar_3d()
    fb_model, fb_state = fb_mech.build(), fb_mech.initial_state()
    fb_report = rx.analyze_solvability(fb_model, fb_state.q)
    (out / "solvability_four_bar_3d.txt").write_text(str(fb_report) + "\n")
    print("\nfour-bar, spatial revolute joints about z:\n" + str(fb_report))
    fb_gruebler = 6 * len(fb_mech.bodies) - 5 * len(fb_mech.pairs)

    # ---- outputs ------------------------------------------------------------------------
    fig_p3(ts, P, out / "fig_p3.png", tag)
    fig_energy_violation(ts, energy_error, pos, vel, out / "fig_energy_violation.png", tag)
    with open(out / "p3.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", "x", "y", "z", "energy_error", "max_abs_phi", "max_abs_Cqd"])
        for k in range(len(ts)):
            w.writerow(
                [f"{ts[k]:.6g}", *(f"{v:.12g}" for v in P[k])]
                + [f"{energy_error[k]:.4e}", f"{pos[k]:.4e}", f"{vel[k]:.4e}"]
            )

    d0 = analysis_entry(report0)
    summary = {
        "mechanism": "Bricard, IFToMM A04 (rx.models.bricard(); DESIGN.md §8)",
        "quick": args.quick,
        "counts": {
            "links_with_ground": n_links,
            "revolute_joints": n_joints,
            "gruebler_kutzbach_dof": gruebler,
            "formula": "6 (links − 1) − 5 joints = 6·5 − 5·6",
            "coordinates_n (natural, 12 per body)": d0["n"],
            "rows_m (30 joint + 30 rigid-body)": d0["m"],
            "rank_C": d0["rank"],
            "mobility_n_minus_r": d0["dof"],
            "degree_of_redundancy_p": d0["redundancy"],
        },
        "solvability_initial": d0,
        "solvability_later": later,
        "simulation": {
            "method": "NullSpace()",
            "solver": "diffrax.Dopri8()",
            "rtol": cfg["rtol"],
            "atol": cfg["atol"],
            "stabilisation": "Baumgarte(alpha=10, beta=10) (default)",
            "n_save": cfg["n_save"],
            "num_steps": int(traj.num_steps),
            "num_rejected_steps": int(traj.num_rejected_steps),
            "wall_s_first_call_incl_compile": sim_wall,
            "energy_initial_J": float(energy[0]),
            "energy_error_max_abs_J": float(np.max(np.abs(energy_error))),
            "energy_error_final_J": float(energy_error[-1]),
            "position_violation_max": float(pos.max()),
            "velocity_violation_max": float(vel.max()),
            "P3_initial": P[0].tolist(),
            "P3_final": P[-1].tolist(),
            "P3_min": P.min(axis=0).tolist(),
            "P3_max": P.max(axis=0).tolist(),
            "P3_x_turning_points": turning_points,
            "P3_x_minima_t": minima,
            "period_s (mean spacing of the maxima of x, incl. t = 0)": period,
        },
        "four_bar_3d": {
            "geometry": FOUR_BAR,
            "joint_points": fb_points,
            "joint_axes": "all z (0, 0, 1)",
            "gruebler_kutzbach_dof": fb_gruebler,
            "formula": "6·3 − 5·4",
            "analysis": analysis_entry(fb_report),
        },
        "machine": machine_info(load_before),
        "script_wall_s": time.perf_counter() - wall0,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")

    s = summary["simulation"]
    print(
        f"\nGrübler–Kutzbach {gruebler} DOF; rank C = {d0['rank']}, mobility {d0['dof']}, "
        f"p = {d0['redundancy']}; unique pairs {d0['unique_pairs']}"
    )
    print(
        f"simulation: {s['num_steps']} steps, |ΔE| ≤ {s['energy_error_max_abs_J']:.2e} J, "
        f"|Φ| ≤ {s['position_violation_max']:.2e}, |Cq̇| ≤ {s['velocity_violation_max']:.2e}, "
        f"P3 min {np.round(P.min(0), 5).tolist()} max {np.round(P.max(0), 5).tolist()}, "
        f"period ≈ {period}"
    )
    fa = summary["four_bar_3d"]["analysis"]
    print(
        f"four-bar 3-D: p = {fa['redundancy']}, mobility {fa['dof']}, unique components "
        f"{fa['unique_components']}"
    )
    print(f"wall {summary['script_wall_s']:.1f} s, load {load_before} → {os.getloadavg()}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
