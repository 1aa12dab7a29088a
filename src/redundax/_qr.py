"""Householder QR with column pivoting, written in `jax.numpy`.

`jax.lax.linalg.qr(..., pivoting=True)` exists but is not differentiable, and
lineax's QR assumes full rank. Here the *decisions* (pivot order, numerical rank)
are taken on `lax.stop_gradient` values, and the reflections are built from the
live values, so derivatives of Q and R exist wherever the pivot order and rank are
locally constant. Reflections are stopped at the numerical rank: none is ever
built from round-off.
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from ._precision import precise


class PivotedQR(eqx.Module):
    """A E = Q R, with E the permutation `perm` (A[:, perm] = Q @ R).

    - `q`: orthogonal, shape `(m, m)`; columns `rank:` span the left null space of A.
    - `r`: upper trapezoidal, shape `(m, n)`, |r_kk| non-increasing; rows `rank:`
      hold only round-off and are not used.
    - `perm`: column permutation, shape `(n,)`.
    - `rank`: numerical rank (traced int, so that batches may differ).
    - `tolerance`: the absolute threshold on |r_kk| that decided the rank.
    """

    q: Float[Array, "m m"]
    r: Float[Array, "m n"]
    perm: Int[Array, " n"]
    rank: Int[Array, ""]
    tolerance: Float[Array, ""]

    def null_mask(self) -> Bool[Array, " m"]:
        """True for the columns of `q` that span the left null space (k ≥ rank)."""
        return jnp.arange(self.q.shape[0]) >= self.rank


QR_CHUNK = 256
"""Matrices of more steps than this are factorised in up to `QR_LOOPS` loops of
equal length. Reflection k changes only rows k: of R and columns k: of Q, so each
further loop works on the trailing rows and columns alone (static slices): with
four loops, 5/8 of the memory traffic of full-size steps (`rx.decide` on IFToMM
A02's spatial chain of 64 loops, C of 1,739 × 1,548: 15.0 → 10.2 s warm; see
`experiments/README.md`). Smaller matrices take one loop, as before."""

QR_LOOPS = 4
"""Most loops per factorisation: each is compiled apart."""


def default_rtol(shape: tuple[int, int]) -> float:
    """2 · eps · max(m, n), relative to |r_11| (as lineax's `resolve_rcond`), with
    eps of the working precision (`redundax._precision`)."""
    return 2.0 * float(jnp.finfo(jax.dtypes.canonicalize_dtype(float)).eps) * max(shape)


def pivoted_qr(
    a: Float[ArrayLike, "m n"],
    rtol: float | None = None,
    rank: Int[ArrayLike, ""] | None = None,
    compute_q: bool = True,
    tie: float = 0.0,
) -> PivotedQR:
    """Rank-revealing Householder QR with column pivoting.

    **Arguments:**

    - `a`: matrix, shape `(m, n)`.
    - `rtol`: relative rank tolerance: a pivot |r_kk| ≤ rtol · |r_11| ends the
      factorisation. Defaults to `2 * eps * max(m, n)`.
    - `compute_q`: accumulate Q (skip it when only R, the pivots or the rank are
      needed; `q` is then the identity).
    - `rank`: if given, exactly `rank` reflections are made whatever the pivots'
      size: the rank decided once elsewhere (e.g. at a regular configuration, since
      it is a property of the mechanism's structure) is imposed, and the result is
      the best rank-`rank` factorisation in the pivoted order. Off the constraint
      manifold dependent rows become independent by round-off-sized amounts; a
      fixed rank keeps everything built on the factorisation continuous there.
    - `tie`: columns whose remaining squared norm is within the factor (1 − `tie`)
      of the largest tie, and the first of them is the pivot. With the default 0
      the largest wins and round-off breaks ties; a small `tie` (e.g. 1e-9) makes
      the choice among columns that are equal by symmetry the same on every machine
      and in every compiled program (the lowest index).

    **Returns:** a [`PivotedQR`][redundax.internal.PivotedQR].

    Differentiable with respect to `a` while the pivot order and the rank do not
    change (they are discrete decisions taken on `stop_gradient` values).
    """
    if not 0.0 <= tie < 1.0:
        raise ValueError(f"pivoted_qr: tie must be in [0, 1), got {tie}")
    a = jnp.asarray(a, dtype=float)
    m, n = a.shape
    rtol = default_rtol((m, n)) if rtol is None else rtol
    rows = jnp.arange(m)
    fixed_rank = rank

    # Columns are not swapped during the loop (a gather of the whole matrix per step);
    # the pivot of step k is column perm[k], and R is permuted once at the end. A
    # loop that starts at step k0 holds only rows k0: of R and columns k0: of Q (the
    # only ones its reflections change: `QR_CHUNK`).
    def step_from(k0):
        local_rows = rows[k0:]

        def step(k, carry):
            Q, R, used, position, active, count, scale = carry
            below = local_rows >= k
            sq = jnp.sum(jnp.where(below[:, None], R, 0.0) ** 2, axis=0)
            sq = jnp.where(used, -1.0, jax.lax.stop_gradient(sq))
            # The first of the largest (a NaN column first, as `argmax` of `sq` would).
            j = jnp.argmax((sq >= jnp.max(sq) * (1.0 - tie)) | jnp.isnan(sq))
            used = used.at[j].set(True)
            position = position.at[j].set(k)
            x = jnp.where(below, jax.lax.dynamic_index_in_dim(R, j, axis=1, keepdims=False), 0.0)
            norm = jnp.sqrt(jnp.maximum(jax.lax.stop_gradient(sq[j]), 0.0))
            scale = jnp.where(k == 0, norm, scale)
            if fixed_rank is None:
                active = active & (norm > rtol * scale) & (scale > 0.0)
            else:
                active = k < fixed_rank
            # Double-where: the norm and the normalisation are only taken when active.
            alpha = jnp.sqrt(jnp.where(active, jnp.sum(x**2), 1.0))
            i = k - k0 if k0 else k
            xk = x[i]
            v = x.at[i].add(jnp.where(xk >= 0.0, 1.0, -1.0) * alpha)
            vnorm_sq = jnp.where(active, 2.0 * alpha * (alpha + jnp.abs(xk)), 1.0)
            v = jnp.where(active, v / jnp.sqrt(vnorm_sq), 0.0)
            R = R - 2.0 * jnp.outer(v, v @ R)
            if compute_q:
                Q = Q - 2.0 * jnp.outer(Q @ v, v)
            return Q, R, used, position, active, count + active.astype(count.dtype), scale

        return step

    init = (
        jnp.eye(m),
        a,
        jnp.zeros(n, dtype=bool),
        jnp.zeros(n, dtype=jnp.int32),
        jnp.asarray(True),
        jnp.asarray(0, dtype=jnp.int32),
        jnp.asarray(0.0),
    )
    steps = min(m, n)
    if steps == 0:  # no rows or no columns: nothing to reflect (a free body, no pairs)
        Q, R, used, position, _, rank, scale = init
    elif steps <= QR_CHUNK:
        Q, R, used, position, _, rank, scale = jax.lax.fori_loop(0, steps, step_from(0), init)
    else:
        Q, R, *rest = init
        loops = min(QR_LOOPS, -(-steps // QR_CHUNK))
        length = -(-steps // loops)
        for k0 in range(0, steps, length):
            trailing = (Q[:, k0:], R[k0:, :], *rest)
            end = min(k0 + length, steps)
            Qk, Rk, *rest = jax.lax.fori_loop(k0, end, step_from(k0), trailing)
            Q, R = Q.at[:, k0:].set(Qk), R.at[k0:, :].set(Rk)
        used, position, _, rank, scale = rest
    # Pivots in the order chosen, then the columns never chosen in their own order.
    perm = jnp.argsort(jnp.where(used, position, n + jnp.arange(n)))
    R = R[:, perm]
    return PivotedQR(q=Q, r=R, perm=perm, rank=rank, tolerance=rtol * scale)


_pivoted_qr_eager = pivoted_qr
# Jitted once per shape, tolerance, `compute_q` and `tie`: called eagerly (host-side
# decisions in `simulate`, `eliminate`, `prepare`) the factorisation's loop would
# otherwise be recompiled at every call; inside a trace the jit is inlined.
pivoted_qr = functools.wraps(_pivoted_qr_eager)(
    jax.jit(_pivoted_qr_eager, static_argnames=("rtol", "compute_q", "tie"))
)
_pivoted_qr_jit = pivoted_qr

DECISION_RTOL = precise(1e-8, 1e-4)
"""Relative rank tolerance for discrete decisions taken on states that may sit
slightly off the constraint manifold (initial states to be projected, states
from a simulation): dependent rows there are independent by about the drift."""


def independent_rows(
    c: Float[ArrayLike, "m n"], rtol: float = DECISION_RTOL, first: tuple[int, ...] = ()
) -> tuple[int, ...]:
    """Indices (sorted) of a maximal set of linearly independent rows of `c`,
    chosen by the column pivots of the pivoted QR of `cᵀ`. A host-side, discrete
    decision: `c` must be concrete.

    Rows in `first` (independent among themselves, e.g. the rigid-body rows of
    natural coordinates) are always kept; the others are chosen from their parts
    orthogonal to the span of those rows."""
    c = np.asarray(c, dtype=float)
    if not first:
        qr = _pivoted_qr_jit(jnp.asarray(c).T, rtol)
        return tuple(sorted(int(k) for k in np.asarray(qr.perm)[: int(qr.rank)]))
    first = tuple(sorted(first))
    rest = np.asarray([k for k in range(c.shape[0]) if k not in first], dtype=int)
    basis = np.linalg.qr(c[list(first)].T)[0]
    projected = c[rest] - (c[rest] @ basis) @ basis.T
    # The rank tolerance stays relative to the rows' own size, not to the projection's.
    scale = np.max(np.linalg.norm(c[rest], axis=1)) if rest.size else 0.0
    top = np.max(np.linalg.norm(projected, axis=1)) if rest.size else 0.0
    keep = ()
    if top > rtol * scale:
        qr = _pivoted_qr_jit(jnp.asarray(projected).T, float(rtol * scale / top))
        keep = tuple(int(rest[k]) for k in np.asarray(qr.perm)[: int(qr.rank)])
    return tuple(sorted(first + keep))
