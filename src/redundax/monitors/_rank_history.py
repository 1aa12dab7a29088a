"""The rank of C along a motion, the instants where it drops (singular
configurations), and the check that a configuration is regular."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._assembly import constraint_matrix
from .._model import Model
from .._qr import DECISION_RTOL, default_rtol
from .._reactions import chunk_size
from .._structure import decide


class RankHistory(eqx.Module):
    """Rank of C and its singular values at the saved times of a trajectory.

    - `rank` (T,): numerical rank with relative tolerance `rtol`.
    - `sigma` (T, k): singular values of C, descending.
    - `regular_rank`: the rank at the first saved time.
    """

    ts: Float[Array, " T"]
    rank: Int[Array, " T"]
    sigma: Float[Array, "T k"]
    regular_rank: Int[Array, ""]

    def relative_gap(self) -> Float[Array, " T"]:
        """σ_r / σ_1 with r the regular rank: how close each state is to losing rank."""
        r = self.regular_rank
        return (
            jnp.take_along_axis(self.sigma, jnp.full((self.sigma.shape[0], 1), r - 1), 1)[:, 0]
            / self.sigma[:, 0]
        )


@eqx.filter_jit
@eqx.filter_jit  # one program, kept by the persistent cache (an eager `lax.map` is not)
def singular_values_along(model, ts, q):
    """Singular values of C (descending) at every configuration `q[k]` at `ts[k]`,
    in chunks within the reactions' memory budget (`MEMORY_BUDGET`)."""

    def one(state):
        q, t = state
        return jnp.linalg.svd(constraint_matrix(model, q, t), compute_uv=False)

    return jax.lax.map(one, (q, ts), batch_size=chunk_size(model, ts.shape[0]))


def rank_history(model: Model, trajectory, rtol: float | None = None) -> RankHistory:
    """The rank of C along `trajectory` (any object with `ts` and `q`).

    **Arguments:**

    - `rtol`: relative rank tolerance (default `2 eps max(m + h, n)`).
    """
    sigma = singular_values_along(model, trajectory.ts, trajectory.q)
    tol = default_rtol((model.n_constraints, model.n_coordinates)) if rtol is None else rtol
    rank = jnp.sum(sigma > tol * sigma[:, :1], axis=1)
    return RankHistory(ts=trajectory.ts, rank=rank, sigma=sigma, regular_rank=rank[0])


def _hermite(t, t0, t1, q0, q1, v0, v1):
    h = t1 - t0
    s = (t - t0) / h
    h00, h10 = 2 * s**3 - 3 * s**2 + 1, s**3 - 2 * s**2 + s
    h01, h11 = -2 * s**3 + 3 * s**2, s**3 - s**2
    return h00 * q0 + h10 * h * v0 + h01 * q1 + h11 * h * v1


def singular_instants(
    model: Model, trajectory, threshold: float = 0.1, rtol: float = 1e-6
) -> list[tuple[float, float, int]]:
    """Instants where the motion passes a singular configuration (rank C drops).

    Every local minimum of σ_r/σ_1 (r: the regular rank) below `threshold` at the
    saved times is refined by a golden-section search on the cubic Hermite
    interpolant of the saved (q, q̇); the instant is reported if there the rank,
    with relative tolerance `rtol`, is below the regular rank. Host-side
    post-processing (NumPy), not differentiable.

    **Returns:** a list of `(t, σ_r/σ_1 at t, rank at t)`.
    """
    hist = rank_history(model, trajectory)
    gap = np.asarray(hist.relative_gap())
    ts, q, qd = map(np.asarray, (trajectory.ts, trajectory.q, trajectory.qd))
    r = int(hist.regular_rank)
    svd = jax.jit(lambda q, t: jnp.linalg.svd(constraint_matrix(model, q, t), compute_uv=False))

    def ratio(t, k0, k1):
        qt = _hermite(t, ts[k0], ts[k1], q[k0], q[k1], qd[k0], qd[k1])
        s = np.asarray(svd(qt, t))
        return s[r - 1] / s[0], s

    out = []
    for k in range(1, len(ts) - 1):
        if not (gap[k] <= gap[k - 1] and gap[k] <= gap[k + 1] and gap[k] < threshold):
            continue
        a, b = ts[k - 1], ts[k + 1]
        g = (np.sqrt(5.0) - 1.0) / 2.0
        for _ in range(60):
            c, d = b - g * (b - a), a + g * (b - a)
            fc = ratio(c, k - 1 if c < ts[k] else k, k if c < ts[k] else k + 1)[0]
            fd = ratio(d, k - 1 if d < ts[k] else k, k if d < ts[k] else k + 1)[0]
            a, b = (a, d) if fc < fd else (c, b)
        t = 0.5 * (a + b)
        value, s = ratio(t, k - 1 if t < ts[k] else k, k if t < ts[k] else k + 1)
        rank = int(np.sum(s > rtol * s[0]))
        if rank < r:
            out.append((float(t), float(value), rank))
    return out


def check_regular(model: Model, state, rtol: float = DECISION_RTOL) -> None:
    """Raise `ValueError` if `state` is at a singular configuration.

    The rank of C at `state` is compared with the rank at a generic configuration
    nearby on the constraint manifold ([`decide`][redundax.decide] takes that step): structural
    redundancy persists along the manifold, a singular configuration does not.
    Host-side check (needs concrete values).

    **Raises:** `ValueError` with both ranks and what to do.
    """
    if model.n_constraints == 0:
        return
    decide(model, state.q, state.t, rtol=rtol).raise_if_singular()
