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
    PivotedQR as PivotedQR,
    QR_CHUNK as QR_CHUNK,
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
