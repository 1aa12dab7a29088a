"""Where one right-hand side and one step of the default simulation go, for two small
mechanisms, single and under `jax.vmap` (issue 35, scope item 1).

Mechanisms and settings (the library's default path, structure decided once by
`rx.decide` at the initial state, the method specialised as `simulate` does it with
`redundax.methods.specialise`, the drift control prepared as `simulate` prepares it):

- Bricard (`rx.models.bricard()`, 60 coordinates): `rx.methods.NullSpace()`, Dopri8 at
  rtol = 5e-6, atol = 5e-8 (the setting of `bench_bricard.py`'s projection section),
  default drift control `rx.drift.StepProjection()`, default singularity monitor (σ of the
  dense C after every step), 10 s, 101 saved states.
- The mobile robot (`rx.models.mobile_robot()`, 21 coordinates): every default of
  `rx.simulate` (rtol 1e-8, atol 1e-10, hence Dopri8; `StepProjection()`; the monitor),
  the 10 s manoeuvre, 201 saved states.

Measured, in µs per evaluation, inside one jitted `lax.fori_loop` of N evaluations (no
dispatch; N set so that a loop takes ~0.03 s, at least 2; every loop compiled first,
then all timed in 15 rounds, each round running every piece once; every iteration
nudges the piece's inputs by 1e-300 × the previous output, so nothing is hoisted out of
the loop — the "loop overhead" row is the harness alone):

- `rhs`: `redundax._integration._vector_field`, what Diffrax integrates (terms + the
  drift control's Baumgarte Γ + `method.acceleration`);
- `assembly`: `method.terms` (C, b, Γ, Φ, M, F, C q̇ + b by autodiff) + Baumgarte Γ;
- `linear algebra`: `method.acceleration` on given terms; and inside it, re-implemented
  here from `redundax.methods._kernels.schur_acceleration`'s lines (checked against it
  to round-off at run time): `schur: formation` (M⁻¹Cᵀ, M⁻¹F, S = C M⁻¹ Cᵀ, Jacobi
  scaling, shift), `schur: factorisation` (the Cholesky factor; at most
  `SCHUR_INVERSE_MAX_ROWS` rows also the inverse L⁻ᵀL⁻¹ formed from it), `schur: 1 +
  6 refinements` (the applications of the factor or the inverse), `schur: q̈` (the
  back-substitution M⁻¹F − M⁻¹Cᵀ D⁻½ μ);
- the step end: `projection` (`StepProjection.prepare(method, structure)
  ._project_state`: one Newton step on the positions, one on the velocities) and its two
  corrections; the singularity monitor's observation `redundax.monitors._singularity.step_sigma`
  (C assembled, dense SVD, values only), and the SVD alone on a given C;
- one whole step from the same state, carrying the solver state (FSAL, the monitor's
  log) from iteration to iteration: bare `Dopri8().step`; the projected step
  (`ProjectedSteps`: 14 right-hand sides, its first stage re-evaluated at the projected
  state); and the solver as `simulate` wraps it (`_monitored`: the singularity monitor
  around the projected step; what `_simulate` adds around it, `SavedAt`, the
  step-size controller and Diffrax's loop, is in the whole run, not here).
  Step size: the run's mean accepted step.
- a whole warm run: `rx.simulate` as a user calls it (structure passed; steps; its
  fixed cost, the same call over 1e-9 s), and `eqx.filter_jit` of it, single and under
  `vmap` (the same initial state repeated B times), for the program alone; 5 rounds,
  each making every kind of call once (median and minimum). Per step = run / attempted
  steps; what it has beyond the in-loop step is Diffrax's loop, the step-size
  controller, the saving (`SavedAt`) and the validity event.

Each piece single (one state, no `vmap`) and under `jax.vmap` at batch 16 and 256: the
batched inputs are distinct states along the motion (saved at 256 times from 1 s to
10 s of a warm run; the single state is the first, t = 1 s). Reported per variant (loop
time / N / B) with the ratio to the single cost (< 1: batching amortises). Shares per
step: 14 right-hand sides, projection, monitor, the rest of the step (Runge–Kutta
combinations, error estimate, the stage loop), and per run step the rest (controller,
saving, Diffrax's loop, the call's fixed cost).

`--label NAME` stores the run under that key of `summary.json` (others kept), so that a
"before" and an "after" live in one file. The machine is shared: the load average is
recorded before and after each mechanism; `--wait-load L` waits (≤ 10 min) for the
1-minute load to fall below L first.

Run:  .venv/bin/python experiments/profile_step.py --label before [--quick] [--wait-load 2.5]
Writes experiments/results/profile_step/summary.json and prints a table (≈ 10–12 min on
2 cores; --quick: fewer, shorter repeats, written to $TMPDIR/redundax_quick/profile_step/).
"""

import os

# One OpenBLAS thread unless the shell says otherwise (the LAPACK calls that XLA:CPU
# makes go through SciPy's OpenBLAS; see bench_bricard.py). Before NumPy and JAX load.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import collections
import dataclasses
import json
import pathlib
import platform
import re
import statistics
import subprocess
import tempfile
import time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import redundax as rx
from redundax._integration import _monitored, _vector_field
from redundax.drift._step_projection import StepProjection
from redundax.methods import specialise
from redundax.methods._kernels import (
    SCHUR_INVERSE_MAX_ROWS,
    SCHUR_REGULARISATION,
    mass_solver,
    schur_acceleration,
)
from redundax.monitors._singularity import THRESHOLD, Watch, step_pivot_sines, step_sigma

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "results" / "profile_step"
OUT_QUICK = pathlib.Path(tempfile.gettempdir()) / "redundax_quick" / "profile_step"
BATCHES = (1, 16, 256)  # 1: single, no vmap
N_STATES = 256
EPS = 1e-300


# ---- the harness -------------------------------------------------------------------------


def _finite_sum(tree, batched):
    """Σ of the finite values of every inexact leaf (per variant when batched)."""
    total = 0.0
    for leaf in jax.tree.leaves(tree):
        if not (eqx.is_array(leaf) and jnp.issubdtype(leaf.dtype, jnp.inexact)):
            continue
        x = jnp.where(jnp.isfinite(leaf), leaf, 0.0)
        total = total + (jnp.sum(x.reshape(x.shape[0], -1), axis=1) if batched else jnp.sum(x))
    return jnp.where(jnp.isfinite(total), total, 0.0)


def _nudge(tree, s, batched):
    """Every inexact leaf with its first element (per variant) moved by 1e-300 s."""

    def one(leaf):
        if not (eqx.is_array(leaf) and jnp.issubdtype(leaf.dtype, jnp.inexact)):
            return leaf
        eps = (EPS * s).astype(leaf.dtype)
        if leaf.ndim == (1 if batched else 0):
            return leaf + eps
        index = ((slice(None),) if batched else ()) + (0,) * (leaf.ndim - (1 if batched else 0))
        return leaf.at[index].add(eps)

    return jax.tree.map(one, tree)


def in_loop(fn, inputs, batch, target_s, carries=False):
    """A timer of `fn(inputs) -> outputs` (`carries`: `-> (outputs, next inputs)`, the
    solver state carried) inside one jitted `fori_loop` whose length is an argument (one
    compilation, calibrated to `target_s` a loop); `inputs` batched along axis 0 when
    `batch` > 1. Returns `(time_once, info)`: `time_once()` runs the loop once and gives
    µs per evaluation (per variant)."""
    batched = batch > 1
    f = eqx.filter_vmap(fn) if batched else fn
    arrays, static = eqx.partition(inputs, eqx.is_array)

    @jax.jit
    def loop(n, arrays):
        def body(_, carry):
            x, acc = carry
            out = f(eqx.combine(x, static))
            if carries:
                out, nxt = out
                x = eqx.partition(nxt, eqx.is_array)[0]
            s = _finite_sum(out, batched)
            return _nudge(x, s, batched), acc + jnp.sum(s)

        return jax.lax.fori_loop(0, n, body, (arrays, jnp.zeros(())))[1]

    start = time.perf_counter()
    jax.block_until_ready(loop(2, arrays))
    compile_s = time.perf_counter() - start
    probe_n, per = 2, None
    while per is None or (per * probe_n < 0.02 and probe_n < 100_000):
        if per is not None:
            probe_n = int(min(100_000, max(2 * probe_n, 0.03 / max(per, 1e-9))))
        start = time.perf_counter()
        jax.block_until_ready(loop(probe_n, arrays))
        per = (time.perf_counter() - start) / probe_n
    n = int(max(2, min(1_000_000, target_s / per)))

    def time_once():
        start = time.perf_counter()
        jax.block_until_ready(loop(n, arrays))
        return (time.perf_counter() - start) / n / batch * 1e6

    return time_once, {"iterations": n, "first_call_s": compile_s}


def stats(times, info):
    return {
        "median_us": statistics.median(times),
        "min_us": min(times),
        "runs_us": times,
        **info,
    }


# ---- the pieces of the Schur path, copied from schur_acceleration ------------------------
# redundax/methods/_kernels.py, `schur_acceleration` (refinements = 6), split where the
# work changes kind. The four pieces chained give its q̈ (checked in `split_check`).


def schur_formation(C, M, F, gamma, block, mass_inverse):
    """Copied lines: M⁻¹Cᵀ, M⁻¹F, S = C M⁻¹ Cᵀ, r, Jacobi scaling, shift."""
    solve = mass_solver(M, block, mass_inverse)
    MiCt = solve(C.T)
    MiF = solve(F[:, None])[:, 0]
    S = C @ MiCt
    r = C @ MiF - gamma
    d = jnp.diag(S)
    scale = jnp.where(d > 0.0, 1.0 / jnp.sqrt(jnp.where(d > 0.0, d, 1.0)), 1.0)
    Ss = scale[:, None] * S * scale[None, :]
    shift = jnp.where(d > 0.0, SCHUR_REGULARISATION, 1.0)
    rs = scale * r
    shifted = Ss + jnp.diag(shift)
    return MiCt, MiF, Ss, rs, scale, shifted


def schur_factor(shifted):
    """Copied lines: the lower Cholesky factor; up to SCHUR_INVERSE_MAX_ROWS rows the
    inverse (Ŝ + δI)⁻¹ = L⁻ᵀ L⁻¹ formed from it (the refinements then multiply)."""
    if shifted.shape[0] <= SCHUR_INVERSE_MAX_ROWS:
        L = jnp.linalg.cholesky(shifted)
        Linv = jax.scipy.linalg.solve_triangular(
            L, jnp.eye(shifted.shape[0], dtype=shifted.dtype), lower=True
        )
        return Linv.T @ Linv
    return jax.scipy.linalg.cho_factor(shifted, lower=True)[0]


def schur_cholesky_only(shifted):
    """The Cholesky factorisation alone (LAPACK potrf)."""
    return jnp.linalg.cholesky(shifted)


def schur_refine(Ss, rs, factor, refinements=6):
    """Copied lines: μ from the factor (or the inverse), refined `refinements` times."""
    if Ss.shape[0] <= SCHUR_INVERSE_MAX_ROWS:
        apply = lambda v: factor @ v  # noqa: E731
    else:
        apply = lambda v: jax.scipy.linalg.cho_solve((factor, True), v)  # noqa: E731
    mu = apply(rs)
    for _ in range(refinements):
        mu = mu + apply(rs - Ss @ mu)
    return mu


def schur_back(MiF, MiCt, scale, mu):
    """Copied line: q̈ = M⁻¹F − M⁻¹Cᵀ D⁻½ μ."""
    return MiF - MiCt @ (scale * mu)


def split_check(terms, gamma):
    """max |q̈ of the four pieces − schur_acceleration's q̈| (relative)."""
    MiCt, MiF, Ss, rs, scale, shifted = schur_formation(
        terms.C, terms.M, terms.F, gamma, terms.block, terms.mass_inverse
    )
    qdd = schur_back(MiF, MiCt, scale, schur_refine(Ss, rs, schur_factor(shifted)))
    ref = schur_acceleration(
        terms.C, terms.M, terms.F, gamma, terms.block, mass_inverse=terms.mass_inverse
    )
    return float(jnp.max(jnp.abs(qdd - ref)) / jnp.max(jnp.abs(ref)))


def lapack_calls(fn, args):
    """{custom-call target: count} of `jax.jit(fn)` compiled for `args` (the LAPACK
    kernels XLA:CPU calls; under `vmap` each runs over the batch one matrix at a time)."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    return dict(collections.Counter(re.findall(r'custom_call_target="([^"]+)"', text)))


# ---- one mechanism -----------------------------------------------------------------------


@dataclasses.dataclass
class Setting:
    name: str
    mechanism: str
    build: object
    t_final: float
    n_save: int
    rtol: float
    atol: float
    solver_name: str


SETTINGS = {
    "bricard": Setting(
        "bricard", "rx.models.bricard()", rx.models.bricard, 10.0, 101, 5e-6, 5e-8, "Dopri8"
    ),
    "mobile_robot": Setting(
        "mobile_robot",
        "rx.models.mobile_robot() (rx.simulate's defaults)",
        rx.models.mobile_robot,
        10.0,
        201,
        1e-8,
        1e-10,
        "Dopri8 (default at rtol < 1e-6)",
    ),
}


def profile_mechanism(setting, target_s, repeats, n_runs, run_batches):
    mech = setting.build()
    model, state0 = mech.build(), mech.initial_state()
    structure = rx.decide(model, state0.q, state0.t)
    method = specialise(rx.methods.NullSpace(), structure, model)
    drift = StepProjection().prepare(method, structure)
    args = (model, structure, method, drift)

    def simulate(state, t1=setting.t_final, ts=None, throw=True):
        return rx.simulate(
            model,
            state,
            t1,
            structure=structure,
            solver=diffrax.Dopri8(),
            stepsize_controller=diffrax.PIDController(rtol=setting.rtol, atol=setting.atol),
            saveat=rx.SaveAt(n=setting.n_save) if ts is None else rx.SaveAt(ts=ts),
            throw=throw,
        )

    # States along the motion: 256 saved between 1 s and t_final.
    times = np.linspace(1.0, setting.t_final, N_STATES)
    along = simulate(state0, ts=np.concatenate([[0.0], times]))
    qs, qds, ts_b = along.q[1:], along.qd[1:], jnp.asarray(along.ts[1:])
    base = simulate(state0)
    jax.block_until_ready(base.q)
    steps = int(base.num_steps)
    accepted = int(base.num_accepted_steps)
    dt = setting.t_final / accepted

    def states(batch):
        if batch == 1:
            return qs[0], qds[0], ts_b[0]
        k = np.arange(0, N_STATES, N_STATES // batch)[:batch]
        return qs[k], qds[k], ts_b[k]

    def terms_at(q, qd, t):
        return method.terms(model, q, qd, t)

    def batched(f, batch):
        return f if batch == 1 else jax.vmap(f)

    # Shapes and the path taken.
    q1, qd1, t1 = states(1)
    terms1 = terms_at(q1, qd1, t1)
    gamma1 = drift.gamma(terms1)
    nc = terms1.C.shape[0]
    info = {
        "mechanism": setting.mechanism,
        "coordinates": int(model.n_coordinates),
        "C_shape": list(terms1.C.shape),
        "holonomic_rows": int(model.n_holonomic),
        "rank": int(structure.rank),
        "method_specialised": repr(method).replace("\n", " "),
        "schur_path": "inverse L⁻ᵀL⁻¹ (≤ SCHUR_INVERSE_MAX_ROWS rows)"
        if nc <= SCHUR_INVERSE_MAX_ROWS
        else "Cholesky factor, cho_solve in each refinement (> SCHUR_INVERSE_MAX_ROWS rows)",
        "drift_control": repr(drift).replace("\n", " "),
        "simulate": {
            "t_final_s": setting.t_final,
            "n_save": setting.n_save,
            "rtol": setting.rtol,
            "atol": setting.atol,
            "solver": setting.solver_name,
            "steps": steps,
            "accepted_steps": accepted,
            "rejected_steps": int(base.num_rejected_steps),
            "step_size_in_loop_s (t_final / accepted)": dt,
        },
        "single_state_t_s": float(t1),
        "batched_states": "distinct states along the motion, saved at 256 times from 1 s to "
        "t_final (batch 16: every 16th)",
    }
    schur = bool(getattr(method, "schur", False)) and not bool(getattr(method, "block", False))
    four = jax.tree.map(lambda x: jnp.stack([x] * 4), (q1, qd1, t1))
    info["lapack_calls (custom calls in the compiled program, single / vmap)"] = {
        what: {"single": lapack_calls(fn, (q1, qd1, t1)), "vmap": lapack_calls(jax.vmap(fn), four)}
        for what, fn in {
            "rhs": lambda q, qd, t: _vector_field(t, (q, qd), args),
            "projection": lambda q, qd, t: drift._project_state(args, t, (q, qd)),
            "monitor": lambda q, qd, t: step_sigma(args, t, (q, qd)),
        }.items()
    }
    if schur:
        info["schur_split_rel_error"] = split_check(terms1, gamma1)

    # ---- the pieces ------------------------------------------------------------------------
    def rhs(x):
        q, qd, t = x
        return _vector_field(t, (q, qd), args)

    def assembly(x):
        q, qd, t = x
        terms = terms_at(q, qd, t)
        return terms, drift.gamma(terms)

    def linear_algebra(x):
        terms, gamma = x
        return method.acceleration(terms, gamma, structure)

    def projection(x):
        q, qd, t = x
        return drift._project_state(args, t, (q, qd))

    def correction_positions(x):
        q, qd, t = x
        return drift._correction(model, structure, q, jnp.zeros_like(q), t, holonomic=True)

    def correction_velocities(x):
        q, qd, t = x
        return drift._correction(model, structure, q, qd, t, holonomic=False)

    def monitor(x):
        q, qd, t = x
        return step_sigma(args, t, (q, qd))

    def svd_only(x):
        return jnp.linalg.svd(x, compute_uv=False)

    def monitor_pivots(x):
        q, qd, t = x
        return step_pivot_sines(args, t, (q, qd))

    def constraint_matrix(x):
        q, qd, t = x
        return rx.equations.constraint_matrix(model, q, t)

    def overhead(x):
        q, qd, t = x
        return q

    term = diffrax.ODETerm(_vector_field)
    watch = Watch(THRESHOLD, "singular_values")

    def solver_of(kind, t0, y0):
        if kind == "bare":
            return diffrax.Dopri8()
        if kind == "projected":
            return drift.wrap(diffrax.Dopri8())
        return _monitored(args, diffrax.Dopri8(), t0, y0, watch)[0]

    def step_inputs(kind, q, qd, t):
        solver = solver_of(kind, t, (q, qd))
        state = solver.init(term, t, t + dt, (q, qd), args)
        return (q, qd, t, state)

    def stepper(kind):
        def step(x):
            q, qd, t, state = x
            solver = solver_of(kind, t, (q, qd))
            y1, _, _, state1, _ = solver.step(term, t, t + dt, (q, qd), args, state, False)
            # Python constants in the new state (FSAL's `False`) as the carried arrays.
            state1 = jax.tree.map(lambda new, old: jnp.asarray(new, dtype=old.dtype), state1, state)
            return y1, (q, qd, t, state1)

        return step

    pieces = {
        "loop overhead (harness alone)": (overhead, "state"),
        "rhs (_vector_field: terms + Baumgarte Γ + acceleration)": (rhs, "state"),
        "assembly (method.terms + Baumgarte Γ)": (assembly, "state"),
        "linear algebra (method.acceleration on given terms)": (linear_algebra, "terms"),
    }
    if schur:
        pieces.update(
            {
                "schur: formation (M⁻¹Cᵀ, S = C M⁻¹ Cᵀ, scaling)": (
                    schur_formation,
                    "formation",
                ),
                "schur: factorisation (Cholesky; ≤ 32 rows: + inverse)": (
                    schur_factor,
                    "shifted",
                ),
                "schur: Cholesky alone (potrf)": (schur_cholesky_only, "shifted"),
                "schur: 1 + 6 refinements (apply factor / inverse)": (schur_refine, "refine"),
                "schur: q̈ (back-substitution)": (schur_back, "back"),
            }
        )
    pieces.update(
        {
            "projection (StepProjection._project_state)": (projection, "state"),
            "projection: position correction": (correction_positions, "state"),
            "projection: velocity correction": (correction_velocities, "state"),
            "monitor (step_sigma: C + SVD)": (monitor, "state"),
            "monitor: SVD alone (given C)": (svd_only, "C"),
            "monitor, the alternative: block pivot sines (step_pivot_sines)": (
                monitor_pivots,
                "state",
            ),
            "constraint_matrix (C alone)": (constraint_matrix, "state"),
            "step: bare Dopri8": (stepper("bare"), "step:bare"),
            "step: projected (ProjectedSteps ∘ Dopri8)": (stepper("projected"), "step:projected"),
            "step: as simulate wraps it (monitor ∘ projection ∘ Dopri8)": (
                stepper("monitored"),
                "step:monitored",
            ),
        }
    )

    def inputs_of(kind, batch):
        q, qd, t = states(batch)
        if kind == "state":
            return (q, qd, t)
        terms = batched(terms_at, batch)(q, qd, t)
        gamma = batched(drift.gamma, batch)(terms)
        if kind == "terms":
            return (terms, gamma)
        if kind == "C":
            return terms.C
        form = batched(
            lambda terms, gamma: schur_formation(
                terms.C, terms.M, terms.F, gamma, terms.block, terms.mass_inverse
            ),
            batch,
        )(terms, gamma)
        MiCt, MiF, Ss, rs, scale, shifted = form
        if kind == "formation":
            return (terms.C, terms.M, terms.F, gamma, terms.mass_inverse)
        if kind == "shifted":
            return shifted
        factor = batched(schur_factor, batch)(shifted)
        if kind == "refine":
            return (Ss, rs, factor)
        if kind == "back":
            mu = batched(schur_refine, batch)(Ss, rs, factor)
            return (MiF, MiCt, scale, mu)
        if kind.startswith("step:"):
            return batched(lambda q, qd, t: step_inputs(kind[5:], q, qd, t), batch)(q, qd, t)
        raise ValueError(kind)

    block = terms1.block
    calls = {
        "formation": lambda x: schur_formation(x[0], x[1], x[2], x[3], block, x[4]),
        "refine": lambda x: schur_refine(*x),
        "back": lambda x: schur_back(*x),
    }
    # Every loop compiled and calibrated first, then timed in rounds (each round runs
    # every piece at every batch once): a change of the machine's load falls on all the
    # pieces alike, and the ratios within a round stay comparable.
    timers = {}
    for name, (fn, kind) in pieces.items():
        call = calls.get(kind, fn)
        for batch in BATCHES:
            x = inputs_of(kind, batch)
            timers[name, batch] = in_loop(
                call, x, batch, target_s, carries=kind.startswith("step:")
            )
    times = {key: [] for key in timers}
    for _ in range(repeats):
        for key, (time_once, _) in timers.items():
            times[key].append(time_once())
    out = {}
    for name in pieces:
        out[name] = {str(b): stats(times[name, b], timers[name, b][1]) for b in BATCHES}
        single = out[name]["1"]
        for batch in BATCHES[1:]:
            r = out[name][str(batch)]
            r["ratio_median_vs_single"] = r["median_us"] / single["median_us"]
            r["ratio_min_vs_single"] = r["min_us"] / single["min_us"]
        print(
            f"  {name:62s} "
            + "  ".join(f"B={b}: {out[name][str(b)]['min_us']:8.2f} µs" for b in BATCHES),
            flush=True,
        )

    # ---- whole runs (in rounds too: every kind of call once per round) -------------------
    @eqx.filter_jit
    def run_one(q0, qd0):
        return simulate(rx.State(state0.t, q0, qd0), throw=False)

    run_many = eqx.filter_jit(eqx.filter_vmap(run_one))

    def batch_call(batch):
        if batch == 1:
            return lambda: jax.block_until_ready(run_one(state0.q, state0.qd).q)
        Q = jnp.broadcast_to(state0.q, (batch, *state0.q.shape))
        QD = jnp.broadcast_to(state0.qd, (batch, *state0.qd.shape))
        return lambda: jax.block_until_ready(run_many(Q, QD).q)

    run_calls = {
        "eager": lambda: jax.block_until_ready(simulate(state0).q),
        "eager t1 = 1e-9": lambda: jax.block_until_ready(simulate(state0, t1=1e-9).q),
        **{batch: batch_call(batch) for batch in run_batches},
    }
    first = {}
    for key, call in run_calls.items():
        start = time.perf_counter()
        call()
        first[key] = time.perf_counter() - start
    run_times = {key: [] for key in run_calls}
    for _ in range(n_runs):
        for key, call in run_calls.items():
            start = time.perf_counter()
            call()
            run_times[key].append(time.perf_counter() - start)
    user, tiny = run_times["eager"], run_times["eager t1 = 1e-9"]
    runs = {
        "rx.simulate (eager call, structure passed)": {
            "median_s": statistics.median(user),
            "min_s": min(user),
            "runs_s": user,
            "fixed_cost_median_s (t1 = 1e-9)": statistics.median(tiny),
            "fixed_cost_min_s (t1 = 1e-9)": min(tiny),
            "steps": steps,
            "per_step_median_us": 1e6 * statistics.median(user) / steps,
            "per_step_min_us": 1e6 * min(user) / steps,
        }
    }
    print(
        f"  rx.simulate: {steps} steps, median {1e3 * statistics.median(user):.2f} ms, min "
        f"{1e3 * min(user):.2f} ms, fixed {1e3 * statistics.median(tiny):.2f} ms",
        flush=True,
    )
    jit_runs = {}
    for batch in run_batches:
        per = [t / batch for t in run_times[batch]]
        jit_runs[str(batch)] = {
            "median_s_per_variant": statistics.median(per),
            "min_s_per_variant": min(per),
            "runs_s (whole batch)": run_times[batch],
            "first_call_s": first[batch],
            "per_step_median_us_per_variant": 1e6 * statistics.median(per) / steps,
            "per_step_min_us_per_variant": 1e6 * min(per) / steps,
        }
        print(
            f"  jit(simulate) B={batch}: {1e3 * statistics.median(per):.2f} ms per variant "
            f"(min {1e3 * min(per):.2f})",
            flush=True,
        )
    for batch in run_batches[1:]:
        r = jit_runs[str(batch)]
        one = jit_runs["1"]
        r["ratio_median_vs_single"] = r["median_s_per_variant"] / one["median_s_per_variant"]
        r["ratio_min_vs_single"] = r["min_s_per_variant"] / one["min_s_per_variant"]
    runs["jit(simulate), vmap over the same initial state repeated"] = jit_runs

    return {**info, "per_evaluation_us": out, "runs": runs, "shares": shares(out, runs, steps)}


RHS = "rhs (_vector_field: terms + Baumgarte Γ + acceleration)"
STEP = "step: as simulate wraps it (monitor ∘ projection ∘ Dopri8)"
EVALS_PER_PROJECTED_STEP = 14  # Dopri8's 14 stages; the projection voids FSAL


def shares(out, runs, steps, stat="min_us"):
    """Per batch: the step split into 14 right-hand sides, the projection, the monitor
    and the rest; the right-hand side into assembly and linear algebra (and the Schur
    pieces); the run step into the in-loop step and the rest (µs per variant, from the
    minima of the repeats: on a shared machine the least disturbed loop)."""
    res = {}
    jit_runs = runs["jit(simulate), vmap over the same initial state repeated"]
    for b in map(str, BATCHES):
        med = {k: v[b][stat] for k, v in out.items()}
        step = med[STEP]
        parts = {
            "14 × rhs": EVALS_PER_PROJECTED_STEP * med[RHS],
            "projection": med["projection (StepProjection._project_state)"],
            "monitor (C + SVD)": med["monitor (step_sigma: C + SVD)"],
        }
        parts["rest of the step (RK combinations, error estimate, stage loop)"] = step - sum(
            parts.values()
        )
        rhs = med[RHS]
        within = {
            "assembly": med["assembly (method.terms + Baumgarte Γ)"],
            "linear algebra": med["linear algebra (method.acceleration on given terms)"],
        }
        for k in out:
            if k.startswith("schur: ") and "alone" not in k:
                within[k] = med[k]
        entry = {
            "statistic": stat,
            "step_us": step,
            "step_parts_us": parts,
            "step_shares": {k: v / step for k, v in parts.items()},
            "rhs_us": rhs,
            "rhs_parts_us": within,
            "rhs_shares": {k: v / rhs for k, v in within.items()},
        }
        if b in jit_runs:
            key = "min_s_per_variant" if stat == "min_us" else "median_s_per_variant"
            run_step = 1e6 * jit_runs[b][key] / steps
            entry["run_step_us (jit(simulate) / steps)"] = run_step
            entry["run_step_rest_us (controller, saving, loop)"] = run_step - step
        res[b] = entry
    return res


# ---- report ------------------------------------------------------------------------------------


def git_info():
    def git(*a):
        return subprocess.run(
            ["git", *a], cwd=HERE.parent, capture_output=True, text=True, check=False
        ).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "src_modified": git("status", "--porcelain", "src").splitlines(),
    }


def wait_for_load(limit, max_wait_s=600.0):
    start = time.perf_counter()
    while os.getloadavg()[0] > limit and time.perf_counter() - start < max_wait_s:
        time.sleep(15.0)
    return time.perf_counter() - start


def table(result):
    lines = []
    for mname, m in result["mechanisms"].items():
        lines.append(
            f"\n{mname}: C {m['C_shape'][0]}×{m['C_shape'][1]}, {m['simulate']['steps']} steps "
            f"— µs per variant, min / median of the repeats (ratio of the minima to single)"
        )
        calls = m["lapack_calls (custom calls in the compiled program, single / vmap)"]
        lines.append(
            "  LAPACK calls per evaluation: "
            + "; ".join(f"{k} {v['single']}" for k, v in calls.items())
        )
        lines.append(f"  {'piece':62s} {'single':>15s} {'B=16':>22s} {'B=256':>22s}")
        for name, v in m["per_evaluation_us"].items():
            row = f"  {name:62s} {v['1']['min_us']:7.2f}/{v['1']['median_us']:7.2f}"
            for b in BATCHES[1:]:
                w = v[str(b)]
                ratio = w["ratio_min_vs_single"]
                row += f" {w['min_us']:7.2f}/{w['median_us']:7.2f} ({ratio:4.2f})"
            lines.append(row)
        jr = m["runs"]["jit(simulate), vmap over the same initial state repeated"]
        steps = m["simulate"]["steps"]
        row = f"  {'whole run, jit(simulate), µs per step':62s}"
        for b in BATCHES:
            if str(b) in jr:
                w = jr[str(b)]
                row += (
                    f" {1e6 * w['min_s_per_variant'] / steps:7.1f}/"
                    f"{1e6 * w['median_s_per_variant'] / steps:7.1f}"
                )
                if b > 1:
                    row += f" ({w['ratio_min_vs_single']:4.2f})"
        lines.append(row)
        u = m["runs"]["rx.simulate (eager call, structure passed)"]
        lines.append(
            f"  rx.simulate eager: median {1e3 * u['median_s']:.2f} ms, min {1e3 * u['min_s']:.2f}"
            f" ms, fixed cost {1e3 * u['fixed_cost_median_s (t1 = 1e-9)']:.2f} ms"
        )
        for b, s in m["shares"].items():
            parts = ", ".join(
                f"{k.split(' (')[0]} {100 * x:.0f} %" for k, x in s["step_shares"].items()
            )
            rparts = ", ".join(
                f"{k.split(' (')[0]} {100 * x:.0f} %" for k, x in s["rhs_shares"].items()
            )
            lines.append(f"  B={b} (minima): step {s['step_us']:.1f} µs = {parts}")
            lines.append(f"        rhs {s['rhs_us']:.2f} µs: {rparts}")
            if "run_step_us (jit(simulate) / steps)" in s:
                run_step = s["run_step_us (jit(simulate) / steps)"]
                rest = s["run_step_rest_us (controller, saving, loop)"]
                lines.append(
                    f"        run step {run_step:.1f} µs, of which {rest:.1f} outside the step"
                )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--label", default="latest", help="key of this run in summary.json")
    parser.add_argument("--wait-load", type=float, default=None)
    parser.add_argument("--only", choices=tuple(SETTINGS), default=None)
    args = parser.parse_args()
    out_dir = OUT_QUICK if args.quick else OUT
    waited = wait_for_load(args.wait_load) if args.wait_load else 0.0
    target_s, repeats, n_runs = (0.01, 5, 3) if args.quick else (0.03, 15, 5)
    run_batches = (1, 16) if args.quick else BATCHES
    wall0 = time.perf_counter()
    load_before = os.getloadavg()
    mechanisms = {}
    for name, setting in SETTINGS.items():
        if args.only and name != args.only:
            continue
        print(f"{name}:", flush=True)
        before = os.getloadavg()
        m = profile_mechanism(setting, target_s, repeats, n_runs, run_batches)
        m["loadavg_before"], m["loadavg_after"] = list(before), list(os.getloadavg())
        mechanisms[name] = m
    result = {
        "quick": args.quick,
        "mechanisms": mechanisms,
        "machine": {
            "os.cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "jax_devices": [str(d) for d in jax.devices()],
            "diffrax": diffrax.__version__,
            "equinox": eqx.__version__,
            "numpy": np.__version__,
            "redundax": rx.__version__,
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
            "waited_for_load_s": waited,
            "loadavg_before": list(load_before),
            "loadavg_after": list(os.getloadavg()),
            "git": git_info(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        },
        "script_wall_s": time.perf_counter() - wall0,
        "settings": {
            "target_loop_s": target_s,
            "repeats": repeats,
            "whole_run_calls": n_runs,
            "batches": list(BATCHES),
        },
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {}
    summary.setdefault("description", __doc__.split("\n\n")[0].replace("\n", " "))
    previous = summary.setdefault("runs", {}).get(args.label)
    if args.only and previous is not None:  # the other mechanism's figures are kept
        result["mechanisms"] = {**previous["mechanisms"], **mechanisms}
        result["only"] = args.only
    summary["runs"][args.label] = result
    path.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    print(table(result))
    print(f"load average before/after: {load_before} / {os.getloadavg()}")
    print(f"wrote {path} (label {args.label!r})")


if __name__ == "__main__":
    main()
