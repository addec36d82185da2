"""The offline first-load files describe the same graph that ``ingest --embed later`` writes.

The importer itself needs a stopped server and an empty database, so it cannot run against the
shared test server; this test compares its input (the CSV files of graphmem.verbatim.bulk_import) with
what transactional ingest stores, node by node and relationship by relationship.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from graphmem.verbatim.bulk_import import ARRAY_DELIMITER, HEADERS, write_csv
from graphmem.verbatim.bulk_jsonl import write_csv_jsonl
from loaders import jsonl_reference
from graphmem.verbatim.ingest import ingest_conversations
from tests.factories import conversation

pytestmark = pytest.mark.neo4j


def sample(gid: str):
    rows = [
        {"id": "a1", "speaker": "Ana", "speaker_id": "u1", "text": "Lunch at noon?", "session": "s1"},
        {"id": "a2", "speaker": "Ben", "text": "Yes, \"the usual\" place, with a\nnew line", "session": "s1",
         "reply_to": "a1"},
        {"id": "b1", "speaker": "Ana B.", "speaker_id": "u1", "text": "Ops channel: deploy at 3",
         "session": "ops/1", "channel": "ops"},
        {"id": "a3", "speaker": "Chloe", "text": "I'll book; who, by the way, is coming?", "session": "s2",
         "reply_to": "zz-missing"},
        {"id": "b2", "speaker": "Ben", "text": "deploy done", "session": "ops/1", "channel": "ops",
         "reply_to": "b1"},
        {"id": "a4", "speaker": "Ana", "speaker_id": "u1", "text": "me", "session": "s2", "reply_to": "a3"},
    ]
    conv = conversation(gid, rows)
    return conv.model_copy(update={"messages": [*conv.messages, conv.messages[1]]})  # exact duplicate


def _nonce(props: dict) -> dict:
    """A group's vector_rev starts at a random 52-bit number on every path (graphmem.recall.cache):
    compared as present and in range, not by value."""
    if "vector_rev" in props:
        assert isinstance(props["vector_rev"], int) and 0 <= props["vector_rev"] < 2**52, props
        return {**props, "vector_rev": "random"}
    return props


def from_store(store, gid: str) -> tuple[set, set]:
    nodes = store.read_text(
        "MATCH (n) WHERE n.group_id = $g OR (n:Group AND n.id = $g) "
        "RETURN labels(n) AS labels, properties(n) AS props", g=gid,
    )
    rels = store.read_text(
        "MATCH (a)-[r]->(b) WHERE a.group_id = $g "
        "RETURN labels(a)[0] AS al, a.id AS a, type(r) AS t, labels(b)[0] AS bl, b.id AS b", g=gid,
    )
    node_set = set()
    for n in nodes:
        props = {k: (tuple(v) if isinstance(v, list) else v) for k, v in n["props"].items()}
        props = _nonce(props)
        node_set.add((tuple(sorted(n["labels"])), tuple(sorted(props.items()))))
    return node_set, {(r["al"], r["a"], r["t"], r["bl"], r["b"]) for r in rels}


TYPES = {"int": int, "long": int, "double": float, "string[]": lambda v: tuple(v.split(ARRAY_DELIMITER)),
         "boolean": lambda v: v == "true"}


def read_rows(paths: list[Path]) -> list[list[str]]:
    """The rows of a CSV file given as header file then parts (or as one file)."""
    text = "".join(p.read_text(encoding="utf-8") for p in paths)
    return list(csv.reader(text.splitlines(keepends=True)))


def from_csv(folder: Path, files: dict[str, list[Path]] | None = None) -> tuple[set, set]:
    files = files or {k: [folder / f"{k}.csv"] for k in HEADERS}
    by_id: dict[str, tuple[str, str]] = {}
    node_set = set()
    for name in ("groups", "persons", "sessions", "messages"):
        header, *rows = read_rows(files[name])
        if True:
            for row in rows:
                props, labels, node = {}, (), ""
                for col, value in zip(header, row):
                    if col == ":ID":
                        node = value
                    elif col == ":LABEL":
                        labels = tuple(sorted(value.split(ARRAY_DELIMITER)))
                    else:
                        key, _, kind = col.partition(":")
                        if kind == "string[]" and value == "":
                            continue  # neo4j-admin stores no property for an empty array field
                        props[key] = TYPES[kind](value) if kind else value
                by_id[node] = (labels[0] if len(labels) == 1 else "Message", props["id"])
                props = _nonce(props)
                if labels == ("Group",):  # not in the CSV: schema apply seeds it after the import
                    props["vector_rev"] = "random"
                node_set.add((labels, tuple(sorted(props.items()))))
    rels = set()
    for start, end, typ in read_rows(files["rels"])[1:]:
        (al, a), (bl, b) = by_id[start], by_id[end]
        rels.add((al, a, typ, bl, b))
    return node_set, rels


def test_import_files_match_transactional_ingest(store, group_id, tmp_path) -> None:
    conv = sample(group_id)
    ingested = ingest_conversations(store, [conv], None, embed="later")
    files = write_csv([conv], tmp_path)
    assert files.as_dict() == ingested.as_dict()
    db_nodes, db_rels = from_store(store, group_id)
    csv_nodes, csv_rels = from_csv(tmp_path)
    assert csv_nodes == db_nodes
    assert csv_rels == db_rels
    assert ("Message", "a1", "NEXT", "Message", "a2") in csv_rels
    assert ("Message", "b1", "NEXT", "Message", "b2") in csv_rels  # per channel
    assert not any(r[1] == "a3" and r[2] == "REPLY_TO" for r in csv_rels)  # target not stored


def jsonl_sample(path: Path, gid: str) -> Path:
    """The rows of :func:`sample` as a chat file (``--format jsonl``), spread over two groups'
    lines, with a redelivery."""
    lines = []
    for m in sample(gid).messages:
        row = {"group": gid, "id": m.id, "speaker": m.speaker, "text": m.text, "ts": m.ts,
               "session": m.session.split("/", 1)[1] if m.channel else m.session}
        for key in ("speaker_id", "reply_to", "channel"):
            if getattr(m, key):
                row[key] = getattr(m, key)
        lines.append(json.dumps(row))
        reply = {"reply_to": "b-" + m.reply_to} if m.reply_to else {}
        lines.append(json.dumps({**row, "group": gid + "-b", "id": "b-" + m.id, **reply}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_parallel_files_match_transactional_ingest(store, group_id, tmp_path) -> None:
    """graphmem.verbatim.bulk_jsonl's parts (two processes) against ingest of the same file."""
    from graphmem.groups.service import forget_group
    from loaders import load_conversations

    src = jsonl_sample(tmp_path / "chat.jsonl", group_id)
    convs = load_conversations(src, "jsonl")
    try:
        ingested = ingest_conversations(store, convs, None, embed="later")
        result = write_csv_jsonl(src, tmp_path / "csv", reference=jsonl_reference, workers=2)
        assert result.path == "parallel" and result.parts == 2
        assert result.summary.as_dict() == ingested.as_dict()
        csv_nodes, csv_rels = from_csv(tmp_path / "csv", result.files)
        db_nodes, db_rels = set(), set()
        for gid in (group_id, group_id + "-b"):
            nodes, rels = from_store(store, gid)
            db_nodes |= nodes
            db_rels |= rels
        assert csv_nodes == db_nodes
        assert csv_rels == db_rels
    finally:
        forget_group(store, group_id + "-b")


def test_importer_runs_and_keeps_its_report_out_of_the_working_directory(tmp_path, monkeypatch) -> None:
    """The real neo4j-admin import, into a stopped server's home of its own (not the test server).

    The importer writes a report of skipped entries; it belongs with the CSV files, never in the
    directory the command was started from (it used to leave ``import.report`` in the repo root).
    """
    from graphmem.verbatim.bulk_import import import_conversations
    from graphmem.core.config import Settings

    from graphmem.store.local_server import LocalServer

    settings = Settings(home=tmp_path / "gm", neo4j_heap_mb=256, neo4j_pagecache_mb=64)
    assembled = LocalServer(Settings())  # the test server's jars, when assembled, save a Maven run
    if assembled.assembled():
        settings.neo4j_home.mkdir(parents=True)
        (settings.neo4j_home / "lib").symlink_to(assembled.lib, target_is_directory=True)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    folder = tmp_path / "csv"
    report = import_conversations(settings, [sample("import-report")], folder)
    assert report.summary.messages_written == 6
    assert "IMPORT DONE" in report.tool_output
    assert list(cwd.iterdir()) == []
    assert (folder / "import.report").exists()

    # the JSON-lines path: parts written by two processes, one header file each
    from graphmem.verbatim.bulk_jsonl import import_jsonl

    src = jsonl_sample(tmp_path / "chat.jsonl", "import-jsonl")
    report = import_jsonl(settings, src, tmp_path / "csv2", reference=jsonl_reference, overwrite=True, workers=2)
    assert (report.csv_path, report.csv_parts) == ("parallel", 2)
    assert report.summary.messages_written == 12
    assert "IMPORT DONE" in report.tool_output
    # 2 groups, 3 + 3 persons, 3 + 3 sessions, 6 + 6 messages
    assert "26 nodes" in report.tool_output


def own_server(tmp_path: Path):
    """Settings of a local server of its own (a throwaway home and free ports, never the test
    server), a runner of the ``graphmem`` command against it, and a count of a group's messages
    in it (the server must run)."""
    import os
    import subprocess
    import sys

    from graphmem.core.config import Settings
    from graphmem.store.db import Store, open_driver
    from graphmem.store.local_server import LocalServer
    from tests.processes import free_port

    ports = {"GRAPHMEM_NEO4J_BOLT_PORT": str(free_port()), "GRAPHMEM_NEO4J_HTTP_PORT": str(free_port())}
    env = {**os.environ, "GRAPHMEM_HOME": str(tmp_path / "gm"), "GRAPHMEM_NEO4J_HEAP_MB": "384",
           "GRAPHMEM_NEO4J_PAGECACHE_MB": "64", "GRAPHMEM_NEO4J_URI": "", "COLUMNS": "1000", **ports}
    settings = Settings(home=tmp_path / "gm", neo4j_heap_mb=384, neo4j_pagecache_mb=64, neo4j_uri="",
                        neo4j_bolt_port=int(ports["GRAPHMEM_NEO4J_BOLT_PORT"]),
                        neo4j_http_port=int(ports["GRAPHMEM_NEO4J_HTTP_PORT"]))
    assembled = LocalServer(Settings())  # the test server's jars, when assembled, save a Maven run
    if assembled.assembled():
        settings.neo4j_home.mkdir(parents=True)
        (settings.neo4j_home / "lib").symlink_to(assembled.lib, target_is_directory=True)
    # this checkout's code (the venv's ``graphmem`` launcher imports whichever copy is installed)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(x for x in (root, env.get("PYTHONPATH")) if x)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "graphmem", *args], capture_output=True, text=True,
                              timeout=600, env=env, cwd=root)

    def messages(gid: str) -> int:
        driver = open_driver(settings)
        try:
            return Store(driver).read_text("MATCH (m:Message {group_id: $g}) RETURN count(m) AS n", g=gid)[0]["n"]
        finally:
            driver.close()

    return settings, cli, messages


def test_import_checks_the_input_before_it_stops_a_running_server(tmp_path) -> None:
    """``graphmem neo4j import`` against a real running server of its own (a throwaway home and
    ports, never the test server): a bad file is named (file, line, field) while the server
    keeps running with its data; a good file stops it only after its CSV files are written,
    imports, and starts it again. Before, the command refused a running server, so the user
    stopped it first and learnt of the bad record with the server down."""
    import json as _json

    from graphmem.store.db import Store, open_driver
    from graphmem.verbatim.ingest import ingest_conversations
    from graphmem.store.local_server import LocalServer
    from tests.factories import conversation

    settings, cli, messages = own_server(tmp_path)
    server = LocalServer(settings)
    try:
        pid = server.start().pid
        driver = open_driver(settings)
        try:
            ingest_conversations(Store(driver), [conversation("kept", [{"speaker": "Ana", "text": "still here"}])],
                                 None, embed="later")
        finally:
            driver.close()
        good = [{"group": "fresh", "session": "s1", "speaker": "Ana", "text": f"line {i}",
                 "ts": f"2026-03-01T10:00:0{i}", "id": f"f{i}"} for i in range(3)]
        bad_files = {  # (line 3 is wrong) -> the field named: a loader rule and an ingest rule
            "ts": [*good[:2], dict(good[2], ts="2026-02-30T10:00:00")],
            "reply_to": [*good[:2], dict(good[2], reply_to="f2")],
        }
        for field, lines in bad_files.items():
            path = tmp_path / f"bad-{field}.jsonl"
            path.write_text("".join(_json.dumps(x) + "\n" for x in lines), encoding="utf-8")
            res = cli("neo4j", "import", str(path), "--format", "jsonl", "--overwrite", "--csv-dir",
                      str(tmp_path / f"csv-{field}"))
            assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
            assert str(path) in res.stderr and "record line 3" in res.stderr and f"field '{field}'" in res.stderr, \
                res.stderr
            assert server.pid() == pid  # still the same running server
            assert messages("kept") == 1  # and its store untouched

        path = tmp_path / "good.jsonl"
        path.write_text("".join(_json.dumps(x) + "\n" for x in good), encoding="utf-8")
        # neo4j-admin itself fails after the server was stopped (it cannot write its report
        # file): the user gets its cause, the database as it was and the server running again.
        # Before, the server stayed down.
        blocked = tmp_path / "csv-blocked"
        (blocked / "import.report").mkdir(parents=True)
        res = cli("neo4j", "import", str(path), "--format", "jsonl", "--overwrite", "--csv-dir", str(blocked))
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
        err = " ".join(res.stderr.split())
        assert "neo4j-admin database import failed" in err and "import.report: Is a directory" in err, err
        assert "database was left as it was" in err and "was started again" in err, err
        assert server.pid() not in (None, pid)  # running again
        pid = server.pid()
        assert messages("kept") == 1  # the existing database, untouched
        assert not list((tmp_path / "gm" / "data").glob("import-aside-*"))

        res = cli("neo4j", "import", str(path), "--format", "jsonl", "--overwrite", "--json",
                  "--csv-dir", str(tmp_path / "csv-good"))
        assert res.returncode == 0, res.stderr
        report = _json.loads(res.stdout)
        assert report["stopped_server"] is True and report["messages_written"] == 3
        assert server.pid() not in (None, pid)  # stopped, imported, started again
        assert (messages("fresh"), messages("kept")) == (3, 0)  # the database was replaced
    finally:
        server.stop()


def test_import_into_an_empty_database_needs_no_overwrite(tmp_path) -> None:
    """``graphmem neo4j import`` right after ``graphmem neo4j start`` (+ ``schema apply``) loads
    without ``--overwrite``: the database exists but holds no node (constraints and indexes are
    no data). Before, the database folder merely existing was refused. A database holding a
    node is still refused without ``--overwrite``, before anything is stopped; so is a stopped
    server's database, which cannot be asked."""
    import json as _json

    from graphmem.store.db import Store, open_driver
    from graphmem.store.local_server import LocalServer
    from graphmem.store.schema import apply_schema

    settings, cli, messages = own_server(tmp_path)
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(_json.dumps({"group": "first", "session": "s1", "speaker": "Ana", "text": f"line {i}",
                                         "ts": f"2026-03-01T10:00:0{i}", "id": f"f{i}"}) + "\n" for i in range(3)),
                    encoding="utf-8")
    server = LocalServer(settings)
    try:
        server.start()
        driver = open_driver(settings)
        try:
            apply_schema(Store(driver), 384)  # constraints and indexes, no node
        finally:
            driver.close()
        assert any((settings.neo4j_home / "data" / "databases" / settings.neo4j_database).iterdir())

        res = cli("neo4j", "import", str(path), "--format", "jsonl", "--json", "--csv-dir", str(tmp_path / "csv1"))
        assert res.returncode == 0, res.stderr
        assert _json.loads(res.stdout)["messages_written"] == 3
        pid = server.pid()
        assert pid is not None and messages("first") == 3
        driver = open_driver(settings)
        try:  # schema apply after the import seeds the group's random vector_rev (graphmem.recall.cache)
            rev = Store(driver).read_text("MATCH (g:Group {id: 'first'}) RETURN g.vector_rev AS r")[0]["r"]
        finally:
            driver.close()
        assert isinstance(rev, int) and 0 <= rev < 2**52

        # now it holds data: refused, the server running on and the store untouched
        res = cli("neo4j", "import", str(path), "--format", "jsonl", "--csv-dir", str(tmp_path / "csv2"))
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
        err = " ".join(res.stderr.split())
        assert "holds data" in err and "--overwrite" in err, err
        assert server.pid() == pid and messages("first") == 3

        # a stopped server cannot be asked: its database is refused, and nothing is started
        server.stop()
        res = cli("neo4j", "import", str(path), "--format", "jsonl", "--csv-dir", str(tmp_path / "csv3"))
        assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
        err = " ".join(res.stderr.split())
        assert "server is stopped" in err and "graphmem neo4j start" in err and "--overwrite" in err, err
        assert server.pid() is None
    finally:
        server.stop()


def test_an_import_killed_half_way_is_undone_and_a_plain_rerun_completes(tmp_path) -> None:
    """``graphmem neo4j import`` killed with SIGKILL after it stopped the server and moved the
    database aside (issue 27, item 1), on a server of its own: neo4j-admin dies with it, the
    next ``graphmem neo4j start`` puts the old database back instead of starting on a
    half-imported one; killed again, a plain re-run of the same command undoes the dead
    import, imports and starts the server. Before, the server started on whatever neo4j-admin
    had left and the old database stayed in ``import-aside-<pid>`` for good."""
    import json as _json
    import signal
    import subprocess
    import sys
    import time

    from graphmem.store.db import Store, open_driver
    from graphmem.store.local_server import ADMIN_TOOL, LocalServer
    from graphmem.verbatim.ingest import ingest_conversations
    from tests.factories import conversation

    settings, cli, messages = own_server(tmp_path)
    server = LocalServer(settings)
    data = settings.neo4j_home / "data"
    path = tmp_path / "good.jsonl"
    path.write_text("".join(_json.dumps({"group": "fresh", "session": "s1", "speaker": "Ana", "text": f"line {i}",
                                         "ts": f"2026-03-01T10:00:0{i}", "id": f"f{i}"}) + "\n" for i in range(3)),
                    encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    env = {**__import__("os").environ, "GRAPHMEM_HOME": str(tmp_path / "gm"), "GRAPHMEM_NEO4J_URI": "",
           "GRAPHMEM_NEO4J_HEAP_MB": "384", "GRAPHMEM_NEO4J_PAGECACHE_MB": "64", "PYTHONPATH": root,
           "GRAPHMEM_NEO4J_BOLT_PORT": str(settings.neo4j_bolt_port),
           "GRAPHMEM_NEO4J_HTTP_PORT": str(settings.neo4j_http_port)}
    args = [sys.executable, "-m", "graphmem", "neo4j", "import", str(path), "--format", "jsonl", "--overwrite"]

    def importers() -> list[int]:
        found = []
        for proc in Path("/proc").iterdir():
            try:
                cmd = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if ADMIN_TOOL in cmd and str(settings.neo4j_home.resolve()) in cmd:
                found.append(int(proc.name))
        return found

    def kill_mid_import(csv: str) -> None:
        victim = subprocess.Popen([*args, "--csv-dir", str(tmp_path / csv)], cwd=root, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while not importers():  # neo4j-admin writes the new database: the old one is aside
            assert victim.poll() is None, victim.stderr.read() if victim.stderr else ""
            assert time.monotonic() < deadline, "the importer never started"
            time.sleep(0.05)
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=60)
        deadline = time.monotonic() + 30
        while importers():  # it dies with its parent
            assert time.monotonic() < deadline, "neo4j-admin outlived the killed import"
            time.sleep(0.1)
        assert server.pid() is None and len(list(data.glob("import-aside-*"))) == 1

    try:
        server.start()
        driver = open_driver(settings)
        try:
            ingest_conversations(Store(driver), [conversation("kept", [{"speaker": "Ana", "text": "still here"}])],
                                 None, embed="later")
        finally:
            driver.close()

        kill_mid_import("csv1")
        res = cli("neo4j", "start")
        assert res.returncode == 0, res.stderr
        assert messages("kept") == 1 and messages("fresh") == 0  # the database before the import
        assert not list(data.glob("import-aside-*"))

        kill_mid_import("csv2")
        res = subprocess.run([*args, "--csv-dir", str(tmp_path / "csv3"), "--json"], cwd=root, env=env,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr
        assert _json.loads(res.stdout)["messages_written"] == 3
        assert server.pid() is not None and not list(data.glob("import-aside-*"))
        assert (messages("fresh"), messages("kept")) == (3, 0)
    finally:
        server.stop()
