"""Small geometric helpers. Knows nothing of models."""

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

# Ω: rotation by +90° in the plane, Wojtyra & Frączek 2013, Appendix.
# NumPy, not jnp: importing redundax must start no JAX backend, since
# `jax.distributed.initialize` (multi-process sweeps) has to come first.
OMEGA = np.array([[0.0, -1.0], [1.0, 0.0]])


def device(x) -> Array:
    """A host value (computed with NumPy while a model is built) as a JAX array:
    a transfer, with no XLA program compiled for it (a `jnp` operation would compile
    one program per operation and shape at its first use: ~0.7 s of building
    Bricard's model in a fresh process)."""
    return jnp.asarray(np.asarray(x))


def rot2(phi: Float[Array, ""]) -> Float[Array, "2 2"]:
    """Planar rotation matrix R(φ) mapping body-frame to global components."""
    c, s = jnp.cos(phi), jnp.sin(phi)
    return jnp.array([[c, -s], [s, c]])


def cross2(a: Float[Array, " 2"], b: Float[Array, " 2"]) -> Float[Array, ""]:
    """Scalar cross product a × b of two planar vectors."""
    return a[0] * b[1] - a[1] * b[0]
