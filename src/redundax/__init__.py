"""redundax: differentiable dynamics of redundantly constrained multibody systems."""

import jax as _jax

# Results a user sees are float64 by default (the seed papers' numbers need it).
_jax.config.update("jax_enable_x64", True)

from ._assembly import (
    acceleration_rhs as acceleration_rhs,
)
from ._assembly import (
    check_consistency as check_consistency,
)
from ._assembly import (
    constraint_matrix as constraint_matrix,
)
from ._assembly import (
    generalized_forces as generalized_forces,
)
from ._assembly import (
    holonomic_jacobian as holonomic_jacobian,
)
from ._assembly import (
    kinetic_energy as kinetic_energy,
)
from ._assembly import (
    marker_positions as marker_positions,
)
from ._assembly import (
    mass_matrix as mass_matrix,
)
from ._assembly import (
    pfaffian_matrix as pfaffian_matrix,
)
from ._assembly import (
    position_residual as position_residual,
)
from ._assembly import (
    potential_energy as potential_energy,
)
from ._assembly import (
    velocity_bias as velocity_bias,
)
from ._assembly import (
    velocity_residual as velocity_residual,
)
from ._diagnostics import (
    RankHistory as RankHistory,
)
from ._diagnostics import (
    check_regular as check_regular,
)
from ._diagnostics import (
    rank_history as rank_history,
)
from ._diagnostics import (
    singular_instants as singular_instants,
)
from ._dynamics import (
    AbstractRedundancyMethod as AbstractRedundancyMethod,
)
from ._dynamics import (
    AugmentedLagrangian as AugmentedLagrangian,
)
from ._dynamics import (
    Elimination as Elimination,
)
from ._dynamics import (
    NullSpace as NullSpace,
)
from ._dynamics import (
    Penalty as Penalty,
)
from ._dynamics import (
    Terms as Terms,
)
from ._dynamics import (
    WeightedMinimumNorm as WeightedMinimumNorm,
)
from ._dynamics import (
    dynamics_terms as dynamics_terms,
)
from ._dynamics import (
    eliminate as eliminate,
)
from ._dynamics import (
    minimum_norm_multipliers as minimum_norm_multipliers,
)
from ._dynamics import (
    null_space_acceleration as null_space_acceleration,
)
from ._dynamics import (
    solve_dynamics as solve_dynamics,
)
from ._model import Model as Model
from ._model import Pair as Pair
from ._model import State as State
from ._motion import (
    AbstractMotion as AbstractMotion,
)
from ._motion import (
    Constant as Constant,
)
from ._motion import (
    Function as Function,
)
from ._motion import (
    Polynomial as Polynomial,
)
from ._motion import (
    SmoothSteps as SmoothSteps,
)
from ._qr import PivotedQR as PivotedQR
from ._qr import pivoted_qr as pivoted_qr
from ._reactions import Reactions as Reactions
from ._reactions import reactions as reactions
from ._simulate import Trajectory as Trajectory
from ._simulate import simulate as simulate
from ._solvability import (
    Solvability as Solvability,
)
from ._solvability import (
    SolvabilityReport as SolvabilityReport,
)
from ._solvability import (
    analyze_many as analyze_many,
    analyze_solvability as analyze_solvability,
)
from ._solvability import (
    membership as membership,
)
from ._solvability import (
    solvability_by_qr as solvability_by_qr,
)
from ._solvability import (
    solvability_by_rank as solvability_by_rank,
)
from ._solvability import (
    solvability_by_svd as solvability_by_svd,
)
from ._spec import (
    Body as Body,
)
from ._spec import (
    CustomHolonomic as CustomHolonomic,
)
from ._spec import (
    CustomPfaffian as CustomPfaffian,
)
from ._spec import (
    KnifeEdge as KnifeEdge,
)
from ._spec import (
    Load as Load,
)
from ._spec import (
    Marker as Marker,
)
from ._spec import (
    Mechanism as Mechanism,
)
from ._spec import (
    Revolute as Revolute,
)
from ._spec import (
    RevoluteDriver as RevoluteDriver,
)
from ._spec import (
    Translational as Translational,
)
from ._spec import (
    TranslationalDriver as TranslationalDriver,
)
from ._spec import (
    Weld as Weld,
)
from ._stabilisation import Baumgarte as Baumgarte
from ._stabilisation import Projection as Projection

__version__ = "0.1.0"
from . import models as models
