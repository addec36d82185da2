"""Export and round trip (issue 26 part 5): a group exported (messages with their edits, persons,
sessions, Writer segments, derived records with OWNER / SOURCE / FROM / SUPERSEDED_BY), erased,
and imported again is the same graph, property by property; pages are bounded and add up to
the whole; an export taken after ``forget`` has nothing of the erased person; the CLI, the API
and MCP give the same lines; messages read back as JSONL keep their session ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.main import create_app
from graphmem.cli import app as cli
from graphmem.client import GraphMemClient
from graphmem.core.config import Settings, get_settings
from graphmem.core.errors import ConflictError, InvalidInputError
from graphmem.derived.writer import ReplayWriter, derive_group
from graphmem.groups.export import export_lines, export_page, import_group, read_export
from graphmem.groups.service import forget_group, forget_person
from graphmem.verbatim.ingest import ingest_conversations
from loaders import load_conversations
from tests.factories import conversation

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]

#: properties that are the time or revision of the import itself, not of the data
IMPORT_TIME = {"Message": {"edited_at"}, "Group": {"vector_rev"}}


def _build(store, embedder, gid: str) -> None:
    convs = load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=gid)
    ingest_conversations(store, convs, embedder)
    derive_group(store, gid, model=ReplayWriter(ROOT / "examples" / "sample_writer_actions.jsonl"),
                 embedder=embedder, settings=get_settings())
    # two edits of one message, after derive (the message leaves its segment's COVERS)
    first = convs[0].messages[3]
    for text in (first.text + " (edited)", first.text + " (edited twice) 押金"):
        edited = first.model_copy(update={"text": text})
        ingest_conversations(store, [convs[0].model_copy(update={"messages": [edited]})], embedder)


def _graph(store, gid: str) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[str, str, str, str, str]]]:
    """Every node of the group (label, id) -> properties (vectors included as a flag), and every
    relationship (type, start label, start id, end label, end id)."""
    def read(tx):
        nodes = tx.run(
            "MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) "
            "RETURN [x IN labels(n) WHERE NOT x STARTS WITH 'GroupScope_'] AS labels, properties(n) AS p", g=gid).data()
        rels = tx.run(
            "MATCH (n)-[r]->(m) WHERE n.group_id = $g AND (m.group_id = $g OR (m:Group AND m.id = $g)) "
            "RETURN type(r) AS t, labels(n) AS a, n.id AS ai, labels(m) AS b, m.id AS bi", g=gid).data()
        return nodes, rels

    nodes, rels = store.write_tx(read)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for n in nodes:
        label = "/".join(sorted(n["labels"]))
        props = dict(n["p"])
        for k in ("embedding", "sentence_embeddings"):
            if k in props:
                props[k] = len(props[k])  # same model, same dimension; the values are recomputed
        main = next((x for x in ("Group", "Message") if x in n["labels"]), "")
        for k in IMPORT_TIME.get(main, set()):
            props.pop(k, None)
        out[(label, props["id"])] = props
    edges = sorted(("/".join(sorted(r["a"])) + ">" + r["t"], r["ai"], "/".join(sorted(r["b"])), r["bi"], "")
                   for r in rels)
    return out, edges


def test_export_forget_import_gives_the_same_graph(store, embedder, group_id, tmp_path) -> None:
    _build(store, embedder, group_id)
    before_nodes, before_rels = _graph(store, group_id)
    assert sum(1 for k in before_nodes if "Derived" in k[0]) == 17
    assert any("SUPERSEDED_BY" in r[0] for r in before_rels) and any("COVERS" in r[0] for r in before_rels)
    edited = [p for k, p in before_nodes.items() if p.get("text_history")]
    assert len(edited) == 1 and len(edited[0]["text_history"]) == 2

    lines = list(export_lines(store, group_id, with_derived=True, max_bytes=4_000))
    assert lines[0]["kind"] == "group" and lines[0]["format"] == "graphmem-export" and lines[0]["version"] == 1
    assert {x["kind"] for x in lines} == {"group", "person", "session", "message", "segment", "record"}
    assert not any(k in x for x in lines for k in ("embedding", "search_text", "search_grams", "group_key"))
    text = "\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n"

    forget_group(store, group_id)
    assert _graph(store, group_id) == ({}, [])
    path = tmp_path / "export.jsonl"
    path.write_text(text, encoding="utf-8")
    try:
        summary = import_group(store, embedder, read_export(path), source=path.name)
        assert (summary.messages, summary.edits, summary.segments, summary.records) == (18, 2, 3, 17)
        after_nodes, after_rels = _graph(store, group_id)
        assert set(after_nodes) == set(before_nodes)
        for key, props in before_nodes.items():
            assert after_nodes[key] == props, key
        assert after_rels == before_rels
        # texts byte-exact
        assert {k: p.get("text") for k, p in after_nodes.items()} == {k: p.get("text") for k, p in before_nodes.items()}
        # a second import into the same group is refused, nothing written
        with pytest.raises(ConflictError, match="already exists"):
            import_group(store, embedder, read_export(path))
        # and the CLI imports the same file into another group id, equal up to the group id
        other = group_id + "-b"
        try:
            res = CliRunner().invoke(cli, ["ingest", str(path), "--format", "graphmem-export", "--group", other, "--json"])
            assert res.exit_code == 0, res.output
            assert json.loads(res.stdout)["records"] == 17
            o_nodes, o_rels = _graph(store, other)
            assert len(o_nodes) == len(before_nodes) and len(o_rels) == len(before_rels)
        finally:
            forget_group(store, other)
    finally:
        path.unlink(missing_ok=True)


def test_pages_are_bounded_and_add_up_to_the_whole(store, embedder, group_id, tmp_path) -> None:
    _build(store, embedder, group_id)
    whole = export_page(store, group_id, with_derived=True, max_bytes=4_000_000)
    assert whole.next_cursor is None
    pages, cursor = [], None
    while True:
        page = export_page(store, group_id, cursor=cursor, with_derived=True, max_bytes=3_000)
        pages.append(page)
        assert page.lines
        size = sum(len(json.dumps(x, ensure_ascii=False).encode()) + 1 for x in page.lines)
        assert size == page.bytes
        # bounded, unless one segment with its records is a page alone
        assert page.bytes <= 3_000 or page.lines[0]["kind"] == "segment" and all(
            x["kind"] == "record" for x in page.lines[1:]), [x["kind"] for x in page.lines]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert len(pages) > 3
    assert [x for p in pages for x in p.lines] == whole.lines
    # without derived: no segment or record line
    plain = list(export_lines(store, group_id))
    assert {x["kind"] for x in plain} == {"group", "person", "session", "message"}
    with pytest.raises(InvalidInputError) as e:
        export_page(store, group_id, cursor="nonsense")
    assert e.value.field == "cursor"
    with pytest.raises(InvalidInputError) as e:
        export_page(store, group_id, max_bytes=10)
    assert e.value.field == "max_bytes"

    # the CLI writes the whole export; the API and MCP serve the same pages
    out = tmp_path / "cli-export.jsonl"
    res = CliRunner().invoke(cli, ["export", "--group", group_id, "--out", str(out), "--with-derived"])
    assert res.exit_code == 0, res.output
    assert [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()] == whole.lines
    with TestClient(create_app(Settings(_env_file=None))) as client:
        got, cursor = [], None
        while True:
            params: dict[str, Any] = {"with_derived": True, "max_bytes": 3_000}
            if cursor:
                params["cursor"] = cursor
            r = client.get(f"/groups/{group_id}/export", params=params)
            assert r.status_code == 200, r.text
            got.extend(r.json()["lines"])
            cursor = r.json()["next_cursor"]
            if cursor is None:
                break
        assert got == whole.lines
        # the typed client reads the same pages
        gm = GraphMemClient("http://testserver", http=client)
        got, cursor = [], None
        while True:
            page = gm.export_page(group_id, cursor=cursor, with_derived=True, max_bytes=3_000)
            got.extend(page.lines)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert got == whole.lines
        with pytest.raises(InvalidInputError):
            gm.export_page(group_id, cursor="nonsense")
        r = client.get(f"/groups/{group_id}/export", params={"cursor": "nonsense"})
        assert r.status_code == 422 and r.json()["field"] == "cursor"
        assert client.get("/groups/no-such-export-group/export").status_code == 404

    pytest.importorskip("mcp")
    from tests.integration.test_mcp import agent, call

    async def session() -> None:
        async with agent("--tools", "all") as c:
            got, cursor = [], None
            while True:
                args: dict[str, Any] = {"group_id": group_id, "with_derived": True, "max_bytes": 3_000}
                if cursor:
                    args["cursor"] = cursor
                page = await call(c, "export_group", **args)
                assert page["bytes"] <= 3_000 or page["lines"][0]["kind"] == "segment"
                got.extend(page["lines"])
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert got == whole.lines

    anyio.run(session)


def test_an_export_after_forget_has_nothing_of_the_person(store, embedder, group_id) -> None:
    _build(store, embedder, group_id)
    words = [x["text"] for x in export_lines(store, group_id) if x["kind"] == "message" and x["person_id"] == "ben"]
    assert words
    forget_person(store, group_id, "ben", settings=get_settings())
    lines = list(export_lines(store, group_id, with_derived=True))
    text = json.dumps(lines, ensure_ascii=False)
    for w in words:  # none of his words, in any line (messages, records, segment reports)
        assert w not in text
    assert not [x for x in lines if x["kind"] == "person" and (x["id"] == "ben" or "Ben" in x["aliases"])]
    assert not [x for x in lines if "ben" in (x.get("person_id"), x.get("owner"), x.get("source"))]
    # what is left of his name is in other people's own words only
    assert all(x["kind"] == "message" and x["person_id"] != "ben" for x in lines if "Ben" in json.dumps(x, ensure_ascii=False))
    assert '"ben"' not in text


def test_messages_read_back_as_jsonl_keep_their_session_ids(store, embedder, group_id, tmp_path) -> None:
    rows = [{"id": "a", "channel": "general", "session": "general/week-1", "speaker": "Ann", "text": "hi"},
            {"id": "b", "channel": "general", "session": "general/week-1", "speaker": "Bo", "text": "hello"}]
    ingest_conversations(store, [conversation(group_id, rows)], embedder)
    msgs = [x for x in export_lines(store, group_id) if x["kind"] == "message"]
    assert [m["session"] for m in msgs] == ["general/week-1"] * 2
    chat = tmp_path / "back.jsonl"
    chat.write_text("".join(json.dumps({"group": group_id + "-back", "session": m["session"], "channel": m["channel"],
                                        "speaker": m["speaker"], "text": m["text"], "ts": m["ts"], "id": m["id"]}) + "\n"
                            for m in msgs), encoding="utf-8")
    try:
        convs = load_conversations(chat, "jsonl")
        assert [m.session for m in convs[0].messages] == ["general/week-1"] * 2
        ingest_conversations(store, convs, embedder)
        back = [x for x in export_lines(store, group_id + "-back") if x["kind"] in ("message", "session")]
        assert {x["session"] if x["kind"] == "message" else x["id"] for x in back} == {"general/week-1"}
        # the bare session name still gets its channel prefix
        chat.write_text(json.dumps({"group": group_id + "-back", "session": "week-2", "channel": "general",
                                    "speaker": "Ann", "text": "again", "ts": "2026-01-02T10:00:00"}) + "\n")
        assert load_conversations(chat, "jsonl")[0].messages[0].session == "general/week-2"
    finally:
        forget_group(store, group_id + "-back")


def test_a_platform_import_round_trips_its_kinds_attachments_and_mentions(store, embedder, group_id, tmp_path) -> None:
    """A Discord export (bots, system lines, attachments, mentions, edits) exported and imported
    back into an empty group gives the same messages, field by field."""
    from loaders import load_conversations
    from graphmem.verbatim.ingest import ingest_conversations

    src = next((ROOT / "tests" / "fixtures" / "exports" / "discord").glob("*.json"))
    ingest_conversations(store, load_conversations(src, "discord", group=group_id), embedder)
    before_nodes, before_rels = _graph(store, group_id)
    msgs = [p for k, p in before_nodes.items() if k[0].startswith("Message") or "Message" in k[0]]
    assert any(p.get("attachment_names") for p in msgs) and any(p.get("kind") for p in msgs)
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in export_lines(store, group_id)),
                    encoding="utf-8")
    forget_group(store, group_id)
    import_group(store, embedder, read_export(path), source=path.name)
    after_nodes, after_rels = _graph(store, group_id)
    assert set(after_nodes) == set(before_nodes)
    for key, props in before_nodes.items():
        assert after_nodes[key] == props, key
    assert after_rels == before_rels


def _export_file(store, gid: str, path: Path, *, with_derived: bool = False) -> list[dict[str, Any]]:
    lines = list(export_lines(store, gid, with_derived=with_derived))
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return lines


def test_a_group_that_received_messages_out_of_time_order_imports_as_the_same_graph(
        store, embedder, group_id, tmp_path) -> None:
    """Found by a messy-input trial: the import fed the messages in arrival order (seq) to ingest,
    whose order planner keeps input order where it disagrees with timestamps, so a late message
    came back last (its order_instant raised), with other turns, NEXT links and session numbers.
    Here: two channels, a file whose own order disagrees with its timestamps, a late message in
    a later load, a later load that opens an earlier session, a reply and an edit; then the same
    after the person whose message raised another one's order key is forgotten."""
    def row(i, speaker, ch, day, hm, text, **kw):
        return {"id": i, "speaker": speaker, "speaker_id": speaker.lower(), "channel": ch,
                "session": f"{ch}/{day}", "ts": f"2026-01-0{day[-1]}T{hm}:00+00:00", "text": text, **kw}

    first = [  # file order is authoritative: g2 is raised to g1's instant (10:00)
        row("g1", "Ann", "general", "day2", "10:00", "Shall we book the lake cabin?"),
        row("g2", "Ben", "general", "day2", "09:30", "I already asked about the cabin"),
        row("r1", "Cara", "random", "day2", "09:40", "Photos from last year are up"),
        row("g3", "Cara", "general", "day2", "10:20", "The cabin sleeps six", reply_to="g1"),
    ]
    late = [row("g0", "Dad", "general", "day2", "09:50", "Morning all, planning thread here"),
            row("r0", "Ben", "random", "day1", "18:00", "Who has the tent?")]  # an earlier session
    after = [row("g4", "Ben", "general", "day2", "10:30", "Booked it", reply_to="g0")]
    for rows in (first, late, after):
        ingest_conversations(store, [conversation(group_id, rows)], embedder)
    edited = conversation(group_id, [{**first[1], "text": "I already asked about the cabin, it is free"}])
    ingest_conversations(store, [edited], embedder)

    nodes, rels = _graph(store, group_id)
    msgs = {p["id"]: p for k, p in nodes.items() if k[0] == "Message"}
    # the original: conversation order by (order_instant, seq), not arrival order
    assert sorted(msgs, key=lambda i: msgs[i]["turn_created"]) == ["r0", "r1", "g0", "g1", "g2", "g3", "g4"]
    assert msgs["g2"]["order_instant"] > msgs["g2"]["instant"]  # raised by g1 in its own input
    assert msgs["g0"]["seq"] > msgs["g1"]["seq"] and msgs["g0"]["turn_created"] < msgs["g1"]["turn_created"]
    sessions = {p["id"]: p["index"] for k, p in nodes.items() if k[0] == "Session"}
    assert sessions["random/day1"] == 1 and sessions["random/day2"] == 2

    path = tmp_path / "late.jsonl"
    exported = _export_file(store, group_id, path)
    forget_group(store, group_id)
    import_group(store, embedder, read_export(path), source=path.name)
    after_nodes, after_rels = _graph(store, group_id)
    assert set(after_nodes) == set(nodes)
    for key, props in nodes.items():  # every property: turns, positions, order keys, seq, session index
        assert after_nodes[key] == props, key
    assert after_rels == rels  # NEXT, REPLY_TO, IN_SESSION, SOURCE, ...
    def body(lines):  # the file less the group line and the times of the replayed edits
        return [{k: v for k, v in x.items() if k != "edited_at"} for x in lines if x["kind"] != "group"]

    assert body(export_lines(store, group_id)) == body(exported)  # the copy exports the same file

    # Forget Ann, whose g1 raised g2's order key: g2 keeps its place (after r1 and g0), which its
    # own timestamp (09:30) would not give it; the erased arrival numbers leave gaps that an
    # import closes up, in the same arrival order
    forget_person(store, group_id, "ann", settings=get_settings())
    nodes, rels = _graph(store, group_id)
    assert "ann" not in {p.get("id") for p in nodes.values()}
    g2 = nodes[("Message", "g2")]
    assert g2["order_instant"] > g2["instant"] and g2["turn_created"] == 3  # r0, r1, g0, g2
    _export_file(store, group_id, path)
    forget_group(store, group_id)
    import_group(store, embedder, read_export(path), source=path.name)
    after_nodes, after_rels = _graph(store, group_id)
    assert set(after_nodes) == set(nodes) and after_rels == rels
    renumbered = {"Message": {"seq"}, "Group": {"message_seq", "erasures"}}  # counters of the erased group
    for key, props in nodes.items():
        drop = renumbered.get(key[0], set())
        assert {k: v for k, v in after_nodes[key].items() if k not in drop} == \
            {k: v for k, v in props.items() if k not in drop}, key
    arrival = sorted((p["seq"], p["id"]) for k, p in nodes.items() if k[0] == "Message")
    assert sorted((p["seq"], p["id"]) for k, p in after_nodes.items() if k[0] == "Message") == \
        [(n, i) for n, (_, i) in enumerate(arrival)]


def test_an_import_holds_every_derived_record_to_the_writers_attribution_rules(
        store, embedder, group_id, tmp_path) -> None:
    """Found by an attacker trial: an export edited to credit a record to GROUP on one member's
    "ok" (and other forged credits) was imported, although the Writer refuses each of them.
    The Writer's own records still import (the round-trip test imports all 17); each forged
    record refuses the file, naming the record and the rule, before anything is written."""
    _build(store, embedder, group_id)
    lines = list(export_lines(store, group_id, with_derived=True))
    by_content = {x["content"].split(" ")[0] + " " + x["content"].split(" ")[1]: x["id"]
                  for x in lines if x["kind"] == "record"}
    rid = {name: by_content[name] for name in ("Cara will", "Cara, citing", "The family", "Ben prefers",
                                               "Ben still", "Ben's climbing")}
    forged = {  # record -> (changed fields, the rule that refuses it)
        "group on one member's message": (rid["Cara will"], {
            "label": "Interaction", "layer": "group_interaction", "utype": "decision", "owner": "GROUP",
            "source": "GROUP", "from": ["s3-02"], "content": "The group decided Ana pays back the whole holiday fund"},
            "group_source_single_speaker"),
        "group on one member's FROM": (rid["The family"], {"source": "GROUP", "from": ["s3-05"]},
                                        "group_source_single_speaker"),
        "Cara's report credited to Dad": (rid["Cara, citing"], {
            "source": "dad", "from": ["s2-01", "s2-04"], "content": "Dad says Ben booked a climbing course in June"},
            "reported_claim_source"),
        "Dad's decision credited to Ben": (rid["The family"], {"source": "ben", "from": ["s3-01", "s3-02", "s3-05"]},
                                           "decision_not_in_source_words"),
        "Ben's words credited to Mom": (rid["Ben's climbing"], {"source": "mom", "from": ["s2-03", "s2-05"]},
                                        "claim_not_in_source_words"),
        "a source who sent none of FROM": (rid["Ben prefers"], {"from": ["s1-02"]}, "source_not_speaker"),
        "a later version about another": (rid["Ben still"], {"owner": "cara"}, "update_owner_changed"),
        "FROM outside its segment": (rid["Ben prefers"], {"from": ["s3-02"]}, "not one its segment"),
    }
    copy, cli_copy = f"{group_id}-forged", f"{group_id}-cli"
    try:
        for case, (record, change, rule) in forged.items():
            edited = [{**x, **change} if x["kind"] == "record" and x["id"] == record else x for x in lines]
            with pytest.raises(InvalidInputError) as e:
                import_group(store, embedder, edited, group_id=copy, source="forged.jsonl")
            assert e.value.record == record and rule in str(e.value), (case, str(e.value))
            assert not store.read("groups/get_group", group_id=copy), case  # nothing written
            assert not store.write_tx(lambda tx: tx.run("MATCH (n {group_id: $g}) RETURN count(n) AS n",
                                                        g=copy).single()["n"]), case
        # the trial's file through the command line: refused, the record and the rule named
        record, change, rule = forged["group on one member's message"]
        path = tmp_path / "forged.jsonl"
        path.write_text("".join(json.dumps({**x, **change} if x.get("id") == record and x["kind"] == "record" else x,
                                           ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
        res = subprocess.run([str(Path(sys.executable).parent / "graphmem"), "ingest", str(path), "--format",
                              "graphmem-export", "--group", cli_copy],
                             capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "1000"})
        assert res.returncode == 1 and f"record {record}" in res.stderr and rule in res.stderr, res.stderr
        assert "Traceback" not in res.stderr and not store.read("groups/get_group", group_id=cli_copy)
    finally:  # what a wrong import wrote
        for g in (copy, cli_copy):
            if store.read("groups/get_group", group_id=g):
                forget_group(store, g)
