"""What a run records along the way and the reports read from it: how far C is from
losing rank after every step (singular configurations, rank changes), the active set of a
partitioning method, the rank history along saved states, and the closure of loops.
"""

from ._active_set import (
    ActiveSetHistory as ActiveSetHistory,
    ActiveSetLog as ActiveSetLog,
    ActiveSetMonitor as ActiveSetMonitor,
    active_set_history as active_set_history,
)
from ._closure import (
    Closure as Closure,
    ClosureChange as ClosureChange,
    ClosureReport as ClosureReport,
    closure_report as closure_report,
)
from ._rank_history import (
    RankHistory as RankHistory,
    check_regular as check_regular,
    rank_history as rank_history,
    singular_instants as singular_instants,
)
from ._singularity import (
    SingularityLog as SingularityLog,
    SingularityMonitor as SingularityMonitor,
    SingularityReport as SingularityReport,
    SingularPassage as SingularPassage,
)

__all__ = [
    "SingularityLog",
    "SingularityMonitor",
    "SingularityReport",
    "SingularPassage",
    "ActiveSetLog",
    "ActiveSetMonitor",
    "ActiveSetHistory",
    "active_set_history",
    "RankHistory",
    "rank_history",
    "singular_instants",
    "check_regular",
    "Closure",
    "ClosureChange",
    "ClosureReport",
    "closure_report",
]
