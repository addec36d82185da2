"""The redelivery rule: when a repeated message id is the same message (docs/reliability.md, Edits).

A message id that comes again, in the same input or after it is stored, may only repeat the
message or change its text (an edit). One rule decides what "the same message" is, for the
ingest's check against the store (:mod:`graphmem.verbatim.ingest`), its check inside one input
(``validate``) and the loaders' check inside one file (:func:`loaders._common.unique_id_errors`):

- the person: its ``speaker_id`` exactly when it has one (a display name that changes under the
  same platform id is a rename, not another speaker), else the display name by its identity
  form (:func:`graphmem.core.limits.identity_form`: any spelling of it);
- channel, session, reply_to, and ts compared as instants;
- not a difference: the same instant in another UTC offset (and so maybe another day's
  session); a time without offset and the same local time with one (and its session); a reply
  link on one side and none on the other. The message keeps what it was first given or stored
  with.
"""

from __future__ import annotations

from typing import Any, Protocol

from graphmem.core import limits, times

__all__ = ["FIXED_FIELDS", "first_difference", "fixed_fields", "stored_fixed_fields"]

#: Fields a redelivery must repeat exactly; only ``text`` may change (an edit). ``person`` is the
#: speaker's id (reported as field ``speaker_id``).
FIXED_FIELDS = ("speaker", "person", "channel", "ts", "session", "reply_to")


class RepeatedMessage(Protocol):
    """What the rule reads of a message: a :class:`graphmem.core.model.MessageRecord` or a
    loader's draft (``ts`` normalised ISO-8601, "" for an absent speaker_id / reply_to)."""

    speaker: str
    speaker_id: str
    session: str
    channel: str
    ts: str
    reply_to: str


def fixed_fields(m: RepeatedMessage, person: str | None = None) -> dict[str, object]:
    """The fields a redelivery of ``m`` must repeat, as :func:`first_difference` compares them.

    Args:
        m: the message.
        person: the Person id ``m`` resolves to in its group; None: a speaker_id counts exactly
            (platform ids that differ in case are two persons) and a display name by its
            identity form (any spelling of it).

    Returns:
        ``person``, ``speaker`` (None with a speaker_id: the person is the id, and a later
        export of a renamed user is a redelivery), ``session``, ``channel``, ``ts`` (epoch
        seconds), ``reply_to``, ``offset`` ("" when naive) and ``local`` (the time without it).
    """
    if person is None:
        person = m.speaker_id or limits.identity_form(limits.speaker_key(m.speaker))
    ts = times.parse_ts(m.ts)
    return {"person": person, "speaker": None if m.speaker_id else m.speaker, "session": m.session,
            "channel": m.channel, "ts": ts.instant, "reply_to": m.reply_to, **_offset_and_local(ts.text)}


def stored_fixed_fields(row: dict[str, Any]) -> dict[str, object]:
    """:func:`fixed_fields` of a stored message row (``person_id``, ``speaker``, ``speaker_id``,
    ``session``, ``channel``, ``ts``, ``reply_to``: ``cypher/ingest/stored_messages``)."""
    ts = times.parse_ts(row["ts"])
    return {"person": row["person_id"], "speaker": None if row.get("speaker_id") else row["speaker"],
            "session": row["session"], "channel": row["channel"], "ts": ts.instant,
            "reply_to": row["reply_to"], **_offset_and_local(ts.text)}


def _offset_and_local(text: str) -> dict[str, str]:
    """The UTC offset of a normalised timestamp ("" when naive) and its local time without it."""
    offset = times.offset_of(text)
    return {"offset": offset, "local": text[: -len(offset)] if offset else text}


def first_difference(a: dict[str, object], b: dict[str, object]) -> str | None:
    """The first of :data:`FIXED_FIELDS` in which ``a`` and ``b`` (:func:`fixed_fields`) differ,
    or None when they are one message.

    The same instant written in another UTC offset (an export made on a computer in another
    time zone: Discord and Telegram Desktop write local time) may fall on another local day, so
    its session (the day) may differ: that is the same message, placed where it was first.
    A time without offset is a local time of unknown zone: the same local time with an offset
    (an older Telegram export wrote no ``date_unixtime``, a newer one does) is the same
    message too. So is one with a reply link and one without (a loader that no longer reads
    a forward as a reply, a link an export did not write): the message keeps what it was
    first given or stored with."""
    naive_twin = (a["offset"] == "") != (b["offset"] == "") and a["local"] == b["local"]
    for f in FIXED_FIELDS:
        if a[f] != b[f]:
            if f == "session" and (naive_twin or (a["ts"] == b["ts"] and a["offset"] != b["offset"])):
                continue
            if f == "ts" and naive_twin:
                continue
            if f == "reply_to" and "" in (a[f], b[f]):  # one side knows no link: keep the first
                continue
            return f
    return None
