"""Kraus, Winckler & Bock (2001, §9): "Another example with many kinematic loops
(hexapod) ... thirteen bodies with six closed kinematic loops ... simulated in
real-time on a Pentium III 800 MHz". Does redundax simulate it in real time?

The hexapod is `models.hexapod()` (a 6-UPS Gough–Stewart platform of machine-tool
size, 13 moving bodies, 156 natural coordinates; `configs/hexapod.toml`), its six
legs driven through the 10 s manoeuvre of `models.HEXAPOD_POSES` (a pose a second,
C² smooth steps of the leg lengths between them).

1. Analysis at the initial pose, free (no drivers) and driven: coordinates, rows,
   rank, degree of redundancy p, mobility, independent loops, and the pairs whose
   reactions are unique (`rx.decide`), with the SVD of C beside them (its rank and
   σ_min/σ_max).
2. The 10 s manoeuvre in three formulations, at two tolerances (rtol = atol · 100
   = 1e-6 with Tsit5, 1e-8 with Dopri8: the library's default solver for each):
   natural coordinates with the block-sparse solver (`rx.methods.BlockSparse()`,
   what `rx.simulate`'s default `NullSpace()` takes from 150 coordinates on), with the
   dense null-space method (`NullSpace(block=False)`), and joint coordinates (21:
   the legs' U and P joints and S1 as the tree, S2…S6 and the drivers as
   constraints; the divide-and-conquer algorithm). Every run with the library's
   defaults otherwise (a projection onto the constraints after every step, the
   singularity monitor). Per run: the first call (compilation included) and the
   warm wall time, best of 3 (the same compiled program; `rx.simulate` called as a
   user calls it, with the structure decided beforehand), so wall time per
   simulated second = best / 10 s (real time: ≤ 1); steps; the largest constraint
   violation; the platform centre's error at the knots against the poses
   (inverse kinematics: an independent oracle) and its largest difference from the
   joint-coordinate run at the same tolerance.
3. The driving forces of the six legs along the manoeuvre (the block solver's run
   at 1e-8; every reaction is unique, p = 0) with the platform's path: `hexapod.png`.

Timings on a shared machine vary with its load: the load average before and after
is stored with them.

Run:  .venv/bin/python experiments/hexapod.py [--quick]   # ≈ 8–12 min on 2 cores
      (--quick: the 1e-6 tolerance only, into $TMPDIR/redundax_quick/hexapod/)
Writes experiments/results/hexapod/summary.json and hexapod.png.
"""

import argparse
import importlib.metadata
import json
import os
import pathlib
import platform
import tempfile
import time

import diffrax
import jax
import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import redundax as rx  # noqa: E402
from redundax import models  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "hexapod"
T1 = 10.0
SAVES = 101  # every 0.1 s: the knots (every second) are saved states
REPEATS = 3
TOLERANCES = (1e-6, 1e-8)  # rtol; atol = rtol / 100


def _centres(model, q):
    """The platform centre (marker `centre`) at every saved state."""
    return np.asarray(jax.jit(jax.vmap(lambda x: rx.equations.marker_positions(model, x)[0]))(q))


def analysis() -> dict:
    out = {}
    for name, driven in (("free", False), ("driven", True)):
        mech = models.hexapod(driven=driven)
        model, state = mech.build(), mech.initial_state()
        structure = rx.decide(model, state.q, state.t)
        C = np.asarray(rx.equations.constraint_matrix(model, state.q, state.t))
        sigma = np.linalg.svd(C, compute_uv=False)
        names = [p.name for p in model.pairs]
        unique = np.asarray(structure.stable_unique[: len(names)])
        out[name] = {
            "bodies": model.bodies.count,
            "coordinates": model.n_coordinates,
            "rows": model.n_constraints,
            "rank": int(structure.rank),
            "redundancy": int(structure.redundancy),
            "mobility": int(structure.dof),
            "independent_loops": structure.topology.n_loops,
            "svd_rank": int(np.linalg.matrix_rank(C)),
            "svd_sigma_ratio": float(sigma[-1] / sigma[0]),
            "pairs": len(names),
            "unique_pairs": int(unique.sum()),
            "not_unique": [n for n, u in zip(names, unique, strict=True) if not u],
        }
        print(name, out[name], flush=True)
    return out


def _timed(call):
    """(first call's wall time, best of `REPEATS` warm calls, last result)."""
    start = time.perf_counter()
    result = call()
    jax.block_until_ready(result.q)
    first = time.perf_counter() - start
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = call()
        jax.block_until_ready(result.q)
        times.append(time.perf_counter() - start)
    return first, min(times), result


def simulations(tolerances) -> tuple[list, dict]:
    mech = models.hexapod()
    model, state = mech.build(), mech.initial_state()
    structure = rx.decide(model, state.q, state.t)
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    jstructure = rx.joint_coordinates.decide_joint(jm, jstate)
    # The poses at the knots (t = 0, 1, …, 10 s: saved states 0, 10, …, 100).
    knots = np.asarray([[p[1], p[2], 0.85 + p[3]] for p in models.HEXAPOD_POSES])
    rows, kept = [], {}
    for rtol in tolerances:
        # The same solver for every formulation: the library's default at this rtol
        # (joint models would otherwise take Dopri8 at every tolerance).
        options = dict(
            solver=rx.internal.default_solver(rtol),
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=rtol / 100),
            saveat=rx.SaveAt(n=SAVES),
        )
        runs = {
            "natural coordinates, block solver": lambda o=options: rx.simulate(
                model, state, T1, structure=structure, method=rx.methods.BlockSparse(), **o
            ),
            "natural coordinates, dense null space": lambda o=options: rx.simulate(
                model, state, T1, structure=structure, method=rx.methods.NullSpace(block=False),
                **o,
            ),
            "joint coordinates, DCA": lambda o=options: rx.simulate(
                jm, jstate, T1, structure=jstructure, **o
            ),
        }  # fmt: skip
        centres = {}
        for name, call in runs.items():
            load = os.getloadavg()[0]
            first, best, traj = _timed(call)
            x = traj.x if name.startswith("joint") else traj.q
            centres[name] = _centres(model, x)
            knot_error = np.max(np.abs(centres[name][:: (SAVES - 1) // 10] - knots))
            rows.append(
                {
                    "formulation": name,
                    "rtol": rtol,
                    "atol": rtol / 100,
                    "solver": type(rx.internal.default_solver(rtol)).__name__,
                    "first_call_s": first,
                    "warm_best_s": best,
                    "wall_per_simulated_second": best / T1,
                    "real_time": best <= T1,
                    "steps": int(traj.num_accepted_steps),
                    "rejected": int(traj.num_rejected_steps),
                    "max_position_violation": float(np.max(traj.position_violation)),
                    "valid": bool(np.all(traj.valid)),
                    "centre_error_at_knots_m": float(knot_error),
                    "load_before": load,
                    "load_after": os.getloadavg()[0],
                }
            )
            print(rows[-1], flush=True)
            if name.endswith("block solver"):
                kept[rtol] = traj
        reference = centres["joint coordinates, DCA"]
        for row in rows[-len(runs) :]:
            diff = np.max(np.abs(centres[row["formulation"]] - reference))
            row["centre_difference_to_joint_run_m"] = float(diff)
    # Driving forces of the block solver's run at the tightest tolerance.
    traj = kept[min(tolerances)]
    history = rx.reaction_history(model, traj)
    forces = np.stack(
        [np.asarray(history.components(f"D{k}")["driving force"][0]) for k in range(1, 7)],
        axis=1,
    )
    unique = all(bool(np.all(history.components(f"D{k}")["driving force"][1])) for k in range(1, 7))
    figure_data = {
        "t": np.asarray(traj.ts),
        "centre": _centres(model, traj.q),
        "forces": forces,
        "knots": knots,
    }
    return rows, {"figure": figure_data, "driving_forces_unique": unique}


def figure(data, path) -> None:
    t, centre, forces, knots = data["t"], data["centre"], data["forces"], data["knots"]
    fig, (ax, ay) = plt.subplots(1, 2, figsize=(11, 4))
    knot_t = np.asarray([p[0] for p in models.HEXAPOD_POSES])
    for k, label in enumerate("xyz"):
        offset = 0.85 if label == "z" else 0.0
        (line,) = ax.plot(t, 1e3 * (centre[:, k] - offset), label=label)
        ax.plot(knot_t, 1e3 * (knots[:, k] - offset), "o", color=line.get_color(), ms=4)
    ax.set(xlabel="t [s]", ylabel="platform centre − initial [mm]")
    ax.set_title("hexapod: platform path (dots: the poses)")
    ax.legend()
    for k in range(6):
        ay.plot(t, forces[:, k], label=f"D{k + 1}")
    ay.set(xlabel="t [s]", ylabel="driving force [N]")
    ay.set_title("leg driving forces (unique: p = 0)")
    ay.legend(ncol=3, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(quick: bool) -> None:
    out = (
        RESULTS if not quick else pathlib.Path(tempfile.gettempdir()) / "redundax_quick" / "hexapod"
    )
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    summary = {
        "experiment": "Kraus et al. 2001 §9: the hexapod (13 bodies, 6 legs), 10 s of its "
        "driven manoeuvre in real time?",
        "mechanism": "models.hexapod() (configs/hexapod.toml)",
        "analysis": analysis(),
    }
    rows, extra = simulations(TOLERANCES[:1] if quick else TOLERANCES)
    summary["runs"] = rows
    summary["driving_forces_unique"] = extra["driving_forces_unique"]
    data = extra["figure"]
    summary["peak_driving_force_N"] = float(np.max(np.abs(data["forces"])))
    summary["real_time"] = {f"{r['formulation']}, rtol {r['rtol']:g}": r["real_time"] for r in rows}
    summary["script_wall_s"] = time.perf_counter() - start
    summary["machine"] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "devices": [str(d) for d in jax.devices()],
        "redundax": importlib.metadata.version("redundax"),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    figure(data, out / "hexapod.png")
    print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 1e-6 tolerance only")
    main(parser.parse_args().quick)
