"""``--csv-dir`` of the first-load importer (issue 24, point 13): the CSV files hold every
message, so the folder is the owner's alone. Attacks: a symlink planted as the folder, or as one
of the files in it, that would send the messages elsewhere. No database."""

from __future__ import annotations

from loaders import jsonl_reference

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem.core.private_files import csv_folder
from graphmem.verbatim.bulk_import import HEADERS, write_csv
from graphmem.verbatim.bulk_jsonl import write_csv_jsonl
from graphmem.core.errors import InvalidInputError
from loaders import load_conversations


def _chat(path: Path) -> Path:
    rows = [{"group": "g", "session": "s", "speaker": "Ana", "text": f"secret plan {i}",
             "ts": f"2026-03-01T10:00:0{i}"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_files_are_0600_in_a_0700_folder(tmp_path):
    chat = _chat(tmp_path / "chat.jsonl")
    ref = tmp_path / "ref"
    csv_folder(ref)
    write_csv(load_conversations(chat, "jsonl"), ref)
    fast = tmp_path / "fast"
    csv_folder(fast)
    write_csv_jsonl(chat, fast, reference=jsonl_reference, workers=2)
    for folder in (ref, fast):
        assert _mode(folder) == 0o700
        files = list(folder.glob("*.csv"))
        assert len(files) >= len(HEADERS)
        assert {_mode(f) for f in files} == {0o600}, folder
    # an existing folder open to everyone is closed, an old file with a wide mode too
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    (old / "messages.csv").write_text("stale")
    (old / "messages.csv").chmod(0o644)
    csv_folder(old)
    write_csv(load_conversations(chat, "jsonl"), old)
    assert _mode(old) == 0o700 and _mode(old / "messages.csv") == 0o600


def test_a_symlinked_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "csv"
    link.symlink_to(elsewhere)
    with pytest.raises(InvalidInputError) as e:
        csv_folder(link)
    assert e.value.field == "csv_dir" and "symlink" in str(e.value)
    assert list(elsewhere.iterdir()) == []


def test_a_symlink_planted_in_the_folder_is_refused_and_its_target_untouched(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("do not overwrite")
    folder = tmp_path / "csv"
    folder.mkdir()
    (folder / "messages.csv").symlink_to(target)
    with pytest.raises(InvalidInputError) as e:
        csv_folder(folder)
    assert e.value.field == "csv_dir" and "messages.csv" in str(e.value)
    # planted after the check (a race): the writer itself does not follow it
    os.unlink(folder / "messages.csv")
    csv_folder(folder)
    (folder / "messages.csv").symlink_to(target)
    with pytest.raises(InvalidInputError) as e:
        write_csv(load_conversations(_chat(tmp_path / "chat.jsonl"), "jsonl"), folder)
    assert e.value.field == "csv_dir" and "symlink" in str(e.value)
    assert target.read_text() == "do not overwrite"


def test_cli_refuses_a_symlinked_csv_dir_before_anything(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "csv"
    link.symlink_to(elsewhere)
    from tests.processes import free_port

    # its own home and free ports: were the link followed, no other server could be reached
    env = {**os.environ, "GRAPHMEM_HOME": str(tmp_path / "home"), "COLUMNS": "1000",
           "GRAPHMEM_NEO4J_BOLT_PORT": str(free_port()), "GRAPHMEM_NEO4J_HTTP_PORT": str(free_port())}
    env.pop("GRAPHMEM_NEO4J_PASSWORD", None)
    res = subprocess.run([sys.executable, "-m", "graphmem", "neo4j", "import", str(_chat(tmp_path / "c.jsonl")),
                          "--csv-dir", str(link)], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 1 and "field 'csv_dir'" in res.stderr and "symlink" in res.stderr, res.stderr
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "home" / "neo4j").exists()
