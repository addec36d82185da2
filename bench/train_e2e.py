"""End-to-end CPU run of ``graphmem train collect | tiny | sft | grpo | eval`` on the hand-written
networks, with a tiny random model; prints the wall and CPU time of every command and the totals
(wall time depends on how busy the machine is; CPU time much less).

Needs the local Neo4j (``graphmem neo4j start``) and the ``train`` extra. The four networks of
``examples/train/networks.jsonl`` are ingested under fresh group ids (``e2e-<hex>-<network>``),
their teacher actions (``examples/train/actions/``) are replayed by ``train collect``, and the
groups are erased at the end. Usage: ``.venv/bin/python bench/train_e2e.py [--qa] [workdir]``.

``--qa`` adds the terminal QA gain (eq. 8, 22) to ``train grpo`` and ``train eval``: the
shipped questions (``examples/train/questions.jsonl``, renamed to the fresh groups) are passed
with ``--questions``, and the answerer and judge (``GRAPHMEM_LLM_*`` of the child processes)
are the *scripted* answerer of ``tests/train_qa_script.py`` on the local scripted
OpenAI-compatible server (no model: it answers right exactly when its evidence holds what the
question needs), so the figures measure the machinery, not a model.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GM = str(Path(sys.executable).parent / "graphmem")
sys.path.insert(0, str(ROOT))  # tests.scripted_llm / tests.train_qa_script for --qa


CPU: dict[str, float] = {}


def _child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(label: str, args: list[str], timings: dict[str, float], env: dict[str, str] | None = None) -> str:
    started, cpu0 = time.perf_counter(), _child_cpu_s()
    proc = subprocess.run([GM, *args], capture_output=True, text=True, env=env)
    timings[label] = time.perf_counter() - started
    CPU[label] = _child_cpu_s() - cpu0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{label} failed (exit {proc.returncode})")
    print(f"--- {label}: {timings[label]:.1f} s wall, {CPU[label]:.1f} s CPU")
    print("\n".join(line for line in proc.stdout.splitlines() if line.strip()))
    return proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", nargs="?", type=Path)
    parser.add_argument("--qa", action="store_true", help="terminal QA gain with the scripted answerer/judge")
    opts = parser.parse_args()
    work = opts.workdir or Path(tempfile.mkdtemp(prefix="graphmem-train-"))
    work.mkdir(parents=True, exist_ok=True)
    tag = f"e2e-{uuid.uuid4().hex[:6]}"
    chat, replay_dir = work / "networks.jsonl", work / "actions"
    replay_dir.mkdir(exist_ok=True)
    groups = []
    with chat.open("w", encoding="utf-8") as f:
        for line in (ROOT / "examples/train/networks.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            row["group"] = f"{tag}-{row['group']}"
            if row["group"] not in groups:
                groups.append(row["group"])
                shutil.copy(ROOT / "examples/train/actions" / f"{row['group'][len(tag) + 1:]}.jsonl",
                            replay_dir / f"{row['group']}.jsonl")
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    qa_args: list[str] = []
    env = None
    server = None
    if opts.qa:
        from tests.scripted_llm import ScriptedLLM
        from tests.train_qa_script import make_handler

        questions = work / "questions.jsonl"
        with questions.open("w", encoding="utf-8") as f:
            for line in (ROOT / "examples/train/questions.jsonl").read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                row["group"] = f"{tag}-{row['group']}"
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        server = ScriptedLLM().start()
        server.handler = make_handler()
        env = {**os.environ, **server.settings_env("GRAPHMEM_LLM")}
        qa_args = ["--questions", str(questions)]
        print(f"QA: scripted answerer and judge at {server.base_url} (tests/train_qa_script.py), not a model")
    t: dict[str, float] = {}
    try:
        run("ingest", ["ingest", str(chat), "--format", "jsonl"], t)
        run("train collect", ["train", "collect", *sum((["-g", g] for g in groups), []), "--replay-dir",
                              str(replay_dir), "--out", str(work / "teacher.jsonl")], t)
        run("train tiny", ["train", "tiny", str(work / "teacher.jsonl"), "--out", str(work / "tiny")], t)
        run("train sft", ["train", "sft", str(work / "teacher.jsonl"), "-m", str(work / "tiny"), "-o",
                          str(work / "sft"), "--full", "--max-steps", "12", "--grad-accum", "1", "--lr", "1e-2"], t)
        run("train grpo", ["train", "grpo", str(work / "teacher.jsonl"), "-m", str(work / "sft" / "merged"), "-o",
                           str(work / "grpo"), "-G", "4", "--rounds", "1", "--max-new-tokens", "24",
                           "--temperature", "1.5", "--top-p", "1.0", "--lr", "1e-3", "--lora-r", "4", *qa_args], t, env)
        run("train eval", ["train", "eval", str(work / "teacher.jsonl"), "-m", str(work / "grpo" / "merged"),
                           "--max-new-tokens", "24", *qa_args], t, env)
    finally:
        if server is not None:
            server.stop()
        from graphmem.core.config import get_settings
        from graphmem.store.db import Store, open_driver
        from graphmem.groups.service import forget_group

        driver = open_driver(get_settings())
        try:
            for g in groups:
                forget_group(Store(driver), g)
        finally:
            driver.close()
    print(f"total {sum(t.values()):.1f} s wall, {sum(CPU.values()):.1f} s CPU "
          f"({', '.join(f'{k} {v:.0f}/{CPU[k]:.0f}' for k, v in t.items())}); files in {work}")


if __name__ == "__main__":
    main()
