"""Kernels and plumbing: rank tolerances, the pivoted QR, the block pattern, body stacks and
the default step-size controller and solver. **Unstable**: these may change in any release.
"""

from ._block_pattern import (
    BlockPattern as BlockPattern,
    block_pattern as block_pattern,
)
from ._bodies import (
    AbstractBodies as AbstractBodies,
    PlanarBodies as PlanarBodies,
    SpatialBodies as SpatialBodies,
)
from ._qr import (
    QR_CHUNK as QR_CHUNK,
    PivotedQR as PivotedQR,
    pivoted_qr as pivoted_qr,
)
from ._simulate import (
    default_controller as default_controller,
    default_solver as default_solver,
)
from ._structure import (
    DECISION_RTOL as DECISION_RTOL,
    UNIQUENESS_RTOL as UNIQUENESS_RTOL,
)
from .methods import (
    ENTRY_CHUNK as ENTRY_CHUNK,
    MASS_PIVOTS_MAX_CONDITION as MASS_PIVOTS_MAX_CONDITION,
    PIVOT_RTOL as PIVOT_RTOL,
    SCHUR_INVERSE_MAX_ROWS as SCHUR_INVERSE_MAX_ROWS,
    SCHUR_REGULARISATION as SCHUR_REGULARISATION,
    BlockSolution as BlockSolution,
    block_solve as block_solve,
    mass_conditioned as mass_conditioned,
    mass_pivots as mass_pivots,
    mass_solver as mass_solver,
    row_pivots as row_pivots,
    schur_bias as schur_bias,
    schur_solve as schur_solve,
    spd_solve as spd_solve,
)

__all__ = [
    "DECISION_RTOL",
    "UNIQUENESS_RTOL",
    "QR_CHUNK",
    "PivotedQR",
    "pivoted_qr",
    "BlockPattern",
    "block_pattern",
    "AbstractBodies",
    "PlanarBodies",
    "SpatialBodies",
    "default_controller",
    "default_solver",
    "BlockSolution",
    "ENTRY_CHUNK",
    "MASS_PIVOTS_MAX_CONDITION",
    "PIVOT_RTOL",
    "SCHUR_INVERSE_MAX_ROWS",
    "SCHUR_REGULARISATION",
    "block_solve",
    "mass_conditioned",
    "mass_pivots",
    "mass_solver",
    "row_pivots",
    "schur_bias",
    "schur_solve",
    "spd_solve",
]
