"""Scale: bulk ingest, store size and group-scoped search/ask latency at 10k / 100k / 1M messages.

Usage (a dedicated, empty Neo4j; see docs/scale.md for the exact commands and server sizes):
    .venv/bin/python bench/bench_scale.py [--steps 10000:1000,100000:10000,1000000:100000]
        [--seed 7] [--tiny-model DIR] [--minilm-sample 500] [--queries 40] [--asks 30]
        [--write-jsonl PATH --store-size N --group-size G]

Corpus: a seeded synthetic generator (nothing is read from disk and nothing is committed):
many groups of 3-12 speakers, sessions of 8-80 messages on 1-3 channels, ~15% replies to a
recent message of the same channel, texts of 4-30 words drawn (Zipf) from one vocabulary shared
by every group, so a word of one group's query also occurs in every other group.

Steps grow one store: step ``S:G`` adds a target group of G messages and filler groups until
the store holds S messages. Per step it prints:
- ingest msg/s without embeddings (``--embed later``, the bulk path) over the step's new
  messages, and msg/s of ``embed_group`` filling the target group's vectors;
- once: ingest msg/s with embeddings by the default CPU embedder (MiniLM) on a sample;
- peak RSS of this process and of the Neo4j server, store size on disk;
- ``search`` (hybrid, k = 10, pool 40) and non-model ``ask`` p50/p95 in the target group and in
  the earlier targets (now in a bigger store); ask runs the full pipeline against the scripted
  model server (tests/scripted_llm.py, as bench/bench_ask.py) with the model's time taken out;
- derive's non-model overhead per 100 messages (bench/bench_derive.py's scripted Writer) on a
  fresh 200-message group.

Vectors: with ``--tiny-model DIR`` the vectors of the large sizes come from a tiny random
sentence-transformers model built locally into DIR (1 layer, 32 hidden, 384 output dims): the
figures are about the database (index and query cost), not retrieval quality. Filler groups are
stored with ``--embed later`` and keep no vectors unless ``--embed-fillers``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from graphmem.core.config import Settings, get_settings  # noqa: E402
from graphmem.core.config import get_settings  # noqa: E402
from graphmem.store.db import Store, open_driver  # noqa: E402
from graphmem.core.embed import Embedder  # noqa: E402
from graphmem.verbatim.ingest import ingest_conversations  # noqa: E402
from graphmem.store.schema import apply_schema  # noqa: E402
from graphmem.recall.search import search_messages  # noqa: E402
from graphmem.verbatim.vectors import embed_group  # noqa: E402
from graphmem.core.model import Conversation, MessageRecord  # noqa: E402

SYLLABLES = "ka lo mi ne ru sa to vi be da fo gu ha je ko li mu na po re si ta ul ve wo xa yu ze".split()
COMMON = ("the a and to of in is it you that we for on with this be at have are not but so was "
          "what can just about like will my your do if all me our they there get go out up").split()


class Corpus:
    """Seeded generator of group conversations sharing one vocabulary."""

    def __init__(self, seed: int, vocab: int = 6000) -> None:
        self.rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < vocab:
            words.add("".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 4))))
        self.words = COMMON + sorted(words)
        weights = [1.0 / (r + 1) ** 1.07 for r in range(len(self.words))]
        total = sum(weights)
        self.cum = list(_accumulate([w / total for w in weights]))
        self.names = sorted({w.capitalize() for w in self.rng.sample(sorted(words), 400)})

    def word(self) -> str:
        return self.words[_bisect(self.cum, self.rng.random())]

    def text(self) -> str:
        return " ".join(self.word() for _ in range(self.rng.randint(4, 30)))

    def group(self, group_id: str, n: int, start: datetime) -> Conversation:
        """One group of exactly ``n`` messages."""
        rng = self.rng
        speakers = rng.sample(self.names, rng.randint(3, 12))
        channels = [""] if rng.random() < 0.6 else [f"ch{i}" for i in range(rng.randint(2, 3))]
        msgs: list[MessageRecord] = []
        recent: dict[str, list[str]] = {c: [] for c in channels}
        index = {c: 0 for c in channels}
        ts = start
        s = 0
        while len(msgs) < n:
            ch = rng.choice(channels)
            index[ch] += 1
            sid = f"{ch}/s{index[ch]}" if ch else f"main-s{index[ch]}"  # channel-qualified (graphmem.core.limits)
            ts += timedelta(hours=rng.randint(2, 72))
            session_ts = ts.isoformat()
            for turn in range(min(rng.randint(8, 80), n - len(msgs))):
                ts += timedelta(seconds=rng.randint(5, 600))
                mid = f"m{len(msgs)}"
                reply = rng.choice(recent[ch][-8:]) if recent[ch] and rng.random() < 0.15 else ""
                sp = rng.choice(speakers)
                msgs.append(MessageRecord.model_construct(
                    id=mid, group_id=group_id, channel=ch, session=sid, session_index=index[ch],
                    session_ts=session_ts, turn=turn, speaker=sp, speaker_id="", text=self.text(),
                    ts=ts.isoformat(), reply_to=reply, source_ref=f"{group_id}:{mid}",
                ))
                recent[ch].append(mid)
            s += 1
        return Conversation(group_id=group_id, name=group_id, messages=msgs, source="synthetic")

    def query(self) -> str:
        return " ".join(self.word() for _ in range(self.rng.randint(3, 6)))


def _accumulate(xs: list[float]):
    t = 0.0
    for x in xs:
        t += x
        yield t


def _bisect(cum: list[float], x: float) -> int:
    lo, hi = 0, len(cum) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if cum[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def build_tiny_model(path: Path, dims: int = 384) -> str:
    """A tiny random sentence-transformers model (MiniLM's tokenizer, 1 layer, ``dims`` out)."""
    if (path / "modules.json").exists():
        return str(path)
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoTokenizer, BertConfig, BertModel

    from graphmem.core.embed import default_model_path

    torch.manual_seed(0)
    base = path / "bert"
    tok = AutoTokenizer.from_pretrained(default_model_path())
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=1,
                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    BertModel(cfg).save_pretrained(base)
    tok.save_pretrained(base)
    word = models.Transformer(str(base), max_seq_length=64)
    pool = models.Pooling(word.get_word_embedding_dimension(), "mean")
    dense = models.Dense(word.get_word_embedding_dimension(), dims)
    SentenceTransformer(modules=[word, pool, dense, models.Normalize()], device="cpu").save(str(path))
    return str(path)


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(q * len(v)) - 1))] if v else 0.0


def neo4j_pid_and_home() -> tuple[int | None, Path]:
    s = get_settings()
    out = subprocess.run([str(ROOT / ".venv/bin/graphmem"), "neo4j", "status", "--json"],
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout).get("pid"), s.neo4j_home
    except json.JSONDecodeError:
        return None, s.neo4j_home


def server_rss_mb(pid: int | None) -> tuple[float, float]:
    """(current RSS, peak RSS) of the Neo4j JVM in MiB."""
    if not pid:
        return 0.0, 0.0
    vals = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            k, v = line.split(":")
            vals[k] = int(v.split()[0]) / 1024
    return vals.get("VmRSS", 0.0), vals.get("VmHWM", 0.0)


def store_size_mb(home: Path) -> float:
    total = 0
    for sub in ("data/databases/neo4j", "data/transactions/neo4j"):
        for p in (home / sub).rglob("*"):
            if p.is_file():
                total += p.stat().st_size
    return total / 2**20


def existing(store: Store, gid: str) -> int:
    rows = store.read("groups/get_group", group_id=gid)
    return int(rows[0]["messages"]) if rows else 0


def measure_search(store: Store, embedder: Embedder, gid: str, corpus: Corpus, n: int) -> list[float]:
    qs = [corpus.query() for _ in range(n + 3)]
    for q in qs[:3]:  # warm-up
        search_messages(store, embedder, gid, q, k=10, pool_n=40)
    out = []
    for q in qs[3:]:
        t = time.perf_counter()
        search_messages(store, embedder, gid, q, k=10, pool_n=40)
        out.append((time.perf_counter() - t) * 1000)
    return out


def db_hits(store: Store, name: str, **params) -> tuple[int, int]:
    """(database hits, rows) of one template run under PROFILE: work done, whatever the load."""
    from graphmem.store.db import cypher

    def total(plan) -> int:
        return int(plan.get("dbHits", 0)) + sum(total(c) for c in plan.get("children", []))

    with store.driver.session(database=store.database) as session:
        result = session.run("PROFILE " + cypher(name), params)
        rows = len(list(result))
        return total(result.consume().profile), rows


def measure_work(store: Store, embedder: Embedder, gid: str, corpus: Corpus) -> str:
    """Database hits of the two candidate queries of one search in ``gid`` (k = 40)."""
    from graphmem.store.scope import group_key
    from graphmem.recall.search import group_state, search_terms

    q = corpus.query()
    terms = search_terms(q) or "search_text:(kalo)"
    vec = embedder.encode([q])[0].tolist()
    ft = db_hits(store, "recall/fulltext_messages", group_id=gid, group_key=group_key(gid), terms=terms, k=40)
    state = group_state(store, gid)
    if state.vector_index:
        vq = db_hits(store, "recall/vector_messages_scoped", index=state.vector_index, group_id=gid, vector=vec, k=40)
        how = "own index"
    else:
        vq = db_hits(store, "recall/vector_messages_exact", group_id=gid, vector=vec, k=40, max_instant=None)
        how = "exact"
    return f"db hits per search: fulltext {ft[0]:,} ({ft[1]} rows), vector {how} {vq[0]:,} ({vq[1]} rows)"


def measure_ask(store: Store, embedder: Embedder, gid: str, corpus: Corpus, n: int) -> list[float]:
    from bench_ask import scripted_handler

    from graphmem.llm import ChatModel
    from graphmem.query import ask, read_roster
    from tests.scripted_llm import ScriptedLLM

    roster = read_roster(store, gid)
    questions = [f"What did {corpus.rng.choice(roster).name} say about {corpus.query()}?" for _ in range(n + 2)]
    out = []
    with ScriptedLLM() as server:
        server.handler = scripted_handler({gid: roster})
        model = ChatModel(base_url=server.base_url, model=server.model, timeout_s=30, max_retries=0)
        settings = Settings(_env_file=None)
        for i, q in enumerate(questions):
            t = time.perf_counter()
            r = ask(store, embedder, gid, q, model=model, settings=settings)
            wall = time.perf_counter() - t
            if i >= 2:  # warm-up
                out.append((wall - sum(u.model_s for u in r.usage.values())) * 1000)
        model.close()
    return out


def measure_derive(store: Store, embedder: Embedder, corpus: Corpus, tag: str) -> float:
    """Non-model wall seconds of derive per 100 messages on a fresh 200-message group."""
    from bench_derive import scripted_writer

    from graphmem.llm import TokenLedger
    from graphmem.derived.writer import derive_group
    from tests.scripted_llm import ScriptedLLM

    gid = f"scale-derive-{tag}"
    if existing(store, gid):
        from graphmem.groups.service import forget_group

        forget_group(store, gid)
    conv = corpus.group(gid, 200, datetime(2025, 1, 1, tzinfo=timezone.utc))
    ingest_conversations(store, [conv], embedder)
    with ScriptedLLM() as server:
        server.handler = scripted_writer
        model = server.chat_model(ledger=TokenLedger(), timeout_s=60, max_retries=0)
        t = time.perf_counter()
        summary = derive_group(store, gid, model=model, embedder=embedder,
                               settings=Settings(_env_file=None))
        wall = time.perf_counter() - t
        model.close()
    return (wall - summary.model_s) / len(conv.messages) * 100


def ingest_step(store: Store, corpus: Corpus, convs_iter, batch: int) -> tuple[int, float]:
    n, secs = 0, 0.0
    for conv in convs_iter:
        t = time.perf_counter()
        s = ingest_conversations(store, [conv], None, embed="later", batch_size=batch)
        secs += time.perf_counter() - t
        n += s.messages_written
    return n, secs


def fillers(corpus: Corpus, step: int, count: int):
    made, i = 0, 0
    while made < count:
        size = min(count - made, corpus.rng.randint(300, 6000))
        yield corpus.group(f"scale-f{step}-{i}", size, datetime(2024, 1, 1, tzinfo=timezone.utc))
        made += size
        i += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default="10000:1000,100000:10000,1000000:100000",
                    help="store-size:group-size pairs, growing one store")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--tiny-model", type=Path, default=None,
                    help="build/use a tiny local model here for the vectors of every step")
    ap.add_argument("--minilm-sample", type=int, default=500,
                    help="messages ingested with the default CPU embedder (0 = skip)")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--asks", type=int, default=30)
    ap.add_argument("--also", nargs="*", default=[],
                    help="more groups already in the store to embed and measure at the last step")
    ap.add_argument("--embed-fillers", action="store_true", help="also give filler groups vectors")
    ap.add_argument("--write-jsonl", type=Path, default=None,
                    help="only write one store's corpus as --format jsonl (with --store-size/--group-size)")
    ap.add_argument("--store-size", type=int, default=10_000)
    ap.add_argument("--group-size", type=int, default=1_000)
    args = ap.parse_args()
    logging.getLogger("neo4j.notifications").setLevel(logging.ERROR)
    logging.getLogger("graphmem.recall.search").setLevel(logging.ERROR)

    corpus = Corpus(args.seed)
    if args.write_jsonl:
        with args.write_jsonl.open("w", encoding="utf-8") as f:
            convs = [corpus.group(f"scale-g{args.group_size}", args.group_size,
                                  datetime(2024, 1, 1, tzinfo=timezone.utc))]
            for conv in [*convs, *fillers(corpus, 0, args.store_size - args.group_size)]:
                for m in conv.messages:
                    f.write(json.dumps({"group": m.group_id, "session": m.session, "speaker": m.speaker,
                                        "text": m.text, "ts": m.ts, "id": m.id, "reply_to": m.reply_to,
                                        "channel": m.channel}) + "\n")
        print(f"wrote {args.store_size} messages to {args.write_jsonl}")
        return

    s = get_settings()
    from graphmem.core.embed import Embedder

    minilm = Embedder.from_settings(get_settings())
    vec_embedder = (Embedder(build_tiny_model(args.tiny_model), batch_size=256, threads=1)
                    if args.tiny_model else minilm)
    driver = open_driver(get_settings())
    store = Store(driver)
    apply_schema(store, vec_embedder.dimension)
    pid, home = neo4j_pid_and_home()
    print(f"settings: bulk batch {s.bulk_batch_size}, vector exact max {s.vector_exact_max}, "
          f"vectors by {'tiny local model' if args.tiny_model else 'MiniLM'}, embed device {vec_embedder.device}")

    if args.minilm_sample:
        gid = "scale-minilm-sample"
        if not existing(store, gid):
            conv = corpus.group(gid, args.minilm_sample, datetime(2023, 1, 1, tzinfo=timezone.utc))
            from graphmem.core.embed import embedding_text

            minilm.encode(["warm up"])
            t = time.perf_counter()
            minilm.encode([embedding_text(m) for m in conv.messages])
            bound = len(conv.messages) / (time.perf_counter() - t)
            t = time.perf_counter()
            n = ingest_conversations(store, [conv], minilm).messages_written
            print(f"ingest with embeddings (default MiniLM, {minilm.device}): "
                  f"{n / (time.perf_counter() - t):.0f} msg/s over {n} messages; encoding alone "
                  f"{bound:.0f} msg/s (the embedding-bound rate)")

    targets: list[str] = []
    for step, pair in enumerate(args.steps.split(",")):
        size, gsize = (int(x) for x in pair.split(":"))
        in_store = int(store.read_text("MATCH (m:Message) RETURN count(m) AS n")[0]["n"])
        gid = f"scale-g{gsize}"
        targets.append(gid)
        print(f"\n== step {step + 1}: store {size:,} messages, target group {gid} ({gsize:,})")
        if in_store >= size and existing(store, gid) >= gsize:
            print(f"   (reusing the {in_store:,} messages already stored)")
        else:
            rows = [corpus.group(gid, gsize, datetime(2024, 1, 1, tzinfo=timezone.utc))]
            n, secs = ingest_step(store, corpus, iter(rows), s.bulk_batch_size)
            n2, secs2 = ingest_step(store, corpus, fillers(corpus, step, max(0, size - in_store - gsize)),
                                    s.bulk_batch_size)
            print(f"ingest without embeddings (bulk, --embed later): {(n + n2) / (secs + secs2):,.0f} msg/s "
                  f"({n + n2:,} messages in {secs + secs2:.1f} s; target group alone "
                  f"{n / secs:,.0f} msg/s)")
            if args.embed_fillers:
                t = time.perf_counter()
                done = 0
                for g in store.read("stats/list_groups"):
                    if g["id"].startswith(f"scale-f{step}-"):
                        done += embed_group(store, vec_embedder, g["id"], batch_size=2000,
                                            exact_max=s.vector_exact_max).embedded
                print(f"embed fillers: {done / (time.perf_counter() - t):,.0f} msg/s ({done:,})")
        vec_embedder.encode(["warm up"])
        for t_gid in [gid, *(args.also if step == len(args.steps.split(",")) - 1 else [])]:
            t = time.perf_counter()
            e = embed_group(store, vec_embedder, t_gid, batch_size=2000, exact_max=s.vector_exact_max)
            secs = time.perf_counter() - t
            print(f"embed_group {t_gid}: {e.embedded / secs:,.0f} msg/s ({e.embedded:,} vectors in {secs:.1f} s"
                  f"{', own vector index' if e.vector_index else ', exact scoring'}; {e.messages:,} messages)")
        targets.extend(a for a in (args.also if step == len(args.steps.split(",")) - 1 else []))
        rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cur, peak = server_rss_mb(pid)
        print(f"peak RSS: bench process {rss_self:,.0f} MiB, Neo4j {peak:,.0f} MiB (now {cur:,.0f}); "
              f"store on disk {store_size_mb(home):,.0f} MiB")
        for t_gid in targets:
            sm = measure_search(store, vec_embedder, t_gid, corpus, args.queries)
            am = measure_ask(store, vec_embedder, t_gid, corpus, args.asks)
            print(f"{t_gid:>14}: search p50 {pct(sm, .5):6.1f} ms p95 {pct(sm, .95):6.1f} ms | "
                  f"non-model ask p50 {pct(am, .5):6.1f} ms p95 {pct(am, .95):6.1f} ms")
            print(f"{'':>14}  {measure_work(store, vec_embedder, t_gid, corpus)}")
        d = measure_derive(store, vec_embedder, corpus, f"{step}")
        print(f"derive non-model overhead: {d:.2f} s per 100 messages")
    driver.close()


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
