"""SpeakerLevenshtein (App. E eq. 13-18) on hand-computed examples.

Hand arithmetic for the contents used below. S_seq is difflib's ratio 2M/(|a|+|b|) on the
joined token strings (M = matched characters); when one string is a prefix, suffix or
infix of the other, M is the shorter length.

  a = "aa bb cc dd ee" (14 chars)   b = "aa bb cc dd" (11)   c = "dd ee" (5)
  d = "aa bb cc" (8)                e = "aa cc" (5)

  κ̄(a, b): b is a prefix of a, M = 11, S = 22/25; token sets 5 vs 4, overlap 4:
           p = 4/5, r = 1, F = 8/9;  κ̄ = 0.6·8/9 + 0.4·22/25 = 0.885333
  κ̄(a, c): c is a suffix of a, M = 5, S = 10/19; overlap 2 of 5 vs 2: F = 4/7;
           κ̄ = 0.6·4/7 + 0.4·10/19 = 368/665 = 0.553383
  κ̄(d, b): d is a prefix of b, M = 8, S = 16/19; overlap 3 of 3 vs 4: F = 6/7;
           κ̄ = 0.6·6/7 + 0.4·16/19 = 566/665 = 0.851128
  κ̄(d, c): only one space in common, M = 1, S = 2/13; no shared token, F = 0;
           κ̄ = 0.4·2/13 = 0.0615 < 0.50 -> gated to 0
  κ̄(d, e): longest block "aa " (3) then "cc" (2), M = 5, S = 10/13; overlap 2 of 3 vs 2:
           F = 0.8;  κ̄ = 0.48 + 0.4·10/13 = 0.787692
"""

from __future__ import annotations

import json

import pytest

from graphmem.eval.speaker_levenshtein import (
    ChainEdge,
    MemoryRecord,
    chain_score,
    content_tokens,
    gated_match,
    memory_reward,
    owner_f1,
    sequence_ratio,
    soft_match,
    speaker_levenshtein,
)

CORE = "per_speaker_core"
PROFILE = "per_speaker_profile"


def rec(owner: str, content: str, *, source: str | None = None, layer: str = CORE) -> MemoryRecord:
    return MemoryRecord(owner=owner, source=owner if source is None else source, layer=layer, content=content)


def test_tokenisation() -> None:
    assert content_tokens("Alice's NEW job: nurse @ St.-Mary (2024)!") == [
        "alice", "s", "new", "job", "nurse", "st", "mary", "2024",
    ]
    # each CJK character is a token, kept in place between ASCII runs
    assert content_tokens("Bob喜欢fishing和hiking") == ["bob", "喜", "欢", "fishing", "和", "hiking"]
    assert content_tokens("¡¿—!") == []


def test_sequence_ratio_is_on_joined_token_strings() -> None:
    # "Aa, BB!" and "aa bb" both normalise to "aa bb": ratio 1.0
    assert sequence_ratio(content_tokens("Aa, BB!"), content_tokens("aa bb")) == 1.0
    # d vs e: M = 5 characters of 8 + 5 -> 10/13 (a token-level ratio would be 2·2/(3+2) = 0.8)
    assert sequence_ratio(["aa", "bb", "cc"], ["aa", "cc"]) == pytest.approx(10 / 13)


def test_soft_match_values() -> None:
    assert soft_match("aa bb cc dd ee", "aa bb cc dd") == pytest.approx(0.6 * 8 / 9 + 0.4 * 22 / 25)
    assert soft_match("aa bb cc", "aa cc") == pytest.approx(0.48 + 0.4 * 10 / 13)
    assert soft_match("", "aa") == 0.0
    assert soft_match("!!!", "???") == 0.0  # no tokens on either side -> no match


def test_identical_memories_score_one() -> None:
    state = [
        rec("Alice", "Alice moved to Lyon"),
        rec("Bob", "Bob thinks Alice is reliable", source="Bob", layer=PROFILE),
        rec("GROUP", "The group picked the easy trail", source="Dad", layer="group_insight"),
    ]
    score = speaker_levenshtein(state, list(reversed(state)))
    assert score.phi == pytest.approx(1.0)
    assert score.per_owner == {"Alice": pytest.approx(1.0), "Bob": pytest.approx(1.0), "GROUP": pytest.approx(1.0)}
    reward = memory_reward(state, state)
    assert reward.r_mem == pytest.approx(1.0)  # no edges on either side: R_chain = 1
    assert json.loads(json.dumps(reward.to_dict()))["phi_sl"] == pytest.approx(1.0)


def test_wrong_source_is_gated_to_zero() -> None:
    reference = [rec("Alice", "aa bb", source="Alice")]
    predicted = [rec("Alice", "aa bb", source="Bob")]  # same words, wrong speaker
    assert gated_match(predicted[0], reference[0]) == 0.0
    # F_Alice = 0 -> Φ = 0.8·0 + 0.2·0 = 0
    assert speaker_levenshtein(predicted, reference).phi == 0.0


def test_wrong_layer_is_gated_to_zero() -> None:
    assert gated_match(rec("Alice", "aa bb", layer=PROFILE), rec("Alice", "aa bb")) == 0.0


def test_below_threshold_is_gated_to_zero() -> None:
    # κ̄(d, c) = 0.0615 < 0.50
    assert gated_match(rec("A", "aa bb cc"), rec("A", "dd ee")) == 0.0
    # above the threshold κ = κ̄
    assert gated_match(rec("A", "aa bb cc"), rec("A", "aa cc")) == pytest.approx(0.787692, abs=1e-6)


def test_owner_buckets_cannot_cancel() -> None:
    reference = [rec("Alice", "aa bb", source="Alice"), rec("Bob", "cc dd", source="Alice")]
    # Bob's record filed under Alice (same source, layer, content): it must not count.
    predicted = [rec("Alice", "aa bb", source="Alice"), rec("Alice", "cc dd", source="Alice")]
    score = speaker_levenshtein(predicted, reference)
    # F_Alice = 2·1/(2 + 1) = 2/3 (one exact match, one over-written record)
    # F_Bob = 0 (nothing predicted) -> macro 1/3, worst 0 -> Φ = 0.8/3 = 0.266667
    assert score.per_owner["Alice"] == pytest.approx(2 / 3)
    assert score.per_owner["Bob"] == 0.0
    assert score.phi == pytest.approx(0.8 / 3)


def test_hungarian_finds_the_one_to_one_optimum_greedy_misses() -> None:
    # κ matrix (rows predicted a, d; columns reference b, c):
    #   a: κ(a,b) = 0.885333, κ(a,c) = 0.553383
    #   d: κ(d,b) = 0.851128, κ(d,c) = 0 (gated)
    # Greedy takes the largest, a-b, then d-c = 0: Σ = 0.885333 -> F = 2·0.885333/4 = 0.442667.
    # Optimum a-c + d-b: Σ = 368/665 + 566/665 = 934/665 -> F = 2·(934/665)/4 = 934/1330 = 0.702256.
    predicted = [rec("A", "aa bb cc dd ee"), rec("A", "aa bb cc")]
    reference = [rec("A", "aa bb cc dd"), rec("A", "dd ee")]
    assert owner_f1(predicted, reference) == pytest.approx(934 / 1330)
    assert speaker_levenshtein(predicted, reference).phi == pytest.approx(934 / 1330)


def test_one_prediction_cannot_match_two_references() -> None:
    # one predicted "aa bb" against two identical reference records: Σκ = 1 -> F = 2/(1 + 2)
    assert owner_f1([rec("A", "aa bb")], [rec("A", "aa bb"), rec("A", "aa bb")]) == pytest.approx(2 / 3)


def test_worst_owner_term() -> None:
    reference = [rec("Alice", "aa bb"), rec("Bob", "cc dd"), rec("Bob", "ee ff")]
    predicted = [rec("Alice", "aa bb"), rec("Bob", "cc dd")]
    score = speaker_levenshtein(predicted, reference)
    # F_Alice = 1; F_Bob = 2·1/(1 + 2) = 2/3 (omission)
    # Φ = 0.8·(1 + 2/3)/2 + 0.2·(2/3) = 2/3 + 2/15 = 0.8
    assert score.macro == pytest.approx(5 / 6)
    assert score.worst == pytest.approx(2 / 3)
    assert score.phi == pytest.approx(0.8)


def test_missing_group_owner_pulls_phi_down_through_the_worst_term() -> None:
    group_record = rec("GROUP", "ee ff", source="Alice", layer="group_insight")
    reference = [rec("Alice", "aa bb"), rec("Bob", "cc dd"), group_record]
    predicted = [rec("Alice", "aa bb"), rec("Bob", "cc dd")]
    # F = (1, 1, 0): Φ = 0.8·2/3 + 0.2·0 = 0.533333
    assert speaker_levenshtein(predicted, reference).phi == pytest.approx(0.8 * 2 / 3)


def test_empty_states() -> None:
    assert speaker_levenshtein([], []).phi == 1.0
    assert speaker_levenshtein([], [rec("A", "aa")]).phi == 0.0
    assert speaker_levenshtein([rec("A", "aa")], []).phi == 0.0


def test_records_may_be_mappings() -> None:
    as_dict = {"owner": "A", "source": "A", "layer": CORE, "content": "aa bb"}
    assert speaker_levenshtein([as_dict], [rec("A", "aa bb")]).phi == pytest.approx(1.0)


def test_chain_score() -> None:
    reference = [ChainEdge(owner="Alice", layer=CORE, old="aa bb", new="aa cc")]
    predicted = [
        # old identical (κ̄ = 1), new "aa bb cc" vs "aa cc" (κ̄ = 0.787692):
        # κ_chain = 0.5·1 + 0.5·0.787692 = 0.893846
        ChainEdge(owner="Alice", layer=CORE, old="aa bb", new="aa bb cc"),
        # same contents on another layer: gated to 0, but still counts as a predicted edge
        ChainEdge(owner="Alice", layer=PROFILE, old="aa bb", new="aa cc"),
    ]
    kappa = 0.5 + 0.5 * (0.48 + 0.4 * 10 / 13)
    # R_chain = 2·0.893846/(2 + 1) = 0.595897
    assert chain_score(predicted, reference) == pytest.approx(2 * kappa / 3)
    assert chain_score(predicted[:1], reference) == pytest.approx(kappa)
    assert chain_score([], []) == 1.0
    assert chain_score(predicted, []) == 0.0
    # new "zz" shares no character with "aa cc" (κ̄ = 0): κ_chain = 0.5·1 + 0.5·0 = 0.5,
    # exactly the threshold, so the edge still matches and R_chain = 2·0.5/(1 + 1) = 0.5
    half = [ChainEdge(owner="Alice", layer=CORE, old="aa bb", new="zz")]
    assert chain_score(half, reference) == pytest.approx(0.5)


def test_memory_reward_combines_state_and_chain() -> None:
    state = [rec("Alice", "aa bb"), rec("Bob", "cc dd"), rec("Bob", "ee ff")]
    predicted_state = [rec("Alice", "aa bb"), rec("Bob", "cc dd")]  # Φ = 0.8 (worst-owner test)
    reference_edges = [ChainEdge(owner="Alice", layer=CORE, old="aa bb", new="aa cc")]
    predicted_edges = [ChainEdge(owner="Alice", layer=CORE, old="aa bb", new="aa bb cc")]
    reward = memory_reward(predicted_state, state, predicted_edges, reference_edges)
    kappa = 0.5 + 0.5 * (0.48 + 0.4 * 10 / 13)  # 0.893846, one edge each side -> R_chain = κ
    assert reward.phi_sl == pytest.approx(0.8)
    assert reward.r_chain == pytest.approx(kappa)
    # R_mem = 0.8·0.8 + 0.2·0.893846 = 0.818769
    assert reward.r_mem == pytest.approx(0.8 * 0.8 + 0.2 * kappa)
