"""The solvability and uniqueness analysis (Wojtyra & Frączek's QR test and its rank and SVD
variants), batched analysis of many configurations, reactions of one pair along a motion
(peak, impulse, history) with their gradients, what joint friction did along a run, and
the mechanism's topology.
"""

from ._friction_report import (
    FrictionReport as FrictionReport,
    friction_report as friction_report,
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
from ._solvability import (
    Solvability as Solvability,
    analyze_many as analyze_many,
    solvability_by_qr as solvability_by_qr,
    solvability_by_rank as solvability_by_rank,
    solvability_by_svd as solvability_by_svd,
    solvability_report as solvability_report,
)
from ._structure import (
    Topology as Topology,
    membership as membership,
    topology as topology,
)

__all__ = [
    "FrictionReport",
    "friction_report",
    "Solvability",
    "analyze_many",
    "solvability_by_qr",
    "solvability_by_rank",
    "solvability_by_svd",
    "solvability_report",
    "PairReaction",
    "PeakReaction",
    "ReactionImpulse",
    "pair_reaction",
    "pair_reaction_history",
    "peak_reaction",
    "reaction_impulse",
    "final_marker_position",
    "Topology",
    "topology",
    "membership",
]
