"""Baumgarte's stabilising terms in Γ (Baumgarte 1972)."""

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from ._base import AbstractDriftControl


class Baumgarte(AbstractDriftControl):
    """Γ ← Γ − 2α (C q̇ + b) − β² [Φ; 0].

    `alpha` [1/s] damps velocity drift (holonomic and Pfaffian rows), `beta` [1/s]
    position drift (holonomic rows). α = β gives critical damping of the drift.
    The default of a method whose equations carry their own drift terms (see
    [`default_drift_control`][redundax.drift.default_drift_control]), and the terms
    [`StepProjection`][redundax.drift.StepProjection] applies between its projections.
    """

    alpha: float = 10.0
    beta: float = 10.0

    def __check_init__(self):
        """Refuse gains (given as numbers, not traced) that are negative, not
        finite, or so large that 2α or β² overflows (the terms are then inf or NaN
        at the first evaluation)."""
        for name, term in (("alpha", "2α"), ("beta", "β²")):
            value = getattr(self, name)
            if isinstance(value, jax.core.Tracer):
                continue
            x = np.asarray(value, dtype=float)
            with np.errstate(over="ignore", invalid="ignore"):
                scaled = 2.0 * x if name == "alpha" else x * x
            if not (np.all(x >= 0.0) and np.all(np.isfinite(scaled))):
                raise ValueError(
                    f"Baumgarte: {name} must be zero or positive with {term} a finite "
                    f"number, got {value!r}"
                )

    def gamma(self, terms) -> Float[Array, " nc"]:
        """Stabilised Γ from the `Terms` of the equations of motion."""
        velocity_error = terms.velocity_error
        nc, m = velocity_error.shape[0], terms.phi.shape[0]
        phi = jnp.concatenate([terms.phi, jnp.zeros(nc - m)])
        return terms.gamma - 2.0 * self.alpha * velocity_error - self.beta**2 * phi
