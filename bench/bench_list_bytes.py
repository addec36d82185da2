"""Bytes an agent receives per MCP list call: one unpaged result as the MCP SDK sent it before
(the JSON twice: structured content, and again as text indented by 2) against graphmem's pages
(compact JSON once, at most ``max_bytes`` = 64,000 by default). docs/mcp.md, "Results".

Usage:
    .venv/bin/python bench/bench_list_bytes.py [--messages 300] [--members 5000] [--keep]

What it does:
1. A group of pasted build logs: ``--messages`` messages of 500 to 20,000 characters (about
   8 KB on average), each naming a build; embedded with the configured embedder.
2. A group of ``--members`` members, one message each (``--embed later``: no vectors needed).
3. Prints, per call, the bytes of the unpaged result the old server sent (compact + indented
   JSON of the same object) and, for the paged result, the pages a walk takes and the largest
   page in bytes. Search: ``k`` 20 and 100; read_cypher: 166 rows of message text (the old
   default of 1 MB let them through whole); export: one page at the old default of 256,000
   bytes; roster: the whole group.

Requires the local Neo4j (make neo4j). Figures go to stdout; nothing here is a test. Both
groups are deleted at the end unless --keep.
"""

from __future__ import annotations

import argparse
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pydantic_core  # noqa: E402

from graphmem.analyst import read_cypher  # noqa: E402
from graphmem.core.model import Conversation, MessageRecord  # noqa: E402
from graphmem.core.paging import RESULT_BYTES, json_size  # noqa: E402
from graphmem.core.results import RosterPage  # noqa: E402
from graphmem.facade import Memory  # noqa: E402
from graphmem.groups.export import export_page  # noqa: E402
from graphmem.recall.search import search_group  # noqa: E402
from graphmem.verbatim.roster import read_roster, roster_page  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LOG = ("[INFO] compiling module {m} ... ok\n[WARN] deprecated call in util.{m}\n"
       "[ERROR] test_{m} failed: expected 200, got 503 (retry 3/3)\n")


def old_bytes(result: Any) -> int:
    """What the MCP SDK's default conversion sent: structuredContent plus the same, indented, as text."""
    return len(pydantic_core.to_json(result)) + len(pydantic_core.to_json(result, indent=2))


def walk(read: Any) -> tuple[int, int]:
    """(pages, largest page in bytes) of a paged call ``read(cursor)``."""
    pages, largest, cursor = 0, 0, None
    while True:
        page = read(cursor)
        pages += 1
        largest = max(largest, json_size(page))
        if page.next_cursor is None:
            return pages, largest
        cursor = page.next_cursor


def row(name: str, old: int, pages: int, largest: int) -> None:
    print(f"| {name} | {old / 1000:,.0f} KB | {pages} | {largest / 1000:,.1f} KB |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=300)
    ap.add_argument("--members", type=int, default=5000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    rng = random.Random(7)
    logs, crowd = f"bench-logs-{uuid.uuid4().hex[:8]}", f"bench-crowd-{uuid.uuid4().hex[:8]}"
    with Memory.open() as mem:
        store, embedder = mem.runtime.store, mem.runtime.embedder
        msgs = []
        for i in range(args.messages):
            size = rng.randint(500, 20_000)
            body = "".join(LOG.format(m=f"{i}_{j}") for j in range(size // 120 + 1))
            msgs.append(MessageRecord(id=f"log{i:04d}", group_id=logs, session=f"s{i // 50}", session_index=i // 50,
                                      turn=i % 50, speaker=("Ana", "Bo", "Cy", "Dee")[i % 4],
                                      text=(f"build {i} failed again, log below:\n" + body)[:size],
                                      ts=(T0 + timedelta(minutes=i)).isoformat(), source_ref=str(i)))
        mem.ingest([Conversation(group_id=logs, name="logs", messages=msgs, source="bench")])
        members = [MessageRecord(id=f"m{i:05d}", group_id=crowd, session="s1", session_index=1, turn=i,
                                 speaker=f"Member {i:05d}", speaker_id=f"u{i:05d}", text=f"hello from {i}",
                                 ts=(T0 + timedelta(seconds=i)).isoformat(), source_ref=str(i))
                   for i in range(args.members)]
        mem.ingest([Conversation(group_id=crowd, name="crowd", messages=members, source="bench")], embed="later")
        try:
            print(f"groups: {args.messages} log messages (mean {sum(len(m.text) for m in msgs) / len(msgs):,.0f} "
                  f"characters), {args.members} members; max_bytes {RESULT_BYTES:,}\n")
            print("| MCP call | before: one result | pages now | largest page |")
            print("|---|---|---|---|")
            for k in (20, 100):
                whole = search_group(store, embedder, logs, "build failed", k=k, pool_n=max(40, k), max_text_chars=None)
                pages = walk(lambda c, k=k: search_group(store, embedder, logs, "build failed", k=k, pool_n=max(40, k),
                                                         cursor=c, max_bytes=RESULT_BYTES))
                row(f"search_messages k={k}", old_bytes(whole), *pages)
            query = "MATCH (m:Message {group_id: $group_id}) RETURN m.id AS id, m.text AS text ORDER BY m.seq LIMIT 166"
            whole_rows = read_cypher(store, logs, query, max_rows=10_000, max_bytes=1_000_000, max_value_chars=None)
            row(f"read_cypher, {len(whole_rows.rows)} rows (truncated={whole_rows.truncated} at 1 MB)",
                old_bytes(whole_rows),
                *walk(lambda c: read_cypher(store, logs, query, max_rows=10_000, cursor=c)))
            row("export_group (old default page 256,000 bytes)", old_bytes(export_page(store, logs, max_bytes=256_000)),
                *walk(lambda c: export_page(store, logs, cursor=c, max_bytes=RESULT_BYTES)))
            roster = RosterPage(group_id=crowd, persons=read_roster(store, crowd))
            row(f"roster, {args.members} members", old_bytes(roster),
                *walk(lambda c: roster_page(store, crowd, limit=1000, cursor=c, max_bytes=RESULT_BYTES)))
        finally:
            if not args.keep:
                mem.forget_group(logs)
                mem.forget_group(crowd)


if __name__ == "__main__":
    main()
