"""redundax against MuJoCo on the closed chains of `configs/mjcf/` (issue 13).

Each MJCF (or URDF + MJCF) file is read twice: by `rx.io.from_mjcf` into a rigid
redundax mechanism, simulated with `rx.simulate` at rtol = 1e-10, atol = 1e-12
(null-space method, Dopri8, projection after every step), and by MuJoCo itself,
whose loop closures (`connect`, `weld` equalities) are soft constraints. Both
start at MuJoCo's reference configuration `qpos0`, at rest, and run 2 s under
gravity; MuJoCo is run with five settings (every equality gets the setting's
solref and solimp; solimp = (0.9999, 0.9999, 0.001, 0.5, 2) is a constant
impedance at MuJoCo's largest, mjMAXIMP = 0.9999):

- `default`: the file as written (MuJoCo's defaults: Euler, timestep 2 ms,
  solref = (0.02 s, 1), solimp = (0.9, 0.95, 0.001, 0.5, 2));
- `tight`: RK4, timestep 1e-4 s, solref = (5e-4 s, 1): a time constant of five
  timesteps;
- `tightest`: RK4, timestep 2e-5 s, solref = (1e-4 s, 1), five timesteps again;
- `stiffest`: RK4, timestep 1e-4 s, solref = (2e-4 s, 1), the shortest time
  constant the `refsafe` flag allows (two timesteps): the motion as close, the
  forces not (see below);
- `refsafe_off`: RK4, timestep 1e-4 s, solref = (5e-5 s, 1), half a timestep,
  with `refsafe` disabled (which would raise it to two timesteps): worse.

What the sweep behind these choices found (four-bars, gripper): the motion
improves as the timestep shrinks and the time constant follows it down to about
two timesteps; the unique closure forces need about five or more, since at two
RK4 rings against the reference acceleration: MuJoCo's constraint velocity then
settles at about 0.15 m/s² / b (b = 2 / time constant), whose term b·J q̇ in the
reference acceleration shifts the four-bar's peak force by 0.26 N of 92 N
(2.9e-3), at any timestep; at five timesteps 6e-5, at ten 1.3e-5. What is left
(1.3e-5 to 1.3e-4 of the largest force) is the regularisation of an impedance
capped at 0.9999.

Compared at 201 instants (every 10 ms): the sites (redundax markers) and the
bodies' centres of mass, max |Δ| over all points, coordinates and instants [m];
and the closure forces: MuJoCo's equality constraint forces (`efc_force` rows of
type `mjCNSTR_EQUALITY` after `mj_forward` at each sampled state: for a connect
the force on body1 at its anchor, global components, since its Jacobian is
J(body1, anchor) − J(body2, anchor); for a weld the same three, then the
couple, decoded from the rotational rows as MuJoCo builds them) against
redundax's reaction components of the same pair (`rx.reaction_history`, −λ_k:
force on the pair's first body, body1, in the joint frame), each with its
uniqueness verdict. A unique component is compared value by value; beside a
non-unique one the script writes MuJoCo's value and "not unique": a rigid model
does not determine it, and MuJoCo's number is what its regularisation picks.

Bricard's linkage is also checked against `configs/bricard.toml` (the same
mechanism in redundax's own format, J5 a revolute joint instead of two balls):
the tracked point P3 of both runs.

Run:  cd /work/main && .venv/bin/python experiments/mujoco_compare.py
Writes experiments/results/mujoco_compare/: summary.json, summary.md and one
figure per example (<name>.png).
"""

import os

# One BLAS thread (as the other experiments): the machine is shared.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import json
import pathlib
import platform
import time

import diffrax
import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import redundax as rx  # noqa: E402
from redundax.io import load_config  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
MJCF = ROOT / "configs" / "mjcf"
OUT = pathlib.Path(__file__).resolve().parent / "results" / "mujoco_compare"
T_FINAL = 2.0  # s
N_SAVE = 201  # every 10 ms
REDUNDAX = {"rtol": 1e-10, "atol": 1e-12}
EXAMPLES = {
    "four_bar_connect": MJCF / "four_bar_connect.xml",
    "four_bar_weld": MJCF / "four_bar_weld.xml",
    "bricard": MJCF / "bricard.xml",
    "gripper": MJCF / "gripper.xml",
    "four_bar_urdf": MJCF / "four_bar_urdf.xml",
}
SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)
SETTINGS = {
    "default": None,
    "tight": {"integrator": "RK4", "timestep": 1e-4, "solref": (5e-4, 1.0), "solimp": SOLIMP},
    "tightest": {"integrator": "RK4", "timestep": 2e-5, "solref": (1e-4, 1.0), "solimp": SOLIMP},
    "stiffest": {"integrator": "RK4", "timestep": 1e-4, "solref": (2e-4, 1.0), "solimp": SOLIMP},
    "refsafe_off": {
        "integrator": "RK4",
        "timestep": 1e-4,
        "solref": (5e-5, 1.0),
        "solimp": SOLIMP,
        "refsafe": False,
    },
}


def mujoco_model(path: pathlib.Path, setting: dict | None):
    """The compiled MjModel of `path`, with `setting` applied to its options and to
    every equality (None: the file as written)."""
    model = mujoco.MjModel.from_xml_path(str(path))
    if setting is not None:
        model.opt.integrator = getattr(mujoco.mjtIntegrator, "mjINT_" + setting["integrator"])
        model.opt.timestep = setting["timestep"]
        model.eq_solref[:] = setting["solref"]
        model.eq_solimp[:] = setting["solimp"]
        if not setting.get("refsafe", True):
            model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_REFSAFE
    return model


def weld_couple_map(data, model, e: int) -> np.ndarray:
    """A (3 × 3) with the weld's rotational Jacobian rows = A (J_rot(body1) − J_rot(body2)),
    as MuJoCo builds them (engine_core_constraint.c): 0.5 · torquescale ·
    Im[q̄₂ ⊗ ω ⊗ q₁ ⊗ relpose]; the couple on body1 is Aᵀ f_rot (global)."""
    b1, b2 = int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
    quat, neg = np.zeros(4), np.zeros(4)
    mujoco.mju_mulQuat(quat, data.xquat[b1], model.eq_data[e, 6:10])
    mujoco.mju_negQuat(neg, data.xquat[b2])
    A = np.zeros((3, 3))
    for k in range(3):
        q2, q3 = np.zeros(4), np.zeros(4)
        mujoco.mju_mulQuatAxis(q2, neg, np.eye(3)[k])
        mujoco.mju_mulQuat(q3, q2, quat)
        A[:, k] = 0.5 * model.eq_data[e, 10] * q3[1:]
    return A


def closure_forces(model, data) -> dict[str, np.ndarray]:
    """Per active connect / weld equality (by name): the force on body1 (3,), global
    [N], then for a weld the couple on body1 (3,), global [N m]."""
    out = {}
    rows = np.flatnonzero(data.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
    for e in range(model.neq):
        mine = rows[data.efc_id[rows] == e]
        if mine.size == 0:
            continue
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_EQUALITY, e) or f"equality{e}"
        f = np.asarray(data.efc_force[mine])
        if model.eq_type[e] == mujoco.mjtEq.mjEQ_WELD:
            f = np.concatenate([f[:3], weld_couple_map(data, model, e).T @ f[3:]])
        out[name] = f
    return out


def run_mujoco(path: pathlib.Path, setting: dict | None, ts: np.ndarray) -> dict:
    """MuJoCo from qpos0 at rest: sites, centres of mass and closure forces at `ts`,
    the frames of the closures' body2 (for the components), and the wall time."""
    model = mujoco_model(path, setting)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    per_save = round((ts[1] - ts[0]) / model.opt.timestep)  # the instants fall on steps
    sites, coms, forces, frames = [], [], [], []
    start = time.perf_counter()
    for k in range(len(ts)):
        if k:
            mujoco.mj_step(model, data, nstep=per_save)
            mujoco.mj_forward(model, data)  # the forces at the sampled state
        sites.append(data.site_xpos.copy())
        coms.append(data.xipos[1:].copy())
        forces.append(closure_forces(model, data))
        frames.append(data.xmat.reshape(-1, 3, 3).copy())
    wall = time.perf_counter() - start
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in range(model.nsite)]
    body2 = {
        mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_EQUALITY, e) or f"equality{e}": int(
            model.eq_obj2id[e]
        )
        for e in range(model.neq)
    }
    return {
        "t": data.time,
        "sites": dict(zip(names, np.stack(sites, axis=1), strict=True)),
        "coms": np.stack(coms),
        "forces": {n: np.stack([f[n] for f in forces]) for n in forces[0]},
        "frames": {n: np.stack([fr[b] for fr in frames]) for n, b in body2.items()},
        "wall_s": wall,
        "steps": round(data.time / model.opt.timestep),
    }


def run_redundax(mech: rx.Mechanism) -> dict:
    """The rigid motion (REDUNDAX tolerances, N_SAVE instants): markers and centres of
    mass [m], the reactions at every instant, the analysis at the start, and the
    wall time of a first (compiling) and a warm call [s]."""
    model, state = mech.build(), mech.initial_state()
    start = time.perf_counter()
    trajectory = rx.simulate(
        model,
        state,
        T_FINAL,
        saveat=rx.SaveAt(n=N_SAVE),
        stepsize_controller=diffrax.PIDController(**REDUNDAX),
    )
    trajectory.q.block_until_ready()
    first = time.perf_counter() - start
    start = time.perf_counter()
    rx.simulate(
        model,
        state,
        T_FINAL,
        saveat=rx.SaveAt(n=N_SAVE),
        stepsize_controller=diffrax.PIDController(**REDUNDAX),
    ).q.block_until_ready()
    warm = time.perf_counter() - start
    markers = np.asarray(jax.vmap(lambda q: rx.equations.marker_positions(model, q))(trajectory.q))
    coms = np.asarray(jax.vmap(lambda q: rx.equations.body_poses(model, q)[0])(trajectory.q))
    history = rx.reaction_history(model, trajectory)
    report = rx.analyze_solvability(model, state.q, state.t)
    return {
        "model": model,
        "body_names": [b.name for b in mech.bodies],
        "trajectory": trajectory,
        "ts": np.asarray(trajectory.ts),
        "sites": {m.name: markers[:, k] for k, m in enumerate(mech.markers)},
        "coms": coms,
        "reactions": history,
        "report": report,
        "first_call_s": first,
        "warm_call_s": warm,
    }


def components_in_frame(force: np.ndarray, frames: np.ndarray, frame0: np.ndarray) -> np.ndarray:
    """MuJoCo's global force / couple (T, 3) along the joint frame of a redundax
    pair: the global axes at t = 0, turned with body2 (its rotation since t = 0)."""
    turn = np.einsum("tij,kj->tik", frames, frame0)  # R(t) R(0)ᵀ
    return np.einsum("tik,ti->tk", turn, force)


def compare_forces(rd: dict, mj: dict) -> dict:
    """Per closure pair and component: redundax's value, its verdict, MuJoCo's value."""
    history = rd["reactions"]
    out = {}
    for name, force in mj["forces"].items():
        frames = mj["frames"][name]
        parts = [force[:, :3]] + ([force[:, 3:]] if force.shape[1] == 6 else [])
        mujoco_values = np.concatenate(
            [components_in_frame(p, frames, frames[0]) for p in parts], axis=1
        )
        entry = {}
        for k, (label, (value, unique)) in enumerate(history.components(name).items()):
            value, unique = np.asarray(value), bool(np.asarray(unique).all())
            theirs = mujoco_values[:, k]
            scale = float(np.max(np.abs(value)))
            item = {
                "unique": unique,
                "redundax_max_abs": scale,
                "mujoco_max_abs": float(np.max(np.abs(theirs))),
                "redundax_final": float(value[-1]),
                "mujoco_final": float(theirs[-1]),
            }
            if unique:
                diff = float(np.max(np.abs(theirs - value)))
                item["max_abs_difference"] = diff
                item["max_relative_difference"] = diff / scale if scale > 0 else None
            else:
                item["note"] = "not unique: MuJoCo's value is set by its regularisation"
            entry[label] = item
        out[name] = {"components": entry, "mujoco_series": mujoco_values}
    return out


def deviation(rd: dict, mj: dict) -> dict:
    """Max |Δ| [m] of the sites and of the centres of mass over all instants."""
    sites = [np.max(np.abs(mj["sites"][n] - rd["sites"][n])) for n in rd["sites"]]
    return {
        "sites_max_m": float(max(sites)) if sites else None,
        "coms_max_m": float(np.max(np.abs(mj["coms"] - rd["coms"]))),
    }


def figure(name: str, rd: dict, runs: dict, forces: dict, path: pathlib.Path) -> None:
    ts = rd["ts"]
    fig, axes = plt.subplots(3, 1, figsize=(8.0, 9.0), sharex=True)
    if rd["sites"]:
        label, series = next(iter(rd["sites"].items()))
        mj_series = runs["tight"]["sites"][label]
        what = f"site {label}"
    else:
        series, mj_series = rd["coms"][:, -1], runs["tight"]["coms"][:, -1]
        what = f"centre of mass of {rd['body_names'][-1]}"
    ax = axes[0]
    for k, c in enumerate("xyz"):
        (line,) = ax.plot(ts, series[:, k], lw=1.4, label=f"{c} redundax")
        ax.plot(
            ts[::8],
            mj_series[::8, k],
            "o",
            ms=3,
            mfc="none",
            color=line.get_color(),
            label=f"{c} MuJoCo (tight)",
        )
    ax.set_ylabel(f"{what} [m]")
    ax.set_title(f"{name}: redundax (rigid) against MuJoCo (soft equalities)", fontsize=10)
    ax.legend(fontsize=7, ncol=3)
    ax.grid(alpha=0.3)
    ax = axes[1]
    for setting, mj in runs.items():
        points = [np.abs(mj["coms"] - rd["coms"]).max(axis=(1, 2))]
        points += [np.abs(mj["sites"][n] - rd["sites"][n]).max(axis=1) for n in rd["sites"]]
        ax.semilogy(ts, np.maximum(np.max(points, axis=0), 1e-16), lw=1.2, label=setting)
    ax.set_ylabel("max |Δ| sites, centres of mass [m]")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    ax = axes[2]
    for pair, entry in forces["tight"].items():
        comps = rd["reactions"].components(pair)
        for k, (label_k, (value, unique)) in enumerate(comps.items()):
            unique = bool(np.asarray(unique).all())
            style = "-" if unique else "--"
            tag = "" if unique else " (not unique)"
            (line,) = ax.plot(ts, np.asarray(value), style, lw=1.2, label=f"{pair} {label_k}{tag}")
            ax.plot(
                ts[::8],
                entry["mujoco_series"][::8, k],
                "o",
                ms=3,
                mfc="none",
                color=line.get_color(),
            )
    ax.set_ylabel("closure reaction on body1 [N, N m]")
    ax.set_xlabel("time t [s]   (lines: redundax; circles: MuJoCo, tight)")
    ax.legend(fontsize=6, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def bricard_against_toml() -> dict:
    """P3 of the imported Bricard against configs/bricard.toml, the same settings."""
    config = load_config(ROOT / "configs" / "bricard.toml")
    mech = rx.io.from_mjcf(EXAMPLES["bricard"])
    out = {}
    for label, (model, state) in {
        "toml": (config.model, config.state),
        "mjcf": (mech.build(), mech.initial_state()),
    }.items():
        trajectory = rx.simulate(
            model,
            state,
            T_FINAL,
            saveat=rx.SaveAt(n=N_SAVE),
            stepsize_controller=diffrax.PIDController(**REDUNDAX),
        )
        out[label] = np.asarray(
            jax.vmap(lambda q, m=model: rx.equations.marker_positions(m, q))(trajectory.q)
        )
        report = rx.analyze_solvability(model, state.q, state.t)
        out[label + "_analysis"] = {
            "rank": int(report.rank),
            "redundancy": int(report.redundancy),
            "mobility": int(report.dof),
            "unique_pairs": [n for n, u in zip(model.pair_names, report.unique, strict=True) if u],
        }
    return {
        "P3_max_abs_difference_m": float(np.max(np.abs(out["toml"] - out["mjcf"]))),
        "toml": out["toml_analysis"],
        "mjcf": out["mjcf_analysis"],
        "settings": REDUNDAX | {"t_final": T_FINAL, "n_save": N_SAVE},
    }


def markdown(summary: dict) -> str:
    lines = [
        "# redundax against MuJoCo (2 s from rest, 201 instants)",
        "",
        "Max |Δ| over sites and centres of mass [m], redundax (rtol 1e-10) against MuJoCo:",
        "",
        "| example | rank / p / mobility | " + " | ".join(SETTINGS) + " |",
        "|---|---|" + "---|" * len(SETTINGS),
    ]
    for name, e in summary["examples"].items():
        a = e["analysis"]
        devs = [
            max(v for v in e["mujoco"][s]["deviation"].values() if v is not None) for s in SETTINGS
        ]
        lines.append(
            f"| {name} | {a['rank']} / {a['redundancy']} / {a['mobility']} | "
            + " | ".join(f"{d:.2e}" for d in devs)
            + " |"
        )
    lines += [
        "",
        "Closure reactions (on body1, joint frame, N or N m): unique components compared "
        "(max abs difference over the 201 instants, MuJoCo tight / tightest / stiffest), "
        "the others marked not unique, with MuJoCo's (tight) and redundax's (minimum-norm) "
        "values at t = 2 s:",
        "",
        "| example | pair | component | unique | redundax max abs | max abs difference"
        " | MuJoCo final | redundax final |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, e in summary["examples"].items():
        for pair, comps in e["forces"]["tight"].items():
            for label, c in comps.items():
                diff = (
                    " / ".join(
                        f"{e['forces'][s][pair][label]['max_abs_difference']:.2e}"
                        for s in ("tight", "tightest", "stiffest")
                    )
                    if c["unique"]
                    else "not unique"
                )
                lines.append(
                    f"| {name} | {pair} | {label} | {c['unique']} | {c['redundax_max_abs']:.4g} | "
                    f"{diff} | {c['mujoco_final']:.4g} | {c['redundax_final']:.4g} |"
                )
    b = summary["bricard_toml_vs_mjcf"]
    lines += [
        "",
        f"Bricard, configs/mjcf/bricard.xml against configs/bricard.toml: P3 max |Δ| = "
        f"{b['P3_max_abs_difference_m']:.2e} m; rank / p / mobility "
        f"{b['mjcf']['rank']} / {b['mjcf']['redundancy']} / {b['mjcf']['mobility']} against "
        f"{b['toml']['rank']} / {b['toml']['redundancy']} / {b['toml']['mobility']}.",
        "",
        f"Runtime: {summary['runtime_s']:.0f} s.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    start = time.perf_counter()
    load_before = os.getloadavg()
    OUT.mkdir(parents=True, exist_ok=True)
    summary = {
        "problem": {
            "t_final_s": T_FINAL,
            "instants": N_SAVE,
            "redundax": REDUNDAX | {"method": "NullSpace()", "solver": "Dopri8 (default)"},
            "mujoco_settings": {
                k: v or "as in the file (MuJoCo defaults)" for k, v in SETTINGS.items()
            },
            "deviation": "max over instants, points and coordinates of |x_MuJoCo − x_redundax|",
        },
        "examples": {},
    }
    for name, path in EXAMPLES.items():
        mech = rx.io.from_mjcf(path)
        rd = run_redundax(mech)
        runs = {s: run_mujoco(path, setting, rd["ts"]) for s, setting in SETTINGS.items()}
        forces = {s: compare_forces(rd, mj) for s, mj in runs.items()}
        report, model = rd["report"], rd["model"]
        summary["examples"][name] = {
            "file": str(path.relative_to(ROOT)),
            "analysis": {
                "rows": int(model.n_constraints),
                "rigid_body_rows": int(model.n_internal),
                "rank": int(report.rank),
                "redundancy": int(report.redundancy),
                "mobility": int(report.dof),
                "unique_pairs": [
                    n for n, u in zip(model.pair_names, report.unique, strict=True) if u
                ],
            },
            "redundax": {
                "steps": int(rd["trajectory"].num_steps),
                "first_call_s": rd["first_call_s"],
                "warm_call_s": rd["warm_call_s"],
                "max_position_violation": float(np.max(rd["trajectory"].position_violation)),
            },
            "mujoco": {
                s: {
                    "deviation": deviation(rd, mj),
                    "wall_s": mj["wall_s"],
                    "steps": mj["steps"],
                }
                for s, mj in runs.items()
            },
            "forces": {
                s: {pair: f["components"] for pair, f in fs.items()} for s, fs in forces.items()
            },
        }
        figure(name, rd, runs, forces, OUT / f"{name}.png")
        print(name, json.dumps(summary["examples"][name]["mujoco"], indent=None), flush=True)
    summary["bricard_toml_vs_mjcf"] = bricard_against_toml()
    summary["runtime_s"] = time.perf_counter() - start
    summary["machine"] = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "mujoco": mujoco.__version__,
        "jax": jax.__version__,
        "diffrax": diffrax.__version__,
        "redundax": rx.__version__,
        "loadavg_before": list(load_before),
        "loadavg_after": list(os.getloadavg()),
    }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (OUT / "summary.md").write_text(markdown(summary))
    print(markdown(summary))


if __name__ == "__main__":
    main()
