"""The interface of a method of handling redundant constraints, and the null-space
family's shared acceleration."""

import abc
from typing import ClassVar

import equinox as eqx
import jax
from jaxtyping import Array, Float

from .._equations import LocalTerms, Terms, dynamics_terms, local_terms
from .._structure import Structure
from ._block_kernel import PIVOT_RTOL, block_solution
from ._kernels import null_space_acceleration, schur_acceleration

BLOCK_MIN_COORDINATES = 150
"""From this many coordinates on, the null-space family computes q̈ by the block
solver unless told otherwise (`block=None`). Measured per right-hand side (µs,
block / dense Schur, assembly included, 2 CPU cores, `experiments/bench_scaling.py`):
planar A02 chains 103 / 95 at 99 coordinates, 200 / 390 at 195; spatial A02 chains
152 / 139 at 108, 287 / 788 at 204; spatial pendulum chains (trees) 102 / 57 at 96,
185 / 246 at 192."""


class AbstractRedundancyMethod(eqx.Module):
    """A way of handling redundant constraints: it yields q̈ and one choice of λ.

    Every discrete fact a method needs (the rank of C, whether the Schur complement
    is well conditioned) comes from the mechanism's [`Structure`][redundax.Structure], decided once
    by [`redundax.decide`][]: a method itself decides nothing at run time.
    """

    stabilises_itself: ClassVar[bool] = False
    """Whether the method's equations carry their own drift terms (the penalty
    method's springs): `simulate` then projects nothing by default
    ([`default_drift_control`][redundax.drift.default_drift_control])."""

    partitions: ClassVar[bool] = False
    """Whether the method keeps an active set of rows (`active_rows`), which
    `simulate` records step by step ([`ActiveSetMonitor`][redundax.monitors.ActiveSetMonitor])."""

    @property
    def needs_mass_inverse(self) -> bool:
        """Whether the method applies M⁻¹ (a Schur complement C M⁻¹ Cᵀ, mass-weighted
        multipliers), and so cannot run where a body's block of M is singular
        ([`specialise`][redundax.methods.specialise] refuses it there). Default: no."""
        return False

    def terms(self, model, q, qd, t) -> Terms:
        """The terms of the equations of motion this method solves, at (q, q̇, t)
        (default: the dense [`Terms`][redundax.equations.Terms]; a method that needs less assembles
        less)."""
        return dynamics_terms(model, q, qd, t)

    @abc.abstractmethod
    def acceleration(
        self, terms: Terms, gamma: Float[Array, " nc"], structure: Structure
    ) -> Float[Array, " nq"]:
        """q̈ for the (possibly stabilised) acceleration right-hand side `gamma`."""
        raise NotImplementedError

    @abc.abstractmethod
    def multipliers(
        self,
        terms: Terms,
        gamma: Float[Array, " nc"],
        qdd: Float[Array, " nq"],
        structure: Structure,
    ) -> Float[Array, " nc"]:
        """λ consistent with q̈ (M q̈ + Cᵀ λ = F)."""
        raise NotImplementedError


class AbstractNullSpaceMethod(AbstractRedundancyMethod):
    """Methods whose q̈ is the null-space solution [Vᵀ M; C] q̈ = [Vᵀ F; Γ] (Eq. 13)
    and which differ only in their choice of λ.

    `schur` chooses how q̈ is computed: `True`, by
    [`schur_acceleration`][redundax.methods.schur_acceleration] over all
    rows (no orthogonal factorisation at run time; several times faster); `False`,
    by [`null_space_acceleration`][redundax.methods.null_space_acceleration] (pivoted QR of Cᵀ at
    the structure's rank);
    `None` (default), by the structure's verdict on the conditioning of the Schur
    complement (`Structure.schur_path`, a static fact where the structure was
    decided on the host: one path is compiled).

    `block` chooses whether q̈ is computed by the block-sparse factorisation of
    [`BlockSparse`][redundax.methods.BlockSparse] (the same q̈ at consistent states, in
    O(n); in `simulate` with no dense matrix): `True`, always; `False`, never;
    `None` (default), when the mechanism has at least `BLOCK_MIN_COORDINATES`
    coordinates, where it is the faster path, every body's block of M is regular
    and `schur` is None ([`specialise`][redundax.methods.specialise] decides, from the model's
    static `MassFacts` (`redundax._bodies`)). The multipliers stay the method's own
    (dense) choice. `pivots`: the metric of the block solver's pivots (see
    [`BlockSparse`][redundax.methods.BlockSparse]; None: from M's conditioning).
    """

    schur: eqx.AbstractVar[bool | None]
    block: eqx.AbstractVar[bool | None]
    pivots: eqx.AbstractVar[str | None]

    def __check_init__(self):
        if self.pivots is not None and self.pivots not in ("mass", "coordinates"):
            raise ValueError(
                f"{type(self).__name__} field 'pivots': expected None, 'mass' or "
                f"'coordinates', got {self.pivots!r}"
            )

    @property
    def needs_mass_inverse(self) -> bool:
        # The pivoted-QR path needs M only as a matrix; `schur=None` follows the
        # structure, which names the Schur path only where M is regular (ŝ > 0).
        return bool(self.block) or self.schur is True

    def terms(self, model, q, qd, t):
        return local_terms(model, q, qd, t) if self.block else dynamics_terms(model, q, qd, t)

    def acceleration(self, terms, gamma, structure):
        if self.block or isinstance(terms, LocalTerms):
            return block_solution(terms, gamma, structure, PIVOT_RTOL, self.pivots).qdd

        def by_schur():
            return schur_acceleration(
                terms.C, terms.M, terms.F, gamma, terms.block, mass_inverse=terms.mass_inverse
            )

        def by_qr():
            return null_space_acceleration(
                terms.C, terms.M, terms.F, gamma, structure.rtol, structure.rank
            )

        if not terms.block:
            return by_qr()
        schur = structure.schur_path if self.schur is None else self.schur
        if schur is None:  # a structure decided inside a transformation: its verdict
            return jax.lax.cond(structure.schur, by_schur, by_qr)  # is traced
        return by_schur() if schur else by_qr()
