"""Group export and import (``graphmem export`` / ``graphmem ingest --format graphmem-export``).

An export is JSON Lines (docs/export.md), one object per line, each with a ``kind``:

1. ``group``: ``format`` (``"graphmem-export"``), ``version`` (1), ``with_derived``, and the
   Group node's properties (``id``, ``name``, ...);
2. ``person``: each Person's properties (``id``, ``name``, ``speaker_id``, ``aliases``), by id;
3. ``session``: each Session's properties (``id``, ``channel``, ``index``, ``ts``), by id;
4. ``message``: each Message's stored properties (``text`` byte-exact, ``text_history`` and
   ``edited_at`` of its edits, ``seq``, ``turn_created``, ``ts``, ``instant``, ``reply_to``,
   flags, ...) and ``person_id`` (its SOURCE), in arrival order (``seq``);
5. with derived records only: per Writer segment in index order, a ``segment`` line (its
   properties and ``covers``, the ids of the messages it covers), then a ``record`` line per
   derived record written with it (properties, ``label``, ``owner`` / ``source``: a Person id or
   ``"GROUP"``, ``from``: supporting message ids, ``superseded_by``: the next version or null).

Left out, because import computes them again: vectors (``embedding``,
``sentence_embeddings``), the retrieval fields (``search_text``, ``search_grams``,
``group_key``) and ``group_id`` on each line. What is not in the store is not in an export: after
``graphmem forget`` an erased person's messages, records and name are gone from both.

:func:`export_page` reads one page (at most ``max_bytes`` of JSON lines, at least one line) and
a cursor for the next; :func:`export_lines` all pages. :func:`import_group` loads an export into
a group that does not exist yet, through the normal write paths: messages through
:func:`graphmem.verbatim.ingest.ingest_conversations` (each with its exported ``order_instant``,
in arrival order, so places, turns and NEXT links are the exported ones; each edit replayed as
an edit, so the text history is the exported one), derived records segment by segment through
:func:`graphmem.derived.memory.write_segment` (which checks owners, sources, supporting
messages and chain heads); ids, texts and chains come out as exported. Before anything is
written, every record's credit passes the Writer's attribution rules against the messages of
its segment (:func:`_check_credits`). Message texts and edit histories are taken as the file
has them: an export is trusted like a backup for what was said (docs/security.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from graphmem.core import limits
from graphmem.core.embed import Embedder
from graphmem.core.results import DEFAULT_PAGE_BYTES as DEFAULT_PAGE_BYTES, ExportPage as ExportPage
from graphmem.core.errors import ConflictError, InvalidInputError, no_group
from graphmem.core.model import GROUP, GROUP_LAYERS, Attachment, Conversation, MessageRecord
from graphmem.derived.memory import NewRecord, SegmentMarker, write_segment
from graphmem.store.db import Store
from graphmem.verbatim.ingest import ingest_conversations

FORMAT = "graphmem-export"
VERSION = 1
SECTIONS = ("group", "person", "session", "message", "segment")
#: Stored properties an export leaves out (import computes them again).
RECOMPUTED = frozenset({"embedding", "sentence_embeddings", "search_text", "search_grams", "content_grams", "group_key",
                        "group_id"})
MAX_PAGE_BYTES = 4_000_000
_CURSOR = re.compile(r"^(person|session|message|segment):([^\n]{0,400})$")


class ImportSummary(BaseModel):
    """What :func:`import_group` wrote."""

    group_id: str
    persons: int = 0
    sessions: int = 0
    messages: int = 0
    edits: int = 0
    segments: int = 0
    records: int = 0
    ingest: dict[str, Any] = Field(default_factory=dict)


def _clean(props: dict[str, Any]) -> dict[str, Any]:
    return {k: props[k] for k in sorted(props) if k not in RECOMPUTED}


def _main_label(labels: list[str]) -> str:
    return next((x for x in labels if x != "Derived"), "Derived")


def _lines_of(section: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    props = _clean(row["props"])
    if section == "message":  # the message's own kind (bot, system) must not clash with the line's
        if "kind" in props:
            props["message_kind"] = props.pop("kind")
        return [{"kind": "message", **props, "person_id": row["person_id"]}]
    if section != "segment":
        return [{"kind": section, **props}]
    out = [{"kind": "segment", **props, "covers": sorted(row["covers"])}]
    for r in row["records"]:
        out.append({"kind": "record", **_clean(r["props"]), "label": _main_label(r["labels"]),
                    "owner": r["owner"], "source": r["source"], "from": sorted(r["from"]),
                    "superseded_by": r["superseded_by"]})
    return out


def _size(line: dict[str, Any]) -> int:
    return len(json.dumps(line, ensure_ascii=False).encode("utf-8")) + 1


def export_page(
    store: Store, group_id: str, *, cursor: str | None = None, with_derived: bool = False,
    max_bytes: int = DEFAULT_PAGE_BYTES,
) -> ExportPage:
    """One page of the export of ``group_id`` (module docstring for the lines).

    A page holds whole lines up to ``max_bytes`` of JSON Lines; a single line larger than that
    (a long message) is a page of its own. A segment and its records are never split across
    pages. Pages read the store as it is when each is read: a group written to between pages
    exports those writes where the cursor has not passed yet.

    Args:
        cursor: None for the first page, else ``next_cursor`` of the previous page.
        with_derived: include Writer segments and derived records (System 2).
        max_bytes: page size bound, 1,000 .. :data:`MAX_PAGE_BYTES` bytes.

    Raises:
        NotFoundError: no such group.
        InvalidInputError: a malformed cursor (field ``cursor``) or ``max_bytes`` out of range.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not 1_000 <= max_bytes <= MAX_PAGE_BYTES:
        raise InvalidInputError(f"max_bytes must be between 1000 and {MAX_PAGE_BYTES}", field="max_bytes",
                                value=max_bytes)
    group = store.read("groups/get_group", group_id=group_id)
    if not group:
        raise no_group(group_id)
    lines: list[dict[str, Any]] = []
    size = 0
    if not cursor:
        props = store.read("groups/export_section", group_id=group_id, section="group_node", after="", limit=1)
        head = {"kind": "group", "format": FORMAT, "version": VERSION, "with_derived": with_derived,
                **_clean(props[0]["props"] if props else {"id": group_id, "name": group[0]["name"]})}
        lines.append(head)
        size += _size(head)
        section, after = "person", ""
    else:
        m = _CURSOR.match(cursor)
        if m is None:
            raise InvalidInputError("not a cursor of this export (pass next_cursor back unchanged)",
                                    field="cursor", value=cursor)
        section, after = m.group(1), m.group(2)
    order = [s for s in SECTIONS[1:] if with_derived or s != "segment"]
    if section not in order:
        raise InvalidInputError("cursor of an export with derived records", field="cursor", value=cursor)
    while True:
        rows = store.read("groups/export_section", group_id=group_id, section=section, after=after, limit=200)
        for row in rows:
            chunk = _lines_of(section, row)
            add = sum(_size(x) for x in chunk)
            if lines and size + add > max_bytes:
                return ExportPage(group_id=group_id, lines=lines, bytes=size, truncated=True,
                                  next_cursor=f"{section}:{after}")
            lines.extend(chunk)
            size += add
            after = row["key"]
        if len(rows) < 200:
            i = order.index(section)
            if i + 1 == len(order):
                return ExportPage(group_id=group_id, lines=lines, bytes=size, next_cursor=None)
            section, after = order[i + 1], ""


def export_lines(store: Store, group_id: str, *, with_derived: bool = False,
                 max_bytes: int = DEFAULT_PAGE_BYTES) -> Iterator[dict[str, Any]]:
    """Every line of the export of ``group_id``, page by page (:func:`export_page`)."""
    cursor: str | None = None
    while True:
        page = export_page(store, group_id, cursor=cursor, with_derived=with_derived, max_bytes=max_bytes)
        yield from page.lines
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def read_export(path: str | Path) -> list[dict[str, Any]]:
    """The lines of an export file (blank lines skipped).

    Raises:
        InvalidInputError: unreadable file or a line that is not a JSON object (``record``
            names the line).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"cannot read export: {e}", source=str(p), field="path") from e
    out: list[dict[str, Any]] = []
    for n, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"malformed JSON: {e.msg}", source=str(p), record=f"line {n}") from e
        if not isinstance(item, dict):
            raise InvalidInputError("a line must be a JSON object", source=str(p), record=f"line {n}")
        item.setdefault("_line", n)
        out.append(item)
    return out


def _bad(msg: str, item: dict[str, Any], source: str, field: str = "") -> InvalidInputError:
    return InvalidInputError(msg, source=source, record=f"line {item.get('_line', '?')}", field=field)


def _ordered(records: list[dict[str, Any]], before: dict[str, str]) -> list[dict[str, Any]]:
    """Records of one segment with every version after the one it supersedes (stable)."""
    ids = {r["id"] for r in records}
    done: set[str] = set()
    out: list[dict[str, Any]] = []
    pending = list(records)
    while pending:
        rest = [r for r in pending if before.get(r["id"]) in ids and before[r["id"]] not in done]
        ready = [r for r in pending if r not in rest]
        if not ready:  # a cycle: write_segment refuses it
            ready = rest
            rest = []
        out.extend(ready)
        done.update(r["id"] for r in ready)
        pending = rest
    return out


def _arrivals(first: list[MessageRecord]) -> list[list[MessageRecord]]:
    """The first texts of an export's messages (in arrival order) as consecutive loads, each
    a run whose order keys do not go down: ingest numbers the messages of one load (``seq``)
    in order of their keys, so each message gets its arrival number back, and a late message
    (a key below one that arrived before it) lands where it landed in the exported group."""
    def key(m: MessageRecord) -> float:  # a line without a key: ingest computes it (one load)
        return m.order_instant if m.order_instant is not None else float("-inf")

    runs: list[list[MessageRecord]] = []
    for m in first:
        if not runs or key(runs[-1][-1]) > key(m):
            runs.append([])
        runs[-1].append(m)
    return runs


def _check_credits(
    persons: dict[str, dict[str, Any]], messages: list[dict[str, Any]],
    segments: list[tuple[dict[str, Any], list[dict[str, Any]]]], before: dict[str, str], source: str,
) -> None:
    """Refuse, before anything is written, a derived record whose credit the Writer would have
    refused: each record passes :func:`graphmem.derived.writer.attribution.check_attribution`
    against the messages its segment covered, as the export has them, with the roster of the
    export's persons; its exported FROM passes
    :func:`graphmem.derived.writer.attribution.check_from`; a later version keeps its record's
    owner and layer, and a group decision its source (the Writer's UPDATE rules). Person ids
    are the export's own (the group as it was when the records were written).

    The messages of a segment are those it covers (an edit takes a message out of every
    segment, so a covered message has the text the Writer read) and the messages of its
    records' FROM that an edit took out since (same session, with earlier texts): each of
    their earlier texts counts, as one of them is the text the Writer read.

    Raises:
        InvalidInputError: naming the record (``record``) and the rule (its reason code), or a
            segment or record line that does not hold together (a covered or FROM message not
            in the export, a FROM message its segment did not cover, an owner or source that is
            not a person of the export).
    """
    # the Writer package is loaded by an import only (the export's readers do not need it)
    from graphmem.derived.writer.attribution import check_attribution, check_from
    from graphmem.derived.writer.segments import SegmentMessage
    from graphmem.verbatim.roster import Roster

    def refuse(rid: str, why: str, field: str = "") -> InvalidInputError:
        return InvalidInputError(f"{why}; nothing was imported", source=source, record=rid, field=field)

    lines = {str(m.get("id")): m for m in messages}

    def as_read(item: dict[str, Any], text: str) -> SegmentMessage:
        return SegmentMessage(
            id=str(item["id"]), channel=str(item.get("channel") or ""), session=str(item.get("session") or ""),
            turn=int(item.get("turn") or 0), ts=str(item.get("ts") or ""), speaker=str(item.get("speaker") or ""),
            text=text, person_id=str(item.get("person_id")), turn_created=int(item.get("turn_created") or 0),
            kind=str(item.get("message_kind") or ""), no_text=not limits.has_visible(text),
            edits=len(item.get("text_history") or []))

    try:
        roster = Roster([{"id": pid, "name": str(p.get("name") or pid), "aliases": list(p.get("aliases") or [])}
                         for pid, p in persons.items()])
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"a person line is malformed: {e}", source=source, field="aliases") from e
    records = {str(r.get("id")): r for _, recs in segments for r in recs}
    for seg, recs in segments:
        sid = str(seg.get("id"))
        read: list[SegmentMessage] = []  # the messages of the segment, as the Writer read them
        given: dict[str, SegmentMessage] = {}  # each record's FROM messages as they are now
        try:
            for i in map(str, seg.get("covers") or []):
                if i not in lines:
                    raise InvalidInputError(f"segment {sid} covers message {i!r}, which is not in the export",
                                            source=source, record=sid, field="covers")
                read.append(as_read(lines[i], str(lines[i]["text"])))
            covered = {m.id for m in read}
            for r in recs:
                rid = str(r.get("id"))
                from_ids = r.get("from")
                if not isinstance(from_ids, list) or not from_ids:
                    raise refuse(rid, "'from' must list its supporting messages", "from")
                for i in map(str, from_ids):
                    item = lines.get(i)
                    if item is None:
                        raise refuse(rid, f"supporting message {i!r} is not in the export", "from")
                    if i in given:
                        continue
                    given[i] = as_read(item, str(item["text"]))
                    if i in covered:
                        continue
                    if not item.get("text_history") or item.get("session") != seg.get("session"):
                        raise refuse(rid, f"supporting message {i!r} is not one its segment {sid} covered", "from")
                    # edited after the segment was written: one of its earlier texts is the one read
                    read.extend(as_read(item, str(t)) for t in item["text_history"])
        except InvalidInputError:
            raise
        except (TypeError, ValueError, KeyError) as e:
            raise _bad(f"segment {sid!r} or one of its records is malformed: {e}", seg, source) from e
        evidence = [m for m in read if m.evidence]  # what the Writer reads (SegmentMessage.evidence)
        for r in recs:
            rid = str(r.get("id"))
            values = [r.get(k) for k in ("owner", "source", "content", "utype", "layer")]
            if not all(isinstance(x, str) and x for x in values):
                raise refuse(rid, "owner, source, content, utype and layer must be non-empty text")
            owner, src, content, utype, layer = map(str, values)
            for who, field in ((owner, "owner"), (src, "source")):
                if who != GROUP and who not in persons:
                    raise refuse(rid, f"{field} {who!r} is not a person of the export", field)
            prev = records.get(before.get(rid, ""))
            checked = "decision" if "decision" in (utype, prev.get("utype") if prev else None) else utype
            # its own FROM first (what the file says is behind it), then the rules over its segment
            reason, detail = check_from([given[str(i)] for i in r["from"]], source=src, roster=roster)
            if not reason:
                try:
                    credit = check_attribution(evidence, owner=owner, source=src, content=content, roster=roster,
                                               utype=checked)
                except InvalidInputError:  # no message with text: nothing could support it
                    raise refuse(rid, f"its segment {sid} has no message with text to support it", "from") from None
                reason, detail = credit.reason, credit.detail
            if not reason and prev is not None:
                if prev.get("layer") != layer:
                    raise refuse(rid, f"a later version of {prev.get('id')} keeps its layer {prev.get('layer')!r}",
                                 "layer")
                if prev.get("owner") != owner:
                    reason, detail = ("update_owner_changed", f"{prev.get('id')} is about "
                                      f"{roster.label(str(prev.get('owner')))!r}; a later version keeps its owner")
                elif (prev.get("source") != src and prev.get("layer") in GROUP_LAYERS
                      and prev.get("utype") == "decision"):
                    reason, detail = ("update_recredits_decision",
                                      f"{prev.get('id')} is a group decision credited to "
                                      f"{roster.label(str(prev.get('source')))!r}; a later version keeps its source")
            if reason:
                raise refuse(rid, f"refused by the Writer's attribution rules ({reason}): {detail}",
                             "owner" if reason == "update_owner_changed" else "source")


def import_group(
    store: Store, embedder: Embedder, lines: Iterable[dict[str, Any]], *, group_id: str | None = None,
    source: str = "export",
) -> ImportSummary:
    """Load an export (:func:`read_export`'s lines) into a new group.

    Args:
        embedder: computes the message and record vectors (the import's own model).
        group_id: the group to create; None: the exported group's id.
        source: file name for error messages.

    Returns:
        An :class:`ImportSummary`.

    Raises:
        InvalidInputError: not an export of this version (field ``format`` / ``version``), a
            line of unknown kind, a message whose person or session is not in the export, a
            message whose speaker does not give its person's id, a record whose segment is not
            in the export, a record whose credit the Writer's attribution rules refuse
            (``record`` names it, the message the rule: :func:`_check_credits`), or a record
            whose owner, source or supporting messages are not in the export or not its
            segment's: all of these before anything is written. Then what ingest and
            :func:`graphmem.derived.memory.write_segment` refuse (a chain whose earlier version
            is not a head, a message covered twice): nothing of that segment is written, the
            messages and the segments before it are (forget the group and import again).
        ConflictError: the group already exists (import only into a group that does not).
    """
    items = list(lines)
    if not items or items[0].get("kind") != "group" or items[0].get("format") != FORMAT:
        raise InvalidInputError(f"not a {FORMAT} file (the first line must be its group line)",
                                source=source, record="line 1", field="format")
    head = items[0]
    if head.get("version") != VERSION:
        raise _bad(f"export version {head.get('version')!r}; this graphmem reads version {VERSION}", head,
                   source, "version")
    gid = group_id or str(head.get("id") or "")
    if store.read("groups/get_group", group_id=gid):
        raise ConflictError(f"group {gid!r} already exists; import into a new group (--group) or forget it first")
    persons: dict[str, dict[str, Any]] = {}
    sessions: dict[str, dict[str, Any]] = {}
    messages: list[dict[str, Any]] = []
    segments: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for item in items[1:]:
        kind = item.get("kind")
        if kind == "person":
            persons[str(item.get("id"))] = item
        elif kind == "session":
            sessions[str(item.get("id"))] = item
        elif kind == "message":
            messages.append(item)
        elif kind == "segment":
            segments.append((item, []))
        elif kind == "record":
            if not segments or item.get("segment") != segments[-1][0].get("id"):
                raise _bad("a record line must follow its segment's line", item, source, "segment")
            segments[-1][1].append(item)
        else:
            raise _bad(f"unknown line kind {kind!r}", item, source, "kind")

    rounds: list[list[MessageRecord]] = []
    for item in messages:
        pid = item.get("person_id")
        person = persons.get(str(pid))
        if person is None:
            raise _bad(f"person {pid!r} is not in the export", item, source, "person_id")
        session = sessions.get(str(item.get("session")))
        if session is None:
            raise _bad(f"session {item.get('session')!r} is not in the export", item, source, "session")
        speaker_id = str(person.get("speaker_id") or "")
        speaker = item.get("speaker")
        # a display name gives its person in any spelling of the same identity (limits.identity_form)
        if not isinstance(speaker, str) or (speaker_id != pid if speaker_id else
                                            limits.identity_form(speaker) != limits.identity_form(str(pid))):
            raise _bad(f"speaker {speaker!r} does not give person {pid!r}", item, source, "speaker")
        history = item.get("text_history") or []
        versions = [*history, item.get("text")]
        known = {k: item[k] for k in MessageRecord.model_fields if k in item and k != "kind"}
        if item.get("message_kind"):
            known["kind"] = item["message_kind"]
        names, types = item.get("attachment_names") or [], item.get("attachment_types") or []
        if names:  # stored as two parallel lists (create_messages), read back as the model's attachments
            known["attachments"] = tuple(Attachment(name=str(n), media_type=str(t))
                                         for n, t in zip(names, [*types, *[""] * len(names)]))
        for r, text in enumerate(versions):
            try:
                rec = MessageRecord(**{
                    **known, "group_id": gid, "text": text, "speaker_id": speaker_id,
                    "session_index": int(session.get("index") or 0), "session_ts": str(session.get("ts") or ""),
                    "turn": int(item.get("turn") or 0), "source_ref": f"{source}:{item.get('_line', '?')}",
                })
            except (ValidationError, TypeError, ValueError) as e:
                raise _bad(f"not a message: {e}", item, source) from e
            while len(rounds) <= r:
                rounds.append([])
            rounds[r].append(rec)
    # a record whose credit the Writer's rules refuse refuses the file, before anything is written
    before = {str(r["superseded_by"]): str(r.get("id")) for _, recs in segments for r in recs if r.get("superseded_by")}
    _check_credits(persons, messages, segments, before, source)
    out = ImportSummary(group_id=gid, persons=len(persons), sessions=len(sessions), messages=len(messages),
                        edits=sum(len(x) for x in rounds[1:]))
    name = str(head.get("name") or gid)
    totals: dict[str, Any] = {}
    for batch in [*_arrivals(rounds[0] if rounds else []), *rounds[1:]]:  # first texts, then each round of edits
        s = ingest_conversations(store, [Conversation(group_id=gid, name=name, messages=batch, source=source)],
                                 embedder)
        for k, v in s.as_dict().items():
            if isinstance(v, int):
                totals[k] = totals.get(k, 0) + v
    out.ingest = totals

    # a person exported under an older spelling of its id (an id with trailing whitespace, or
    # two spellings of one name made before the identity rule) is the person the import made
    # for that identity: owners and sources follow it (limits.same_identity)
    made_ids = [str(r["id"]) for r in store.read("ingest/person_ids", group_id=gid)]

    def made_id(pid: Any) -> Any:
        if not isinstance(pid, str) or pid == GROUP or pid in made_ids:
            return pid
        same = limits.same_identity(pid, made_ids)
        return same[0] if same else pid

    for seg, recs in segments:
        fields = {k: seg[k] for k in SegmentMarker.model_fields if k in seg and k not in ("message_ids", "report")}
        try:
            report = json.loads(seg["report"]) if isinstance(seg.get("report"), str) else dict(seg.get("report") or {})
            marker = SegmentMarker(**fields, message_ids=list(seg.get("covers") or []), report=report)
            recs = _ordered(recs, before)
            vectors: list[list[float]] = (
                embedder.encode([str(r.get("content") or "") for r in recs]).tolist() if recs else []
            )
            new = [NewRecord(
                id=r["id"], layer=r["layer"], utype=r["utype"], content=r["content"], owner=made_id(r["owner"]),
                source=made_id(r["source"]), ts=r["ts"], session=r.get("session") or "", turn_created=int(r.get("turn_created") or 0),
                confidence=float(r.get("confidence", 1.0)), from_ids=list(r.get("from") or []),
                embedding=vec, supersedes=before.get(str(r["id"])),
            ) for r, vec in zip(recs, vectors)]
        except (ValidationError, KeyError, TypeError, ValueError) as e:
            raise _bad(f"segment {seg.get('id')!r} or one of its records is malformed: {e}", seg, source) from e
        count = seg.get("n_messages")
        write_segment(store, gid, marker, new, written_at=seg.get("written_at"),
                      n_messages=count if isinstance(count, int) and not isinstance(count, bool) else None)
        out.segments += 1
        out.records += len(new)
    return out
