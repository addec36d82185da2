"""Writer (System 2) overhead without a language model, and Writer input growth.

Usage:
    .venv/bin/python bench/bench_derive.py [--networks ../shared/data/socialmembench/networks]
        [--mode session|window] [--window 25] [--growth-window 10] [--repeat 1] [--keep]

Each SocialMemBench network is ingested under a fresh group id (``bench-derive-<run>-<network>``)
and derived through the real pipeline - roster/heads reads, prompt building, the real openai
client and HTTP, validation, FROM selection, embeddings, one write transaction per segment -
against the local scripted OpenAI-compatible server (tests/scripted_llm.py). The scripted Writer
answers a plausible fixed action list computed from the prompt: per speaker of the segment an
UPDATE of their per_speaker_core head when CURRENT MEMORY has one, else an ADD; one cross-person
per_speaker_profile ADD when a message names another participant; one GROUP decision ADD
sourced to the segment's last speaker. So the figures are the NON-MODEL overhead of writing:
wall time here is what remains when the model answers instantly.

Prints, per network and per 100 messages: Writer calls, prompt/completion tokens, wall time;
then, for the longest network, the Writer prompt size per segment as CURRENT MEMORY grows.
Token counts: "words" = the scripted server's usage block (whitespace words); "wp" = WordPiece
tokens of the all-MiniLM-L6-v2 tokenizer shipped offline (a proxy for a BPE tokenizer such as
Qwen2.5's; English BPE counts are usually within ~10% of it). The groups are deleted at the end
unless --keep.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


from graphmem.derived import memory  # noqa: E402
from graphmem.core.config import Settings  # noqa: E402
from graphmem.core.config import get_settings  # noqa: E402
from graphmem.store.db import Store, open_driver, quiet_notifications  # noqa: E402
from graphmem.core.embed import Embedder  # noqa: E402
from graphmem.verbatim.ingest import ingest_conversations  # noqa: E402
from graphmem.llm import TokenLedger  # noqa: E402
from graphmem.store.schema import apply_schema  # noqa: E402
from graphmem.derived.writer import derive_group  # noqa: E402
from loaders import load_conversations  # noqa: E402
from tests.scripted_llm import Reply, ScriptedLLM  # noqa: E402

MEMORY_LINE = re.compile(r"^(\S+) \[(\w+)\|(.+?)\(by (.+?)\)@[^\]]*\] (.*)$")
MESSAGE_LINE = re.compile(r"^\[[^\]]*\] (.+?): (.*)$")


def _section(text: str, start: str, stop: str) -> list[str]:
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith(start):
            inside = True
            continue
        if inside and (not line.strip() or line.startswith(stop)):
            break
        if inside:
            lines.append(line)
    return lines


def scripted_writer(body: dict) -> Reply:
    """A plausible fixed Writer: see the module docstring."""
    text = body["messages"][-1]["content"]
    participants = re.search(r"^PARTICIPANTS: (.*) \(and GROUP", text, re.M).group(1).split(", ")
    session = re.search(r"^SESSION: (.*)$", text, re.M).group(1)
    heads = [m.groups() for m in map(MEMORY_LINE.match, _section(text, "CURRENT MEMORY", "NEW")) if m]
    messages = [m.groups() for m in map(MESSAGE_LINE.match, _section(text, "NEW MESSAGES", "LIMIT")) if m]
    core = {owner: eid for eid, layer, owner, _src, _c in heads if layer == "per_speaker_core"}
    actions: list[dict] = []
    said: dict[str, str] = {}
    for speaker, msg in messages:
        said.setdefault(speaker, msg)
    for speaker, msg in said.items():
        gist = " ".join(msg.split()[:12])
        if speaker in core:
            actions.append({"action": "UPDATE", "entry_id": core[speaker], "content": f"in {session}: {gist}"})
        else:
            actions.append({"action": "ADD", "owner": speaker, "source": speaker, "layer": "per_speaker_core",
                            "utype": "stance", "content": gist})
    for speaker, msg in messages:
        named = [p for p in participants if p != speaker and re.search(rf"\b{re.escape(p.split(' (')[0])}\b", msg)]
        if named:
            actions.append({"action": "ADD", "owner": named[0], "source": speaker, "layer": "per_speaker_profile",
                            "utype": "observation", "content": f"seen by {speaker}: {' '.join(msg.split()[:10])}"})
            break
    if messages:
        last_speaker, last_msg = messages[-1]
        actions.append({"action": "ADD", "owner": "GROUP", "source": last_speaker, "layer": "group_interaction",
                        "utype": "decision", "content": f"{session}: {' '.join(last_msg.split()[:10])}"})
    return Reply.json({"actions": actions})


def prompt_stats(body: dict, tokenizer) -> dict:
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    full = system + "\n" + user
    heads = len([ln for ln in _section(user, "CURRENT MEMORY", "NEW") if MEMORY_LINE.match(ln)])
    msgs = len([ln for ln in _section(user, "NEW MESSAGES", "LIMIT") if MESSAGE_LINE.match(ln)])
    return {
        "heads": heads,
        "messages": msgs,
        "words": len(full.split()),
        "wp": len(tokenizer.encode(full, add_special_tokens=False).ids),
        "wp_system": len(tokenizer.encode(system, add_special_tokens=False).ids),
        "chars": len(full),
    }


def delete_group(store: Store, gid: str) -> None:
    from graphmem.groups.service import forget_group

    forget_group(store, gid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--networks", type=Path, default=ROOT.parent / "shared/data/socialmembench/networks")
    ap.add_argument("--mode", default="session", choices=("session", "window"))
    ap.add_argument("--window", type=int, default=25)
    ap.add_argument("--growth-window", type=int, default=10,
                    help="window size of the extra growth run on the longest network (0 = skip)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="derive each network this many times (fresh groups) and keep the fastest wall time")
    ap.add_argument("--keep", action="store_true", help="keep the benchmark groups")
    args = ap.parse_args()
    quiet_notifications()

    files = sorted(args.networks.glob("*.json"))
    conversations = [c for f in files for c in load_conversations(f, "socialmem")]
    run_id = uuid.uuid4().hex[:6]
    embedder = Embedder.from_settings(get_settings())
    embedder.encode(["warm up"])
    embed_s = [0.0]
    plain_encode = embedder.encode

    def timed_encode(texts, *a, **kw):  # time spent embedding record contents
        t0 = time.perf_counter()
        try:
            return plain_encode(texts, *a, **kw)
        finally:
            embed_s[0] += time.perf_counter() - t0
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(embedder.impl.folder / "tokenizer.json"))  # the onnx backend's
    settings = Settings(_env_file=None, writer_segment=args.mode, writer_window=args.window)
    driver = open_driver(get_settings())
    store = Store(driver)
    apply_schema(store, embedder.dimension)
    made: list[str] = []
    rows = []
    growth: dict[str, list[dict]] = {}
    try:
        with ScriptedLLM() as server:
            server.handler = scripted_writer
            for original in conversations:
                name = original.group_id
                best: dict | None = None
                for rep in range(max(1, args.repeat)):  # fresh group per repeat; keep the fastest
                    gid = f"bench-derive-{run_id}-{name}-r{rep}"
                    made.append(gid)
                    conv = original.model_copy(update={
                        "group_id": gid,
                        "messages": [m.model_copy(update={"group_id": gid}) for m in original.messages]})
                    ingest_conversations(store, [conv], embedder)
                    model = server.chat_model(ledger=TokenLedger(), timeout_s=60, max_retries=0)
                    n_before = len(server.chat_requests)
                    embed_s[0] = 0.0
                    embedder.encode = timed_encode
                    t = time.perf_counter()
                    summary = derive_group(store, gid, model=model, embedder=embedder, settings=settings)
                    wall = time.perf_counter() - t
                    embedder.encode = plain_encode
                    model.close()
                    stats = [prompt_stats(b, tokenizer) for b in server.chat_requests[n_before:]]
                    row = {
                        "network": name, "messages": len(conv.messages), "segments": summary.segments_written,
                        "calls": summary.calls, "prompt": summary.prompt_tokens,
                        "completion": summary.completion_tokens, "prompt_wp": sum(s["wp"] for s in stats),
                        "wall": wall, "model_s": summary.model_s,
                        "records": summary.records_added + summary.records_updated,
                        "heads": len(memory.current_heads(store, gid)),
                        "rejected": summary.actions_rejected, "embed_s": embed_s[0],
                    }
                    if best is None or row["wall"] < best["wall"]:
                        best = row
                    growth[name] = stats
                rows.append(best)
            longest = max(conversations, key=lambda c: len(c.messages))
            extra = None
            if args.growth_window:
                gid = f"bench-derive-{run_id}-{longest.group_id}-w{args.growth_window}"
                made.append(gid)
                conv = longest.model_copy(update={
                    "group_id": gid, "messages": [m.model_copy(update={"group_id": gid}) for m in longest.messages]})
                ingest_conversations(store, [conv], embedder)
                model = server.chat_model(ledger=TokenLedger(), timeout_s=60, max_retries=0)
                n_before = len(server.chat_requests)
                derive_group(store, gid, model=model, embedder=embedder,
                             settings=Settings(_env_file=None, writer_segment="window",
                                               writer_window=args.growth_window))
                extra = [prompt_stats(b, tokenizer) for b in server.chat_requests[n_before:]]
                model.close()
    finally:
        if not args.keep:
            for gid in made:
                delete_group(store, gid)
        driver.close()

    mode = f"{args.mode}" + (f" ({args.window} messages)" if args.mode == "window" else "")
    print(f"\n== Writer overhead on {len(rows)} SocialMemBench networks, segments = {mode}, scripted Writer")
    print(f"{'network':14s} {'msgs':>5s} {'segs':>5s} {'calls':>5s} {'prompt(words)':>13s} {'prompt(wp)':>10s} "
          f"{'compl':>6s} {'wall s':>7s} {'http s':>7s} {'embed s':>7s} {'records':>7s} {'heads':>5s}")
    for r in rows:
        print(f"{r['network']:14s} {r['messages']:5d} {r['segments']:5d} {r['calls']:5d} {r['prompt']:13,d} "
              f"{r['prompt_wp']:10,d} {r['completion']:6,d} {r['wall']:7.2f} {r['model_s']:7.2f} {r['embed_s']:7.2f} "
              f"{r['records']:7d} {r['heads']:5d}")
    n = sum(r["messages"] for r in rows)
    tot = {k: sum(r[k] for r in rows) for k in ("calls", "prompt", "prompt_wp", "completion", "wall", "model_s", "embed_s")}
    f = 100.0 / n
    print(f"\nper 100 messages ({n} messages in all): {tot['calls'] * f:.1f} Writer calls, "
          f"{tot['prompt'] * f:,.0f} prompt words ({tot['prompt_wp'] * f:,.0f} WordPiece tokens), "
          f"{tot['completion'] * f:,.0f} completion words, {tot['wall'] * f:.2f} s wall "
          f"({tot['model_s'] * f:.2f} s of it in HTTP calls to the instant scripted Writer, "
          f"{tot['embed_s'] * f:.2f} s embedding record contents on CPU, the rest Neo4j reads/writes "
          f"and Python)")
    per_net = [r["wall"] * 100.0 / r["messages"] for r in rows]
    print(f"wall s per 100 messages across networks: median {statistics.median(per_net):.2f}, "
          f"min {min(per_net):.2f}, max {max(per_net):.2f}")
    print(f"system prompt alone: {growth[rows[0]['network']][0]['wp_system']:,} WordPiece tokens per call")

    def table(title: str, stats: list[dict]) -> None:
        print(f"\n== {title}")
        print(f"{'segment':>7s} {'new msgs':>8s} {'heads in prompt':>15s} {'prompt words':>12s} "
              f"{'prompt wp':>9s} {'chars':>7s}")
        for i, s in enumerate(stats, start=1):
            print(f"{i:7d} {s['messages']:8d} {s['heads']:15d} {s['words']:12,d} {s['wp']:9,d} {s['chars']:7,d}")
        if len(stats) > 1:
            dh = stats[-1]["heads"] - stats[0]["heads"]
            dwp = stats[-1]["wp"] - stats[0]["wp"]
            if dh:
                print(f"  ~{dwp / dh:.0f} WordPiece tokens of prompt per head in CURRENT MEMORY")

    table(f"Writer input growth on the longest network {longest.group_id} ({len(longest.messages)} messages), "
          f"segments = {mode}", growth[longest.group_id])
    if extra:
        table(f"same network, windows of {args.growth_window} messages", extra)


if __name__ == "__main__":
    main()
