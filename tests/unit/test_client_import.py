"""The typed client is light: importing it loads neither the database driver, numpy, the
embedding runtime nor graphmem's store and query stack (a fresh interpreter each time)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.processes import ROOT

HEAVY = ("neo4j", "numpy", "onnxruntime", "graphmem.store.db", "graphmem.query", "graphmem.recall.search",
         "graphmem.groups.jobs", "graphmem.derived.memory")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_client_import_loads_no_driver_numpy_or_query_stack() -> None:
    loaded = set(_loaded_after("import graphmem.client"))
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_result_models_are_the_same_classes_under_their_old_paths() -> None:
    from graphmem.client import GraphMemClient  # noqa: F401
    from graphmem.core import results
    from graphmem.derived.memory import DerivedRecord
    from graphmem.groups.jobs import DeriveJob
    from graphmem.groups.service import ForgetSummary
    from graphmem.query import AskResult, PersonMemory, RecordProvenance, RosterMember
    from graphmem.recall.search import MessageHit, SearchResult

    assert (AskResult, PersonMemory, RecordProvenance, RosterMember, SearchResult, MessageHit,
            DerivedRecord, DeriveJob, ForgetSummary) == (
        results.AskResult, results.PersonMemory, results.RecordProvenance, results.RosterMember,
        results.SearchResult, results.MessageHit, results.DerivedRecord, results.DeriveJob,
        results.ForgetSummary)
