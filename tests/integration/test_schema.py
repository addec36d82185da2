"""Schema application and the Cypher template contract."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from graphmem.store.db import all_templates, cypher
from graphmem.store.schema import apply_schema

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.neo4j
def test_schema_apply_is_idempotent_and_online(store, embedder, schema):
    again = apply_schema(store, embedder.dimension)
    assert again.constraints == schema.constraints
    assert again.indexes == schema.indexes
    assert set(again.indexes.values()) == {"ONLINE"}
    for name in ("message_text", "derived_content", "message_embedding", "derived_embedding"):
        assert name in again.indexes
    for name in ("group_id", "person_id", "session_id", "message_id", "derived_id"):
        assert name in again.constraints
    vec = [r for r in store.read("meta/list_indexes") if r["name"] == "message_embedding"][0]
    assert vec["options"]["indexConfig"]["vector.dimensions"] == embedder.dimension


@pytest.mark.neo4j
def test_every_template_compiles(store):
    """EXPLAIN every non-schema template with typed dummy parameters."""
    for name in all_templates():
        if name.startswith("schema/"):
            continue
        text = cypher(name)
        params = {p: None for p in set(re.findall(r"\$(\w+)", text))}
        store.read_text("EXPLAIN " + text, **params)


def test_every_template_is_used_and_documented():
    sources = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("graphmem", "api")
        if (ROOT / folder).exists()
        for p in (ROOT / folder).rglob("*.py")
    )
    unused = []
    for name in all_templates():
        text = cypher(name)
        assert text.lstrip().startswith("//"), f"{name} must start with a comment"
        for param in set(re.findall(r"\$(\w+)", text)):
            head = "\n".join(line for line in text.splitlines() if line.startswith("//"))
            assert f"${param}" in head, f"{name}: parameter ${param} not documented in its header"
        if name.startswith("schema/") or name.startswith("browser/"):
            continue  # run by name order / by analysts; covered by their own tests
        if f'"{name}"' not in sources:
            unused.append(name)
    assert not unused, f"templates nothing uses: {unused}"
