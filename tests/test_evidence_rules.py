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
from graphmem import memory
from graphmem.config import Settings
from graphmem.query import ask
from tests.test_query_fixtures import TS, build_family

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

    now = ask(store, embedder, group_id, q, tense="head")
    assert "r-trail" in now.record_ids and {"m07", "m08"} <= set(now.message_ids)  # the record is found

    lib = ask(store, embedder, group_id, q, tense="head", as_of=as_of).model_dump(mode="json")
    via_cli = cli_json("ask", q, "--group", group_id, "--tense", "head", "--as-of", as_of)
    r = client.post(f"/groups/{group_id}/ask", json={"question": q, "tense": "head", "as_of": as_of})
    assert r.status_code == 200, r.text
    for result in (lib, via_cli, r.json()):
        assert "r-trail" in result["record_ids"] and "m07" in result["message_ids"]
        later = [mid for mid, ts in TS.items() if ts > as_of]
        text = json.dumps(result)
        leaked = [mid for mid in later if f'"{mid}"' in text or f"msg {mid}" in text]
        assert leaked == [], leaked  # nothing stamped after the instant, anywhere in the answer
