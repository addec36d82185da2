"""Index states: wait until Neo4j reports every index ONLINE (used by the schema and the group scopes)."""

from __future__ import annotations

import time

from graphmem.core.errors import StoreUnavailableError
from graphmem.store.db import Store

__all__ = ["wait_online"]


def wait_online(store: Store, timeout_s: float = 300.0) -> dict[str, str]:
    """Poll ``SHOW INDEXES`` until every index is ONLINE; return name -> state."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = store.read("meta/list_indexes")
        states = {r["name"]: r["state"] for r in rows}
        failed = [n for n, st in states.items() if st == "FAILED"]
        if failed:
            raise StoreUnavailableError(f"index(es) FAILED: {', '.join(failed)}")
        if all(st == "ONLINE" for st in states.values()):
            return states
        if time.monotonic() > deadline:
            pending = {n: st for n, st in states.items() if st != "ONLINE"}
            raise StoreUnavailableError(f"indexes not ONLINE after {timeout_s}s: {pending}")
        time.sleep(0.5)
