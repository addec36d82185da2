"""Causal consistency and lost commits (what a cluster or Aura needs), on the real Neo4j.

- Reads and writes share the driver's bookmark manager, so a read after a write waits for it
  on whichever cluster member serves the read.
- A write whose connection drops while the commit is in flight (the driver raises
  ``IncompleteCommit``: done or not, nobody knows) is run again; graphmem's writes are
  idempotent, so the graph ends the same as with one clean commit. The drop is real: the
  driver talks to Neo4j through a TCP proxy that forwards the COMMIT and then cuts the
  connection before the server's answer gets back.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from graphmem.store.db import Store, open_driver
from graphmem.groups.service import append_messages

pytestmark = pytest.mark.neo4j

#: A Bolt COMMIT message: chunk of 2 bytes (struct marker 0xB0, signature 0x12), end marker.
BOLT_COMMIT = b"\x00\x02\xb0\x12\x00\x00"


class CommitDropper:
    """TCP proxy to Neo4j's Bolt port; when armed, the next COMMIT reaches the server but its
    answer never reaches the client: the proxy closes the client connection instead."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.armed = 0
        self.drops = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            state = {"dropping": False}
            threading.Thread(target=self._client_to_server, args=(client, upstream, state), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(upstream, client, state), daemon=True).start()

    def _client_to_server(self, client: socket.socket, upstream: socket.socket, state: dict) -> None:
        try:
            while data := client.recv(65536):
                drop = False
                if BOLT_COMMIT in data:
                    with self._lock:
                        if self.armed:
                            self.armed -= 1
                            drop = True
                if drop:
                    state["dropping"] = True  # before the server can answer
                    upstream.sendall(data)
                    time.sleep(0.5)  # the server commits
                    self.drops += 1
                    client.close()
                    upstream.close()
                    return
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.close()
                except OSError:
                    pass

    def _server_to_client(self, upstream: socket.socket, client: socket.socket, state: dict) -> None:
        try:
            while data := upstream.recv(65536):
                if state["dropping"]:
                    return
                client.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self._server.close()


def messages(n: int) -> list[dict]:
    return [{"id": f"c{i}", "speaker": ["Ann", "Bo"][i % 2], "text": f"message number {i} about the plan",
             "ts": f"2026-04-01T10:{i:02d}:00"} for i in range(n)]


def test_reads_and_writes_share_the_bookmark_manager(store, schema, group_id):
    manager = store.driver.execute_query_bookmark_manager
    assert store.bookmark_manager is manager
    before = set(manager.get_bookmarks())
    store.write_tx(lambda tx: tx.run("MERGE (g:Group {id: $g}) SET g.name = 'bookmarks'", g=group_id).consume())
    after = set(manager.get_bookmarks())
    assert after and after != before  # the write session handed its bookmark to the shared manager
    # a session opened by the Store (reads and writes alike) starts from the manager's bookmarks
    with store.session(read=True) as s:
        assert s.run("MATCH (g:Group {id: $g}) RETURN g.name AS n", g=group_id).single()["n"] == "bookmarks"
    assert store.read_text("MATCH (g:Group {id: $g}) RETURN g.name AS n", g=group_id) == [{"n": "bookmarks"}]


def test_commit_lost_to_a_dropped_connection_is_run_again(store, schema, embedder, group_id):
    from graphmem.core.config import get_settings

    settings = get_settings()
    host, port = settings.neo4j_uri.split("://", 1)[1].rsplit(":", 1)
    proxy = CommitDropper((host, int(port)))
    proxied = settings.model_copy(update={"neo4j_uri": f"bolt://127.0.0.1:{proxy.port}"})
    driver = open_driver(proxied)
    try:
        flaky = Store(driver, store.database)
        proxy.armed = 3  # the first three commits: the two reads that place the messages, one write
        summary = append_messages(flaky, embedder, group_id, messages(6))
        assert proxy.drops == 3  # they really were cut off
        assert summary.messages_written in (0, 6)  # the re-run found them written, or wrote them
    finally:
        driver.close()
        proxy.close()
    counts = store.read_text(
        "MATCH (m:Message {group_id: $g}) WITH count(m) AS messages "
        "OPTIONAL MATCH (:Message {group_id: $g})-[n:NEXT]->() WITH messages, count(n) AS next "
        "OPTIONAL MATCH (p:Person {group_id: $g}) RETURN messages, next, count(p) AS persons", g=group_id)
    assert counts == [{"messages": 6, "next": 5, "persons": 2}]
    # and the same data again through a clean connection changes nothing
    again = append_messages(store, embedder, group_id, messages(6))
    assert (again.messages_written, again.messages_skipped) == (0, 6)
