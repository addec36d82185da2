"""A library user's first writes into a young store (no edit, no derived memory yet) log no
driver warning: "property/label does not exist" is that store's normal state, so the driver asks
the server not to send those notifications (graphmem.store.db.open_driver); nothing is
silenced by the caller here."""

from __future__ import annotations

import logging

import pytest

from graphmem.core.config import get_settings
from graphmem.facade import Memory

pytestmark = pytest.mark.neo4j


def test_a_library_ingest_into_a_young_group_logs_no_driver_warning(schema, group_id, caplog):
    logging.getLogger("neo4j.notifications").setLevel(logging.NOTSET)  # whatever a shell set before
    caplog.set_level(logging.INFO, logger="neo4j")
    with Memory.open(get_settings()) as memory:
        memory.append(group_id, [{"id": "m1", "speaker": "Ana", "text": "the ferry leaves at nine",
                                  "ts": "2026-01-01T09:00:00Z"}])
        memory.append(group_id, [{"id": "m1", "speaker": "Ana", "text": "the ferry leaves at nine",
                                  "ts": "2026-01-01T09:00:00Z"}])  # a redelivery reads text_history
        memory.records(group_id)  # no Derived node in this group
        memory.forget_group(group_id)
    noted = [r.getMessage()[:160] for r in caplog.records if r.name.startswith("neo4j.notifications")]
    assert not noted, noted
