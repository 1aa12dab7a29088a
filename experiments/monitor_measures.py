"""Can the singularity monitor read the step's own factorisation instead of an SVD of C?
(issue 35, scope items 1 and 6.)

After every step the monitor needs a measure of how far C is from losing rank at the
structure's rank r: where it has local minima (the passages), and a rank that does not
change while the motion stays regular. Three candidates, evaluated at the saved states
of each mechanism's default run (`rx.simulate`, 201 states):

- `svd`: σ_r/σ_1 of C (today's default on the dense paths; one LAPACK SVD per step);
- `schur_cholesky`: the diagonal of the Cholesky factor the projection's velocity
  correction already computes on the Schur path, L of D⁻½ C M⁻¹ Cᵀ D⁻½ + δ I
  (δ = `SCHUR_REGULARISATION`; the lines of `schur_acceleration`), i.e. each row's
  pivot sine in the M⁻¹ metric against the rows before it, floored by the shift;
  sorted descending, the r-th;
- `block_pivots`: the block elimination's pivot sines of C Cᵀ in the pattern's order
  (`step_pivot_sines`, the block solver's measure; no LAPACK), the r-th.

For a measure to serve, the r-th value (the last regular row) must stay above the
(r+1)-th (the largest redundant row's) at every state, by a margin a fixed threshold
can sit in, and its minima must fall where σ_r/σ_1 has them. Reported per mechanism:
the smallest r-th value and its instant, the largest (r+1)-th value, the separation
min_t(value_r / value_{r+1}) (≤ 1: the measure cannot tell a regular row from a
redundant one at some state), and the ratio to σ_r/σ_1 along the motion.

Run: `.venv/bin/python experiments/monitor_measures.py` (≈ 1–2 min on 2 cores);
writes `experiments/results/monitor_measures/cpu.json`.
"""

import json
import pathlib
import platform

import jax
import jax.numpy as jnp
import numpy as np
from profile_step import git_info

import redundax as rx
from redundax import models
from redundax._assembly import constraint_matrix, mass_matrix
from redundax.methods._kernels import SCHUR_REGULARISATION
from redundax.monitors._singularity import step_pivot_sines

OUT = pathlib.Path(__file__).resolve().parent / "results" / "monitor_measures"

MECHANISMS = {
    "bricard (10 s)": (models.bricard, 10.0),
    "A02, one parallelogram (2 s)": (lambda: models.n_four_bar(1), 2.0),
    "A02, three parallelograms as spatial bodies (2 s)": (
        lambda: models.spatial_twin(models.n_four_bar(3)),
        2.0,
    ),
    "six-bar (1 s; QR path)": (models.six_bar, 1.0),
    "mobile robot (2 s)": (models.mobile_robot, 2.0),
}


@jax.jit
def _cholesky_sines(model, q, t):
    """diag L of the projection's shifted, Jacobi-scaled Schur complement, descending
    (the lines of `schur_acceleration`)."""
    C = constraint_matrix(model, q, t)
    S = C @ jnp.linalg.solve(mass_matrix(model), C.T)
    d = jnp.diag(S)
    scale = jnp.where(d > 0.0, 1.0 / jnp.sqrt(jnp.where(d > 0.0, d, 1.0)), 1.0)
    shifted = scale[:, None] * S * scale[None, :] + jnp.diag(
        jnp.where(d > 0.0, SCHUR_REGULARISATION, 1.0)
    )
    return -jnp.sort(-jnp.diag(jnp.linalg.cholesky(shifted)))


@jax.jit
def _svd(model, q, t):
    return jnp.linalg.svd(constraint_matrix(model, q, t), compute_uv=False)


def _summary(ts, svd_ratio, values, r):
    regular = values[:, r - 1]
    redundant = values[:, r] if values.shape[1] > r else None
    k, j = int(np.argmin(regular)), int(np.argmin(svd_ratio))
    # Exact zeros (rows that vanish at a state) floored at 1e-300: a ratio, not inf.
    separation = None if redundant is None else regular / np.maximum(redundant, 1e-300)
    return {
        "min_r_th": float(regular[k]),
        "t_min_r_th": float(ts[k]),
        "max_redundant": None if redundant is None else float(redundant.max()),
        "separation_min": None if separation is None else float(separation.min()),
        "ratio_to_svd_range": [
            float(np.min(regular / svd_ratio)),
            float(np.max(regular / svd_ratio)),
        ],
        "t_min_svd": float(ts[j]),
    }


def main():
    out = {
        "what": __doc__.split("\n\n")[0],
        "git": git_info(),
        "machine": {"platform": platform.platform(), "jax": jax.__version__},
        "schur_regularisation": SCHUR_REGULARISATION,
        "mechanisms": {},
    }
    for name, (build, t1) in MECHANISMS.items():
        mech = build()
        model, state = mech.build(), mech.initial_state()
        structure = rx.decide(model, state.q)
        r = int(structure.rank)
        traj = rx.simulate(model, state, t1, saveat=rx.SaveAt(n=201), structure=structure)
        args = (model, structure, None, None)
        ts, qs, qds = (np.asarray(a) for a in (traj.ts, traj.q, traj.qd))
        svd = np.stack([np.asarray(_svd(model, q, t)) for q, t in zip(qs, ts)])
        svd_ratio = svd[:, r - 1] / svd[:, 0]
        chol = np.stack([np.asarray(_cholesky_sines(model, q, t)) for q, t in zip(qs, ts)])
        pivots = np.stack(
            [np.asarray(step_pivot_sines(args, t, (q, qd))) for q, qd, t in zip(qs, qds, ts)]
        )
        rank_svd = (svd > structure.rtol * svd[:, :1]).sum(axis=1)
        out["mechanisms"][name] = {
            "rows": int(chol.shape[1]),
            "rank": r,
            "schur_path": structure.schur_path,
            "svd": {
                "min_ratio": float(svd_ratio.min()),
                "t_min": float(ts[np.argmin(svd_ratio)]),
                "rank_range": [int(rank_svd.min()), int(rank_svd.max())],
            },
            "schur_cholesky": _summary(ts, svd_ratio, chol, r),
            "block_pivots": _summary(ts, svd_ratio, pivots, r),
        }
        print(name, json.dumps(out["mechanisms"][name]), flush=True)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cpu.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {OUT / 'cpu.json'}")


if __name__ == "__main__":
    main()
