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
- Platform chat exports, as the platforms write them (docs/import.md): ``slack`` (workspace
  export folder or zip, :mod:`loaders.slack`), ``discord`` (DiscordChatExporter JSON,
  :mod:`loaders.discord`), ``telegram`` (Telegram Desktop ``result.json``,
  :mod:`loaders.telegram`), ``whatsapp`` ("Export chat" text, :mod:`loaders.whatsapp`).
- ``auto``: :func:`detect_format` picks one of the above from the file or folder.

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
from loaders import discord, slack, telegram, whatsapp
from loaders._common import PathLike, Reject, existing_path, question_with_options

__all__ = [
    "FORMATS",
    "CHAT_FORMATS",
    "Conversation",
    "Reject",
    "detect_format",
    "jsonl_reference",
    "MessageRecord",
    "Question",
    "load_conversations",
    "load_questions",
    "question_with_options",
]

CHAT_FORMATS: tuple[str, ...] = ("slack", "discord", "telegram", "whatsapp")
"""The platform chat-export formats (docs/import.md)."""
FORMATS: tuple[str, ...] = ("jsonl", "locomo", "socialmem", "groupmem", "evermem", *CHAT_FORMATS, "auto")
"""The accepted values of ``fmt`` (the ``--format`` choices of ``graphmem ingest``)."""

#: Formats that can skip bad records into a rejects list (``--on-bad-record skip``).
TOLERANT_FORMATS: tuple[str, ...] = ("jsonl", *CHAT_FORMATS)

_CONVERSATION_LOADERS = {
    "jsonl": jsonl.load_conversations,
    "locomo": locomo.load_conversations,
    "socialmem": socialmem.load_conversations,
    "groupmem": groupmem.load_conversations,
    "evermem": evermem.load_conversations,
}
_CHAT_LOADERS = {
    "jsonl": jsonl.load_conversations,
    "slack": slack.load_conversations,
    "discord": discord.load_conversations,
    "telegram": telegram.load_conversations,
    "whatsapp": whatsapp.load_conversations,
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


def detect_format(path: PathLike) -> str:
    """The chat format of a file or folder, by its layout (not its name alone).

    - a folder or zip holding ``users.json`` / ``channels.json``: ``slack``;
    - JSON with ``guild``, ``channel`` and ``messages``: ``discord``;
    - JSON with ``chats.list``, or one chat with ``messages`` (``result.json``): ``telegram``;
    - text (or a zip of text) starting with a WhatsApp date line: ``whatsapp``;
    - a ``.jsonl`` file: ``jsonl``.

    Raises:
        InvalidInputError: field ``path`` when nothing is there; field ``format`` when no
            layout matches (name the format with ``--format``).
    """
    p = existing_path(path)
    if slack.is_slack(p):
        return "slack"
    if discord.is_discord(p):
        return "discord"
    if telegram.is_telegram(p):
        return "telegram"
    if whatsapp.is_whatsapp(p):
        return "whatsapp"
    if p.is_file() and p.suffix == ".jsonl":
        return "jsonl"
    raise InvalidInputError(
        "cannot tell the format (not a Slack, Discord, Telegram or WhatsApp export, nor .jsonl); "
        f"give --format (one of {', '.join(f for f in FORMATS if f != 'auto')})",
        source=str(path), field="format")


def load_conversations(path: PathLike, fmt: str, group: str | None = None,
                       rejects: list[Reject] | None = None) -> list[Conversation]:
    """Parse a file (or folder) of the given format into conversations.

    Args:
        path: input file or folder (what each format accepts is in its module).
        fmt: one of :data:`FORMATS` (``auto``: :func:`detect_format`).
        group: for ``jsonl``, the group id given to every line (overrides the file's
            ``group``); for the chat exports the group id (default: from the export's name);
            for the benchmark formats, the one unit to load (LoCoMo
            ``sample_id``, SocialMem network id, GroupMem domain, EverMem ``evermem-<topic>``
            or ``<topic>``).
        rejects: when a list (``--on-bad-record skip``), every record that cannot be read is
            appended to it as a :class:`Reject` (file, record, field, rule, raw record) and the
            rest loads; only for :data:`TOLERANT_FORMATS`.

    Returns:
        One :class:`Conversation` per group, messages in conversation order.

    Raises:
        InvalidInputError: field ``format`` for an unknown ``fmt`` (or ``auto`` finding none,
            or ``rejects`` with a benchmark format); field ``path`` when nothing is at
            ``path``; field ``group`` when ``group`` names no unit of a benchmark
            file; otherwise the format's own errors, each naming file, record and field.
    """
    _check_format(path, fmt)
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt in _CHAT_LOADERS:
        try:
            return _CHAT_LOADERS[fmt](path, group, rejects)
        except InvalidInputError as e:
            raise _with_format_hint(e, path, fmt) from e.__cause__
    if rejects is not None:
        raise InvalidInputError(
            f"skipping bad records is supported for {', '.join(TOLERANT_FORMATS)}, not {fmt!r} "
            "(a benchmark file is loaded whole or not at all)", source=str(path), field="on_bad_record")
    return _CONVERSATION_LOADERS[fmt](path, group)


def _with_format_hint(e: InvalidInputError, path: PathLike, fmt: str) -> InvalidInputError:
    """``e`` saying which format ``path`` is, when a chat loader refused the whole input (no
    record named, or WhatsApp's text before the first message line) and the input's layout is
    another format's (``--format slack`` given a WhatsApp ``.txt``); else ``e`` itself."""
    if e.field not in ("path", "json", "line", "guild") or (e.record and e.field != "line"):
        return e
    try:
        found = detect_format(path)
    except InvalidInputError:
        return e
    if found == fmt:
        return e
    hinted = InvalidInputError(f"{e.reason}; it reads as a {found} export: load it as {found} (--format {found}, "
                               "or auto)", source=e.source, record=e.record, field=e.field)
    hinted.value = e.value
    return hinted


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
    if fmt == "auto":
        fmt = detect_format(path)
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
