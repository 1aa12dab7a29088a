"""Compliant joints in their rigid limit, and per-row joint stiffnesses."""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Float

from .._errors import ModelError
from .._model import Model, is_moment
from ._base import AbstractNullSpaceMethod
from ._kernels import weighted_multipliers


class Compliant(AbstractNullSpaceMethod):
    """Compliant joints in their rigid limit: q̈ by the null-space formulation, and
    the multipliers that joints with these stiffnesses converge to as the
    stiffnesses grow at fixed ratios.

    A joint row of stiffness k_k deflects by δ_k = λ_k / k_k, and the deflections
    must be compatible (δ = C Δq for some Δq): λ = K C Δq with Cᵀ λ = F − M q̈, which
    is the λ of least Σ λ_k² / k_k. Every reaction is then determined: the unique
    ones are the rigid values; the non-unique ones depend on the *ratios* of the
    stiffnesses of the pairs that share a redundancy (Wojtyra & Frączek 2013 §3.1;
    González et al. 2011). Build per-row stiffnesses with
    [`joint_stiffness`][redundax.methods.joint_stiffness]
    (rigid-body rows of spatial bodies get k = ∞). [`Penalty`][redundax.methods.Penalty] with the
    same stiffnesses is the finite-stiffness model that tends to this one.

    - `stiffness`: per row of C, or one value for every row [N/m, N m/rad].
    - `schur`, `block`, `pivots`: how q̈ is computed (see
      [`AbstractNullSpaceMethod`][redundax.methods.AbstractNullSpaceMethod]).
    """

    stiffness: Float[ArrayLike, "..."] = 1.0
    schur: bool | None = eqx.field(static=True, default=None)
    block: bool | None = eqx.field(static=True, default=None)
    pivots: str | None = eqx.field(static=True, default=None)

    def multipliers(self, terms, gamma, qdd, structure):
        nc = terms.C.shape[0]
        k = jnp.broadcast_to(jnp.asarray(self.stiffness, dtype=float), (nc,))
        w = jnp.where(jnp.isinf(k), 0.0, 1.0 / jnp.where(jnp.isinf(k), 1.0, k))
        return weighted_multipliers(
            terms.C, terms.F - terms.M @ qdd, w, structure.rtol, structure.rank
        )


def _error(problem: str) -> ModelError:
    return ModelError(f"joint_stiffness: {problem}", [problem], "joint_stiffness")


def joint_stiffness(
    model: Model,
    default: float | tuple[float, float] = 1.0,
    pairs: dict | None = None,
) -> Float[Array, " nc"]:
    """Per-row stiffnesses for [`Compliant`][redundax.methods.Compliant] and
    [`Penalty`][redundax.methods.Penalty].

    **Arguments:**

    - `model`: the mechanism.
    - `default`: stiffness of every joint row not named in `pairs`: one number,
      or `(force rows, moment rows)` — rows whose component label names a moment
      or torque get the second.
    - `pairs`: `{pair name: k}` with one number for all the pair's rows or one per
      row (component).

    **Returns:** shape `(m + h,)`; the rigid-body rows of spatial bodies get ∞.

    **Raises:** `ValueError` naming an unknown pair or a wrong number of values.
    """
    linear, angular = default if isinstance(default, tuple) else (default, default)
    k = np.full(model.n_constraints, np.inf)
    for p in model.pairs:
        for r, label in zip(p.rows, p.components or ("",) * len(p.rows), strict=True):
            k[r] = angular if is_moment(label) else linear
    for name, value in (pairs or {}).items():
        try:
            rows = model.pair(name).rows
        except KeyError as e:
            raise _error(e.args[0]) from None
        v = (
            np.broadcast_to(np.asarray(value, dtype=float).reshape(-1), (len(rows),))
            if np.size(value) in (1, len(rows))
            else None
        )
        if v is None:
            raise _error(
                f"pair {name!r} has {len(rows)} rows, got {np.size(value)} "
                "stiffnesses (give one, or one per row)"
            )
        k[list(rows)] = v
    if np.any(k <= 0.0):
        raise _error("stiffnesses must be positive")
    return jnp.asarray(k)
