"""Equations of motion M q̈ + Cᵀ λ = F, C q̈ = Γ (DESIGN.md §2): the terms at a state,
and their solution by a method of handling redundant constraints given the
mechanism's [`Structure`][redundax.Structure]."""

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float, Int

from ._assembly import (
    acceleration_rhs,
    constraint_matrix,
    constraint_rows,
    generalized_forces,
    mass_matrix,
    position_residual,
    velocity_bias,
)
from ._model import Model
from ._types import Scalar


class Terms(eqx.Module):
    """Everything the equations of motion need at (q, q̇, t)."""

    C: Float[Array, "nc nq"]
    b: Float[Array, " nc"]
    gamma: Float[Array, " nc"]
    phi: Float[Array, " m"]
    M: Float[Array, "nq nq"]
    F: Float[Array, " nq"]
    velocity_error: Float[Array, " nc"]
    block: int = eqx.field(static=True, default=0)
    """Size of the diagonal blocks of M (coordinates per body; 0: treat M as dense)."""
    mass_inverse: Float[Array, "nb block block"] | None = None
    """M⁻¹ block by block (the bodies' closed form), or None: factorised from M."""


def dynamics_terms(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar
) -> Terms:
    """C, b, Γ, Φ, M and F at (q, q̇, t), all by autodiff."""
    return _dynamics_terms(model, q, qd, jnp.asarray(t, dtype=float))


# Jitted (t always an array, so a new time is no new program): the terms are
# assembled several times per integrator step (the stages, the projection), and a
# jitted function is traced once per argument shapes inside an enclosing trace.
@eqx.filter_jit
def _dynamics_terms(model: Model, q, qd, t) -> Terms:
    C = constraint_matrix(model, q, t)
    b = velocity_bias(model, q, t)
    return Terms(
        C=C,
        b=b,
        gamma=acceleration_rhs(model, q, qd, t),
        phi=position_residual(model, q, t),
        M=mass_matrix(model, q),
        F=generalized_forces(model, q, qd, t),
        velocity_error=C @ qd + b,
        block=model.bodies.dof,
        mass_inverse=model.bodies.inverse_mass_blocks(),
    )


class LocalTerms(eqx.Module):
    """The terms of the equations of motion at (q, q̇, t) without any dense matrix
    (O(n) memory and work, for the block-sparse solver): C row by row in local form
    (`R`, `B` of [`redundax.equations.constraint_rows`][]), M's body blocks, and the vectors
    of [`Terms`][redundax.equations.Terms]."""

    R: Float[Array, "nc P dof"]
    B: Int[Array, "nc P"]
    mass_blocks: Float[Array, "nb dof dof"]
    b: Float[Array, " nc"]
    gamma: Float[Array, " nc"]
    phi: Float[Array, " m"]
    F: Float[Array, " nq"]
    velocity_error: Float[Array, " nc"]
    mass_inverse: Float[Array, "nb dof dof"] | None = None
    """The inverses of `mass_blocks` (the bodies' closed form), or None."""


def local_terms(
    model: Model, q: Float[Array, " nq"], qd: Float[Array, " nq"], t: Scalar
) -> LocalTerms:
    """[`LocalTerms`][redundax.equations.LocalTerms] at (q, q̇, t), all by autodiff of the pairs'
    local residuals."""
    return _local_terms(model, q, qd, jnp.asarray(t, dtype=float))


@eqx.filter_jit
def _local_terms(model: Model, q, qd, t) -> LocalTerms:
    R, B = constraint_rows(model, q, t)
    dof = model.bodies.dof
    QD = jnp.concatenate([qd.reshape(-1, dof), jnp.zeros((1, dof))])
    b = velocity_bias(model, q, t)
    return LocalTerms(
        R=R,
        B=B,
        mass_blocks=model.bodies.mass_blocks(),
        b=b,
        gamma=acceleration_rhs(model, q, qd, t),
        phi=position_residual(model, q, t),
        F=generalized_forces(model, q, qd, t),
        velocity_error=jnp.einsum("rjk,rjk->r", R, QD[B]) + b,
        mass_inverse=model.bodies.inverse_mass_blocks(),
    )


def stabilised_gamma(terms: Terms, drift_control) -> Float[Array, " nc"]:
    """Γ with the drift-control terms of `drift_control` (None: Γ itself)."""
    return terms.gamma if drift_control is None else drift_control.gamma(terms)
