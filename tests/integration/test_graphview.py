"""The conversation graph, interaction summary and timeline: library (graphmem.views), JSON
routes (``/groups/{id}/graph``, ``/summary``, ``/timeline.png``), the page's static files and
the ``graphmem summary`` command, on the sample chat with its derived memory."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem import views as graphview
from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError
from graphmem.derived import memory
from tests.conftest import delete_group
from tests.test_graphview_fixtures import HEADS, LINES, RECORDS, SUPERSEDED, build_trail, expected_talk

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "api" / "static"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_MAGIC
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


# ------------------------------------------------------------------------------ no database
def test_parse_layers_accepts_codes_labels_and_lists():
    assert graphview.parse_layers(None) is None
    assert graphview.parse_layers(["Core"]) == ["per_speaker_core"]
    assert graphview.parse_layers(["insight,PROFILE", "per_speaker_profile"]) == ["per_speaker_profile", "group_insight"]
    assert graphview.parse_layers(["", " "]) is None
    with pytest.raises(InvalidInputError) as e:
        graphview.parse_layers(["Core", "Gossip"])
    # the rule and the field, never the value (issue 24): it is carried for the command line only
    assert e.value.field == "layer" and "Gossip" not in str(e.value) and e.value.value == "'Gossip'"


def test_render_timeline_png_without_database():
    tl = graphview.Timeline(
        group_id="g", name="Trip 🥾", people=[("a", "Ann"), ("b", "Bob")],
        sessions=[graphview.SessionInfo(id="s1", messages=2, ts_first="2026-01-01T10:00:00", first_position=0, last_position=1),
                  graphview.SessionInfo(id="s2", messages=1, ts_first="2026-01-09T10:00:00", first_position=2, last_position=2)],
        messages=[graphview.TimelineMark(person=p, position=i) for i, p in enumerate("aba")],
        stance_changes=[graphview.TimelineMark(person="b", position=1, record="e2", content="now for it")],
        decisions=[graphview.DecisionEvent(id="d1", layer="group_interaction", label="Interaction", utype="decision",
                                           content="We go on Sunday 🎉", state="head", ts="2026-01-09T10:00:00",
                                           source="a", position=2)],
    )
    png = graphview.render_timeline_png(tl, width_in=8, dpi=50)
    width, height = png_size(png)
    assert 300 <= width <= 450 and 80 <= height <= 300  # 8 in x 50 dpi, trimmed to the drawing


def test_vendored_cytoscape_matches_its_readme_and_licence():
    vendor = STATIC / "vendor"
    readme = (vendor / "README.md").read_text(encoding="utf-8")
    pinned = re.search(r"sha256 of `cytoscape.min.js`: `([0-9a-f]{64})`", readme).group(1)
    assert hashlib.sha256((vendor / "cytoscape.min.js").read_bytes()).hexdigest() == pinned
    version = re.search(r"\| (\d+\.\d+\.\d+) \|", readme).group(1)
    assert f'"{version}"' in (vendor / "cytoscape.min.js").read_text(encoding="utf-8")
    assert "Permission is hereby granted" in (vendor / "cytoscape.LICENSE").read_text(encoding="utf-8")
    page = (STATIC / "view.html").read_text(encoding="utf-8")
    sources = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert sources and not [s for s in sources if "//" in s]  # everything from the API itself
    assert "../../static/graphmem/vendor/cytoscape.min.js" in sources


def test_openapi_documents_the_json_routes_only():
    spec = create_app(Settings(_env_file=None)).openapi()
    paths = spec["paths"]
    assert "/groups/{group_id}/graph" in paths and "/groups/{group_id}/summary" in paths
    assert not [p for p in paths if p.endswith("/view") or p.endswith(".png") or p.startswith("/static")]
    graph_params = {p["name"] for p in paths["/groups/{group_id}/graph"]["get"]["parameters"]}
    assert graph_params == {"group_id", "person", "layer", "session", "from", "to", "mode", "max_nodes", "max_records"}
    for path in ("/groups/{group_id}/graph", "/groups/{group_id}/summary"):
        assert "application/json" in paths[path]["get"]["responses"]["200"]["content"]


# ------------------------------------------------------------------------------ Neo4j
@pytest.fixture(scope="module")
def trail(store, embedder, schema):
    gid = f"test-graph-{uuid.uuid4().hex[:12]}"
    build_trail(store, embedder, gid)
    yield gid
    delete_group(store, gid)


@pytest.fixture(scope="module")
def client(schema):
    with TestClient(create_app(Settings(_env_file=None))) as c:
        yield c


def ids(graph: dict) -> list[str]:
    return sorted(r["id"] for r in graph["records"])


@pytest.mark.neo4j
def test_graph_json_heads_nodes_records_and_talk(client, trail):
    r = client.get(f"/groups/{trail}/graph")
    assert r.status_code == 200, r.text
    g = r.json()
    assert g["group_id"] == trail and g["filters"]["mode"] == "head"
    nodes = {n["id"]: n for n in g["nodes"]}
    assert [n["id"] for n in g["nodes"]] == ["GROUP", "ben", "cara", "dad", "mom"]
    assert nodes["GROUP"]["kind"] == "group" and nodes["GROUP"]["name"] == trail
    assert (nodes["GROUP"]["x"], nodes["GROUP"]["y"]) == (0.0, 0.0)  # the centre
    assert all(math.isclose(math.hypot(n["x"], n["y"]), 1.0, abs_tol=1e-3) for n in g["nodes"][1:])  # the ring
    assert {k: n["messages"] for k, n in nodes.items()} == {"GROUP": 0, "ben": 6, "cara": 4, "dad": 5, "mom": 3}
    assert nodes["GROUP"]["records_owned"] == 2 and nodes["dad"]["records_sourced"] == 2

    assert ids(g) == HEADS and len(HEADS) == 11
    rec = {x["id"]: x for x in g["records"]}
    gossip = rec["e1.5"]
    assert (gossip["source"], gossip["owner"], gossip["source_name"], gossip["owner_name"]) == ("ben", "cara", "Ben", "Cara")
    assert gossip["cross"] and gossip["layer"] == "per_speaker_profile" and gossip["label"] == "Profile"
    assert gossip["utype"] == "observation" and gossip["state"] == "head" and gossip["content"] == RECORDS["e1.5"][5]
    assert gossip["ts"] == "2026-03-05T18:11:00+01:00" and gossip["session"] == "s1" and gossip["sessions"] == ["s1"]
    assert gossip["from_ids"] == ["s1-05"]
    decision = rec["e3.1"]
    assert (decision["source"], decision["owner"], decision["owner_name"]) == ("dad", "GROUP", trail)
    assert decision["supersedes"] == "e1.4" and decision["superseded_by"] is None
    assert not rec["e3.2"]["cross"] and rec["e3.2"]["supersedes"] == "e2.1"

    talk = {(t["source"], t["target"]): {"replies": t["replies"], "next": t["next"]} for t in g["talk"]}
    assert talk == expected_talk()
    assert g["talk"][0] == {"source": "ben", "target": "dad", "replies": 0, "next": 4, "total": 4}
    assert [s["id"] for s in g["sessions"]] == ["s1", "s2", "s3"] and g["sessions"][1]["messages"] == 6
    assert g["layer_colours"]["group_interaction"] == graphview.LAYER_COLOURS["group_interaction"]
    assert g["layer_labels"]["per_speaker_core"] == "Core"


@pytest.mark.neo4j
def test_graph_json_full_mode_shows_every_state(client, trail):
    g = client.get(f"/groups/{trail}/graph", params={"mode": "full"}).json()
    assert ids(g) == sorted(RECORDS) and len(RECORDS) == 15
    states = {x["id"]: x["state"] for x in g["records"]}
    assert {k for k, v in states.items() if v == "superseded"} == SUPERSEDED == {"e1.1", "e1.3", "e1.4", "e2.1"}
    chain = {x["id"]: (x["supersedes"], x["superseded_by"]) for x in g["records"]}
    assert chain["e1.3"] == (None, "e2.1") and chain["e2.1"] == ("e1.3", "e3.2") and chain["e3.2"] == ("e2.1", None)


@pytest.mark.neo4j
def test_graph_json_filters(client, trail):
    def get(**params):
        r = client.get(f"/groups/{trail}/graph", params=params)
        assert r.status_code == 200, r.text
        return r.json()

    cara = get(person="cara")
    assert ids(cara) == ["e1.2", "e1.5", "e1.6", "e2.3", "e3.4"]
    assert cara["talk"] and all("cara" in (t["source"], t["target"]) for t in cara["talk"])
    assert len(cara["nodes"]) == 5  # the picture keeps every person

    assert ids(get(person="GROUP")) == ["e2.5", "e3.1"]
    assert ids(get(layer="Profile")) == ["e1.2", "e1.5", "e2.3"]
    assert ids(get(layer=["group_interaction", "insight"])) == ["e2.5", "e3.1"]
    assert ids(get(layer="core,Interaction", person="dad", mode="full")) == ["e1.4", "e3.1"]

    s2 = get(session="s2")
    assert ids(s2) == ["e2.2", "e2.3", "e2.4", "e2.5"]
    links_s2 = [(a, b) for a, b in zip(LINES, LINES[1:]) if b["session"] == "s2" and a["speaker_id"] != b["speaker_id"]]
    assert sum(t["next"] for t in s2["talk"]) == len(links_s2) == 6  # incl. the hand-over from s1 into s2
    assert sum(t["replies"] for t in s2["talk"]) == 0
    assert {n["id"]: n["messages"] for n in s2["nodes"]} == {"GROUP": 0, "ben": 2, "cara": 1, "dad": 2, "mom": 1}

    may = get(**{"from": "2026-05-01", "mode": "full"})
    assert ids(may) == ["e3.1", "e3.2", "e3.3", "e3.4"]
    march = get(**{"from": "2026-03-05T17:00:00Z", "to": "2026-03-05T17:10:00+00:00"})  # 18:02-18:10 at +01:00
    assert ids(march) == ["e1.2"]  # e1.1 (18:02) is superseded, e1.3 too; e1.4 superseded
    assert ids(get(**{"from": "2026-03-05T17:00:00Z", "to": "2026-03-05T17:10:00+00:00", "mode": "full"})) == [
        "e1.1", "e1.2", "e1.3", "e1.4"]
    assert sum(t["total"] for t in march["talk"]) == 4  # Cara to Mom (reply + next), Ben after Cara, Dad after Ben


@pytest.mark.neo4j
def test_graph_json_errors(client, trail):
    assert client.get("/groups/no-such-group/graph").status_code == 404
    r = client.get(f"/groups/{trail}/graph", params={"person": "zed"})
    assert r.status_code == 404 and "zed" in r.json()["detail"]
    assert client.get(f"/groups/{trail}/graph", params={"session": "s9"}).status_code == 404
    r = client.get(f"/groups/{trail}/graph", params={"layer": "Gossip"})
    assert r.status_code == 422 and r.json()["field"] == "layer"
    r = client.get(f"/groups/{trail}/graph", params={"from": "last spring"})
    assert r.status_code == 422 and r.json()["field"] == "from"
    assert client.get(f"/groups/{trail}/graph", params={"from": "2026-05-01", "to": "2026-03-01"}).status_code == 422
    assert client.get(f"/groups/{trail}/graph", params={"mode": "all"}).status_code == 422


@pytest.mark.neo4j
def test_summary_json(client, trail, store):
    r = client.get(f"/groups/{trail}/summary")
    assert r.status_code == 200, r.text
    s = r.json()
    assert (s["persons"], s["messages"], s["records"], s["heads"]) == (4, 18, 15, 11)
    assert [x["id"] for x in s["sessions"]] == ["s1", "s2", "s3"]
    people = {p["id"]: p for p in s["people"]}
    assert [p["name"] for p in s["people"]] == ["Ben", "Cara", "Dad", "Mom"]
    row = lambda pid: {k: people[pid][k] for k in (  # noqa: E731
        "messages", "replies_sent", "replies_received", "records_owned", "records_sourced",
        "said_about_others", "stance_changes")}
    assert row("ben") == {"messages": 6, "replies_sent": 1, "replies_received": 1, "records_owned": 3,
                          "records_sourced": 3, "said_about_others": 1, "stance_changes": 2}
    assert row("cara") == {"messages": 4, "replies_sent": 2, "replies_received": 1, "records_owned": 3,
                           "records_sourced": 4, "said_about_others": 2, "stance_changes": 0}
    assert row("mom")["replies_received"] == 1 and row("mom")["stance_changes"] == 0  # her UPDATE is a fact
    assert row("dad")["said_about_others"] == 2 and row("dad")["records_owned"] == 0
    assert people["mom"]["first_ts"] == "2026-03-05T18:02:00+01:00" and people["mom"]["last_ts"] == "2026-05-02T08:25:00+02:00"
    decisions = s["decisions"]
    assert [(d["id"], d["state"], d["position"]) for d in decisions] == [("e1.4", "superseded", 3), ("e3.1", "head", 16)]
    assert decisions[1]["supersedes"] == "e1.4" and decisions[1]["source_name"] == "Dad"
    # every layer and every utype counted (heads), not only decisions
    heads = [r for r in memory.current_heads(store, trail)]
    assert s["layers"] == {label: sum(memory.LAYER_LABELS[r.layer] == label for r in heads)
                           for label in ("Core", "Profile", "Interaction", "Insight")}
    assert s["utypes"] == {u: sum(r.utype == u for r in heads) for u in memory.UTYPES}
    assert sum(s["layers"].values()) == sum(s["utypes"].values()) == s["heads"] == 11
    assert s["utypes"]["decision"] == 1 and sum(n > 0 for n in s["layers"].values()) >= 3
    assert client.get("/groups/no-such-group/summary").status_code == 404


@pytest.mark.neo4j
def test_timeline_png(client, trail):
    r = client.get(f"/groups/{trail}/timeline.png", params={"width": 8})
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    width, height = png_size(r.content)
    assert 600 <= width <= 1000 and 250 <= height <= 600
    assert client.get("/groups/no-such-group/timeline.png").status_code == 404


@pytest.mark.neo4j
def test_group_without_derived_memory(client, store, embedder, make_group):
    gid = make_group("test-graph-raw")
    build_trail(store, embedder, gid, derived=False)
    g = client.get(f"/groups/{gid}/graph").json()
    assert g["records"] == [] and len(g["nodes"]) == 5
    assert sum(t["total"] for t in g["talk"]) == 19  # who talks to whom needs no Writer
    s = client.get(f"/groups/{gid}/summary").json()
    assert s["decisions"] == [] and s["heads"] == 0 and {p["messages"] for p in s["people"]} == {3, 4, 5, 6}
    assert png_size(client.get(f"/groups/{gid}/timeline.png").content)[0] > 0


@pytest.mark.neo4j
def test_page_and_static_files(client, trail):
    r = client.get(f"/groups/{trail}/view")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert '<div id="cy">' in r.text
    r = client.get("/groups/anything/view")  # unknown group: 404, with the page that shows why
    assert r.status_code == 404 and '<div id="cy">' in r.text
    js = client.get("/static/graphmem/vendor/cytoscape.min.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert js.content == (STATIC / "vendor" / "cytoscape.min.js").read_bytes()
    assert client.get("/static/graphmem/view.js").status_code == 200
    assert client.get("/static/graphmem/view.css").headers["content-type"].startswith("text/css")
    assert client.get("/static/graphmem/nothing.js").status_code == 404
    assert client.get("/static/graphmem/../routes/graph.py").status_code == 404
    assert client.get("/static/graphmem/%2e%2e/routes/graph.py").status_code == 404


@pytest.mark.neo4j
def test_api_key_guards_the_data_not_the_page(schema, trail):
    with TestClient(create_app(Settings(_env_file=None, api_key="s3cret"))) as c:
        assert c.get(f"/groups/{trail}/graph").status_code == 401
        assert c.get(f"/groups/{trail}/summary").status_code == 401
        assert c.get(f"/groups/{trail}/timeline.png").status_code == 401
        assert c.get(f"/groups/{trail}/graph", headers={"X-API-Key": "s3cret"}).status_code == 200
        assert c.get(f"/groups/{trail}/view").status_code == 200  # a shell: it asks for the key
        assert c.get("/static/graphmem/view.js").status_code == 200


@pytest.mark.neo4j
def test_cli_summary_json_table_and_plot(trail, tmp_path):
    from typer.testing import CliRunner

    from graphmem.cli import app

    runner = CliRunner()
    plot = tmp_path / "plots" / "timeline.png"
    r = runner.invoke(app, ["summary", "--group", trail, "--json", "--plot", str(plot)])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["plot"] == str(plot) and [d["id"] for d in data["decisions"]] == ["e1.4", "e3.1"]
    assert {p["id"]: p["stance_changes"] for p in data["people"]} == {"ben": 2, "cara": 0, "dad": 0, "mom": 0}
    assert png_size(plot.read_bytes())[0] > 0

    r = runner.invoke(app, ["summary", "--group", trail])
    assert r.exit_code == 0, r.output
    assert "Decisions over time" in r.stdout and "The family takes the" in r.stdout and "e3.1 ← e1.4" in r.stdout
    assert re.search(r"│ Ben +│ +6 │ +1 │ +1 │ +3 │ +3 │ +1 │ +2 │", r.stdout)
    assert "Derived memory: 11 current records by layer: Core " in " ".join(r.stdout.split())

    r = runner.invoke(app, ["summary", "--group", "no-such-group"])
    assert r.exit_code != 0


@pytest.mark.neo4j
def test_without_the_plots_extra_the_timeline_is_a_clear_501_and_one_cli_line(client, trail, monkeypatch, tmp_path):
    # a new-user trial on an [api]-only install: the page's timeline link answered a bare
    # "500 Internal Server Error" (text/plain) and `graphmem summary --plot` a traceback
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **kw: None if name.split(".")[0] == "matplotlib" else real(name, *a, **kw))
    r = client.get(f"/groups/{trail}/timeline.png")
    assert r.status_code == 501, r.text
    assert r.json()["error"] == "ExtraMissingError" and "pip install 'graphmem[plots]'" in r.json()["detail"]
    # the command line as a user runs it, with matplotlib absent (sys.modules[name] = None)
    code = ("import sys; sys.modules['matplotlib'] = None; sys.argv = ['graphmem', *sys.argv[1:]]; "
            "from graphmem.cli import run_cli; run_cli()")
    out = subprocess.run([sys.executable, "-c", code, "summary", "--group", trail, "--plot", str(tmp_path / "t.png")],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})
    assert out.returncode == 1 and "pip install 'graphmem[plots]'" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "t.png").exists()
