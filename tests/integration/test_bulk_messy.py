"""Messy bulk input, found by trying to break the bulk path (real Neo4j, real embedder):
concurrent loads of one input report exact counts, and vectors always belong to the stored
text (an edit during ``graphmem embed`` is not given the old text's vector)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from graphmem.verbatim.ingest import ingest_conversations
from graphmem.recall.search import group_state
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j


class MeanwhileEmbedder:
    """The real embedder; on its first ``encode`` it first runs ``meanwhile`` (another load or
    edit, through the real library), so the caller's next write finds it committed: the
    interleaving two processes can produce, made deterministic."""

    def __init__(self, inner, meanwhile: Callable[[], object]) -> None:
        self.inner, self.meanwhile = inner, meanwhile
        self.dimension = inner.dimension

    def encode(self, texts, *args, **kwargs):
        if self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            run()
        return self.inner.encode(texts, *args, **kwargs)


def counts(s) -> tuple[int, int, int]:
    return s.messages_written, s.messages_edited, s.messages_skipped


def test_concurrent_loads_of_one_input_count_each_line_once(store, embedder, group_id):
    """Two loads of the same input, the second committing while the first encodes: between
    them every line is written, edited or skipped exactly once (the loser's in-input edits were
    counted as edits as well as skipped before)."""
    rows = [{"id": f"m{i}", "speaker": "Ana" if i % 2 else "Ben", "text": f"line {i} about the ferry",
             "ts": f"2026-01-01T10:00:{i:02d}"} for i in range(10)]
    rows += [dict(rows[2], text="line 2 about the ferry, corrected"),
             dict(rows[5], text="line 5, first fix"), dict(rows[5], text="line 5, second fix")]
    conv = conversation(group_id, rows)
    inner = []
    racing = MeanwhileEmbedder(embedder, lambda: inner.append(ingest_conversations(store, [conv], embedder)))
    outer = ingest_conversations(store, [conv], racing)
    assert counts(inner[0]) == (10, 3, 0)
    assert counts(outer) == (0, 0, 13)
    history = store.read_text("MATCH (m:Message {group_id: $g}) RETURN sum(size(coalesce(m.text_history, []))) AS h",
                              g=group_id)
    assert history == [{"h": 3}]

    # the same with edits of stored messages: one load applies them, the other skips them
    edits = [dict(rows[0], text="line 0, revised"), dict(rows[0], text="line 0, revised again"),
             dict(rows[1], text="line 1, revised")]
    conv = conversation(group_id, edits)
    inner.clear()
    racing = MeanwhileEmbedder(embedder, lambda: inner.append(ingest_conversations(store, [conv], embedder)))
    outer = ingest_conversations(store, [conv], racing)
    assert counts(inner[0]) == (0, 3, 0)
    assert counts(outer) == (0, 0, 3)


def stored_vector(store, gid: str, mid: str):
    return store.read_text("MATCH (m:Message {group_id: $g, id: $id}) RETURN m.text AS text, m.embedding AS e, "
                           "m:PendingEmbedding AS pending", g=gid, id=mid)[0]


def test_an_edit_during_embed_is_not_given_the_old_texts_vector(store, embedder, group_id):
    """`graphmem embed` reads a batch, encodes it, writes it; a message edited (``--embed
    later``) in between must keep no vector of its old text: it stays pending and the same run
    embeds its new text."""
    rows = [{"id": f"e{i}", "speaker": "Ana", "text": f"we meet at the harbour at {i}",
             "ts": f"2026-01-01T10:00:{i:02d}"} for i in range(6)]
    ingest_conversations(store, [conversation(group_id, rows)], None, embed="later")
    edited = [dict(r) for r in rows]
    edited[3]["text"] = "plans changed: we meet at the station instead"
    edit = lambda: ingest_conversations(store, [conversation(group_id, edited)], None, embed="later")  # noqa: E731
    summary = embed_group(store, MeanwhileEmbedder(embedder, edit), group_id, batch_size=4)
    m = stored_vector(store, group_id, "e3")
    assert m["text"] == "plans changed: we meet at the station instead"
    want = embedder.encode(["Ana (2026-01-01): plans changed: we meet at the station instead"])[0].tolist()
    assert not m["pending"] and m["e"] == pytest.approx(want, abs=1e-5)
    assert group_state(store, group_id).pending == 0 and summary.embedded == 6  # the old text of e3 was refused
    assert embed_group(store, embedder, group_id).embedded == 0


def test_an_edit_with_a_vector_leaves_nothing_pending(store, embedder, group_id):
    """A message stored with ``--embed later`` and then edited with vectors computed now has
    its vector: it is no longer counted as missing one (search used to fall back to fulltext
    for it until `graphmem embed` re-encoded it)."""
    rows = [{"id": f"p{i}", "speaker": "Ben", "text": f"the ferry leaves at {i}",
             "ts": f"2026-01-01T10:00:{i:02d}"} for i in range(3)]
    ingest_conversations(store, [conversation(group_id, rows)], None, embed="later")
    embed_group(store, embedder, group_id)
    ingest_conversations(store, [conversation(group_id, rows + [
        {"id": "p3", "speaker": "Ben", "text": "late news", "ts": "2026-01-01T10:00:03"}])], None, embed="later")
    assert group_state(store, group_id).pending == 1
    edited = [dict(r) for r in rows] + [{"id": "p3", "speaker": "Ben", "text": "late news, edited",
                                         "ts": "2026-01-01T10:00:03"}]
    edited[0]["text"] = "the ferry leaves at noon"
    s = ingest_conversations(store, [conversation(group_id, edited)], embedder)
    assert (s.messages_edited, s.messages_skipped) == (2, 2)
    assert group_state(store, group_id).pending == 0
    for mid, text in (("p0", "the ferry leaves at noon"), ("p3", "late news, edited")):
        m = stored_vector(store, group_id, mid)
        assert not m["pending"] and m["e"] == pytest.approx(
            embedder.encode([f"Ben (2026-01-01): {text}"])[0].tolist(), abs=1e-5)


class CountingEmbedder:
    """The real embedder, counting the texts it encodes; ``first`` runs before its first encode."""

    def __init__(self, inner, first: Callable[[], object] | None = None) -> None:
        self.inner, self.first, self.texts = inner, first, 0
        self.dimension = inner.dimension

    def encode(self, texts, *args, **kwargs):
        if self.first is not None:
            run, self.first = self.first, None
            run()
        self.texts += len(texts)
        return self.inner.encode(texts, *args, **kwargs)


def test_two_concurrent_embeds_of_one_group_encode_each_message_once(store, embedder, group_id):
    """Run B starts while run A is encoding its first batch: B waits for A's lease instead of
    reading the same pending messages (before: both encoded them, 2x the encoder's work), then
    finds nothing missing and says it waited; every message has its vector."""
    import threading

    rows = [{"id": f"c{i}", "speaker": "Ana" if i % 2 else "Ben", "text": f"the ferry leaves at {i} sharp",
             "ts": f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}"} for i in range(40)]
    ingest_conversations(store, [conversation(group_id, rows)], None, embed="later")
    counting = CountingEmbedder(embedder)
    waiting = threading.Event()
    other: dict = {}

    def run_b() -> None:
        other["summary"] = embed_group(store, counting, group_id, batch_size=10, wait_poll_s=0.2,
                                       on_wait=lambda runner: waiting.set())

    b = threading.Thread(target=run_b)

    def start_b() -> None:  # inside A's first encode: A holds the lease and its first batch
        b.start()
        assert waiting.wait(timeout=120), "run B never waited for run A"

    a_embedder = CountingEmbedder(embedder, first=start_b)
    a = embed_group(store, a_embedder, group_id, batch_size=10)
    b.join(timeout=300)
    b_summary = other["summary"]
    assert a_embedder.texts + counting.texts == 40  # each message encoded once in all
    assert (a.embedded, b_summary.embedded) == (40, 0)
    assert a.waited_s == 0.0 and b_summary.waited_s > 0
    assert group_state(store, group_id).pending == 0
    assert store.read_text("MATCH (m:Message {group_id: $g}) WHERE m.embedding IS NULL RETURN count(m) AS n",
                           g=group_id) == [{"n": 0}]
    lease = store.read_text("MATCH (g:Group {id: $g}) RETURN g.embed_runner AS r, g.embed_lease_until AS u",
                            g=group_id)
    assert lease == [{"r": None, "u": None}]  # released


def test_embed_takes_over_the_lease_of_a_run_that_died(store, embedder, group_id):
    """A run that died holding the group's lease blocks the next run only until the lease runs
    out; the next run then fills everything and reports the wait."""
    import time

    rows = [{"id": f"d{i}", "speaker": "Ana", "text": f"note {i}", "ts": f"2026-01-01T10:00:{i:02d}"}
            for i in range(5)]
    ingest_conversations(store, [conversation(group_id, rows)], None, embed="later")
    now = time.time()
    store.write("ingest/claim_embed_lease", group_id=group_id, runner="dead-run", owner=None, now=now,
                lease_until=now + 1.5, take_from=None)  # a holder on another machine: waited out
    told: list[str] = []
    summary = embed_group(store, embedder, group_id, wait_poll_s=0.2, on_wait=told.append)
    assert told == ["dead-run"]
    assert summary.embedded == 5 and summary.waited_s >= 1.0
    assert group_state(store, group_id).pending == 0


def test_a_run_whose_lease_was_taken_over_stops_instead_of_writing(store, embedder, group_id):
    """Run A (lease 0.5 s) is paused inside its first encode past its lease; run B takes the
    group over and encodes its own first batch; A then resumes. A must write nothing more and
    stop with a ConflictError that names the group and B, and B writes every vector. Before,
    A wrote its batch beside B (B then found those messages done: B 3 of 6) and waited to take
    the group back."""
    import threading

    from graphmem.core.errors import ConflictError

    rows = [{"id": f"L{i}", "speaker": "Ana", "text": f"the ferry leaves at {i} sharp",
             "ts": f"2026-01-01T10:00:{i:02d}"} for i in range(6)]
    ingest_conversations(store, [conversation(group_id, rows)], None, embed="later")
    a_encoding, b_encoding, a_done = threading.Event(), threading.Event(), threading.Event()
    result: dict = {}

    def pause_a() -> None:  # A holds the lease and its first batch; it sleeps past its lease
        a_encoding.set()
        assert b_encoding.wait(timeout=120), "run B never took over A's lease"

    def hold_b() -> None:  # B holds the lease and its first batch; A resumes and tries to write
        b_encoding.set()
        a_done.wait(timeout=60)

    def run_a() -> None:
        try:
            result["a"] = embed_group(store, CountingEmbedder(embedder, first=pause_a), group_id,
                                      batch_size=3, lease_s=0.5)
        except ConflictError as e:
            result["a_error"] = e
        finally:
            a_done.set()

    a = threading.Thread(target=run_a)
    a.start()
    assert a_encoding.wait(timeout=120)
    told: list[str] = []
    b = embed_group(store, CountingEmbedder(embedder, first=hold_b), group_id, batch_size=3,
                    wait_poll_s=0.05, on_wait=told.append)
    a.join(timeout=120)
    assert "a" not in result, result  # A did not finish as if nothing happened
    err = str(result["a_error"])
    assert err.startswith(f"embed run {told[0]} lost the lease of group {group_id!r}"), err
    assert "took the group over" in err and "0 vectors it wrote before" in err, err
    assert b.embedded == 6 and b.waited_s > 0  # every vector written by the holder
    assert group_state(store, group_id).pending == 0
    for r in rows:
        m = stored_vector(store, group_id, r["id"])
        assert m["e"] == pytest.approx(embedder.encode([f"Ana (2026-01-01): {r['text']}"])[0].tolist(), abs=1e-5)
    lease = store.read_text("MATCH (g:Group {id: $g}) RETURN g.embed_runner AS r", g=group_id)
    assert lease == [{"r": None}]  # B released it; A's release changed nothing


def test_embed_after_a_kill_9_takes_the_dead_runs_lease_at_once(store, embedder, group_id, tmp_path):
    """A `graphmem embed` killed with SIGKILL while it holds the lease (lease 300 s) is taken
    over by the next run at once, which fills everything: before, the re-run waited ~5 minutes."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from graphmem.core.process import owner_gone

    rows = [{"id": f"k{i}", "speaker": "Ana", "text": f"note {i} about the trip", "ts": f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}"}
            for i in range(400)]
    ingest_conversations(store, [conversation(group_id, rows)], None, embed="later")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "GRAPHMEM_EMBED_BATCH_SIZE": "8", "GRAPHMEM_SENTENCE_VECTORS": "false"}
    victim = subprocess.Popen([sys.executable, "-m", "graphmem", "embed", "--group", group_id, "--no-progress"],
                              cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    owner = None
    deadline = time.time() + 120
    while time.time() < deadline and owner is None:  # wait until it holds the lease
        time.sleep(0.2)
        owner = store.read_text("MATCH (g:Group {id: $g}) RETURN g.embed_owner AS o", g=group_id)[0]["o"]
    assert owner is not None, "the first run never took the lease"
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert owner_gone(owner)
    held = store.read_text("MATCH (g:Group {id: $g}) RETURN g.embed_runner AS r, g.embed_lease_until AS u", g=group_id)[0]
    assert held["r"] is not None and held["u"] > time.time() + 60  # the dead run's lease is still on the group
    t0 = time.monotonic()
    summary = embed_group(store, embedder, group_id)
    assert time.monotonic() - t0 < 60 and summary.waited_s == 0.0
    assert group_state(store, group_id).pending == 0 and summary.messages == 400
