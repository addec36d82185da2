"""Bytes per ``ask`` answer, full view against compact view (docs/mcp.md, "Compact answers").

Usage:
    .venv/bin/python bench/bench_answer_bytes.py [--locomo ../shared/data/locomo/locomo10.json]
        [--questions 20] [--keep]

What it does:
1. The sample chat: ingests ``examples/sample_chat.jsonl`` (group ``trail-trip``) and replays
   ``examples/sample_writer_actions.jsonl`` as its derived memory, as ``make demo`` does
   (skipped when the group is already there), then asks five questions about it.
2. The first LoCoMo conversation (``conv-26``, under its own group id; deleted at the end
   unless --keep) and asks its first ``--questions`` questions.
3. Every ask runs offline (no answer model: the answer is null and the compact view carries
   the composed evidence). Prints, per data set, the mean and max bytes of UTF-8 JSON of the
   full view (what ``POST /groups/{id}/ask`` answers by default) and of the compact view (what
   the MCP ``ask`` tool and ``?view=compact`` answer), and the bytes of the evidence alone.

Requires the local Neo4j (make neo4j). Figures go to stdout; nothing here is a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphmem.facade import Memory  # noqa: E402
from loaders import locomo  # noqa: E402

SAMPLE_QUESTIONS = [
    "Which trail did the family choose, and does Ben agree?",
    "What is wrong with Mom's knee?",
    "Who prefers the ridge trail?",
    "What did Dad decide?",
    "What did Cara say about Ben?",
]


def measure(mem: Memory, group_id: str, questions: list[str]) -> dict[str, list[int]]:
    sizes: dict[str, list[int]] = {"full": [], "compact": [], "evidence": []}
    for q in questions:
        r = mem.ask(group_id, q)
        sizes["full"].append(len(r.model_dump_json().encode()))
        sizes["compact"].append(len(r.compact().model_dump_json().encode()))
        sizes["evidence"].append(len(r.evidence.encode()))
    return sizes


def report(name: str, sizes: dict[str, list[int]]) -> None:
    n = len(sizes["full"])
    full, compact, ev = (statistics.mean(sizes[k]) for k in ("full", "compact", "evidence"))
    print(f"{name}: {n} asks  full {full / 1000:.1f} KB (max {max(sizes['full']) / 1000:.1f})  "
          f"compact {compact / 1000:.1f} KB (max {max(sizes['compact']) / 1000:.1f})  "
          f"evidence alone {ev / 1000:.1f} KB  compact/full {compact / full:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", default=str(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()

    mem = Memory.open()
    try:
        if not mem.runtime.store.read("groups/get_group", group_id="trail-trip"):
            cli = [sys.executable, "-m", "graphmem"]
            subprocess.run([*cli, "ingest", str(ROOT / "examples" / "sample_chat.jsonl"), "--format", "jsonl"],
                           check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
            subprocess.run([*cli, "derive", "--group", "trail-trip", "--replay",
                            str(ROOT / "examples" / "sample_writer_actions.jsonl")],
                           check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        report("sample chat (trail-trip, replayed derived memory)", measure(mem, "trail-trip", SAMPLE_QUESTIONS))

        conv = locomo.load_conversations(args.locomo)[0]
        gid = conv.group_id
        mem.ingest([conv])
        questions = [q.question for q in locomo.load_questions(args.locomo, group=gid)][: args.questions]
        try:
            report(f"LoCoMo {gid} ({len(conv.messages)} messages, System 1 only)", measure(mem, gid, questions))
        finally:
            if not args.keep:
                mem.forget_group(gid)
    finally:
        mem.close()


if __name__ == "__main__":
    main()
