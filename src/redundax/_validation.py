"""The one place that asks whether values are known on the host.

Input validation with messages that name pairs and bodies needs concrete values;
inside `jax.jit`, `jax.vmap` or `jax.grad` they are tracers, and the check is left
to the caller (who validated the nominal inputs). Numerical code never asks.
"""

import jax
import numpy as np

from ._errors import ModelError


def known(*trees) -> bool:
    """Whether every leaf of `trees` is a concrete value (no tracer)."""
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(trees))


def host_values(*arrays) -> tuple[np.ndarray, ...] | None:
    """The arrays as NumPy arrays when every one is concrete, else None."""
    if not known(*arrays):
        return None
    return tuple(np.asarray(a) for a in arrays)


def given_numbers(value) -> np.ndarray | None:
    """`value` as a float64 NumPy array when it is a concrete number or array (the
    user's), None when it is traced (checked by whoever made the trace)."""
    if isinstance(value, jax.core.Tracer):
        return None
    return np.asarray(value, dtype=float)


def check_vector(value, length: int, field: str, source: str) -> None:
    """Raise a `ModelError` when `value` is not a vector of `length` entries (its
    shape is known even under a trace) or, when concrete, holds a NaN or an
    infinity: `field` and `source` name the argument and the function."""
    shape = np.shape(value)
    if shape != (length,):
        message = f"{source}: {field} has shape {shape}; the model has {length} coordinates"
        raise ModelError(message, source=source)
    concrete = host_values(value)
    if concrete is not None and not np.all(np.isfinite(concrete[0])):
        bad = np.flatnonzero(~np.isfinite(concrete[0]))
        message = f"{source}: {field} is not finite at entries {bad.tolist()}"
        raise ModelError(message, source=source)
