"""Ingest throughput and peak memory for LoCoMo and the SocialMemBench networks.

Usage:
    .venv/bin/python bench/bench_ingest.py [--data ../shared/data] [--keep]

Writes each benchmark unit into its natural group id (conv-26, grp_0d1e2f3a, ...) after
deleting that group, then ingests again to show the second run writes nothing. Prints messages
per second end to end and with the embedding time excluded, and the peak RSS of this process.
Requires the local Neo4j (make neo4j). Figures go to stdout; nothing here is a test.
"""

from __future__ import annotations

import argparse
import resource
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = ap.parse_args()
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
