"""Identity and text in every spelling (issue 27, item 6), against the real Neo4j.

- One identity rule (``graphmem.core.limits.identity_form``: NFC, trimmed, case-folded;
  invisible characters count): "Zoë" typed on a phone (NFC), on a Mac (NFD), "zoë" and "Zoë "
  are one person when they come without ``speaker_id``, and every lookup - person memory,
  the graph page's person filter, erasure - through the library, the CLI, the HTTP API, the
  typed client and MCP resolves any of those spellings to her; the stored names and texts keep
  their bytes. A misspelling gets a 404 with a "did you mean", never a silent zero.
- Text is matched NFC-normalised: an NFD "café"/"Zürich" is found by an NFC query and the
  other way round (fulltext, group BM25, derived records), older stores are migrated by
  ``schema apply``.
- A lone surrogate in an MCP argument over stdio gets an immediate error naming the argument.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.factories import conversation

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]

NFC, NFD = "Zo\u00eb", "Zoe\u0308"
assert unicodedata.normalize("NFC", NFD) == NFC and NFC != NFD


# --------------------------------------------------------------------------------------------
# MCP over stdio: a lone surrogate gets an answer
# --------------------------------------------------------------------------------------------


class RawAgent:
    """``graphmem mcp`` as a subprocess spoken to in raw JSON-RPC lines (what an agent writes),
    each answer awaited with a deadline: a server that never answers fails the test, not hangs it."""

    def __init__(self) -> None:
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "graphmem", "mcp"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()

    def answer(self, rid: int, timeout_s: float) -> dict[str, Any]:
        while True:
            try:
                msg = json.loads(self.lines.get(timeout=timeout_s))
            except queue.Empty:
                raise AssertionError(f"no answer to request {rid} within {timeout_s} s") from None
            if msg.get("id") == rid:
                return msg

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _call(rid: int, tool: str, arguments_json: str) -> str:
    """A tools/call line whose arguments are given as JSON text (so a lone surrogate escape can
    be written exactly as a client sends it)."""
    return ('{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}'
            % (rid, tool, arguments_json))


def test_mcp_stdio_answers_a_lone_surrogate_at_once_naming_the_argument(store, group_id):
    pytest.importorskip("mcp")
    agent = RawAgent()
    try:
        agent.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        assert "result" in agent.answer(1, 120)
        agent.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

        # search: the query holds "\ud800" (the JSON escape, as a client writes it)
        agent.send(_call(2, "search_messages", '{"group_id": "%s", "query": "caf\\ud800e"}' % group_id))
        out = agent.answer(2, 20)
        result = out["result"]
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert text.startswith("argument 'query': lone UTF-16 surrogate U+D800 at character 3"), text

        # append: the text of the second message holds a lone low surrogate; nothing is written
        msgs = ('[{"id": "a1", "speaker": "Ana", "text": "fine", "ts": "2026-01-01T10:00:00Z"}, '
                '{"id": "a2", "speaker": "Ana", "text": "\\udc00 oops", "ts": "2026-01-01T10:01:00Z"}]')
        agent.send(_call(3, "append_messages", '{"group_id": "%s", "messages": %s}' % (group_id, msgs)))
        text = agent.answer(3, 20)["result"]["content"][0]["text"]
        assert text.startswith("argument 'messages.1.text': lone UTF-16 surrogate U+DC00 at character 0"), text

        # bytes that are not UTF-8 are refused the same way, never turned into U+FFFD
        assert agent.proc.stdin is not None
        agent.proc.stdin.write(('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": '
                                '"search_messages", "arguments": {"group_id": "%s", "query": "caf' % group_id).encode()
                               + b"\xff" + b'"}}}\n')
        agent.proc.stdin.flush()
        text = agent.answer(4, 20)["result"]["content"][0]["text"]
        assert text.startswith("argument 'query': byte 0xFF that is not UTF-8 at character 3"), text

        # another method: a JSON-RPC error naming the place; a valid pair passes as before
        agent.send('{"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "x\\udfff"}}')
        err = agent.answer(5, 20)["error"]
        assert err["code"] == -32602 and "params.uri" in err["message"] and "U+DFFF" in err["message"], err
        agent.send(_call(6, "search_messages", '{"group_id": "%s", "query": "\\ud83d\\ude00 trail"}' % group_id))
        ok = agent.answer(6, 60)["result"]
        assert "NotFoundError: no group" in ok["content"][0]["text"]  # the tool ran (the group is empty)
    finally:
        agent.close()
    rows = store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n", g=group_id)
    assert rows == [{"n": 0}]



def test_mcp_stdio_answers_every_line_it_cannot_read_and_keeps_serving(store, group_id):
    """Lines the SDK's reader refuses got no answer (the agent waited for its timeout), and a
    deeply nested line holding a lone surrogate killed the server (RecursionError in the
    surrogate check: exit 1). Each now gets an answer at once, and the server keeps serving."""
    pytest.importorskip("mcp")
    agent = RawAgent()
    deep = "[" * 5000 + '"\\ud800"' + "]" * 5000
    try:
        agent.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
        assert "result" in agent.answer(1, 120)
        agent.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        requests = {
            3: '{"jsonrpc": "2.0", "id": 3, "method": "tools/call\\ud800", "params": {}}',
            4: '{"jsonrpc": "2.0", "id": 4, "method": "ping", "extra\\udc00": 1}',
            5: _call(5, "search_messages", '{"group_id": "%s", "query": "tab\there"}' % group_id),
            6: _call(6, "search_messages", '{"group_id": "%s", "query": %s}' % (group_id, "[" * 300 + "]" * 300)),
        }
        errs = {}
        for rid, line in requests.items():
            agent.send(line)
            errs[rid] = agent.answer(rid, 20)["error"]
            assert errs[rid]["code"] == -32600 and "nothing was done" in errs[rid]["message"], (rid, errs[rid])
        assert "U+D800" in errs[3]["message"] and "of method" in errs[3]["message"]
        assert "tab" not in errs[5]["message"]  # the rule, never the line's content
        # no id to be read (nested past any reader, cut short, not JSON): a parse error with id null
        for line in (_call(2, "search_messages", '{"group_id": "%s", "query": %s}' % (group_id, deep)),
                     '{"jsonrpc": "2.0", "id": 7, "method": "ping"', "\x01\x02 garbage", "[" * 5000 + "]" * 5000):
            agent.send(line)
            out = agent.answer(None, 20)  # type: ignore[arg-type]
            assert out["error"]["code"] == -32700, out
        agent.send('{"jsonrpc": "2.0", "id": 8, "method": "ping"}')
        assert agent.answer(8, 20)["result"] == {}
        assert agent.proc.poll() is None
    finally:
        agent.close()
    rows = store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n", g=group_id)
    assert rows == [{"n": 0}]


# --------------------------------------------------------------------------------------------
# one person in every spelling
# --------------------------------------------------------------------------------------------

PHONE = "0170 5550123"
#: each message in a session of its own: its fulltext document is then the message alone
CHAT = [
    {"id": "z1", "session": "s1", "speaker": NFC, "text": f"Meet me at the cafe\u0301 in Zu\u0308rich, call {PHONE}"},
    {"id": "z2", "session": "s2", "speaker": NFD, "text": "I booked the night train"},
    {"id": "z3", "session": "s3", "speaker": "zo\u00eb ", "text": "See you on the platform"},
    {"id": "a1", "session": "s4", "speaker": "Ana", "text": "The caf\u00e9 near the Z\u00fcrich station is closed"},
    {"id": "d1", "session": "s5", "speaker": "Dad", "text": "Bring the umbrellas"},
    {"id": "d2", "session": "s6", "speaker": "Dad\u200b", "text": "Transfer the deposit to me"},
]


def _persons(store, gid: str) -> dict[str, dict[str, Any]]:
    rows = store.read_text("MATCH (p:Person {group_id: $g}) OPTIONAL MATCH (m:Message)-[:SOURCE]->(p) "
                           "RETURN p.id AS id, p.aliases AS aliases, collect(m.id) AS messages", g=gid)
    return {r["id"]: {"aliases": sorted(r["aliases"]), "messages": sorted(r["messages"])} for r in rows}


@pytest.fixture
def zoe(store, embedder, group_id) -> str:
    from graphmem.verbatim.ingest import ingest_conversations

    ingest_conversations(store, [conversation(group_id, CHAT)], embedder)
    return group_id


def test_every_spelling_of_a_name_is_one_person_and_stays_byte_exact(store, embedder, zoe):
    from graphmem.verbatim.ingest import ingest_conversations

    persons = _persons(store, zoe)
    # NFC (first), NFD and "zoë " are one person, keyed by the first spelling; "Dad\u200b" is not Dad
    assert persons[NFC] == {"aliases": sorted([NFC, NFD, "zo\u00eb "]), "messages": ["z1", "z2", "z3"]}
    assert set(persons) == {NFC, "Ana", "Dad", "Dad\u200b"}
    stored = {r["id"]: (r["speaker"], r["text"]) for r in store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.speaker AS speaker, m.text AS text", g=zoe)}
    assert stored["z2"][0].encode() == b"Zoe\xcc\x88" and stored["z3"][0] == "zo\u00eb "
    assert stored["z1"][1] == CHAT[0]["text"] and "cafe\u0301" in stored["z1"][1]  # text as received (NFD)

    # a later load in yet other spellings joins her (stored persons are consulted): no new person
    later = [{"id": "z4", "session": "s7", "speaker": "ZO\u00cb", "text": "Running late"},
             {"id": "z5", "session": "s7", "speaker": " zoe\u0308", "text": "Five minutes"}]
    out = ingest_conversations(store, [conversation(zoe, later)], embedder)
    assert out.persons_created == 0
    assert _persons(store, zoe)[NFC]["messages"] == ["z1", "z2", "z3", "z4", "z5"]
    # a redelivery in another spelling of her name is a redelivery, not a conflict
    again = ingest_conversations(store, [conversation(zoe, later)], embedder)
    assert again.messages_skipped == 2 and again.persons_created == 0


def test_a_person_made_by_another_load_meanwhile_is_a_conflict_not_a_second_person(store, embedder, group_id):
    """Two loads racing to create "zoë" and "Zoë": the second finds the first's person under the
    group's lock and stops (retryable); run again, it joins her. The race is made deterministic
    by a store that lets the other load commit right after this load read the persons."""
    from graphmem.core.errors import ConflictError
    from graphmem.store.db import Store
    from graphmem.verbatim.ingest import ingest_conversations

    class RacingStore(Store):
        fired = False

        def read(self, name: str, **params: Any) -> list[dict[str, Any]]:
            rows = super().read(name, **params)
            if name == "ingest/person_ids" and not self.fired:
                self.fired = True  # the other load commits between this load's read and its write
                ingest_conversations(store, [conversation(group_id, [
                    {"id": "o1", "speaker": "zo\u00eb", "text": "first here"}])], embedder)
            return rows

    racing = RacingStore(store.driver)
    mine = conversation(group_id, [{"id": "m1", "speaker": NFC, "text": "me too",
                                    "ts": "2026-01-02T10:00:00"}])
    with pytest.raises(ConflictError, match="run this load again"):
        ingest_conversations(racing, [mine], embedder)
    assert set(_persons(store, group_id)) == {"zo\u00eb"}  # nothing of the refused load
    ingest_conversations(store, [mine], embedder)
    assert _persons(store, group_id) == {"zo\u00eb": {"aliases": sorted(["zo\u00eb", NFC]), "messages": ["m1", "o1"]}}


# --------------------------------------------------------------------------------------------
# text matched NFC-normalised
# --------------------------------------------------------------------------------------------

def test_nfd_and_nfc_text_find_each_other_in_fulltext_and_bm25(store, embedder, zoe):
    from graphmem.recall import lexical
    from graphmem.recall.search import search_group

    assert lexical.analyze("Zu\u0308rich cafe\u0301") == lexical.analyze("Z\u00fcrich caf\u00e9") == ["zürich", "café"]
    for q in ("Z\u00fcrich caf\u00e9", "Zu\u0308rich cafe\u0301"):  # NFC, then NFD
        for mode in ("fulltext", "hybrid"):
            hits = search_group(store, embedder, zoe, q, k=3, mode=mode).hits
            assert {h.id for h in hits[:2]} == {"z1", "a1"}, (q, mode, [(h.id, h.score) for h in hits])
            assert all(h.score > 0 for h in hits[:2])
    docs = {r["id"]: r["d"] for r in store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.search_text AS d", g=zoe)}
    assert docs["z1"] == unicodedata.normalize("NFC", f"{NFC}: {CHAT[0]['text']}")  # the document is NFC


def test_search_on_every_surface_finds_the_other_spelling(zoe):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from api.main import create_app
    from graphmem.cli import app as cli
    from graphmem.core.config import Settings

    nfd_query = "Zu\u0308rich"
    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.get(f"/groups/{zoe}/search", params={"q": nfd_query, "mode": "fulltext", "k": 2})
        assert r.status_code == 200 and {h["id"] for h in r.json()["hits"]} == {"z1", "a1"}, r.text
    res = CliRunner().invoke(cli, ["search", "--group", zoe, "--mode", "fulltext", "-k", "2", "--json",
                                   "Z\u00fcrich caf\u00e9"])
    assert res.exit_code == 0, res.output
    assert {h["id"] for h in json.loads(res.stdout)["hits"]} == {"z1", "a1"}

    pytest.importorskip("mcp")
    import anyio

    from tests.integration.test_mcp import agent, call

    async def session() -> None:
        async with agent() as c:
            out = await call(c, "search_messages", group_id=zoe, query="cafe\u0301", mode="fulltext", k=2)
            assert {h["id"] for h in out["hits"]} == {"z1", "a1"}, out

    anyio.run(session)


def test_schema_apply_puts_older_documents_and_records_in_nfc(store, embedder, zoe, tmp_path):
    from graphmem.core.config import get_settings
    from graphmem.derived.writer import ReplayWriter, derive_group
    from graphmem.recall.search import record_terms, search_group
    from graphmem.store.schema import apply_schema

    actions = tmp_path / "actions.jsonl"
    actions.write_text(json.dumps({"session": "s1", "actions": [
        {"action": "ADD", "owner": NFC, "source": NFC, "layer": "per_speaker_core", "utype": "fact",
         "content": "Zoe\u0308 meets friends at a cafe\u0301 in Zu\u0308rich"}]}, ensure_ascii=False) + "\n")
    derive_group(store, zoe, model=ReplayWriter(actions), embedder=embedder, settings=get_settings())
    content = store.read_text("MATCH (d:Derived {group_id: $g}) RETURN d.id AS id, d.content AS c", g=zoe)
    assert len(content) == 1 and content[0]["c"] == "Zo\u00eb meets friends at a caf\u00e9 in Z\u00fcrich"  # NFC
    rid = content[0]["id"]

    def records(q: str) -> list[str]:
        rows = store.read("query/fulltext_derived", query=record_terms(q), group_id=zoe, ids=[rid], fetch=50, k=10)
        return [h["id"] for h in rows[0]["hits"]]

    def messages(q: str) -> list[str]:
        return [h.id for h in search_group(store, embedder, zoe, q, k=5, mode="fulltext").hits]

    assert records("z\u00fcrich") == [rid] and "z1" in messages("Z\u00fcrich")
    # a store written before: its documents and record content as the text came (NFD)
    store.write_tx(lambda tx: tx.run(
        "MATCH (m:Message {group_id: $g, id: 'z1'}) SET m.search_text = normalize(m.search_text, NFD) "
        "WITH 1 AS x MATCH (d:Derived {group_id: $g}) SET d.content = normalize(d.content, NFD)", g=zoe).consume())
    rev = store.read_text("MATCH (g:Group {id: $g}) RETURN g.vector_rev AS r", g=zoe)[0]["r"]
    assert records("z\u00fcrich") == [] and "z1" not in messages("Z\u00fcrich")  # what issue 27 found
    apply_schema(store, embedder.dimension)
    assert records("z\u00fcrich") == [rid] and "z1" in messages("Z\u00fcrich")
    assert store.read_text("MATCH (g:Group {id: $g}) RETURN g.vector_rev AS r", g=zoe)[0]["r"] > rev  # BM25 caches rebuilt
    text = store.read_text("MATCH (m:Message {group_id: $g, id: 'z1'}) RETURN m.text AS t", g=zoe)[0]["t"]
    assert text == CHAT[0]["text"]  # the message text is never touched


# --------------------------------------------------------------------------------------------
# every lookup resolves every spelling
# --------------------------------------------------------------------------------------------

#: how people type her id: NFD (a Mac), another case, stray whitespace
SPELLINGS = [NFD, "zo\u00eb", " ZOE\u0308 "]


def test_person_lookups_resolve_every_spelling_on_every_surface(store, embedder, zoe):
    from fastapi.testclient import TestClient

    from api.main import create_app
    from graphmem.client import GraphMemClient
    from graphmem.core.config import Settings
    from graphmem.core.errors import NotFoundError
    from graphmem.query import person_memory
    from graphmem.views import build_graph

    for spelt in SPELLINGS:
        assert person_memory(store, zoe, spelt).person.id == NFC  # library
        assert build_graph(store, zoe, person=spelt).filters.person == NFC  # the graph page's data
    with pytest.raises(NotFoundError, match=r"no person 'Zoe' in group .*; did you mean 'Zoë' \(zoë \)\?"):
        person_memory(store, zoe, "Zoe")  # accents left out: a suggestion, not her
    # an invisible character is no spelling: "dad" is Dad, "DAD\u200b" the other person
    assert person_memory(store, zoe, "dad").person.id == "Dad"
    assert person_memory(store, zoe, "DAD\u200b ").person.id == "Dad\u200b"

    with TestClient(create_app(Settings(_env_file=None))) as c:
        for spelt in SPELLINGS:
            r = c.get(f"/groups/{zoe}/persons/{quote(spelt, safe='')}/memory")
            assert r.status_code == 200 and r.json()["person"]["id"] == NFC, r.text
            r = c.get(f"/groups/{zoe}/graph", params={"person": spelt})
            assert r.status_code == 200 and r.json()["filters"]["person"] == NFC, r.text
        r = c.get(f"/groups/{zoe}/graph", params={"person": "Zoe"})
        assert r.status_code == 404 and r.json()["detail"].endswith("did you mean 'Zoë' (zoë )?"), r.text
        gm = GraphMemClient("http://testserver", http=c)  # the typed client over the same app
        assert gm.person_memory(zoe, NFD).person.id == NFC

    pytest.importorskip("mcp")
    import anyio

    from tests.integration.test_mcp import agent, call

    async def session() -> None:
        async with agent() as c:
            for spelt in SPELLINGS:
                out = await call(c, "person_memory", group_id=zoe, person_id=spelt)
                assert out["person"]["id"] == NFC

    anyio.run(session)


def _two_spellings_stored(store, embedder, gid: str) -> None:
    """A group as a store written before the identity rule may hold it: Zoë under her NFC and
    under her NFD spelling as two persons (made here through speaker ids, which stay exact)."""
    from graphmem.verbatim.ingest import ingest_conversations

    rows = [{"id": "p1", "session": "s1", "speaker": NFC, "speaker_id": NFC, "text": f"My number is {PHONE}"},
            {"id": "p2", "session": "s2", "speaker": NFD, "speaker_id": NFD, "text": f"Again: {PHONE}, call after six"},
            {"id": "p3", "session": "s3", "speaker": "Ana", "text": "Noted, thanks"}]
    ingest_conversations(store, [conversation(gid, rows)], embedder)
    assert set(_persons(store, gid)) == {NFC, NFD, "Ana"}


def _no_trace_of_her(store, embedder, gid: str) -> None:
    from graphmem.recall.search import search_group

    assert set(_persons(store, gid)) == {"Ana"}
    for mode in ("fulltext", "hybrid"):
        assert {h.id for h in search_group(store, embedder, gid, PHONE, k=5, mode=mode).hits} <= {"p3"}
    left = store.read_text("MATCH (n {group_id: $g}) WHERE any(k IN keys(n) WHERE n[k] IS :: STRING "
                           "AND n[k] CONTAINS '5550123') RETURN count(n) AS n", g=gid)
    assert left == [{"n": 0}]


def test_erasing_one_person_never_takes_another_whose_id_differs_only_in_case(store, embedder, make_group):
    """Two platform ids that differ only in case ("UCab", "UCAB": YouTube, base64 ids) are two
    persons: ingest keys them exactly and person memory reads the exact one. Erasure took every
    id of the identity form, so erasing Ann ("UCab") erased Bob ("UCAB") too, on every surface.
    Now the id as spelt is erased alone, and a spelling that names both is refused (422),
    nothing erased."""
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from api.main import create_app
    from graphmem.cli import app as cli
    from graphmem.core.config import Settings, get_settings
    from graphmem.core.errors import InvalidInputError
    from graphmem.groups.service import forget_person
    from graphmem.verbatim.ingest import ingest_conversations

    rows = [{"id": "c1", "session": "s1", "speaker": "Ann", "speaker_id": "UCab", "text": "Ann's number 0170 111"},
            {"id": "c2", "session": "s1", "speaker": "Bob", "speaker_id": "UCAB", "text": "Bob's number 0170 222"}]
    lib, api, cmd = (make_group(p) for p in ("lib", "api", "cli"))
    for gid in (lib, api, cmd):
        ingest_conversations(store, [conversation(gid, rows)], embedder)

    with pytest.raises(InvalidInputError, match="names 2 persons spelt alike") as e:
        forget_person(store, lib, "ucab", settings=get_settings())
    assert e.value.field == "person_id" and set(_persons(store, lib)) == {"UCab", "UCAB"}  # nothing erased
    out = forget_person(store, lib, "UCab", settings=get_settings())
    assert out.person_ids == ["UCab"] and out.messages_deleted == 1
    assert _persons(store, lib) == {"UCAB": {"aliases": ["Bob"], "messages": ["c2"]}}

    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.delete(f"/groups/{api}/persons/ucab")
        assert r.status_code == 422 and r.json()["field"] == "person_id", r.text
        r = c.delete(f"/groups/{api}/persons/UCAB")
        assert r.status_code == 200 and r.json()["person_ids"] == ["UCAB"], r.text
    assert _persons(store, api) == {"UCab": {"aliases": ["Ann"], "messages": ["c1"]}}

    res = CliRunner().invoke(cli, ["forget", "--group", cmd, "--person", "UCab", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["person_ids"] == ["UCab"]
    assert set(_persons(store, cmd)) == {"UCAB"}


def test_erasing_one_spelling_erases_every_person_of_that_name_on_every_surface(store, embedder, make_group):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from api.main import create_app
    from graphmem.cli import app as cli
    from graphmem.client import GraphMemClient
    from graphmem.core.config import Settings, get_settings
    from graphmem.core.errors import InvalidInputError
    from graphmem.groups.service import forget_person
    from graphmem.query import person_memory

    lib, api, cmd, client, agent_group = (make_group(p) for p in ("lib", "api", "cli", "cl", "mcp"))
    for gid in (lib, api, cmd, client, agent_group):
        _two_spellings_stored(store, embedder, gid)

    # reads: the exact id is that person; another spelling names both and is refused, naming them
    assert person_memory(store, lib, NFD).person.id == NFD
    with pytest.raises(InvalidInputError, match="names 2 persons spelt alike"):
        person_memory(store, lib, "zo\u00eb")

    out = forget_person(store, lib, NFC, settings=get_settings())  # erasing "Zoë" (NFC) ...
    assert sorted(out.person_ids) == sorted([NFC, NFD]) and out.messages_deleted == 2 and out.person_deleted
    _no_trace_of_her(store, embedder, lib)  # ... leaves nothing of the NFD one either

    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.get(f"/groups/{api}/persons/zo%C3%AB/memory")
        assert r.status_code == 422 and "names 2 persons" in r.json()["detail"], r.text
        r = c.delete(f"/groups/{api}/persons/{quote(' ZOË ', safe='')}")
        assert r.status_code == 200 and r.json()["messages_deleted"] == 2, r.text
        assert sorted(r.json()["person_ids"]) == sorted([NFC, NFD])
        _no_trace_of_her(store, embedder, api)
        gm = GraphMemClient("http://testserver", http=c)
        assert gm.forget_person(client, NFD).messages_deleted == 2
        _no_trace_of_her(store, embedder, client)

    res = CliRunner().invoke(cli, ["forget", "--group", cmd, "--person", "zoe\u0308", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["messages_deleted"] == 2
    _no_trace_of_her(store, embedder, cmd)

    pytest.importorskip("mcp")
    import anyio

    from tests.integration.test_mcp import agent, call

    async def session() -> None:
        async with agent() as c:
            out = await call(c, "forget_person", group_id=agent_group, person_id="ZOE\u0308")
            assert out["messages_deleted"] == 2 and sorted(out["person_ids"]) == sorted([NFC, NFD])

    anyio.run(session)
    _no_trace_of_her(store, embedder, agent_group)


def test_erasing_a_misspelt_id_is_refused_with_a_suggestion_never_a_silent_zero(store, embedder, zoe):
    from fastapi.testclient import TestClient

    from api.main import create_app
    from graphmem.core.config import Settings

    before = _persons(store, zoe)
    with TestClient(create_app(Settings(_env_file=None))) as c:
        r = c.delete(f"/groups/{zoe}/persons/Zoe")
        assert r.status_code == 404 and r.json()["error"] == "NotFoundError", r.text
        # her name is the latest display name she used ("zoë "), shown beside the id to send
        assert r.json()["detail"] == f"no person 'Zoe' in group {zoe!r}; nothing was erased; did you mean 'Zoë' (zoë )?"
        r = c.delete(f"/groups/{zoe}/persons/Anna")  # close to Ana
        assert r.status_code == 404 and r.json()["detail"].endswith("did you mean 'Ana'?"), r.text
        # an id that names nobody and resembles nobody: what a repeated erasure sends (a no-op)
        r = c.delete(f"/groups/{zoe}/persons/Quentin")
        assert r.status_code == 200 and r.json()["person_ids"] == [] and r.json()["messages_deleted"] == 0
    res = subprocess.run([str(Path(sys.executable).parent / "graphmem"), "forget", "--group", zoe, "--person", "Zoe"],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "1000"})
    assert res.returncode == 1 and "did you mean 'Zoë'" in res.stderr and "Traceback" not in res.stderr, res.stderr
    assert _persons(store, zoe) == before  # nothing was erased


def test_export_and_import_keep_one_person_for_her_spellings(store, embedder, zoe, make_group):
    from graphmem.groups.export import export_lines, import_group

    lines = list(export_lines(store, zoe))
    assert {x["person_id"] for x in lines if x["kind"] == "message" and x["id"].startswith("z")} == {NFC}
    copy = make_group("copy")
    import_group(store, embedder, lines, group_id=copy)  # "zoë " and NFD give person "Zoë": accepted
    assert _persons(store, copy)[NFC]["messages"] == ["z1", "z2", "z3"]


def test_a_redelivery_whose_speaker_id_differs_in_case_is_another_speaker(store, embedder, group_id):
    """Platform ids are exact ("UCab" and "UCAB" are two persons): a stored message redelivered
    under "UCAB" is a changed speaker, refused with nothing written, not skipped as a redelivery
    (the identity form folds display names, never speaker ids)."""
    from graphmem.core.errors import ConflictError, InvalidInputError
    from graphmem.verbatim.ingest import ingest_conversations

    first = [{"id": "c1", "session": "s1", "speaker": "Ann", "speaker_id": "UCab", "text": "hello"}]
    ingest_conversations(store, [conversation(group_id, first)], embedder)
    again = [{**first[0], "speaker_id": "UCAB"}]
    with pytest.raises(ConflictError, match="another speaker_id"):
        ingest_conversations(store, [conversation(group_id, again)], embedder)
    with pytest.raises(InvalidInputError, match="another speaker_id"):  # in one input as well
        ingest_conversations(store, [conversation(group_id, first + again)], embedder)
    assert _persons(store, group_id) == {"UCab": {"aliases": ["Ann"], "messages": ["c1"]}}
    assert ingest_conversations(store, [conversation(group_id, first)], embedder).messages_skipped == 1
