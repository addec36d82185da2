"""MCP results stay under a documented size and page instead of coming as one blob (issue 27,
item 9): every list tool answers at most ``max_bytes`` (64,000 by default) of compact JSON, once
(one text block, no structuredContent), with ``truncated`` / ``next_cursor``; walking the
pages gives what the library gives in one call. The server runs over stdio as an agent starts
it, scoped with ``--group``."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from graphmem.core.paging import LIST_TEXT_CHARS, RESULT_BYTES  # noqa: E402
from graphmem.groups.export import export_lines  # noqa: E402
from graphmem.query.people import get_message, person_memory, provenance  # noqa: E402
from graphmem.recall.search import search_group  # noqa: E402
from graphmem.verbatim.ingest import ingest_conversations  # noqa: E402
from tests.factories import conversation  # noqa: E402
from tests.integration.test_mcp import agent  # noqa: E402
from tests.integration.test_paging import chat_rows  # noqa: E402
from tests.test_query_fixtures import MEMBERS, build_family  # noqa: E402

pytestmark = pytest.mark.neo4j


class Pages:
    """Calls one MCP tool page after page; keeps each result's size in bytes."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sizes: list[int] = []

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        r = await self.client.call_tool(tool, arguments)
        assert not r.is_error, f"{tool} failed: {r.content}"
        assert r.structured_content is None and len(r.content) == 1  # the data once, as text
        text = r.content[0].text
        self.sizes.append(len(text.encode("utf-8")))
        result: dict[str, Any] = json.loads(text)
        return result

    async def walk(self, tool: str, *, cursor_field: str = "cursor", **arguments: Any) -> list[dict[str, Any]]:
        pages = [await self.call(tool, **arguments)]
        while pages[-1]["next_cursor"] is not None:
            assert pages[-1]["truncated"] is not False
            pages.append(await self.call(tool, **arguments, **{cursor_field: pages[-1]["next_cursor"]}))
            assert len(pages) < 300
        return pages


def test_every_list_tool_pages_under_the_size_cap(store, embedder, make_group):
    chat, family = make_group("mcp-paging"), make_group("mcp-paging-family")
    ingest_conversations(store, [conversation(chat, chat_rows())], embedder)
    build_family(store, embedder, family)
    ranking = [h.id for h in search_group(store, embedder, chat, "budget", k=100, pool_n=100).hits]
    whole_text = get_message(store, chat, "p10").text
    lines = list(export_lines(store, chat))

    async def session() -> None:
        async with agent("--tools", "all", "--group", chat, "--group", family) as c:
            t = Pages(c)
            # the groups this server reaches, and only those
            groups = await t.walk("list_groups", limit=1)
            assert [[g["id"] for g in p["groups"]] for p in groups] == [[x] for x in sorted([chat, family])]

            # search: k=100 hits of ~1.5 KB do not fit 64,000 bytes: pages, then the same ranking
            first = await t.call("search_messages", group_id=chat, query="budget", k=100)
            assert first["truncated"] is True and 20 < len(first["hits"]) < 45
            pages = await t.walk("search_messages", group_id=chat, query="budget", k=100)
            assert [h["id"] for p in pages for h in p["hits"]] == ranking
            long_hit = next(h for p in pages for h in p["hits"] if h["id"] == "p10")
            assert (len(long_hit["text"]), long_hit["text_truncated"], long_hit["text_chars"]) == (
                LIST_TEXT_CHARS, True, 6_000)
            tiny = await t.walk("search_messages", group_id=chat, query="budget", k=100, max_bytes=1_000)
            assert [len(p["hits"]) for p in tiny] == [1] * 45  # a hit over the size: one a page, and on
            assert [h["id"] for p in tiny for h in p["hits"]] == ranking

            # the whole message, in slices that fit
            parts = [await t.call("get_message", group_id=chat, message_id="p10", max_bytes=2_500)]
            while parts[-1]["next_text_offset"] is not None:
                parts.append(await t.call("get_message", group_id=chat, message_id="p10", max_bytes=2_500,
                                          text_offset=parts[-1]["next_text_offset"]))
            assert "".join(p["text"] for p in parts) == whole_text and len(parts) >= 3
            assert (await t.call("get_message", group_id=chat, message_id="p10"))["text"] == whole_text

            # read_cypher: 45 rows of ~1.5 KB, ordered, in pages; long strings cut and counted
            query = "MATCH (m:Message {group_id: $group_id}) RETURN m.id AS id, m.text AS text ORDER BY m.seq"
            rows = await t.walk("read_cypher", group_id=chat, query=query, max_rows=1000)
            assert len(rows) > 1 and [r["id"] for p in rows for r in p["rows"]] == [f"p{i:02d}" for i in range(1, 46)]
            assert sum(p["values_clipped"] for p in rows) == 1

            # export: the same lines as the library's, 64,000 bytes a page
            export = await t.walk("export_group", group_id=chat)
            assert len(export) > 1 and [x for p in export for x in p["lines"]] == json.loads(json.dumps(lines))

            # roster, person memory and provenance, a page at a time
            roster = await t.walk("roster", group_id=family, limit=2)
            assert [m["id"] for p in roster for m in p["persons"]] == sorted(MEMBERS)
            memory = await t.walk("person_memory", group_id=family, person_id="Mom", mode="full", limit=1)
            whole = person_memory(store, family, "Mom", mode="full")
            assert [[r["id"] for r in ch] for p in memory for ch in p["chains"]] == [[r.id for r in ch]
                                                                                    for ch in whole.chains]
            prov = await t.walk("record_provenance", group_id=family, record_id="a3", limit=1)
            want = provenance(store, family, "a3")
            assert [x["id"] for p in prov for x in [*p["messages"], *p["chain"]]] == \
                [*(m.id for m in want.messages), *(r.id for r in want.chain)]

            assert max(t.sizes) <= RESULT_BYTES, sorted(t.sizes)[-5:]

    anyio.run(session)
