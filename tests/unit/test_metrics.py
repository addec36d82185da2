"""Answer metrics: expected values are worked out by hand in the comments."""

from __future__ import annotations

import json

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.eval.metrics import (
    binary_accuracy,
    bootstrap_mean_n_ci,
    hit_at_k,
    locomo_official_f1,
    mean_n,
    mean_q,
    mean_recall_at_k,
    mean_token_f1,
    normalize_answer,
    parse_judge_verdict,
    recall_at_k,
    socialmem_summary,
    token_f1,
    token_prf,
)

# --- token-F1 (eq. 11) ----------------------------------------------------------------------


def test_token_f1_uses_sets_not_multisets() -> None:
    # A = {the, cat}, G = {the, cat, sat}: p = 2/2 = 1, r = 2/3, f = 2*(2/3)/(5/3) = 0.8.
    # (A multiset F1 would give p = 2/4, r = 2/3, f = 4/7 = 0.571.)
    p, r, f = token_prf("the cat the cat", "the cat sat")
    assert p == pytest.approx(1.0)
    assert r == pytest.approx(2 / 3)
    assert f == pytest.approx(0.8)


def test_token_f1_normalisation_is_only_case_whitespace_and_trailing_periods() -> None:
    assert normalize_answer("  Paris  IS   nice.. ") == "paris is nice"
    assert token_f1("Paris.", "  paris ") == pytest.approx(1.0)
    # inner punctuation stays: {paris,} vs {paris} share nothing
    assert token_f1("paris,", "paris") == 0.0
    # articles stay: {the, eiffel, tower} vs {eiffel, tower}: p = 2/3, r = 1 -> f = 0.8
    assert token_f1("The Eiffel Tower", "eiffel tower") == pytest.approx(0.8)


def test_token_f1_zero_cases() -> None:
    assert token_f1("", "lyon") == 0.0
    assert token_f1("lyon", "") == 0.0
    assert token_f1("", "") == 0.0  # both empty: defined as 0 in eq. 11
    assert token_f1("...", "lyon") == 0.0  # normalises to nothing
    assert token_f1("berlin", "lyon") == 0.0


def test_mean_token_f1_is_a_percentage_with_equal_question_weights() -> None:
    # per question: 0.8, 1.0, 0.0 -> mean 0.6 -> 60 %
    assert mean_token_f1(["the cat the cat", "Lyon.", "x"], ["the cat sat", "lyon", "y"]) == pytest.approx(60.0)
    with pytest.raises(InvalidInputError):
        mean_token_f1(["a"], [])
    with pytest.raises(InvalidInputError):
        mean_token_f1([], [])


# --- judge parsing and binary accuracy (eq. 10) --------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer matches.\nFinal: Correct", True),
        ("Paraphrase but wrong city.\nFinal: Incorrect\n", False),
        ("  Final: Correct  ", True),
        ("First Final: Correct\nFinal: Correct\nOn reflection no.\nFinal: Incorrect", False),  # last line wins
        ("<think>Final: Correct</think>\nFinal: Incorrect", False),
        ("Final: Correct.", None),  # trailing punctuation: not the format
        ("**Final: Correct**", None),
        ("final: correct", None),
        ("The answer is Final: Correct", None),  # not on its own line
        ("Correct", None),
        ("", None),
    ],
)
def test_parse_judge_verdict(text: str, expected: bool | None) -> None:
    assert parse_judge_verdict(text) is expected


def test_binary_accuracy_counts_unparsed_as_not_correct_and_reports_them() -> None:
    summary = binary_accuracy([True, False, None, True])
    # 2 correct of 4 -> 50 %, one unparsed reported separately
    assert summary.accuracy == pytest.approx(50.0)
    assert (summary.correct, summary.incorrect, summary.unparsed, summary.total) == (2, 1, 1, 4)
    assert json.loads(json.dumps(summary.to_dict()))["unparsed"] == 1
    with pytest.raises(InvalidInputError):
        binary_accuracy([])


# --- LoCoMo official F1 -------------------------------------------------------------------


def test_locomo_single_hop_and_temporal() -> None:
    # "On 7 May 2023." -> [on, 7, may, 2023]; gold [7, may, 2023]: p = 3/4, r = 1 -> f = 6/7
    assert locomo_official_f1("On 7 May 2023.", "7 May 2023", 2) == pytest.approx(6 / 7)
    # articles and punctuation removed: both -> [eiffel, tower]
    assert locomo_official_f1("The Eiffel Tower", "eiffel tower!", 4) == pytest.approx(1.0)
    # integer gold answers are cast to str
    assert locomo_official_f1("In 2022", 2022, 2) == pytest.approx(2 / 3)  # p = 1/2, r = 1
    # multiset counting: pred [paris, paris] vs gold [paris]: common 1, p = 1/2, r = 1 -> 2/3
    assert locomo_official_f1("Paris, Paris", "Paris", 4) == pytest.approx(2 / 3)
    # both normalise to nothing -> 1.0 (reference-code quirk, kept on purpose)
    assert locomo_official_f1("the", "a", 4) == 1.0


def test_locomo_open_domain_gold_is_cut_at_first_semicolon() -> None:
    # gold -> "Likely yes" -> [likely, yes]: identical to the prediction
    assert locomo_official_f1("likely yes", "Likely yes; she likes art", 3) == pytest.approx(1.0)
    # as category 4 the whole gold counts: [likely, yes, she, likes, art] (";" deleted)
    # p = 2/2, r = 2/5 -> f = 2*(2/5)/(7/5) = 4/7
    assert locomo_official_f1("likely yes", "Likely yes; she likes art", 4) == pytest.approx(4 / 7)


def test_locomo_multi_hop_averages_sub_answers() -> None:
    # sub-answers [pottery, camping, painting]; pred tokens [pottery, and, painting]
    # pottery: p = 1/3, r = 1 -> 0.5; camping: 0; painting: 0.5 -> mean 1/3
    assert locomo_official_f1("pottery and painting", "pottery, camping; painting", 1) == pytest.approx(1 / 3)


def test_locomo_adversarial_counts_abstention() -> None:
    assert locomo_official_f1(
        "There is no information available in the conversation to answer this question.", "", 5
    ) == 1.0
    assert locomo_official_f1("It is NOT MENTIONED anywhere.", "Paris", 5) == 1.0
    assert locomo_official_f1("She went to Paris", "Paris", 5) == 0.0


def test_locomo_upstream_variant_stems_and_splits_predictions() -> None:
    pytest.importorskip("nltk")
    # stems: paints -> paint, painting -> paint: [she, paint] vs [paint]: p = 1/2, r = 1 -> 2/3
    assert locomo_official_f1("she paints", "painting", 4, variant="locomo") == pytest.approx(2 / 3)
    assert locomo_official_f1("she paints", "painting", 4) == 0.0  # default variant does not stem
    # upstream multi-hop: "and" dropped, gold split on ',' only -> [pottery], [camping; painting]
    # gold 1: [potteri] vs pred [potteri, paint]: p = 1/2, r = 1 -> 2/3
    # gold 2: [camp, paint] vs pred [potteri, paint]: p = 1/2, r = 1/2 -> 1/2; mean = 7/12
    assert locomo_official_f1(
        "pottery and painting", "pottery, camping; painting", 1, variant="locomo"
    ) == pytest.approx(7 / 12)


def test_locomo_rejects_unknown_category() -> None:
    with pytest.raises(InvalidInputError):
        locomo_official_f1("x", "y", 6)


# --- SocialMem MeanQ / MeanN (eq. 12) ------------------------------------------------------

TWO_NETWORKS = {"net-a": [1.0, 1.0, 1.0, 0.0], "net-b": [0.0]}


def test_mean_q_weights_questions_mean_n_weights_networks() -> None:
    # MeanQ = (1 + 1 + 1 + 0 + 0) / 5 = 0.6
    assert mean_q(TWO_NETWORKS) == pytest.approx(0.6)
    # MeanN = (mean(net-a) + mean(net-b)) / 2 = (0.75 + 0) / 2 = 0.375
    assert mean_n(TWO_NETWORKS) == pytest.approx(0.375)


def test_bootstrap_ci_over_two_networks() -> None:
    # Resampling 2 of {0.75, 0.0} gives means 0 (p 1/4), 0.375 (p 1/2), 0.75 (p 1/4); with
    # 10,000 resamples ~2,500 sit at each end, so the 2.5th/97.5th percentiles are 0 and 0.75.
    assert bootstrap_mean_n_ci(TWO_NETWORKS, seed=7) == (0.0, 0.75)


def test_bootstrap_ci_is_reproducible_with_a_seed() -> None:
    networks = {f"n{i}": [(i * 37 % 11) / 10, (i * 13 % 7) / 6] for i in range(43)}
    first = bootstrap_mean_n_ci(networks, seed=123)
    assert bootstrap_mean_n_ci(networks, seed=123) == first
    assert bootstrap_mean_n_ci(networks, seed=124) != first
    low, high = first
    assert low < mean_n(networks) < high


def test_bootstrap_ci_of_identical_networks_is_a_point() -> None:
    networks = {"a": [0.5, 0.7], "b": [0.6], "c": [0.9, 0.3]}  # every network mean is 0.6
    low, high = bootstrap_mean_n_ci(networks, n_resamples=500, seed=1)
    assert low == pytest.approx(0.6) and high == pytest.approx(0.6)


def test_socialmem_summary_and_validation() -> None:
    summary = socialmem_summary(TWO_NETWORKS, n_resamples=2000, seed=3)
    assert (summary.mean_q, summary.mean_n) == (pytest.approx(0.6), pytest.approx(0.375))
    assert (summary.n_networks, summary.n_questions) == (2, 5)
    assert json.loads(json.dumps(summary.to_dict()))["n_resamples"] == 2000
    with pytest.raises(InvalidInputError):
        mean_n({"a": []})
    with pytest.raises(InvalidInputError):
        mean_q({"a": [1.5]})
    with pytest.raises(InvalidInputError):
        mean_q({})


# --- recall@k -----------------------------------------------------------------------------


def test_recall_and_hit_at_k() -> None:
    ranked = ["D3:1", "D1:2", "D1:2", "D7:4", "D2:9"]
    gold = ["D1:2", "D2:9"]
    # top-2 distinct: {D3:1, D1:2} -> 1 of 2 gold
    assert recall_at_k(ranked, gold, 2) == pytest.approx(0.5)
    # the repeated D1:2 takes no slot: top-4 distinct = {D3:1, D1:2, D7:4, D2:9}
    assert recall_at_k(ranked, gold, 4) == pytest.approx(1.0)
    assert hit_at_k(ranked, gold, 1) == 0.0
    assert hit_at_k(ranked, gold, 2) == 1.0


def test_recall_ignores_invalid_gold_and_skips_questions_without_any() -> None:
    valid = {"D1:2", "D2:9", "D3:1", "D7:4"}
    # "D99:1" names no message: gold -> {D1:2}, found at rank 2
    assert recall_at_k(["D3:1", "D1:2"], ["D1:2", "D99:1"], 2, valid_ids=valid) == 1.0
    assert recall_at_k(["D3:1"], ["D99:1", ""], 5, valid_ids=valid) is None
    assert recall_at_k(["D3:1"], [], 5) is None
    summary = mean_recall_at_k(
        [
            (["D3:1", "D1:2"], ["D1:2", "D2:9"]),  # recall 1/2, hit 1
            (["D7:4"], ["D3:1"]),  # recall 0, hit 0
            (["D7:4"], ["D99:1"]),  # no valid gold: skipped
        ],
        2,
        valid_ids=valid,
    )
    assert (summary.recall, summary.hit) == (pytest.approx(0.25), pytest.approx(0.5))
    assert (summary.n_scored, summary.n_skipped) == (2, 1)
    with pytest.raises(InvalidInputError):
        recall_at_k(["a"], ["a"], 0)
