"""Drift control: Baumgarte terms in Γ, and projection onto the constraint
manifold (González et al. 2011, Eqs. 2–3; DESIGN.md §2)."""

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._assembly import constraint_matrix, mass_matrix, position_residual, velocity_bias
from ._model import Model
from ._qr import DECISION_RTOL, pivoted_qr
from ._types import Scalar


class Baumgarte(eqx.Module):
    """Γ ← Γ − 2α (C q̇ + b) − β² [Φ; 0].

    `alpha` [1/s] damps velocity drift (holonomic and Pfaffian rows), `beta` [1/s]
    position drift (holonomic rows). α = β gives critical damping of the drift.
    """

    alpha: float = 10.0
    beta: float = 10.0

    def gamma(self, terms) -> Float[Array, " nc"]:
        """Stabilised Γ from the `Terms` of the equations of motion."""
        velocity_error = terms.velocity_error
        nc, m = terms.C.shape[0], terms.phi.shape[0]
        phi = jnp.concatenate([terms.phi, jnp.zeros(nc - m)])
        return terms.gamma - 2.0 * self.alpha * velocity_error - self.beta**2 * phi


def weighted_pinv_step(M, A, residual, rank):
    """Δ = L⁻¹ (A L⁻¹)⁺ residual with M = Lᵀ L: the mass-weighted least-norm
    correction (W = L⁻¹ (A L⁻¹)⁺ of González et al.).

    Computed as M⁻¹ Aᵀ S⁺ residual with S = A M⁻¹ Aᵀ = (A L⁻¹)(A L⁻¹)ᵀ, whose
    pseudoinverse keeps the `rank` largest eigenvalues (symmetric eigensolver of
    the small Gram matrix: several times cheaper than an SVD of A L⁻¹): near the
    manifold, dependent rows of A are independent only by tiny amounts, which
    must not be inverted."""
    MiAt = jnp.linalg.solve(M, A.T)
    S = A @ MiAt
    S = 0.5 * (S + S.T)
    w, U = jnp.linalg.eigh(S)  # ascending
    keep = jnp.arange(w.shape[0]) >= w.shape[0] - rank
    w_inv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)
    return MiAt @ (U @ (w_inv * (U.T @ residual)))


class Projection(eqx.Module):
    """Project q onto Φ(q, t) = 0 (fixed-point iteration q ← q − W Φ) and then q̇
    onto C q̇ + b = 0 (q̇ ← q̇ − W (C q̇ + b), holonomic and Pfaffian rows), with
    W = L⁻¹ (A L⁻¹)⁺, M = Lᵀ L (González et al. 2011, Eqs. 2–3).

    `iterations` is a fixed count (so the projection is differentiable); the
    ranks of Φ_q and C are taken at the configuration being projected unless
    given (`simulate` passes the ranks found at the initial configuration).
    """

    iterations: int = eqx.field(static=True, default=4)

    def positions(
        self, model: Model, q: Float[Array, " nq"], t: Scalar, rank=None
    ) -> Float[Array, " nq"]:
        m = model.n_holonomic
        if m == 0:
            return q
        M = mass_matrix(model, q)
        if rank is None:
            rank = pivoted_qr(constraint_matrix(model, q, t)[:m], DECISION_RTOL).rank

        def step(_, q):
            A = constraint_matrix(model, q, t)[:m]
            return q - weighted_pinv_step(M, A, position_residual(model, q, t), rank)

        return jax.lax.fori_loop(0, self.iterations, step, q)

    def velocities(
        self, model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar, rank=None
    ) -> Float[Array, " nq"]:
        if model.n_constraints == 0:
            return qd
        C = constraint_matrix(model, q, t)
        if rank is None:
            rank = pivoted_qr(C, DECISION_RTOL).rank
        residual = C @ qd + velocity_bias(model, q, t)
        return qd - weighted_pinv_step(mass_matrix(model, q), C, residual, rank)

    def __call__(self, model: Model, q, qd, t, ranks=None):
        """Project positions, then velocities. `ranks` = (rank Φ_q, rank C) or None."""
        rank_q, rank_c = (None, None) if ranks is None else ranks
        q = self.positions(model, q, t, rank_q)
        return q, self.velocities(model, q, qd, t, rank_c)
