"""Time-window read (``recall/window_messages``): PROFILE db hits and latency in one group.

Usage (a store holding a large group, e.g. 20,000 messages; see docs/scale.md):
    .venv/bin/python bench/bench_scale.py --write-jsonl /tmp/s20k.jsonl --store-size 20000 --group-size 20000
    graphmem ingest /tmp/s20k.jsonl --format jsonl --embed later
    .venv/bin/python bench/bench_window.py scale-g20000 [--runs 20] [--template FILE]

For windows of one day, one month and one year in the middle of the group's time span, and for
one session anchor, it prints the rows returned, the PROFILE db hits (summed over operators),
the operators that touched the store most, and the client-side p50 latency in ms over
``--runs`` runs. ``--template`` profiles another text of the same query (e.g. the version
before a change) against the same store. The query vector is random (fixed seed): the figures
are about the database's work, not ranking quality. Messages without a vector are skipped by
the query, as in recall.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from graphmem.core.config import get_settings
from graphmem.store.db import cypher, open_driver

DAY = 86_400.0


def profile_hits(plan: Any) -> tuple[int, dict[str, int]]:
    """Total db hits of a PROFILE plan and the hits per operator type."""
    per: dict[str, int] = {}
    total = 0

    def walk(p: Any) -> None:
        nonlocal total
        hits = int(p.get("dbHits", 0))
        name = p.get("operatorType", "?").split("@")[0]
        per[name] = per.get(name, 0) + hits
        total += hits
        for child in p.get("children", []):
            walk(child)

    walk(plan)
    return total, per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("group")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--template", type=Path, help="profile this query text instead of the shipped one")
    args = ap.parse_args()
    text = args.template.read_text(encoding="utf-8") if args.template else cypher("recall/window_messages")
    driver = open_driver(get_settings())
    with driver.session() as s:
        span = s.run("MATCH (m:Message {group_id: $g}) RETURN min(m.instant) AS lo, max(m.instant) AS hi, "
                     "count(m) AS n, count(m.embedding) AS v", g=args.group).single()
        dim_row = s.run("MATCH (m:Message {group_id: $g}) WHERE m.embedding IS NOT NULL "
                        "RETURN size(m.embedding) AS d LIMIT 1", g=args.group).single()
    dim = dim_row["d"] if dim_row else 384
    rng = random.Random(7)
    vec = [rng.gauss(0, 1) for _ in range(dim)]
    norm = sum(x * x for x in vec) ** 0.5
    vec = [x / norm for x in vec]
    mid = (span["lo"] + span["hi"]) / 2
    print(f"group {args.group}: {span['n']} messages ({span['v']} with a vector), "
          f"{(span['hi'] - span['lo']) / DAY:.0f} days; load {os.getloadavg()[0]:.1f}")
    cases = [
        ("1 day", [[mid, mid + DAY]], []),
        ("1 month", [[mid, mid + 30 * DAY]], []),
        ("1 year", [[mid - 182 * DAY, mid + 183 * DAY]], []),
        ("session 3", [], [3]),
    ]
    for label, windows, sessions in cases:
        params = {"group_id": args.group, "windows": windows, "sessions": sessions, "vector": vec, "k": 40,
                  "max_instant": None}
        with driver.session() as s:
            res = s.run("PROFILE " + text, params)
            rows = len(list(res))
            summary = res.consume()
            total, per = profile_hits(summary.profile)
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                list(s.run(text, params))
                times.append((time.perf_counter() - t) * 1000)
        top = ", ".join(f"{k} {v}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])[:3] if v)
        print(f"{label:10s} rows {rows:3d}  db hits {total:8d}  p50 {statistics.median(times):7.1f} ms  ({top})")
    print(f"load {os.getloadavg()[0]:.1f}")
    driver.close()


if __name__ == "__main__":
    main()
