"""Benchmark and chat-format readers: parse files into typed records, never touch Neo4j.

Every loader returns :class:`graphmem.core.model.Conversation` objects (one per memory space /
group) and, where the format has them, :class:`graphmem.core.model.Question` objects.

Formats (``fmt``), one module each:

- ``jsonl``: generic chat export, one JSON object per line (:mod:`loaders.jsonl`).
- ``locomo``: LoCoMo ``locomo10.json`` (:mod:`loaders.locomo`).
- ``socialmem``: SocialMemBench network files (:mod:`loaders.socialmem`).
- ``groupmem``: GroupMemBench domain conversations and question sets (:mod:`loaders.groupmem`).
- ``evermem``: EverMemBench ``dialogues.jsonl`` / ``qars.jsonl`` (Hugging Face) or the GitHub
  evaluation layout ``dataset/<batch>/dialogue.json`` / ``qa_<batch>.json`` (:mod:`loaders.evermem`).

Conventions shared by all formats:

- ``Conversation.messages`` lists each channel's messages contiguously (channels in order of
  first appearance), each channel in conversation order; the NEXT chain links consecutive
  messages of the same channel.
- Message ids are unique within a group (not across groups: LoCoMo's ``"D1:3"`` recurs in every
  conversation), so a store with globally unique ids must qualify them with the group id.
- Text is kept exactly as received (only GroupMemBench content is HTML-unescaped, as upstream).
- Every input problem raises :class:`graphmem.core.errors.InvalidInputError` naming ``source`` (the
  file), ``record`` (line number, message id or index) and ``field``.
"""

from __future__ import annotations

from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Conversation, MessageRecord, Question
from loaders import evermem, groupmem, jsonl, locomo, records, socialmem  # noqa: F401  (records: old home, one release)
from loaders._common import PathLike, question_with_options

__all__ = [
    "FORMATS",
    "Conversation",
    "jsonl_reference",
    "MessageRecord",
    "Question",
    "load_conversations",
    "load_questions",
    "question_with_options",
]

FORMATS: tuple[str, ...] = ("jsonl", "locomo", "socialmem", "groupmem", "evermem")
"""The accepted values of ``fmt`` (the ``--format`` choices of ``graphmem ingest``)."""

_CONVERSATION_LOADERS = {
    "jsonl": jsonl.load_conversations,
    "locomo": locomo.load_conversations,
    "socialmem": socialmem.load_conversations,
    "groupmem": groupmem.load_conversations,
    "evermem": evermem.load_conversations,
}

_QUESTION_LOADERS = {
    "locomo": locomo.load_questions,
    "socialmem": socialmem.load_questions,
    "groupmem": groupmem.load_questions,
    "evermem": evermem.load_questions,
}


def _check_format(path: PathLike, fmt: str) -> None:
    if fmt not in FORMATS:
        raise InvalidInputError(
            f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", source=str(path), field="format"
        )


def load_conversations(path: PathLike, fmt: str, group: str | None = None) -> list[Conversation]:
    """Parse a file (or folder) of the given format into conversations.

    Args:
        path: input file or folder (what each format accepts is in its module).
        fmt: one of :data:`FORMATS`.
        group: for ``jsonl``, the group id given to every line (overrides the file's
            ``group``); for the benchmark formats, the one unit to load (LoCoMo
            ``sample_id``, SocialMem network id, GroupMem domain, EverMem ``evermem-<topic>``
            or ``<topic>``).

    Returns:
        One :class:`Conversation` per group, messages in conversation order.

    Raises:
        InvalidInputError: field ``format`` for an unknown ``fmt``; field ``path`` when
            nothing is at ``path``; field ``group`` when ``group`` names no unit of a benchmark
            file; otherwise the format's own errors, each naming file, record and field.
    """
    _check_format(path, fmt)
    return _CONVERSATION_LOADERS[fmt](path, group)


def load_questions(path: PathLike, fmt: str, group: str | None = None) -> list[Question]:
    """Parse the benchmark questions of a file (or folder) of the given format.

    Args:
        path: for ``locomo`` and ``socialmem`` the same file/folder as the conversations; for
            ``groupmem`` a question file, domain folder or ``questions`` folder; for ``evermem``
            ``qars.jsonl`` (with ``dialogues.jsonl`` beside it) or their folder.
        fmt: one of :data:`FORMATS` except ``jsonl`` (chat exports hold no questions).
        group: optional unit filter, as in :func:`load_conversations`.

    Returns:
        Questions in file order. Multiple-choice questions keep ``question`` and ``options``
        apart; :func:`question_with_options` renders both and the ``"C. Mei"`` gold.

    Raises:
        InvalidInputError: field ``format`` for an unknown ``fmt`` or for ``jsonl``; otherwise
            the format's own errors, each naming file, record and field.
    """
    _check_format(path, fmt)
    if fmt not in _QUESTION_LOADERS:
        raise InvalidInputError(
            f"format {fmt!r} has no questions; use one of {', '.join(_QUESTION_LOADERS)}",
            source=str(path),
            field="format",
        )
    return _QUESTION_LOADERS[fmt](path, group)


def jsonl_reference(path: PathLike, group: str | None = None) -> list[Conversation]:
    """The JSON-lines reference parser the first-load fast path falls back to
    (:data:`graphmem.verbatim.bulk_jsonl.ReferenceParser`): ``load_conversations(path, "jsonl", group)``."""
    return load_conversations(path, "jsonl", group=group)
