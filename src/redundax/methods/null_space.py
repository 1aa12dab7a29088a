"""The null-space formulation with minimum-norm multipliers."""

import equinox as eqx

from ._base import AbstractNullSpaceMethod
from ._kernels import minimum_norm_multipliers


class NullSpace(AbstractNullSpaceMethod):
    """Null-space formulation for q̈ (Eq. 13), minimum-norm λ (pseudoinverse).

    - `schur`, `block`, `pivots`: how q̈ is computed (see
      [`AbstractNullSpaceMethod`][redundax.methods.AbstractNullSpaceMethod]).

    The minimum Euclidean norm mixes rows of different units (N and N m for a
    weld, for instance), so the non-unique multipliers it returns change when a
    row is rescaled; unique reactions do not.
    """

    schur: bool | None = eqx.field(static=True, default=None)
    block: bool | None = eqx.field(static=True, default=None)
    pivots: str | None = eqx.field(static=True, default=None)

    def multipliers(self, terms, gamma, qdd, structure):
        f = terms.F - terms.M @ qdd
        return minimum_norm_multipliers(terms.C, f, structure.rtol, structure.rank)
