"""Bulk-ingest throughput: the first-load importer, transactional ``--embed later``, ingest with
the CPU embedder against the encoder alone, and ``embed_group`` with and without the global
vector index.

Usage (input: a JSON-lines corpus from ``bench/bench_scale.py --write-jsonl``):
    # first load through neo4j-admin (the local server must be stopped; the database is replaced)
    nice -n 10 .venv/bin/python bench/bench_bulk.py importer --jsonl /tmp/scale.jsonl --csv-dir /tmp/csv \
        [--path reference] [--workers N]
    # the rest needs the server running with the schema applied
    nice -n 10 .venv/bin/python bench/bench_bulk.py tx --jsonl /tmp/scale.jsonl [--batch 5000] [--workers 1]
    nice -n 10 .venv/bin/python bench/bench_bulk.py embed-now --jsonl /tmp/scale.jsonl --sample 1000
    nice -n 10 .venv/bin/python bench/bench_bulk.py global-index --jsonl /tmp/scale.jsonl --sample 10000 \
        --tiny-model /tmp/scale-tiny
    # per-statement cost of ingest's write transactions (client ms, Neo4j CPU, PROFILE db hits)
    nice -n 10 .venv/bin/python bench/bench_bulk.py statements --jsonl /tmp/scale.jsonl --sample 2000 \
        --prefill 5000 [--time-order] --tiny-model /tmp/scale-tiny [--profile]

Every figure is printed with the load average (1 min) at its start and end and the CPU-seconds
spent per message by this process and by the Neo4j server (``/proc/<pid>/stat``): the machine
is shared, so wall rates move with the load while CPU per message moves much less.
Groups written by ``tx``, ``embed-now`` and ``global-index`` get a run tag appended to their id
and are deleted afterwards. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from graphmem.core.model import Conversation  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def load1() -> float:
    return os.getloadavg()[0]


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def server_pid() -> int | None:
    from graphmem.core.config import get_settings
    from graphmem.store.local_server import LocalServer

    return LocalServer(get_settings()).pid()


def server_cpu(pid: int | None) -> float:
    if not pid:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Meter:
    """Wall seconds, this process's CPU-seconds, the server's CPU-seconds and the load."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid
        self.t, self.cpu, self.srv, self.load = time.perf_counter(), self_cpu(), server_cpu(pid), load1()

    def stop(self, n: int, label: str) -> float:
        wall = time.perf_counter() - self.t
        cpu, srv = self_cpu() - self.cpu, server_cpu(self.pid) - self.srv
        print(f"  {label}: {n} msgs in {wall:.1f} s = {n / wall:,.0f} msg/s; CPU per msg: "
              f"python {1e6 * cpu / n:.0f} us, neo4j {1e6 * srv / n:.0f} us; "
              f"load {self.load:.1f} -> {load1():.1f}", flush=True)
        return n / wall


def tagged(convs: list[Conversation], tag: str) -> list[Conversation]:
    """The same conversations under new group ids (``<id>-<tag>``)."""
    out = []
    for c in convs:
        gid = f"{c.group_id}-{tag}"
        msgs = [m.model_copy(update={"group_id": gid}) for m in c.messages]
        out.append(c.model_copy(update={"group_id": gid, "name": gid, "messages": msgs}))
    return out


def sample(convs: list[Conversation], n: int) -> list[Conversation]:
    """The first ``n`` messages of the corpus, whole conversations cut at the end."""
    out, left = [], n
    for c in convs:
        if left <= 0:
            break
        msgs = c.messages[:left]
        out.append(c.model_copy(update={"messages": msgs}))
        left -= len(msgs)
    return out


def parse(path: Path) -> list[Conversation]:
    from loaders import load_conversations

    m = Meter()
    convs = load_conversations(path, "jsonl")
    m.stop(sum(len(c.messages) for c in convs), "parse + validate the JSONL")
    return convs


def cmd_importer(args: argparse.Namespace) -> None:
    from graphmem.verbatim.bulk_import import HEADERS, check_can_import, run_importer, write_csv
    from graphmem.verbatim.bulk_jsonl import write_csv_jsonl
    from loaders import jsonl_reference
    from graphmem.core.config import get_settings
    from graphmem.store.db import Store, open_driver
    from graphmem.store.local_server import LocalServer
    from graphmem.store.schema import apply_schema

    s = get_settings()
    print(f"== first load through neo4j-admin ({args.path} CSV path): {args.jsonl} (heap "
          f"{s.neo4j_heap_mb} MB, page cache {s.neo4j_pagecache_mb} MB, {os.cpu_count()} cores)")
    server = check_can_import(s, overwrite=True)
    if args.csv_dir.exists():
        shutil.rmtree(args.csv_dir)
    total = Meter()
    if args.path == "reference":
        convs = parse(args.jsonl)
        n = sum(len(c.messages) for c in convs)
        m = Meter()
        write_csv(convs, args.csv_dir)
        m.stop(n, "write the CSV files")
        files = {k: [args.csv_dir / f"{k}.csv"] for k in HEADERS}
        del convs
    else:
        m = Meter()
        result = write_csv_jsonl(args.jsonl, args.csv_dir, reference=jsonl_reference, workers=args.workers)
        n = result.summary.messages_written
        m.stop(n, f"parse + check + write the CSV files ({result.path} path, {result.parts} part(s); "
                  "CPU includes the worker processes)")
        files = result.files
    m = Meter()
    run_importer(s, server, args.csv_dir, files)
    m.stop(n, "neo4j-admin database import (CPU: the importer's JVM)")
    m = Meter()
    LocalServer(s).start()
    pid = server_pid()
    m.stop(n, "server start")
    m = Meter(pid)
    driver = open_driver(get_settings())
    apply_schema(Store(driver), 384, timeout_s=7200)
    driver.close()
    m.stop(n, "schema apply: constraints + indexes ONLINE")
    print(f"  ==> JSONL to stored, indexed and fulltext-searchable: ", end="")
    total.stop(n, "end to end (python CPU includes the importer's JVM, not the server)")


def cmd_tx(args: argparse.Namespace) -> None:
    from graphmem.store.db import Store, open_driver
    from graphmem.groups.service import forget_group
    from graphmem.verbatim.ingest import ingest_conversations

    convs = parse(args.jsonl)
    convs = tagged(sample(convs, args.sample) if args.sample else convs, f"tx{int(time.time())}")
    n = sum(len(c.messages) for c in convs)
    driver = open_driver(get_settings())
    store = Store(driver)
    pid = server_pid()
    print(f"== transactional ingest --embed later: {n} msgs, {len(convs)} groups, batch {args.batch}, "
          f"{args.workers} worker(s)")
    try:
        m = Meter(pid)
        if args.workers <= 1:
            ingest_conversations(store, convs, None, embed="later", batch_size=args.batch)
        else:
            shards = [convs[i :: args.workers] for i in range(args.workers)]
            errors: list[BaseException] = []

            def run(part: list[Conversation]) -> None:
                try:
                    ingest_conversations(store, part, None, embed="later", batch_size=args.batch)
                except BaseException as e:  # noqa: BLE001 - reported below
                    errors.append(e)

            threads = [threading.Thread(target=run, args=(p,)) for p in shards]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
        m.stop(n, "first run (all new)")
        m = Meter(pid)
        again = ingest_conversations(store, convs, None, embed="later", batch_size=args.batch)
        m.stop(n, f"second run ({again.messages_written} written, {again.messages_skipped} skipped)")
    finally:
        for c in convs:
            forget_group(store, c.group_id)
        driver.close()


def cmd_embed_now(args: argparse.Namespace) -> None:
    from graphmem.store.db import Store, open_driver
    from graphmem.core.embed import Embedder
    from graphmem.groups.service import forget_group
    from graphmem.core.embed import embedding_text, sentence_texts
    from graphmem.verbatim.ingest import collapse, ingest_conversations

    convs = sample(parse(args.jsonl), args.sample)
    n = sum(len(c.messages) for c in convs)
    embedder = Embedder.from_settings(get_settings())
    embedder.encode(["warm-up"])
    driver = open_driver(get_settings())
    store = Store(driver)
    pid = server_pid()
    # what the ingest encodes: each turn and, for a turn of several sentences, its sentences
    texts = [t for c in convs for d in collapse(c) for t in (embedding_text(d.m), *sentence_texts(d.m))]
    print(f"== ingest with the default embedder (device {embedder.device}, batch "
          f"{embedder.batch_size}, {embedder.threads} torch thread(s)) against the encoder alone: {n} msgs")
    made: list[str] = []
    try:
        m = Meter(pid)
        for i in range(0, len(texts), args.batch):
            embedder.encode(texts[i : i + args.batch])
        enc = m.stop(n, "encoder alone (same texts, same batches)")
        later = tagged(convs, f"later{int(time.time())}")
        made += [c.group_id for c in later]
        m = Meter(pid)
        ingest_conversations(store, later, None, embed="later", batch_size=args.batch)
        wr = m.stop(n, "writes alone (--embed later, same batches)")
        print(f"  serial estimate (encode, then write, per batch): {1 / (1 / enc + 1 / wr):,.0f} msg/s")
        now = tagged(convs, f"now{int(time.time())}")
        made += [c.group_id for c in now]
        m = Meter(pid)
        ingest_conversations(store, now, embedder, embed="now", batch_size=args.batch)
        rate = m.stop(n, "ingest with embeddings (encode N+1 while writing N)")
        print(f"  ==> ingest / encoder alone = {rate / enc:.2f}")
    finally:
        for gid in made:
            forget_group(store, gid)
        driver.close()


def cmd_global_index(args: argparse.Namespace) -> None:
    from bench_scale import build_tiny_model

    from graphmem.store.db import Store, open_driver
    from graphmem.core.embed import Embedder
    from graphmem.groups.service import forget_group
    from graphmem.verbatim.ingest import ingest_conversations
    from graphmem.store.schema import apply_schema
    from graphmem.verbatim.vectors import embed_group

    convs = sample(parse(args.jsonl), args.sample)
    conv = Conversation(group_id="g", name="g", source=convs[0].source,
                        messages=[m.model_copy(update={"group_id": "g"}) for c in convs[:1] for m in c.messages])
    n = len(conv.messages)
    embedder = Embedder(build_tiny_model(args.tiny_model) if args.tiny_model else "", batch_size=256)
    embedder.encode(["warm-up"])
    driver = open_driver(get_settings())
    store = Store(driver)
    pid = server_pid()
    print(f"== embed_group of one {n}-message group ({'tiny model' if args.tiny_model else 'MiniLM'}), "
          "with and without the global message_embedding index")
    try:
        for keep in (True, False):
            apply_schema(store, embedder.dimension, timeout_s=3600, global_vector_index=keep)
            g = tagged([conv], f"gi{int(keep)}{int(time.time())}")
            ingest_conversations(store, g, None, embed="later", batch_size=5000)
            m = Meter(pid)
            embed_group(store, embedder, g[0].group_id, batch_size=1000, exact_max=500)
            m.stop(n, f"embed_group, global index {'kept' if keep else 'dropped'} (incl. own index build)")
            forget_group(store, g[0].group_id)
    finally:
        apply_schema(store, embedder.dimension, timeout_s=3600, global_vector_index=True)
        driver.close()


class StatementMeter:
    """Per Cypher template: calls, client-side ms (round trip + server work), Neo4j CPU-seconds
    read from /proc around each call, and with ``profile`` the PROFILE db hits and rows per
    operator, summed over calls. Installed over ``run_tx`` in graphmem.verbatim.ingest and graphmem.verbatim.order
    and over ``Store.write_tx``: a transaction's time and Neo4j CPU beyond its statements is its
    commit (index updates are applied there) and the driver; the few one-statement writes outside
    ``run_tx`` (merge_group, scope labels) count there too. Lucene's merges run in background
    threads and land on whatever statement is running, so small per-statement CPU figures are
    noisy; db hits are exact."""

    COMMIT = "(commit + driver, beyond the statements)"

    def __init__(self, pid: int | None, profile: bool) -> None:
        self.pid, self.profile = pid, profile
        self.stats: dict[str, list[float]] = {}
        self.ops: dict[str, dict[str, list[int]]] = {}
        self.inside = self.inside_cpu = 0.0

    def add(self, name: str, wall: float, cpu: float) -> None:
        s = self.stats.setdefault(name, [0, 0.0, 0.0])
        s[0] += 1
        s[1] += wall
        s[2] += cpu

    def run_tx(self, tx, name: str, /, **params):  # noqa: ANN001 - mirrors graphmem.store.db.run_tx
        from graphmem.store.db import cypher

        text = cypher(name)
        t, c = time.perf_counter(), server_cpu(self.pid)
        result = tx.run(("PROFILE " if self.profile else "") + text, params)
        rows = [r.data() for r in result]
        summary = result.consume()
        wall, cpu = time.perf_counter() - t, server_cpu(self.pid) - c
        self.inside += wall
        self.inside_cpu += cpu
        self.add(name, wall, cpu)
        if self.profile and summary.profile:
            ops = self.ops.setdefault(name, {})

            def walk(node: dict) -> None:
                key = node.get("operatorType", "?").split("@")[0]
                o = ops.setdefault(f"{key} {node.get('args', {}).get('Details', '')[:70]}", [0, 0])
                o[0] += int(node.get("dbHits", 0))
                o[1] += int(node.get("rows", 0))
                for ch in node.get("children", []):
                    walk(ch)

            walk(summary.profile)
        return rows

    def install(self) -> None:
        import graphmem.verbatim.ingest
        import graphmem.verbatim.order
        from graphmem.store.db import Store

        graphmem.verbatim.ingest.run_tx = self.run_tx
        graphmem.verbatim.order.run_tx = self.run_tx
        original, meter = Store.write_tx, self

        def write_tx(store, fn):  # noqa: ANN001
            t, c = time.perf_counter(), server_cpu(meter.pid)
            inside, inside_cpu = meter.inside, meter.inside_cpu
            try:
                return original(store, fn)
            finally:
                meter.add(meter.COMMIT, time.perf_counter() - t - (meter.inside - inside),
                          server_cpu(meter.pid) - c - (meter.inside_cpu - inside_cpu))

        Store.write_tx = write_tx

    def report(self, n: int) -> None:
        print(f"  {'statement':42s} {'calls':>5s} {'ms/call':>8s} {'client us/msg':>13s} {'neo4j us/msg':>12s}")
        for name, (calls, wall, cpu) in sorted(self.stats.items(), key=lambda kv: -kv[1][1]):
            print(f"  {name:42s} {calls:5d} {1e3 * wall / calls:8.1f} {1e6 * wall / n:13.0f} {1e6 * cpu / n:12.0f}")
        for name, ops in self.ops.items():
            print(f"  PROFILE {name} (summed over calls): db hits / rows per operator")
            for op, (hits, rows) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:8]:
                print(f"      {hits:10d} {rows:9d}  {op}")


def cmd_statements(args: argparse.Namespace) -> None:
    from bench_scale import build_tiny_model

    from graphmem.store.db import Store, open_driver, quiet_notifications
    from graphmem.core.embed import Embedder
    from graphmem.groups.service import forget_group
    from graphmem.verbatim.ingest import ingest_conversations

    convs = parse(args.jsonl)
    conv = convs[0]
    msgs = conv.messages
    if args.time_order:  # stable: loader order among equal instants
        from graphmem.core.times import instant

        msgs = sorted(msgs, key=lambda m: instant(m.ts))
    pre, body = msgs[: args.prefill], msgs[args.prefill : args.prefill + args.sample]
    n = len(body)
    embedder = Embedder(build_tiny_model(args.tiny_model) if args.tiny_model else "", batch_size=256)
    embedder.encode(["warm-up"])
    driver = open_driver(get_settings())
    store = Store(driver)
    pid = server_pid()
    g = tagged([conv], f"st{int(time.time())}")[0]
    first = g.model_copy(update={"messages": [m.model_copy(update={"group_id": g.group_id}) for m in pre]})
    second = g.model_copy(update={"messages": [m.model_copy(update={"group_id": g.group_id}) for m in body]})
    quiet_notifications()
    warm = tagged([sample([conv], 500)[0]], f"warm{int(time.time())}")
    ingest_conversations(store, warm, embedder, embed="now", batch_size=args.batch, exact_max=10**9)
    forget_group(store, warm[0].group_id)  # query plans compiled before anything is measured
    print(f"== ingest statements: {n} msgs of {conv.group_id} ({'time' if args.time_order else 'loader'} order) "
          f"after {len(pre)} stored, batch {args.batch}, "
          f"{'tiny model' if args.tiny_model else 'MiniLM'} vectors{', PROFILE' if args.profile else ''}")
    try:
        if pre:
            ingest_conversations(store, [first], embedder, embed="now", batch_size=5000, exact_max=10**9)
        meter = StatementMeter(pid, args.profile)
        meter.install()
        m = Meter(pid)
        ingest_conversations(store, [second], embedder, embed="now", batch_size=args.batch, exact_max=10**9)
        m.stop(n, "ingest (embed now; the group's own vector index left out)")
        meter.report(n)
    finally:
        forget_group(store, g.group_id)
        driver.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("importer")
    p.add_argument("--jsonl", type=Path, required=True)
    p.add_argument("--csv-dir", type=Path, required=True)
    p.add_argument("--path", choices=("parallel", "reference"), default="parallel",
                   help="CSV from graphmem.verbatim.bulk_jsonl (default) or loaders + bulk_import.write_csv")
    p.add_argument("--workers", type=int, default=None, help="processes of the parallel path (default: cores)")
    p = sub.add_parser("tx")
    p.add_argument("--jsonl", type=Path, required=True)
    p.add_argument("--sample", type=int, default=0, help="only the first N messages (0: all)")
    p.add_argument("--batch", type=int, default=5000)
    p.add_argument("--workers", type=int, default=1)
    p = sub.add_parser("embed-now")
    p.add_argument("--jsonl", type=Path, required=True)
    p.add_argument("--sample", type=int, default=1000)
    p.add_argument("--batch", type=int, default=250)
    p = sub.add_parser("global-index")
    p.add_argument("--jsonl", type=Path, required=True)
    p.add_argument("--sample", type=int, default=10000)
    p.add_argument("--tiny-model", type=Path, default=None)
    p = sub.add_parser("statements")
    p.add_argument("--jsonl", type=Path, required=True)
    p.add_argument("--sample", type=int, default=2000)
    p.add_argument("--prefill", type=int, default=0, help="messages of the group stored first (untimed)")
    p.add_argument("--batch", type=int, default=250)
    p.add_argument("--tiny-model", type=Path, default=None)
    p.add_argument("--profile", action="store_true", help="run each statement under PROFILE (db hits)")
    p.add_argument("--time-order", action="store_true",
                   help="take the group's messages in time order (the loader hands them over channel by channel)")
    args = ap.parse_args()
    {"importer": cmd_importer, "tx": cmd_tx, "embed-now": cmd_embed_now,
     "global-index": cmd_global_index, "statements": cmd_statements}[args.cmd](args)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
