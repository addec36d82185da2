"""The first-load importer's aside folder (graphmem.store.local_server): the database it moves
aside comes back when the importing process is gone, and only then (no server, no database)."""

from __future__ import annotations

import json
import subprocess
import sys

from graphmem.core.config import Settings
from graphmem.store.local_server import ASIDE_STATE, LocalServer


def server_with_database(tmp_path) -> LocalServer:
    server = LocalServer(Settings(_env_file=None, home=tmp_path / "gm", neo4j_password="x"))
    store, tx = server.database_dirs()
    store.mkdir(parents=True)
    (store / "neostore").write_text("old store")  # the database before the import; no tx logs yet
    return server


def dead_token() -> str:
    """The token of a process of this machine that has exited."""
    proc = subprocess.run([sys.executable, "-c", "from graphmem.core.process import owner_token; print(owner_token())"],
                          capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def test_a_dead_imports_database_is_put_back_and_what_it_wrote_removed(tmp_path) -> None:
    server = server_with_database(tmp_path)
    store, tx = server.database_dirs()
    aside = server.begin_import(stopped_server=True)
    assert not store.exists() and (aside / "0" / "neostore").read_text() == "old store"
    store.mkdir(parents=True)  # what neo4j-admin had written when the process was killed
    (store / "neostore").write_text("half imported")
    tx.mkdir(parents=True)
    note = json.loads((aside / ASIDE_STATE).read_text())
    assert note["existed"] == [0] and note["stopped_server"] is True

    assert server.undo_dead_import() == []  # this process (the owner) is alive: left alone
    assert (store / "neostore").read_text() == "half imported"

    note["owner"] = dead_token()
    (aside / ASIDE_STATE).write_text(json.dumps(note))
    undone = server.undo_dead_import()
    assert len(undone) == 1 and undone[0].endswith("(it had stopped the server)")
    assert (store / "neostore").read_text() == "old store"
    assert not tx.exists() and not aside.exists()  # the importer's folder went with it
    assert server.undo_dead_import() == []


def test_an_aside_folder_without_its_note_or_of_another_machine_is_never_touched(tmp_path) -> None:
    server = server_with_database(tmp_path)
    store, _ = server.database_dirs()
    aside = server.begin_import(stopped_server=False)
    note = json.loads((aside / ASIDE_STATE).read_text())
    for kept in ({**note, "owner": "elsewhere|boot|1|1"}, None):
        if kept is None:
            (aside / ASIDE_STATE).unlink()
        else:
            (aside / ASIDE_STATE).write_text(json.dumps(kept))
        assert server.undo_dead_import() == []
        assert (aside / "0" / "neostore").exists() and not store.exists()


def test_a_finished_import_leaves_nothing_to_put_back_and_a_stopped_machine_counts_as_gone(tmp_path) -> None:
    """A finished import drops its note before its folder, so a kill while the folder goes never
    brings the old database back over the new one; an import of an earlier boot of this machine
    (the machine stopped mid-import) is undone; a new import never removes a dead one's folder,
    whatever its pid."""
    import socket

    server = server_with_database(tmp_path)
    store, _ = server.database_dirs()
    aside = server.begin_import(stopped_server=False)
    (store.mkdir(parents=True), (store / "neostore").write_text("imported"))
    server.finish_import(aside)
    assert not aside.exists() and server.undo_dead_import() == [] and (store / "neostore").read_text() == "imported"

    aside = server.begin_import(stopped_server=False)  # killed half-way, then the machine stopped
    (store.mkdir(parents=True), (store / "neostore").write_text("half imported"))
    note = json.loads((aside / ASIDE_STATE).read_text())
    note["owner"] = f"{socket.gethostname()}|an-earlier-boot|{1}|1"
    (aside / ASIDE_STATE).write_text(json.dumps(note))
    again = server.begin_import(stopped_server=False)  # after the reboot; its pid may be the same
    assert again != aside and (aside / "0" / "neostore").read_text() == "imported"  # kept
    server.put_back(again, [0])  # that import gives up
    assert len(server.undo_dead_import()) == 1  # the earlier boot's import is gone: undone
    assert (store / "neostore").read_text() == "imported" and not aside.exists()
