"""Shared parts of the platform chat-export importers (Slack, Discord, Telegram, WhatsApp).

Nothing here touches Neo4j. The importers build :class:`loaders._common.Draft` rows and hand
them to :func:`finish`, which orders them per channel and qualifies sessions. Conventions of all
four (docs/import.md):

- ``channel``: the platform's channel (Slack channel name, Discord channel name, Telegram chat
  in a multi-chat export); "" for a single-chat export (WhatsApp, a one-chat Telegram file).
- ``session``: the local calendar day of the message (``YYYY-MM-DD`` in the offset its
  timestamp carries), so a chat splits at midnight as a reader sees it.
- Bot posts are ``kind="bot"``; platform lines (joins, pins, "X added Y", encryption notices)
  are ``kind="system"`` and spoken by :data:`SYSTEM_SPEAKER`, never by the person they mention
  (that person's id is in ``mentions``).
- Bad records: with ``rejects`` (a list) given, a record that cannot be read is appended to it
  as a :class:`Reject` and skipped; without it the first one raises
  :class:`graphmem.core.errors.InvalidInputError` naming file, record and field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from graphmem.core import limits
from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Conversation
from loaders._common import Draft, Reject, assemble_messages, unique_id_errors

__all__ = ["obj", "Reject", "SYSTEM_ID", "SYSTEM_SPEAKER", "finish", "group_from", "guarded", "safe_id"]

SYSTEM_ID = "system"
"""``speaker_id`` of every system line (the platform speaking, not a person)."""
SYSTEM_SPEAKER = "system"
"""Display name of :data:`SYSTEM_ID`."""


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (an optional nested object)."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]`` (an optional nested list)."""
    return value if isinstance(value, list) else []


def guarded(rejects: list[Reject] | None, raw: Any, fn: Callable[[], Draft | None]) -> Draft | None:
    """Run ``fn`` (which builds one draft or returns None for nothing to keep); with ``rejects``
    given, an :class:`InvalidInputError` becomes a :class:`Reject` of ``raw`` and None, and the
    draft keeps ``raw`` (:attr:`Draft.raw`) for a reject of :func:`finish`.

    Raises:
        InvalidInputError: from ``fn`` when ``rejects`` is None.
    """
    if rejects is None:
        return fn()
    try:
        d = fn()
    except InvalidInputError as e:
        rejects.append(Reject(e.source or "", e.record or "", e.field or "", e.reason, raw))
        return None
    if d is not None:
        d.raw = raw
    return d


_UNSAFE = re.compile(r"[\x00-\x1f\x7f/]+")


def safe_id(value: str, fallback: str) -> str:
    """``value`` made fit for a group or channel id: ``/`` and control characters as ``-``,
    trimmed, at most :data:`graphmem.core.limits.MAX_ID_CHARS`; ``fallback`` when nothing
    valid is left."""
    text = _UNSAFE.sub("-", value).strip()[: limits.MAX_ID_CHARS].strip()
    try:
        limits.check_id(text, field="id", slash=False)
    except InvalidInputError:
        return fallback
    return text


def group_from(group: str | None, default: str, *, source: str) -> str:
    """The group id: the caller's ``group`` (checked), else ``default`` made safe.

    Raises:
        InvalidInputError: field ``group`` for a blank override.
    """
    if group is not None:
        if not group.strip():
            raise InvalidInputError("group override must not be blank", source=source, field="group")
        return group
    return safe_id(default, "chat")


def finish(gid: str, name: str, drafts: list[Draft], *, source: str,
           rejects: list[Reject] | None = None) -> list[Conversation]:
    """One conversation from ``drafts`` (channel by channel, by time, file order for ties).

    With ``rejects`` (a list), a message whose id repeats an earlier one with another speaker,
    session, channel, ts or reply_to is appended to it (its raw record) and left out.

    Raises:
        InvalidInputError: without ``rejects``, an id repeated with another speaker, session,
            channel, ts or reply_to.
    """
    refused: set[int] = set()
    for d, error in unique_id_errors(drafts, source=source, edits=True, renames=True):
        if rejects is None:
            raise error
        rejects.append(Reject(error.source or source, error.record or d.id, error.field or "id", error.reason, d.raw))
        refused.add(id(d))
    drafts = [d for d in drafts if id(d) not in refused]
    if not drafts:
        return []
    return [Conversation(group_id=gid, name=name or gid, messages=assemble_messages(drafts, by_time=True),
                         source=source)]


def session_of(ts: str) -> str:
    """The session name of a normalised timestamp: its local calendar day ``YYYY-MM-DD``."""
    return ts[:10]
