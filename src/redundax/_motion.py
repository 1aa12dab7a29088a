"""Prescribed motions d(t) for driving (rheonomic) constraints."""

import abc
from collections.abc import Callable, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from ._types import Scalar


def _floats(x) -> Array:
    """`x` as a float JAX array; host numbers through NumPy (no XLA program is
    compiled for them), traced values as they are."""
    if isinstance(x, (int, float, list, tuple, np.ndarray, np.generic)):
        return jnp.asarray(np.asarray(x, dtype=float))
    return jnp.asarray(x, dtype=float)


class AbstractMotion(eqx.Module):
    """A prescribed scalar function of time d(t), differentiable in t and in its
    parameters. Time derivatives needed by the constraint equations come from
    autodiff of `__call__`."""

    @abc.abstractmethod
    def __call__(self, t: Scalar) -> Float[Array, ""]:
        raise NotImplementedError

    @abc.abstractmethod
    def breakpoints(self) -> Float[Array, "*batch k"]:
        """Times where d(t) is less smooth than elsewhere (knots); integrators
        step onto them. Empty for analytic motions."""
        raise NotImplementedError


class Constant(AbstractMotion):
    """d(t) = value."""

    value: Float[Array, ""]

    def __init__(self, value: Float[ArrayLike, ""]):
        self.value = _floats(value)

    def __call__(self, t: Scalar) -> Float[Array, ""]:
        del t
        return self.value

    def breakpoints(self) -> Float[Array, "*batch k"]:
        return jnp.zeros((0,))


class Polynomial(AbstractMotion):
    """d(t) = Σ_k c_k t^k, coefficients in increasing powers."""

    coefficients: Float[Array, " deg"]

    def __init__(self, coefficients: ArrayLike | Sequence[float]):
        self.coefficients = _floats(coefficients)

    def __call__(self, t: Scalar) -> Float[Array, ""]:
        return jnp.polyval(self.coefficients[::-1], jnp.asarray(t, dtype=float))

    def breakpoints(self) -> Float[Array, "*batch k"]:
        return jnp.zeros((0,))


class SmoothSteps(AbstractMotion):
    """A C² (quintic smoothstep) piecewise profile through given knots.

    d(t) moves from `values[k]` to `values[k+1]` between `times[k]` and
    `times[k+1]` with zero velocity and acceleration at every knot, and holds the
    last value after the last knot. Useful for steering manoeuvres.
    """

    times: Float[Array, " knots"]
    values: Float[Array, " knots"]

    def __init__(self, times: ArrayLike | Sequence[float], values: ArrayLike | Sequence[float]):
        self.times = _floats(times)
        self.values = _floats(values)

    def __call__(self, t: Scalar) -> Float[Array, ""]:
        t = jnp.asarray(t, dtype=float)
        t0, t1 = self.times[:-1], self.times[1:]
        s = jnp.clip((t - t0) / (t1 - t0), 0.0, 1.0)
        blend = s**3 * (10.0 - 15.0 * s + 6.0 * s**2)
        return self.values[0] + jnp.sum(blend * jnp.diff(self.values))

    def breakpoints(self) -> Float[Array, "*batch k"]:
        return self.times


class Function(AbstractMotion):
    """A user-supplied JAX function d(t, params).

    `fn` must be written with `jax.numpy` so that d'(t) and d''(t) can be taken
    by autodiff; `params` is any pytree of arrays (differentiable).
    """

    fn: Callable[[Any, Any], Any] = eqx.field(static=True)
    params: Any

    def __init__(self, fn: Callable[[Any, Any], Any], params: Any = None):
        self.fn = fn
        self.params = jax.tree.map(lambda x: jnp.asarray(x, dtype=float), params)

    def __call__(self, t: Scalar) -> Float[Array, ""]:
        return jnp.asarray(self.fn(t, self.params), dtype=float).reshape(())

    def breakpoints(self) -> Float[Array, "*batch k"]:
        return jnp.zeros((0,))


class Shifted(AbstractMotion):
    """d(t) = `motion`(t) + `offset`: any motion moved by a constant.

    The breakpoints are those of `motion`. `shifted` returns a motion of the
    same type instead where there is one (a constant, a polynomial, smooth steps),
    so that the result keeps its parameters (sweep addresses, configuration keys).

    **Arguments:**

    - `motion`: the motion to shift (any [`AbstractMotion`][redundax.motions.AbstractMotion]).
    - `offset`: the constant added, in the motion's unit ([m] or [rad]).
    """

    motion: AbstractMotion
    offset: Float[Array, ""]

    def __init__(self, motion: AbstractMotion, offset: Float[ArrayLike, ""]):
        if not isinstance(motion, AbstractMotion):
            raise TypeError(
                f"Shifted: motion must be a redundax motion (Constant, Polynomial, "
                f"SmoothSteps, Function, ...), got {motion!r}"
            )
        self.motion = motion
        self.offset = _floats(offset)

    def __call__(self, t: Scalar) -> Float[Array, ""]:
        return self.motion(t) + self.offset

    def breakpoints(self) -> Float[Array, "*batch k"]:
        return self.motion.breakpoints()


def shifted(motion: AbstractMotion, offset: float) -> AbstractMotion:
    """The motion d(t) + `offset`, of the same type as `motion` where the type can
    hold it (a `Constant`, a `Polynomial`, `SmoothSteps`: knots kept), otherwise
    `Shifted` (a `Function` or a user's own motion; breakpoints kept)."""
    offset = float(offset)
    if type(motion) is Constant:
        return Constant(motion.value + offset)
    if type(motion) is Polynomial:
        c = motion.coefficients
        return Polynomial(jnp.asarray([offset]) if c.size == 0 else c.at[0].add(offset))
    if type(motion) is SmoothSteps:
        return SmoothSteps(motion.times, motion.values + offset)
    return Shifted(motion, offset)
