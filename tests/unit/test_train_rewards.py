"""Writer-R1 rewards (SpeakerMem-R1 eq. 7-9, 13-27) against hand-computed values.

Hand arithmetic for the two contents used in the agreement tests (from
tests/test_speaker_levenshtein.py): a = "aa bb cc dd ee", b = "aa bb cc dd":
b is a prefix of a, matched characters M = 11, S_seq = 22/25; token sets 5 vs 4 sharing 4,
F_tok = 8/9; κ̄(a, b) = 0.6·8/9 + 0.4·22/25 = 0.885333.
"""

from __future__ import annotations

import numpy as np
import pytest

from graphmem.derived.memory import DerivedRecord
from graphmem.train.rewards import (
    action_key,
    chain_agreement,
    group_advantages,
    kl_estimate,
    memory_agreement,
    novel_flags,
    position_return,
    qa_gain,
    qa_score,
    state_agreement,
    structural_penalty,
    validity_reward,
)
from graphmem.derived.writer import Roster, validate_actions

KAPPA_AB = 0.6 * 8 / 9 + 0.4 * 22 / 25
ROSTER = Roster([{"id": "mom", "name": "Mom"}, {"id": "ben", "name": "Ben"}])
HEAD = DerivedRecord(id="e1.1", group_id="g", layer="per_speaker_core", utype="fact",
                     content="Mom's knee hurts", ts="2026-03-05T18:02:00", owner="mom",
                     owner_kind="person", source="mom", source_kind="person")


def add(owner: str, content: str, *, source: str | None = None, layer: str = "per_speaker_core") -> dict:
    return {"action": "ADD", "owner": owner, "source": source or owner, "layer": layer, "utype": "fact",
            "content": content}


def score(actions, *, max_actions: int = 8, finish_reason: str | None = None):
    """(R_valid parts, P) of an answer, with the rejections from the real validator."""
    _acc, report = validate_actions(actions, roster=ROSTER, heads=[HEAD], max_actions=max_actions)
    reasons = [o.reason for o in report.outcomes if o.status == "rejected"]
    return (validity_reward(actions, reasons, heads=[HEAD], roster=ROSTER),
            structural_penalty(actions, reasons, max_actions=max_actions, finish_reason=finish_reason))


def test_validity_parts_and_weights_eq19():
    actions = [
        add("Ben", "Ben likes the ridge"),
        add("Zed", "Zed is new"),  # unknown_owner: schema-invalid
        {"action": "UPDATE", "entry_id": "e1.1", "content": "Mom's knee is better"},
        add("ben", "ben likes the ridge!"),  # same key as #0 (roster-resolved, normalised)
    ]
    v, p = score(actions)
    # n = 4; schema-valid 3/4; distinct keys 3/4; last action repeats #0 -> not novel -> stop 0
    assert (v.json, v.schema, v.dup, v.stop) == (1.0, 0.75, 0.75, 0.0)
    assert v.value == pytest.approx(0.25 + 0.35 * 0.75 + 0.25 * 0.75)  # 0.70
    assert novel_flags(actions, heads=[HEAD], roster=ROSTER) == [False, True, True, False]
    assert p.invalid_actions and not p.too_many_actions and p.value == pytest.approx(-0.15)
    # over the budget (eq. 20) and cut at the length limit: -0.15 - 0.10 - 0.10
    _v, p2 = score(actions, max_actions=3, finish_reason="length")
    assert (p2.too_many_actions, p2.hit_length) == (True, True)
    assert p2.value == pytest.approx(-0.35)


def test_validity_noop_update_and_invalid_json():
    assert score([{"action": "NOOP"}])[0].value == pytest.approx(1.0)
    v, p = score([{"action": "NOOP"}, {"action": "NOOP"}])  # second NOOP: duplicate, neither novel
    assert (v.schema, v.dup, v.stop) == (1.0, 0.5, 0.0) and v.value == pytest.approx(0.725)
    assert p.value == pytest.approx(-0.15)
    # an UPDATE that repeats the head's content is valid schema but not novel
    v, _ = score([{"action": "UPDATE", "entry_id": "e1.1", "content": "mom's KNEE hurts."}])
    assert (v.schema, v.dup, v.stop) == (1.0, 1.0, 0.0) and v.value == pytest.approx(0.85)
    # an UPDATE of no current head and no ADD coordinates: schema-invalid
    v, _ = score([{"action": "UPDATE", "entry_id": "e9.9", "content": "x y"}])
    assert (v.schema, v.stop) == (0.0, 0.0) and v.value == pytest.approx(0.5)
    # an ADD already in the pre-state is not novel
    v, _ = score([add("Mom", "mom's knee hurts")])
    assert v.stop == 0.0
    # no usable JSON: every part zero, P = -0.25; an empty list: every part zero, no penalty
    v = validity_reward(None, [], heads=[HEAD])
    p = structural_penalty(None, [], max_actions=8)
    assert v.value == 0.0 and p.invalid_json and p.value == pytest.approx(-0.25)
    assert validity_reward([], [], heads=[HEAD]).value == 0.0


def test_action_keys():
    assert action_key({"action": "noop"}) == ("NOOP",)
    assert action_key(add("Mom", "Knee, hurts!"), ROSTER) == ("ADD", "mom", "mom", "per_speaker_core", "knee hurts")
    assert action_key({"action": "UPDATE", "entry_id": " e1.1 ", "content": "A  B"}) == ("UPDATE", "e1.1", "a b")
    assert action_key("x")[0] == "?"


def test_state_and_chain_agreement_eq7_16_17_18():
    pred = [{"owner": "mom", "source": "mom", "layer": "per_speaker_core", "content": "aa bb cc dd ee"}]
    ref = [{"owner": "mom", "source": "mom", "layer": "per_speaker_core", "content": "aa bb cc dd"},
           {"owner": "ben", "source": "ben", "layer": "per_speaker_core", "content": "dd ee"}]
    s = state_agreement(pred, ref)
    # F_mom = 2κ̄/2 = κ̄; F_ben = 0 (omitted); Φ = 0.8·(κ̄/2) + 0.2·0
    assert s.per_owner == pytest.approx({"ben": 0.0, "mom": KAPPA_AB})
    assert s.phi == pytest.approx(0.8 * KAPPA_AB / 2)
    # the same content under the wrong source earns nothing (coordinate gate, eq. 14)
    wrong = [{**pred[0], "source": "ben"}]
    assert state_agreement(wrong, ref).phi == 0.0
    # chain: κ_chain = 0.5·κ̄(a, b) + 0.5·κ̄(b, b) = 0.5·0.885333 + 0.5
    e_pred = [{"owner": "mom", "layer": "per_speaker_core", "old": "aa bb cc dd ee", "new": "aa bb cc dd"}]
    e_ref = [{"owner": "mom", "layer": "per_speaker_core", "old": "aa bb cc dd", "new": "aa bb cc dd"}]
    assert chain_agreement(e_pred, e_ref) == pytest.approx(0.5 * KAPPA_AB + 0.5)
    assert chain_agreement([], []) == 1.0 and chain_agreement(e_pred, []) == 0.0
    r_mem, phi, chain = memory_agreement(pred, ref, e_pred, e_ref)
    assert r_mem == pytest.approx(0.8 * (0.8 * KAPPA_AB / 2) + 0.2 * (0.5 * KAPPA_AB + 0.5))
    # DerivedRecord states are accepted as they come from the store
    assert state_agreement([HEAD], [HEAD]).phi == 1.0


def test_qa_gain_eq8_22():
    assert qa_score([True, False, True, True]) == 0.75
    assert qa_gain([1, 1, 0, 1], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert qa_gain([0, 0], [1, 1]) == -1.0
    with pytest.raises(ValueError, match="same questions"):
        qa_gain([1], [1, 0])
    with pytest.raises(ValueError):
        qa_score([])


def test_position_return_eq9():
    # 0.20·0.7 + 0.45·0.5 - 0.15 + 0.35·0.95^(3-1-0)·0.5
    r = position_return(r_valid=0.7, r_mem=0.5, penalty=-0.15, r_qa=0.5, t=0, n_positions=3)
    assert r == pytest.approx(0.14 + 0.225 - 0.15 + 0.35 * 0.9025 * 0.5)
    last = position_return(r_valid=0.7, r_mem=0.5, penalty=-0.15, r_qa=0.5, t=2, n_positions=3)
    assert last == pytest.approx(0.215 + 0.175)
    # no answerer/judge configured: the QA term is left out
    assert position_return(r_valid=1, r_mem=1, penalty=0, r_qa=None, t=0, n_positions=1) == pytest.approx(0.65)
    with pytest.raises(ValueError):
        position_return(r_valid=1, r_mem=1, penalty=0, r_qa=None, t=3, n_positions=3)


def test_group_advantages_eq23_24():
    r = np.array([[1.0, 0.50, 0.2], [0.0, 0.50, 0.4], [1.0, 0.50, np.nan], [0.0, 0.51, 0.6]])
    adv = group_advantages(r)
    # t=0: μ 0.5, σ 0.5 (population) -> ±1
    assert adv[:, 0].tolist() == [1.0, -1.0, 1.0, -1.0]
    # t=1: σ = sqrt(((3·0.0025²) + 0.0075²)/4) = 0.00433 < 0.02 -> no update
    assert adv[:, 1].tolist() == [0.0, 0.0, 0.0, 0.0]
    # t=2: trajectory 2 lacks the position; over the three present μ 0.4, σ sqrt(0.08/3)
    sigma = np.sqrt(0.08 / 3)
    assert adv[:, 2] == pytest.approx([-0.2 / sigma, 0.0, 0.0, 0.2 / sigma])
    # clip at ±3: G = 17, one return 1 and sixteen 0: μ = 1/17, σ = 4/17 -> (16/17)/(4/17) = 4 -> 3
    col = np.zeros((17, 1))
    col[0, 0] = 1.0
    a = group_advantages(col)
    assert a[0, 0] == 3.0 and a[1, 0] == pytest.approx(-0.25)
    with pytest.raises(ValueError):
        group_advantages([1.0, 2.0])


def test_kl_estimate_eq27():
    d = kl_estimate([np.log(0.5), np.log(0.2)], [np.log(0.25), np.log(0.2)])
    assert d == pytest.approx([np.exp(np.log(2.0)) - np.log(2.0) - 1.0, 0.0])
    assert (kl_estimate([-3.0, 0.0], [-1.0, -2.0]) >= 0).all()
