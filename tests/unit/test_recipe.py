"""The recall pool's typed recipe, its rerankers and the learned weights' artifacts (issue 23):
a setting that cannot take effect is refused at construction, the product's recipe is the
configuration the figures were measured with, and weights that do not fit the code's
features are refused at load, naming the file and the names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.recall.learned import (
    FEATURES,
    HEAD_SENT_FEATURES,
    TAIL_FEATURES,
    WEIGHTS_DIR,
    WeightsError,
    head_sentence_weights,
    head_weights,
    load_weights,
    tail_weights,
)
from graphmem.recall.recipe import SEARCH_RRF_K, SPEAKERMEM_POOL, RecallRecipe, RecipeError
from graphmem.recall.rerank import Chain, LearnedHead, LearnedTail, NoRerank, reranker_for


def test_the_products_recipe_is_the_measured_configuration():
    r = SPEAKERMEM_POOL
    assert (r.lexical.depth, r.lexical.local_bm25, r.lexical.issue_terms, r.lexical.neighbour_share) == (
        200, True, 0.5, 0.5)
    assert (r.dense.depth, r.dense.issue_vector, r.dense.context_share, r.dense.context_depth) == (40, 1.0, 0.5, 80)
    a = r.anchors
    assert (a.person_depth, a.person_budget, a.member_budget, a.time_depth, a.time_budget, a.change_budget,
            a.person_exact_max, a.person_oversample) == (20, 2, 1, 20, 2, 0, 500, 2.0)
    f = r.fusion
    assert (f.depth, f.w_fulltext, f.w_vector, f.w_person, f.w_member, f.w_time, f.rrf_k, f.head_n,
            f.tail_rrf_k, f.search_rrf_k) == (40, 0.7, 1.0, 0.5, 0.0, 1.0, 20, 10, 60, 60)  # 0.7: thirteenth round
    assert SEARCH_RRF_K == 60
    assert (r.learned.head, r.learned.head_sentences, r.learned.tail_places, r.learned.sentence_load_max) == (
        True, True, 10, 5000)
    assert RecallRecipe() == SPEAKERMEM_POOL


@pytest.mark.parametrize(("stages", "field", "words"), [
    ({"lexical": {"local_bm25": False}}, "lexical.neighbour_share", "only with lexical.local_bm25"),
    ({"dense": {"context_share": 0.0}}, "fusion.tail_rrf_k", "only with dense.context_share > 0"),
    ({"dense": {"context_share": 0.0}, "fusion": {"tail_rrf_k": None}}, "learned.tail_places",
     "only with dense.context_share > 0"),
    ({"fusion": {"head_n": 0}}, "learned.head", "only with head_n > 0"),
    ({"learned": {"head": False}}, "learned.head_sentences", "only with learned.head"),
    ({"learned": {"head": False, "head_sentences": False}}, "learned.tail_places", "only with learned.head"),
    ({"anchors": {"person_oversample": 0.5}}, "anchors.person_oversample", "greater than or equal to 1"),
    ({"fusion": {"rrf_k": 0}}, "fusion.rrf_k", "greater than or equal to 1"),
    ({"fusion": {"w_time": -1.0}}, "fusion.w_time", "greater than or equal to 0"),
    ({"fusion": {"rrf": 20}}, "fusion.rrf", "Extra inputs"),
    ({"ranking": {"depth": 3}}, "ranking", "no stage"),
])
def test_a_meaningless_combination_is_refused_at_construction(stages, field, words):
    with pytest.raises(RecipeError) as e:
        SPEAKERMEM_POOL.evolve(**stages)
    assert e.value.field == field and words in str(e.value)
    assert isinstance(e.value, InvalidInputError)


def test_a_recipe_is_frozen_and_the_same_rules_hold_for_the_constructor():
    with pytest.raises(Exception):
        SPEAKERMEM_POOL.fusion.rrf_k = 60  # type: ignore[misc]
    with pytest.raises(RecipeError):
        RecallRecipe(learned={"head": False, "head_sentences": False})
    off = SPEAKERMEM_POOL.evolve(dense={"context_share": 0.0}, fusion={"tail_rrf_k": None}, learned={"tail_places": 0})
    assert off.learned.head and off.fusion.rrf_k == 20 and SPEAKERMEM_POOL.dense.context_share == 0.5


def test_the_recipes_rerankers():
    assert reranker_for(SPEAKERMEM_POOL) == Chain((LearnedHead(10, sentences=True), LearnedTail(10, 10)))
    assert reranker_for(SPEAKERMEM_POOL).changes_members
    assert reranker_for(SPEAKERMEM_POOL.evolve(learned={"tail_places": 0})) == LearnedHead(10, sentences=True)
    assert reranker_for(SPEAKERMEM_POOL.evolve(learned={"tail_places": 0, "head_sentences": False})) == LearnedHead(10)
    no = reranker_for(SPEAKERMEM_POOL.evolve(learned={"head": False, "head_sentences": False, "tail_places": 0}))
    assert no == NoRerank() and not no.changes_members
    assert no.rank(["b", "a", "c"], None, 2) == ["b", "a"]  # type: ignore[arg-type]  # reads nothing


# the literal arrays the product shipped before the artifacts (the figures were measured with them)
HEAD = [0.99507, 0.319649, 13.3783, 2.50178, 9.03577, 1.66981, 22.8142, -0.758327, 1.35827, 1.73084, 2.38865, 24.888]
TAIL = [112.32, 0.0, -66.192, 4.78246, -9.52737, 1.9197, 23.9506, -4.16301, 3.04993, -5.66594, 1.90885, 48.335, -2.31678, 38.9333, 5.78764, 9.92608]  # refitted in the ninth round (the head weighs sentences)
HEAD_SENT = [1.05011, 0.318874, 11.3643, 2.16001, 6.08779, 1.88989, -9.90399, -4.92133, 1.58748, 7.97494, 1.89488, 25.7846, 38.3584, 4.13451]


def test_the_shipped_weights_are_the_fitted_ones_with_their_record():
    head, tail, sent = head_weights(), tail_weights(), head_sentence_weights()
    assert head.features == FEATURES and tail.features == TAIL_FEATURES and sent.features == HEAD_SENT_FEATURES
    assert head.weights.tolist() == HEAD and tail.weights.tolist() == TAIL and sent.weights.tolist() == HEAD_SENT
    assert head.head_n == tail.head_n == sent.head_n == 10 and head.feature_rrf_k == sent.feature_rrf_k == 20
    assert sent.fitted_on["command"].startswith("bench/recall_ltr.py --sentences")
    for w in (head, tail, sent):
        assert w.fitted_on["data"] and w.fitted_on["split"] and w.fitted_on["command"].startswith("bench/recall_ltr.py")
        assert w.code_version["graphmem"] and w.code_version["commit"] and w.metrics
    assert head_weights() is head  # read once


def test_weights_whose_feature_names_differ_are_refused_at_load(tmp_path: Path):
    raw = json.loads((WEIGHTS_DIR / "head.json").read_text(encoding="utf-8"))
    raw["features"] = [*raw["features"][:-1], "time_score"]  # a feature the code does not compute
    bad = tmp_path / "head.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(WeightsError) as e:
        load_weights(bad, FEATURES)
    assert str(bad) in str(e.value) and "time_rank" in str(e.value) and "time_score" in str(e.value)
    assert e.value.path == bad
    swapped = dict(raw, features=[FEATURES[1], FEATURES[0], *FEATURES[2:]])  # same names, other order
    bad.write_text(json.dumps(swapped), encoding="utf-8")
    with pytest.raises(WeightsError, match="order"):
        load_weights(bad, FEATURES)
    short = dict(raw, features=list(FEATURES), weights=raw["weights"][:5])
    bad.write_text(json.dumps(short), encoding="utf-8")
    with pytest.raises(WeightsError, match="5 weights for 12 features|\\(5,\\) weights"):
        load_weights(bad, FEATURES)
    with pytest.raises(WeightsError, match="cannot be read"):
        load_weights(tmp_path / "missing.json", FEATURES)
    assert np.allclose(load_weights(WEIGHTS_DIR / "head.json", FEATURES).weights, HEAD)


def test_named_recipes_for_ablations():
    """``graphmem eval run --recipe NAME`` runs a named variant; each turns its stage off and stays valid."""
    from graphmem.recall.recipe import RECIPE_VARIANTS, named_recipe

    assert named_recipe("speakermem") == SPEAKERMEM_POOL
    assert named_recipe("no-learned-tail").learned.tail_places == 0
    assert named_recipe("no-learned-tail").learned.head is True
    off = named_recipe("no-learned")
    assert (off.learned.head, off.learned.tail_places) == (False, 0)
    flat = named_recipe("no-context")
    assert (flat.dense.context_share, flat.fusion.tail_rrf_k, flat.learned.tail_places) == (0.0, None, 0)
    for name in RECIPE_VARIANTS:  # every named variant differs from the product's but the product itself
        assert (named_recipe(name) == SPEAKERMEM_POOL) == (name == "speakermem")
    with pytest.raises(RecipeError, match="unknown recall recipe 'nope'; known: speakermem") as e:
        named_recipe("nope")
    assert e.value.field == "recipe"
