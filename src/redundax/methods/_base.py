"""The interface of a method of handling redundant constraints, and the null-space
family's shared acceleration."""

import abc
import dataclasses
from typing import ClassVar

import equinox as eqx
import jax
import numpy as np
from jaxtyping import Array, Float

from .._equations import LocalTerms, Terms, dynamics_terms, local_terms
from .._structure import Structure
from .._validation import host_values
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
    is well conditioned) comes from the mechanism's [`Structure`][], decided once by
    [`redundax.decide`][]: a method itself decides nothing at run time.
    """

    stabilises_itself: ClassVar[bool] = False
    """Whether the method's equations carry their own drift terms (the penalty
    method's springs): `simulate` then projects nothing by default
    ([`default_drift_control`][redundax.default_drift_control])."""

    partitions: ClassVar[bool] = False
    """Whether the method keeps an active set of rows (`active_rows`), which
    `simulate` records step by step ([`ActiveSetMonitor`][redundax.ActiveSetMonitor])."""

    def terms(self, model, q, qd, t) -> Terms:
        """The terms of the equations of motion this method solves, at (q, q̇, t)
        (default: the dense [`Terms`][]; a method that needs less assembles less)."""
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

    `schur` chooses how q̈ is computed: `True`, by [`schur_acceleration`][] over all
    rows (no orthogonal factorisation at run time; several times faster); `False`,
    by [`null_space_acceleration`][] (pivoted QR of Cᵀ at the structure's rank);
    `None` (default), by the structure's verdict on the conditioning of the Schur
    complement (`Structure.schur`).

    `block` chooses whether q̈ is computed by the block-sparse factorisation of
    [`BlockSparse`][redundax.BlockSparse] (the same q̈ at consistent states, in
    O(n); in `simulate` with no dense matrix): `True`, always; `False`, never;
    `None` (default), when the mechanism has at least `BLOCK_MIN_COORDINATES`
    coordinates, where it is the faster path, and `schur` is None ([`specialise`][]
    decides, from the structure). The multipliers stay the method's own (dense)
    choice.
    """

    schur: eqx.AbstractVar[bool | None]
    block: eqx.AbstractVar[bool | None]

    def terms(self, model, q, qd, t):
        return local_terms(model, q, qd, t) if self.block else dynamics_terms(model, q, qd, t)

    def acceleration(self, terms, gamma, structure):
        if self.block or isinstance(terms, LocalTerms):
            from .block import BlockSparse

            return BlockSparse().solve(terms, gamma, structure).qdd

        def by_schur():
            return schur_acceleration(
                terms.C, terms.M, terms.F, gamma, terms.block, mass_inverse=terms.mass_inverse
            )

        def by_qr():
            return null_space_acceleration(
                terms.C, terms.M, terms.F, gamma, structure.rtol, structure.rank
            )

        if not terms.block or self.schur is False:
            return by_qr()
        if self.schur:
            return by_schur()
        return jax.lax.cond(structure.schur, by_schur, by_qr)


def specialise(method: AbstractRedundancyMethod, structure: Structure) -> AbstractRedundancyMethod:
    """`method` with its choices of path fixed from the structure: `block` by the
    mechanism's size (at least `BLOCK_MIN_COORDINATES` coordinates: the block
    solver), then `schur` by the structure's verdict when that verdict is known on
    the host, so that only the path taken is compiled. The numbers are those of
    the unspecialised method (the same q̈; it takes the same Schur/QR path at run
    time through `jax.lax.cond`)."""
    if not isinstance(method, AbstractNullSpaceMethod):
        return method
    if method.block is None:
        # A path the user fixed (`schur=True/False`) is kept.
        blocks = structure.blocks
        large = blocks is not None and blocks.n_bodies * blocks.dof >= BLOCK_MIN_COORDINATES
        method = dataclasses.replace(method, block=large and method.schur is None)
    if method.schur is not None or method.block:
        return method
    known = host_values(structure.schur)
    if known is None or np.ndim(known[0]):
        return method
    return dataclasses.replace(method, schur=bool(known[0]))
