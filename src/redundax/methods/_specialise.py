"""Method specialisation: the discrete choices a run of a method makes (its solver
path, the block solver's pivot metric), fixed from static facts of the model and a
[`Structure`][redundax.Structure] before the run, and the checks that go with them."""

import dataclasses
import warnings

import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool

from .._errors import AccuracyWarning, ModelError
from .._structure import Structure
from .._validation import host_values
from ._base import BLOCK_MIN_COORDINATES, AbstractNullSpaceMethod, AbstractRedundancyMethod
from ._kernels import SCHUR_REGULARISATION
from .block import BlockSparse, mass_conditioned, mass_pivots
from .elimination import Elimination


def specialise(
    method: AbstractRedundancyMethod, structure: Structure, model=None
) -> AbstractRedundancyMethod:
    """`method` with its choices of path fixed from static facts only, so that an
    eager run, one under `jax.jit`, a `jax.vmap` and a gradient compile and run the
    same path: `block` by the mechanism's size (at least `BLOCK_MIN_COORDINATES`
    coordinates: the block solver, where every body's block of M is regular by the
    model's `MassFacts` (`redundax._bodies`)), then `schur` by the structure's
    static verdict (`Structure.schur_path`; a structure decided inside a
    transformation has none, and its traced verdict chooses at run time).

    Where the block solver is taken and its pivot metric (`pivots`) left open, it
    is fixed from the model's mass facts: with slender or flat bodies (M's
    condition number above `MASS_PIVOTS_MAX_CONDITION`), the rows are chosen on
    C Cᵀ, since the pivots of C M⁻¹ Cᵀ take independent rows for dependent ones
    there (Bricard's rods 3 mm thick instead of 100 mm, M's condition number 1.3e6:
    q̈ wrong by a factor 5 with the pivots of C M⁻¹ Cᵀ, exact to 2e-15 with those
    of C Cᵀ; see [`BlockSparse`][redundax.methods.BlockSparse]).

    The numbers are those of the unspecialised method (the same q̈; it reads the
    same static facts).

    **Raises:** [`ModelError`][redundax.ModelError] naming the bodies (from `model`,
    else by index) when the method needs M⁻¹ (`needs_mass_inverse`) and a body's
    block of M is singular (`Structure.mass_definite`, when known on the host):
    the run would otherwise end in non-finite accelerations."""
    if isinstance(method, AbstractNullSpaceMethod):
        method = _paths(method, structure)
    return checked(method, structure, model)


def checked(method: AbstractRedundancyMethod, structure: Structure, model=None):
    """`method` checked against the mechanism on the host (nothing under a trace)
    and with the block solver's pivot metric fixed (`block_pivots`):

    **Raises:** [`ModelError`][redundax.ModelError] where the method applies M⁻¹ and
    a body's block of M is singular (the bodies named), or where an
    [`Elimination`][redundax.methods.Elimination]'s kept rows do not span the rows of C
    (the dropped rows named). **Warns:** [`AccuracyWarning`][redundax.AccuracyWarning]
    where a forced Schur path is predicted to be biased. Also refuses (from any
    context: it is static) a structure decided for another mechanism than `model`
    ([`Structure.check_model`][redundax.Structure.check_model])."""
    if model is not None:
        structure.check_model(model)
        weights = getattr(method, "weights", None)  # WeightedMinimumNorm's, one per row
        if weights is not None and np.shape(weights) != (model.n_constraints,):
            raise ModelError(
                f"{type(method).__name__} field 'weights': shape {np.shape(weights)}, but C "
                f"has {model.n_constraints} rows",
                source=type(method).__name__,
            )
    raise_if_mass_singular(method, structure, model)
    raise_if_rows_do_not_span(method, structure)
    warn_if_schur_biased(method, structure)
    return block_pivots(method, model)


def raise_if_rows_do_not_span(method: AbstractRedundancyMethod, structure: Structure) -> None:
    """[`ModelError`][redundax.ModelError] when `method` is an
    [`Elimination`][redundax.methods.Elimination] whose kept rows do not span the rows of C
    at the structure's configuration (`path_accurate`'s test; an `Elimination`
    built by hand, or by [`redundax.methods.eliminate`][] for another mechanism)."""
    if not isinstance(method, Elimination):
        return
    known = host_values(structure.rank, structure.null_space, method.keep)
    if known is None or np.ndim(known[0]) or method.n_rows != known[1].shape[0]:
        return
    if bool(_rows_span(method, structure, np)):
        return
    rank, dropped = int(known[0]), [k + 1 for k in method.eliminated]
    problem = (
        f"rows {dropped} (1-based) are not all redundant: the {int(method.keep.shape[0])} "
        f"rows kept do not span the rows of C (rank {rank}), so a constraint would be left out"
    )
    raise ModelError(
        f"Elimination: {problem}. Build it with rx.methods.eliminate(model, q), which checks the "
        "rows or chooses them",
        [problem],
        "method",
    )


SCHUR_BIAS_LIMIT = 1e-6
"""A Schur path fixed by the user (`schur=True`) or on a sweep's nominal mechanism
is warned about, or its variant flagged, where its predicted bias of q̈ exceeds
this (relative; see [`schur_bias`][redundax.internal.schur_bias])."""


def schur_bias(gap, xp=jnp):
    """The Schur path's predicted relative bias of q̈, (δ/ŝ)⁷ (δ =
    `SCHUR_REGULARISATION`, six refinements; inf where ŝ = 0), from ŝ =
    `Structure.schur_gap`. Measured errors are up to ~10× this (the 6-bar: 1.6e-7
    predicted, 1.1e-6 measured; Bricard with rods 10 mm thick: 2e-2, 3.5e-3).
    `xp`: `jax.numpy` (traceable) or `numpy` (host-side checks, which may run while
    a caller's function is traced)."""
    gap = xp.asarray(gap, dtype=float)
    return xp.where(gap > 0.0, (SCHUR_REGULARISATION / xp.where(gap > 0.0, gap, 1.0)) ** 7, xp.inf)


def path_accurate(method: AbstractRedundancyMethod, structure: Structure, model) -> Bool[Array, ""]:
    """Whether the paths fixed in `method` (by [`specialise`][redundax.methods.specialise] on a
    nominal mechanism, or by the user) are accurate for this mechanism, from its own
    `structure` and mass (traceable: a sweep asks it per variant): every body's
    block of M regular where the method applies M⁻¹; the Schur path's predicted
    bias at most `SCHUR_BIAS_LIMIT` where it is fixed (`schur=True`); M's
    condition number at most `MASS_PIVOTS_MAX_CONDITION` where the block solver
    tests the pivots of C M⁻¹ Cᵀ (`pivots="mass"`); for an
    [`Elimination`][redundax.methods.Elimination], kept rows that span the rows of C (as
    many as its rank, and the left null space N of C regular on the dropped rows:
    σ_min(N[dropped]) above `ELIMINATION_MIN_SIGMA`; a variant of higher rank would
    otherwise run with a constraint left out). A path left to run time
    (`schur=None`) follows the structure and is accurate."""
    ok = jnp.asarray(True)
    if method.needs_mass_inverse:
        ok = ok & jnp.all(structure.mass_definite)
    null_space = isinstance(method, AbstractNullSpaceMethod)
    if null_space and method.schur is True and not method.block:
        ok = ok & (schur_bias(structure.schur_gap) <= SCHUR_BIAS_LIMIT)
    if uses_block_solver(method) and method.pivots == "mass":
        ok = ok & mass_conditioned(model.bodies.mass_blocks())
    if isinstance(method, Elimination):
        ok = ok & _rows_span(method, structure)
    return ok


ELIMINATION_MIN_SIGMA = 1e-6
"""Smallest singular value of the left null space's dropped rows for which an
[`Elimination`][redundax.methods.Elimination]'s kept rows count as spanning C's rows (the
columns of N are orthonormal: 1 is the best, 0 a dependent set kept)."""


def _rows_span(method, structure: Structure, xp=jnp) -> Bool[ArrayLike, ""]:
    """Whether an `Elimination`'s kept rows span C's rows (see
    [`path_accurate`][redundax.methods.path_accurate];
    `xp` as in [`schur_bias`][redundax.internal.schur_bias])."""
    nc = method.n_rows
    if nc == 0:
        return xp.asarray(True)
    dropped = ~xp.isin(xp.arange(nc), xp.asarray(method.keep))
    N = xp.where(dropped[:, None], xp.asarray(structure.null_space), 0.0)  # p columns
    rank = xp.asarray(structure.rank)
    p = nc - rank
    sigma = xp.linalg.svd(N, compute_uv=False)
    regular = xp.take(sigma, xp.clip(p - 1, 0, nc - 1)) > ELIMINATION_MIN_SIGMA
    return (method.keep.shape[0] == rank) & ((p == 0) | regular)


def warn_if_schur_biased(method: AbstractRedundancyMethod, structure: Structure) -> None:
    """An [`AccuracyWarning`][redundax.AccuracyWarning] when the user forced the
    dense Schur path (`schur=True`, no block solver) where the structure's ŝ
    (`Structure.schur_gap`, known on the host) predicts a bias of q̈ above
    `SCHUR_BIAS_LIMIT` ([`schur_bias`][redundax.internal.schur_bias]). Nothing under a trace."""
    if not isinstance(method, AbstractNullSpaceMethod) or method.schur is not True or method.block:
        return
    known = host_values(structure.schur_gap)
    if known is None or np.ndim(known[0]):
        return
    gap = float(known[0])
    bias = float(schur_bias(gap, np))
    if bias <= SCHUR_BIAS_LIMIT:
        return
    why = (
        f"the smallest non-zero eigenvalue of C M⁻¹ Cᵀ scaled to unit diagonal is "
        f"ŝ = {gap:.2g}, so the regularisation (δ = {SCHUR_REGULARISATION:g}) may bias "
        f"q̈ by about (δ/ŝ)⁷ = {bias:.1g} relative"
        if gap > 0.0
        else "M is singular or its condition number exceeds 1e8, and C M⁻¹ Cᵀ with it"
    )
    warnings.warn(
        f"{type(method).__name__}(schur=True): {why} (slender or flat bodies in natural "
        "coordinates, or a nearly singular configuration). Leave schur=None: "
        f"rx.methods.{type(method).__name__}() takes the pivoted QR here",
        AccuracyWarning,
        stacklevel=3,
    )


def uses_block_solver(method: AbstractRedundancyMethod) -> bool:
    """Whether `method` computes q̈ by the block solver
    ([`BlockSparse`][redundax.methods.BlockSparse], or a method of the null-space family
    with `block=True`; `block=None` is decided by [`specialise`][redundax.methods.specialise])."""
    return isinstance(method, BlockSparse) or (
        isinstance(method, AbstractNullSpaceMethod) and bool(method.block)
    )


def block_pivots(method: AbstractRedundancyMethod, model) -> AbstractRedundancyMethod:
    """`method` with the block solver's pivot metric fixed from the model's static
    `MassFacts` (`redundax._bodies`) (`MASS_PIVOTS_MAX_CONDITION`), where it takes
    the block solver and leaves the metric open; unchanged without a model (the
    solver then reads the structure's mass facts, or takes `"coordinates"`, right
    for every inertia)."""
    if not uses_block_solver(method) or method.pivots is not None or model is None:
        return method
    return dataclasses.replace(method, pivots=mass_pivots(model.mass_facts))


def raise_if_mass_singular(
    method: AbstractRedundancyMethod, structure: Structure, model=None
) -> None:
    """[`ModelError`][redundax.ModelError] naming the bodies (from `model`, else by
    index) whose block of M is singular, if `method` needs M⁻¹: from the
    structure's `mass_definite` where it is known on the host, else from the
    model's static mass facts (so also under a trace)."""
    definite = _mass_definite(structure)
    if method.needs_mass_inverse and definite is not None and not np.all(definite):
        raise _singular_mass_error(method, np.flatnonzero(~definite), model)


def _paths(method: "AbstractNullSpaceMethod", structure: Structure):
    if method.block is None:
        # A path the user fixed (`schur=True/False`) is kept. The block solver needs
        # every body's M⁻¹ (its pivots' metric then follows M's conditioning).
        blocks, facts = structure.blocks, structure.mass_facts
        large = blocks is not None and blocks.n_bodies * blocks.dof >= BLOCK_MIN_COORDINATES
        regular = facts is not None and facts.regular
        method = dataclasses.replace(method, block=large and regular and method.schur is None)
    if method.schur is not None or method.block or structure.schur_path is None:
        return method
    return dataclasses.replace(method, schur=structure.schur_path)


def _mass_definite(structure: Structure) -> np.ndarray | None:
    """Per body, whether its block of M is regular: `Structure.mass_definite` where
    it is known on the host (the masses the structure was decided with), else the
    model's static mass facts (None without either)."""
    known = host_values(structure.mass_definite)
    if known is not None and np.ndim(known[0]) == 1:
        return np.asarray(known[0], dtype=bool)
    facts = structure.mass_facts
    return None if facts is None else np.asarray(facts.definite, dtype=bool)


def _singular_mass_error(method, bodies, model) -> ModelError:
    names = [repr(model.bodies.names[k]) if model is not None else f"{k} (0-based)" for k in bodies]
    problems = [f"body {name}: its block of the mass matrix is singular" for name in names]
    return ModelError(
        f"{type(method).__name__} applies M⁻¹, but M is singular:\n"
        + "\n".join(f"  - {p}" for p in problems)
        + "\nin natural coordinates a body whose mass lies in one plane (a lamina: "
        "principal moments with I_z = I_x + I_y) has no inertia out of it. Use "
        "rx.methods.NullSpace() (its pivoted-QR path, which it takes for such a mechanism), or "
        "give the bodies some thickness (I_z < I_x + I_y)",
        problems,
        "method",
    )
