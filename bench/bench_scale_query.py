"""Where the time of ``search`` and non-model ``ask`` goes in large groups: per stage, per Cypher.

Usage (a store built by ``bench/bench_scale.py`` or ``graphmem neo4j import``, groups embedded):
    .venv/bin/python bench/bench_scale_query.py scale-g100000 [more groups]
        [--queries 40] [--asks 20] [--seed 7] [--tiny-model DIR] [--cprofile FILE]
        [--compare-serial] [--rounds N] [--no-model N] [--replay N]

For each group it runs ``--queries`` hybrid searches (k 10, pool 40, as ``bench_scale.py``)
and ``--asks`` asks with the scripted answer model (``bench_ask.scripted_handler``: Project
names one person, Select keeps the fused order, Sufficiency always asks, so every stage runs),
after three warm-up calls each, and prints:

- p50 / p95 of the whole call (the model's own latency taken out of ``ask``),
- p50 / p95 of each ask stage (``AskResult.timings_s`` and ``s2_timings_s``; model stages with
  the model's latency taken out),
- per Cypher template: calls per request and p50 / p95 / total milliseconds (client wall time
  of ``Store.read``, i.e. the round trip and the server's work),
- CPU milliseconds per request of the Neo4j server (``/proc/<pid>/stat``, the local server of
  GRAPHMEM_HOME) and of this process: unlike wall times they hardly move with the machine's load.

The questions are drawn from the same seeded vocabulary as the corpus ("What did <member> say
about <words>?"), so they hit the group's frequent words as real questions would. Figures go
to stdout; nothing here is a test. ``--cprofile FILE`` also writes a cProfile of the asks.
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import sys
import time
from collections import defaultdict
from concurrent.futures import Future
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_bulk import server_cpu  # noqa: E402
from bench_scale import Corpus, build_tiny_model, neo4j_pid_and_home, pct  # noqa: E402

from graphmem.store import db  # noqa: E402
from graphmem.core.config import Settings  # noqa: E402
from graphmem.core.config import get_settings  # noqa: E402
from graphmem.store.db import Store, open_driver, quiet_notifications  # noqa: E402
from graphmem.core.embed import Embedder  # noqa: E402
from graphmem.recall.search import search_messages  # noqa: E402

_CALLS: dict[str, list[float]] = defaultdict(list)
_SERVER_PID: int | None = None


class _Cpu:
    """CPU seconds of the Neo4j server and of this process over a block of requests."""

    def __enter__(self) -> _Cpu:
        self.srv, self.own = server_cpu(_SERVER_PID), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.srv, self.own = server_cpu(_SERVER_PID) - self.srv, time.process_time() - self.own

    def line(self, requests: int) -> str:
        return (f"CPU per request: neo4j {1000 * self.srv / requests:.1f} ms, "
                f"this process {1000 * self.own / requests:.1f} ms")


_RECORDED: list[tuple[str, dict]] | None = None  # (template, parameters) while replay records


def _group_cache():
    from graphmem.core.config import get_settings
    from graphmem.recall.cache import GroupCache

    return GroupCache(get_settings().vector_cache_mb)


CACHE = _group_cache()
"""The benchmark process's recall cache (what a server's Runtime holds)."""


def _instrument() -> None:
    """Time every named template read (Store.read) into _CALLS (and record it for --replay)."""
    original = Store.read

    def timed(self: Store, name: str, /, **params):
        if _RECORDED is not None:
            _RECORDED.append((name, params))
        t = time.perf_counter()
        try:
            return original(self, name, **params)
        finally:
            _CALLS[name].append((time.perf_counter() - t) * 1000)

    Store.read = timed  # type: ignore[method-assign]


def _report_calls(requests: int) -> None:
    rows = sorted(_CALLS.items(), key=lambda kv: -sum(kv[1]))
    print(f"    {'template':<40} {'calls/req':>9} {'p50 ms':>8} {'p95 ms':>8} {'ms/req':>8}")
    for name, ms in rows:
        print(f"    {name:<40} {len(ms) / requests:9.2f} {pct(ms, .5):8.1f} {pct(ms, .95):8.1f} "
              f"{sum(ms) / requests:8.1f}")
    _CALLS.clear()


def _serial(fn, /, *args, **kwargs) -> Future:
    """graphmem.store.db.in_background run in the caller's thread (the order of work before it)."""
    f: Future = Future()
    try:
        f.set_result(fn(*args, **kwargs))
    except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
        f.set_exception(e)
    return f


def _set_serial(on: bool) -> None:
    import graphmem.query.pipeline as pipeline
    import graphmem.recall.pool as recall
    import graphmem.recall.search as search

    if not hasattr(db, "in_background"):  # an older checkout: its reads are serial anyway
        return
    for mod in (pipeline, recall, search):
        if hasattr(mod, "in_background"):  # recall's reads overlap since issue 12's latency work
            mod.in_background = _serial if on else db.in_background  # type: ignore[attr-defined]


def bench_group(store: Store, embedder: Embedder, gid: str, corpus: Corpus, queries: int, asks: int,
                profile: cProfile.Profile | None, serial: bool = False, no_model: int = 0,
                replay: int = 0) -> None:
    _set_serial(serial)
    from bench_ask import scripted_handler

    from graphmem.llm import ChatModel
    from graphmem.query import ask, read_roster
    from tests.scripted_llm import ScriptedLLM

    from graphmem.recall.search import group_state

    t = time.perf_counter()
    held = CACHE.warm(store, group_state(store, gid), [m.id for m in read_roster(store, gid, counts=False)])
    if held:
        print(f"  {gid}: person vector matrices loaded in {time.perf_counter() - t:.1f} s "
              f"({held / 2**20:.0f} MiB; GRAPHMEM_VECTOR_CACHE_MB=0 measures without them)")
    qs = [corpus.query() for _ in range(queries + 3)]
    for q in qs[:3]:
        search_messages(store, embedder, gid, q, k=10, pool_n=40, cache=CACHE)
    _CALLS.clear()
    walls = []
    with _Cpu() as cpu:
        for q in qs[3:]:
            t = time.perf_counter()
            search_messages(store, embedder, gid, q, k=10, pool_n=40, cache=CACHE)
            walls.append((time.perf_counter() - t) * 1000)
    how = "serial" if serial else "overlapped"
    print(f"  {gid} [{how}]: search p50 {pct(walls, .5):.1f} ms p95 {pct(walls, .95):.1f} ms ({queries} queries); "
          f"{cpu.line(queries)}")
    _report_calls(queries)

    roster = read_roster(store, gid)
    questions = [f"What did {corpus.rng.choice(roster).name} say about {corpus.query()}?"
                 for _ in range(asks + 3)]
    stages: dict[str, list[float]] = defaultdict(list)
    walls = []
    with ScriptedLLM() as server:
        server.handler = scripted_handler({gid: roster})
        model = ChatModel(base_url=server.base_url, model=server.model, timeout_s=30, max_retries=0)
        settings = Settings(_env_file=None)
        cpu = _Cpu()
        for i, q in enumerate(questions):
            if i == 3:
                _CALLS.clear()
                cpu.__enter__()
                if profile:
                    profile.enable()
            t = time.perf_counter()
            r = ask(store, embedder, gid, q, model=model, settings=settings, cache=CACHE)
            wall = time.perf_counter() - t
            if i < 3:
                continue
            model_s = {stage: u.model_s for stage, u in r.usage.items()}
            walls.append((wall - sum(model_s.values())) * 1000)
            for stage, s in {**r.timings_s, **r.s2_timings_s}.items():
                stages[stage].append((s - model_s.get(stage, 0.0)) * 1000)
        cpu.__exit__()
        if profile:
            profile.disable()
        model.close()
    print(f"  {gid} [{how}]: non-model ask p50 {pct(walls, .5):.1f} ms p95 {pct(walls, .95):.1f} ms ({asks} asks); "
          f"{cpu.line(asks)} (the scripted model server's thread included)")
    print(f"    {'stage (model latency out)':<40} {'p50 ms':>8} {'p95 ms':>8}")
    for stage, ms in stages.items():
        print(f"    {stage:<40} {pct(ms, .5):8.1f} {pct(ms, .95):8.1f}")
    _report_calls(asks)
    if no_model:
        _ask_without_model(store, embedder, gid, questions, no_model, how)
    if replay:
        _replay(store, embedder, gid, questions, replay)


def _replay(store: Store, embedder: Embedder, gid: str, questions: list[str], n: int, reps: int = 3) -> None:
    """Record the reads of ``n`` asks (scripted model), then run each template's calls alone.

    Per template: calls per ask, and per call the CPU milliseconds of the Neo4j server and of
    this process (decoding the rows included) and the rows returned. Run one template at a time,
    the server's CPU is its own work whatever else the machine does; the sum is the CPU an ask
    costs when nothing overlaps.
    """
    global _RECORDED
    from bench_ask import scripted_handler

    from graphmem.llm import ChatModel
    from graphmem.query import ask, read_roster
    from tests.scripted_llm import ScriptedLLM

    with ScriptedLLM() as server:
        server.handler = scripted_handler({gid: read_roster(store, gid)})
        model = ChatModel(base_url=server.base_url, model=server.model, timeout_s=30, max_retries=0)
        _RECORDED = []
        for q in questions[3:3 + n]:
            ask(store, embedder, gid, q, model=model, settings=Settings(_env_file=None), cache=CACHE)
        recorded, _RECORDED = _RECORDED, None
        model.close()
    by: dict[str, list[dict]] = defaultdict(list)
    for name, params in recorded:
        by[name].append(params)
    print(f"  {gid}: the reads of {n} asks replayed one template at a time ({reps} rounds)")
    print(f"    {'template':<40} {'calls/ask':>9} {'neo4j ms':>9} {'client ms':>9} {'rows':>6}  (per call)")
    total_srv = total_own = 0.0
    for name, plist in sorted(by.items(), key=lambda kv: -len(kv[1])):
        rows = 0
        with _Cpu() as cpu:
            for _ in range(reps):
                for params in plist:
                    rows += len(store.read(name, **params))
        calls = reps * len(plist)
        srv, own = 1000 * cpu.srv / calls, 1000 * cpu.own / calls
        total_srv += srv * len(plist) / n
        total_own += own * len(plist) / n
        print(f"    {name:<40} {len(plist) / n:9.2f} {srv:9.1f} {own:9.1f} {rows / calls:6.0f}")
    print(f"    {'per ask':<40} {'':>9} {total_srv:9.1f} {total_own:9.1f}")
    _CALLS.clear()


def _ask_without_model(store: Store, embedder: Embedder, gid: str, questions: list[str], n: int,
                       how: str) -> None:
    """``ask`` with no model at all: Project's rules, one recall, System 2, the composed evidence."""
    from graphmem.query import ask

    settings = Settings(_env_file=None)
    for q in questions[:3]:
        ask(store, embedder, gid, q, model=None, settings=settings, cache=CACHE)
    _CALLS.clear()
    walls = []
    with _Cpu() as cpu:
        for i in range(n):
            q = questions[3 + i % max(len(questions) - 3, 1)]
            t = time.perf_counter()
            ask(store, embedder, gid, q, model=None, settings=settings, cache=CACHE)
            walls.append((time.perf_counter() - t) * 1000)
    print(f"  {gid} [{how}]: ask without a model p50 {pct(walls, .5):.1f} ms p95 {pct(walls, .95):.1f} ms "
          f"({n} asks); {cpu.line(n)}")
    _report_calls(n)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("groups", nargs="+")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--asks", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7,
                    help="the corpus seed (the vocabulary of the questions; bench_scale.py uses 7)")
    ap.add_argument("--tiny-model", type=Path, default=None,
                    help="the tiny model the vectors were built with (bench_scale.py --tiny-model)")
    ap.add_argument("--cprofile", type=Path, default=None, help="write a cProfile of the asks here")
    ap.add_argument("--compare-serial", action="store_true",
                    help="also run every group with the independent reads one after the other "
                         "(search's two rankings, ask's System 1 and System 2, recall's fulltext, "
                         "dense, person and time reads), alternating runs")
    ap.add_argument("--rounds", type=int, default=1, help="repeat the whole measurement")
    ap.add_argument("--no-model", type=int, default=0, metavar="N",
                    help="also run N asks with no model at all (Project's deterministic rules, no "
                         "Select, Sufficiency or second recall; the same questions)")
    ap.add_argument("--replay", type=int, default=0, metavar="N",
                    help="also record the reads of N asks and replay each template alone: "
                         "Neo4j and client CPU per call")
    args = ap.parse_args()
    logging.getLogger("graphmem.recall.search").setLevel(logging.ERROR)
    quiet_notifications()
    embedder = (Embedder(build_tiny_model(args.tiny_model), batch_size=256, threads=1)
                if args.tiny_model else Embedder.from_settings(get_settings()))
    embedder.encode(["warm up"])
    store = Store(open_driver(get_settings()))
    global _SERVER_PID
    _SERVER_PID = neo4j_pid_and_home()[0]
    _instrument()
    profile = cProfile.Profile() if args.cprofile else None
    corpus = Corpus(args.seed)
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    for _ in range(args.rounds):
        for gid in args.groups:
            for serial in ((True, False) if args.compare_serial else (False,)):
                bench_group(store, embedder, gid, corpus, args.queries, args.asks, profile, serial,
                            args.no_model, args.replay)
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")
    if profile:
        profile.dump_stats(args.cprofile)
    store.driver.close()


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
