"""Whole-group lifecycle (issue 27, item 8): erasing a group removes every node and
relationship of it, whatever its size (bounded transactions), including labels added later;
erasing it and loading the same messages again gives the same graph, with no stale edge,
vector or cache entry; an interrupted erasure keeps the group fenced until a second call
finishes it; and the erasure is one rule through the library, CLI, API (key-scoped), typed
client and MCP, with the first-load importer's CSV files removed as for a person."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from graphmem.core.errors import ConflictError, NotFoundError
from graphmem.derived.writer import derive_group
from graphmem.groups.jobs import open_derive_job, run_derive_job
from graphmem.groups.service import GROUP_LABELS, GROUP_RELATIONSHIPS, append_messages, erase_group, forget_person
from graphmem.recall.search import search_group
from graphmem.store.scope import scope_index, scope_label
from graphmem.verbatim.import_files import record_csv_files
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation, runtime_of
from tests.integration.test_derive import FAMILY, answer, in_session, script_family
from tests.processes import ROOT
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.neo4j

EXTRA = [  # a reply, a multi-sentence turn (sentence vectors), an edit (text history), a late one
    {"id": "x1", "speaker": "Cara", "text": "Who has my blue jacket? I left it in the car. It was raining.",
     "session": "s4", "ts": "2026-05-10T12:05:00", "reply_to": "m0008"},
    {"id": "x1", "speaker": "Cara", "text": "Who has my blue jacket? I left it in the van. It was raining.",
     "session": "s4", "ts": "2026-05-10T12:05:00", "reply_to": "m0008"},
]


def populate(store, embedder, gid: str, server: ScriptedLLM, settings: Settings, *, tmp: Path | None = None) -> None:
    """Everything a group can hold: messages with a reply, an edit and sentence vectors, its
    own vector index (and label), messages still pending a vector, derived records with update
    chains, Writer segments, a finished derive job, and the importer's CSV files."""
    ingest_conversations(store, [conversation(gid, FAMILY + EXTRA)], embedder, exact_max=4)
    script_family(server)
    derive_group(store, gid, model=server.chat_model(), embedder=embedder, settings=settings)
    ingest_conversations(store, [conversation(gid, [{"id": "late", "speaker": "Eli", "text": "Back from the trail.",
                                                      "session": "s5", "ts": "2026-06-01T08:00:00"}])],
                         None, embed="later")
    server.route(in_session("s5"), answer({"action": "NOOP"}))
    job, _ = open_derive_job(store, gid)
    assert run_derive_job(store, job, runner="t", model=server.chat_model(), embedder=embedder,
                          settings=settings) == "done"
    if tmp is not None:
        csv = tmp / "csv"
        csv.mkdir()
        (csv / "messages.csv").write_text("m0000,My knee still hurts.\n")
        record_csv_files(settings, csv, [gid], {"messages": [csv / "messages.csv"]})


def group_graph(store, gid: str) -> tuple[list[dict], list[dict]]:
    """The group's nodes (with their 1-hop neighbours) and relationships, by element id."""
    nodes = store.read_text(
        "MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) "
        "OPTIONAL MATCH (n)--(x) WITH collect(DISTINCT n) + collect(DISTINCT x) AS ns "
        "UNWIND ns AS n RETURN DISTINCT elementId(n) AS eid, labels(n) AS labels, n.group_id AS g", g=gid)
    rels = store.read_text(
        "MATCH (n)-[r]-() WHERE n.group_id = $g OR (n:Group AND n.id = $g) "
        "RETURN DISTINCT elementId(r) AS eid, type(r) AS type", g=gid)
    return nodes, rels


def test_erasing_a_group_removes_every_label_and_relationship_it_uses(store, embedder, make_group, tmp_path):
    """A fully populated group, erased in transactions of at most 3 nodes per label: nothing of
    it is left but its derive jobs' receipts, another group is untouched, and every label and
    relationship type the group used is one the erasure is known to cover
    (:data:`graphmem.groups.service.GROUP_LABELS` / ``GROUP_RELATIONSHIPS``: a label added
    later fails here until it is checked and listed)."""
    gid, other = make_group(), make_group()
    settings = Settings(_env_file=None, home=tmp_path / "home")
    with ScriptedLLM() as server:
        populate(store, embedder, gid, server, settings, tmp=tmp_path)
        server.reset()
        populate(store, embedder, other, server, settings)
    nodes, rels = group_graph(store, gid)
    labels = {label for n in nodes for label in n["labels"]}
    types = {r["type"] for r in rels}
    # fully populated: every kind of node and link a group gets
    assert {"Group", "Person", "Session", "Message", "PendingEmbedding", "Derived", "Core", "Profile",
            "Interaction", "Segment", "DeriveJob", scope_label(gid)} <= labels, labels
    assert {"MEMBER_OF", "IN_GROUP", "IN_SESSION", "SOURCE", "NEXT", "REPLY_TO", "OWNER", "FROM",
            "SUPERSEDED_BY", "COVERS"} <= types, types
    props = store.read_text("MATCH (m:Message {group_id: $g}) RETURN count(m.text_history) AS h, "
                            "count(m.sentence_embeddings) AS s, count(m.embedding) AS e", g=gid)[0]
    assert props["h"] == 1 and props["s"] >= 1 and props["e"] >= 10, props
    assert {n["g"] for n in nodes} <= {gid, None}  # nothing of another group is linked to it
    unknown = labels - GROUP_LABELS - {scope_label(gid)}
    assert not unknown, f"labels {unknown} are not known to erase_group: check it deletes them and list them"
    assert not types - GROUP_RELATIONSHIPS, types - GROUP_RELATIONSHIPS
    assert store.read_text("SHOW INDEXES YIELD name WHERE name = $n RETURN name", n=scope_index(gid))
    other_before = group_graph(store, other)
    db_labels = {r["label"] for r in store.read_text("CALL db.labels() YIELD label RETURN label")}
    assert labels <= db_labels

    erased = erase_group(store, gid, settings=settings, batch_size=3)
    receipts = [n for n in nodes if n["labels"] == ["DeriveJob"]]
    assert erased.nodes_deleted == len([n for n in nodes if n["labels"] != ["DeriveJob"]])
    # bounded: at most 3 nodes of each label per transaction, so the 12 messages took 4, then
    # one found nothing; the fence, the sweep and the Group node one each
    messages = sum("Message" in n["labels"] for n in nodes)
    assert messages == 12 and erased.batches == 1 + 4 + 1 + 1 + 1
    assert erased.group_deleted and erased.jobs_cancelled == []
    assert erased.import_files_removed == [str((tmp_path / "csv" / "messages.csv").resolve())]
    assert not (tmp_path / "csv").exists()
    left = store.read_text("MATCH (n) WHERE elementId(n) IN $ids RETURN labels(n) AS labels, "
                           "COUNT { (n)--() } AS links", ids=[n["eid"] for n in nodes])
    assert left == [{"labels": ["DeriveJob"], "links": 0}] * len(receipts), left
    assert store.read_text("MATCH ()-[r]-() WHERE elementId(r) IN $ids RETURN count(r) AS n",
                           ids=[r["eid"] for r in rels]) == [{"n": 0}]
    used_after = store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) "
                                 "UNWIND labels(n) AS l RETURN DISTINCT l", g=gid)
    assert used_after == [{"l": "DeriveJob"}]
    assert not store.read_text("SHOW INDEXES YIELD name WHERE name = $n RETURN name", n=scope_index(gid))
    assert group_graph(store, other) == other_before
    again = erase_group(store, gid, settings=settings)
    assert (again.nodes_deleted, again.group_deleted, again.import_files_removed) == (0, False, [])
    with pytest.raises(NotFoundError):
        erase_group(store, gid, missing_ok=False)


def dump(store, gid: str) -> tuple[list, list]:
    """The group's graph, comparable across two lives of the group: nodes by label and id with
    every property (vectors rounded; the random vector_rev, commit times and the Writer's
    latency left out), relationships by type and endpoint ids. Job receipts are no part of it."""
    volatile = {"vector_rev", "written_at", "edited_at", "latency_s", "erasures"}
    nodes = []
    for r in store.read_text("MATCH (n) WHERE (n.group_id = $g OR (n:Group AND n.id = $g)) AND NOT n:DeriveJob "
                             "RETURN labels(n) AS l, properties(n) AS p", g=gid):
        props = {}
        for k, v in r["p"].items():
            if k in volatile:
                continue
            if k == "report":  # a segment's validation report: its usage holds the call's latency
                v = {**json.loads(v), "usage": None}
            if isinstance(v, list) and v and isinstance(v[0], float):
                v = [round(x, 4) for x in v]
            props[k] = json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v
        nodes.append((sorted(r["l"]), sorted(props.items())))
    rels = store.read_text(
        "MATCH (a)-[r]->(b) WHERE a.group_id = $g OR (a:Group AND a.id = $g) "
        "RETURN labels(a)[0] AS al, a.id AS a, type(r) AS t, labels(b)[0] AS bl, b.id AS b", g=gid)
    return sorted(nodes, key=repr), sorted((tuple(r.values()) for r in rels), key=repr)


def test_erase_and_load_again_gives_the_same_graph_and_fresh_caches(store, embedder, group_id):
    """Load, derive, search (the process's group cache fills), erase, load the same messages
    again and derive: the same graph as the first time (nodes, properties, vectors, links).
    Then erase and load the same ids with other texts: the same long-lived cache finds the new
    words only (no vector, BM25 statistic or matrix of the first life is used)."""
    rt = runtime_of(store, embedder)
    settings = Settings(_env_file=None)

    def life(rows: list[dict]) -> tuple[list, list]:
        ingest_conversations(store, [conversation(group_id, rows)], embedder, exact_max=4)
        with ScriptedLLM() as server:
            script_family(server)
            derive_group(store, group_id, model=server.chat_model(), embedder=embedder, settings=settings)
        return dump(store, group_id)

    def hits(query: str) -> list[tuple[str, str]]:
        r = search_group(store, embedder, group_id, query, k=3, cache=rt.cache)
        return [(h.id, h.text) for h in r.hits]

    first = life(FAMILY + EXTRA)
    jacket = hits("blue jacket in the van")
    assert jacket[0][0] == "x1"
    erase_group(store, group_id)
    with pytest.raises(NotFoundError):
        search_group(store, embedder, group_id, "blue jacket", k=3, cache=rt.cache)
    second = life(FAMILY + EXTRA)
    assert second == first
    assert hits("blue jacket in the van") == jacket

    erase_group(store, group_id)
    changed = [dict(r) for r in FAMILY]
    changed[8]["text"] = "The canoe trip was great after all."
    ingest_conversations(store, [conversation(group_id, changed)], embedder, exact_max=4)
    found = hits("canoe trip")
    assert found[0] == ("m0008", "The canoe trip was great after all."), found
    assert all("jacket" not in text and "trail was great" not in text for _, text in hits("blue jacket trail"))


def test_an_interrupted_erasure_keeps_the_group_fenced_until_it_is_finished(store, embedder, group_id, tmp_path):
    """The fence alone (an erasure killed after its first transaction): every write of the
    group is refused with the same clear error and writes nothing; a second erasure (here
    ``DELETE /groups/{g}``) finishes it, and the id is free for a new group."""
    ingest_conversations(store, [conversation(group_id, FAMILY)], None, embed="later")
    job, _ = open_derive_job(store, group_id)
    store.write("groups/fence_group", group_id=group_id, now_iso="2026-07-01T00:00:00+00:00")
    before = store.read_text("MATCH (n {group_id: $g}) RETURN count(n) AS n", g=group_id)
    msg = {"id": "new1", "speaker": "Eli", "text": "Anyone up for a swim?", "ts": "2026-07-01T10:00:00"}
    refusals = [
        lambda: append_messages(store, embedder, group_id, [msg]),
        lambda: ingest_conversations(store, [conversation(group_id, [msg])], None, embed="later"),
        lambda: forget_person(store, group_id, "Ben", settings=Settings(_env_file=None)),
        lambda: open_derive_job(store, group_id),
        lambda: derive_group(store, group_id, model=None, embedder=embedder, settings=Settings(_env_file=None)),
        lambda: embed_group(store, embedder, group_id),  # was a NotFoundError: "no group"
    ]
    for attempt in refusals:
        with pytest.raises(ConflictError, match=f"group '{group_id}' is being erased"):
            attempt()
    assert store.read_text("MATCH (n {group_id: $g}) RETURN count(n) AS n", g=group_id) == before
    with TestClient(create_app(Settings(_env_file=None, derive_jobs_enabled=False))) as c:
        r = c.post(f"/groups/{group_id}/messages", json={"messages": [msg]})
        assert r.status_code == 409 and "is being erased" in r.json()["detail"], r.text
        r = c.post(f"/groups/{group_id}/embed")
        assert r.status_code == 409 and "is being erased" in r.json()["detail"], r.text
        assert c.get(f"/jobs/{job}").json()["state"] == "cancelled"
        gone = c.delete(f"/groups/{group_id}")
        assert gone.status_code == 200 and gone.json()["group_deleted"] is True, gone.text
        # messages, persons, sessions and the Group node; the job's receipt stays
        assert gone.json()["nodes_deleted"] == before[0]["n"] - 1 + 1
        assert c.delete(f"/groups/{group_id}").status_code == 404
        assert c.post(f"/groups/{group_id}/messages", json={"messages": [msg]}).json()["group_created"] is True


def test_group_erasure_through_the_cli_the_api_with_scoped_keys_and_the_client(store, embedder, make_group, tmp_path):
    """``graphmem forget --whole-group``, ``DELETE /groups/{g}`` (a key limited to another group
    or read-only gets 403 and erases nothing) and ``GraphMemClient.forget_group`` erase the
    group and the importer's CSV files of it; an unknown group is an error (exit 1 / 404)."""
    from graphmem.client import GraphMemClient

    cli_g, api_g, client_g = make_group(), make_group(), make_group()
    home = tmp_path / "home"  # the importer's list of CSV files; the test server's password is in its own home
    password = Settings(_env_file=None).neo4j_password
    settings = Settings(_env_file=None, home=home, neo4j_password=password)
    for g in (cli_g, api_g, client_g):
        ingest_conversations(store, [conversation(g, FAMILY)], None, embed="later")
        csv = tmp_path / f"csv-{g}"
        csv.mkdir()
        (csv / "messages.csv").write_text("words\n")
        record_csv_files(settings, csv, [g], {"messages": [csv / "messages.csv"]})

    def count(g: str) -> int:
        return store.read_text("MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) RETURN count(n) AS n",
                               g=g)[0]["n"]

    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NEO4J_PASSWORD": password.get_secret_value(),
           "COLUMNS": "1000"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True,
                              timeout=300, env=env, cwd=ROOT)

    r = cli("forget", "--group", cli_g, "--whole-group", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["group_deleted"] is True and out["nodes_deleted"] == 10 + 4 + 4 + 1  # messages, persons, sessions, group
    assert len(out["import_files_removed"]) == 1 and count(cli_g) == 0
    r = cli("forget", "--group", cli_g, "--whole-group")
    assert r.returncode == 1 and f"no group '{cli_g}'" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = cli("forget", "--group", cli_g)
    assert r.returncode == 1 and "give either --person P or --whole-group" in r.stderr, r.stderr

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [
        {"name": "other", "key": "k-other", "groups": [cli_g]},
        {"name": "reader", "key": "k-ro", "groups": [api_g, client_g], "read_only": True},
        {"name": "owner", "key": "k-own", "groups": [api_g, client_g]},
    ]}))
    app_settings = Settings(_env_file=None, home=home, neo4j_password=password, api_key="k-admin", api_keys_file=keys,
                            derive_jobs_enabled=False)
    with TestClient(create_app(app_settings)) as c:
        for key in ("k-other", "k-ro"):
            r = c.delete(f"/groups/{api_g}", headers={"X-API-Key": key})
            assert r.status_code == 403 and r.json()["error"] == "ForbiddenError", r.text
        assert count(api_g) == 19
        r = c.delete(f"/groups/{api_g}", headers={"X-API-Key": "k-own"})
        assert r.status_code == 200 and r.json()["nodes_deleted"] == 19 and len(r.json()["import_files_removed"]) == 1
        assert c.delete(f"/groups/{api_g}", headers={"X-API-Key": "k-own"}).status_code == 404
        c.headers["X-API-Key"] = "k-own"  # the client sends what its http client carries
        with GraphMemClient("http://testserver", http=c) as gm:
            erased = gm.forget_group(client_g)
            assert erased.group_deleted and erased.nodes_deleted == 19
            with pytest.raises(NotFoundError):
                gm.forget_group(client_g)
    assert count(api_g) == count(client_g) == 0
    assert not list(tmp_path.glob("csv-*/messages.csv"))

    # the library face gives the same report and the same refusal
    from graphmem import GroupForgetSummary, Memory

    lib_g = make_group()
    ingest_conversations(store, [conversation(lib_g, FAMILY)], None, embed="later")
    with Memory.open(settings) as memory:
        erased = memory.forget_group(lib_g)
        assert isinstance(erased, GroupForgetSummary) and erased.group_deleted and erased.nodes_deleted == 19
        with pytest.raises(NotFoundError, match=f"no group '{lib_g}'"):
            memory.forget_group(lib_g)
    assert count(lib_g) == 0
