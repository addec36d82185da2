"""Lists say when they are cut (issue 27, item 9): every list pages with ``limit`` / ``cursor``
and answers ``truncated`` / ``next_cursor``; a walk over the pages meets every item once, also
while the group changes between pages; long message texts are cut with ``text_truncated`` and
read whole by id; a key scoped to some groups lists only those. Through the library, the HTTP
API, the typed client and the command line; MCP (and its size cap) in tests/integration/test_mcp_paging.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.main import create_app
from graphmem.cli import app as cli
from graphmem.client import GraphMemClient
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.core import paging
from graphmem.core.paging import LIST_TEXT_CHARS
from graphmem.groups.jobs import list_derive_jobs, open_derive_job, run_derive_job
from graphmem.groups.service import append_messages, list_groups
from graphmem.query.people import get_message, person_memory, provenance
from graphmem.recall.search import search_group
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.roster import roster_page
from tests.factories import conversation
from tests.test_query_fixtures import MEMBERS, TS, MemoryWriter, build_family, rec

pytestmark = pytest.mark.neo4j

FILLER = ("The spreadsheet has rows for travel, food, rent and the shared car, and every line needs a "
          "receipt from whoever paid. ")


def chat_rows(n: int = 45, *, long_at: int = 10, long_chars: int = 6_000) -> list[dict[str, Any]]:
    """``n`` messages of three speakers, each naming the budget once; message ``long_at`` is
    ``long_chars`` characters long (a pasted log), the others about 1,500."""
    rows = []
    for i in range(1, n + 1):
        head = f"Note {i}: budget line {i} for item {i * 7 % 13}. "
        body = (FILLER * (1 + (long_chars if i == long_at else 1_400) // len(FILLER)))
        size = long_chars if i == long_at else 1_400 + 11 * i
        rows.append({"id": f"p{i:02d}", "session": f"s{1 + i // 15}", "speaker": ("Ana", "Bo", "Cy")[i % 3],
                     "text": (head + body)[:size], "ts": f"2026-04-{1 + i // 15:02d}T10:{i:02d}:00"})
    return rows


@pytest.fixture
def chat(store, embedder, make_group) -> str:
    gid = make_group("paging")
    ingest_conversations(store, [conversation(gid, chat_rows())], embedder)
    return gid


@pytest.fixture
def family(store, embedder, make_group) -> str:
    gid = make_group("paging-family")
    build_family(store, embedder, gid)
    return gid


@pytest.fixture
def api(store, schema) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


def walk(read: Callable[[str | None], Any], items: Callable[[Any], list[Any]]) -> list[list[Any]]:
    """Every page of a list, following ``next_cursor``; checks the flags on the way."""
    pages, cursor = [], None
    while True:
        page = read(cursor)
        pages.append(items(page))
        assert page.truncated is (page.next_cursor is not None), page
        if page.next_cursor is None:
            return pages
        assert len(pages) < 500, "the cursor does not move on"
        cursor = page.next_cursor


class Obj:
    """A JSON answer with attribute access (``page.truncated``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.__dict__.update(data)


def api_page(api: TestClient, path: str, **params: Any) -> Callable[[str | None], Obj]:
    def read(cursor: str | None) -> Obj:
        r = api.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert r.status_code == 200, r.text
        return Obj(r.json())
    return read


def cli_page(*args: str) -> Callable[[str | None], Obj]:
    def read(cursor: str | None) -> Obj:
        res = CliRunner().invoke(cli, [*args, "--json", *(["--cursor", cursor] if cursor else [])])
        assert res.exit_code == 0, res.output
        return Obj(json.loads(res.stdout))
    return read


def flat(pages: list[list[Any]]) -> list[Any]:
    return [x for p in pages for x in p]


# ------------------------------------------------------------------------------ search
def test_search_pages_walk_the_ranking_once_on_every_surface(store, embedder, chat, api):
    full = search_group(store, embedder, chat, "budget", k=100, pool_n=100)
    ids = [h.id for h in full.hits]
    assert len(ids) == 45 and full.truncated is False and full.next_cursor is None

    lib = walk(lambda c: search_group(store, embedder, chat, "budget", k=7, pool_n=100, cursor=c),
               lambda p: [h.id for h in p.hits])
    assert [len(p) for p in lib] == [7] * 6 + [3]
    assert flat(lib) == ids  # every hit once, in rank order, no gap

    http = walk(api_page(api, f"/groups/{chat}/search", q="budget", k=7, pool=100), lambda p: [h["id"] for h in p.hits])
    assert flat(http) == ids
    gm = GraphMemClient("http://testserver", http=api)
    typed = walk(lambda c: gm.search(chat, "budget", k=7, pool=100, cursor=c), lambda p: [h.id for h in p.hits])
    assert flat(typed) == ids
    shell = walk(cli_page("search", "--group", chat, "budget", "-k", "9", "--pool", "100"),
                 lambda p: [h["id"] for h in p.hits])
    assert flat(shell) == ids and len(shell) == 5

    # a long text is cut in the list and read whole by id
    long_hit = next(h for h in full.hits if h.id == "p10")
    assert (len(long_hit.text), long_hit.text_truncated, long_hit.text_chars) == (LIST_TEXT_CHARS, True, 6_000)
    assert all(not h.text_truncated and h.text_chars is None for h in full.hits if h.id != "p10")
    whole = get_message(store, chat, "p10")
    assert len(whole.text) == 6_000 and whole.text.startswith(long_hit.text) and not whole.text_truncated
    assert api.get(f"/groups/{chat}/messages/p10").json()["text"] == whole.text
    assert gm.get_message(chat, "p10").text == whole.text
    res = CliRunner().invoke(cli, ["message", "p10", "--group", chat, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["text"] == whole.text
    assert api.get(f"/groups/{chat}/messages/nope").status_code == 404


def test_search_pages_keep_their_ranking_while_messages_arrive(store, embedder, chat):
    for mode in ("vector", "hybrid"):
        full = [h.id for h in search_group(store, embedder, chat, "budget receipts", k=100, pool_n=100, mode=mode).hits]
        first = search_group(store, embedder, chat, "budget receipts", k=10, pool_n=100, mode=mode)
        # five new messages, as close to the query as it gets, arrive before the next page
        append_messages(store, embedder, chat, [
            {"id": f"{mode}-new{i}", "speaker": "Dee", "text": f"budget receipts budget receipts {i}",
             "ts": f"2026-04-02T11:0{i}:00Z"} for i in range(5)])
        rest = walk(lambda c, m=mode: search_group(store, embedder, chat, "budget receipts", k=10, pool_n=100,
                                                   mode=m, cursor=c or first.next_cursor),
                    lambda p: [h.id for h in p.hits])
        seen = [h.id for h in first.hits] + flat(rest)
        assert len(seen) == len(set(seen))  # no repeat
        assert not {i for i in seen if i.startswith(f"{mode}-new")}  # written after the walk began: not in it
        if mode == "vector":  # cosine scores do not move: exactly the ranking the walk began with
            assert seen == full


def test_a_cursor_of_another_list_or_query_is_refused(store, embedder, chat, family, api):
    page = search_group(store, embedder, chat, "budget", k=5)
    for bad in (dict(query="receipts"), dict(query="budget", mode="fulltext")):
        with pytest.raises(InvalidInputError) as e:
            search_group(store, embedder, chat, bad["query"], k=5, mode=bad.get("mode", "hybrid"),
                         cursor=page.next_cursor)
        assert e.value.field == "cursor"
    roster = roster_page(store, family, limit=2)
    for cursor in (page.next_cursor, "roster:AAAA", "not a cursor", roster.next_cursor + "x"):
        r = api.get(f"/groups/{family}/roster", params={"cursor": cursor})
        assert r.status_code == 422 and r.json()["field"] == "cursor", r.text
    with pytest.raises(InvalidInputError) as e:
        roster_page(store, chat, cursor=roster.next_cursor)  # another group's roster
    assert e.value.field == "cursor"
    assert api.get(f"/groups/{family}/roster", params={"limit": 1001}).status_code == 422
    assert api.get(f"/groups/{chat}/search", params={"q": "budget", "k": 101}).status_code == 422



def test_a_forged_cursor_with_the_right_scope_and_a_wrong_key_is_refused_not_a_500(store, embedder, family, api):
    """A cursor is base64 JSON, and its scope is a hash of what anyone asking knows (group,
    person, mode ...): a caller can forge one with the right scope and any sort key. Keys of
    another shape reached the comparison with the list's own keys (``[0, "seg", "id"] > ["x",
    1, 2]``): a TypeError, 500 over HTTP. Each is now the 422 of a cursor of another list."""
    import base64

    def forged(cursor: str, key: list[Any]) -> str:
        kind, _, payload = cursor.partition(":")
        scope = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))[0]
        return paging.encode_cursor(kind, scope, key)

    person = api.get(f"/groups/{family}/persons/Cara/memory", params={"limit": 1}).json()["next_cursor"]
    prov = api.get(f"/groups/{family}/records/a3/provenance", params={"limit": 1}).json()["next_cursor"]
    roster = api.get(f"/groups/{family}/roster", params={"limit": 1}).json()["next_cursor"]
    cases = [(f"/groups/{family}/persons/Cara/memory", person, [["x", 1, 2], [0, None, "x"], [0, {"a": 1}, [1]],
                                                                  [True, "s", "r"]]),
             (f"/groups/{family}/records/a3/provenance", prov, [["x", 1], [0, None], [[0], 1], [0.5, "a"]]),
             (f"/groups/{family}/roster", roster, [[None], [{"a": 1}], [3]])]
    for path, cursor, keys in cases:
        assert cursor
        for key in keys:
            r = api.get(path, params={"limit": 1, "cursor": forged(cursor, key)})
            assert r.status_code == 422 and r.json()["field"] == "cursor", (path, key, r.status_code, r.text[:200])
    with pytest.raises(InvalidInputError) as e:  # the library says the same
        person_memory(store, family, "Cara", limit=1, cursor=forged(person, ["x", 1, 2]))
    assert e.value.field == "cursor"


# ------------------------------------------------------------------------------ roster
def test_roster_pages_by_id_while_people_join(store, embedder, family, api):
    whole = [p.id for p in flat(walk(lambda c: roster_page(store, family, limit=100, cursor=c), lambda p: p.persons))]
    assert whole == sorted(MEMBERS)
    first = roster_page(store, family, limit=2)
    assert [p.id for p in first.persons] == ["Ben", "Cara"] and first.truncated and first.total == 5
    assert {p.id: p.messages for p in first.persons} == {"Ben": 3, "Cara": 3}
    # two people join between pages: one sorts before the walk's position, one after
    append_messages(store, embedder, family, [
        {"id": "j1", "speaker": "Abe", "text": "hi all", "ts": "2026-05-03T10:00:00Z"},
        {"id": "j2", "speaker": "Zed", "text": "hello", "ts": "2026-05-03T10:01:00Z"}])
    rest = walk(lambda c: roster_page(store, family, limit=2, cursor=c or first.next_cursor), lambda p: p.persons)
    seen = [p.id for p in first.persons] + [p.id for p in flat(rest)]
    assert seen == ["Ben", "Cara", "Dad", "Eli", "Mom", "Zed"]  # each once; Abe joined behind the walk
    gm = GraphMemClient("http://testserver", http=api)
    http = walk(api_page(api, f"/groups/{family}/roster", limit=3), lambda p: [m["id"] for m in p.persons])
    assert [len(p) for p in http] == [3, 3, 1] and flat(http) == sorted([*MEMBERS, "Abe", "Zed"])
    assert [p.id for p in gm.roster(family)] == flat(http)  # the client walks every page
    assert flat(walk(cli_page("roster", "--group", family, "--limit", "4"), lambda p: [m["id"] for m in p.persons])) \
        == flat(http)
    res = CliRunner().invoke(cli, ["roster", "--group", family, "--limit", "3", "--all", "--json"])
    pages = [json.loads(line) for line in res.stdout.splitlines()]
    assert [len(p["persons"]) for p in pages] == [3, 3, 1] and pages[-1]["truncated"] is False
    assert api.get("/groups/no-such-group-xyz/roster").status_code == 404


# ------------------------------------------------------------------------------ groups and jobs
def test_groups_list_is_scoped_to_the_key(store, embedder, make_group, tmp_path):
    g1, g2, g3 = make_group("gl-a"), make_group("gl-b"), make_group("gl-c")
    for g in (g1, g2, g3):
        ingest_conversations(store, [conversation(g, chat_rows(3, long_at=0))], None, embed="later")
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"name": "admin", "key": "k-admin", "groups": None, "read_only": False},
        {"name": "two", "key": "k-two", "groups": [g1, g3, "no-such-group-yet"], "read_only": True}]}))
    with TestClient(create_app(Settings(_env_file=None, api_keys_file=keys))) as api:
        api.headers["X-API-Key"] = "k-two"
        scoped = walk(api_page(api, "/groups", limit=1), lambda p: [g["id"] for g in p.groups])
        assert scoped == [[g1], [g3]]  # only its groups that exist, one a page
        gm = GraphMemClient("http://testserver", http=api)
        assert [(g.id, g.persons, g.messages) for g in gm.groups()] == [(g1, 3, 3), (g3, 3, 3)]
        cursor = api.get("/groups", params={"limit": 1}).json()["next_cursor"]
        api.headers["X-API-Key"] = "k-admin"
        everything = flat(walk(api_page(api, "/groups", limit=50), lambda p: [g["id"] for g in p.groups]))
        assert {g1, g2, g3} <= set(everything) and everything == sorted(everything)
        r = api.get("/groups", params={"cursor": cursor})  # the scoped key's cursor is not the admin's list
        assert r.status_code == 422 and r.json()["field"] == "cursor"
        del api.headers["X-API-Key"]
        assert api.get("/groups").status_code == 401
    lib = flat(walk(lambda c: list_groups(store, reaches={g2, g3}, limit=1, cursor=c), lambda p: [g.id for g in p.groups]))
    assert lib == [g2, g3]
    res = CliRunner().invoke(cli, ["groups", "--all", "--json", "--limit", "1000"])
    assert res.exit_code == 0 and {g1, g2, g3} <= {g["id"] for line in res.stdout.splitlines()
                                                   for g in json.loads(line)["groups"]}


def test_a_groups_jobs_are_listed_newest_first(store, embedder, family, api):
    settings = Settings(_env_file=None)
    opened = []
    for n in range(3):  # each job finds nothing pending and is done at once
        job_id, created = open_derive_job(store, family)
        assert created
        assert run_derive_job(store, job_id, runner=f"r{n}", model=None, embedder=embedder, settings=settings) == "done"
        opened.append(job_id)
    pages = walk(lambda c: list_derive_jobs(store, family, settings, limit=2, cursor=c), lambda p: p.jobs)
    assert [[j.id for j in p] for p in pages] == [opened[::-1][:2], opened[:1]]
    assert all(j.state == "done" and j.group_id == family for j in flat(pages))
    http = walk(api_page(api, f"/groups/{family}/jobs", limit=1), lambda p: [j["id"] for j in p.jobs])
    assert http == [[j] for j in opened[::-1]]
    gm = GraphMemClient("http://testserver", http=api)
    assert [j.id for j in gm.jobs(family).jobs] == opened[::-1]
    assert flat(walk(cli_page("jobs", "--group", family, "--limit", "1"), lambda p: [j["id"] for j in p.jobs])) \
        == opened[::-1]
    assert api.get("/groups/no-such-group-xyz/jobs").status_code == 404


# ------------------------------------------------------------------------------ memory and provenance
def test_person_memory_pages_by_chain_while_a_derive_updates_one(store, embedder, family, api, monkeypatch):
    whole = person_memory(store, family, "Cara")
    assert [c[-1].id for c in whole.chains] == ["r-cara-easy", "r-cara-sandwich"]
    assert [r.id for r in whole.said_about_others] == ["r-ben-late"] and not whole.truncated
    first = person_memory(store, family, "Cara", limit=1)
    assert [c[-1].id for c in first.chains] == ["r-cara-easy"] and first.truncated
    # a derive between pages writes a new state of the chain already shown
    w = MemoryWriter(store, embedder, family)
    w.index = 3
    monkeypatch.setitem(TS, "m16", "2026-05-02T09:05:00")
    append_messages(store, embedder, family, [{"id": "m16", "speaker": "Cara", "text": "Actually I'd do the ridge.",
                                                "ts": "2026-05-02T09:05:00"}])
    w.segment(["m16"], rec("c2", "Cara", "Cara now leans to the ridge", ["m16"], utype="stance",
                           supersedes="r-cara-easy"))
    rest = walk(lambda c: person_memory(store, family, "Cara", limit=1, cursor=c or first.next_cursor),
                lambda p: [("chain", ch[-1].id) for ch in p.chains] + [("said", r.id) for r in p.said_about_others])
    assert flat(rest) == [("chain", "r-cara-sandwich"), ("said", "r-ben-late")]  # the updated chain is not met again
    # the same through the API, the client and full chains
    full = walk(api_page(api, f"/groups/{family}/persons/Mom/memory", mode="full", limit=1),
                lambda p: [[r["id"] for r in ch] for ch in p.chains])
    assert sorted(flat(full)) == [["a1", "a2", "a3"], ["r-mom-knee"]]
    gm = GraphMemClient("http://testserver", http=api)
    page = gm.person_memory(family, "Cara", limit=1)
    assert [c[-1].id for c in page.chains] == ["c2"] and page.next_cursor
    assert [r.id for r in gm.person_memory(family, "Cara", limit=1, cursor=page.next_cursor).chains[0]] == ["r-cara-sandwich"]


def test_provenance_pages_messages_then_chain(store, embedder, family, api):
    whole = provenance(store, family, "a3")
    assert [m.id for m in whole.messages] == ["m13"] and [r.id for r in whole.chain] == ["a1", "a2", "a3"]
    pages = walk(lambda c: provenance(store, family, "a3", limit=1, cursor=c),
                 lambda p: [m.id for m in p.messages] + [r.id for r in p.chain])
    assert pages == [["m13"], ["a1"], ["a2"], ["a3"]]
    http = walk(api_page(api, f"/groups/{family}/records/a3/provenance", limit=2),
                lambda p: [m["id"] for m in p.messages] + [r["id"] for r in p.chain])
    assert http == [["m13", "a1"], ["a2", "a3"]]
    gm = GraphMemClient("http://testserver", http=api)
    assert gm.provenance(family, "a3", limit=3).truncated is True


def test_provenance_cuts_a_long_message_and_get_message_reads_it_whole(store, embedder, chat, api, monkeypatch):
    for r in chat_rows():
        monkeypatch.setitem(TS, r["id"], r["ts"])
    MemoryWriter(store, embedder, chat).segment(
        [r["id"] for r in chat_rows()], rec("log", "Bo", "Bo pasted the budget log", ["p10", "p11"]))
    p = provenance(store, chat, "log")
    long_msg = next(m for m in p.messages if m.id == "p10")
    assert (len(long_msg.text), long_msg.text_truncated, long_msg.text_chars) == (LIST_TEXT_CHARS, True, 6_000)
    body = api.get(f"/groups/{chat}/records/log/provenance").json()
    assert [(m["id"], m["text_truncated"]) for m in body["messages"]] == [("p10", True), ("p11", False)]
    # a slice at a time (what MCP's max_bytes does), back to the whole text
    parts, offset = [], 0
    while True:
        m = get_message(store, chat, "p10", text_offset=offset, max_bytes=2_000)
        assert len(m.model_dump_json().encode()) <= 2_000
        parts.append(m.text)
        if m.next_text_offset is None:
            assert not m.text_truncated
            break
        assert m.text_truncated
        offset = m.next_text_offset
    assert "".join(parts) == get_message(store, chat, "p10").text and len(parts) > 3
    with pytest.raises(InvalidInputError):
        get_message(store, chat, "p10", text_offset=6_001)


def test_provenance_marks_a_message_edited_after_the_record_and_shows_its_earlier_text(store, embedder, family, api):
    """An attacker trial: after a record was written, one of its FROM messages was edited to
    words that support it better, and provenance showed the new text as if the record came
    from it. Each provenance message now says ``edited`` and carries its earlier texts."""
    from graphmem.groups.service import append_messages
    from graphmem.query.people import get_message

    before = provenance(store, family, "a3").messages
    assert [(m.id, m.edited, m.text_history) for m in before] == [("m13", False, [])]
    old = get_message(store, family, "m13")
    row = {"id": "m13", "speaker": old.speaker, "session": old.session.split("/")[-1], "ts": old.ts,
           "text": "Mom: my knee is completely fine now, I decide we take the ridge."}
    assert append_messages(store, embedder, family, [row]).messages_edited == 1
    (m,) = provenance(store, family, "a3").messages
    assert (m.text, m.edited, m.text_history) == (row["text"], True, [old.text])
    r = api.get(f"/groups/{family}/records/a3/provenance")
    assert r.status_code == 200, r.text
    (j,) = r.json()["messages"]
    assert (j["edited"], j["text_history"]) == (True, [old.text])
