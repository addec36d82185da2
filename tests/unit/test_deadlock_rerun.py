"""A write transaction chosen as a deadlock victim more often than the driver retries it is run
again by the Store (graphmem.store.db._rerun_deadlocks); other errors are not."""

from __future__ import annotations

import pytest
from neo4j.exceptions import Neo4jError

from graphmem.store import db


def error(code: str) -> Neo4jError:
    return Neo4jError._hydrate_neo4j(code=code, message="ForsetiClient can't acquire ExclusiveLock")


def test_deadlock_victims_run_again_until_they_commit():
    calls = []

    def run() -> str:
        calls.append(1)
        if len(calls) < 6:
            raise error("Neo.TransientError.Transaction.DeadlockDetected")
        return "committed"

    assert db._rerun_deadlocks(run) == "committed" and len(calls) == 6


def test_other_errors_are_not_rerun_and_the_budget_ends(monkeypatch):
    calls = []

    def syntax() -> None:
        calls.append(1)
        raise error("Neo.ClientError.Statement.SyntaxError")

    with pytest.raises(Neo4jError):
        db._rerun_deadlocks(syntax)
    assert len(calls) == 1
    monkeypatch.setattr(db, "DEADLOCK_RETRY_S", 0.3)

    def always() -> None:
        raise error("Neo.TransientError.Transaction.DeadlockDetected")

    with pytest.raises(Neo4jError) as e:
        db._rerun_deadlocks(always)
    assert e.value.code == "Neo.TransientError.Transaction.DeadlockDetected"
