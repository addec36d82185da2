"""Telegram Desktop export (``--format telegram``): ``result.json`` in the JSON export format.

Layout read: one chat ``{"name", "type", "id", "messages": [...]}`` or a full export
``{"chats": {"list": [chat, ...]}}`` (``left_chats`` too). A message::

    {"id": 12, "type": "message" | "service", "date": "2025-07-01T23:59:30",
     "date_unixtime": "1751407170", "edited": "...", "edited_unixtime": "...",
     "from": "Mei", "from_id": "user111", "reply_to_message_id": 11,
     "text": "plain" | ["plain", {"type": "mention_name", "text": "Ben", "user_id": 222}, ...],
     "photo": "photos/photo_1.jpg", "file": "files/a.pdf", "media_type": "sticker",
     "mime_type": "image/webp", "actor": "Mei", "actor_id": "user111", "action": "invite_members"}

Mapping (docs/import.md): id = the message id (unique within a chat; in a multi-chat export
``"<chat id>:<id>"``); channel "" for one chat, else the chat's name (made id-safe) or id;
ts = ``date`` with the offset recovered from ``date_unixtime`` (Telegram writes the exporting
machine's local time without offset; the difference to the epoch seconds is that offset), else
``date`` as written; session = the local day; speaker_id = ``from_id``, speaker = ``from`` as
written (a deleted account has ``from`` null: the id stands); reply_to from
``reply_to_message_id`` (none with ``reply_to_peer_id``: a reply to another chat's message); ``edited`` -> edited_ts; text = the entities' texts joined (a string
stays as is); ``mention_name`` entities' ``user_id`` -> mentions (``user<id>``), ``mention``
entities (``@name``) are kept as text; ``photo`` / ``file`` with ``media_type`` / ``mime_type``
-> attachments; ``type: "service"`` -> kind "system" (text = the entities, else the
``action`` with its actor and members), the actor in mentions; ``via_bot`` -> kind "bot".
A forwarded message (``forwarded_from``) is another author's words passed on: its text is led
by ``[forwarded from <name>]`` (``[forwarded]`` when the origin is hidden), so no reader, Writer
or answer model takes it for the sender's own claim. A poll without text is
``[poll: <question>]``; a bare number ``from_id`` (older exports) is ``user<number>``.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

from graphmem.core import times
from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Attachment, Conversation
from loaders._chat import SYSTEM_ID, SYSTEM_SPEAKER, Reject, finish, group_from, guarded, safe_id, session_of
from loaders._common import read_json_file, Draft, PathLike, existing_path

__all__ = ["is_telegram", "load_conversations"]


def _chats(data: Any) -> list[dict[str, Any]] | None:
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("chats"), dict):
        out = [c for c in data["chats"].get("list") or [] if isinstance(c, dict)]
        left = data.get("left_chats")
        if isinstance(left, dict):
            out += [c for c in left.get("list") or [] if isinstance(c, dict)]
        return out
    if isinstance(data.get("messages"), list) and "guild" not in data and ("type" in data or "id" in data):
        return [data]
    return None


def looks_like(data: Any) -> bool:
    """Whether decoded JSON is a Telegram Desktop export."""
    return _chats(data) is not None


def is_telegram(path: Path) -> bool:
    """Whether ``path`` is a Telegram Desktop ``result.json`` (or a folder holding one)."""
    f = path / "result.json" if path.is_dir() else path
    try:
        return f.is_file() and looks_like(read_json_file(f))
    except (InvalidInputError, OSError):
        return False


def load_conversations(path: PathLike, group: str | None = None,
                       rejects: list[Reject] | None = None) -> list[Conversation]:
    """Read a Telegram Desktop JSON export.

    Args:
        path: ``result.json`` or the export folder holding it.
        group: the group id (default: the chat's name for one chat, else ``telegram``).
        rejects: when a list, a bad message is appended to it and skipped.

    Returns:
        One :class:`Conversation` (every chat of a full export is a channel of it).

    Raises:
        InvalidInputError: naming the file, the record (``message <id>`` or ``messages[N]``)
            and the field (``date``, ``from_id``, ``text``, ...).
    """
    root = existing_path(path)
    f = root / "result.json" if root.is_dir() else root
    source = str(f)
    data = read_json_file(f)  # read once: a Telegram export can be hundreds of MB
    chats = _chats(data)
    if chats is None:
        raise InvalidInputError("not a Telegram Desktop export (no messages nor chats list)", source=source,
                                field="json")
    single = len(chats) == 1 and not (isinstance(data, dict) and "chats" in data)
    first_name = str(chats[0].get("name") or chats[0].get("id") or "telegram") if chats else "telegram"
    gid = group_from(group, first_name if single else "telegram", source=source)
    drafts: list[Draft] = []
    for chat in chats:
        chat_id = str(chat.get("id") or "")
        channel = "" if single else safe_id(str(chat.get("name") or ""), safe_id(chat_id, "chat"))
        prefix = "" if single else f"{chat_id}:"
        for i, raw in enumerate(chat.get("messages") or []):
            d = guarded(rejects, raw, functools.partial(_draft, raw, i, source, gid, channel, prefix, len(drafts)))
            if d is not None:
                drafts.append(d)
    return finish(gid, first_name if single else gid, drafts, source=source, rejects=rejects)


def _local_ts(date: Any, unix: Any, *, where: str, record: str, field: str) -> times.ParsedTs:
    """``date`` (local, no offset) with the offset that ``unix`` (epoch seconds) implies."""
    naive = times.parse_ts(date, source=where, record=record, field=field)
    if isinstance(unix, str) and unix.isdigit():
        local = datetime.fromisoformat(naive.text)
        utc = datetime.fromtimestamp(int(unix), tz=timezone.utc).replace(tzinfo=None)
        minutes = round((local - utc).total_seconds() / 60)
        if abs(minutes) <= 14 * 60 and minutes % 15 == 0:
            aware = local.replace(tzinfo=timezone(timedelta(minutes=minutes)))
            return times.parse_ts(aware.isoformat(), source=where, record=record, field=field)
    return naive


def _text(value: Any, *, where: str, record: str) -> tuple[str, list[str]]:
    if isinstance(value, str):
        return value, []
    if not isinstance(value, list):
        raise InvalidInputError(f"text must be a string or a list of entities, got {type(value).__name__}",
                                source=where, record=record, field="text")
    parts: list[str] = []
    mentions: list[str] = []
    for j, e in enumerate(value):
        if isinstance(e, str):
            parts.append(e)
        elif isinstance(e, dict) and isinstance(e.get("text"), str):
            parts.append(e["text"])
            if e.get("type") == "mention_name" and e.get("user_id") is not None:
                mentions.append(f"user{e['user_id']}")
        else:
            raise InvalidInputError("a text entity must be a string or an object with a text",
                                    source=where, record=record, field=f"text.{j}")
    return "".join(parts), mentions


def _draft(raw: Any, i: int, where: str, gid: str, channel: str, prefix: str, position: int) -> Draft:
    record = f"messages[{i}]"
    if not isinstance(raw, dict):
        raise InvalidInputError(f"expected a JSON object, got {type(raw).__name__}", source=where, record=record,
                                field="json")
    if not isinstance(raw.get("id"), int) or isinstance(raw.get("id"), bool):
        raise InvalidInputError("message id must be an integer", source=where, record=record, field="id")
    record = f"message {prefix}{raw['id']}"
    ts = _local_ts(raw.get("date"), raw.get("date_unixtime"), where=where, record=record, field="date")
    text, mentions = _text(raw.get("text", ""), where=where, record=record)
    attachments = []
    for key in ("photo", "file"):
        if isinstance(raw.get(key), str):
            media = raw.get("media_type") or raw.get("mime_type") or ("photo" if key == "photo" else "")
            # an export without media writes "(File not included. Change data exporting settings
            # to download.)" where the file's path would be: no file name
            fname = "" if raw[key].startswith("(File ") else raw[key]
            attachments.append(Attachment(name=fname, media_type=str(media)))
    kind: Literal["", "bot", "system"] = ""
    if raw.get("type") == "service":
        kind = "system"
        actor = raw.get("actor_id")
        if isinstance(actor, str) and actor not in mentions:
            mentions.insert(0, actor)
        if not text.strip():
            got = raw.get("members")
            members: list[Any] = got if isinstance(got, list) else []
            bits = [str(raw.get("actor") or ""), str(raw.get("action") or ""), *[str(m) for m in members if m]]
            if isinstance(raw.get("title"), str) and raw["title"].strip():  # a group made or renamed
                bits.append(f'"{raw["title"]}"')
            text = " ".join(b for b in bits if b)
        speaker_id, speaker = SYSTEM_ID, SYSTEM_SPEAKER
    else:
        fid = raw.get("from_id")
        if isinstance(fid, int) and not isinstance(fid, bool):
            fid = f"user{fid}"  # older exports write the bare number; newer ones "user<number>"
        if not isinstance(fid, str) or not fid:
            raise InvalidInputError("from_id must be a non-empty string", source=where, record=record, field="from_id")
        speaker_id = fid
        name = raw.get("from")
        speaker = name if isinstance(name, str) and name.strip() else fid
        if raw.get("via_bot"):
            kind = "bot"
        poll = raw.get("poll")
        if isinstance(poll, dict) and isinstance(poll.get("question"), str) and not text.strip():
            text = f"[poll: {poll['question']}]"
        if "forwarded_from" in raw:  # another author's words, passed on: never the sender's own claim
            origin = raw.get("forwarded_from")
            mark = f"[forwarded from {origin}]" if isinstance(origin, str) and origin.strip() else "[forwarded]"
            text = f"{mark} {text}" if text else mark
    reply = raw.get("reply_to_message_id")
    if raw.get("reply_to_peer_id"):  # written only for a reply to a message of another chat, whose
        reply = None                   # id is not this chat's message (this chat may have its own)
    edited_ts = ""
    if raw.get("edited"):
        edited_ts = _local_ts(raw["edited"], raw.get("edited_unixtime"), where=where, record=record,
                              field="edited").text
    return Draft(
        id=f"{prefix}{raw['id']}", group_id=gid, channel=channel,
        session=f"{channel}/{session_of(ts.text)}" if channel else session_of(ts.text),
        speaker=speaker, speaker_id=speaker_id, text=text, ts=ts.text, instant=ts.instant,
        reply_to=f"{prefix}{reply}" if isinstance(reply, int) and reply != raw["id"] else "",
        source_ref=f"{where}#{record}", position=position, kind=kind, attachments=tuple(attachments),
        mentions=tuple(dict.fromkeys(mentions)), edited_ts=edited_ts, edited=bool(edited_ts),
    )
