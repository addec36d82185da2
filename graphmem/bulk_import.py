"""First load of an empty local store through ``neo4j-admin database import full``.

Transactional ingest (graphmem.ingest) pays, per message, for the uniqueness constraint, three
range indexes and a synchronous Lucene update; on the shared 2-core machine that capped
``--embed later`` at ~1,000-1,300 msg/s (docs/scale.md). For a first load into an empty
database Neo4j offers an offline importer that writes the store files directly; indexes and
constraints are then built in bulk by ``graphmem schema apply``.

The graph is the one ``ingest --embed later`` writes (same validation, roster, sessions, order
key ``order_instant``/``seq``, and the same placement planner
(:func:`graphmem.order.plan_order`) for ``turn_created``, ``turn``, ``search_text``, session
numbers and ``NEXT`` per channel; ``group_key``, ``REPLY_TO`` when the target is in the group,
``:PendingEmbedding`` on every message); vectors follow with ``graphmem embed --group G``.
``tests/integration/test_bulk_import.py`` compares the two. An input that repeats an id with
new text (an edit) is refused: load edits with ``graphmem ingest``.

Only the local server (``graphmem neo4j start``) can be loaded this way: the server must be
stopped, and the database is replaced (``--overwrite`` is required when it holds data).
"""

from __future__ import annotations

import csv
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from graphmem.config import Settings
from graphmem.errors import InvalidInputError, LocalServerError
from graphmem.ingest import IngestSummary, collapse, person_key, validate
from graphmem.llm.timing import Stopwatch
from graphmem.order import plan_order
from graphmem.local_server import ADMIN_TOOL, LocalServer
from graphmem.model import Conversation
from graphmem.scope import group_key
from graphmem.times import instant

ARRAY_DELIMITER = "\x1f"  # unit separator: never part of a display name


@dataclass
class ImportReport:
    """What :func:`import_conversations` did: the ingest counts and seconds per phase."""

    summary: IngestSummary
    seconds: dict[str, float] = field(default_factory=dict)
    tool_output: str = ""


def write_csv(conversations: list[Conversation], folder: Path) -> IngestSummary:
    """Write node and relationship CSV files for ``neo4j-admin database import`` into ``folder``.

    Raises:
        InvalidInputError: a record is wrong (raised before any file is written).
    """
    for conv in conversations:
        validate(conv)
    folder.mkdir(parents=True, exist_ok=True)
    summary = IngestSummary()
    files = {
        name: (folder / f"{name}.csv").open("w", encoding="utf-8", newline="")
        for name in ("groups", "persons", "sessions", "messages", "rels")
    }
    w = {k: csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n") for k, f in files.items()}
    w["groups"].writerow([":ID", "id", "name", "message_seq:long", ":LABEL"])
    w["persons"].writerow([":ID", "id", "group_id", "name", "speaker_id", "aliases:string[]", ":LABEL"])
    w["sessions"].writerow([":ID", "id", "group_id", "channel", "index:long", "ts", ":LABEL"])
    w["messages"].writerow([
        ":ID", "id", "group_id", "channel", "text", "speaker", "session", "turn:long", "ts",
        "instant:double", "order_instant:double", "seq:long", "turn_created:long", "reply_to",
        "search_text", "group_key", ":LABEL",
    ])
    w["rels"].writerow([":START_ID", ":END_ID", ":TYPE"])
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
            messages = [d.m for d in deliveries]
            summary.messages_skipped += len(conv.messages) - len(messages)
            g_node = next_id
            next_id += 1
            w["groups"].writerow([g_node, gid, conv.name or gid, len(messages), "Group"])
            summary.groups += 1
            summary.groups_created += 1
            summary.group_ids.append(gid)
            persons: dict[str, dict] = {}
            sessions: dict[str, dict] = {}
            for m in messages:
                p = persons.setdefault(person_key(m), {"name": m.speaker, "speaker_id": m.speaker_id, "aliases": []})
                p["name"] = m.speaker
                if m.speaker not in p["aliases"]:
                    p["aliases"].append(m.speaker)
                sessions.setdefault(m.session, {"channel": m.channel, "index": m.session_index,
                                                "ts": m.session_ts or m.ts})
            p_node: dict[str, int] = {}
            for key, p in persons.items():
                p_node[key] = next_id
                w["persons"].writerow([next_id, key, gid, p["name"], p["speaker_id"],
                                       ARRAY_DELIMITER.join(p["aliases"]), "Person"])
                w["rels"].writerow([next_id, g_node, "MEMBER_OF"])
                next_id += 1
            # the place of every message: the planner transactional ingest uses, from nothing
            region = [{"id": d.m.id, "channel": d.m.channel, "session": d.m.session, "speaker": d.m.speaker,
                       "text": d.m.text, "order_instant": d.order_instant, "index": i}
                      for i, d in enumerate(deliveries)]
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
            for sid, (_, ch) in sorted(first.items(), key=lambda kv: kv[1][0]):
                rank[sid] = 1 + sum(1 for other in rank if first[other][1] == ch)
            s_node: dict[str, int] = {}
            for sid, s in sessions.items():
                s_node[sid] = next_id
                w["sessions"].writerow([next_id, sid, gid, s["channel"], rank[sid], s["ts"], "Session"])
                w["rels"].writerow([next_id, g_node, "IN_GROUP"])
                next_id += 1
            summary.persons += len(persons)
            summary.persons_created += len(persons)
            summary.sessions += len(sessions)
            summary.sessions_created += len(sessions)
            key = group_key(gid)
            m_node: dict[str, int] = {}
            for r in region:
                m = deliveries[r["index"]].m
                p = place[m.id]
                node = m_node[m.id] = next_id
                next_id += 1
                w["messages"].writerow([
                    node, m.id, gid, m.channel, m.text, m.speaker, m.session, p["turn"], m.ts,
                    repr(instant(m.ts)), repr(r["order_instant"]), r["seq"], p["turn_created"],
                    m.reply_to, p["search_text"], key,
                    f"Message{ARRAY_DELIMITER}PendingEmbedding",  # labels split like arrays
                ])
                w["rels"].writerow([node, p_node[person_key(m)], "SOURCE"])
                w["rels"].writerow([node, s_node[m.session], "IN_SESSION"])
            for link in plan.links:  # NEXT: per channel, in conversation order
                if link["to"] is not None:
                    w["rels"].writerow([m_node[link["from"]], m_node[link["to"]], "NEXT"])
            for m in messages:
                if m.reply_to and m.reply_to in m_node:
                    w["rels"].writerow([m_node[m.id], m_node[m.reply_to], "REPLY_TO"])
            summary.messages_written += len(messages)
    finally:
        for f in files.values():
            f.close()
    return summary


def import_conversations(
    settings: Settings, conversations: list[Conversation], folder: Path, *, overwrite: bool = False,
) -> ImportReport:
    """Load conversations into the stopped local server's database with the offline importer.

    Args:
        settings: graphmem settings (the local server's home).
        conversations: parsed input, one per group (each group once).
        folder: where the CSV files are written (kept for inspection; may be deleted after).
        overwrite: replace a database that already holds data.

    Returns:
        An :class:`ImportReport`: the same counts ``ingest`` reports, seconds for "csv" and
        "import". Start the server and run ``graphmem schema apply`` afterwards (indexes build
        then), and ``graphmem embed --group G`` for vectors.

    Raises:
        LocalServerError: the server is running, the database holds data and ``overwrite`` is
            false, or the importer failed (its output is in the message).
        InvalidInputError: a record is wrong (nothing is written).
    """
    server = LocalServer(settings)
    if server.pid() is not None:
        raise LocalServerError("stop the local server first (graphmem neo4j stop): the importer needs it down")
    db_dir = server.home / "data" / "databases" / settings.neo4j_database
    if db_dir.exists() and any(db_dir.iterdir()) and not overwrite:
        raise LocalServerError(
            f"database {settings.neo4j_database!r} already exists; the importer replaces it: "
            "pass --overwrite to do so, or use `graphmem ingest --embed later`"
        )
    report = ImportReport(summary=IngestSummary())
    t = Stopwatch()
    report.summary = write_csv(conversations, folder)
    report.seconds["csv"] = t.elapsed_s
    server.assemble()
    server.write_config()
    server._set_initial_password()
    env = dict(os.environ, NEO4J_HOME=str(server.home), NEO4J_CONF=str(server.conf))
    cmd = [
        server.java(), f"-Xmx{settings.neo4j_heap_mb}m", "-cp", f"{server.lib}/*", ADMIN_TOOL,
        "database", "import", "full", settings.neo4j_database,
        f"--nodes={folder / 'groups.csv'}", f"--nodes={folder / 'persons.csv'}",
        f"--nodes={folder / 'sessions.csv'}", f"--nodes={folder / 'messages.csv'}",
        f"--relationships={folder / 'rels.csv'}",
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
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    report.seconds["import"] = t.elapsed_s
    report.tool_output = (proc.stdout + proc.stderr)[-4000:]
    if proc.returncode != 0:
        raise LocalServerError(f"neo4j-admin database import failed:\n{report.tool_output}")
    return report
