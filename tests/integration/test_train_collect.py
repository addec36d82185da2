"""``train collect``: teacher trajectories recorded from a real derive run (Neo4j), and the
in-memory Writer state (used by GRPO rollouts) rebuilding exactly the same Writer inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.derived import memory
from graphmem.core.errors import InvalidInputError
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.train.rewards import state_agreement
from graphmem.train.state import MemoryState
from graphmem.train.trajectories import collect_group, networks, prompt_version, read_steps, write_steps
from graphmem.derived.writer import ReplayWriter
from loaders import load_conversations

pytestmark = pytest.mark.neo4j
NETS = Path(__file__).resolve().parents[2] / "examples" / "train"


def _collect(store, embedder, group_id, name, tmp_path):
    lines = [line for line in (NETS / "networks.jsonl").read_text().splitlines() if json.loads(line)["group"] == name]
    chat = tmp_path / f"{name}.jsonl"
    chat.write_text("\n".join(lines) + "\n")
    ingest_conversations(store, load_conversations(chat, "jsonl", group=group_id), embedder)
    return collect_group(store, group_id, model=ReplayWriter(NETS / "actions" / f"{name}.jsonl"), embedder=embedder)


def test_collect_records_derive_inputs_and_states(store, embedder, group_id, tmp_path):
    steps = _collect(store, embedder, group_id, "r1-launch", tmp_path)
    assert [s.position for s in steps] == [0, 1, 2] and [s.index for s in steps] == [1, 2, 3]
    assert {s.prompt_version for s in steps} == {prompt_version()}
    first, second, third = steps
    assert first.pre_state == [] and "(empty - nothing recorded yet)" in first.prompt[1]["content"]
    # the pre-state shown at position 1 is the post-state of position 0, as stored by derive
    assert [r.id for r in second.pre_state] == [r.id for r in first.post_state] == ["e1.1", "e1.2", "e1.3", "e1.4"]
    assert "e1.2 [per_speaker_core|Raj(by Raj)@2026-04-01] Raj's payments module is 40% done" in second.prompt[1]["content"]
    # UPDATE-heavy: 4 + 3 updates after the first session; every state is a chain edge
    assert [len(s.chain) for s in steps] == [0, 4, 7]
    assert third.chain[-1]["new"] == "Lena finished the checkout styling"
    assert json.loads(first.completion)["actions"][0]["owner"] == "GROUP"
    assert second.report["accepted"] == 4 and second.report["rejected"] == 0
    # the store holds what the last post-state says
    assert {r.id for r in memory.current_heads(store, group_id)} == {r.id for r in third.post_state}

    # the in-memory state replays the teacher to the very same prompts and states
    state = MemoryState(group_id, first.make_roster())
    for step in steps:
        out = state.apply(step.segment(), step.actions)
        assert out.prompt == step.prompt
        assert state_agreement(state.heads(), step.post_state).phi == 1.0
        assert [r.id for r in state.heads()] == [r.id for r in step.post_state]
    key = lambda e: tuple(e.values())  # noqa: E731 - edge order is immaterial to R_chain
    assert sorted(state.edges, key=key) == sorted(third.chain, key=key)

    path = tmp_path / "t.jsonl"
    write_steps(path, steps)
    back = read_steps(path)
    assert back == steps and list(networks(back)) == [group_id]
    # another Writer contract is refused, naming the line and field
    line = json.loads(path.read_text().splitlines()[1])
    line["prompt_version"] = "0" * 16
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(InvalidInputError, match=r"line 1.*prompt_version"):
        read_steps(path)
    assert read_steps(path, any_version=True)[0].position == 1


def test_collect_noop_network(store, embedder, group_id, tmp_path):
    steps = _collect(store, embedder, group_id, "r1-hello", tmp_path)
    assert len(steps) == 2 and all(s.post_state == [] for s in steps)
    assert all(s.report["noops"] == 1 and s.actions == [{"action": "NOOP"}] for s in steps)


def test_cli_collect_from_a_teacher_endpoint(store, embedder, group_id, tmp_path, scripted_llm, monkeypatch):
    """`graphmem train collect` with a teacher Writer endpoint (the scripted OpenAI-compatible
    server): each segment's recorded prompt is exactly what the endpoint received."""
    from typer.testing import CliRunner

    from graphmem.cli import app
    from graphmem.core.config import get_settings
    from tests.scripted_llm import Reply, ScriptedLLM

    lines = [line for line in (NETS / "networks.jsonl").read_text().splitlines()
             if json.loads(line)["group"] == "r1-dinner"]
    chat = tmp_path / "dinner.jsonl"
    chat.write_text("\n".join(lines) + "\n")
    ingest_conversations(store, load_conversations(chat, "jsonl", group=group_id), embedder)
    teacher = [json.loads(line)["actions"] for line in (NETS / "actions" / "r1-dinner.jsonl").read_text().splitlines()]
    for session, actions in zip(("s1", "s2"), teacher):
        scripted_llm.route(ScriptedLLM.any_message_contains(f"SESSION: {session}\n"), Reply.json({"actions": actions}))
    for key, value in scripted_llm.settings_env("GRAPHMEM_WRITER").items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    try:
        out = tmp_path / "teacher.jsonl"
        result = CliRunner().invoke(app, ["train", "collect", "-g", group_id, "--out", str(out), "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.stdout)
        assert summary["groups"][0]["steps"] == 2 and summary["groups"][0]["actions"] == 5
    finally:
        get_settings.cache_clear()
    steps = read_steps(out)
    sent = [r.messages for r in scripted_llm.requests if r.path.endswith("/chat/completions")]
    assert [s.prompt for s in steps] == [[{"role": m["role"], "content": m["content"]} for m in msgs] for msgs in sent]
    assert [s.actions for s in steps] == teacher and steps[0].teacher == scripted_llm.model
    decision = [r for r in steps[0].post_state if r.layer == "group_interaction"]
    assert [(r.owner, r.source, r.utype) for r in decision] == [("GROUP", "sam", "decision")]
