"""The penalty formulation: every constraint row a stiff spring-damper."""

from typing import ClassVar

import jax.numpy as jnp
import numpy as np
from jaxtyping import ArrayLike, Float

from .._validation import given_numbers
from ._base import AbstractRedundancyMethod


class Penalty(AbstractRedundancyMethod):
    """Penalty formulation (Bayo, García de Jalón & Serna 1988): each row behaves
    as a stiff spring-damper, λ = α (C q̈ − Γ + 2 ξ ω (C q̇ + b) + ω² Φ), so that
    (M + Cᵀ α C) q̈ = F + Cᵀ α (Γ − 2ξω (C q̇ + b) − ω² Φ).

    `stiffness` α [per row or scalar] sets how rigid the rows are; the motion tends
    to the rigid one as α → ∞, and λ is unique for finite α but depends on the
    ratios of the α's on non-unique pairs. Pfaffian rows get no ω² term.
    Rows with α = ∞ (the rigid-body rows of spatial bodies in
    [`joint_stiffness`][redundax.methods.joint_stiffness]) are kept as exact constraints with their
    own multipliers,
    C_r q̈ = Γ_r − 2ξω(C_r q̇ + b_r) − ω² Φ_r, solved together with the springs; they
    must be independent of one another (rigid-body rows are).
    Its spring-damper terms are its own drift control: any `stabilisation` passed
    alongside is ignored.
    """

    stabilises_itself: ClassVar[bool] = True

    stiffness: Float[ArrayLike, "..."] = 1e8
    omega: float = 10.0
    xi: float = 1.0

    def __check_init__(self):
        """Refuse (given as numbers, not traced) a stiffness that is not positive
        (infinite is allowed: an exact row) and a negative or non-finite ω or ξ."""
        alpha = given_numbers(self.stiffness)
        if alpha is not None and (alpha.ndim > 1 or not np.all(alpha > 0.0)):
            raise ValueError(
                "Penalty field 'stiffness': expected a positive number, or one per row of "
                f"C (inf: an exact row), got {np.array2string(alpha, threshold=12)}"
            )
        for name in ("omega", "xi"):
            x = given_numbers(getattr(self, name))
            if x is not None and not (x.ndim == 0 and np.isfinite(x) and x >= 0.0):
                raise ValueError(
                    f"Penalty field {name!r}: expected a finite number ≥ 0, got "
                    f"{getattr(self, name)!r}"
                )

    def _solve(self, terms):
        C, M, F = terms.C, terms.M, terms.F
        nc = C.shape[0]
        alpha = jnp.broadcast_to(jnp.asarray(self.stiffness, dtype=float), (nc,))
        phi = jnp.concatenate([terms.phi, jnp.zeros(nc - terms.phi.shape[0])])
        target = (
            terms.gamma - 2.0 * self.xi * self.omega * terms.velocity_error - self.omega**2 * phi
        )
        rigid = jnp.isinf(alpha)
        spring = jnp.where(rigid, 0.0, alpha)
        K = M + C.T @ (spring[:, None] * C)
        rhs = F + C.T @ (spring * target)
        # [K  C_rᵀ; C_r  0] [q̈; λ_r] = [rhs; target_r], with the rows of the spring
        # constraints replaced by λ_k = 0 in the lower block (identity), so one dense
        # solve of fixed size covers any mix of springs and rigid rows.
        Cr = jnp.where(rigid[:, None], C, 0.0)
        A = jnp.block([[K, Cr.T], [Cr, jnp.diag(jnp.where(rigid, 0.0, 1.0))]])
        b = jnp.concatenate([rhs, jnp.where(rigid, target, 0.0)])
        x = jnp.linalg.solve(A, b)
        qdd, lam_rigid = x[: M.shape[0]], x[M.shape[0] :]
        lam = jnp.where(rigid, lam_rigid, spring * (C @ qdd - target))
        return qdd, lam

    def acceleration(self, terms, gamma, structure):
        del gamma, structure  # the penalty carries its own stabilisation terms
        return self._solve(terms)[0]

    def multipliers(self, terms, gamma, qdd, structure):
        del gamma, qdd, structure
        return self._solve(terms)[1]
