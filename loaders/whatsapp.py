"""WhatsApp "Export chat" text (``--format whatsapp``): the ``.txt`` (or the ``.zip`` holding it).

Line formats read (a message starts with a date line; other lines continue the message before)::

    Android:  01/07/2025, 23:59 - Mei: text            (24-hour)
              7/1/25, 11:59 PM - Mei: text             (12-hour, month first; U+202F before PM too)
              01.07.25, 23:59 - Mei added Ben          (a system line: no "name: ")
    iOS:      [01/07/2025, 23:59:05] Mei: text
              \u200e[1/7/25, 11:59:05 PM] Mei: \u200e<attached: 00000012-PHOTO-2025-07-01-23-59-05.jpg>
              [01/07/2025, 10:00:00] Trip: \u200eMei added Ben   (a system line: U+200E before the text)

Mapping (docs/import.md):

- Day/month order: day first when a date of the file has a first number above 12, month first
  when one has a second number above 12; when every date reads both ways, the reading that
  keeps the chat in time order, and of two such with three or more dates the one whose dates
  lie closest together (:func:`_month_first`); else (one or two dates) month first if the
  dates are written without leading zeros on a 12-hour clock in capitals (``7/1/25, 9:59 PM``,
  the US format), else day first (``01/07/2025``, ``1/7/25, 21:41``, Australian and British
  ``1/7/25, 10:00 am``); year-first dates are year, month, day; two-digit years are 20xx. One header form per file: a line that reads as a
  header of another form is text of the message above. Times are local without
  offset, as WhatsApp writes them (stored without offset).
- id: WhatsApp exports have no message ids, so the id is derived and stable:
  ``"wa-" + sha1("<ts>|<speaker>|<text>|<n>")[:16]`` where ``n`` counts the earlier messages of
  the file with the same ts, speaker and text (the text without the edit mark and attachment
  lines). Re-importing the same or a later export gives every message the same id, and a
  message missing from a later export shifts no other id. An edited message has a new text,
  so a new id: the ingest joins a message marked edited to the one stored message of its ts
  and speaker that the input no longer holds, as an edit (graphmem.verbatim.ingest).
- speaker = the name as written (a contact's saved name or a phone number); there is no stable
  user id in the format, so identity follows the name: a renamed contact becomes a second
  person, and two contacts saved under one name are one (say so to users; docs/import.md).
- session: the day; channel "".
- Multi-line messages keep their line breaks. A leading U+200E (the exporter's mark) is
  dropped from the text; ``<This message was edited>`` at the end is dropped and sets
  ``edited``. ``<Media omitted>`` and ``image omitted`` / ``video omitted`` / ... are
  attachments without a name (text ""); ``<attached: NAME>`` and ``NAME (file attached)`` are
  attachments with their file name (the rest of the message is its caption).
- The chat of an export "with media" (a zip or its folder) is ``_chat.txt`` or ``WhatsApp Chat
  ….txt``, not a ``.txt`` document shared in the chat (:func:`_chat_member`).
- System lines (no author on Android; U+200E-led text on iOS, split at ``": \u200e"`` since a
  group name may hold ": ", unless it is an attachment, poll, location or video note: encryption notice, joins, adds,
  subject changes, "Missed voice call"; on both, the placeholder of a deleted message, "This
  message was deleted" / "You deleted this message"): kind "system", spoken by the system.
"""

from __future__ import annotations

import functools
import hashlib
import mimetypes
import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from collections.abc import Callable
from typing import Literal
from pathlib import Path, PurePosixPath

from graphmem.core.errors import InvalidInputError
from graphmem.core.model import Attachment, Conversation
from loaders._chat import SYSTEM_ID, SYSTEM_SPEAKER, Reject, finish, group_from, guarded
from loaders._common import Draft, PathLike, existing_path, read_zip_member

__all__ = ["is_whatsapp", "load_conversations"]

_SP = r"[ \u00a0\u202f]"
_AMPM = rf"(?:{_SP}?(?P<ap>[AaPp])\.?{_SP}?[Mm]\.?)?"
# day and month in either order with a 2- or 4-digit year last, or a 4-digit year first
# (Swedish 2025-07-01, Japanese 2025/07/13: always year, month, day)
_DATE = r"(?:(?P<a>\d{1,2})[./-](?P<b>\d{1,2})[./-](?P<y>\d{2,4})|(?P<Y>\d{4})[./-](?P<M>\d{1,2})[./-](?P<D>\d{1,2}))"
# then a comma, a space, or a word (French "à", Finnish "klo"); the time with ":" or "." (Danish,
# Finnish 21.41)
_WHEN = rf"{_DATE},?{_SP}(?:(?:à|klo){_SP})?(?P<hh>\d{{1,2}})[:.](?P<mm>\d{{2}})(?:[:.](?P<ss>\d{{2}}))?{_AMPM}"
_ANDROID = re.compile(rf"^{_WHEN}{_SP}-{_SP}(?P<rest>.*)$")
_IOS = re.compile(rf"^\u200e?\[{_WHEN}\]{_SP}(?P<rest>.*)$")
_EDITED = re.compile(r"[ \u200e]*<This message was edited>$")
# the placeholder of a deleted message: the platform's words, not the sender's (iOS leads it with
# U+200E, which makes it a system line; Android writes it bare under the sender's name)
# (English, German, Spanish, French, Portuguese, Italian, Dutch: the phone writes its own language)
_DELETED = re.compile(
    r"^\u200e?(This message was deleted|You deleted this message"
    r"|Diese Nachricht wurde gelöscht|Du hast diese Nachricht gelöscht"
    r"|Se eliminó este mensaje|Eliminaste este mensaje"
    r"|Ce message a été supprimé|Vous avez supprimé ce message"
    r"|Mensagem apagada|Esta mensagem foi apagada|Você apagou esta mensagem"
    r"|Questo messaggio è stato eliminato|Hai eliminato questo messaggio"
    r"|Dit bericht is verwijderd|Je hebt dit bericht verwijderd)\.?$")
_OMITTED = re.compile(r"^\u200e?(<(?:Media omitted|Medien ausgeschlossen|Multimedia omitido|Médias omis|Mídia oculta"
                      r"|Media omessi|Media weggelaten)>|(image|video|audio|sticker|GIF|document|Contact card|Video note) omitted)$")
# a shared document is labelled before its file ("\u200eplan.pdf • \u200e3 pages \u200e<attached: …>"):
# the label is WhatsApp's, not the sender's words, and is dropped with the mark
_ATTACHED = re.compile(r"^\u200e?(?:[^\n<]* \u2022 [^\n<]*)?<attached: ([^>]+)>")
_FILE_ATTACHED = re.compile(r"^\u200e?(.+?) \(file attached\)")


@dataclass
class _Line:
    lineno: int
    ios: bool
    nums: tuple[str, ...]  # day-or-month, month-or-day, year, hour, minute, second, a/p (None: absent)
    rest: str
    more: list[str] = field(default_factory=list)
    year_first: bool = False  # written year, month, day: nums are day, month, year (no doubt)
    marked: bool = False  # the line starts with U+200E (iOS marks system lines and attachments so)


def _chat_member(names: list[str], head: Callable[[str], bytes], where: str) -> str:
    """The chat among the ``.txt`` files of an export "with media" (a zip or its unzipped
    folder), which also holds the documents shared in the chat, some of them ``.txt`` too: iOS
    names it ``_chat.txt``, Android ``WhatsApp Chat with <name>.txt``; else the one ``.txt``
    whose first non-blank line is a message line. ``head(name)`` reads a file's first bytes.

    Raises:
        InvalidInputError: no ``.txt``, or none (or several) that reads as a chat (field ``path``)."""
    txt = sorted(n for n in names if n.endswith(".txt"))
    if not txt:
        raise InvalidInputError("the export holds no .txt chat", source=where, field="path")
    named = [n for n in txt if PurePosixPath(n).name == "_chat.txt" or PurePosixPath(n).name.startswith("WhatsApp Chat")]
    if len(named) == 1:
        return named[0]
    if len(txt) == 1:
        return txt[0]

    def reads_as_chat(name: str) -> bool:
        lines = head(name).decode("utf-8-sig", errors="replace").splitlines()
        first = next((ln for ln in lines if ln.strip()), "")
        return bool(_ANDROID.match(first) or _IOS.match(first))

    chats = [n for n in (named or txt) if reads_as_chat(n)]
    if len(chats) != 1:
        raise InvalidInputError(
            f"cannot tell which .txt is the chat ({', '.join((named or txt)[:5])}): "
            + ("none starts with a message line" if not chats else "several start with a message line")
            + "; pass the chat's .txt itself", source=where, field="path")
    return chats[0]


def _read_lines(p: Path) -> tuple[str, list[str]]:
    if p.is_dir():  # an unzipped export "with media"
        files = [f.relative_to(p).as_posix() for f in p.rglob("*.txt") if f.is_file()]
        def head(n: str) -> bytes:
            with (p / n).open("rb") as f:
                return f.read(4096)

        name = _chat_member(files, head, str(p))
        raw, where = (p / name).read_bytes(), str(p / name)
    elif zipfile.is_zipfile(p):
        try:
            z = zipfile.ZipFile(p)
        except zipfile.BadZipFile as e:
            raise InvalidInputError("not a readable zip file", source=str(p), field="path") from e
        with z:
            name = _chat_member(z.namelist(), lambda n: read_zip_member(z, n, f"{p}:{n}")[:4096], str(p))
            where = f"{p}:{name}"
            raw = read_zip_member(z, name, where)
    else:
        raw, where = p.read_bytes(), str(p)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidInputError(f"not valid UTF-8 at byte {e.start}", source=where, field="encoding") from e
    return where, [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def is_whatsapp(path: Path) -> bool:
    """Whether ``path`` is a WhatsApp chat export (its first non-blank line is a date line): a
    ``.txt``, the ``.zip`` WhatsApp shares, or that zip unzipped (a folder with ``_chat.txt`` or
    ``WhatsApp Chat ….txt`` at its top)."""
    if path.is_dir() and not any(f.name == "_chat.txt" or (f.name.startswith("WhatsApp Chat") and f.suffix == ".txt")
                                 for f in path.iterdir()):
        return False
    try:
        _, lines = _read_lines(path)
    except (InvalidInputError, OSError):
        return False
    first = next((ln for ln in lines if ln.strip()), "")
    return bool(_ANDROID.match(first) or _IOS.match(first))


def load_conversations(path: PathLike, group: str | None = None,
                       rejects: list[Reject] | None = None) -> list[Conversation]:
    """Read a WhatsApp chat export.

    Args:
        path: the exported ``.txt`` or the ``.zip`` WhatsApp shares.
        group: the group id (default: the file name without "WhatsApp Chat with ").
        rejects: when a list, a bad message is appended to it and skipped.

    Returns:
        One :class:`Conversation`.

    Raises:
        InvalidInputError: naming the file, the record (``line N``, where the message starts)
            and the field: ``line`` for text before the first date line, ``ts`` for a date or
            time that does not exist.
    """
    root = existing_path(path)
    where, lines = _read_lines(root)
    entries: list[_Line] = []
    form: tuple[bool, bool, str] | None = None  # the file's header form: one per export
    for n, ln in enumerate(lines, start=1):
        m = _IOS.match(ln) or _ANDROID.match(ln)
        g = m.groupdict() if m is not None else {}
        # (iOS, year first, time separator): a body line that reads as a header of another form
        # ("2025-07-14 09:00 - kickoff" in a 7/1/25 chat, "14.30 - Abfahrt" where times have
        # ":") is the message's text, not a message
        this = (m.re is _IOS, g["Y"] is not None, m.group(0)[m.start("mm") - 1]) if m is not None else None
        if m is not None and form is None:
            form = this
        if m is not None and this == form:
            day_month = (g["a"], g["b"], g["y"]) if g["a"] is not None else (g["D"], g["M"], g["Y"])
            entries.append(_Line(n, m.re is _IOS, (*day_month, g["hh"], g["mm"], g["ss"], g["ap"]), g["rest"],
                                 year_first=g["Y"] is not None, marked=ln.startswith("\u200e")))
        elif entries:
            entries[-1].more.append(ln)
        elif ln.strip():
            err = InvalidInputError("text before the first message line (not a WhatsApp export?)",
                                    source=where, record=f"line {n}", field="line")
            if rejects is None:
                raise err
            rejects.append(Reject(where, f"line {n}", "line", err.reason, ln))
    while entries and entries[-1].more and entries[-1].more[-1] == "":  # the file's trailing newline
        entries[-1].more.pop()
    month_first = _month_first(entries)
    stem = root.stem
    for prefix in ("WhatsApp Chat with ", "WhatsApp Chat - "):
        if stem.startswith(prefix):
            stem = stem[len(prefix):]
    gid = group_from(group, stem, source=where)
    drafts: list[Draft] = []
    seen: dict[tuple[str, str, str], int] = {}
    for e in entries:
        raw = "\n".join([e.rest, *e.more])
        d = guarded(rejects, raw, functools.partial(_draft, e, where, gid, month_first, seen, len(drafts)))
        if d is not None:
            drafts.append(d)
    return finish(gid, stem, drafts, source=where, rejects=rejects)


# what iOS leads with U+200E in a person's message: a shared document ("\u200eplan.pdf •
# \u200e3 pages \u200e<attached: …>"), a poll, a location, a video note
_PERSON_MARKED = re.compile(r"^\u200e(POLL:|Location: |Live location|Video note omitted)|<attached: [^>]+>")


def _person_content(text: str) -> bool:
    """Whether a U+200E-led iOS text is a person's (an attachment, an omitted medium, a poll, a
    location), not a system line."""
    return bool(_ATTACHED.match(text) or _OMITTED.match(text) or _PERSON_MARKED.search(text))


def _open_quote(sender: str) -> bool:
    """Whether the part before ``": "`` stops inside a quotation: an Android subject change
    (``Mei changed the subject to "plan: day 1"``, German ``Mei hat den Betreff zu „Plan: Tag 1“
    geändert``) splits there, a contact saved as ``Tom "Tommy" Berg`` does not (it was read as
    a system line and Tom lost his message). Quotes pair as written: ``"…"``, ``“…”``, ``„…“``."""
    if sender.count('"') % 2 == 1:
        return True
    closing: list[str] = []  # the quote that closes each open one, innermost last
    for ch in sender:
        if closing and ch == closing[-1]:
            closing.pop()
        elif ch == "\u201e":  # „ (German, Czech, ...) closes with “
            closing.append("\u201c")
        elif ch == "\u201c":
            closing.append("\u201d")
    return bool(closing)


def _month_first(entries: list[_Line]) -> bool:
    """Whether the file's dates are month first.

    A second number above 12 (and no first one) says so, a first number above 12 says day
    first. When every date could be read both ways, the chat's order decides: an export lists
    its messages in time order, so a reading that puts a later line on an earlier day is wrong.
    When both readings keep the order and the chat has three or more dates, the one whose days
    lie closer together is taken (``1/7/25``, ``2/7/25``, ``3/7/25`` are consecutive days read
    day first and the 7th of three months read month first: a chat's days are usually close,
    monthly messages on one day rare). So two exports of one chat, one of them holding a
    ``13/7/25`` or a ``7/13/25``, read their common dates alike, whatever the phone's locale
    and clock. Two dates say too little (``01/07`` and ``01/08`` are a month apart one way, a
    day the other): they, one day's dates and readings equally close fall back to the form,
    month first without leading zeros on a 12-hour clock written AM/PM (``7/1/25, 9:59 PM``, the
    US format), else day first (``01/07/2025``, ``1/7/25, 21:41``, and the Australian or British
    ``1/7/25, 10:00 am``). Year-first dates say nothing here."""
    entries = [e for e in entries if not e.year_first]  # their order is written out
    if not entries:
        return False
    if any(int(e.nums[0]) > 12 for e in entries):
        return False
    if any(int(e.nums[1]) > 12 for e in entries):
        return True
    spans = [_span(entries, month_first) for month_first in (False, True)]
    if (spans[0] is None) != (spans[1] is None):  # only one reading keeps the chat in order
        return spans[0] is None
    if spans[0] is not None and spans[1] is not None and spans[0] != spans[1] \
            and len({(int(e.nums[0]), int(e.nums[1])) for e in entries}) >= 3:
        return spans[1] < spans[0]
    unpadded = any(len(e.nums[0]) == 1 or len(e.nums[1]) == 1 for e in entries)
    # AM/PM in capitals is the US clock; English locales that write the day first (Australia,
    # Britain, India) write "am" / "pm"
    us_clock = any(e.nums[6] and e.nums[6].isupper() for e in entries)
    return unpadded and us_clock


def _span(entries: list[_Line], month_first: bool) -> int | None:
    """Days from the first to the last date of the file read day first or month first, or None
    when that reading puts a line on an earlier day than one above it, or is no date at all."""
    days: list[int] = []
    for e in entries:
        a, b, y = int(e.nums[0]), int(e.nums[1]), int(e.nums[2])
        try:
            d = datetime(y + 2000 if len(e.nums[2]) == 2 else y, a if month_first else b, b if month_first else a)
        except ValueError:
            return None
        day = d.toordinal()
        if days and day < days[-1]:
            return None
        days.append(day)
    return days[-1] - days[0] if days else None


def _draft(e: _Line, where: str, gid: str, month_first: bool, seen: dict[tuple[str, str, str], int],
           position: int) -> Draft:
    record = f"line {e.lineno}"
    a, b, y, hh, mm, ss, ampm = e.nums
    day, month = (int(b), int(a)) if month_first and not e.year_first else (int(a), int(b))
    year = int(y) + 2000 if len(y) == 2 else int(y)
    hour = int(hh)
    if ampm:
        if not 1 <= hour <= 12:
            raise InvalidInputError(f"hour {hour} with AM/PM", source=where, record=record, field="ts")
        hour = hour % 12 + (12 if ampm.lower() == "p" else 0)
    try:
        dt = datetime(year, month, day, hour, int(mm), int(ss or 0))
    except ValueError as err:
        raise InvalidInputError(f"no such date or time: {err}", source=where, record=record, field="ts") from err
    ts = dt.isoformat()
    body = "\n".join([e.rest, *e.more])
    sender, sep, text = body.partition(": ")
    if e.ios and e.marked and not text.startswith("\u200e") and ": \u200e" in body.split("\n", 1)[0]:
        # iOS writes a system line as "\u200e[…] <group name>: \u200e<text>", and a group name
        # may hold ": " itself ("Trip: Rome 2025"): split where the mark is, not at the first
        # ": " (only on a marked line: a person's plain message may hold ": \u200e" in its text)
        sender, sep, text = body.partition(": \u200e")
        text = "\u200e" + text
    kind: Literal["", "system"] = ""
    # a system line: no "name: " (Android), a U+200E-led text (iOS) that is not a person's
    # attachment, poll or location, a "sender" that stops inside a quotation (an Android
    # subject change: 'Mei changed the subject to "plan: day 1"'), or the placeholder of a
    # deleted message
    if not sep or _open_quote(sender) or _DELETED.match(text) or (
            e.ios and text.startswith("\u200e") and not _person_content(text)):
        kind, speaker = "system", SYSTEM_SPEAKER
        text = text if sep and e.ios and not _open_quote(sender) else body
    else:
        speaker = sender
    if text.startswith("\u200e"):
        text = text[1:]
    edited = False
    m = _EDITED.search(text)
    if m is not None:
        edited, text = True, text[: m.start()]
    attachments: list[Attachment] = []
    if kind != "system":
        om = _OMITTED.match(text)
        at = _ATTACHED.match(text) or _FILE_ATTACHED.match(text)
        if om is not None:
            what = om.group(2) or "media"
            attachments.append(Attachment(name="", media_type=what.lower() + " omitted" if om.group(2) else "media omitted"))
            text = ""
        elif at is not None:
            name = at.group(1)
            attachments.append(Attachment(name=name, media_type=mimetypes.guess_type(name)[0] or ""))
            text = text[at.end():].lstrip("\n")
    # keyed by the text too: a message missing from a later export (deleted for you, or an
    # export that starts mid-minute) must not shift the ids of the others of its minute onto
    # their neighbours (with a count per minute and speaker alone, b took a's id and c b's: two
    # false edits, "a" lost, "c" twice). An edited message gets a new id here; the ingest joins
    # it to the one stored message of its minute and speaker that the export no longer holds
    # (graphmem.verbatim.ingest, "edits without a stable id").
    slot = (ts, speaker, text)
    n = seen.get(slot, 0)
    seen[slot] = n + 1
    digest = hashlib.sha1(f"{ts}|{speaker}|{text}|{n}".encode()).hexdigest()[:16]
    return Draft(
        id=f"wa-{digest}", group_id=gid, channel="", session=ts[:10], speaker=speaker,
        speaker_id=SYSTEM_ID if kind == "system" else "", text=text, ts=ts,
        instant=dt.replace(tzinfo=timezone.utc).timestamp(), reply_to="", source_ref=f"{where}:{e.lineno}",
        position=position, kind=kind, attachments=tuple(attachments), edited=edited, id_from_content=True,
    )
