"""Null-space q̈ with multipliers of least weighted norm."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._validation import given_numbers
from ._base import AbstractNullSpaceMethod
from ._kernels import minimum_norm_multipliers


class WeightedMinimumNorm(AbstractNullSpaceMethod):
    """Null-space q̈; λ of least weighted norm Σ_k w_k λ_k² with Cᵀ λ = F − M q̈.

    With `weights=None` the weights are w_k = C_k M⁻¹ C_kᵀ ("mass-weighted"): each
    multiplier is weighted by the acceleration its unit value would cause, which
    makes the result independent of the scaling (units) of each row of C.
    """

    weights: Float[Array, " nc"] | None = None
    schur: bool | None = eqx.field(static=True, default=None)
    block: bool | None = eqx.field(static=True, default=None)
    pivots: str | None = eqx.field(static=True, default=None)

    def __check_init__(self):
        w = None if self.weights is None else given_numbers(self.weights)
        if w is not None and (w.ndim != 1 or not np.all(np.isfinite(w) & (w > 0.0))):
            raise ValueError(
                "WeightedMinimumNorm field 'weights': expected one positive, finite "
                f"weight per row of C, got {np.array2string(w, threshold=12)}"
            )

    @property
    def needs_mass_inverse(self) -> bool:
        # The mass-weighted multipliers (weights=None) apply M⁻¹ whatever the path.
        return self.weights is None or super().needs_mass_inverse

    def multipliers(self, terms, gamma, qdd, structure):
        C = terms.C
        if self.weights is None:
            w = jnp.einsum("ka,ka->k", C, jnp.linalg.solve(terms.M, C.T).T)
        else:
            w = jnp.asarray(self.weights, dtype=float)
        # Rows of C that vanish (w = 0) carry no reaction; keep them harmless.
        w = jnp.where(w > 0.0, w, 1.0)
        s = jnp.sqrt(w)
        mu = minimum_norm_multipliers(
            C / s[:, None], terms.F - terms.M @ qdd, structure.rtol, structure.rank
        )
        return mu / s
