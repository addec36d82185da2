"""Every ask reports its composed evidence's tokens per part, with no model (issue 29, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.core.tokens import count_tokens
from graphmem.derived.writer import ReplayWriter, derive_group
from graphmem.core.config import get_settings
from graphmem.query import ask
from graphmem.verbatim.ingest import ingest_conversations
from loaders import load_conversations
from tests.factories import runtime_of

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def test_an_offline_ask_counts_its_evidence(store, embedder, group_id):
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id), embedder)
    derive_group(store, group_id, model=ReplayWriter(ROOT / "examples" / "sample_writer_actions.jsonl"),
                 embedder=embedder, settings=get_settings())
    result = ask(runtime_of(store, embedder), group_id, "Which trail did the family choose, and does Ben agree?")
    t = result.evidence_tokens
    assert t["total"] == count_tokens([result.evidence])[0] > 0
    assert t["verbatim"] > 0 and t["structured"] > 0 and t["question"] == count_tokens([result.question])[0]
    assert t["verbatim"] + t["structured"] + t["question"] < t["total"]


def test_an_offline_ask_prices_each_pool_message(store, embedder, group_id):
    """``pool_tokens``: the excerpt line of each pool message; without a model the excerpts are
    the pool's first top-k, so their costs add up to the verbatim part (the eval's token curve)."""
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id), embedder)
    result = ask(runtime_of(store, embedder), group_id, "Which trail did the family choose?")
    assert len(result.pool_tokens) == len(result.pool_ids) > len(result.excerpts) > 0
    assert [e.id for e in result.excerpts] == result.pool_ids[: len(result.excerpts)]
    assert sum(result.pool_tokens[: len(result.excerpts)]) == result.evidence_tokens["verbatim"]
    assert min(result.pool_tokens) > 10  # a line carries speaker, time and id besides the text


def test_an_ask_recalls_with_the_runtimes_recipe(store, embedder, group_id):
    """``Runtime(recipe=...)`` (``graphmem eval run --recipe``) is the pool ``ask`` recalls with."""
    from graphmem.core.config import get_settings
    from graphmem.query.project import fallback_projection
    from graphmem.recall.pool import recall_pool
    from graphmem.recall.recipe import SPEAKERMEM_POOL, named_recipe
    from graphmem.runtime import Runtime
    from graphmem.verbatim.roster import read_roster

    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id), embedder)
    question = "Which trail does Ben prefer, and why?"
    roster = read_roster(store, group_id)
    projection = fallback_projection(question, roster)
    flat = named_recipe("no-learned")
    rt = Runtime(get_settings(), store=store, embedder=embedder, recipe=flat)
    assert rt.with_models().recipe is flat
    pools = []
    for runtime, recipe in ((rt, flat), (runtime_of(store, embedder), SPEAKERMEM_POOL)):
        pool = recall_pool(store, embedder, group_id, question, 40, roster=roster, projection=projection, recipe=recipe)
        pools.append([h.id for h in pool])
        assert ask(runtime, group_id, question).pool_ids == pools[-1]
    assert pools[0] != pools[1]  # the fusion's order is not the learned one: the recipe made the difference
