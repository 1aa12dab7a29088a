"""Forward dynamics in joint coordinates: how the divide-and-conquer algorithm's cost
grows with the number of bodies, against a dense joint-space solve and against
redundax's absolute-coordinate path (issue 12).

Two families of spatial mechanisms:

- `pendulums`: an open chain of N rods joined by spherical joints
  (`models.spherical_chain(N)`): a tree, 3N joint coordinates, no loop;
- `a02`: IFToMM A02's chain of N parallelograms with spatial revolute joints
  (`models.spatial_twin(models.n_four_bar(N))`): 2N + 1 bodies, 2N + 1 joint
  angles of the tree, N cut joints, each loop redundant three times (p = 3N).

For each N, one forward-dynamics evaluation q̈(q, q̇) at the initial state, timed
inside one compiled loop (no Python dispatch counted), per call of a loop of k
evaluations (`*_us`) and, for the DCA and the absolute path, as the marginal cost of
one more evaluation (`*_marginal_us`: see `bench_scaling.py`; a program's first touch
of its temporary memory is paid once per call, not per evaluation):

- `dca`: `rx.joint_coordinates.dca_dynamics` — the preliminary passes (forward
  kinematics by pointer jumping, velocities by autodiff), the body terms in twists,
  the DCA's main pass and back-substitution over a balanced assembly tree (levels
  batched), and q̈ joint by joint;
- `dense`: `rx.joint_coordinates.joint_space_terms` +
  `rx.joint_coordinates.dense_joint_accelerations` — the mass matrix Jᵀ M J and the
  loop rows C J by autodiff of the forward kinematics, then the null-space method on
  a pivoted QR (O(N²) memory, O(N³) work);
- `absolute`: the absolute-coordinate right-hand side redundax integrates by default
  (`rx.equations.local_terms` + the block-sparse solver for these sizes; natural
  coordinates).

Reported: µs per evaluation, compile time, the log–log slope from N = 64 to the
largest N, and for N = 16 the DCA's cost per variant under `jax.vmap` at batch 1, 16
and 256. Dense paths stop at `--dense-max`. Accuracy (`dense_vs_dca_relative`): the
DCA's q̈ against the dense solve's at a moving state (`moving_state`: q̈ ≠ 0, the
loops closed), max |Δq̈| / max |q̈|.

Run:
    .venv/bin/python experiments/bench_dca.py            # ≈ 10 min on 2 cores
    .venv/bin/python experiments/bench_dca.py --quick    # N ≤ 64, to $TMPDIR
    .venv/bin/python experiments/bench_dca.py --accuracy-only  # accuracy fields only
Writes experiments/results/bench_dca/cpu.json and scaling.png.
"""

import argparse
import importlib.metadata
import json
import os
import pathlib
import platform
import tempfile
import time

import jax
import jax.numpy as jnp
from bench_scaling import _loop, _marginal, _per_call, slope  # as the block solver's benchmark

import redundax as rx
from redundax import models
from redundax.methods import block_solve

FAMILIES = {
    "pendulums": models.spherical_chain,
    "a02": lambda n: models.spatial_twin(models.n_four_bar(n)),
}


def _time(rhs, q, qd, calls):
    run = _loop(rhs, calls)
    start = time.perf_counter()
    jax.block_until_ready(run(q, qd))
    compile_s = time.perf_counter() - start
    return 1e6 * _per_call(run, q, qd) / calls, compile_s


def moving_state(jstate):
    """A state where the mechanism moves and q̈ ≠ 0, for the accuracy comparison
    (at the initial states q̈ is zero to round-off for A02, whose cranks stand
    upright, so a relative error there means nothing): q̇ = q̇⁰ where that is
    nonzero (A02: every joint angle at 1 rad/s), else 0.5 rad/s in every joint
    coordinate (the pendulums, a tree: any velocity is admissible), and q = q⁰ +
    0.5 q̇ (A02's joint angles all advance together along its motion, so this
    closes every loop exactly; measured max |Φ| ≈ 1e-15)."""
    qd = jstate.qd if bool(jnp.any(jstate.qd != 0)) else jnp.full_like(jstate.qd, 0.5)
    return jstate.q + 0.5 * qd, qd


def accuracy(jm, structure, jstate) -> dict:
    """The DCA's q̈ against the dense joint-space solve at `moving_state`: max |Δq̈|
    relative to max |q̈| (`dense_vs_dca_relative`), with max |q̈| and the state's
    max |Φ| of the absolute model (its loops closed)."""
    q, qd = moving_state(jstate)
    dca = jax.jit(lambda q, qd: rx.joint_coordinates.dca_dynamics(jm, structure, q, qd, 0.0).qdd)
    dense = jax.jit(
        lambda q, qd: rx.joint_coordinates.dense_joint_accelerations(
            rx.joint_coordinates.joint_space_terms(jm, q, qd, 0.0)
        )
    )
    reference, other = dca(q, qd), dense(q, qd)
    scale = float(jnp.max(jnp.abs(other)))
    phi = rx.equations.position_residual(jm.model, jm.absolute_coordinates(q), 0.0)
    return {
        "dense_vs_dca_relative": float(jnp.max(jnp.abs(other - reference))) / scale,
        "accuracy_max_abs_qdd": scale,
        "accuracy_state_max_abs_phi": float(jnp.max(jnp.abs(phi), initial=0.0)),
    }


def accuracy_only(path: pathlib.Path, dense_max: int) -> None:
    """Recompute the accuracy fields of the rows of `path` with N ≤ `dense_max` in
    place (no timing: the timings stay those of the run that wrote the file)."""
    results = json.loads(path.read_text())
    for family, rows in results["families"].items():
        for row in rows:
            if row["N"] > dense_max:
                continue
            mech = FAMILIES[family](row["N"])
            model, state = mech.build(), mech.initial_state()
            jm = rx.joint_coordinates.joint_model(model, state.q)
            jstate = rx.joint_coordinates.to_joint_state(jm, state)
            structure = rx.joint_coordinates.decide_joint(jm, jstate)
            row.update(accuracy(jm, structure, jstate))
            print(
                f"  {family:9s} N={row['N']:4d} dense vs DCA {row['dense_vs_dca_relative']:.2e}"
                f" (max |q̈| {row['accuracy_max_abs_qdd']:.3g},"
                f" max |Φ| {row['accuracy_state_max_abs_phi']:.1e})",
                flush=True,
            )
    results["accuracy_recomputed"] = {
        "load_average": os.getloadavg(),
        "note": "dense_vs_dca_relative and accuracy_* recomputed by --accuracy-only at "
        "moving_state (q̈ ≠ 0); timings from the run that wrote the rest of the file",
    }
    path.write_text(json.dumps(results, indent=1) + "\n")
    print("updated", path)


def time_family(family: str, n: int, dense_max: int) -> dict:
    mech = FAMILIES[family](n)
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    start = time.perf_counter()
    structure = rx.joint_coordinates.decide_joint(jm, jstate)
    decide_s = time.perf_counter() - start
    row = {
        "N": n,
        "bodies": model.bodies.count,
        "joint_coordinates": jm.n_coordinates,
        "absolute_coordinates": model.n_coordinates,
        "rows": len(structure.rows.rows),
        "redundancy": structure.redundancy,
        "assembly_levels": len(structure.plan.levels),
        "decide_s": decide_s,
    }
    calls = 100 if n <= 16 else 10 if n <= 256 else 3
    dca = lambda q, qd: rx.joint_coordinates.dca_dynamics(jm, structure, q, qd, 0.0).qdd  # noqa: E731
    row["dca_us"], row["dca_compile_s"] = _time(dca, jstate.q, jstate.qd, calls)
    row["dca_marginal_us"] = 1e6 * _marginal(dca, calls, jstate.q, jstate.qd)
    if n <= dense_max:

        def dense(q, qd):
            return rx.joint_coordinates.dense_joint_accelerations(
                rx.joint_coordinates.joint_space_terms(jm, q, qd, 0.0)
            )

        dense_calls = 50 if n <= 16 else 3 if n <= 64 else 1
        row["dense_us"], row["dense_compile_s"] = _time(dense, jstate.q, jstate.qd, dense_calls)
        row.update(accuracy(jm, structure, jstate))
    pattern = rx.internal.block_pattern(model, rx.analysis.topology(model))

    def absolute(q, qd):
        t = rx.equations.local_terms(model, q, qd, 0.0)
        return block_solve(pattern, t.R, t.B, t.mass_blocks, t.F, t.gamma).qdd

    row["absolute_us"], row["absolute_compile_s"] = _time(absolute, state.q, state.qd, calls)
    row["absolute_marginal_us"] = 1e6 * _marginal(absolute, calls, state.q, state.qd)
    print(
        f"  {family:9s} N={n:5d} dca {row['dca_us']:11.1f} µs"
        + (f"  dense {row['dense_us']:11.1f} µs" if "dense_us" in row else "")
        + f"  absolute {row['absolute_us']:11.1f} µs  levels {row['assembly_levels']}",
        flush=True,
    )
    return row


def batched(n: int, batches) -> list[dict]:
    """The DCA's cost per variant when `jax.vmap` runs a batch of states."""
    mech = FAMILIES["a02"](n)
    model, state = mech.build(), mech.initial_state()
    jm = rx.joint_coordinates.joint_model(model, state.q)
    jstate = rx.joint_coordinates.to_joint_state(jm, state)
    structure = rx.joint_coordinates.decide_joint(jm, jstate)
    out = []
    for b in batches:
        q = jnp.broadcast_to(jstate.q, (b, jstate.q.shape[0])) + 1e-3 * jnp.arange(b)[:, None] / b
        qd = jnp.broadcast_to(jstate.qd, q.shape)

        @jax.jit
        def run(q, qd):
            f = jax.vmap(
                lambda a, c: rx.joint_coordinates.dca_dynamics(jm, structure, a, c, 0.0).qdd
            )

            def body(_, acc):
                return acc + f(q + 1e-12 * acc, qd)

            return jax.lax.fori_loop(0, 10, body, jnp.zeros_like(qd))

        us = 1e6 * _per_call(run, q, qd) / 10
        out.append({"batch": b, "us_per_batch": us, "us_per_variant": us / b})
        print(f"  a02 N={n} batch {b:4d}: {us / b:9.1f} µs per variant", flush=True)
    return out


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, family in zip(axes, FAMILIES, strict=True):
        rows = results["families"][family]
        for key, label, style in (
            ("dca_us", "DCA (joint coordinates)", "o-"),
            ("dense_us", "dense joint-space solve", "s--"),
            ("absolute_us", "absolute coordinates (block solver)", "^-."),
        ):
            pts = [(r["N"], r[key]) for r in rows if key in r]
            if pts:
                ax.loglog(*zip(*pts, strict=True), style, label=label)
        ax.set_title(f"{family}")
        ax.set_xlabel("N")
        ax.set_ylabel("µs per forward-dynamics evaluation")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N ≤ 64, results to $TMPDIR")
    parser.add_argument("--max-n", type=int, default=1024)
    parser.add_argument("--dense-max", type=int, default=128)
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 2…max-n)")
    parser.add_argument("--batches", default="1,16,256", help="batches for the N = 16 chain")
    parser.add_argument(
        "--out", default=None, help="JSON file (default results/bench_dca/cpu.json)"
    )
    parser.add_argument(
        "--accuracy-only",
        action="store_true",
        help="recompute only the DCA-vs-dense accuracy fields of the JSON file in place",
    )
    args = parser.parse_args()
    max_n = 64 if args.quick else args.max_n
    base = pathlib.Path(tempfile.gettempdir()) / "redundax_quick" if args.quick else None
    out = (base or pathlib.Path(__file__).resolve().parent / "results") / "bench_dca"
    out.mkdir(parents=True, exist_ok=True)
    sizes = [n for n in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if n <= max_n]
    if args.sizes:
        sizes = [int(n) for n in args.sizes.split(",")]
    out_file = pathlib.Path(args.out) if args.out else out / "cpu.json"
    out_file.parent.mkdir(parents=True, exist_ok=True)
    if args.accuracy_only:
        accuracy_only(out_file, args.dense_max)
        return
    results = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg(),
            "jax": jax.__version__,
            "jaxlib": importlib.metadata.version("jaxlib"),
            "device": str(jax.devices()[0]),
        },
        "families": {},
    }
    for family in FAMILIES:
        results["families"][family] = [time_family(family, n, args.dense_max) for n in sizes]
    results["slopes_from_64"] = {
        family: {
            key: slope(rows, key, 64)
            for key in (
                "dca_us",
                "dense_us",
                "absolute_us",
                "dca_marginal_us",
                "absolute_marginal_us",
            )
        }
        for family, rows in results["families"].items()
    }
    results["batched_a02_N16"] = batched(16, [int(b) for b in args.batches.split(",")])
    out_file.write_text(json.dumps(results, indent=1) + "\n")
    stem = "" if out_file.stem == "cpu" else out_file.stem + "_"
    plot(results, out_file.with_name(stem + "scaling.png"))
    print(json.dumps(results["slopes_from_64"], indent=1))
    print("wrote", out_file)


if __name__ == "__main__":
    main()
