"""graphmem: speaker-centred dual-track memory for multi-party dialogue on Neo4j.

Implements the SpeakerMem-R1 method: System 1 keeps every message verbatim with its speaker,
session, turn, time and channel; System 2 holds derived Core/Profile (per person) and
Interaction/Insight (per group) records written by a Writer model and validated by code.

The public face is what ``__all__`` lists here (and what a subpackage's ``__init__`` lists in
its own ``__all__``); every other module is internal and may move without notice. Start with
:class:`Memory`::

    from graphmem import Memory, NewMessage

    with Memory.open() as mem:
        mem.append("trip", [NewMessage(id="m1", speaker="Ben", text="Ridge?", ts="2026-05-10T09:00:00Z")])
        print(mem.ask("trip", "Which trail?").evidence)

Importing ``graphmem`` is cheap: the names load on first use (PEP 562), so ``import graphmem``
pulls in neither the database driver nor the embedding model.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from graphmem import _moved as _moved

__version__ = "0.1.0"

#: public name -> the module it lives in
_EXPORTS: dict[str, str] = {
    # the facade and what it runs on
    "Memory": "graphmem.facade",
    "Runtime": "graphmem.runtime",
    "Settings": "graphmem.core.config",
    # input and stored types
    "NewMessage": "graphmem.core.wire",
    "Conversation": "graphmem.core.model",
    "MessageRecord": "graphmem.core.model",
    "StoredMessage": "graphmem.core.model",
    "Projection": "graphmem.core.model",
    "DerivedRecord": "graphmem.derived.memory",
    # results
    "IngestSummary": "graphmem.verbatim.ingest",
    "MessageHit": "graphmem.recall.search",
    "SearchResult": "graphmem.recall.search",
    "AskResult": "graphmem.query.types",
    "Budgets": "graphmem.query.types",
    "PersonMemory": "graphmem.query.people",
    "RecordProvenance": "graphmem.query.people",
    "RosterMember": "graphmem.verbatim.roster",
    "ForgetSummary": "graphmem.groups.service",
    "GroupForgetSummary": "graphmem.core.results",
    # pages of the lists (graphmem.core.paging)
    "RosterPage": "graphmem.core.results",
    "GroupsPage": "graphmem.core.results",
    "GroupInfo": "graphmem.core.results",
    "JobsPage": "graphmem.core.results",
    "FullMessage": "graphmem.core.results",
    # the error tree
    "GraphMemError": "graphmem.core.errors",
    "InvalidInputError": "graphmem.core.errors",
    "NotFoundError": "graphmem.core.errors",
    "ForbiddenError": "graphmem.core.errors",
    "ConflictError": "graphmem.core.errors",
    "StoreUnavailableError": "graphmem.core.errors",
    "LocalServerError": "graphmem.core.errors",
    "LLMError": "graphmem.core.errors",
    "EmbeddingSpaceError": "graphmem.core.errors",
    "ModelFileError": "graphmem.core.errors",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from graphmem.core.config import Settings
    from graphmem.core.errors import (
        ConflictError,
        EmbeddingSpaceError,
        ForbiddenError,
        GraphMemError,
        InvalidInputError,
        LLMError,
        LocalServerError,
        ModelFileError,
        NotFoundError,
        StoreUnavailableError,
    )
    from graphmem.core.model import Conversation, MessageRecord, Projection, StoredMessage
    from graphmem.core.results import FullMessage, GroupForgetSummary, GroupInfo, GroupsPage, JobsPage, RosterPage
    from graphmem.core.wire import NewMessage
    from graphmem.derived.memory import DerivedRecord
    from graphmem.facade import Memory
    from graphmem.groups.service import ForgetSummary
    from graphmem.query.people import PersonMemory, RecordProvenance
    from graphmem.query.types import AskResult, Budgets
    from graphmem.recall.search import MessageHit, SearchResult
    from graphmem.runtime import Runtime
    from graphmem.verbatim.ingest import IngestSummary
    from graphmem.verbatim.roster import RosterMember


def __getattr__(name: str) -> Any:
    """Load a public name on first use (and keep it: the next read is a plain attribute)."""
    home = _EXPORTS.get(name)
    if home is None:
        raise AttributeError(f"module 'graphmem' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


_moved.install()
