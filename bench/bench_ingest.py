"""Ingest throughput and peak memory for LoCoMo and the SocialMemBench networks.

Usage:
    .venv/bin/python bench/bench_ingest.py [--data ../shared/data]
    .venv/bin/python bench/bench_ingest.py online [--data ../shared/data] [--copies 4] [--batch N] \
        [--profile FILE]
    .venv/bin/python bench/bench_ingest.py api [--data ../shared/data] [--copies 4] [--request 2000] \
        [--workers 2]

The default mode writes each benchmark unit into its natural group id (conv-26, grp_0d1e2f3a, ...) after
deleting that group, then ingests again to show the second run writes nothing. Prints messages
per second end to end and with the embedding time excluded, and the peak RSS of this process.
Requires the local Neo4j (make neo4j). Figures go to stdout; nothing here is a test.

``online`` measures the append path with deferred embeddings as ``graphmem ingest --format
locomo --embed later`` runs it (:func:`graphmem.verbatim.ingest.ingest_conversations` with the
CLI's batch size, ``GRAPHMEM_BULK_BATCH_SIZE``): the 10 LoCoMo conversations loaded ``--copies``
times under as many group ids (``<id>-on<k>-<tag>``, one ingest call per copy, as one CLI run
each), then the same again, which must write nothing. Per run it prints messages per second,
the CPU-seconds of this process and of the Neo4j server (``/proc/<pid>/stat``) and the load
average; ``--profile FILE`` writes a cProfile of the first run. The groups are deleted
afterwards.

``api`` measures the same load through the HTTP API: a ``graphmem serve`` process (with a key)
receives ``POST /groups/{g}/messages?embed=later`` requests of ``--request`` messages, ``--workers``
groups posted at the same time, then the same requests again (which must write nothing).
"""

from __future__ import annotations

import argparse
import cProfile
import resource
import sys
import time
from pathlib import Path

from graphmem.core.config import get_settings
from graphmem.store.db import Store, open_driver
from graphmem.core.embed import Embedder
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.groups.service import forget_group
from loaders import load_conversations


class TimedEmbedder(Embedder):
    """Wraps the real embedder and accumulates the seconds spent encoding."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def dimension(self) -> int:  # type: ignore[override]
        return self.inner.dimension

    def encode(self, texts, show_progress=False):  # type: ignore[override]
        t = time.perf_counter()
        try:
            return self.inner.encode(texts)
        finally:
            self.seconds += time.perf_counter() - t


def delete_groups(store: Store, group_ids: list[str]) -> None:
    for gid in group_ids:
        forget_group(store, gid)


def run(name: str, path: Path, fmt: str, store: Store, embedder: TimedEmbedder) -> None:
    t0 = time.perf_counter()
    convs = load_conversations(path, fmt)
    parse_s = time.perf_counter() - t0
    n = sum(len(c.messages) for c in convs)
    delete_groups(store, [c.group_id for c in convs])
    embedder.seconds = 0.0
    t1 = time.perf_counter()
    first = ingest_conversations(store, convs, embedder)
    wall = time.perf_counter() - t1
    emb = embedder.seconds
    t2 = time.perf_counter()
    second = ingest_conversations(store, convs, embedder)
    rerun = time.perf_counter() - t2
    stored = store.read_text(
        "MATCH (m:Message) WHERE m.group_id IN $g RETURN count(m) AS n", g=[c.group_id for c in convs]
    )[0]["n"]
    print(f"\n== {name}: {len(convs)} groups, {n} messages (parse {parse_s:.2f}s)")
    print(f"  written {first.messages_written}, stored Message nodes {stored}")
    print(f"  end to end: {wall:.1f}s = {n / wall:.0f} msg/s")
    print(f"  embeddings: {emb:.1f}s; excluding them: {wall - emb:.1f}s = {n / max(wall - emb, 1e-9):.0f} msg/s")
    print(f"  second run: {second.messages_written} written, {second.messages_skipped} skipped in {rerun:.1f}s")


def online(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_bulk import Meter, StatementMeter, load1, self_cpu, server_cpu, server_pid, tagged

    from graphmem.store.db import quiet_notifications

    quiet_notifications()  # as the CLI does
    s = get_settings()
    batch = args.batch or s.bulk_batch_size
    workers = args.workers or s.ingest_workers
    m = Meter()
    convs = load_conversations(args.data / "locomo" / "locomo10.json", "locomo")
    n1 = sum(len(c.messages) for c in convs)
    m.stop(n1, "parse LoCoMo (once; not in the figures below)")
    tag = str(int(time.time()))
    copies = [tagged(convs, f"on{k}-{tag}") for k in range(args.copies)]
    n = n1 * args.copies
    driver = open_driver(s)
    store = Store(driver)
    pid = server_pid()
    print(f"== online ingest --embed later: LoCoMo x{args.copies} = {n} msgs, "
          f"{len(convs) * args.copies} groups, batch {batch}, {workers} writer(s), neo4j pid {pid}")
    meter = None
    if args.statements:
        meter = StatementMeter(pid, args.statements == "profile")
        meter.install()
    try:
        for label, profile in (("first run", args.profile), ("second run", None)):
            prof = cProfile.Profile() if profile else None
            written = skipped = 0
            t, cpu, srv, load = time.perf_counter(), self_cpu(), server_cpu(pid), load1()
            for part in copies:
                if prof:
                    prof.enable()
                out = ingest_conversations(store, part, None, batch_size=batch, embed="later",
                                           exact_max=s.vector_exact_max, workers=workers)
                if prof:
                    prof.disable()
                written += out.messages_written + out.messages_edited
                skipped += out.messages_skipped
            wall, cpu, srv = time.perf_counter() - t, self_cpu() - cpu, server_cpu(pid) - srv
            print(f"  {label}: {written} written, {skipped} skipped: {n} msgs in {wall:.2f} s = "
                  f"{n / wall:,.0f} msg/s; CPU: python {cpu:.2f} s, neo4j {srv:.2f} s; "
                  f"load {load:.2f} -> {load1():.2f}", flush=True)
            if prof:
                prof.dump_stats(profile)
            if meter is not None:
                meter.report(n)
                meter.stats.clear()
                meter.ops.clear()
    finally:
        for part in copies:
            for c in part:
                forget_group(store, c.group_id)
        driver.close()


def api(args: argparse.Namespace) -> None:
    import os
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.processes import served_api

    s = get_settings()
    convs = load_conversations(args.data / "locomo" / "locomo10.json", "locomo")
    tag = str(int(time.time()))
    groups = [(f"{c.group_id}-api{k}-{tag}", c) for k in range(args.copies) for c in convs]
    n = sum(len(c.messages) for _, c in groups)
    key = "bench-" + tag
    print(f"== API append ?embed=later: LoCoMo x{args.copies} = {n} msgs, {len(groups)} groups, "
          f"{args.request} messages a request, {args.workers or 2} group(s) at a time")

    def post_group(url: str, item: tuple[str, object]) -> tuple[int, int]:
        gid, conv = item
        rows = [{"id": m.id, "speaker": m.speaker, "speaker_id": m.speaker_id or None, "text": m.text, "ts": m.ts,
                 "session": m.session, "reply_to": m.reply_to or None} for m in conv.messages]  # type: ignore[attr-defined]
        rows = [{k: v for k, v in r.items() if v is not None} for r in rows]
        written = skipped = 0
        with httpx.Client(base_url=url, headers={"X-API-Key": key}, timeout=600) as http:
            for i in range(0, len(rows), args.request):
                r = http.post(f"/groups/{gid}/messages", params={"embed": "later"},
                              json={"messages": rows[i:i + args.request]})
                r.raise_for_status()
                body = r.json()
                written += body["messages_written"] + body["messages_edited"]
                skipped += body["messages_skipped"]
        return written, skipped

    driver = open_driver(s)
    store = Store(driver)
    try:
        with served_api(key) as url:
            for label in ("first run", "second run"):
                t = time.perf_counter()
                with ThreadPoolExecutor(max_workers=args.workers or 2) as pool:
                    done = list(pool.map(lambda g: post_group(url, g), groups))
                wall = time.perf_counter() - t
                print(f"  {label}: {sum(d[0] for d in done)} written, {sum(d[1] for d in done)} skipped: {n} msgs "
                      f"in {wall:.2f} s = {n / wall:,.0f} msg/s; load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        for gid, _ in groups:
            forget_group(store, gid)
        driver.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="embed", choices=["embed", "online", "api"])
    ap.add_argument("--request", type=int, default=2000, help="api: messages per request")
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--batch", type=int, default=0, help="online: messages per transaction "
                    "(default GRAPHMEM_BULK_BATCH_SIZE)")
    ap.add_argument("--workers", type=int, default=0, help="online: groups written at the same time "
                    "(default GRAPHMEM_INGEST_WORKERS)")
    ap.add_argument("--profile", default="", help="online: write a cProfile of the first run here")
    ap.add_argument("--statements", choices=["", "time", "profile"], default="",
                    help="online: per Cypher template, calls, client time and Neo4j CPU "
                         "(bench_bulk.StatementMeter); 'profile' adds PROFILE db hits")
    args = ap.parse_args()
    if args.mode == "online":
        online(args)
        return
    if args.mode == "api":
        api(args)
        return
    driver = open_driver(get_settings())
    store = Store(driver)
    embedder = TimedEmbedder(Embedder.from_settings(get_settings()))
    embedder.encode(["warm-up"])
    run("LoCoMo", args.data / "locomo" / "locomo10.json", "locomo", store, embedder)
    run("SocialMemBench", args.data / "socialmembench" / "networks", "socialmem", store, embedder)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of the ingest process: {peak_mb:.0f} MiB")
    driver.close()


if __name__ == "__main__":
    main()
