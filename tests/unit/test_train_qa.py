"""QA pairs of the training networks: loading, validation, the fixed subset, state hashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.core.errors import InvalidInputError
from graphmem.core.config import Settings
from graphmem.train.qa import QA_NOTE_NO_QUESTIONS, fixed_subset, load_questions, state_hash, terminal_qa_from_settings
from graphmem.train.state import MemoryState
from graphmem.train.trajectories import networks, read_steps

NETS = Path(__file__).resolve().parents[2] / "examples" / "train"


def test_shipped_questions_cover_every_network_and_name_its_messages():
    qs = load_questions(NETS / "questions.jsonl")
    nets = networks(read_steps(NETS / "teacher.jsonl"))
    assert sorted(qs) == sorted(nets)
    for gid, items in qs.items():
        assert 1 <= len(items) <= 4
        ids = {m.id for s in nets[gid] for m in s.messages}
        assert all(q.evidence and set(q.evidence) <= ids for q in items), gid
    assert {q.category for q in qs["r1-launch"]} == {"update"}
    assert {"group-decision", "dissent"} <= {q.category for q in qs["r1-dinner"]}
    assert "source-owner" in {q.category for q in qs["r1-claims"]}


@pytest.mark.parametrize(("line", "record", "field"), [
    ({"group": "g", "id": "q1", "question": "Who?", "answer": "  "}, "line 2", "answer"),
    ({"group": "g", "id": "q1", "question": "Who?"}, "line 2", "answer"),
    ({"group": "g", "id": "q1", "question": "Who?", "answer": "Ann", "gold": "x"}, "line 2", "gold"),
    ({"group": "g", "id": "q1", "question": "Who?", "answer": "Ann", "evidence": "m1"}, "line 2", "evidence"),
    ({"group": "g", "id": "q0", "question": "Again?", "answer": "Bo"}, "line 2", "id"),
])
def test_bad_lines_name_the_record_and_the_field(tmp_path, line, record, field):
    path = tmp_path / "q.jsonl"
    first = {"group": "g", "id": "q0", "question": "What?", "answer": "That"}
    path.write_text(json.dumps(first) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InvalidInputError) as err:
        load_questions(path)
    assert err.value.record == record and err.value.field == field and str(path) in str(err.value)


def test_malformed_json_and_missing_file(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"group": "g", "id": "q1"\n')
    with pytest.raises(InvalidInputError, match="line 1.*malformed JSON"):
        load_questions(path)
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_questions(tmp_path / "missing.jsonl")


def test_fixed_subset_is_sorted_and_evenly_spaced(tmp_path):
    path = tmp_path / "q.jsonl"
    rows = [{"group": "g", "id": f"q{i}", "question": f"Q{i}?", "answer": "a"} for i in (5, 1, 3, 0, 2, 4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    qs = load_questions(path)["g"]
    assert [q.id for q in qs] == ["q0", "q1", "q2", "q3", "q4", "q5"]
    assert [q.id for q in fixed_subset(qs)] == ["q0", "q1", "q3", "q4"]  # positions 6·i//4
    assert [q.id for q in fixed_subset(qs[:3])] == ["q0", "q1", "q2"]


def test_state_hash_follows_the_records():
    launch = networks(read_steps(NETS / "teacher.jsonl"))["r1-launch"]
    a = MemoryState("x", launch[0].make_roster())
    b = MemoryState("y", launch[0].make_roster())  # another group id: same state
    for s in launch:
        a.apply(s.segment(), s.actions)
        b.apply(s.segment(), s.actions)
    assert state_hash(list(a.records.values())) == state_hash(list(b.records.values()))
    assert state_hash(list(a.records.values())) != state_hash(a.heads())  # superseded versions count
    assert state_hash([]) == state_hash([])


def test_without_questions_the_gain_is_skipped_with_a_note():
    assert terminal_qa_from_settings(None, None, None, Settings(_env_file=None)) == (None, QA_NOTE_NO_QUESTIONS)
