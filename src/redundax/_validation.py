"""The one place that asks whether values are known on the host.

Input validation with messages that name pairs and bodies needs concrete values;
inside `jax.jit`, `jax.vmap` or `jax.grad` they are tracers, and the check is left
to the caller (who validated the nominal inputs). Numerical code never asks.
"""

import jax
import numpy as np


def known(*trees) -> bool:
    """Whether every leaf of `trees` is a concrete value (no tracer)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(trees))


def host_values(*arrays) -> tuple[np.ndarray, ...] | None:
    """The arrays as NumPy arrays when every one is concrete, else None."""
    if not known(*arrays):
        return None
    return tuple(np.asarray(a) for a in arrays)
