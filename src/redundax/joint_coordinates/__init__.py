"""Joint coordinates (seed 002): a spanning tree of joints with joint coordinates,
the remaining pairs as constraints, forward dynamics by Featherstone's
divide-and-conquer algorithm and the reaction-uniqueness analysis inside it.

- `_kinematics.py`: relative motions of the tree joints, forward kinematics.
- `_model.py`: [`JointModel`][redundax.joint_coordinates.JointModel] and the conversions of states.
- `_terms.py`: the equations of motion per body in twists, and dense in joint
  coordinates (the reference solve).
- `_dca.py`: the divide-and-conquer algorithm over constraint rows.
- `_dynamics.py`: the decisions taken once and the forward dynamics.
- `_uniqueness.py`: seed 002's propagation of the verdicts.
- `_simulate.py`: motion (Diffrax), drift control by the DCA's projection.
- `_run_validity.py`: whether a run is the mechanism's motion (off its
  constraints, or stopped at the edge of its workspace).
- `_segments.py`: a run in segments, for progress reports.
- `_reactions.py`: the DCA's multipliers as reactions with seed 002's verdicts.
"""

from ._dynamics import (
    JointDynamics as JointDynamics,
    JointStructure as JointStructure,
    dca_dynamics as dca_dynamics,
    decide_joint as decide_joint,
)
from ._model import (
    JointModel as JointModel,
    joint_coordinates as joint_coordinates,
    joint_model as joint_model,
    to_absolute_state as to_absolute_state,
    to_joint_state as to_joint_state,
)
from ._reactions import (
    joint_reaction_history as joint_reaction_history,
    joint_reactions as joint_reactions,
)
from ._simulate import (
    JointTrajectory as JointTrajectory,
    project_joint_state as project_joint_state,
)
from ._terms import (
    JointSpaceTerms as JointSpaceTerms,
    dense_joint_accelerations as dense_joint_accelerations,
    joint_space_terms as joint_space_terms,
)
from ._uniqueness import (
    JointUniquenessReport as JointUniquenessReport,
    joint_uniqueness as joint_uniqueness,
)

__all__ = [
    "JointDynamics",
    "JointModel",
    "JointSpaceTerms",
    "JointStructure",
    "JointUniquenessReport",
    "dca_dynamics",
    "decide_joint",
    "dense_joint_accelerations",
    "joint_model",
    "joint_reaction_history",
    "joint_reactions",
    "joint_space_terms",
    "joint_uniqueness",
    "project_joint_state",
    "to_absolute_state",
    "to_joint_state",
    "JointTrajectory",
    "joint_coordinates",
]
