"""Kill -9 in the middle (issue 27, item 1): a real ``graphmem`` process killed with SIGKILL at
a chosen point leaves a store that a plain re-run completes, and the completed graph equals the
one an uninterrupted run gives.

Invariants checked after each kill: no message half-written (each has its speaker, session and
place; a message is embedded exactly when it has its vector), no Writer segment marked without
its records nor a record without its segment, no receipt before the work. ``graphmem embed``
is killed in tests/integration/test_bulk_messy.py; the first-load importer in
tests/integration/test_bulk_import.py (it needs a server of its own).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from graphmem.derived.writer import derive_group
from graphmem.core.config import Settings
from tests.integration.test_api import family_messages, in_session, script_writer
from tests.integration.test_jobs import wait_job
from tests.processes import ROOT, free_port, start_serve, stop_serve
from tests.scripted_llm import Reply, ScriptedLLM

pytestmark = pytest.mark.neo4j


def env_for(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHMEM_LLM_", "GRAPHMEM_WRITER_"))}
    env.update(HF_HUB_OFFLINE="1", COLUMNS="1000", **extra)
    return env


def start(*args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "graphmem", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphmem", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def kill_when(proc: subprocess.Popen, ready, timeout_s: float = 300.0) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` is true (fail when it ends first)."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, f"ended before the kill point: {proc.stderr.read() if proc.stderr else ''}"
        assert time.monotonic() < deadline, "the kill point was never reached"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def count(store, query: str, **params) -> int:
    return int(store.read_text(query, **params)[0]["n"])


def check_messages_whole(store, gid: str) -> int:
    """Every stored message is whole: one speaker, one session, a place, its vector exactly when
    it is not pending one, and one NEXT chain through the group in order. Returns how many."""
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g}) RETURN m.id AS id, m.turn_created AS tc, "
        "COUNT { (m)-[:SOURCE]->(:Person) } AS src, COUNT { (m)-[:IN_SESSION]->(:Session) } AS ses, "
        "m.embedding IS NOT NULL AS vec, m:PendingEmbedding AS pending, m.search_text IS NOT NULL AS doc, "
        "COUNT { (m)-[:NEXT]->() } AS nxt, COUNT { ()-[:NEXT]->(m) } AS prv ORDER BY tc", g=gid)
    assert all(r["src"] == 1 and r["ses"] == 1 and r["doc"] for r in rows), rows
    assert all(r["vec"] != r["pending"] for r in rows), [r for r in rows if r["vec"] == r["pending"]]
    assert [r["tc"] for r in rows] == list(range(len(rows)))
    if rows:  # one channel: a single chain, first to last
        assert [r["prv"] for r in rows] == [0] + [1] * (len(rows) - 1)
        assert [r["nxt"] for r in rows] == [1] * (len(rows) - 1) + [0]
    return len(rows)


def graph_of(store, gid: str) -> tuple[list, list]:
    """The group's graph with its id taken out, so two groups loaded alike compare equal
    (vectors rounded; the random vector_rev, commit times and the Writer's latency left out)."""
    volatile = {"vector_rev", "written_at", "edited_at", "latency_s", "group_id", "group_key", "id", "vector_index"}
    nodes = []
    for r in store.read_text("MATCH (n) WHERE (n.group_id = $g OR (n:Group AND n.id = $g)) AND NOT n:DeriveJob "
                             "RETURN [l IN labels(n) WHERE NOT l STARTS WITH 'GroupScope_'] AS l, properties(n) AS p, "
                             "CASE WHEN n:Group THEN 'GROUP' ELSE n.id END AS key", g=gid):
        props = {"key": r["key"]}
        for k, v in r["p"].items():
            if k in volatile:
                continue
            if k == "report":
                v = {**json.loads(v), "usage": None}
            if isinstance(v, list) and v and isinstance(v[0], float):
                v = [round(x, 4) for x in v]
            v = json.dumps(v, sort_keys=True) if isinstance(v, (list, dict)) else v
            props[k] = v.replace(gid, "<group>") if isinstance(v, str) else v
        nodes.append((sorted(r["l"]), sorted(props.items())))
    rels = store.read_text(
        "MATCH (a)-[r]->(b) WHERE a.group_id = $g OR (a:Group AND a.id = $g) "
        "RETURN labels(a)[0] AS al, CASE WHEN a:Group THEN 'GROUP' ELSE a.id END AS a, type(r) AS t, "
        "labels(b)[0] AS bl, CASE WHEN b:Group THEN 'GROUP' ELSE b.id END AS b", g=gid)
    return sorted(nodes, key=repr), sorted((tuple(r.values()) for r in rels), key=repr)


def test_ingest_killed_mid_load_is_completed_by_a_plain_rerun(store, schema, make_group, tmp_path):
    """``graphmem ingest`` (vectors now, batches of 100) killed after some batches committed:
    every stored message is whole and embedded; the same command again stores the rest,
    skipping what is there, and the group equals an uninterrupted load."""
    killed, whole = make_group(), make_group()
    n = 1200
    rows = [{"id": f"k{i:05d}", "session": f"s{i // 300}", "speaker": ("Ana", "Ben", "Cleo")[i % 3],
             "text": f"note {i}: the ferry to the island leaves at {i % 24}:00, bring {i % 7} bags",
             "ts": f"2026-01-{1 + i // 300:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:00"} for i in range(n)]
    paths = {}
    for gid in (killed, whole):
        paths[gid] = tmp_path / f"{gid}.jsonl"
        paths[gid].write_text("".join(json.dumps({"group": gid, **r}) + "\n" for r in rows), encoding="utf-8")
    env = env_for(GRAPHMEM_WRITE_BATCH_SIZE="100", GRAPHMEM_SENTENCE_VECTORS="false")
    args = ("--format", "jsonl", "--no-progress", "--json")
    stored = "MATCH (m:Message {group_id: $g}) RETURN count(m) AS n"
    victim = start("ingest", str(paths[killed]), *args, env=env)
    kill_when(victim, lambda: count(store, stored, g=killed) >= 300)
    at_kill = check_messages_whole(store, killed)
    assert 300 <= at_kill < n and at_kill % 100 == 0, at_kill  # whole batches only

    again = run("ingest", str(paths[killed]), *args, env=env)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert (summary["messages_written"], summary["messages_skipped"]) == (n - at_kill, at_kill)
    assert check_messages_whole(store, killed) == n
    full = run("ingest", str(paths[whole]), *args, env=env)
    assert full.returncode == 0, full.stderr
    same_graph(store, killed, whole)


def same_graph(store, a: str, b: str) -> None:
    """Assert that groups ``a`` and ``b`` hold the same graph (:func:`graph_of`), naming the
    first nodes and relationships that differ."""
    (na, ra), (nb, rb) = graph_of(store, a), graph_of(store, b)
    only_a, only_b = [x for x in na if x not in nb], [x for x in nb if x not in na]
    assert not only_a and not only_b, (str(only_a[:2])[:1500], str(only_b[:2])[:1500])
    assert ra == rb, ([x for x in ra if x not in rb][:5], [x for x in rb if x not in ra][:5])
    assert len(na) == len(nb)


def test_derive_killed_while_the_writer_works_is_completed_by_a_plain_rerun(store, embedder, schema, make_group):
    """``graphmem derive`` killed while the Writer holds segment 2: segment 1 is stored with
    all its records, nothing of segment 2; the same command again asks segment 2 and 3 and
    the group equals an uninterrupted derive."""
    from graphmem.groups.service import append_messages

    killed, whole = make_group(), make_group()
    for gid in (killed, whole):
        append_messages(store, embedder, gid, family_messages())
    with ScriptedLLM() as writer:
        in_s2 = in_session("s2")
        writer.route(in_s2, Reply.slow(600, "never delivered"), times=1)  # the process dies here
        script_writer(writer)
        env = env_for(GRAPHMEM_WRITER_BASE_URL=writer.base_url, GRAPHMEM_WRITER_MODEL=writer.model,
                      GRAPHMEM_LLM_MAX_RETRIES="0")
        victim = start("derive", "--group", killed, "--no-progress", env=env)
        kill_when(victim, lambda: any(in_s2(b) for b in writer.chat_requests))
        segments = store.read_text(
            "MATCH (s:Segment {group_id: $g}) RETURN s.id AS id, s.added + s.updated AS made, "
            "COUNT { MATCH (d:Derived {group_id: $g, segment: s.id}) } AS records ORDER BY s.index", g=killed)
        assert segments == [{"id": "seg-0001", "made": 2, "records": 2}], segments
        orphans = ("MATCH (d:Derived {group_id: $g}) "
                   "WHERE NOT EXISTS { MATCH (s:Segment {group_id: $g, id: d.segment}) } RETURN count(d) AS n")
        assert count(store, orphans, g=killed) == 0

        again = run("derive", "--group", killed, "--no-progress", "--json", env=env)
        assert again.returncode == 0, again.stderr
        out = json.loads(again.stdout)
        assert (out["segments_before"], out["segments_written"]) == (1, 2), out
        assert sum(1 for b in writer.chat_requests if in_s2(b)) == 2
        derive_group(store, whole, model=writer.chat_model(), embedder=embedder, settings=Settings(_env_file=None))
    same_graph(store, killed, whole)


def test_a_job_whose_server_was_killed_is_taken_over_at_once(store, schema, group_id):
    """A server killed with SIGKILL while its job's Writer call runs leaves the job ``running``
    under a 60 s lease; a server started on the same machine sees that the holder's process is
    gone and takes the job over at once (before: after the lease ran out, up to a minute)."""
    with ScriptedLLM() as writer:
        in_s2 = in_session("s2")
        writer.route(in_s2, Reply.slow(600, "never delivered"), times=1)
        script_writer(writer)
        env = env_for(GRAPHMEM_API_KEY="", GRAPHMEM_WRITER_BASE_URL=writer.base_url,
                      GRAPHMEM_WRITER_MODEL=writer.model, GRAPHMEM_LLM_MAX_RETRIES="0",
                      GRAPHMEM_DERIVE_JOB_LEASE_S="60")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        first = start_serve(port, env)
        try:
            assert httpx.post(f"{url}/groups/{group_id}/messages", json={"messages": family_messages()},
                              timeout=120).status_code == 200
            job_id = httpx.post(f"{url}/groups/{group_id}/derive", params={"background": "true"},
                                timeout=60).json()["job_id"]
            kill_when(first, lambda: any(in_s2(b) for b in writer.chat_requests))
        finally:
            if first.poll() is None:
                first.kill()
        held = store.read_text("MATCH (j:DeriveJob {id: $j}) RETURN j.state AS s, j.lease_until AS u", j=job_id)[0]
        assert held["s"] == "running" and held["u"] > time.time() + 30
        second = start_serve(port, env)
        try:
            t0 = time.monotonic()
            job = wait_job(lambda path: httpx.get(f"{url}{path}", timeout=30), job_id, timeout_s=120)
            took = time.monotonic() - t0
        finally:
            stop_serve(second)
    assert job["state"] == "done" and job["runs"] == 2 and job["segments_done"] == 3, job
    assert took < 20, f"the job was taken over after {took:.1f} s"
