"""Discord as exported by DiscordChatExporter (``--format discord``): its JSON export of a channel.

Layout read (one file per channel, or a folder of them)::

    {"guild": {"id": "9", "name": "Trip"}, "channel": {"id": "42", "name": "general", ...},
     "messages": [{"id": "1001", "type": "Default" | "Reply" | "GuildMemberJoin" | ...,
                   "timestamp": "2025-07-01T23:59:30.123+02:00", "timestampEdited": null,
                   "content": "hi @Ben", "author": {"id": "7", "name": "mei", "nickname": "Mei",
                   "isBot": false}, "attachments": [{"id": "5", "fileName": "a.png", ...}],
                   "stickers": [{"id": "3", "name": "wave"}], "mentions": [{"id": "8", ...}],
                   "reference": {"messageId": "1000", "channelId": "42"}}]}

Mapping (docs/import.md): one group per server (``guild.id``; direct messages are a server of
their own); id = Discord's message id; channel = the channel's name (made id-safe; two channels
of one name in two categories share it: a name made unique from the files present would change
with them, and refuse a later export of one of the two);
session = the local day of ``timestamp`` (its offset kept); speaker_id = ``author.id``, speaker =
``author.nickname`` (the name shown in the server), else ``author.name``; reply_to =
``reference.messageId`` when ``reference.channelId`` is the export's channel (a reference into
another channel is a forward, not a reply; a thread's ThreadStarterMessage keeps its link to
the parent channel's message; one naming the message itself is refused, field ``reply_to``);
``timestampEdited`` = edited_ts; attachments = ``attachments`` (``fileName``, type from the
extension) and ``stickers`` (``sticker``); ``mentions`` = the mentioned users' ids (the text
keeps ``@Name`` as exported); ``author.isBot`` -> kind "bot"; a ``type`` other than Default /
Reply / ThreadStarterMessage (joins, pins, calls, thread creation, ...) -> kind "system" spoken
by the system, its author in ``mentions``. Text is ``content`` as exported, byte for byte.
"""

from __future__ import annotations

import functools
import mimetypes
from pathlib import Path
from typing import Any, Literal

from graphmem.core import times
from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Attachment, Conversation
from loaders._chat import SYSTEM_ID, SYSTEM_SPEAKER, Reject, obj, finish, group_from, guarded, safe_id, session_of
from loaders._common import read_json_file, Draft, PathLike, existing_path

__all__ = ["is_discord", "load_conversations"]

_PERSON_TYPES = frozenset({"Default", "Reply", "ThreadStarterMessage", "ChatInputCommand", "ContextMenuCommand"})


def looks_like(data: Any) -> bool:
    """Whether decoded JSON is a DiscordChatExporter export."""
    return isinstance(data, dict) and isinstance(data.get("messages"), list) and isinstance(data.get("channel"), dict) \
        and "guild" in data


def is_discord(path: Path) -> bool:
    """Whether ``path`` is a DiscordChatExporter JSON file (or a folder of them)."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    try:
        return bool(files) and all(looks_like(read_json_file(f)) for f in files[:3])
    except (InvalidInputError, OSError):
        return False


def load_conversations(path: PathLike, group: str | None = None,
                       rejects: list[Reject] | None = None) -> list[Conversation]:
    """Read DiscordChatExporter JSON exports (a file, or a folder of one file per channel).

    Args:
        path: the ``.json`` file or a folder of them.
        group: the group id (default: the guild's name, else the file name).
        rejects: when a list, a bad message is appended to it and skipped.

    Returns:
        One :class:`Conversation` with every channel of the files, channel by channel.

    Raises:
        InvalidInputError: naming the file, the record (``message <id>`` or ``messages[N]``)
            and the field (``timestamp``, ``author.id``, ``content``, ...).
    """
    root = existing_path(path)
    files = sorted(root.glob("*.json")) if root.is_dir() else [root]
    # one conversation per server (guild id): a folder holding exports of two servers, or of a
    # server and of direct messages, is two groups, never one
    servers: dict[str, tuple[str, list[tuple[Path, dict[str, Any]]]]] = {}
    for f in files:
        data = read_json_file(f)
        if not looks_like(data):
            raise InvalidInputError("not a DiscordChatExporter JSON export (no guild, channel and messages)",
                                    source=str(f), field="json")
        guild = obj(data.get("guild"))
        key = str(guild.get("id") or guild.get("name") or f.stem)
        servers.setdefault(key, (str(guild.get("name") or f.stem), []))[1].append((f, data))
    if group is not None and len(servers) > 1:
        names = ", ".join(f"{name!r} (guild {key})" for key, (name, _) in servers.items())
        raise InvalidInputError(
            f"the exports are of {len(servers)} servers or direct-message lists ({names}): load each "
            "into its own group (one --group per run), or leave out --group to make one group per server",
            source=str(root), field="guild")
    out: list[Conversation] = []
    for name, exports in servers.values():
        gid = group_from(group, name, source=str(root))
        drafts: list[Draft] = []
        for f, data in exports:
            ch = data["channel"]
            channel = safe_id(str(ch.get("name") or ""), safe_id(str(ch.get("id") or ""), "channel"))
            for i, raw in enumerate(data["messages"]):
                d = guarded(rejects, raw, functools.partial(_draft, raw, i, str(f), gid, channel, len(drafts),
                                                            str(ch.get("id") or "")))
                if d is not None:
                    drafts.append(d)
        out.extend(finish(gid, name, drafts, source=str(root), rejects=rejects))
    return out


def _draft(raw: Any, i: int, where: str, gid: str, channel: str, position: int, channel_id: str = "") -> Draft:
    record = f"messages[{i}]"

    def bad(field: str, why: str) -> InvalidInputError:
        return InvalidInputError(why, source=where, record=record, field=field)

    if not isinstance(raw, dict):
        raise bad("json", f"expected a JSON object, got {type(raw).__name__}")
    mid = raw.get("id")
    if not isinstance(mid, str) or not mid.strip():
        raise bad("id", "message id must be a non-empty string")
    record = f"message {mid}"
    ts = times.parse_ts(raw.get("timestamp"), source=where, record=record, field="timestamp")
    author = raw.get("author")
    if not isinstance(author, dict) or not isinstance(author.get("id"), str) or not author["id"]:
        raise bad("author.id", "author.id must be a non-empty string")
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise bad("content", f"content must be a string, got {type(content).__name__}")
    mentions = [str(m["id"]) for m in raw.get("mentions") or [] if isinstance(m, dict) and m.get("id")]
    attachments = []
    for j, a in enumerate(raw.get("attachments") or []):
        if not isinstance(a, dict):
            raise bad(f"attachments.{j}", "an attachment must be an object")
        fname = str(a.get("fileName") or a.get("url") or a.get("id") or "")
        attachments.append(Attachment(name=fname, media_type=mimetypes.guess_type(fname)[0] or ""))
    for s in raw.get("stickers") or []:
        if isinstance(s, dict):
            attachments.append(Attachment(name=str(s.get("name") or s.get("id") or ""), media_type="sticker"))
    mtype = raw.get("type", "Default")
    kind: Literal["", "bot", "system"] = ""
    nick = author.get("nickname")
    speaker = nick if isinstance(nick, str) and nick.strip() else str(author.get("name") or author["id"])
    speaker_id = author["id"]
    if mtype not in _PERSON_TYPES:
        kind = "system"
        if speaker_id not in mentions:
            mentions.insert(0, speaker_id)
        speaker_id, speaker = SYSTEM_ID, SYSTEM_SPEAKER
    elif author.get("isBot") is True:
        kind = "bot"
    ref = obj(raw.get("reference"))
    reply_to = str(ref.get("messageId") or "") if mtype == "Reply" or ref.get("messageId") else ""
    # a reference into another channel is a forward (Discord replies stay in their channel),
    # except a thread's first message, which points at the message in the parent channel
    # that opened the thread
    here = str(raw.get("channelId") or channel_id)
    # (DiscordChatExporter writes a kind it has no name for as its number: 21 is a thread starter)
    if ref.get("channelId") and here and str(ref["channelId"]) != here and mtype not in ("ThreadStarterMessage", "21"):
        reply_to = ""
    if reply_to == mid:  # a self-loop REPLY_TO: refused by every format (docs/reliability.md, Ids)
        raise bad("reply_to", f"message {mid!r} replies to itself (reference.messageId is its own id)")
    edited_raw = raw.get("timestampEdited")
    edited_ts = times.parse_ts(edited_raw, source=where, record=record, field="timestampEdited").text \
        if edited_raw else ""
    return Draft(
        id=mid, group_id=gid, channel=channel, session=f"{channel}/{session_of(ts.text)}", speaker=speaker,
        speaker_id=speaker_id, text=content, ts=ts.text, instant=ts.instant,
        reply_to=reply_to, source_ref=f"{where}#{record}", position=position,
        kind=kind, attachments=tuple(attachments), mentions=tuple(dict.fromkeys(mentions)), edited_ts=edited_ts,
        edited=bool(edited_ts),
    )
