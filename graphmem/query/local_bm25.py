"""Re-export of :mod:`graphmem.local_bm25` (moved there so that :mod:`graphmem.search` can use it
without an import cycle); kept under this name for one release."""

from graphmem.local_bm25 import (
    B,
    DRIFT_FREE_MAX,
    K1,
    MAX_DRIFT,
    GroupStats,
    analyze,
    build_stats,
    forget_stats,
    group_stats,
    rescore,
    smooth,
)

__all__ = [
    "B", "DRIFT_FREE_MAX", "K1", "MAX_DRIFT", "GroupStats", "analyze", "build_stats", "forget_stats",
    "group_stats", "rescore", "smooth",
]
