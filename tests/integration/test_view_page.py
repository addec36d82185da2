"""The graph page in a real headless Chromium (Debian's /usr/bin/chromium driven by the
``playwright`` package; no browser download): the API is served by uvicorn on a free local
port, the page draws the sample chat's people and records, a click on a record in the graph
shows its source messages, and every request stays on the local server (no CDN).

A screenshot is saved to ``test-artifacts/view_page.png`` (git-ignored).
"""

from __future__ import annotations

import shutil
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from graphmem.core.config import Settings
from tests.conftest import delete_group
from tests.test_graphview_fixtures import HEADS, RECORDS, build_trail, text_of

pytestmark = pytest.mark.neo4j

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]

sync_api = pytest.importorskip("playwright.sync_api", reason="the test extra installs playwright")
if not Path(CHROMIUM).exists():
    pytest.skip("no Chromium at /usr/bin/chromium (apt-get install chromium)", allow_module_level=True)



def _wait_for(page, expression: str, arg=None, timeout: float = 30_000) -> None:
    """Poll ``expression`` (a JS expression, or a function of ``arg``) until it is truthy.

    Through ``page.evaluate`` (the DevTools protocol), not ``page.wait_for_function``, whose
    predicate runs through ``eval`` inside the page: the page's Content-Security-Policy
    (``script-src 'self'``, no ``unsafe-eval``) rightly refuses that, and the page's own scripts
    must keep working under it.
    """
    deadline = time.monotonic() + timeout / 1000
    while True:
        value = page.evaluate(expression, arg) if arg is not None else page.evaluate(expression)
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} ms waiting for {expression!r}")
        time.sleep(0.05)

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def trail(store, embedder, schema):
    gid = f"test-view-{uuid.uuid4().hex[:12]}"
    build_trail(store, embedder, gid)
    yield gid
    delete_group(store, gid)


@pytest.fixture(scope="module")
def server(schema):
    """The real app under uvicorn in a thread; yields its base URL."""
    import uvicorn

    from api.main import create_app

    port = free_port()
    config = uvicorn.Config(create_app(Settings(_env_file=None)), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="on")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1500, "height": 920}, device_scale_factor=1)
    pg = context.new_page()
    pg.requests = []  # every URL the page asks for
    pg.errors = []
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    context.close()


def open_view(page, server: str, gid: str, query: str = "") -> None:
    page.goto(f"{server}/groups/{gid}/view{query}")
    _wait_for(page, "window.graphmemView && window.graphmemView.ready", timeout=30_000)


def drawn(page) -> dict:
    return page.evaluate("""() => {
        const cy = window.graphmemView.cy;
        return {
          nodes: cy.nodes().map(n => n.data('name')),
          records: cy.edges("[kind = 'record']").map(e => ({id: e.data('record'), label: e.data('label'),
                     source: e.source().data('key'), owner: e.target().data('key'), state: e.data('state'),
                     colour: e.data('colour')})),
          talk: cy.edges("[kind = 'talk']").map(e => [e.source().data('key'), e.target().data('key'), e.data('total')]),
        };
    }""")


def click_record_edge(page, record_id: str) -> None:
    """Click the record's edge where the page draws it: the first point along its curve (from
    the middle outwards) where Cytoscape's own hit test finds this edge and nothing on top."""
    point = page.evaluate("""(id) => {
        const cy = window.graphmemView.cy;
        const e = cy.$id('r:' + id);
        const box = cy.container().getBoundingClientRect();
        const S = e.renderedSourceEndpoint(), T = e.renderedTargetEndpoint(), M = e.renderedMidpoint();
        const C = {x: 2 * M.x - (S.x + T.x) / 2, y: 2 * M.y - (S.y + T.y) / 2};
        const pan = cy.pan(), zoom = cy.zoom();
        for (const t of [0.5, 0.45, 0.55, 0.4, 0.6, 0.35, 0.65, 0.3, 0.7]) {
          const x = (1 - t) * (1 - t) * S.x + 2 * (1 - t) * t * C.x + t * t * T.x;
          const y = (1 - t) * (1 - t) * S.y + 2 * (1 - t) * t * C.y + t * t * T.y;
          const hit = cy.renderer().findNearestElement((x - pan.x) / zoom, (y - pan.y) / zoom, true, false);
          if (hit && hit.id() === e.id()) return {x: box.left + x, y: box.top + y};
        }
        return null;
    }""", record_id)
    assert point, f"record {record_id} is drawn nowhere a click reaches"
    page.mouse.click(point["x"], point["y"])
    _wait_for(page, "(id) => window.graphmemView.selected === id", arg=record_id, timeout=5_000)


def test_page_draws_people_and_records_and_shows_provenance_on_click(page, server, trail):
    open_view(page, server, trail)
    g = drawn(page)
    assert sorted(g["nodes"]) == sorted(["Ben", "Cara", "Dad", "Mom", trail])
    assert sorted(r["id"] for r in g["records"]) == HEADS
    ben_about_cara = next(r for r in g["records"] if r["id"] == "e1.5")
    assert (ben_about_cara["source"], ben_about_cara["owner"]) == ("ben", "cara")
    assert ben_about_cara["label"].startswith("Cara plans around everyone")
    decision = next(r for r in g["records"] if r["id"] == "e3.1")
    assert (decision["source"], decision["owner"]) == ("dad", "GROUP")
    assert decision["colour"] != ben_about_cara["colour"]  # coloured by layer
    assert ["ben", "dad", 4] in g["talk"]
    assert "Ben plans" not in page.inner_text("#records")
    assert RECORDS["e3.1"][5] in page.inner_text("#records")

    # a click on the decision's arrow in the graph shows its content, time and source messages
    click_record_edge(page, "e3.1")
    page.wait_for_selector("#detail-messages li", timeout=15_000)
    # every piece of chat text the page writes is its own bidirectional island: a name or a
    # message holding RIGHT-TO-LEFT OVERRIDE (U+202E) can reorder only itself, never "who said it"
    loose = page.evaluate("""() => {
      const loose = [];
      for (const root of [document.getElementById('records'), document.getElementById('details')]) {
        const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
          if (!n.textContent.trim() || n.parentElement.closest('bdi, option, h2, h3, button')) continue;
          loose.push(n.textContent.slice(0, 40));
        }
      }
      const probe = document.createElement('bdi');
      document.body.append(probe);
      const isolated = getComputedStyle(probe).unicodeBidi === 'isolate';
      probe.remove();
      return {loose, isolated};
    }""")
    assert loose == {"loose": [], "isolated": True}, loose
    details = page.inner_text("#details")
    assert RECORDS["e3.1"][5] in details
    assert text_of("s3-01") in details and text_of("s3-05") in details  # verbatim
    assert "Dad about" in details and "2026-05-02 08:30 (+02:00)" in details  # the chat's own time
    assert "History (2 states)" in details and RECORDS["e1.4"][5] in details
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "view_page.png"), full_page=False)

    # a cross-person record from the list: Cara's claim about Ben, with the message that made it
    page.click("#records li[data-record='e2.3']")
    _wait_for(page, "document.querySelector('#detail-content') && "
                           "document.querySelector('#detail-content').textContent.includes('climbing course in June')")
    assert text_of("s2-04") in page.inner_text("#detail-messages")

    assert not page.errors, page.errors
    outside = [u for u in page.requests if not u.startswith(server)]
    assert not outside, f"the page reached beyond the local server: {outside}"
    assert any(u.endswith("/static/graphmem/vendor/cytoscape.min.js") for u in page.requests)


def pick_person(page, person_id: str) -> None:
    """Type a person id into the person filter (a text field with the shown people as
    suggestions: a large group's page shows only the most active) and commit it."""
    page.fill("#f-person", person_id)
    page.dispatch_event("#f-person", "change")


def test_page_filters_person_layer_session_and_full_history(page, server, trail):
    open_view(page, server, trail)
    pick_person(page, "cara")
    _wait_for(page, "window.graphmemView.graph.filters.person === 'cara'")
    g = drawn(page)
    assert g["records"] and all("cara" in (r["source"], r["owner"]) for r in g["records"])
    assert {r["id"] for r in g["records"]} == {"e1.2", "e1.5", "e1.6", "e2.3", "e3.4"}
    assert all("cara" in (a, b) for a, b, _ in g["talk"])
    assert "person=cara" in page.url  # the filters travel in the page URL

    page.check("input[name=mode][value=full]")
    _wait_for(page, "window.graphmemView.graph.filters.mode === 'full'")
    pick_person(page, "ben")
    _wait_for(page, "window.graphmemView.graph.filters.person === 'ben'")
    g = drawn(page)
    states = {r["id"]: r["state"] for r in g["records"]}
    assert states["e1.3"] == states["e2.1"] == "superseded" and states["e3.2"] == "head"

    page.select_option("#f-session", "s2")
    _wait_for(page, "window.graphmemView.graph.filters.session === 's2'")
    assert {r["id"] for r in drawn(page)["records"]} == {"e2.1", "e2.3", "e2.4"}

    page.click("#f-reset")
    _wait_for(page, "window.graphmemView.graph.filters.person === null && "
                           "window.graphmemView.graph.filters.mode === 'head'")
    page.uncheck("#f-layers input[value=per_speaker_core]")
    page.uncheck("#f-layers input[value=per_speaker_profile]")
    _wait_for(page, "JSON.stringify(window.graphmemView.graph.filters.layers) === "
                           "JSON.stringify(['group_interaction', 'group_insight'])")
    assert sorted(r["id"] for r in drawn(page)["records"]) == ["e2.5", "e3.1"]
    assert not page.errors, page.errors


def test_page_reads_filters_from_its_url_and_reports_an_unknown_group(page, server, trail):
    open_view(page, server, trail, "?person=mom&mode=full")
    assert page.evaluate("window.graphmemView.graph.filters.person") == "mom"
    assert {r["id"] for r in drawn(page)["records"]} == {"e1.1", "e1.2", "e2.2", "e3.3"}

    page.goto(f"{server}/groups/no-such-group-{uuid.uuid4().hex[:6]}/view")
    _wait_for(page, "document.getElementById('status').textContent.includes('404')")
    assert "no group" in page.inner_text("#status")
