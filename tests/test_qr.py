"""The jnp Householder QR with column pivoting (`redundax.internal.pivoted_qr`).

Oracles: NumPy's `matrix_rank` (SVD), SciPy's LAPACK `geqp3` (the same greedy
column-pivoting rule, so the same permutation on matrices without ties), the
closed-form derivative of an orthogonal projector, and central finite
differences. Every matrix is built with a known rank as U Vᵀ.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

import redundax as rx
from helpers import TOL_EXACT, TOL_FD, central_difference

# (rows, cols, rank): tall, wide, square, full and deficient, and the mobile
# robot's shape (22 × 21, rank 20).
SHAPES = [(8, 5, 3), (5, 8, 2), (6, 9, 6), (22, 21, 20), (12, 12, 1)]

_qr = eqx.filter_jit(rx.internal.pivoted_qr)


def low_rank(rng, m, n, k):
    """A random m × n matrix of rank exactly k, entries O(1)."""
    return rng.standard_normal((m, k)) @ rng.standard_normal((k, n)) / np.sqrt(k)


@pytest.mark.parametrize("m,n,k", SHAPES)
def test_factorisation_properties(m, n, k):
    rng = np.random.default_rng(100 * m + 10 * n + k)
    A = low_rank(rng, m, n, k)
    qr = _qr(jnp.asarray(A))
    Q, R, perm, rank = (np.asarray(x) for x in (qr.q, qr.r, qr.perm, qr.rank))
    scale = np.linalg.norm(A, 2)

    # The rank an SVD finds (NumPy) and the rank the matrix was built with.
    assert int(rank) == np.linalg.matrix_rank(A) == k
    # perm is a permutation, and A E = Q R.
    assert sorted(perm.tolist()) == list(range(n))
    np.testing.assert_allclose(A[:, perm], Q @ R, atol=TOL_EXACT * scale)
    # Q orthogonal.
    np.testing.assert_allclose(Q.T @ Q, np.eye(m), atol=TOL_EXACT)
    # R upper trapezoidal in its first `rank` columns (Householder zeros).
    below = np.tril(R[:, :k], -1)
    assert np.max(np.abs(below)) <= TOL_EXACT * scale
    # |R_kk| non-increasing over the rank, and the rows past the rank are round-off
    # (every remaining column had a norm below the tolerance when the loop stopped).
    d = np.abs(np.diag(R))[:k]
    assert np.all(d[:-1] >= d[1:])
    if k < m:
        assert np.max(np.linalg.norm(R[k:], axis=0)) <= float(qr.tolerance)
        # The last m − rank columns of Q span the left null space: Q[:, r:]ᵀ A = 0.
        assert np.max(np.abs(Q[:, k:].T @ A)) <= TOL_EXACT * scale
    # The first `rank` columns span the range of A: projecting A onto them is exact.
    Qr = Q[:, :k]
    np.testing.assert_allclose(Qr @ (Qr.T @ A), A, atol=TOL_EXACT * scale)
    # null_mask marks exactly the columns rank..m−1.
    assert np.asarray(qr.null_mask()).tolist() == [j >= k for j in range(m)]


@pytest.mark.parametrize("m,n", [(8, 5), (5, 8), (12, 12)])
def test_same_pivots_as_lapack(m, n):
    """On a generic full-rank matrix (no ties) the greedy max-column-norm rule picks
    the same columns as LAPACK's geqp3, and |R_kk| agree (R is unique up to signs)."""
    rng = np.random.default_rng(7 * m + n)
    A = rng.standard_normal((m, n))
    qr = _qr(jnp.asarray(A))
    _, R_ref, perm_ref = scipy.linalg.qr(A, pivoting=True)
    k = min(m, n)
    assert np.asarray(qr.perm)[:k].tolist() == perm_ref[:k].tolist()
    np.testing.assert_allclose(
        np.abs(np.diag(np.asarray(qr.r))[:k]), np.abs(np.diag(R_ref)[:k]), rtol=1e-10
    )


@pytest.mark.parametrize("m,n,k", [(300, 280, 270), (280, 300, 280)])
def test_large_matrices_factorised_loop_by_loop(m, n, k):
    """More steps than `QR_CHUNK` (each further loop works on the trailing rows of R
    and columns of Q only): the factorisation's properties as above, the pivots and
    |R_kk| of LAPACK's geqp3 on a generic full-rank matrix, the rank of a deficient
    one, and a derivative (forward mode) equal to central differences."""
    assert min(m, n) > rx.internal.QR_CHUNK
    rng = np.random.default_rng(m + n + k)
    A = low_rank(rng, m, n, k) if k < min(m, n) else rng.standard_normal((m, n))
    qr = _qr(jnp.asarray(A))
    Q, R, perm = (np.asarray(x) for x in (qr.q, qr.r, qr.perm))
    scale = np.linalg.norm(A, 2)
    assert int(qr.rank) == np.linalg.matrix_rank(A) == k
    np.testing.assert_allclose(A[:, perm], Q @ R, atol=TOL_EXACT * scale)
    np.testing.assert_allclose(Q.T @ Q, np.eye(m), atol=TOL_EXACT)
    assert np.max(np.abs(np.tril(R[:, :k], -1))) <= TOL_EXACT * scale
    if k < m:
        assert np.max(np.abs(Q[:, k:].T @ A)) <= TOL_EXACT * scale
    if k == min(m, n):  # generic: no ties, LAPACK's choices
        _, R_ref, perm_ref = scipy.linalg.qr(A, pivoting=True)
        assert perm[:k].tolist() == perm_ref[:k].tolist()
        np.testing.assert_allclose(np.abs(np.diag(R)[:k]), np.abs(np.diag(R_ref)[:k]), rtol=1e-9)
    # d/ds of Σ |R_kk| along a direction of A, forward mode, against central differences.
    direction = rng.standard_normal((m, n))

    def diagonal_sum(s):
        r = rx.internal.pivoted_qr(jnp.asarray(A) + s * direction, compute_q=False).r
        return jnp.sum(jnp.abs(jnp.diagonal(r)[:k]))

    _, slope = jax.jvp(jax.jit(diagonal_sum), (0.0,), (1.0,))
    h = 1e-6
    central = (diagonal_sum(h) - diagonal_sum(-h)) / (2 * h)
    assert float(slope) == pytest.approx(float(central), rel=1e-6)


def test_tie_takes_the_first_of_columns_equal_to_round_off():
    """Columns equal in norm but for round-off (1 + 1e-13): without `tie` the
    larger is the pivot (LAPACK's geqp3 picks the same), with `tie` = 1e-9 the
    first; a real difference (1e-6) is not a tie."""
    rng = np.random.default_rng(5)
    Q, _ = np.linalg.qr(rng.standard_normal((6, 3)))
    for bump, tied in ((1e-13, True), (1e-6, False)):
        A = Q * np.asarray([1.0, 1.0 + bump, 0.5])  # orthogonal columns, norms given
        largest = int(scipy.linalg.qr(A, pivoting=True)[2][0])
        assert largest == 1
        assert int(_qr(jnp.asarray(A)).perm[0]) == largest
        assert int(_qr(jnp.asarray(A), tie=1e-9).perm[0]) == (0 if tied else 1)
    with pytest.raises(ValueError, match="tie must be in"):
        rx.internal.pivoted_qr(jnp.asarray(A), tie=1.0)


def test_zero_matrix_has_rank_zero():
    qr = _qr(jnp.zeros((8, 5)))
    assert int(qr.rank) == 0
    np.testing.assert_array_equal(np.asarray(qr.q), np.eye(8))
    assert bool(jnp.all(qr.null_mask()))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
def test_empty_matrix_has_rank_zero(shape):
    """No rows (a mechanism without pairs) or no columns: rank 0, Q = I, the
    columns in their own order (it was an IndexError while tracing the loop)."""
    qr = _qr(jnp.zeros(shape))
    assert int(qr.rank) == 0
    np.testing.assert_array_equal(np.asarray(qr.q), np.eye(shape[0]))
    np.testing.assert_array_equal(np.asarray(qr.perm), np.arange(shape[1]))


def test_rtol_decides_the_rank():
    """Singular values 1, 1e-6: rank 2 with the default tolerance (2 eps max(m, n)
    ≈ 1.8e-15), rank 1 with rtol = 1e-3."""
    rng = np.random.default_rng(3)
    U, _ = np.linalg.qr(rng.standard_normal((8, 2)))
    V, _ = np.linalg.qr(rng.standard_normal((5, 2)))
    A = jnp.asarray(U @ np.diag([1.0, 1e-6]) @ V.T)
    assert int(_qr(A).rank) == 2
    assert int(_qr(A, rtol=1e-3).rank) == 1


def test_jit_matches_eager():
    rng = np.random.default_rng(11)
    A = jnp.asarray(low_rank(rng, 8, 5, 3))
    eager, jitted = rx.internal.pivoted_qr(A), _qr(A)
    assert int(eager.rank) == int(jitted.rank)
    np.testing.assert_array_equal(np.asarray(eager.perm), np.asarray(jitted.perm))
    np.testing.assert_allclose(np.asarray(eager.q), np.asarray(jitted.q), atol=TOL_EXACT)
    np.testing.assert_allclose(np.asarray(eager.r), np.asarray(jitted.r), atol=TOL_EXACT)


def test_vmap_matches_loop():
    """A batch whose members have different ranks (rank is a traced int)."""
    rng = np.random.default_rng(12)
    batch = np.stack([low_rank(rng, 8, 5, k) for k in (1, 3, 5, 2)])
    out = jax.jit(jax.vmap(rx.internal.pivoted_qr))(jnp.asarray(batch))
    for b, A in enumerate(batch):
        one = _qr(jnp.asarray(A))
        assert int(out.rank[b]) == int(one.rank) == np.linalg.matrix_rank(A)
        np.testing.assert_array_equal(np.asarray(out.perm[b]), np.asarray(one.perm))
        np.testing.assert_allclose(np.asarray(out.q[b]), np.asarray(one.q), atol=TOL_EXACT)


# --- derivatives while the rank is constant -------------------------------------------

M_, N_, K_ = 7, 5, 3


def _factors(x):
    """A = U Vᵀ of rank K_ from a flat parameter vector: every perturbation of x keeps
    the rank (generically), so the derivatives below exist."""
    x = jnp.asarray(x)
    U = x[: M_ * K_].reshape(M_, K_)
    V = x[M_ * K_ :].reshape(N_, K_)
    return U @ V.T


def _left_null_projector(A):
    qr = rx.internal.pivoted_qr(A)
    N = jnp.where(qr.null_mask()[None, :], qr.q, 0.0)
    return N @ N.T


@pytest.fixture(scope="module")
def params():
    return np.random.default_rng(21).standard_normal(M_ * K_ + N_ * K_)


def test_projector_jvp_matches_closed_form_and_fd(params):
    """P = N Nᵀ (left null space of A) does not depend on the basis N. Its
    derivative has the closed form dP = −(P dA A⁺ + (P dA A⁺)ᵀ) (differentiate
    P = I − A A⁺ with the rank fixed), which is the oracle; central differences a
    second one."""
    rng = np.random.default_rng(22)
    dx = rng.standard_normal(params.size)
    A = np.asarray(_factors(params))
    dA = np.asarray(jax.jvp(_factors, (jnp.asarray(params),), (jnp.asarray(dx),))[1])

    @jax.jit
    def projector_and_jvp(x):
        return jax.jvp(lambda y: _left_null_projector(_factors(y)), (x,), (jnp.asarray(dx),))

    P, dP = (np.asarray(a) for a in projector_and_jvp(jnp.asarray(params)))
    P_ref = np.eye(M_) - A @ np.linalg.pinv(A)
    np.testing.assert_allclose(P, P_ref, atol=TOL_EXACT)
    G = P_ref @ dA @ np.linalg.pinv(A)
    np.testing.assert_allclose(dP, -(G + G.T), atol=TOL_FD)

    h = np.cbrt(np.finfo(float).eps)
    plus, minus = (
        np.asarray(projector_and_jvp(jnp.asarray(params + e * h * dx))[0]) for e in (1, -1)
    )
    np.testing.assert_allclose(dP, (plus - minus) / (2 * h), atol=TOL_FD)


def test_grad_of_b_norm_matches_fd(params):
    """‖B_X‖_F² = ‖A_Xᵀ N_X‖_F² for the row group X = {0, 1, 2} is basis independent;
    its gradient (through the Householder reflections) matches central differences."""
    rows = jnp.asarray([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])

    def b_norm_sq(x):
        A = _factors(x)
        qr = rx.internal.pivoted_qr(A)
        N = jnp.where(qr.null_mask()[None, :], qr.q, 0.0)
        B = (A * rows[:, None]).T @ (N * rows[:, None])
        return jnp.sum(B**2)

    value_and_grad = jax.jit(jax.value_and_grad(b_norm_sq))
    value, g = value_and_grad(jnp.asarray(params))
    fd = central_difference(lambda x: value_and_grad(jnp.asarray(x))[0], params)
    assert float(value) > 0.1  # a generic group: B_X ≠ 0
    np.testing.assert_allclose(g, fd, rtol=TOL_FD, atol=TOL_FD * np.max(np.abs(fd)))
