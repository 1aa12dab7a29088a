"""The equations of motion of a [`redundax.Model`][], each term by JAX autodiff: the
constraint matrix C = [Φ_q; A], the residuals, the mass matrix, generalised forces, the
velocity bias and acceleration right-hand side Γ, energies, body poses and markers; the
terms at one state and their solution for q̈ and λ.
"""

from ._assembly import (
    acceleration_rhs as acceleration_rhs,
    body_poses as body_poses,
    body_velocities as body_velocities,
    check_consistency as check_consistency,
    constraint_matrix as constraint_matrix,
    constraint_rows as constraint_rows,
    generalized_forces as generalized_forces,
    holonomic_jacobian as holonomic_jacobian,
    kinetic_energy as kinetic_energy,
    marker_positions as marker_positions,
    mass_matrix as mass_matrix,
    pfaffian_matrix as pfaffian_matrix,
    position_residual as position_residual,
    potential_energy as potential_energy,
    velocity_bias as velocity_bias,
    velocity_residual as velocity_residual,
)
from ._equations import (
    LocalTerms as LocalTerms,
    Terms as Terms,
    dynamics_terms as dynamics_terms,
    local_terms as local_terms,
)
from ._solve import (
    solve_dynamics as solve_dynamics,
    solve_terms as solve_terms,
)

__all__ = [
    "constraint_matrix",
    "constraint_rows",
    "holonomic_jacobian",
    "pfaffian_matrix",
    "mass_matrix",
    "generalized_forces",
    "position_residual",
    "velocity_residual",
    "velocity_bias",
    "acceleration_rhs",
    "kinetic_energy",
    "potential_energy",
    "body_poses",
    "body_velocities",
    "marker_positions",
    "check_consistency",
    "dynamics_terms",
    "local_terms",
    "Terms",
    "LocalTerms",
    "solve_terms",
    "solve_dynamics",
]
