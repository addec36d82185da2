"""Result types of the query pipeline (pydantic models, JSON-serialisable as they are).

They live in :mod:`graphmem.core.results` (light: the typed client imports them without the
query stack); this module re-exports them under their old path.
"""

from __future__ import annotations

# re-exported ("X as X": explicit for mypy strict)
from graphmem.core.model import Message as Message, Projection as Projection, Tense as Tense, View as View
from graphmem.core.results import (
    Ablation as Ablation,
    AskResult as AskResult,
    Budgets as Budgets,
    Cell as Cell,
    CellVia as CellVia,
    CitedMessage as CitedMessage,
    CitedRecord as CitedRecord,
    CompactAnswer as CompactAnswer,
    Excerpt as Excerpt,
    ExcerptVia as ExcerptVia,
    RecordVersion as RecordVersion,
    RosterMember as RosterMember,
    Row as Row,
    RowKind as RowKind,
    RowStatus as RowStatus,
    StageUsage as StageUsage,
)
