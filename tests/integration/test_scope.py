"""Group scoping at scale: two groups with identical texts never see each other's messages.

Both vector strategies are exercised at the size where the switch happens: a group of exactly
``exact_max`` messages is scored exactly, one more message gives the group its own vector index
(graphmem.store.scope). Fulltext is confined to the group by its token in every case. Also: deferred
embedding (``--embed later`` + ``embed_group``) is resumable and idempotent, and search falls
back to fulltext while vectors are missing.
"""

from __future__ import annotations

import pytest

from graphmem.verbatim.ingest import ingest_conversations
from graphmem.store.scope import group_key, scope_index, scoped_fulltext_query, vector_scope_state
from graphmem.recall.search import group_state, search_messages, search_terms
from graphmem.verbatim.vectors import embed_group
from tests.factories import conversation

pytestmark = pytest.mark.neo4j

EXACT_MAX = 24  # small on purpose: the switch is the same code path at any size
TOPICS = [
    "the budget review moves to Friday after the storm",
    "my cat knocked the coffee over the quarterly report",
    "we should book the lighthouse tour before noon",
    "the printer on the third floor is jammed again",
    "Dana wants the onboarding slides in blue",
    "the hiking trip needs two more tents and a stove",
]
QUERIES = ["budget review storm", "cat coffee report", "lighthouse tour noon", "tents stove hiking trip"]


def rows(prefix: str, n: int) -> list[dict]:
    """``n`` messages whose texts are the same for every prefix; ids carry the prefix."""
    speakers = ["Ana", "Ben", "Chloe"]
    return [
        {"id": f"{prefix}-{i:03d}", "speaker": speakers[i % 3], "session": f"s{i // 10}",
         "text": f"{TOPICS[i % len(TOPICS)]} (item {i})"}
        for i in range(n)
    ]


def test_group_key_is_one_digit_token() -> None:
    k = group_key("conv-26")
    assert k.isdigit() and k == group_key("conv-26") and k != group_key("conv-27")
    assert scoped_fulltext_query("conv-26", "search_text:(budget)") == f"+group_key:{k}^0 +(search_text:(budget))"
    assert search_terms("the budget AND a storm?") == "search_text:(budget storm)"
    assert search_terms("押金 AND deposit") == "search_text:(deposit) search_grams:(g25276x37329)"


@pytest.mark.parametrize("n", [EXACT_MAX, EXACT_MAX + 1], ids=["exact", "own-index"])
def test_identical_groups_never_see_each_other(store, embedder, make_group, n: int) -> None:
    a, b = make_group("scope-a"), make_group("scope-b")
    for gid, prefix in ((a, "a"), (b, "b")):
        ingest_conversations(store, [conversation(gid, rows(prefix, n))], embedder, exact_max=EXACT_MAX)
    for gid, prefix in ((a, "a"), (b, "b")):
        state = group_state(store, gid)
        if n > EXACT_MAX:
            assert state.vector_index == scope_index(gid)
            assert vector_scope_state(store, gid) == "ONLINE"
        else:
            assert state.vector_index == "" and vector_scope_state(store, gid) is None
        for q in QUERIES:
            for mode in ("fulltext", "vector", "hybrid"):
                hits = search_messages(store, embedder, gid, q, k=n, pool_n=n, mode=mode)
                assert hits, (gid, q, mode)
                assert all(h.id.startswith(prefix + "-") for h in hits), (mode, q, [h.id for h in hits])
                if mode == "vector":  # every message has a vector: the ranking is complete
                    assert len(hits) == n
        top = search_messages(store, embedder, gid, "lighthouse tour", k=1, mode="fulltext")[0]
        assert "lighthouse" in top.text
        # per-person rankings (person anchors, System 2's raw fallback): exact, and - for a
        # person over exact_max in a group with its own index - read from that index
        # Ana sent every budget line, Ben every cat line: both are among the group's 8 nearest
        vec = embedder.encode(["budget review storm, cat coffee report"])[0].tolist()
        for exact_max in (EXACT_MAX, 0):
            found = store.read(
                "recall/vector_person_messages", group_id=gid, person_ids=["Ana", "Ben"], vector=vec,
                k=2, max_instant=None, index=state.vector_index or None, exact_max=exact_max,
                oversample=0.1,  # fetch = 4 k = 8 <= 8 or 9 messages each: the index branch
            )
            assert {r["person_id"] for r in found} == {"Ana", "Ben"}
            assert all(r["id"].startswith(prefix + "-") for r in found)
            assert all(sum(r["person_id"] == p for r in found) <= 2 for p in ("Ana", "Ben"))


def test_later_writes_into_a_scoped_group_join_its_index(store, embedder, make_group) -> None:
    gid = make_group("scope-grow")
    ingest_conversations(store, [conversation(gid, rows("g", EXACT_MAX + 1))], embedder, exact_max=EXACT_MAX)
    more = rows("g", EXACT_MAX + 7)
    more[-1]["text"] = "a zeppelin landed on the roof of the archive"
    ingest_conversations(store, [conversation(gid, more)], embedder, exact_max=EXACT_MAX)
    hits = search_messages(store, embedder, gid, "zeppelin landed on the archive roof", k=1, mode="vector")
    assert hits[0].id == f"g-{EXACT_MAX + 6:03d}"


def test_embed_later_is_fulltext_first_then_resumable(store, embedder, make_group) -> None:
    gid = make_group("scope-later")
    n = EXACT_MAX + 5
    summary = ingest_conversations(store, [conversation(gid, rows("l", n))], None, embed="later")
    assert summary.messages_written == n
    assert group_state(store, gid).pending == n
    hits = search_messages(store, embedder, gid, "budget review storm", k=3)  # hybrid -> fulltext
    assert hits and all(h.ranks.keys() == {"fulltext"} for h in hits)
    assert search_messages(store, embedder, gid, "budget review", k=3, mode="vector") == []

    first = embed_group(store, embedder, gid, batch_size=10, exact_max=EXACT_MAX)
    assert first.embedded == n and first.messages == n
    assert first.vector_index == scope_index(gid) and first.labelled == n
    again = embed_group(store, embedder, gid, batch_size=10, exact_max=EXACT_MAX)
    assert again.embedded == 0 and again.labelled == 0
    assert group_state(store, gid).pending == 0
    hits = search_messages(store, embedder, gid, "budget review storm", k=3)
    assert hits and any("vector" in h.ranks for h in hits)
    assert all(h.id.startswith("l-") for h in hits)


def test_cli_search_says_once_that_vectors_are_pending(store, make_group, caplog) -> None:
    """`graphmem search` on a group stored with --embed later warns once, with the right words."""
    import logging

    from typer.testing import CliRunner

    from graphmem.cli import app

    gid = make_group("scope-cli-later")
    ingest_conversations(store, [conversation(gid, rows("c", 5))], None, embed="later")
    runner = CliRunner()
    with caplog.at_level(logging.WARNING, logger="graphmem.recall.search"):
        r = runner.invoke(app, ["search", "--group", gid, "budget review", "--json"])
    assert r.exit_code == 0, r.output
    said = r.stderr + "".join(rec.getMessage() for rec in caplog.records)
    assert said.count("no vector yet") == 1
    assert "5 message(s)" in r.stderr and "ranking by fulltext alone" in r.stderr
    r = runner.invoke(app, ["search", "--group", gid, "budget review", "--mode", "vector", "--json"])
    assert r.exit_code == 0, r.output
    assert "only messages with a vector are ranked" in r.stderr
