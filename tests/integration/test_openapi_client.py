"""The OpenAPI document states the truth: a client generated from it by openapi-python-client
(the ``test`` extra) drives the happy path and the declared errors against the real API.

The generated package is built from ``app.openapi()`` into a temporary folder (offline: the
generator needs no network) and sends its requests through FastAPI's TestClient (an
``httpx.Client``), so the generated code parses every answer itself: a 422 or a 404 comes back
as the generated ``Error`` model, not as a crash. What the generated client cannot send (a
body that is not JSON, an unknown query parameter) is sent raw, parsed by the generated
module's own response builder, and checked against the document with jsonschema.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from graphmem.core.config import Settings
from tests.test_query_fixtures import build_family

pytestmark = pytest.mark.neo4j
KEY = "test-openapi-key"
WHEN = datetime(2026, 5, 10, 8, 0, tzinfo=timezone.utc)  # ts is format date-time: the generated model takes a datetime
PACKAGE = "gm_openapi_client"


def _generator() -> str:
    exe = Path(sys.executable).with_name("openapi-python-client")
    found = str(exe) if exe.exists() else shutil.which("openapi-python-client")
    if found is None:
        pytest.skip("openapi-python-client is not installed (pip install 'graphmem[test]')")
    return found


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return create_app(Settings(_env_file=None)).openapi()


@pytest.fixture(scope="module")
def gen(spec, tmp_path_factory) -> Any:
    """The generated client package, imported."""
    tool = _generator()
    root = tmp_path_factory.mktemp("openapi")
    (root / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    (root / "config.yaml").write_text(f"project_name_override: gm-openapi-client\npackage_name_override: {PACKAGE}\n"
                                      "post_hooks: []\n", encoding="utf-8")
    run = subprocess.run([tool, "generate", "--path", str(root / "spec.json"), "--config", str(root / "config.yaml"),
                          "--output-path", str(root / "out")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr
    sys.path.insert(0, str(root / "out"))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root / "out"))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def api(gen: Any, http: TestClient, key: str | None = KEY) -> Any:
    client = gen.AuthenticatedClient(base_url="http://testserver", token=key or "", prefix="",
                                     auth_header_name="X-API-Key", raise_on_unexpected_status=True)
    if key:
        http.headers["X-API-Key"] = key
    else:
        http.headers.pop("X-API-Key", None)
    return client.set_httpx_client(http)


def mod(name: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.{name}")


def check_error(spec: dict[str, Any], body: Any) -> None:
    """``body`` matches the document's Error component (jsonschema, not the generated code)."""
    import jsonschema

    jsonschema.validate(body, {**spec["components"]["schemas"]["Error"], "components": spec["components"]})


def test_document_declares_one_error_shape_and_named_operations(spec):
    names = {op["operationId"] for ops in spec["paths"].values() for op in ops.values()}
    assert {"append_messages", "search_messages", "ask", "roster", "list_groups", "list_jobs", "get_message",
            "person_memory", "record_provenance",
            "forget_person", "derive", "get_job", "health", "group_graph", "group_summary"} <= names
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    error = spec["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {"detail", "error", "field"} and set(error["required"]) == {"detail", "error"}
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            assert op.get("tags"), (method, path)
            for code, response in op["responses"].items():
                if code.startswith(("4", "5")):
                    ref = response["content"]["application/json"]["schema"]["$ref"]
                    assert ref == "#/components/schemas/Error", (method, path, code)
            codes = set(op["responses"])
            if path != "/health":
                assert {"401", "422", "503"} <= codes, (method, path)
            if method in ("post", "delete"):
                assert {"413", "415"} <= codes, (method, path)
    assert "409" in spec["paths"]["/groups/{group_id}/messages"]["post"]["responses"]


def test_generated_client_happy_path_and_declared_errors(gen, spec, store, embedder, make_group, tmp_path):
    gid, other = make_group("oapi"), make_group("oapi-other")
    build_family(store, embedder, gid)
    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"keys": [{"name": "other-only", "key": "scoped-key", "groups": [other],
                                          "read_only": False}]}), encoding="utf-8")
    settings = Settings(_env_file=None, api_key=KEY, api_keys_file=keys, api_max_request_mb=0.01)
    Error = mod("models").Error
    with TestClient(create_app(settings)) as http:
        c = api(gen, http)
        # --- happy path through the generated functions and models
        health = mod("api.health.health").sync(client=c)
        assert health.status == "ok"
        models = mod("models")
        body = models.MessagesCreate(messages=[models.NewMessage(id="z1", speaker="Ben", text="Pine Hollow is booked.",
                                                                  ts=WHEN, session="s9")])
        wrote = mod("api.groups.append_messages").sync(gid, client=c, body=body)
        assert wrote.messages_written == 1
        hits = mod("api.search.search_messages").sync(gid, client=c, q="Pine Hollow", k=3)
        assert hits.hits[0].id == "z1"
        roster = mod("api.groups.roster").sync(gid, client=c, limit=2)
        assert [p.id for p in roster.persons] == ["Ben", "Cara"] and roster.truncated is True
        rest = mod("api.groups.roster").sync(gid, client=c, limit=10, cursor=roster.next_cursor)
        assert [p.id for p in rest.persons] == ["Dad", "Eli", "Mom"] and rest.truncated is False
        whole = mod("api.groups.get_message").sync(gid, "z1", client=c)
        assert whole.text == "Pine Hollow is booked." and whole.text_chars == 22
        groups = mod("api.groups.list_groups").sync(client=api(gen, http, "scoped-key"))
        assert groups.groups == []  # its one group holds nothing yet; never another key's group
        c = api(gen, http)
        assert gid in {g.id for g in mod("api.groups.list_groups").sync(client=c, limit=1000).groups}
        ask = mod("api.ask.ask")
        full = ask.sync(gid, client=c, body=models.AskCreate(question="Which trail does Ben prefer?"))
        assert isinstance(full, models.AskResult) and full.answer is None and full.record_ids
        compact = ask.sync(gid, client=c, body=models.AskCreate(question="Which trail does Ben prefer?"),
                           view=models.AskView.COMPACT)
        assert isinstance(compact, models.CompactAnswer)
        assert [r.id for r in compact.records] and compact.evidence == full.evidence
        memory = mod("api.persons.person_memory").sync(gid, "Mom", client=c)
        assert memory.person.id == "Mom"
        prov = mod("api.records.record_provenance").sync(gid, "r-ben-ridge", client=c)
        assert [m.id for m in prov.messages] == ["m01", "m06"]

        # --- every declared error parses into the generated Error model
        def error(r: Any, status: int, kind: str, field: str | None = None) -> Any:
            assert r.status_code == status, (r.status_code, r.content)
            assert isinstance(r.parsed, Error), r.parsed
            assert r.parsed.error == kind and r.parsed.detail, r.parsed
            if field is not None:
                assert r.parsed.field == field
            check_error(spec, json.loads(r.content))
            return r.parsed

        search = mod("api.search.search_messages")
        e = error(search.sync_detailed(gid, client=c, q="x", k=500), 422, "InvalidInputError", "k")
        assert "100" in e.detail
        e = error(search.sync_detailed(gid.upper(), client=c, q="x"), 404, "NotFoundError")
        assert e.detail == f"no group {gid.upper()!r}; did you mean {gid!r} (family trip)?"
        e = error(mod("api.persons.person_memory").sync_detailed(gid, "Momm", client=c), 404, "NotFoundError")
        assert e.detail.endswith("did you mean 'Mom'?")
        moved = models.MessagesCreate(messages=[models.NewMessage(id="z1", speaker="Cara", text="Pine Hollow is booked.",
                                                                   ts=WHEN, session="s9")])
        error(mod("api.groups.append_messages").sync_detailed(gid, client=c, body=moved), 409, "ConflictError")
        big = models.MessagesCreate(messages=[models.NewMessage(id="z2", speaker="Ben", text="x" * 20_000,
                                                                 ts=WHEN)])
        error(mod("api.groups.append_messages").sync_detailed(gid, client=c, body=big), 413, "RequestTooLarge")
        e = error(mod("api.groups.derive").sync_detailed(gid, client=c), 503, "LLMError")
        error(mod("api.jobs.get_job").sync_detailed("no-such-job", client=c), 404, "NotFoundError")
        error(search.sync_detailed(gid, client=api(gen, http, None), q="x"), 401, "Unauthorized")
        error(search.sync_detailed(gid, client=api(gen, http, "scoped-key"), q="x"), 403, "ForbiddenError")
        c = api(gen, http)

        # --- what the generated client cannot send: raw, parsed by its own response builder
        raw = http.get(f"/groups/{gid}/search", params={"q": "seed", "limit": 5})
        e = error(search._build_response(client=c, response=raw), 422, "InvalidInputError", "limit")
        assert "unknown query parameter" in e.detail and "allowed: cursor, expand, k, mode, pool, q" in e.detail
        raw = http.post(f"/groups/{gid}/ask", json={"question": "who?", "asOf": "2026-01-01T00:00:00Z"})
        e = error(ask._build_response(client=c, response=raw), 422, "InvalidInputError", "asOf")
        assert "did you mean 'as_of'?" in e.detail
        raw = http.post(f"/groups/{gid}/ask", content=b"question", headers={"content-type": "text/plain"})
        error(ask._build_response(client=c, response=raw), 415, "UnsupportedMediaType")
        raw = http.get("/health", params={"verbose": "1"})
        error(mod("api.health.health")._build_response(client=c, response=raw), 422, "InvalidInputError", "verbose")
    # nothing of the refused calls was written: z1 still Ben's, no z2
    rows = store.read_text("MATCH (m:Message {group_id: $g}) WHERE m.id IN ['z1', 'z2'] RETURN m.id AS id, "
                           "m.speaker AS speaker", g=gid)
    assert rows == [{"id": "z1", "speaker": "Ben"}]


def test_typed_client_and_cli_compact_view(store, embedder, group_id):
    """``gm.ask(..., view="compact")`` (typed client) and ``graphmem ask --json --view compact``
    answer the same compact form as the API's ``?view=compact``."""
    from graphmem.cli import app
    from graphmem.client import GraphMemClient
    from graphmem.core import errors
    from graphmem.query import AskResult, CompactAnswer
    from typer.testing import CliRunner

    build_family(store, embedder, group_id)
    q = "Which trail does Ben prefer?"
    with TestClient(create_app(Settings(_env_file=None))) as http:
        gm = GraphMemClient("http://testserver", http=http)
        compact = gm.ask(group_id, q, view="compact")
        full = gm.ask(group_id, q)
        assert isinstance(compact, CompactAnswer) and isinstance(full, AskResult)
        assert compact == full.compact()
        raw = http.post(f"/groups/{group_id}/ask", params={"view": "compact"}, json={"question": q}).json()
        assert CompactAnswer.model_validate(raw) == compact
        with pytest.raises(errors.InvalidInputError) as bad:
            gm.ask(group_id, q, view="short")  # type: ignore[call-overload]
        assert bad.value.field == "view"
    run = CliRunner().invoke(app, ["ask", "--group", group_id, q, "--json", "--view", "compact"])
    assert run.exit_code == 0, run.output
    assert CompactAnswer.model_validate_json(run.stdout) == compact
