"""Many concurrent writers into one group through the HTTP API; prints errors, lost messages
and forks of the conversation chain.

Each writer is a thread with its own HTTP connection that appends ``--messages`` messages to
one fresh group, ``--per-request`` per ``POST /groups/{id}/messages``, all starting together.
Afterwards the store is read: every message sent must be stored once, and each channel's
``NEXT`` chain must be one path through all of them (no node with two successors or two
predecessors, one head, no cycle).

    python bench/load_writers.py --writers 200             # starts `graphmem serve` itself
    python bench/load_writers.py --url http://127.0.0.1:8000 --key $GRAPHMEM_API_KEY

Exit status 0 only when there were 0 errors, 0 lost messages and 0 forks (issue 24, point 12).
Figures: wall time, requests per second and the status counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphmem.core.config import get_settings  # noqa: E402
from graphmem.store.db import Store, open_driver  # noqa: E402


def write_all(url: str, key: str, group: str, writers: int, messages: int, per_request: int,
              deadline_s: float) -> tuple[Counter[int | str], list[str], float]:
    """Run the writers; return (status counts, first error texts, wall seconds)."""
    statuses: Counter[int | str] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(writers)
    headers = {"X-API-Key": key} if key else {}
    stop_at = time.monotonic() + deadline_s

    def writer(w: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=deadline_s) as c:
            start.wait()
            for first in range(0, messages, per_request):
                if time.monotonic() > stop_at:
                    with lock:
                        statuses["not sent (deadline)"] += 1
                    return
                batch = [{"id": f"w{w:03d}-{i:03d}", "speaker": f"writer{w % 12}", "session": "load",
                          "text": f"writer {w} message {i}", "ts": f"2026-06-01T10:{(w * messages + i) // 60 % 60:02d}:"
                          f"{(w * messages + i) % 60:02d}"}
                         for i in range(first, min(first + per_request, messages))]
                try:
                    r = c.post(f"/groups/{group}/messages", json={"messages": batch})
                    code: int | str = r.status_code
                    text = r.text[:300] if r.status_code != 200 else ""
                except httpx.HTTPError as e:
                    code, text = type(e).__name__, str(e)[:300]
                with lock:
                    statuses[code] += 1
                    if text and len(errors) < 5:
                        errors.append(f"{code}: {text}")

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses, errors, time.monotonic() - t0


def check_store(store: Store, group: str, expected: set[str]) -> dict[str, int]:
    """Lost messages, duplicates and forks of the NEXT chain of ``group``."""
    rows = store.read_text(
        "MATCH (m:Message {group_id: $g}) "
        "OPTIONAL MATCH (m)-[:NEXT]->(n:Message) WITH m, collect(n.id) AS nexts "
        "OPTIONAL MATCH (p:Message)-[:NEXT]->(m) RETURN m.id AS id, nexts, collect(p.id) AS prevs", g=group)
    ids = [r["id"] for r in rows]
    nexts = {r["id"]: r["nexts"] for r in rows}
    forks = sum(1 for r in rows if len(r["nexts"]) > 1 or len(r["prevs"]) > 1)
    heads = [r["id"] for r in rows if not r["prevs"]]
    walked, seen = 0, set()
    cur = heads[0] if len(heads) == 1 else None
    while cur is not None and cur not in seen:
        seen.add(cur)
        walked += 1
        cur = nexts[cur][0] if nexts[cur] else None
    return {"stored": len(ids), "lost": len(expected - set(ids)), "duplicates": len(ids) - len(set(ids)),
            "forks": forks, "heads": len(heads), "chain_length": walked}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="", help="A running API (default: start `graphmem serve` on a free port).")
    ap.add_argument("--key", default=os.environ.get("GRAPHMEM_API_KEY", ""))
    ap.add_argument("--writers", type=int, default=200)
    ap.add_argument("--messages", type=int, default=3, help="Messages per writer.")
    ap.add_argument("--per-request", type=int, default=1)
    ap.add_argument("--deadline-s", type=float, default=300.0, help="Stop sending after this long.")
    args = ap.parse_args()

    proc = None
    url = args.url
    log = tempfile.NamedTemporaryFile("w+", prefix="load_writers_serve_", suffix=".log", delete=False)
    if not url:
        from tests.processes import free_port

        port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRAPHMEM_DERIVE_JOBS_ENABLED": "false", "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-m", "graphmem", "serve", "--port", str(port), "--log-level",
                                 "warning"], stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=ROOT)
        url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "graphmem serve exited"
            time.sleep(0.5)
    group = f"load-{uuid.uuid4().hex[:8]}"
    driver = open_driver(get_settings())
    store = Store(driver)
    try:
        statuses, errors, wall = write_all(url, args.key, group, args.writers, args.messages,
                                           args.per_request, args.deadline_s)
        expected = {f"w{w:03d}-{i:03d}" for w in range(args.writers) for i in range(args.messages)}
        figures = check_store(store, group, expected)
        requests = sum(statuses.values())
        bad = requests - statuses.get(200, 0)
        print(json.dumps({"group": group, "writers": args.writers, "messages": len(expected),
                          "requests": requests, "errors": bad, "statuses": {str(k): v for k, v in statuses.items()},
                          "wall_s": round(wall, 1), "requests_per_s": round(requests / wall, 1), **figures,
                          "first_errors": errors}, indent=2))
        store.driver.execute_query("MATCH (n {group_id: $g}) DETACH DELETE n", g=group)
        store.driver.execute_query("MATCH (n:Group {id: $g}) DETACH DELETE n", g=group)
        ok = bad == 0 and figures["lost"] == 0 and figures["forks"] == 0 and figures["chain_length"] == len(expected)
        return 0 if ok else 1
    finally:
        driver.close()
        if proc is not None:
            from tests.processes import stop_serve

            stop_serve(proc)
            log.seek(0)
            lines = [ln.rstrip() for ln in log if "Error" in ln or "Traceback" in ln]
            if lines:
                print(f"server errors ({len(lines)} lines, log {log.name}):", *lines[-10:], sep="\n  ")


if __name__ == "__main__":
    raise SystemExit(main())
