"""The query pipeline: Anchor-Separate-Resolve-Compose over both tracks, and the answerer.

Entry point: :func:`ask`. Modules: :mod:`~graphmem.query.project` (Project),
:mod:`~graphmem.query.system1` (recall, Select, Expand, Sufficiency/ASK),
:mod:`~graphmem.query.system2` (rows, per-row retrieval, head/full/as-of, raw fallback),
:mod:`~graphmem.query.compose` (Compose and Answer), :mod:`~graphmem.query.people` (read
models: one person's memory, provenance), :mod:`~graphmem.query.prompts` (prompt texts).
Writes and erasures of a group live in :mod:`graphmem.groups.service`.

Source: SpeakerMem-R1 §3.3, App. A, B.3, prompts I.3-I.6.
"""

from graphmem.query.people import (
    ForgetSummary,
    PersonMemory,
    RecordProvenance,
    forget_person,
    person_memory,
    provenance,
    read_roster,
)
from graphmem.query.pipeline import answer_system1_only, ask, budgets_from
from graphmem.query.project import fallback_projection, project
from graphmem.query.prompts import ABSTAIN
from graphmem.query.types import (
    AskResult,
    Budgets,
    Cell,
    CitedMessage,
    CitedRecord,
    CompactAnswer,
    Excerpt,
    Projection,
    RecordVersion,
    RosterMember,
    Row,
    StageUsage,
    View,
)

__all__ = [
    "ABSTAIN",
    "AskResult",
    "Budgets",
    "Cell",
    "CitedMessage",
    "CitedRecord",
    "CompactAnswer",
    "Excerpt",
    "ForgetSummary",
    "PersonMemory",
    "Projection",
    "RecordProvenance",
    "RecordVersion",
    "RosterMember",
    "Row",
    "StageUsage",
    "View",
    "answer_system1_only",
    "ask",
    "budgets_from",
    "fallback_projection",
    "forget_person",
    "person_memory",
    "project",
    "provenance",
    "read_roster",
]
