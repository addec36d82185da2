"""Shared fixtures (for tests/unit and tests/integration alike).

tests/unit needs no database; every test under tests/integration is marked ``neo4j``
(``pytest -m "not neo4j" tests`` runs the unit tests only). Integration tests talk to the real local Neo4j server (``make neo4j`` / ``graphmem neo4j
start`` + ``graphmem schema apply``); each test works under its own fresh ``group_id`` and
removes only that group's nodes afterwards. Language-model calls go to a scripted local
OpenAI-compatible HTTP server (``tests/scripted_llm.py``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import importlib.util

pytest_plugins = ["tests.scripted_llm"] if importlib.util.find_spec("tests.scripted_llm") else []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/integration with ``neo4j`` (it needs the real server)."""
    for item in items:
        if "integration" in item.path.parts:
            item.add_marker(pytest.mark.neo4j)


@pytest.fixture(scope="session")
def driver():
    from graphmem.core.config import get_settings
    from graphmem.store.db import open_driver

    d = open_driver(get_settings())  # fails loudly (StoreUnavailableError) when Neo4j is not running
    yield d
    d.close()


@pytest.fixture(scope="session")
def store(driver):
    from graphmem.store.db import Store

    return Store(driver)


@pytest.fixture(scope="session")
def embedder():
    from graphmem.core.config import get_settings
    from graphmem.core.embed import Embedder

    return Embedder.from_settings(get_settings())


@pytest.fixture(scope="session")
def runtime(store, embedder):
    """The session's Runtime over the real store and embedder (no models; see
    ``tests.factories.runtime_of`` for one with a scripted answer model)."""
    from tests.factories import runtime_of

    return runtime_of(store, embedder)


@pytest.fixture(scope="session", autouse=False)
def schema(store, embedder):
    from graphmem.store.schema import apply_schema
    from graphmem.verbatim.order import backfill_order

    return apply_schema(store, embedder.dimension, migrate=backfill_order)


def delete_group(store, group_id: str) -> None:
    """Remove every node of one group (and the Group node), nothing else."""
    from graphmem.groups.service import forget_group

    forget_group(store, group_id)


@pytest.fixture
def group_id(store, schema) -> Iterator[str]:
    """A fresh group id for one test; its nodes are deleted afterwards."""
    gid = f"test-{uuid.uuid4().hex[:12]}"
    yield gid
    delete_group(store, gid)


@pytest.fixture
def make_group(store, schema) -> Iterator:
    """Factory for several fresh group ids in one test (all deleted afterwards)."""
    made: list[str] = []

    def make(prefix: str = "test") -> str:
        gid = f"{prefix}-{uuid.uuid4().hex[:12]}"
        made.append(gid)
        return gid

    yield make
    for gid in made:
        delete_group(store, gid)
