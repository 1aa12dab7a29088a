"""Redundax beside Pinocchio on Bricard's mechanism (IFToMM A04), issue 35: one 10 s
run and a sweep of variants, on the same machine in the same run.

- Reference: `rx.simulate` on `rx.models.bricard()` at rtol = 1e-12, atol = 1e-14
  (null-space method, Dopri8, projection after every step), P3 (the far end of rod 2)
  at the 201 saved times t = 0, 0.05, …, 10 s.
- Redundax as a user calls it: `rx.simulate(model, state0, 10.0,
  stepsize_controller=diffrax.PIDController(rtol=5e-6, atol=5e-8),
  solver=diffrax.Dopri8())`, everything else default (`NullSpace()`,
  `StepProjection()`, 201 saved states; the solver is named because the default at
  rtol ≥ 1e-6 is Tsit5). Its first call in the process (compilation included),
  the median of N warm calls (`jax.block_until_ready`), and the median of N calls
  to t = 1e-9 s (what a call costs besides its steps).
- Pinocchio (`pip install -e '.[bench]'`): a joint-coordinate tree of the six
  revolutes J0…J5 about their axes, q = 0 the square configuration; rod 5 is split
  at its middle into two halves, one carried by J4 (after rods 1–4), the other by
  J5 from the ground, each 0.5 kg with the solid-box inertia of a 0.1 × 0.5 × 0.1 m
  half about its own centre (together, by the parallel-axis theorem, rod 5's:
  checked below); the loop is closed by a 6-D constraint between the two halves at
  the split point (`pin.RigidConstraintModel(CONTACT_6D, ..., LOCAL)`, no Baumgarte
  corrector). q̈ from `pin.constraintDynamics` (memory from
  `pin.initConstraintDynamics`) with `pin.ProximalSettings(1e-12, mu=1e-4,
  max_iter=5)`: the 6-D closure of a mobility-1 loop has one redundant row, the
  Delassus matrix is singular and the default settings (mu = 0, 1 iteration) give
  NaN accelerations; the multipliers' component along the redundant direction moves by
  the state's tiny inconsistency / mu at every iteration, so Pinocchio's
  convergence test is never met and every call makes `max_iter` iterations (5 at
  mu = 1e-4 give q̈ within 4e-12 of 1000 iterations; a smaller mu makes the
  right-hand side noisier and DOP853 takes more steps, a larger one needs more
  iterations). State y = [q, v], integrated by SciPy's
  `solve_ivp(method="DOP853", rtol=5e-9, atol=5e-9)`, P3 at the same 201 times
  (`t_eval`, dense output). Timed: `solve_ivp` alone (the model built before),
  median of N runs. Also the loosest of a few looser DOP853 tolerances whose P3 is
  still within 2e-6 m (the accuracy the redundax call reaches), timed the same way.
- Accuracy: max over the 201 times of |P3 − P3_ref| for both; both must be within
  2e-6 m (the script says so when one is not).
- Sweep: N variants (`--variants`, 512) with rod 1's mass uniform in 0.8…1.2 kg
  (`numpy.random.default_rng(SEED)`), its inertia the nominal rod's (the sweep
  address `bodies.rod1.mass` changes the mass alone), the same masses for both
  engines, 10 s each. Pinocchio: each variant's model built and integrated (states
  saved at the 201 times the sweep saves) in a `multiprocessing` pool (fork) of
  `--processes` workers (default os.cpu_count()); wall time from the pool's start
  to its join, three pools in a row (the median is compared). Redundax: the command
  line `redundax sweep FILE --out DIR --json` as a subprocess, FILE a sweep TOML in
  a temporary directory that lists the masses (`sample = "grid"`, one parameter
  `bodies.rod1.mass` with `values`: exactly these floats; `analyze = false`,
  `simulate = true`, t_final = 10). A sweep file takes the solver and tolerances
  from its mechanism's `[simulation]` table (`[sweep]` accepts t_final and
  max_steps only), so the mechanism is a copy of configs/bricard.toml beside it
  whose `[simulation]` table says dopri8, null-space, rtol 5e-6, atol 5e-8 (the
  rest as shipped). The command runs with
  its defaults (chunk size, devices, processes) and a fresh compilation cache
  (`REDUNDAX_CACHE_DIR` in the temporary directory): a first run that compiles and
  fills it, then a warm run into a fresh --out. Both wall times include the
  interpreter's start and the imports; the start-up alone is measured by `redundax
  sweep FILE --list-parameters`. The sweep also evaluates the nominal model (row 0
  of its first chunk): N + 1 simulations against Pinocchio's N. The final P3 of
  every variant is compared between the two engines.
- Ratios redundax / Pinocchio for the single run (warm median, first call) and for
  the sweep (first and warm command).

The machine is shared: the load average is recorded before and after each part, and
`--wait-load L` waits (up to 10 min) for the 1-minute load to fall below L first.

Run:  cd /work/main && .venv/bin/python experiments/bench_pinocchio.py [--quick]
      [--variants 512] [--processes N] [--wait-load 2.5]
Writes experiments/results/bench_pinocchio/summary.json and prints the figures.
(--quick: 16 variants, 3 timed runs, written to $TMPDIR/redundax_quick/bench_pinocchio/.)
"""

import os

# One OpenBLAS thread (as the other benchmarks): set before NumPy and JAX load it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import multiprocessing
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import diffrax
import jax
import numpy as np
import pinocchio as pin
import scipy
from scipy.integrate import solve_ivp

import redundax as rx

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
OUT = pathlib.Path(__file__).resolve().parent / "results" / "bench_pinocchio"
OUT_QUICK = pathlib.Path(tempfile.gettempdir()) / "redundax_quick" / "bench_pinocchio"

T_FINAL = 10.0
N_SAVE = 201  # rx.simulate's default: P3 compared every 0.05 s
TARGET_ERROR = 2e-6  # [m], max over the saved times of |P3 − P3_ref|
REF_RTOL, REF_ATOL = 1e-12, 1e-14
RX_RTOL, RX_ATOL = 5e-6, 5e-8
PIN_RTOL, PIN_ATOL = 5e-9, 5e-9
PIN_LOOSER = [1e-8, 2e-8, 3e-8, 5e-8]  # rtol = atol, tried loose → tight
PROX_ACCURACY, PROX_MU, PROX_MAX_ITER = 1e-12, 1e-4, 5
MASS_RANGE = (0.8, 1.2)  # [kg], rod 1
PIN_SWEEP_REPEATS = 3
SEED = 35

# Bricard's geometry (rx.models.BRICARD_JOINTS): joint points [m] and the axis of
# each revolute, as a Pinocchio joint type (joint frames parallel to the global axes
# at q = 0, the square configuration).
LENGTH, MASS, SIDE, GRAVITY = 1.0, 1.0, 0.1, 9.81
JOINT_TYPES = {(1.0, 0.0, 0.0): "RX", (0.0, 1.0, 0.0): "RY", (0.0, 0.0, 1.0): "RZ"}


def box_inertia(mass, dims):
    """Central inertia of a solid box of edge lengths `dims` along x, y, z."""
    a, b, c = dims
    return np.diag(
        [mass * (b * b + c * c) / 12, mass * (a * a + c * c) / 12, mass * (a * a + b * b) / 12]
    )


def rod_inertia(mass, start, end, inertia_mass=None):
    """`pin.Inertia` of a rod from `start` to `end` (along one axis, square section
    SIDE) about the frame at `start`: its centre half-way, the solid-box inertia of
    `inertia_mass` (default `mass`) about it."""
    d = end - start
    dims = np.where(np.abs(d) > 0, np.abs(d), SIDE)
    rotational = box_inertia(mass if inertia_mass is None else inertia_mass, dims)
    return pin.Inertia(mass, d / 2, rotational)


def pinocchio_bricard(rod1_mass=MASS):
    """Bricard's mechanism in joint coordinates: the tree J0 → rod 1 → J1 → … → J4 →
    first half of rod 5, and J5 → second half of rod 5 from the ground, closed by a
    6-D constraint between the halves at rod 5's middle. Returns the model, the
    constraint, and P3 as (joint of rod 2, point in that joint's frame)."""
    points = [np.array(p, dtype=float) * LENGTH for p, _ in rx.models.BRICARD_JOINTS]
    axes = [JOINT_TYPES[tuple(a)] for _, a in rx.models.BRICARD_JOINTS]
    model = pin.Model()
    model.gravity.linear = np.array([0.0, -GRAVITY, 0.0])
    split = 0.5 * (points[4] + points[5])
    parent, origin, joints = 0, np.zeros(3), []
    for k in range(5):  # J0 … J4, each carrying rod k + 1 (J4: rod 5's first half)
        jid = model.addJoint(
            parent,
            getattr(pin, "JointModel" + axes[k])(),
            pin.SE3(np.eye(3), points[k] - origin),
            f"J{k}",
        )
        if k < 4:
            # Rod 1's mass alone varies (its inertia stays the nominal rod's), as the
            # sweep address bodies.rod1.mass does: a spatial body's inertia is not
            # swept with its mass.
            mass = rod1_mass if k == 0 else MASS
            inertia = rod_inertia(mass, points[k], points[k + 1], inertia_mass=MASS)
        else:
            inertia = rod_inertia(0.5 * MASS, points[4], split)
        model.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        joints.append(jid)
        parent, origin = jid, points[k]
    j5 = model.addJoint(
        0, getattr(pin, "JointModel" + axes[5])(), pin.SE3(np.eye(3), points[5]), "J5"
    )
    model.appendBodyToJoint(j5, rod_inertia(0.5 * MASS, points[5], split), pin.SE3.Identity())
    constraint = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_6D,
        model,
        joints[4],
        pin.SE3(np.eye(3), split - points[4]),
        j5,
        pin.SE3(np.eye(3), split - points[5]),
        pin.ReferenceFrame.LOCAL,
    )
    return model, constraint, (joints[1], points[2] - points[1])


def rod5_check(model):
    """Max |difference| between the two halves' inertia, summed about rod 5's centre
    at q = 0, and rod 5's own (mass, centre, rotational inertia)."""
    data = model.createData()
    pin.forwardKinematics(model, data, pin.neutral(model))
    halves = [data.oMi[j].act(model.inertias[j]) for j in (5, 6)]
    total = halves[0] + halves[1]
    points = [np.array(p, dtype=float) * LENGTH for p, _ in rx.models.BRICARD_JOINTS]
    whole = pin.SE3(np.eye(3), points[4]).act(rod_inertia(MASS, points[4], points[5]))
    return float(np.abs(total.matrix() - whole.matrix()).max())


class PinocchioRun:
    """`solve_ivp(DOP853)` of y = [q, v], q̈ from `pin.constraintDynamics`."""

    def __init__(self, rod1_mass=MASS):
        self.model, constraint, self.p3 = pinocchio_bricard(rod1_mass)
        self.data = self.model.createData()
        self.constraints = pin.StdVec_RigidConstraintModel()
        self.constraints.append(constraint)
        self.constraint_data = pin.StdVec_RigidConstraintData()
        self.constraint_data.append(constraint.createData())
        pin.initConstraintDynamics(self.model, self.data, self.constraints, self.constraint_data)
        self.prox = pin.ProximalSettings(PROX_ACCURACY, PROX_MU, PROX_MAX_ITER)
        self.tau = np.zeros(self.model.nv)
        self.nq = self.model.nq

    def rhs(self, t, y):
        q, v = y[: self.nq], y[self.nq :]
        a = pin.constraintDynamics(
            self.model, self.data, q, v, self.tau, self.constraints, self.constraint_data, self.prox
        )
        return np.concatenate([v, a])

    def __call__(self, rtol=PIN_RTOL, atol=PIN_ATOL, t_eval=None):
        y0 = np.zeros(self.nq + self.model.nv)  # square configuration, at rest
        return solve_ivp(
            self.rhs, (0.0, T_FINAL), y0, method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval
        )

    def p3_positions(self, qs):
        joint, point = self.p3
        out = []
        for q in qs:
            pin.forwardKinematics(self.model, self.data, q)
            out.append(self.data.oMi[joint].act(point))
        return np.array(out)

    def closure_error(self, q):
        """|log6| of the relative placement of the two halves at the split point."""
        c = self.constraints[0]
        pin.forwardKinematics(self.model, self.data, q)
        m1 = self.data.oMi[c.joint1_id] * c.joint1_placement
        m2 = self.data.oMi[c.joint2_id] * c.joint2_placement
        return float(np.linalg.norm(pin.log6(m1.inverse() * m2).vector))


def pinocchio_variant(rod1_mass):
    """One sweep variant (a pool worker): build, integrate 10 s saving the state at
    the 201 times a redundax sweep saves (DOP853's dense output costs 3 more
    evaluations per step), P3 at the end."""
    run = PinocchioRun(rod1_mass)
    sol = run(t_eval=np.linspace(0.0, T_FINAL, N_SAVE))
    return {
        "success": bool(sol.success),
        "nfev": int(sol.nfev),
        "P3_final": run.p3_positions([sol.y[: run.nq, -1]])[0].tolist(),
    }


def pinocchio_sweep(masses, processes):
    """Wall time of the pool (start to join) over `masses`, and its results."""
    # Fork: the workers use Pinocchio and SciPy only. JAX warns at any fork of a
    # process where it is loaded (its own threads are not used by the children).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*os.fork.*", category=RuntimeWarning)
        start = time.perf_counter()
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            results = pool.map(pinocchio_variant, [float(m) for m in masses])
        wall = time.perf_counter() - start
    return wall, results


def redundax_command():
    """The `redundax` command of this interpreter's environment."""
    script = pathlib.Path(sys.executable).parent / "redundax"
    return [str(script)] if script.exists() else [sys.executable, "-m", "redundax.cli"]


def sweep_files(folder, masses):
    """A copy of configs/bricard.toml with the benchmark's `[simulation]` table, and
    the sweep file that lists `masses` as rod 1's; returns the sweep file."""
    shipped = (CONFIGS / "bricard.toml").read_text()
    head, sep, _ = shipped.partition("\n[simulation]")
    assert sep, "configs/bricard.toml has no [simulation] table"
    (folder / "bricard.toml").write_text(
        head
        + "\n[simulation]  # bench_pinocchio.py: the tolerances of the timed rx.simulate call\n"
        + f't_final = {T_FINAL!r}\nmethod = "null-space"\nsolver = "dopri8"\n'
        + f"rtol = {RX_RTOL!r}\natol = {RX_ATOL!r}\n"
    )
    values = ",\n    ".join(repr(float(m)) for m in masses)
    path = folder / "sweep.toml"
    path.write_text(
        "# Written by experiments/bench_pinocchio.py: rod 1's mass, the same values as\n"
        "# the Pinocchio sweep.\n"
        "[sweep]\n"
        'mechanism = "bricard.toml"\n'
        'sample = "grid"\n'
        "analyze = false\n"
        "simulate = true\n"
        f"t_final = {T_FINAL!r}\n\n"
        "[[sweep.parameters]]\n"
        'name = "bodies.rod1.mass"\n'
        f"values = [\n    {values},\n]\n"
    )
    return path


def run_command(args, env):
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)} exited with {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        )
    return wall, proc


def redundax_sweep(masses, folder):
    """`redundax sweep` twice (compiling into a fresh cache, then warm) and the
    start-up cost of the command (`--list-parameters`); the final P3 of the warm
    run's variants."""
    sweep = sweep_files(folder, masses)
    env = {**os.environ, "REDUNDAX_CACHE_DIR": str(folder / "cache")}
    env.pop("REDUNDAX_NO_CACHE", None)
    cmd = redundax_command()
    out = {"command": [*cmd, "sweep", "SWEEP.toml", "--out", "DIR", "--json"]}
    for key in ("first_run", "warm_run"):
        target = folder / key
        load = os.getloadavg()
        wall, proc = run_command([*cmd, "sweep", str(sweep), "--out", str(target), "--json"], env)
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        out[key] = {
            "wall_s": wall,
            "stderr_tail": proc.stderr.strip().splitlines()[-6:],
            "loadavg_before": list(load),
            "loadavg_after": list(os.getloadavg()),
            "variants": summary.get("variants"),
        }
        print(f"redundax sweep ({key}): {wall:.1f} s")
    data = rx.sweep.read_sweep(folder / "warm_run" / "sweep.npz")
    names = [str(n) for n in data["marker_names"]]
    wall, _ = run_command([*cmd, "sweep", str(sweep), "--list-parameters"], env)
    out["startup_s (redundax sweep FILE --list-parameters)"] = wall
    out["chunk_size"] = data["meta"].get("chunk_size")
    steps = np.asarray(data["steps"])
    out["steps"] = {"min": int(steps.min()), "max": int(steps.max())}
    out["all_success"] = bool(np.all(data["success"]))
    out["any_changed"] = int(np.sum(data["changed/any"]))
    values = np.asarray(data["values"])[:, 0]
    assert np.array_equal(values, np.asarray(masses)), "the sweep's masses differ"
    return out, np.asarray(data["final_markers"])[:, names.index("P3")]


def wait_for_load(limit, max_wait_s=600.0):
    start = time.perf_counter()
    while os.getloadavg()[0] > limit and time.perf_counter() - start < max_wait_s:
        time.sleep(15.0)
    return time.perf_counter() - start


def timed(fn, n):
    out, times = None, []
    for _ in range(n):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return out, times


def p3_error(P, P_ref):
    e = np.linalg.norm(P - P_ref, axis=1)
    return float(e.max()), float(e[-1])


def git_info():
    """Commit of the library the results were computed with (the tree is shared)."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "src_modified": git("status", "--porcelain", "src").splitlines(),
        # Where `redundax` came from: the repository's src/, or a copy of a commit put
        # first on PYTHONPATH (then src_modified says nothing about the code run).
        "redundax_imported_from": str(pathlib.Path(rx.__file__).resolve().parent),
        "PYTHONPATH": os.environ.get("PYTHONPATH"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="16 variants, 3 runs, temp output")
    parser.add_argument("--variants", type=int, default=None, help="sweep size (default 512)")
    parser.add_argument("--processes", type=int, default=os.cpu_count(), help="Pinocchio pool")
    parser.add_argument(
        "--wait-load", type=float, default=None, help="wait (≤ 10 min) for a 1-min load below L"
    )
    args = parser.parse_args()
    out = OUT_QUICK if args.quick else OUT
    git_start = git_info()  # others commit while this runs: the commit at the start
    waited = wait_for_load(args.wait_load) if args.wait_load else 0.0
    n_runs = 3 if args.quick else 7
    n_variants = args.variants or (16 if args.quick else 512)
    load_before = os.getloadavg()
    wall0 = time.perf_counter()

    mech = rx.models.bricard()
    model, state0 = mech.build(), mech.initial_state()
    markers = jax.jit(jax.vmap(lambda q: rx.equations.marker_positions(model, q)))

    # ---- redundax as a user calls it (first call of the process: compilation) -------
    def rx_run(t1=T_FINAL):
        traj = rx.simulate(
            model,
            state0,
            t1,
            stepsize_controller=diffrax.PIDController(rtol=RX_RTOL, atol=RX_ATOL),
            solver=diffrax.Dopri8(),
        )
        jax.block_until_ready(traj.q)
        return traj

    load = os.getloadavg()
    start = time.perf_counter()
    traj = rx_run()
    rx_first = time.perf_counter() - start
    traj, rx_times = timed(rx_run, n_runs)
    # What a call costs besides its steps (checks, structure decision, transfers): a
    # run to t = 1e-9 s (its first call compiles).
    rx_run(1e-9)
    _, tiny = timed(lambda: rx_run(1e-9), n_runs)
    rx_single = {
        "call": f"rx.simulate(model, state0, {T_FINAL}, stepsize_controller="
        f"diffrax.PIDController(rtol={RX_RTOL}, atol={RX_ATOL}), solver=diffrax.Dopri8())",
        "steps": int(traj.num_steps),
        "first_call_s": rx_first,
        "run_time_median_s": statistics.median(rx_times),
        "run_time_min_s": min(rx_times),
        "run_times_s": rx_times,
        "fixed_cost_per_call_median_s (t1 = 1e-9)": statistics.median(tiny),
        "loadavg_before": list(load),
        "loadavg_after": list(os.getloadavg()),
    }
    print(
        f"redundax: first call {rx_first:.1f} s, warm median "
        f"{1e3 * rx_single['run_time_median_s']:.1f} ms ({rx_single['steps']} steps)"
    )

    # ---- reference ------------------------------------------------------------------
    ref = rx.simulate(
        model,
        state0,
        T_FINAL,
        stepsize_controller=diffrax.PIDController(rtol=REF_RTOL, atol=REF_ATOL),
    )
    ts = np.asarray(ref.ts)
    P_ref = np.asarray(markers(ref.q))[:, 0]
    rx_err = p3_error(np.asarray(markers(traj.q))[:, 0], P_ref)
    rx_single["P3_error_max_m"], rx_single["P3_error_final_m"] = rx_err

    # ---- Pinocchio ------------------------------------------------------------------
    run = PinocchioRun()
    load = os.getloadavg()
    sol, pin_times = timed(lambda: run(t_eval=ts), n_runs + 1)
    pin_times = pin_times[1:]  # the first run warms caches; it is not kept
    pin_err = p3_error(run.p3_positions(sol.y[: run.nq].T), P_ref)
    pin_single = {
        "integrator": f"scipy.integrate.solve_ivp(method='DOP853', rtol={PIN_RTOL}, "
        f"atol={PIN_ATOL}, t_eval=201 times)",
        "proximal_settings": {
            "accuracy": PROX_ACCURACY,
            "mu": PROX_MU,
            "max_iter": PROX_MAX_ITER,
        },
        "rhs_evaluations": int(sol.nfev),
        "success": bool(sol.success),
        "P3_error_max_m": pin_err[0],
        "P3_error_final_m": pin_err[1],
        "closure_error_at_10s": run.closure_error(sol.y[: run.nq, -1]),
        "run_time_median_s": statistics.median(pin_times),
        "run_time_min_s": min(pin_times),
        "run_times_s": pin_times,
        "loadavg_before": list(load),
        "loadavg_after": list(os.getloadavg()),
    }
    # The loosest DOP853 tolerance that still meets 2e-6 m (as redundax's call does).
    looser = []
    for tol in reversed(PIN_LOOSER):
        s = run(rtol=tol, atol=tol, t_eval=ts)
        err = p3_error(run.p3_positions(s.y[: run.nq].T), P_ref)[0]
        looser.append({"rtol_atol": tol, "rhs_evaluations": int(s.nfev), "P3_error_max_m": err})
        if err <= TARGET_ERROR:
            _, times = timed(lambda t=tol: run(rtol=t, atol=t, t_eval=ts), n_runs)
            looser[-1].update(run_time_median_s=statistics.median(times), run_times_s=times)
            break
    pin_single["looser_tolerances (loose → tight, the last meets 2e-6 m)"] = looser
    print(
        f"Pinocchio: median {1e3 * pin_single['run_time_median_s']:.1f} ms "
        f"({sol.nfev} evaluations)"
    )
    print(f"P3 error max: redundax {rx_err[0]:.2e} m, Pinocchio {pin_err[0]:.2e} m")
    for name, err in (("redundax", rx_err[0]), ("Pinocchio", pin_err[0])):
        if err > TARGET_ERROR:
            print(f"WARNING: {name}'s P3 error {err:.2e} m is above {TARGET_ERROR:g} m")

    # ---- sweep ----------------------------------------------------------------------
    masses = np.random.default_rng(SEED).uniform(*MASS_RANGE, size=n_variants)
    # Three pools one after the other: a few seconds each, so that a burst of the
    # other jobs on the machine shows as spread; the ratios use the median.
    load = os.getloadavg()
    pin_walls = []
    for _ in range(PIN_SWEEP_REPEATS):
        wall, pin_results = pinocchio_sweep(masses, args.processes)
        pin_walls.append(wall)
    pin_wall = statistics.median(pin_walls)
    pin_sweep = {
        "processes": args.processes,
        "start_method": "fork",
        "wall_s (pool start to join, median)": pin_wall,
        "wall_s (each pool)": pin_walls,
        "all_success": all(r["success"] for r in pin_results),
        "rhs_evaluations": {
            "min": min(r["nfev"] for r in pin_results),
            "max": max(r["nfev"] for r in pin_results),
        },
        "loadavg_before": list(load),
        "loadavg_after": list(os.getloadavg()),
    }
    print(
        f"Pinocchio sweep ({n_variants} variants, {args.processes} processes): "
        + ", ".join(f"{w:.1f}" for w in pin_walls)
        + " s"
    )
    folder = pathlib.Path(tempfile.mkdtemp(prefix="bench_pinocchio_"))
    try:
        rx_sweep, rx_p3 = redundax_sweep(masses, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    pin_p3 = np.array([r["P3_final"] for r in pin_results])
    diff = np.linalg.norm(rx_p3 - pin_p3, axis=1)

    report = {
        "problem": {
            "mechanism": "Bricard, IFToMM A04 (rx.models.bricard(); configs/bricard.toml)",
            "t_final": T_FINAL,
            "tracked_point": "P3 (far end of rod 2)",
            "accuracy_target_m": TARGET_ERROR,
            "error_measure": "max over the 201 saved times of |P3 − P3_ref| (Euclidean)",
            "reference": f"rx.simulate(model, state0, 10, stepsize_controller="
            f"diffrax.PIDController(rtol={REF_RTOL}, atol={REF_ATOL})): "
            f"{int(ref.num_steps)} steps",
            "quick": args.quick,
            "runs": n_runs,
        },
        "pinocchio_model": {
            "coordinates": "6 joint angles (J0…J5, q = 0 square), rod 5 split in two halves",
            "closure": "RigidConstraintModel(CONTACT_6D, J4 half, J5 half, LOCAL) at rod 5's "
            "middle; no Baumgarte corrector",
            "rod5_halves_inertia_check_max_abs_diff": rod5_check(run.model),
        },
        "single_run": {
            "redundax": rx_single,
            "pinocchio": pin_single,
            "ratio_redundax_over_pinocchio (warm medians)": rx_single["run_time_median_s"]
            / pin_single["run_time_median_s"],
            "ratio_redundax_first_call_over_pinocchio": rx_first
            / pin_single["run_time_median_s"],
        },
        "sweep": {
            "variants": n_variants,
            "parameter": f"rod 1 mass, uniform in {list(MASS_RANGE)} kg, "
            f"numpy.random.default_rng({SEED})",
            "pinocchio": pin_sweep,
            "redundax": rx_sweep,
            "ratio_redundax_first_run_over_pinocchio": rx_sweep["first_run"]["wall_s"] / pin_wall,
            "ratio_redundax_warm_run_over_pinocchio": rx_sweep["warm_run"]["wall_s"] / pin_wall,
            "final_P3_difference_between_engines_m": {
                "max": float(diff.max()),
                "median": float(np.median(diff)),
            },
        },
        "machine": {
            "os.cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jax_devices": [str(d) for d in jax.devices()],
            "diffrax": diffrax.__version__,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "pinocchio": pin.__version__,
            "redundax": rx.__version__,
            "waited_for_load_s": waited,
            "loadavg_before": list(load_before),
            "loadavg_after": list(os.getloadavg()),
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "git": git_start,
            "git_commit_at_end": git_info()["commit"],
        },
        "script_wall_s": time.perf_counter() - wall0,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n")
    s, w = report["single_run"], report["sweep"]
    print(
        f"single run: redundax {1e3 * rx_single['run_time_median_s']:.1f} ms, Pinocchio "
        f"{1e3 * pin_single['run_time_median_s']:.1f} ms, ratio "
        f"{s['ratio_redundax_over_pinocchio (warm medians)']:.2f}"
    )
    print(
        f"sweep of {n_variants}: Pinocchio {pin_wall:.1f} s, redundax first "
        f"{rx_sweep['first_run']['wall_s']:.1f} s / warm {rx_sweep['warm_run']['wall_s']:.1f} s "
        f"(ratios {w['ratio_redundax_first_run_over_pinocchio']:.2f} / "
        f"{w['ratio_redundax_warm_run_over_pinocchio']:.2f}); final P3 differences max "
        f"{diff.max():.1e} m"
    )
    print(f"load average before/after: {load_before} / {os.getloadavg()}")
    print(f"wrote {out / 'summary.json'}")


if __name__ == "__main__":
    main()
