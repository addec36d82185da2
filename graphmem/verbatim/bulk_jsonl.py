"""JSON lines to the first-load importer's CSV files, on every core, checked against the reference.

The reference path (``loaders.load_conversations`` then :func:`graphmem.verbatim.bulk_import.write_csv`)
builds a pydantic model per line and per message, reads every timestamp five times and runs on
one core: ~60 us of CPU per message. This path gives the same files for the same input:

1. The file is cut into byte ranges at line ends; a process per range reads its lines with
   orjson and checks each field with the rules of the reference path (types, the id grammar of
   :mod:`graphmem.core.limits`, display names, text, timestamps through
   :func:`graphmem.core.times.parse_ts`), keeping compact rows per group in file order.
2. The groups, in order of first appearance, are cut into contiguous runs of about equal size;
   a process per run numbers generated ids, drops redeliveries, orders each channel by
   ``(instant, line)`` as the loader does, and writes its own part of every CSV file through
   :func:`graphmem.verbatim.bulk_import.write_group` (the code the reference path runs). Part ``w``
   numbers its nodes from ``w * PART_ID_STRIDE``, so with one part the files are byte for byte
   the reference's, and with several they differ only in node ids.

Whatever this path does not accept as plainly valid (a malformed or odd line, an id outside the
grammar, an edit, a repeated id with other fields, anything the reference might reject) makes
it stop and hand the whole file to the reference path, which then raises the same error naming
line and field, or, when the input is valid after all, writes the files.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
from collections.abc import Callable, Iterable
from typing import Any
from pathlib import Path

try:
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
    _JSONError: type[Exception] = orjson.JSONDecodeError
except ImportError:  # a venv made before orjson was a dependency: the standard parser, same checks
    import json

    _loads = json.loads
    _JSONError = ValueError

from graphmem.core.config import Settings
from graphmem.core.model import Conversation
from graphmem.verbatim.bulk_import import HEADERS, CsvFiles, CsvWritten, ImportReport, import_files, write_csv, write_group
from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import IngestSummary
from graphmem.core.limits import MAX_ID_CHARS, MAX_NAME_CHARS, MAX_TEXT_CHARS, existing_path, has_visible, id_ok
from graphmem.core.times import parse_ts

log = logging.getLogger(__name__)

#: Node ids of CSV part ``w`` start at ``w * PART_ID_STRIDE`` (integer ids of neo4j-admin).
PART_ID_STRIDE = 10**12

_BOM = b"\xef\xbb\xbf"
# what the id grammar and display names refuse: control characters and lone surrogates
_BAD = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Fallback(Exception):
    """The fast path met input it does not take as plainly valid: use the reference path."""


CsvResult = CsvWritten  # the fast path's result is the importer's input


class _Rec:
    """The stored fields of one message (what :func:`write_group` reads)."""

    __slots__ = ("id", "channel", "session", "speaker", "speaker_id", "text", "ts", "reply_to", "session_ts")

    def __init__(self, id: str, channel: str, session: str, speaker: str, speaker_id: str, text: str,
                 ts: str, reply_to: str) -> None:
        self.id, self.channel, self.session, self.speaker = id, channel, session, speaker
        self.speaker_id, self.text, self.ts, self.reply_to = speaker_id, text, ts, reply_to
        self.session_ts = ""  # the first message of a session gives the session's ts, as in ingest


def _id_ok(value: str) -> bool:
    """:func:`graphmem.core.limits.check_id` would pass it (``/`` is checked by the caller): the
    grammar's own predicate, so an id with an invisible character goes to the reference path,
    which refuses it naming line and field."""
    return id_ok(value)


def _name_ok(value: str) -> bool:
    """:func:`graphmem.core.limits.check_name` would pass it."""
    return len(value) <= MAX_NAME_CHARS and has_visible(value) and _BAD.search(value) is None


def _ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """Byte ranges of about equal size, each ending just after a ``\\n`` (or at the end)."""
    size = path.stat().st_size
    cuts = [0]
    with path.open("rb") as f:
        for i in range(1, parts):
            at = max(size * i // parts, cuts[-1])
            f.seek(at)
            f.readline()
            cuts.append(min(max(f.tell(), cuts[-1]), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


_Row = tuple[str, str, str, str, str, str, float, str, "str | None"]


def _parse_range(path: str, start: int, end: int, group: str | None) -> dict[str, list[_Row]]:
    """Rows per group (file order) of the lines in ``[start, end)``; raises :class:`_Fallback`.

    A row is ``(channel, session, speaker, speaker_id, text, ts, instant, reply_to, id)``: the
    session as written on the line, ``ts`` in normal form, ``id`` None when the line has none.
    """
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    if start == 0 and data.startswith(_BOM):
        data = data[3:]
    out: dict[str, list[_Row]] = {}
    loads = _loads
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            obj = loads(raw)
        except (_JSONError, UnicodeDecodeError):
            raise _Fallback from None
        if type(obj) is not dict:
            raise _Fallback
        get = obj.get
        session, speaker, text, ts = get("session"), get("speaker"), get("text"), get("ts")
        g, mid, spid, reply, channel = get("group"), get("id"), get("speaker_id"), get("reply_to"), get("channel")
        if type(session) is not str or type(speaker) is not str or type(text) is not str or type(ts) is not str:
            raise _Fallback
        for v in (g, mid, spid, reply, channel):
            if v is not None and type(v) is not str:
                raise _Fallback
        gid = group if group is not None else g
        if gid is None:
            raise _Fallback
        channel = channel or ""
        if mid is not None and not _id_ok(mid):
            raise _Fallback
        if channel and (not _id_ok(channel) or "/" in channel or not _id_ok(f"{channel}/{session}")
                        or session.startswith(channel + "/")):  # already qualified: the reference path
            raise _Fallback
        if not _id_ok(session) or (not channel and "/" in session) or not _name_ok(speaker) or not has_visible(text) or len(text) > MAX_TEXT_CHARS \
                or _SURROGATE.search(text):
            raise _Fallback
        if (spid is not None and not _id_ok(spid)) or (reply and (not _id_ok(reply) or reply == mid)):
            raise _Fallback
        try:
            t = parse_ts(ts)
        except InvalidInputError:
            raise _Fallback from None
        rows = out.get(gid)
        if rows is None:
            rows = out[gid] = []
        rows.append((channel, session, speaker, spid or "", text, t.text, t.instant, reply or "", mid))
    return out


# Rows per group of the whole input, set in the parent before the writers fork (they inherit it).
_GROUPS: dict[str, list[_Row]] = {}


def _group_items(rows: list[_Row]) -> tuple[list[tuple[_Rec, float, float]], int]:
    """One group's ``(message, order_instant, instant)`` items in conversation order and the
    number of redeliveries, as loader + ``collapse`` give them; raises :class:`_Fallback`."""
    counters: dict[tuple[str, str], int] = {}
    first: dict[str, _Rec] = {}
    made: set[str] = set()  # ids made from a line's place: another line holding one is refused
    channels: dict[str, list[tuple[float, int, _Rec]]] = {}
    skipped = 0
    for pos, (ch, sraw, speaker, spid, text, ts, inst, reply, mid) in enumerate(rows):
        sid = f"{ch}/{sraw}" if ch else sraw
        key = (ch, sraw)
        k = counters.get(key, 0)
        counters[key] = k + 1
        if mid is None:
            mid = f"{sid}:{k}"
            if not _id_ok(mid) or reply == mid or mid in first:
                raise _Fallback
            made.add(mid)
        elif mid in made:
            raise _Fallback
        prev = first.get(mid)
        if prev is not None:  # a redelivery is skipped; anything else (an edit, a conflict) is not ours
            if (prev.channel, prev.session, prev.speaker, prev.speaker_id, prev.text, prev.ts, prev.reply_to) \
                    != (ch, sid, speaker, spid, text, ts, reply):
                raise _Fallback
            skipped += 1
            continue
        rec = first[mid] = _Rec(mid, ch, sid, speaker, spid, text, ts, reply)
        lst = channels.get(ch)
        if lst is None:
            lst = channels[ch] = []
        lst.append((inst, pos, rec))
    items: list[tuple[_Rec, float, float]] = []
    for lst in channels.values():  # channels in order of first line, each by (instant, line)
        lst.sort(key=lambda t: (t[0], t[1]))
        running = float("-inf")
        for inst, _, rec in lst:
            running = max(inst, running)
            items.append((rec, running, inst))
    return items, skipped


def _write_part(part: int, folder: str, gids: list[str]) -> IngestSummary:
    """Write the CSV part ``part`` for the groups ``gids`` (rows from :data:`_GROUPS`)."""
    summary = IngestSummary()
    files = CsvFiles(Path(folder), f".part{part}", header=False)
    next_id = part * PART_ID_STRIDE
    try:
        for gid in gids:
            if not _id_ok(gid) or "/" in gid or not _name_ok(gid):
                raise _Fallback
            items, skipped = _group_items(_GROUPS[gid])
            next_id = write_group(files.w, gid, gid, items, skipped, next_id, summary)
    finally:
        files.close()
    return summary


def _split_groups(sizes: dict[str, int], parts: int) -> list[list[str]]:
    """Contiguous runs of groups (in order) of about equal message counts."""
    total = sum(sizes.values())
    runs: list[list[str]] = [[]]
    done = 0
    for gid, n in sizes.items():
        if runs[-1] and len(runs) < parts and done + n / 2 > total * len(runs) / parts:
            runs.append([])
        runs[-1].append(gid)
        done += n
    return [r for r in runs if r]


def _merge(summaries: list[IngestSummary]) -> IngestSummary:
    out = IngestSummary()
    for s in summaries:
        out.group_ids.extend(s.group_ids)
        for k, v in s.as_dict().items():
            if k != "group_ids":
                setattr(out, k, getattr(out, k) + v)
    return out


ReferenceParser = Callable[[Path, "str | None"], Iterable[Conversation]]
"""The reference parser of JSON lines: ``(path, group) -> conversations`` (the faces pass
``loaders.load_conversations(path, "jsonl", group=group)``); it raises the error that names file,
line and field."""


def write_csv_jsonl(
    path: str | os.PathLike[str], folder: Path, *, reference: ReferenceParser, group: str | None = None,
    workers: int | None = None,
) -> CsvResult:
    """Write the first-load CSV files of a JSON-lines chat file (``--format jsonl``) into ``folder``.

    Args:
        path: the ``.jsonl`` file (loaders/jsonl.py describes the format).
        folder: where the files go (created).
        reference: the reference parser, run when the fast path meets input it does not take
            as plainly valid (it then raises the error naming file, line and field).
        group: overrides the ``group`` of every line, as ``graphmem ingest --group``.
        workers: processes (default: the machine's cores); 1 runs in this process.

    Returns:
        A :class:`CsvResult`: the counts (as ``ingest`` reports them) and, per kind, a header
        file then the parts (``<kind>.header.csv``, ``<kind>.part<w>.csv``), or the single files
        of :func:`graphmem.verbatim.bulk_import.write_csv` when the input went the reference way.

    Raises:
        InvalidInputError: naming the file, the line and the field, exactly as
            ``loaders.load_conversations`` and ``write_csv`` do (they raise it).
    """
    p = existing_path(path)
    workers = max(1, workers or os.cpu_count() or 1)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if group is not None and not group.strip():
            raise _Fallback
        return _parallel(p, folder, group, workers)
    except _Fallback:
        for old in folder.glob("*.part*.csv"):
            old.unlink()
        log.info("%s: input outside the fast path's plainly valid set; using the reference path", p)
    summary = write_csv(list(reference(p, group)), folder)
    return CsvResult(summary, {k: [folder / f"{k}.csv"] for k in HEADERS}, path="reference")


def _parallel(p: Path, folder: Path, group: str | None, workers: int) -> CsvResult:
    global _GROUPS
    ranges = _ranges(p, workers)
    ctx = multiprocessing.get_context("fork")
    if workers == 1 or len(ranges) <= 1:
        chunks = [_parse_range(str(p), a, b, group) for a, b in ranges]
    else:
        with ctx.Pool(len(ranges)) as pool:
            chunks = pool.starmap(_parse_range, [(str(p), a, b, group) for a, b in ranges])
    merged: dict[str, list[_Row]] = {}
    for chunk in chunks:
        for gid, rows in chunk.items():
            have = merged.get(gid)
            if have is None:
                merged[gid] = rows
            else:
                have.extend(rows)
    del chunks
    runs = _split_groups({g: len(r) for g, r in merged.items()}, workers)
    _GROUPS = merged
    try:
        if len(runs) <= 1:
            summaries = [_write_part(0, str(folder), runs[0] if runs else [])]
        else:
            with ctx.Pool(len(runs)) as pool:
                summaries = pool.starmap(_write_part, [(w, str(folder), gids) for w, gids in enumerate(runs)])
    finally:
        _GROUPS = {}
    header = CsvFiles(folder, ".header")
    header.close()
    n = max(1, len(runs))
    files = {k: [header.paths[k], *(folder / f"{k}.part{w}.csv" for w in range(n))] for k in HEADERS}
    return CsvResult(_merge(summaries), files, path="parallel", parts=n)


def import_jsonl(
    settings: Settings, path: Path, folder: Path, *, reference: ReferenceParser, overwrite: bool = False,
    group: str | None = None, workers: int | None = None, stop_server: bool = False,
) -> ImportReport:
    """:func:`graphmem.verbatim.bulk_import.import_conversations` for a JSON-lines file, its CSV files written on every core
    (:func:`graphmem.verbatim.bulk_jsonl.write_csv_jsonl`; the same files, so the same graph).

    Args:
        settings: graphmem settings (the local server's home).
        path: the ``.jsonl`` file.
        reference: the reference parser (:data:`ReferenceParser`).
        folder: where the CSV files are written.
        overwrite: replace a database that already holds data.
        group: overrides the ``group`` of every line.
        workers: processes for parsing and CSV (default: the machine's cores).
        stop_server: as :func:`import_conversations` (stopped only after every line is
            checked and written).

    Returns:
        An :class:`ImportReport`; ``seconds["csv"]`` includes parsing and checking the input.

    Raises:
        LocalServerError: as :func:`import_conversations` (checked before the input is read).
        InvalidInputError: a record is wrong (nothing is imported, the server is not stopped),
            naming file, line and field; or ``folder`` cannot be written (field ``csv_dir``).
    """
    return import_files(
        settings, folder, lambda: write_csv_jsonl(path, folder, reference=reference, group=group, workers=workers),
        overwrite=overwrite, stop_server=stop_server,
    )
