"""redundax: differentiable dynamics of redundantly constrained multibody systems."""

import jax as _jax

# Results a user sees are float64 by default (the seed papers' numbers need it).
_jax.config.update("jax_enable_x64", True)

from ._active_set import (
    ActiveSetHistory as ActiveSetHistory,
    ActiveSetLog as ActiveSetLog,
    ActiveSetMonitor as ActiveSetMonitor,
    active_set_history as active_set_history,
)
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
from ._block_pattern import BlockPattern as BlockPattern, block_pattern as block_pattern
from ._bodies import (
    AbstractBodies as AbstractBodies,
    PlanarBodies as PlanarBodies,
    SpatialBodies as SpatialBodies,
)
from ._citation import citation as citation
from ._closure import (
    Closure as Closure,
    ClosureChange as ClosureChange,
    ClosureReport as ClosureReport,
    closure_report as closure_report,
)
from ._compliant_stepping import (
    Compliance as Compliance,
    GonzalezStepper as GonzalezStepper,
    GonzalezTrajectory as GonzalezTrajectory,
)
from ._drift_control import (
    AS_SIMULATED as AS_SIMULATED,
    AbstractDriftControl as AbstractDriftControl,
    Baumgarte as Baumgarte,
    NoDriftControl as NoDriftControl,
    Projection as Projection,
    drift_control_of as drift_control_of,
)
from ._equations import (
    LocalTerms as LocalTerms,
    Terms as Terms,
    dynamics_terms as dynamics_terms,
    local_terms as local_terms,
)
from ._errors import AccuracyWarning as AccuracyWarning, ModelError as ModelError
from ._validity import ConstraintsLeftError as ConstraintsLeftError
from ._force_specs import (
    Bushing as Bushing,
    CustomForce as CustomForce,
    RotationalSpringDamper as RotationalSpringDamper,
    SpringDamper as SpringDamper,
    TimeDependentLoad as TimeDependentLoad,
)
from ._forces import AbstractForceElement as AbstractForceElement
from ._model import Model as Model, Pair as Pair, State as State
from ._motion import (
    AbstractMotion as AbstractMotion,
    Constant as Constant,
    Function as Function,
    Polynomial as Polynomial,
    SmoothSteps as SmoothSteps,
)
from ._progress import Progress as Progress
from ._qr import QR_CHUNK as QR_CHUNK, PivotedQR as PivotedQR, pivoted_qr as pivoted_qr
from ._rank_history import (
    RankHistory as RankHistory,
    check_regular as check_regular,
    rank_history as rank_history,
    singular_instants as singular_instants,
)
from ._reaction_quantities import (
    PairReaction as PairReaction,
    PeakReaction as PeakReaction,
    ReactionImpulse as ReactionImpulse,
    final_marker_position as final_marker_position,
    pair_reaction as pair_reaction,
    pair_reaction_history as pair_reaction_history,
    peak_reaction as peak_reaction,
    reaction_impulse as reaction_impulse,
)
from ._reactions import (
    Reactions as Reactions,
    reaction_history as reaction_history,
    reactions as reactions,
)
from ._integration import AbstractTrajectory as AbstractTrajectory
from ._options import (
    CheckInitial as CheckInitial,
    ProjectInitial as ProjectInitial,
    SaveAt as SaveAt,
    Singularities as Singularities,
)
from ._run import simulate as simulate
from ._simulate import (
    SingularPassageWarning as SingularPassageWarning,
    Trajectory as Trajectory,
    default_controller as default_controller,
    default_drift_control as default_drift_control,
    default_solver as default_solver,
)
from ._singularity import (
    SingularityLog as SingularityLog,
    SingularityMonitor as SingularityMonitor,
    SingularityReport as SingularityReport,
    SingularPassage as SingularPassage,
    singularity_report as singularity_report,
)
from ._solvability import (
    Solvability as Solvability,
    SolvabilityReport as SolvabilityReport,
    analyze_many as analyze_many,
    analyze_solvability as analyze_solvability,
    solvability_by_qr as solvability_by_qr,
    solvability_by_rank as solvability_by_rank,
    solvability_by_svd as solvability_by_svd,
    solvability_report as solvability_report,
)
from ._solve import solve_dynamics as solve_dynamics, solve_terms as solve_terms
from ._spatial_spec import (
    Cylindrical as Cylindrical,
    Prismatic3D as Prismatic3D,
    Revolute3D as Revolute3D,
    RevoluteDriver3D as RevoluteDriver3D,
    SpatialBody as SpatialBody,
    Spherical as Spherical,
    TranslationalDriver3D as TranslationalDriver3D,
    Universal as Universal,
    Weld3D as Weld3D,
)
from ._spec import (
    Body as Body,
    CustomHolonomic as CustomHolonomic,
    CustomPfaffian as CustomPfaffian,
    KnifeEdge as KnifeEdge,
    Load as Load,
    Marker as Marker,
    Mechanism as Mechanism,
    Revolute as Revolute,
    RevoluteDriver as RevoluteDriver,
    Translational as Translational,
    TranslationalDriver as TranslationalDriver,
    Weld as Weld,
)
from ._step_projection import ProjectedSteps as ProjectedSteps, StepProjection as StepProjection
from ._structure import (
    DECISION_RTOL as DECISION_RTOL,
    UNIQUENESS_RTOL as UNIQUENESS_RTOL,
    Structure as Structure,
    Topology as Topology,
    decide as decide,
    membership as membership,
    topology as topology,
)
from .joint_coordinates import (
    JointDynamics as JointDynamics,
    JointModel as JointModel,
    JointSpaceTerms as JointSpaceTerms,
    JointStructure as JointStructure,
    JointTrajectory as JointTrajectory,
    JointUniquenessReport as JointUniquenessReport,
    dca_dynamics as dca_dynamics,
    decide_joint as decide_joint,
    dense_joint_accelerations as dense_joint_accelerations,
    joint_coordinates as joint_coordinates,
    joint_model as joint_model,
    joint_reaction_history as joint_reaction_history,
    joint_reactions as joint_reactions,
    joint_space_terms as joint_space_terms,
    joint_uniqueness as joint_uniqueness,
    project_joint_state as project_joint_state,
    to_absolute_state as to_absolute_state,
    to_joint_state as to_joint_state,
)
from .methods import (
    AbstractNullSpaceMethod as AbstractNullSpaceMethod,
    AbstractRedundancyMethod as AbstractRedundancyMethod,
    AugmentedLagrangian as AugmentedLagrangian,
    BlockSparse as BlockSparse,
    Compliant as Compliant,
    Elimination as Elimination,
    NullSpace as NullSpace,
    Penalty as Penalty,
    WeightedMinimumNorm as WeightedMinimumNorm,
    eliminate as eliminate,
    joint_stiffness as joint_stiffness,
    minimum_norm_multipliers as minimum_norm_multipliers,
    null_space_acceleration as null_space_acceleration,
    schur_acceleration as schur_acceleration,
    weighted_multipliers as weighted_multipliers,
)

from ._version import __version__ as __version__
from . import models as models
from .io._mujoco import (
    UnmappedElementWarning as UnmappedElementWarning,
    from_mjcf as from_mjcf,
    from_mujoco as from_mujoco,
)

# Submodules that pull in heavier dependencies (matplotlib for `plot`; the sweep's
# and the design study's machinery) are imported on first use, so that
# `rx.sweep`, `rx.optimize` and `rx.plot` work after `import redundax` alone without
# making every import pay for them.
_LAZY_SUBMODULES = ("optimize", "plot", "sweep")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib  # noqa: PLC0415 - only for the lazy submodules

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY_SUBMODULES})
