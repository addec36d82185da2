"""Concurrent writers into one group through a served API (issue 24, point 12): every write
succeeds (deadlock victims are run again inside the Store), no message is lost and the
conversation chain has no fork. The 200-writer version is ``bench/load_writers.py``."""

from __future__ import annotations

import importlib.util
import os
import uuid

import pytest

from tests.processes import ROOT, free_port, start_serve, stop_serve

pytestmark = pytest.mark.neo4j


def load_writers():
    spec = importlib.util.spec_from_file_location("load_writers", ROOT / "bench" / "load_writers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_thirty_concurrent_appends_all_succeed_without_loss_or_fork(store, schema):
    bench = load_writers()
    port = free_port()
    proc = start_serve(port, {**os.environ, "HF_HUB_OFFLINE": "1", "GRAPHMEM_DERIVE_JOBS_ENABLED": "false"})
    group = f"writers-{uuid.uuid4().hex[:10]}"
    try:
        statuses, errors, _ = bench.write_all(f"http://127.0.0.1:{port}", "", group, writers=30, messages=2,
                                              per_request=1, deadline_s=240)
        assert dict(statuses) == {200: 60}, errors
        expected = {f"w{w:03d}-{i:03d}" for w in range(30) for i in range(2)}
        figures = bench.check_store(store, group, expected)
        assert figures == {"stored": 60, "lost": 0, "duplicates": 0, "forks": 0, "heads": 1, "chain_length": 60}
    finally:
        stop_serve(proc)
        store.driver.execute_query("MATCH (n {group_id: $g}) DETACH DELETE n", g=group)
        store.driver.execute_query("MATCH (n:Group {id: $g}) DETACH DELETE n", g=group)
