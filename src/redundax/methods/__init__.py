"""Ways of handling redundant constraints, side by side (Wojtyra & Frączek 2013
§3.1; DESIGN.md §2). With redundancy (rank C = r < m + h) q̈ is unique and λ is
not: every method returns the same q̈ (the penalty method only in its limit) and a
λ of its own choosing; only the reactions of uniquely solvable pairs agree.

One file per method; the base class and the shared linear-algebra kernels are in
`_base.py` and `_kernels.py`. A method decides nothing at run time: it reads the
mechanism's [`Structure`][redundax.Structure].
"""

from ._base import (
    AbstractNullSpaceMethod as AbstractNullSpaceMethod,
    AbstractRedundancyMethod as AbstractRedundancyMethod,
)
from ._kernels import (
    SCHUR_INVERSE_MAX_ROWS as SCHUR_INVERSE_MAX_ROWS,
    SCHUR_REGULARISATION as SCHUR_REGULARISATION,
    mass_solver as mass_solver,
    minimum_norm_multipliers as minimum_norm_multipliers,
    null_space_acceleration as null_space_acceleration,
    schur_acceleration as schur_acceleration,
    schur_solve as schur_solve,
    spd_solve as spd_solve,
    weighted_multipliers as weighted_multipliers,
)
from ._specialise import (
    path_accurate as path_accurate,
    schur_bias as schur_bias,
    specialise as specialise,
    uses_block_solver as uses_block_solver,
)
from .augmented_lagrangian import AugmentedLagrangian as AugmentedLagrangian
from .block import (
    ENTRY_CHUNK as ENTRY_CHUNK,
    MASS_PIVOTS_MAX_CONDITION as MASS_PIVOTS_MAX_CONDITION,
    PIVOT_RTOL as PIVOT_RTOL,
    BlockSolution as BlockSolution,
    BlockSparse as BlockSparse,
    block_solve as block_solve,
    mass_conditioned as mass_conditioned,
    mass_pivots as mass_pivots,
    row_pivots as row_pivots,
)
from .compliant import Compliant as Compliant, joint_stiffness as joint_stiffness
from .elimination import Elimination as Elimination, eliminate as eliminate
from .null_space import NullSpace as NullSpace
from .penalty import Penalty as Penalty
from .weighted import WeightedMinimumNorm as WeightedMinimumNorm

__all__ = [
    "NullSpace",
    "BlockSparse",
    "Elimination",
    "Penalty",
    "AugmentedLagrangian",
    "WeightedMinimumNorm",
    "Compliant",
    "AbstractRedundancyMethod",
    "AbstractNullSpaceMethod",
    "eliminate",
    "joint_stiffness",
    "minimum_norm_multipliers",
    "null_space_acceleration",
    "schur_acceleration",
    "weighted_multipliers",
    "specialise",
    "path_accurate",
    "uses_block_solver",
]
