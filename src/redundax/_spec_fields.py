"""The checks a spec's fields share: a collector of problems (one error lists all
of them, each naming its body, pair and field) and the conversions of vectors,
motions and custom parameters."""

import jax
import jax.numpy as jnp
import numpy as np

from ._errors import ModelError
from ._math import device
from ._motion import AbstractMotion, Constant


class Problems:
    """Collects validation problems so that one error lists all of them."""

    def __init__(self):
        self.items: list[str] = []

    def add(self, message: str) -> None:
        # A field read by two checks (a spatial body's pose: its natural coordinates
        # and its initial state) is reported once.
        if message not in self.items:
            self.items.append(message)

    def vector(self, value, length: int, where: str):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            self.add(f"{where}: expected {length} numbers, got {value!r}")
            return device(np.zeros(length))
        if arr.shape != (length,):
            self.add(f"{where}: expected a vector of length {length}, got shape {arr.shape}")
            arr = np.zeros(length)
        elif not np.all(np.isfinite(arr)):
            self.add(f"{where}: contains a non-finite value {arr.tolist()}")
        # Host values as JAX arrays (no XLA program is compiled for them); what is
        # computed from them while the model is built is computed with NumPy.
        return device(arr)

    def scalar(self, value, where: str, positive: bool = False):
        try:
            x = float(value)
        except (TypeError, ValueError):
            self.add(f"{where}: expected a number, got {value!r}")
            return device(1.0)
        if not np.isfinite(x):
            self.add(f"{where}: must be finite, got {x}")
        elif positive and x <= 0.0:
            self.add(f"{where}: must be positive, got {x}")
        return device(x)

    def raise_if_any(self, what: str) -> None:
        if self.items:
            lines = "\n".join(f"  - {p}" for p in self.items)
            raise ModelError(f"invalid {what} ({len(self.items)} problem(s)):\n{lines}", self.items)


def unit_vector(p: Problems, value, where: str):
    """`value` as a unit 2-vector (a problem if it is zero or not finite)."""
    v = p.vector(value, 2, where)
    v = np.asarray(v)
    norm = float(np.linalg.norm(v))
    if norm == 0.0 or not np.isfinite(norm):
        p.add(f"{where}: must be a non-zero vector")
        return device([1.0, 0.0])
    return device(v / norm)


def motion_field(p: Problems, value, where: str) -> AbstractMotion:
    """`value` as a motion: a redundax motion, or a number for a constant."""
    if isinstance(value, AbstractMotion):
        return value
    if isinstance(value, (int, float)):
        return Constant(value)
    p.add(f"{where}: expected a redundax motion (Constant, Polynomial, ...), got {value!r}")
    return Constant(0.0)


def _is_numbers(x) -> bool:
    return isinstance(x, (list, tuple)) and all(isinstance(v, (int, float)) for v in x)


def custom_params(params):
    """Parameters of a custom pair or force as float arrays; a list or tuple of
    numbers becomes one vector (not a tuple of scalars), so `qb[0, :2] - params["P"]`
    works."""
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=float), params, is_leaf=_is_numbers)
