"""First load of an empty local store through ``neo4j-admin database import full``.

Transactional ingest (graphmem.verbatim.ingest) pays, per message, for the uniqueness constraint, three
range indexes and a synchronous Lucene update; on the shared 2-core machine that capped
``--embed later`` at ~1,000-1,300 msg/s (docs/scale.md). For a first load into an empty
database Neo4j offers an offline importer that writes the store files directly; indexes and
constraints are then built in bulk by ``graphmem schema apply``.

The graph is the one ``ingest --embed later`` writes (same validation, roster, sessions, order
key ``order_instant``/``seq``, and the same placement planner
(:func:`graphmem.verbatim.order.plan_order`) for ``turn_created``, ``turn``, ``search_text``, session
numbers and ``NEXT`` per channel; ``group_key``, ``REPLY_TO`` when the target is in the group,
``:PendingEmbedding`` on every message); vectors follow with ``graphmem embed --group G``.
``tests/integration/test_bulk_import.py`` compares the two. An input that repeats an id with
new text (an edit) is refused: load edits with ``graphmem ingest``.

Only the local server (``graphmem neo4j start``) can be loaded this way: the database is
replaced (``--overwrite`` is required when it holds data: any node; a stopped server's
database folder counts as data, :func:`check_can_import`). The input is checked and the CSV
files written while a running server keeps running; ``graphmem neo4j import`` stops it only
then (``stop_server``), so a bad record leaves the server and the store as they were. If
neo4j-admin itself fails, the database's folders (moved aside before it ran) are put back and
the stopped server is started again; the error gives the importer's cause either way. Each set
of CSV files is noted for erasure (:mod:`graphmem.verbatim.import_files`) before the importer runs.

Size (over 500 lines on purpose): the first load is one flow - check, write the files, note
them, stop, import, put the database back on failure - and the restore belongs beside the run
it undoes.
"""

from __future__ import annotations

import csv
import logging
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphmem.core.config import Settings
from graphmem.store.db import Store, open_driver
from graphmem.core.errors import GraphMemError, InvalidInputError, LocalServerError
from graphmem.verbatim.ingest import IngestSummary, collapse, person_ids, person_key, validate
from graphmem.verbatim.import_files import record_csv_files
from graphmem.llm.timing import Stopwatch
from graphmem.verbatim.order import plan_order
from graphmem.store.local_server import ADMIN_TOOL, LocalServer
from graphmem.core.model import Conversation
from graphmem.store.scope import group_key
from graphmem.core import times
from graphmem.core.limits import has_visible
from graphmem.core.times import instant
from graphmem.core.private_files import csv_folder, open_private

logger = logging.getLogger(__name__)

ARRAY_DELIMITER = "\x1f"  # unit separator: never part of a display name


@dataclass
class ImportReport:
    """What :func:`import_conversations` did: the ingest counts and seconds per phase."""

    summary: IngestSummary
    seconds: dict[str, float] = field(default_factory=dict)
    tool_output: str = ""
    csv_path: str = "reference"  # "parallel": graphmem.verbatim.bulk_jsonl's fast path wrote the files
    csv_parts: int = 1
    stopped_server: bool = False  # the running server was stopped (after the files were written)


#: Columns of each CSV file (the first line of the file, or its own header file for parts).
HEADERS: dict[str, list[str]] = {
    "groups": [":ID", "id", "name", "message_seq:long", ":LABEL"],
    "persons": [":ID", "id", "group_id", "name", "speaker_id", "aliases:string[]", ":LABEL"],
    "sessions": [":ID", "id", "group_id", "channel", "index:long", "ts", ":LABEL"],
    "messages": [
        ":ID", "id", "group_id", "channel", "text", "speaker", "session", "turn:long", "ts",
        "instant:double", "order_instant:double", "seq:long", "turn_created:long", "reply_to",
        "search_text", "group_key", ":LABEL", "kind", "no_text:boolean", "attachment_names:string[]",
        "attachment_types:string[]", "mentions:string[]", "edited_ts", "edited:boolean",
    ],
    "rels": [":START_ID", ":END_ID", ":TYPE"],
}
NODE_FILES = ("groups", "persons", "sessions", "messages")
MESSAGE_LABELS = f"Message{ARRAY_DELIMITER}PendingEmbedding"  # labels are split like arrays


class CsvFiles:
    """Open CSV writers, one per file of :data:`HEADERS` (``<name><suffix>.csv`` in ``folder``),
    each 0600 and never through a symlink (:func:`open_private`)."""

    def __init__(self, folder: Path, suffix: str = "", *, header: bool = True) -> None:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.paths = {name: folder / f"{name}{suffix}.csv" for name in HEADERS}
        self._files = {name: open_private(p) for name, p in self.paths.items()}
        self.w = {k: csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n") for k, f in self._files.items()}
        if header:
            for name, cols in HEADERS.items():
                self.w[name].writerow(cols)

    def close(self) -> None:
        for f in self._files.values():
            f.close()


def write_group(
    w: dict[str, Any], gid: str, name: str, items: list[tuple[Any, float, float]], skipped: int, next_id: int, summary: IngestSummary,
) -> int:
    """Write one group's nodes and relationships; return the next free node id.

    Args:
        w: the writers of :class:`CsvFiles`.
        gid / name: the group id and display name.
        items: one ``(message, order_instant, instant)`` per message id, in conversation order
            (:func:`graphmem.verbatim.ingest.collapse`); a message has the attributes of
            :class:`~graphmem.core.model.MessageRecord` that are stored (id, channel, session,
            speaker, speaker_id, text, ts, reply_to, session_ts).
        skipped: input records that repeated a message (counted, not written).
        next_id: the first node id this group may use (ids are consecutive from it).
        summary: counts are added to it.
    """
    g_node = next_id
    next_id += 1
    w["groups"].writerow([g_node, gid, name, len(items), "Group"])  # vector_rev: schema apply seeds it
    summary.messages_skipped += skipped
    summary.groups += 1
    summary.groups_created += 1
    summary.group_ids.append(gid)
    persons: dict[str, dict[str, Any]] = {}
    sessions: dict[str, dict[str, Any]] = {}
    ids = person_ids(m for m, _, _ in items)  # a new group: display names fold among themselves

    def pid(m: Any) -> str:
        key = person_key(m)
        return key if m.speaker_id else ids[key]

    for m, _, _ in items:
        p = persons.setdefault(pid(m), {"name": m.speaker, "speaker_id": m.speaker_id, "aliases": []})
        p["name"] = m.speaker
        if m.speaker not in p["aliases"]:
            p["aliases"].append(m.speaker)
        if m.session not in sessions:
            sessions[m.session] = {"channel": m.channel, "ts": m.session_ts or m.ts}
    p_node: dict[str, int] = {}
    rels = w["rels"]
    for key, p in persons.items():
        p_node[key] = next_id
        w["persons"].writerow([next_id, key, gid, p["name"], p["speaker_id"],
                               ARRAY_DELIMITER.join(p["aliases"]), "Person"])
        rels.writerow([next_id, g_node, "MEMBER_OF"])
        next_id += 1
    # the place of every message: the planner transactional ingest uses, from nothing
    region = [{"id": m.id, "channel": m.channel, "session": m.session, "speaker": m.speaker,
               "text": m.text, "order_instant": oi, "index": i}
              for i, (m, oi, _) in enumerate(items)]
    region.sort(key=lambda r: (r["order_instant"], r["index"]))
    for seq, r in enumerate(region):  # numbered as ingest numbers one input (in time order)
        r["seq"] = seq
    plan = plan_order(region, 0, {r["channel"]: {"id": None} for r in region},
                      {r["session"]: {"id": None} for r in region})
    place = {p["id"]: p for p in plan.positions}
    first: dict[str, tuple[int, str]] = {}  # session -> (position of turn 0, channel)
    for r in region:
        if place[r["id"]]["turn"] == 0:
            first[r["session"]] = (place[r["id"]]["turn_created"], r["channel"])
    rank: dict[str, int] = {}
    per_channel: dict[str, int] = {}
    for sid, (_, ch) in sorted(first.items(), key=lambda kv: kv[1][0]):
        rank[sid] = per_channel[ch] = per_channel.get(ch, 0) + 1
    s_node: dict[str, int] = {}
    for sid, s in sessions.items():
        s_node[sid] = next_id
        w["sessions"].writerow([next_id, sid, gid, s["channel"], rank[sid], s["ts"], "Session"])
        rels.writerow([next_id, g_node, "IN_GROUP"])
        next_id += 1
    summary.persons += len(persons)
    summary.persons_created += len(persons)
    summary.sessions += len(sessions)
    summary.sessions_created += len(sessions)
    key = group_key(gid)
    m_node: dict[str, int] = {}
    msg_rows = []
    rel_rows = []
    for r in region:
        m, _, inst = items[r["index"]]
        p = place[m.id]
        node = m_node[m.id] = next_id
        next_id += 1
        msg_rows.append([
            node, m.id, gid, m.channel, m.text, m.speaker, m.session, p["turn"], m.ts,
            repr(inst), repr(r["order_instant"]), r["seq"], p["turn_created"],
            m.reply_to, p["search_text"], key, MESSAGE_LABELS if has_visible(m.text) else "Message",
            *_import_columns(m),
        ])
        rel_rows.append([node, p_node[pid(m)], "SOURCE"])
        rel_rows.append([node, s_node[m.session], "IN_SESSION"])
    w["messages"].writerows(msg_rows)
    rels.writerows(rel_rows)
    # NEXT: per channel, in conversation order
    rels.writerows([m_node[link["from"]], m_node[link["to"]], "NEXT"] for link in plan.links
                   if link["to"] is not None)
    rels.writerows([m_node[m.id], m_node[m.reply_to], "REPLY_TO"] for m, _, _ in items
                   if m.reply_to and m.reply_to in m_node)
    summary.messages_written += len(items)
    return next_id


def _import_columns(m: Any) -> list[Any]:
    """The chat-import columns of a message (kind, no_text, attachments, mentions, edits; as
    ``graphmem.verbatim.ingest`` stores them; a record without them gets the defaults)."""
    attachments = getattr(m, "attachments", ())
    edited_ts = getattr(m, "edited_ts", "")
    return [getattr(m, "kind", ""), str(not has_visible(m.text)).lower(),
            ARRAY_DELIMITER.join(a.name for a in attachments), ARRAY_DELIMITER.join(a.media_type for a in attachments),
            ARRAY_DELIMITER.join(getattr(m, "mentions", ())), times.normalize(edited_ts) if edited_ts else "",
            str(bool(getattr(m, "edited", False) or edited_ts)).lower()]


def write_csv(conversations: list[Conversation], folder: Path) -> IngestSummary:
    """Write node and relationship CSV files for ``neo4j-admin database import`` into ``folder``.

    One file per kind (``groups.csv``, ``persons.csv``, ``sessions.csv``, ``messages.csv``,
    ``rels.csv``), header first. The reference path for every input format;
    :func:`graphmem.verbatim.bulk_jsonl.write_csv_jsonl` is the parallel one for JSON lines.

    Raises:
        InvalidInputError: a record is wrong (raised before any file is written).
    """
    for conv in conversations:
        validate(conv)
    summary = IngestSummary()
    files = CsvFiles(folder)
    next_id = 0
    seen_groups: set[str] = set()
    try:
        for conv in conversations:
            gid = conv.group_id
            if gid in seen_groups:
                raise LocalServerError(f"group {gid!r} appears twice in the input of a first load")
            seen_groups.add(gid)
            deliveries = collapse(conv)
            for d in deliveries:
                if len(d.texts) > 1:
                    raise InvalidInputError(
                        "the first-load importer takes one text per message id; load edits with "
                        "graphmem ingest", source=conv.source, record=d.m.source_ref or d.m.id, field="text")
            items = [(d.m, d.order_instant, instant(d.m.ts)) for d in deliveries]
            next_id = write_group(files.w, gid, conv.name or gid, items, len(conv.messages) - len(items),
                                  next_id, summary)
    finally:
        files.close()
    return summary


def import_conversations(
    settings: Settings, conversations: list[Conversation], folder: Path, *, overwrite: bool = False,
    stop_server: bool = False,
) -> ImportReport:
    """Load conversations into the local server's database with the offline importer.

    The input is checked and the CSV files are written first, while a running server keeps
    running: a bad record is reported with the server and the store untouched. Only then is
    the server stopped (``stop_server``) and the database replaced.

    Args:
        settings: graphmem settings (the local server's home).
        conversations: parsed input, one per group (each group once).
        folder: where the CSV files are written (kept for inspection; may be deleted after).
        overwrite: replace a database that already holds data.
        stop_server: stop the running local server once the files are written (the caller
            starts it again); when false, a running server is refused before anything is read.

    Returns:
        An :class:`ImportReport`: the same counts ``ingest`` reports, seconds for "csv" and
        "import", and whether the server was stopped. Start the server and run ``graphmem
        schema apply`` afterwards (indexes build then), and ``graphmem embed --group G`` for
        vectors.

    Raises:
        LocalServerError: the server is running and ``stop_server`` is false, the database
            holds data and ``overwrite`` is false (both checked before the input is read), or
            the importer failed: its cause and output are in the message, the database is as
            it was, and a server stopped for the import runs again (else the message says why
            not and how to start it).
        InvalidInputError: a record is wrong (nothing is imported, the server is not stopped),
            or ``folder`` cannot be written (field ``csv_dir``).
    """
    def write() -> CsvWritten:
        return CsvWritten(write_csv(conversations, folder), {k: [folder / f"{k}.csv"] for k in HEADERS})

    return import_files(settings, folder, write, overwrite=overwrite, stop_server=stop_server)


@dataclass
class CsvWritten:
    """What a CSV writer handed to :func:`import_files`: the ingest counts, the files per kind
    (``nodes``/``rels`` ... as in :data:`HEADERS`, header file first), and which path wrote them
    (``"reference"`` or ``"parallel"``) in how many parts."""

    summary: IngestSummary
    files: dict[str, list[Path]]
    path: str = "reference"
    parts: int = 1


def import_files(
    settings: Settings, folder: Path, write: Callable[[], CsvWritten], *, overwrite: bool = False,
    stop_server: bool = False,
) -> ImportReport:
    """The import around a CSV writer: checks, ``write()``, stop, neo4j-admin, restore on failure.

    The server and database are checked before ``write`` reads any input, and the server is
    stopped only after ``write`` returned (every record checked). Used by
    :func:`import_conversations` (any parsed format) and
    :func:`graphmem.verbatim.bulk_jsonl.import_jsonl` (JSON lines on every core).

    Raises:
        LocalServerError, InvalidInputError: as :func:`import_conversations`.
    """
    _undo_dead_import(settings, restart=stop_server)
    server = check_can_import(settings, overwrite=overwrite, running_ok=stop_server)
    csv_folder(folder)
    report = ImportReport(summary=IngestSummary())
    t = Stopwatch()
    written = write()
    report.summary = written.summary
    report.seconds["csv"] = t.elapsed_s
    report.csv_path, report.csv_parts = written.path, written.parts
    report.stopped_server = _stop_for_import(server, report)
    report.seconds["import"], report.tool_output = _import_or_restore(settings, server, folder, written.files, report)
    return report


def _undo_dead_import(settings: Settings, *, restart: bool) -> None:
    """Put back the database of an import killed half-way (its process is gone), so this one
    starts from the state before it; when that import had stopped the server, start it again
    (``restart``: this import may stop it itself), so the checks see it as it was."""
    server = LocalServer(settings)
    if server.pid() is not None:
        return
    undone = server.undo_dead_import()
    for line in undone:
        logger.warning("%s", line)
    if restart and any(line.endswith("(it had stopped the server)") for line in undone):
        server.start()


def _stop_for_import(server: LocalServer, report: ImportReport) -> bool:
    """Stop the local server when it runs (the input is checked and written by now)."""
    t = Stopwatch()
    stopped = server.stop()
    if stopped:
        report.seconds["stop"] = t.elapsed_s
    return stopped


def _import_or_restore(
    settings: Settings, server: LocalServer, folder: Path, files: dict[str, list[Path]], report: ImportReport,
) -> tuple[float, str]:
    """:func:`run_importer`, with the database as it was and the server running again when it fails.

    The database's store and transaction-log folders are moved aside (a rename, no copy) before
    the importer runs and put back if it fails, whatever it left behind is removed; a server
    stopped for the import (``report.stopped_server``) is then started again. A process killed
    meanwhile (SIGKILL) takes neo4j-admin with it (:func:`run_importer`) and leaves the aside
    folder with its note: the next start of the server or the next import puts the database
    back (:meth:`graphmem.store.local_server.LocalServer.undo_dead_import`).

    Raises:
        LocalServerError: the importer failed; the message gives its cause, says that the
            database is as it was and whether the server runs again (if it could not be
            started, why and how to start it).
    """
    record_csv_files(settings, folder, report.summary.group_ids, files)  # forget clears them
    aside = server.begin_import(stopped_server=report.stopped_server)
    existed = [i for i in range(2) if (aside / str(i)).exists()]
    try:
        result = run_importer(settings, server, folder, files)
    except BaseException as e:  # put the database back whatever stopped the import (^C too)
        server.put_back(aside, existed)
        if not isinstance(e, LocalServerError):
            raise
        state = "The database was left as it was (nothing imported)"
        if not report.stopped_server:
            raise LocalServerError(f"{e}\n{state}.") from e
        try:
            server.start()
        except LocalServerError as e2:
            raise LocalServerError(
                f"{e}\n{state}, but the server stopped for the import could not be started again:\n{e2}\n"
                f"Start it with `graphmem neo4j start` (its output: {server.console_log})."
            ) from e
        raise LocalServerError(f"{e}\n{state}; the server stopped for the import was started again.") from e
    server.finish_import(aside)
    return result


def importer_cause(output: str) -> str:
    """The one line of neo4j-admin's output that says why it failed (its innermost ``Caused by``,
    else its first line that is not a stack frame)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    causes = [ln.removeprefix("Caused by:").strip() for ln in lines if ln.startswith("Caused by:")]
    if causes:
        return causes[-1]
    plain = [ln for ln in lines if not ln.startswith("at ") and not ln.startswith("...")]
    return plain[0] if plain else "no output"


def check_can_import(settings: Settings, *, overwrite: bool, running_ok: bool = False) -> LocalServer:
    """The local server, after checking that the importer may replace its database.

    Nothing is stopped or changed here. A database holds data when it holds any node: one
    that ``graphmem neo4j start`` just created, with or without ``graphmem schema apply``
    (constraints and indexes are no nodes), is imported into without ``overwrite``. A running
    server is asked (``stats/any_node``: at most one node read); a stopped server cannot be
    asked, so a database folder with files in it is refused unless ``overwrite`` (start the
    server and the check asks it instead).

    Args:
        running_ok: a running server is allowed (the caller stops it once the input is written).

    Raises:
        LocalServerError: the server is running (unless ``running_ok``); or ``overwrite`` is
            false and the running server's database holds a node, or the server is stopped and
            its database folder has files, or the running server cannot be asked.
    """
    server = LocalServer(settings)
    running = server.pid() is not None
    if not running_ok and running:
        raise LocalServerError("stop the local server first (graphmem neo4j stop): the importer needs it down")
    if overwrite:
        return server
    db = settings.neo4j_database
    if running:
        if _holds_nodes(settings, server):
            raise LocalServerError(
                f"database {db!r} holds data; the importer replaces it: "
                "pass --overwrite to do so, or use `graphmem ingest --embed later`"
            )
        return server
    db_dir = server.home / "data" / "databases" / db
    if db_dir.exists() and any(db_dir.iterdir()):
        start = "start it (`graphmem neo4j start`) to have it checked, " if running_ok else ""
        raise LocalServerError(
            f"database {db!r} already exists and the server is stopped, so whether it holds data cannot "
            f"be checked; the importer replaces it: {start}pass --overwrite to replace it, or use "
            "`graphmem ingest --embed later`"
        )
    return server


def _holds_nodes(settings: Settings, server: LocalServer) -> bool:
    """Whether the running local server's database holds any node (asked over its Bolt port).

    Raises:
        LocalServerError: the server cannot be reached or asked (still starting, wrong password ...).
    """
    local = settings.model_copy(update={"neo4j_uri": server.status().bolt_uri})
    try:
        driver = open_driver(local)
        try:
            return bool(Store(driver, settings.neo4j_database).read("stats/any_node")[0]["nodes"])
        finally:
            driver.close()
    except GraphMemError as e:
        raise LocalServerError(
            f"cannot ask the local server whether database {settings.neo4j_database!r} holds data: {e}\n"
            "Wait until it is ready (`graphmem neo4j start` waits), or pass --overwrite to replace the database."
        ) from e


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that asks Linux to SIGKILL the child when its parent dies (prctl
    PR_SET_PDEATHSIG), or None where there is no prctl. libc is loaded here, in the parent: the
    child between fork and exec may only call what is already resolved (loading a library there
    can deadlock on a lock another thread of the parent held at the fork)."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None).prctl
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


def run_importer(
    settings: Settings, server: LocalServer, folder: Path, files: dict[str, list[Path]],
) -> tuple[float, str]:
    """Run ``neo4j-admin database import full`` on ``files`` (per kind: header file first).

    Returns:
        Seconds taken and the tail of the tool's output.

    Raises:
        LocalServerError: the importer failed (its output is in the message).
    """
    server.assemble()
    server.write_config()
    server._set_initial_password()
    env = dict(os.environ, NEO4J_HOME=str(server.home), NEO4J_CONF=str(server.conf))
    def arg(kind: str) -> str:
        return ",".join(str(p) for p in files[kind])

    cmd = [
        server.java(), f"-Xmx{settings.neo4j_heap_mb}m", "-cp", f"{server.lib}/*", ADMIN_TOOL,
        "database", "import", "full", settings.neo4j_database,
        *(f"--nodes={arg(k)}" for k in NODE_FILES), f"--relationships={arg('rels')}",
        "--id-type=integer", "--multiline-fields=true", "--array-delimiter=U+001F",
        # the importer's list of skipped entries, next to the CSV files (by default it lands
        # in the current directory as ``import.report``)
        f"--report-file={folder / 'import.report'}",
        "--overwrite-destination=true", f"--threads={os.cpu_count() or 2}", "--high-parallel-io=off",
        # the default is 90% of the machine's *free* memory, which on a machine whose RAM is
        # mostly file cache is a few hundred MB; the server's page cache size is the budget
        f"--max-off-heap-memory={max(settings.neo4j_pagecache_mb, 256)}m",
    ]
    t = Stopwatch()
    # neo4j-admin dies with this process (a SIGKILL of graphmem must not leave it writing the
    # database that the next start puts back)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=_die_with_parent())
    seconds = t.elapsed_s
    output = (proc.stdout + proc.stderr)[-4000:]
    if proc.returncode != 0:
        raise LocalServerError(f"neo4j-admin database import failed: {importer_cause(output)}\n{output}")
    return seconds, output
