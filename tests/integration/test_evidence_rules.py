"""Evidence a model can use (issue 10 items 11-13): labels that tell people apart, evidence within
a size budget, and as-of answers with nothing later than their instant — through the library,
the command line (a real ``graphmem`` process) and the HTTP API, against the real Neo4j."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.derived import memory
from graphmem.core.config import Settings
from graphmem.query import ask
from tests.test_query_fixtures import TS, build_family
from tests.factories import runtime_of

pytestmark = pytest.mark.neo4j

GRAPHMEM = str(Path(sys.executable).parent / "graphmem")


def cli_json(*args: str) -> dict:
    env = {**os.environ, "COLUMNS": "1000"}
    res = subprocess.run([GRAPHMEM, *args, "--json"], capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.fixture
def client(store, schema):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


# ----------------------------------------------------------------------------- as-of


def test_as_of_answer_holds_nothing_after_the_instant(store, embedder, group_id, client):
    """A record dated by its source's own latest message (Dad, m07) may also rest on a later
    message of someone else (Cara, m08): as of a time between them, the record is in view but
    m08 must appear nowhere — not in excerpts, rows, FROM ids nor ``message_ids``."""
    build_family(store, embedder, group_id, derived=False)
    vec = embedder.encode(["The group decided to take the easy lake trail"])[0].tolist()
    rec = memory.NewRecord(
        id="r-trail", layer="group_interaction", utype="decision",
        content="The group decided to take the easy lake trail", owner=memory.GROUP, source="Dad",
        ts=TS["m07"], from_ids=["m07", "m08"], embedding=vec,
    )
    memory.write_segment(store, group_id, memory.SegmentMarker(id="seg-0001", index=1, message_ids=["m07", "m08"]), [rec])
    q, as_of = "Which trail did the group decide on?", "2026-03-18T18:01:30"

    now = ask(runtime_of(store, embedder), group_id, q, tense="head")
    assert "r-trail" in now.record_ids and {"m07", "m08"} <= set(now.message_ids)  # the record is found

    lib = ask(runtime_of(store, embedder), group_id, q, tense="head", as_of=as_of).model_dump(mode="json")
    via_cli = cli_json("ask", q, "--group", group_id, "--tense", "head", "--as-of", as_of)
    r = client.post(f"/groups/{group_id}/ask", json={"question": q, "tense": "head", "as_of": as_of})
    assert r.status_code == 200, r.text
    for result in (lib, via_cli, r.json()):
        assert "r-trail" in result["record_ids"] and "m07" in result["message_ids"]
        later = [mid for mid, ts in TS.items() if ts > as_of]
        text = json.dumps(result)
        leaked = [mid for mid in later if f'"{mid}"' in text or f"msg {mid}" in text]
        assert leaked == [], leaked  # nothing stamped after the instant, anywhere in the answer


# ----------------------------------------------------------------------------- labels

TWO_ALEXES = [
    {"id": "a1", "speaker": "Alex", "speaker_id": "u_alex_r", "text": "I will repaint the boat blue this weekend."},
    {"id": "a2", "speaker": "Alex", "speaker_id": "u_alex_k", "text": "I think the boat should stay white."},
    {"id": "a3", "speaker": "Sam", "speaker_id": "u_sam", "text": "Whatever colour, the boat needs paint."},
]


def _labelled_group(store, embedder, gid: str) -> None:
    from graphmem.verbatim.ingest import ingest_conversations
    from tests.factories import conversation

    ingest_conversations(store, [conversation(gid, TWO_ALEXES)], embedder)
    specs = [("r-red", "u_alex_r", "Alex wants to repaint the boat blue", ["a1"]),
             ("r-kay", "u_alex_k", "Alex wants the boat to stay white", ["a2"])]
    vecs = embedder.encode([c for _, _, c, _ in specs])
    records = [memory.NewRecord(id=rid, layer="per_speaker_core", utype="stance", content=c, owner=o, source=o,
                                ts="2026-01-01T10:00:00", from_ids=f, embedding=vecs[i].tolist())
               for i, (rid, o, c, f) in enumerate(specs)]
    memory.write_segment(store, gid, memory.SegmentMarker(id="seg-0001", index=1, message_ids=["a1", "a2", "a3"]), records)


def _check_labels(result: dict) -> None:
    ev = result["evidence"]
    excerpts, slice_ = ev.split("[MEMORY SLICE]")
    # every line naming an Alex says which one; Sam's name is not shared and stays bare
    assert "(Alex (u_alex_r) @" in excerpts and "(Alex (u_alex_k) @" in excerpts
    assert "(Alex @" not in excerpts and "(Sam @" in excerpts
    assert "\nAlex (u_alex_r)\n" in slice_ and "\nAlex (u_alex_k)\n" in slice_
    assert "\nAlex\n" not in slice_


def test_shared_display_names_are_told_apart_library_cli_api(store, embedder, group_id, client):
    _labelled_group(store, embedder, group_id)
    q = "What do the two people called Alex want for the boat, and what does Sam think?"
    lib = ask(runtime_of(store, embedder, settings=Settings(_env_file=None, s1_ask_enabled=False)), group_id, q, tense="head")
    assert {r.id for r in lib.rows} >= {"u_alex_r", "u_alex_k"}, [r.id for r in lib.rows]
    _check_labels(lib.model_dump(mode="json"))
    _check_labels(cli_json("ask", q, "--group", group_id, "--tense", "head"))
    r = client.post(f"/groups/{group_id}/ask", json={"question": q, "tense": "head"})
    assert r.status_code == 200, r.text
    _check_labels(r.json())



def test_a_lookalike_keyed_by_its_name_is_marked_in_the_evidence(store, embedder, group_id, client):
    """A person with no speaker id is keyed by the name as written, so its id equals its name:
    the evidence then showed the name bare even when it shares a display form with another
    member ("Dad\u200b" next to Dad, both by name as a WhatsApp export keys them), and the
    answer model read "Dad" for both, while the roster marks them apart."""
    from graphmem.verbatim.ingest import ingest_conversations
    from tests.factories import conversation

    rows = [{"id": "d1", "speaker": "Dad", "text": "We take the lake trail, settled."},
            {"id": "d2", "speaker": "Dad\u200b", "text": "Change of plan: the ridge trail, final decision on the trail."},
            {"id": "a1", "speaker": "Ana", "text": "Which trail then?"}]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    q = "Which trail did Dad decide?"

    def check(result: dict) -> None:
        lines = {ln.split(", msg ")[1].split(")")[0]: ln for ln in result["evidence"].splitlines() if ", msg " in ln}
        assert "(Dad\u200b (Dad\\u200b) @" in lines["d2"], lines  # the lookalike carries its id, visible
        assert "(Dad (Dad) @" in lines["d1"], lines
        assert "(Ana @" in lines["a1"], lines  # a name nobody shares stays bare

    check(ask(runtime_of(store, embedder, settings=Settings(_env_file=None, s1_ask_enabled=False)), group_id, q,
              tense="head").model_dump(mode="json"))
    r = client.post(f"/groups/{group_id}/ask", json={"question": q, "tense": "head"})
    assert r.status_code == 200, r.text
    check(r.json())


# ----------------------------------------------------------------------------- size

FILLER = "The weather was fine and we talked about many unrelated things on that long afternoon. "
SECRET = "The harbour gate code is 4471, keep it to yourself."


def _long_group(store, embedder, gid: str) -> str:
    """A 58 KB message with one passage that answers the question, among short ones."""
    from graphmem.verbatim.ingest import ingest_conversations
    from tests.factories import conversation

    long_text = FILLER * 340 + SECRET + " " + FILLER * 340
    assert len(long_text.encode()) > 58_000
    rows = [
        {"id": "s1", "speaker": "Ana", "text": "Who knows how to get into the harbour?"},
        {"id": "big", "speaker": "Bo", "text": long_text},
        {"id": "s3", "speaker": "Cy", "text": "Thanks Bo, very thorough as always."},
    ]
    ingest_conversations(store, [conversation(gid, rows)], embedder)
    return long_text


def _check_size(result: dict, budget: int) -> None:
    from graphmem.llm import estimate_tokens

    ev = result["evidence"]
    assert estimate_tokens(ev) <= budget
    assert ev.count("4471") == 1  # the matching passage, once (not excerpt + raw fallback)
    assert ev.count("msg big)") + ev.count("msg big,") <= 1 and "characters clipped ...]" in ev
    assert "clipped around the matching passage (msg big)" in result["note"]


def test_long_message_is_clipped_once_within_the_budget_library_cli_api(store, embedder, group_id, client, monkeypatch):
    _long_group(store, embedder, group_id)
    q = "What is the harbour gate code Bo gave?"
    s = Settings(_env_file=None, s1_ask_enabled=False)
    lib = ask(runtime_of(store, embedder, settings=s), group_id, q)
    assert "big" in lib.message_ids
    _check_size(lib.model_dump(mode="json"), s.evidence_max_tokens)
    assert len(lib.evidence) < 6000  # was 117k characters: the message twice, whole

    # a tight budget: everything still fits by clipping harder, or the cut is named
    tight = ask(runtime_of(store, embedder, settings=Settings(_env_file=None, s1_ask_enabled=False,
                                                              evidence_max_tokens=250)), group_id, q)
    assert len(tight.evidence) <= 1000 and "4471" in tight.evidence
    tiny = ask(runtime_of(store, embedder, settings=Settings(_env_file=None, s1_ask_enabled=False,
                                                             evidence_max_tokens=80)), group_id, q)
    assert len(tiny.evidence) <= 320 and "[CUT] To fit the evidence budget, left out:" in tiny.evidence
    assert "evidence cut to fit 80 tokens" in tiny.note

    monkeypatch.setenv("GRAPHMEM_S1_ASK_ENABLED", "false")
    _check_size(cli_json("ask", q, "--group", group_id), s.evidence_max_tokens)
    monkeypatch.setenv("GRAPHMEM_EVIDENCE_MAX_TOKENS", "80")
    small = cli_json("ask", q, "--group", group_id)
    assert "evidence cut to fit 80 tokens" in small["note"] and len(small["evidence"]) <= 320
    r = client.post(f"/groups/{group_id}/ask", json={"question": q, "ask": False})
    assert r.status_code == 200, r.text
    _check_size(r.json(), s.evidence_max_tokens)
