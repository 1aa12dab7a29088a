"""Compliance makes every reaction unique; the unique ones do not depend on it.

Wojtyra & Frączek 2013 §3.1 and González et al. 2011: with rigid joints the
reactions of some pairs are not determined; with compliant joints every reaction
is, but the values of the formerly non-unique ones depend on the *ratios* of the
joint stiffnesses, while the formerly unique ones tend to the rigid values.

For the mobile robot (DESIGN.md §6; state after 1 s of its manoeuvre) and Bricard's
mechanism (DESIGN.md §8; state after 1 s of its fall), each projected onto the
constraint manifold with `rx.drift.Projection(iterations=6)`:

- rigid reference: `rx.reactions(..., method=rx.methods.NullSpace())`;
- penalty joints `rx.methods.Penalty(stiffness=s · k)` for s = 1e3 … 1e9, with
  k = `rx.methods.joint_stiffness(model, 1.0)` (every joint row 1 N/m or 1 N m/rad) and a
  variant with one pair 10× stiffer (robot: B; Bricard: J1);
- their rigid limits `rx.methods.Compliant(k)`.

(a) max over the uniquely solvable pairs of ‖W_pen − W_rigid‖ / ‖W_rigid‖ (W: the
pair's wrenches on all bodies) vs s — Bricard has no unique pair, so for it (and
for the robot as well) the same for the total generalised reaction f = F − M q̈;
(b) the non-unique pairs' reaction magnitudes (force, and for Bricard the bending
moment) vs s for the two stiffness ratios, with the `Compliant` limits.

Bricard's natural coordinates have rigid-body rows, to which `joint_stiffness`
gives k = ∞ (rigid bodies). `rx.methods.Penalty` builds M + Cᵀ diag(α) C and returns NaN
for α = ∞, so for Bricard the rigid-body rows get the finite stiffness
BODY_RATIO · s instead (bodies BODY_RATIO times stiffer than the joints); the
penalty values then tend to `Compliant` with that same finite k, which is compared
with `Compliant(k)` with k = ∞ on those rows.

Run:  cd /work/main && .venv/bin/python experiments/compliance.py [--quick]
(--quick: 7 scales, and the initial states instead of states 1 s into the motions)
Writes experiments/results/compliance/: summary.json, fig_compliance.png, scales.csv.
(--quick writes to $TMPDIR/redundax_quick/compliance/ instead, leaving the results alone.)
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

OUT = pathlib.Path(__file__).resolve().parent / "results" / "compliance"
OUT_QUICK = pathlib.Path(tempfile.gettempdir()) / "redundax_quick" / "compliance"
T_STATE = 1.0  # the state is taken after this much of each motion [s]
SCALES_FULL = np.logspace(3.0, 9.0, 13)
SCALES_QUICK = np.logspace(3.0, 9.0, 7)
STIFFER = {"mobile robot": "B", "Bricard": "J1"}
STIFFER_FACTOR = 10.0
BODY_RATIO = 1e3  # Bricard: rigid-body rows this much stiffer than the joint rows
PROJECTION = rx.drift.Projection(iterations=6)


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


def is_moment(label):
    return "moment" in label or "torque" in label


def magnitudes(model, lam):
    """Per pair, |force| and |moment| from the multipliers of its rows (the rows of a
    pair are components in an orthonormal frame; −λ_k is the component)."""
    lam = np.asarray(lam)
    out = {}
    for p in model.pairs:
        rows = np.asarray(p.rows)
        labels = p.components or ("",) * len(rows)
        mom = np.array([is_moment(lab) for lab in labels])
        out[p.name] = {
            "force": float(np.linalg.norm(lam[..., rows[~mom]], axis=-1))
            if lam.ndim == 1
            else np.linalg.norm(lam[..., rows[~mom]], axis=-1),
            "moment": float(np.linalg.norm(lam[..., rows[mom]], axis=-1))
            if lam.ndim == 1
            else np.linalg.norm(lam[..., rows[mom]], axis=-1),
            "has_moment_rows": bool(mom.any()),
        }
    return out


def state_on_manifold(model, state0, quick):
    """The state after T_STATE of the motion (`quick`: the initial state),
    projected onto the manifold."""
    if quick:
        q, qd, t = state0.q, state0.qd, jnp.asarray(state0.t, dtype=float)
        before = (None, None)
    else:
        # Any state of the motion will do; projection puts it on the manifold. Tsit5
        # compiles faster than Dopri8 and is accurate enough for that.
        traj = rx.simulate(
            model,
            state0,
            T_STATE,
            stepsize_controller=diffrax.PIDController(rtol=1e-8, atol=1e-10),
            solver=diffrax.Tsit5(),
            saveat=rx.SaveAt(n=2),
        )
        q, qd, t = traj.q[-1], traj.qd[-1], traj.ts[-1]
        before = (float(traj.position_violation[-1]), float(traj.velocity_violation[-1]))
    q, qd = jax.jit(lambda q, qd, t: PROJECTION(model, q, qd, t))(q, qd, t)
    after = (
        float(jnp.max(jnp.abs(rx.equations.position_residual(model, q, t)))),
        float(
            jnp.max(jnp.abs(rx.equations.constraint_matrix(model, q, t) @ qd + rx.equations.velocity_bias(model, q, t)))
        ),
    )
    return q, qd, t, {"violation_before_projection": before, "violation_after_projection": after}


def study(name, mech, scales, quick):
    model, state0 = mech.build(), mech.initial_state()
    q, qd, t, proj = state_on_manifold(model, state0, quick)
    # Every reaction evaluation is compiled (eager evaluation dispatches op by op).
    rigid = jax.jit(lambda q, qd, t: rx.reactions(model, q, qd, t, method=rx.methods.NullSpace()))(q, qd, t)
    compliant = jax.jit(lambda kk: rx.reactions(model, q, qd, t, method=rx.methods.Compliant(kk)))
    unique = np.asarray(rigid.unique)
    names = model.pair_names
    unique_pairs = [n for n, u in zip(names, unique, strict=True) if u]
    non_unique = [n for n, u in zip(names, unique, strict=True) if not u]
    W_rigid = np.asarray(rigid.wrench)
    f_rigid = np.asarray(rigid.total)

    k = rx.methods.joint_stiffness(model, 1.0)
    ratios = {
        "equal": k,
        f"{STIFFER[name]} ×{STIFFER_FACTOR:g}": rx.methods.joint_stiffness(
            model, 1.0, pairs={STIFFER[name]: STIFFER_FACTOR}
        ),
    }
    body_rows = np.isinf(np.asarray(k))
    finite = {r: jnp.where(jnp.isinf(kk), BODY_RATIO, kk) for r, kk in ratios.items()}

    def penalty_reactions(stiffness):
        return rx.reactions(model, q, qd, t, method=rx.methods.Penalty(stiffness=stiffness))

    batched = jax.jit(jax.vmap(penalty_reactions))
    out = {
        "pairs": list(names),
        "unique_pairs": unique_pairs,
        "non_unique_pairs": non_unique,
        "t": float(t),
        "projection": proj,
        "rigid_body_rows": int(body_rows.sum()),
        "body_rows_stiffness": f"{BODY_RATIO:g} · s (finite stand-in for ∞)"
        if body_rows.any()
        else None,
        "rigid_magnitudes": {
            n: {kk: v for kk, v in d.items()}
            for n, d in magnitudes(model, rigid.multipliers).items()
        },
        "ratios": {},
    }
    series = {}
    for ratio, kk in ratios.items():
        stiff = jnp.asarray(scales)[:, None] * finite[ratio][None, :]
        pen = batched(stiff)
        lam = np.asarray(pen.multipliers)
        finite_ok = bool(np.all(np.isfinite(lam)))
        W = np.asarray(pen.wrench)
        dev_pairs = {}
        for n in unique_pairs:
            p = names.index(n)
            ref = np.linalg.norm(W_rigid[p])
            dev_pairs[n] = (
                np.linalg.norm((W[:, p] - W_rigid[p]).reshape(len(scales), -1), axis=1) / ref
            )
        dev_unique = np.max(np.stack(list(dev_pairs.values())), axis=0) if dev_pairs else None
        dev_total = np.linalg.norm(np.asarray(pen.total) - f_rigid, axis=1) / np.linalg.norm(
            f_rigid
        )
        limit = compliant(kk)
        limit_mag = magnitudes(model, limit.multipliers)
        limit_finite = compliant(finite[ratio])
        limit_finite_mag = magnitudes(model, limit_finite.multipliers)
        pen_mag = magnitudes(model, lam)
        # Convergence of the non-unique multipliers to their Compliant limit (with
        # the stiffnesses actually used), relative to the largest of them.
        lam_lim = np.asarray(limit_finite.multipliers)
        rows_nu = np.concatenate([np.asarray(model.pair(n).rows) for n in non_unique])
        dev_limit = np.max(np.abs(lam[:, rows_nu] - lam_lim[rows_nu]), axis=1) / np.max(
            np.abs(lam_lim[rows_nu])
        )
        series[ratio] = {
            "dev_unique": dev_unique,
            "dev_total": dev_total,
            "pen_mag": pen_mag,
            "limit_mag": limit_mag,
            "dev_limit": dev_limit,
        }
        out["ratios"][ratio] = {
            "stiffened_pair": None if ratio == "equal" else STIFFER[name],
            "penalty_finite": finite_ok,
            "unique_pairs_max_rel_dev_vs_rigid": None
            if dev_unique is None
            else dev_unique.tolist(),
            "unique_pairs_max_rel_dev_attained_by": [
                unique_pairs[i] for i in np.argmax(np.stack(list(dev_pairs.values())), axis=0)
            ]
            if dev_pairs
            else None,
            "unique_pairs_rel_dev_vs_rigid_per_pair": {n: v.tolist() for n, v in dev_pairs.items()},
            "unique_pairs_rigid_wrench_norm": {
                n: float(np.linalg.norm(W_rigid[names.index(n)])) for n in unique_pairs
            },
            "total_reaction_rel_dev_vs_rigid": dev_total.tolist(),
            "non_unique_max_rel_dev_vs_compliant_limit": dev_limit.tolist(),
            "non_unique_magnitudes_penalty": {
                n: {
                    "force": pen_mag[n]["force"].tolist(),
                    **(
                        {"moment": pen_mag[n]["moment"].tolist()}
                        if pen_mag[n]["has_moment_rows"]
                        else {}
                    ),
                }
                for n in non_unique
            },
            "non_unique_magnitudes_compliant_limit": {
                n: {
                    "force": limit_mag[n]["force"],
                    **(
                        {"moment": limit_mag[n]["moment"]}
                        if limit_mag[n]["has_moment_rows"]
                        else {}
                    ),
                }
                for n in non_unique
            },
            "non_unique_magnitudes_compliant_limit_same_finite_k": {
                n: {
                    "force": limit_finite_mag[n]["force"],
                    **(
                        {"moment": limit_finite_mag[n]["moment"]}
                        if limit_finite_mag[n]["has_moment_rows"]
                        else {}
                    ),
                }
                for n in non_unique
            },
            "compliant_unique_pairs_max_rel_dev_vs_rigid": max(
                (
                    float(
                        np.linalg.norm(
                            np.asarray(limit.wrench)[names.index(n)] - W_rigid[names.index(n)]
                        )
                        / np.linalg.norm(W_rigid[names.index(n)])
                    )
                    for n in unique_pairs
                ),
                default=None,
            ),
        }
    # Non-unique magnitudes: how much the two ratios differ in the limit.
    r0, r1 = list(ratios)
    out["limit_change_between_ratios"] = {
        n: {
            kind: {
                r0: out["ratios"][r0]["non_unique_magnitudes_compliant_limit"][n][kind],
                r1: out["ratios"][r1]["non_unique_magnitudes_compliant_limit"][n][kind],
                "rel_change": out["ratios"][r1]["non_unique_magnitudes_compliant_limit"][n][kind]
                / out["ratios"][r0]["non_unique_magnitudes_compliant_limit"][n][kind]
                - 1.0,
            }
            for kind in out["ratios"][r0]["non_unique_magnitudes_compliant_limit"][n]
        }
        for n in non_unique
    }
    return out, series


def draw(axes, name, scales, res, series):
    ax = axes[0]
    styles = {0: "-", 1: "--"}
    by = [
        p for d in res["ratios"].values() for p in d["unique_pairs_max_rel_dev_attained_by"] or ()
    ]
    top = max(set(by), key=by.count) if by else None
    for i, (ratio, s) in enumerate(series.items()):
        if s["dev_unique"] is not None:
            ax.loglog(
                scales,
                s["dev_unique"],
                "o" + styles[i],
                color="k",
                ms=3.5,
                lw=1.2,
                label=f"unique pairs, max ({ratio}; mostly {top})",
            )
        ax.loglog(
            scales,
            s["dev_total"],
            "s" + styles[i],
            color="tab:blue",
            ms=3.0,
            lw=1.0,
            label=f"total f = F − M q̈ ({ratio})",
        )
    ref = series[list(series)[0]]
    anchor = ref["dev_unique"] if ref["dev_unique"] is not None else ref["dev_total"]
    ax.loglog(scales, anchor[0] * scales[0] / scales, ":", color="0.5", lw=1.0, label="∝ 1/s")
    ax.set(xlabel="stiffness scale s", ylabel="relative deviation from rigid (NullSpace)")
    ax.text(
        0.02,
        0.03,
        "beyond s ≈ 1e7: round-off of λ = α (C q̈ − Γ) grows ∝ s",
        transform=ax.transAxes,
        fontsize=7,
        color="0.35",
    )
    ax.set_title(f"{name}: (a) unique reactions → rigid values", fontsize=9.5)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)

    ax = axes[1]
    non_unique = res["non_unique_pairs"]
    # Bricard's joint forces change by < 0.5 % between the two ratios; its bending
    # moments show the dependence on the ratio.
    kind = (
        "moment"
        if all(series["equal"]["pen_mag"][n]["has_moment_rows"] for n in non_unique)
        else "force"
    )
    unit = "N m" if kind == "moment" else "N"
    colours = plt.cm.tab10(np.arange(len(non_unique)) % 10)
    for i, s in enumerate(series.values()):
        for c, n in zip(colours, non_unique, strict=True):
            ax.loglog(
                scales,
                s["pen_mag"][n][kind],
                styles[i],
                color=c,
                lw=1.4,
                label=f"{n}" if i == 0 else None,
            )
            ax.axhline(s["limit_mag"][n][kind], color=c, ls=styles[i], lw=0.6, alpha=0.6)
    ax.set(xlabel="stiffness scale s", ylabel=f"|{kind}| of the pair [{unit}]")
    ax.set_title(
        f"{name}: (b) non-unique reactions, rx.methods.Penalty(s·k)\nsolid: equal k, dashed: "
        f"{STIFFER[name]} ×{STIFFER_FACTOR:g}; thin: rx.methods.Compliant(k) limits",
        fontsize=9.5,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncols=2)

    ax = axes[2]
    for i, (ratio, s) in enumerate(series.items()):
        ax.loglog(
            scales, s["dev_limit"], "o" + styles[i], color="tab:red", ms=3.5, lw=1.2, label=ratio
        )
    ax.loglog(
        scales,
        series["equal"]["dev_limit"][0] * scales[0] / scales,
        ":",
        color="0.5",
        lw=1.0,
        label="∝ 1/s",
    )
    ax.set(xlabel="stiffness scale s", ylabel="max |λ − λ_Compliant| / max |λ_Compliant|")
    ax.set_title(f"{name}: (c) non-unique multipliers → Compliant limit", fontsize=9.5)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="7 stiffness scales, the initial states"
    )
    args = parser.parse_args()
    out = OUT_QUICK if args.quick else OUT  # a quick run leaves the results alone
    scales = SCALES_QUICK if args.quick else SCALES_FULL
    load_before = os.getloadavg()
    wall0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)

    results, all_series = {}, {}
    for name, mech in (
        ("mobile robot", rx.models.mobile_robot()),
        ("Bricard", rx.models.bricard()),
    ):
        results[name], all_series[name] = study(name, mech, scales, args.quick)
        r = results[name]
        print(f"\n{name}: unique {r['unique_pairs']}, not unique {r['non_unique_pairs']}")
        for ratio, d in r["ratios"].items():
            dev = d["unique_pairs_max_rel_dev_vs_rigid"] or d["total_reaction_rel_dev_vs_rigid"]
            print(
                f"  {ratio:8s}: penalty finite {d['penalty_finite']}; rel. dev. vs rigid at "
                + ", ".join(
                    f"s={s:.0e}: {v:.1e}" for s, v in list(zip(scales, dev, strict=True))[::2]
                )
            )
        for n, d in r["limit_change_between_ratios"].items():
            print(
                f"  {n}: "
                + "; ".join(
                    f"{kind} "
                    + " → ".join(f"{v:.4g}" for v in list(vals.values())[:2])
                    + f" ({100 * vals['rel_change']:+.1f}%)"
                    for kind, vals in d.items()
                )
            )

    fig, axes = plt.subplots(2, 3, figsize=(16.0, 9.0))
    for row, name in enumerate(results):
        draw(axes[row], name, scales, results[name], all_series[name])
    fig.tight_layout()
    fig.savefig(out / "fig_compliance.png", dpi=150)
    plt.close(fig)

    with open(out / "scales.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "mechanism",
                "ratio",
                "s",
                "unique_pairs_max_rel_dev",
                "total_rel_dev",
                "pair",
                "force_N",
                "moment_Nm",
            ]
        )
        for name, series in all_series.items():
            for ratio, s in series.items():
                for i, sc in enumerate(scales):
                    for n in results[name]["non_unique_pairs"]:
                        m = s["pen_mag"][n]
                        w.writerow(
                            [
                                name,
                                ratio,
                                f"{sc:.3g}",
                                "" if s["dev_unique"] is None else f"{s['dev_unique'][i]:.4e}",
                                f"{s['dev_total'][i]:.4e}",
                                n,
                                f"{m['force'][i]:.8g}",
                                f"{m['moment'][i]:.8g}" if m["has_moment_rows"] else "",
                            ]
                        )

    summary = {
        "scales": scales.tolist(),
        "stiffness": "rx.methods.joint_stiffness(model, 1.0) (1 N/m, 1 N m/rad per joint row; "
        "rigid-body rows ∞), times s",
        "stiffer_pair": {k: f"{v} ×{STIFFER_FACTOR:g}" for k, v in STIFFER.items()},
        "state": (
            "the initial state"
            if args.quick
            else f"after {T_STATE} s of the motion (Tsit5, rtol 1e-8)"
        )
        + ", then rx.drift.Projection(iterations=6)",
        "magnitudes": "per pair, ‖λ‖ over its force rows [N] and over its moment rows [N m]",
        "results": results,
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
        "quick": args.quick,
        "script_wall_s": time.perf_counter() - wall0,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\nwall {summary['script_wall_s']:.1f} s; wrote {out}")


if __name__ == "__main__":
    main()
