"""Search as an entry point: ``GET /groups/{id}/search``, the typed client, ``graphmem search
--json`` and the MCP tool answer with one object (hits and how they were ranked), including
the signal that vectors are missing and fulltext alone was used; unknown groups and bad
parameters get the documented errors."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.main import create_app
from graphmem.cli import app as cli
from graphmem.client import GraphMemClient
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.search import search_group, search_messages
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation
from tests.integration.test_scope import rows

pytestmark = pytest.mark.neo4j


@pytest.fixture
def client(store, schema):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


def hit_ids(body: dict) -> list[str]:
    return [h["id"] for h in body["hits"]]


def test_api_search_is_the_cli_json_and_says_when_vectors_are_missing(store, embedder, client, make_group):
    gid = make_group("search-api")
    ingest_conversations(store, [conversation(gid, rows("p", 12))], None, embed="later")

    r = client.get(f"/groups/{gid}/search", params={"q": "budget review storm", "k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["group_id"] == gid and body["query"] == "budget review storm"
    assert body["mode"] == "hybrid" and body["mode_used"] == "fulltext"
    assert body["vectors_pending"] == 12
    assert "12 message(s)" in body["warning"] and "graphmem embed --group" in body["warning"]
    # every face's way to fill them, not the command line's alone (a new-user trial over HTTP)
    assert f"POST /groups/{gid}/embed" in body["warning"] and "Memory.embed()" in body["warning"]
    assert len(body["hits"]) == 3 and all(h["ranks"] == {"fulltext": i} for i, h in enumerate(body["hits"], 1))
    # the best hits are the budget review turns (the only topic with those words); a turn after
    # one matches too, by its previous turn in its fulltext document
    assert "budget review" in body["hits"][0]["text"]
    # vector mode while nothing has a vector: nothing ranked, and it says why
    r = client.get(f"/groups/{gid}/search", params={"q": "budget review", "mode": "vector"})
    assert r.status_code == 200 and r.json()["hits"] == []
    assert "only messages with a vector are ranked" in r.json()["warning"]

    # the CLI prints the same object (the warning goes to stderr, so stdout stays JSON)
    res = CliRunner().invoke(cli, ["search", "--group", gid, "budget review storm", "-k", "3", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == body
    assert res.stderr.count("no vector yet") == 1

    embed_group(store, embedder, gid, batch_size=5)
    r = client.get(f"/groups/{gid}/search", params={"q": "budget review storm", "k": 3})
    after = r.json()
    assert after["mode_used"] == "hybrid" and after["vectors_pending"] == 0 and after["warning"] == ""
    assert any("vector" in h["ranks"] for h in after["hits"])
    lib = search_messages(store, embedder, gid, "budget review storm", k=3)
    assert hit_ids(after) == [h.id for h in lib]
    # fulltext mode needs no vectors: no warning even while some are missing
    ingest_conversations(store, [conversation(gid, rows("p", 12) + rows("q", 2))], None, embed="later")
    r = client.get(f"/groups/{gid}/search", params={"q": "budget", "mode": "fulltext"})
    assert r.json()["vectors_pending"] == 2 and r.json()["warning"] == ""


def test_api_search_errors_name_the_field(store, embedder, client, make_group):
    gid = make_group("search-api-err")
    ingest_conversations(store, [conversation(gid, rows("e", 3))], embedder)
    for params, field in (
        ({"q": "budget", "k": 0}, "k"), ({"q": "budget", "k": 101}, "k"), ({"q": "budget", "k": "x"}, "k"),
        ({"q": "budget", "mode": "semantic"}, "mode"), ({"q": ""}, "q"), ({"q": "   "}, "q"), ({}, "q"),
        ({"q": "budget", "expand": 6}, "expand"), ({"q": "budget", "pool": 0}, "pool"),
    ):
        r = client.get(f"/groups/{gid}/search", params=params)
        assert r.status_code == 422, (params, r.text)
        assert r.json()["error"] == "InvalidInputError" and r.json()["field"] == field, (params, r.json())
    r = client.get("/groups/no-such-search-group/search", params={"q": "budget"})
    assert r.status_code == 404 and r.json() == {"detail": "no group 'no-such-search-group'", "error": "NotFoundError"}
    # the library says the same, with the same fields
    with pytest.raises(NotFoundError, match="no group 'no-such-search-group'"):
        search_group(store, embedder, "no-such-search-group", "budget")
    for kw, field in (({"k": 101}, "k"), ({"mode": "semantic"}, "mode"), ({"pool_n": 0}, "pool_n")):
        with pytest.raises(InvalidInputError) as e:
            search_group(store, embedder, gid, "budget", **kw)
        assert e.value.field == field


def test_client_search_mirrors_the_route(store, embedder, client, make_group):
    gid = make_group("search-client")
    ingest_conversations(store, [conversation(gid, rows("c", 8))], embedder)
    gm = GraphMemClient("http://testserver", http=client)
    result = gm.search(gid, "lighthouse tour", k=2, mode="fulltext")
    assert result.mode_used == "fulltext" and result.vectors_pending == 0
    assert [h.id for h in result.hits] == [h.id for h in search_messages(
        store, embedder, gid, "lighthouse tour", k=2, mode="fulltext")]
    with pytest.raises(NotFoundError):
        gm.search("no-such-client-group", "x")
    with pytest.raises(InvalidInputError) as e:
        gm.search(gid, "x", k=0)
    assert e.value.field == "k"


def test_mcp_search_says_when_vectors_are_missing_and_refuses_blank_text(store, embedder, make_group):
    import anyio

    from tests.integration.test_mcp import agent, call, call_error

    gid = make_group("search-mcp")
    ingest_conversations(store, [conversation(gid, rows("m", 6))], None, embed="later")

    async def session() -> None:
        async with agent() as c:
            got = await call(c, "search_messages", group_id=gid, query="lighthouse tour noon", k=2)
            assert (got["mode"], got["mode_used"], got["vectors_pending"]) == ("hybrid", "fulltext", 6)
            assert "graphmem embed --group" in got["warning"] and got["hits"]
            got = await call(c, "search_messages", group_id=gid, query="lighthouse", k=2, mode="vector")
            assert got["hits"] == [] and "only messages with a vector" in got["warning"]
            text = await call_error(c, "append_messages", group_id=gid, messages=[
                {"id": "z1", "speaker": "Ana", "text": "fine", "ts": "yesterday"}])
            assert "'ts'" in text  # (blank text is stored since issue 26: a bad time is refused)

    anyio.run(session)
    assert group_state_pending(store, gid) == 6  # nothing of the refused call was written


def group_state_pending(store, gid: str) -> int:
    from graphmem.recall.search import group_state

    return group_state(store, gid).pending


def test_api_search_keeps_the_groups_term_statistics_in_the_process_cache(store, embedder, client, make_group):
    """The API's searches share the Runtime's GroupCache: the group's BM25 statistics are built
    once and read again, not rebuilt from all its documents by every request."""
    gid = make_group("api-cache")
    ingest_conversations(store, [conversation(gid, rows(gid, 6))], embedder)
    cache = client.app.state.runtime.cache
    assert gid not in cache._stats  # noqa: SLF001 - the cache's own record of what it holds
    assert client.get(f"/groups/{gid}/search", params={"q": "lighthouse", "mode": "fulltext"}).status_code == 200
    built = cache._stats[gid]  # noqa: SLF001
    assert client.get(f"/groups/{gid}/search", params={"q": "printer", "mode": "fulltext"}).status_code == 200
    assert cache._stats[gid] is built  # noqa: SLF001 - the same statistics object, not a rebuild
