"""Slack workspace export (``--format slack``): the folder or ``.zip`` Slack's export writes.

Layout read::

    users.json                 [{"id": "U01", "name": "mei", "real_name": "Mei Tan",
                                 "profile": {"display_name": "Mei", "real_name": "Mei Tan"}, "is_bot": false}]
    channels.json              [{"id": "C01", "name": "general", ...}]   (also groups.json, mpims.json, dms.json)
    general/2025-07-01.json    [{"type": "message", "ts": "1751363999.000100", "user": "U01",
                                 "text": "hi <@U02> &lt;3", "user_profile": {"display_name": "Mei"},
                                 "thread_ts": "...", "parent_user_id": "U01", "edited": {"ts": "..."},
                                 "subtype": "channel_join" | "bot_message" | ..., "files": [...]}]

Mapping (docs/import.md):

- id ``"<channel id>:<ts>"`` (Slack's ``ts`` is unique within a channel); channel = the channel's
  name; session = the UTC day (Slack's ``ts`` is UTC; the ts is stored with ``+00:00``).
- speaker_id = ``user`` (U…); speaker = the display name as written in the message's
  ``user_profile`` (``display_name``, else ``real_name``), else from users.json (display name,
  real name, name), else the user id. A rename keeps the id, so the person.
- ``thread_ts`` other than the message's own ``ts``: reply_to = the thread's parent.
- ``edited.ts``: edited_ts. ``files``: attachments (name, mimetype); a message of files only
  has text "".
- a message of a user whose ``users.json`` entry says ``"is_bot": true`` (an app posting as its
  bot user), or of Slackbot (``USLACKBOT``, listed as no bot): kind "bot", speaker_id = the user id.
- ``subtype`` ``bot_message`` (or a ``bot_id`` without ``user``): kind "bot", speaker_id =
  ``bot_id``, speaker = ``username`` / ``bot_profile.name``. Other subtypes of platform events
  (``channel_join``, ``channel_leave``, ``channel_topic``, ``channel_purpose``, ``channel_name``,
  ``pinned_item``, ...): kind "system", speaker :data:`loaders._chat.SYSTEM_SPEAKER`, the actor
  in ``mentions``. ``thread_broadcast``, ``file_share``, ``me_message`` are a person's messages.
- A message whose ``text`` is empty takes the words of its ``blocks`` or legacy
  ``attachments`` (apps and integrations post so), else it is text-less.
- Text as Slack shows it: ``<@U02>`` -> ``@<display name>`` (U02 in ``mentions``),
  ``<#C01|general>`` -> ``#general``, ``<!here>`` -> ``@here``, ``<url|label>`` -> ``label``,
  ``<url>`` -> ``url``; then ``&lt;`` ``&gt;`` ``&amp;`` unescaped. Nothing else is changed.
"""

from __future__ import annotations

import functools
import re
import zipfile
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Attachment, Conversation
from loaders._chat import SYSTEM_ID, SYSTEM_SPEAKER, Reject, arr, obj, finish, group_from, guarded, safe_id, session_of
from loaders._common import parse_json_bytes, Draft, PathLike, existing_path, read_zip_member

__all__ = ["is_slack", "load_conversations"]

_PERSON_SUBTYPES = frozenset({"", "thread_broadcast", "file_share", "me_message", "reply_broadcast"})
_BOT_SUBTYPES = frozenset({"bot_message"})
SLACKBOT = "USLACKBOT"  # Slack's own bot user
_CHANNEL_FILES = ("channels.json", "groups.json", "mpims.json", "dms.json")
_DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
_LINK = re.compile(r"<([^<>]*)>")


class _Tree:
    """Read-only view of an export: a folder or a zip (optionally with one top folder)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.zip: zipfile.ZipFile | None = None
        self.prefix = ""
        self.problem: InvalidInputError | None = None
        if root.is_file():
            try:
                self.zip = zipfile.ZipFile(root)
            except zipfile.BadZipFile as e:
                raise InvalidInputError("not a zip file nor a folder", source=str(root), field="path") from e
            names = self.zip.namelist()
            tops = [n for n in names if PurePosixPath(n).name == "channels.json" or PurePosixPath(n).name == "users.json"]
            folders = sorted({str(PurePosixPath(n).parent).strip(".") for n in tops})
            if len(folders) > 1:  # reading one would drop the others without a word: refused on load
                self.problem = InvalidInputError(
                    f"the zip holds {len(folders)} Slack exports ({', '.join(f or '(top)' for f in folders[:4])}): "
                    "load each export on its own", source=str(root), field="path")
            if tops:
                self.prefix = folders[0] + "/" if folders[0] else ""

    def names(self) -> list[str]:
        if self.zip is not None:
            return [n[len(self.prefix):] for n in self.zip.namelist() if n.startswith(self.prefix) and not n.endswith("/")]
        return [str(p.relative_to(self.root).as_posix()) for p in self.root.rglob("*.json")]

    def read(self, name: str) -> Any:
        where = f"{self.root}:{name}" if self.zip is not None else str(self.root / name)
        if self.zip is not None:
            raw = read_zip_member(self.zip, self.prefix + name, where)
        else:
            try:
                raw = (self.root / name).read_bytes()
            except OSError as e:
                raise InvalidInputError(f"cannot read {name}: {e}", source=where, field="path") from e
        return parse_json_bytes(raw, where)

    def where(self, name: str) -> str:
        return f"{self.root}:{name}" if self.zip is not None else str(self.root / name)

    def has(self, name: str) -> bool:
        return name in set(self.names())


def is_slack(path: Path) -> bool:
    """Whether ``path`` looks like a Slack export (a folder or zip holding ``channels.json`` or
    ``users.json`` and day files)."""
    try:
        names = set(_Tree(path).names()) if path.is_dir() or zipfile.is_zipfile(path) else set()
    except InvalidInputError:
        return False
    return bool(names & {"channels.json", "users.json"})


def _ts(value: Any, *, source: str, record: str, field: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"\d+(\.\d+)?", value):
        raise InvalidInputError(f"Slack ts must be a string of epoch seconds, got {value!r:.40}",
                                source=source, record=record, field=field)
    dt = datetime.fromtimestamp(float(value), tz=timezone.utc)
    return dt.isoformat(timespec="microseconds")


def _user_name(u: dict[str, Any]) -> str:
    prof = obj(u.get("profile"))
    for v in (prof.get("display_name"), prof.get("real_name"), u.get("real_name"), u.get("name")):
        if isinstance(v, str) and v.strip():
            return v
    return ""


def render(text: str, names: dict[str, str], channels: dict[str, str]) -> tuple[str, list[str]]:
    """Slack's stored text as Slack shows it, and the user ids it mentions (first mention order).

    ``names``: user id -> display name; ``channels``: channel id -> name.
    """
    mentions: list[str] = []

    def sub(m: re.Match[str]) -> str:
        body = m.group(1)
        target, _, label = body.partition("|")
        if target.startswith("@"):
            uid = target[1:]
            if uid and uid not in mentions:
                mentions.append(uid)
            return "@" + (label or names.get(uid) or uid)
        if target.startswith("#"):
            return "#" + (label or channels.get(target[1:]) or target[1:])
        if target.startswith("!"):
            word = target[1:].split("^")[0]
            return "@" + (label or word) if word in ("here", "channel", "everyone") else (label or word)
        return label or target

    shown = _LINK.sub(sub, text)
    return shown.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"), mentions


def load_conversations(path: PathLike, group: str | None = None,
                       rejects: list[Reject] | None = None) -> list[Conversation]:
    """Read a Slack workspace export (folder or zip).

    Args:
        path: the export folder or ``.zip``.
        group: the group id (default: the folder or zip name).
        rejects: when a list, a bad message is appended to it and skipped (``--on-bad-record skip``).

    Returns:
        One :class:`Conversation`: every channel of the export, channel by channel.

    Raises:
        InvalidInputError: naming the file (``<export>/<channel>/<day>.json``), the record
            (``message N``, 0-based in the day file) and the field (``ts``, ``user``, ``text``,
            ``files``, ``json``, ...).
    """
    root = existing_path(path)
    tree = _Tree(root)
    if tree.problem is not None:
        raise tree.problem
    source = str(root)
    names_in = set(tree.names())
    if not names_in & {"channels.json", "users.json"}:
        raise InvalidInputError("not a Slack export: no channels.json or users.json", source=source, field="path")
    users: dict[str, dict[str, Any]] = {}
    if "users.json" in names_in:
        for u in tree.read("users.json") or []:
            if isinstance(u, dict) and isinstance(u.get("id"), str):
                users[u["id"]] = u
    names = {uid: _user_name(u) for uid, u in users.items()}
    # app accounts, and Slackbot (USLACKBOT: reminders, auto-responses), which users.json lists
    # with "is_bot": false
    bots = frozenset({SLACKBOT} | {uid for uid, u in users.items() if u.get("is_bot") is True})
    channel_rows: list[dict[str, Any]] = []
    for fname in _CHANNEL_FILES:
        if fname in names_in:
            channel_rows += [c for c in tree.read(fname) or [] if isinstance(c, dict)]
    channel_names = {c["id"]: c.get("name") or c["id"] for c in channel_rows if isinstance(c.get("id"), str)}
    folders: dict[str, str] = {}  # folder name -> channel id
    for c in channel_rows:
        cid = c.get("id")
        if isinstance(cid, str):
            folders[str(c.get("name") or cid)] = cid
    days_of: dict[str, list[str]] = {}  # folder -> its day files, found in one pass over the names
    for n in sorted(names_in):
        folder, sep, rest = n.partition("/")
        if sep and _DAY_FILE.match(rest):
            days_of.setdefault(folder, []).append(n)
    for n in sorted(names_in):  # a day folder not in the channel files still loads
        parts = n.split("/")
        if len(parts) == 2 and _DAY_FILE.match(parts[1]) and parts[0] not in folders:
            folders[parts[0]] = parts[0]
    gid = group_from(group, root.stem if root.is_file() else root.name, source=source)
    drafts: list[Draft] = []
    for folder, cid in folders.items():
        channel = safe_id(folder, safe_id(cid, "channel"))
        for day in days_of.get(folder, []):
            where = tree.where(day)
            items = tree.read(day)
            if not isinstance(items, list):
                err = InvalidInputError("a day file must hold a JSON list of messages", source=where, field="json")
                if rejects is None:
                    raise err
                rejects.append(Reject(where, "", "json", err.reason, items))
                continue
            for i, raw in enumerate(items):
                d = guarded(rejects, raw, functools.partial(
                    _draft, raw, i, where, gid, cid, channel, names, channel_names, len(drafts), bots))
                if d is not None:
                    drafts.append(d)
    return finish(gid, gid, drafts, source=source, rejects=rejects)


def _block_text(raw: dict[str, Any]) -> str:
    """The words of a message whose ``text`` is empty: its ``blocks`` (rich text, section and
    header texts, context elements) or else its legacy ``attachments`` (``pretext``, ``title``,
    ``text``, else ``fallback``), in Slack's markup (rendered like ``text``); "" when none.

    An attachment that shares or unfurls another message (``is_share``, ``is_msg_unfurl``, or
    one with an ``author_id``) holds that message's author's words, not the poster's: it is
    left out, so a shared message without comment stays text-less. Parts of another type than
    Slack writes are passed over; rich text is read 8 levels deep (Slack nests 4)."""
    parts: list[str] = []

    def rich(el: Any, depth: int) -> None:
        if not isinstance(el, dict) or depth > 8:
            return
        kind = el.get("type")
        if kind in ("text", "emoji") and isinstance(el.get("text" if kind == "text" else "name"), str):
            parts.append(el["text"] if kind == "text" else f":{el['name']}:")
        elif kind == "link" and isinstance(el.get("url"), str):
            parts.append(f"<{el['url']}|{el['text']}>" if isinstance(el.get("text"), str) else f"<{el['url']}>")
        elif kind == "user" and isinstance(el.get("user_id"), str):
            parts.append(f"<@{el['user_id']}>")
        elif kind == "channel" and isinstance(el.get("channel_id"), str):
            parts.append(f"<#{el['channel_id']}>")
        elif kind == "broadcast" and isinstance(el.get("range"), str):
            parts.append(f"<!{el['range']}>")
        for child in arr(el.get("elements")):
            rich(child, depth + 1)
        if kind in ("rich_text_section", "rich_text_preformatted", "rich_text_quote"):
            parts.append("\n")

    def line(value: Any) -> None:
        if isinstance(value, str) and value.strip():
            parts.append(value + "\n")

    for block in map(obj, arr(raw.get("blocks"))):
        if block.get("type") == "rich_text":
            rich(block, 0)
        line(obj(block.get("text")).get("text"))  # section, header
        for el in arr(block.get("fields")):
            line(obj(el).get("text"))
        if block.get("type") == "context":
            for el in arr(block.get("elements")):
                line(obj(el).get("text"))
    if not "".join(parts).strip():
        for a in map(obj, arr(raw.get("attachments"))):
            if a.get("is_share") or a.get("is_msg_unfurl") or a.get("author_id"):
                continue
            words = [a[k] for k in ("pretext", "title", "text") if isinstance(a.get(k), str) and a[k].strip()]
            if not words and isinstance(a.get("fallback"), str):
                words = [a["fallback"]]
            parts.extend(w + "\n" for w in words)
    return "".join(parts).strip()


def _draft(raw: Any, i: int, where: str, gid: str, cid: str, channel: str, names: dict[str, str],
           channel_names: dict[str, str], position: int, bots: frozenset[str] = frozenset()) -> Draft | None:
    record = f"message {i}"

    def bad(field: str, why: str) -> InvalidInputError:
        return InvalidInputError(why, source=where, record=record, field=field)

    if not isinstance(raw, dict):
        raise bad("json", f"expected a JSON object, got {type(raw).__name__}")
    if raw.get("type", "message") != "message":
        return None
    ts = _ts(raw.get("ts"), source=where, record=record, field="ts")
    record = f"message {raw['ts']}"
    text = raw.get("text", "")
    if not isinstance(text, str):
        raise bad("text", f"text must be a string, got {type(text).__name__}")
    subtype = raw.get("subtype") or ""
    if not isinstance(subtype, str):
        raise bad("subtype", "subtype must be a string")
    user = raw.get("user")
    if user is not None and not isinstance(user, str):
        raise bad("user", f"user must be a string, got {type(user).__name__}")
    prof = obj(raw.get("user_profile"))
    if not text.strip():  # words held only in blocks or legacy attachments (apps, integrations)
        text = _block_text(raw)
    shown, mentions = render(text, names, channel_names)
    files = raw.get("files") or []
    if not isinstance(files, list):
        raise bad("files", "files must be a list")
    attachments = []
    for j, f in enumerate(files):
        if not isinstance(f, dict):
            raise bad(f"files.{j}", "a file must be an object")
        name = f.get("name") or f.get("title") or f.get("id") or ""
        attachments.append(Attachment(name=str(name), media_type=str(f.get("mimetype") or f.get("filetype") or "")))
    kind: Literal["", "bot", "system"] = ""
    if subtype in _BOT_SUBTYPES or (raw.get("bot_id") and not user):
        kind = "bot"
        bot_prof = obj(raw.get("bot_profile"))
        speaker_id = str(raw.get("bot_id") or user or "bot")
        speaker = str(raw.get("username") or bot_prof.get("name") or speaker_id)
    elif subtype not in _PERSON_SUBTYPES:
        kind = "system"
        speaker_id, speaker = SYSTEM_ID, SYSTEM_SPEAKER
        if user and user not in mentions:
            mentions.insert(0, user)
    else:
        if not user:
            raise bad("user", "a person's message needs a user id")
        speaker_id = user
        speaker = next((v for v in (prof.get("display_name"), prof.get("real_name")) if isinstance(v, str) and v.strip()),
                       "") or names.get(user) or user
        if user in bots:  # an app posting as its bot user (users.json "is_bot": true): not a person's words
            kind = "bot"
    thread = raw.get("thread_ts")
    reply_to = ""
    if isinstance(thread, str) and thread and thread != raw["ts"]:
        reply_to = f"{cid}:{thread}"
    edited_raw = raw.get("edited")
    edited = edited_raw if isinstance(edited_raw, dict) else None
    edited_ts = _ts(edited["ts"], source=where, record=record, field="edited.ts") if edited and edited.get("ts") else ""
    return Draft(
        id=f"{cid}:{raw['ts']}", group_id=gid, channel=channel, session=f"{channel}/{session_of(ts)}",
        speaker=speaker, speaker_id=speaker_id, text=shown, ts=ts.replace("+00:00", "+00:00"),
        instant=float(raw["ts"]), reply_to=reply_to, source_ref=f"{where}#{record}", position=position,
        kind=kind, attachments=tuple(attachments), mentions=tuple(mentions), edited_ts=edited_ts,
        edited=edited is not None,
    )
