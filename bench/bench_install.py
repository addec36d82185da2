"""What a new user pays: install size and time, cold start of the core commands, encoder speed.

Usage:
    .venv/bin/python bench/bench_install.py [--wheel dist/graphmem-*.whl] [--runs 5] [--keep]

Builds the wheel (unless ``--wheel``), creates a fresh venv in a temporary folder, installs the
wheel WITHOUT extras (pip's cache warm, as on a second install) and prints:

- venv size (MB), install time (s), and the heavy packages it holds (torch, CUDA, nltk,
  networkx, scipy, pandas: none is expected);
- ``import graphmem`` time (median of ``--runs``);
- cold ``graphmem search`` and offline ``graphmem ask`` wall time on the sample chat (a new
  process each run, median of ``--runs``);
- the MCP first call: ``pip install mcp`` (the ``mcp`` extra) into the same venv, then the wall
  time from starting ``graphmem mcp`` (stdio) to the first ``search_messages`` result (median of 3);
- ``import graphmem.client`` time with httpx (the ``client`` extra; median of ``--runs``);
- texts/s of the onnx backend (base venv) and of the torch backend (this interpreter, when
  sentence-transformers is installed), batch encoding and single queries.

Needs the local Neo4j (``make neo4j``); the sample chat goes into group ``bench-install``,
which is deleted afterwards. Targets (issue 25): venv <= 600 MB, install <= 60 s,
import <= 0.3 s, search <= 1.5 s, ask <= 2 s, MCP first call <= 2 s. Figures only; not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUP = "bench-install"
HEAVY = ("torch", "nvidia-", "nltk", "networkx", "scipy", "pandas", "sentence-transformers", "transformers")


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}... failed ({out.returncode}): {out.stderr.strip()[-800:]}")
    return out


def wall(cmd: list[str], env: dict[str, str], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def import_s(python: Path, module: str, env: dict[str, str], cwd: Path, runs: int) -> float:
    """Median seconds of ``import module`` in a new ``python`` process, over ``runs`` processes."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    return statistics.median(float(run([str(python), "-c", code], env=env, cwd=cwd).stdout) for _ in range(runs))


def du_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def forget_bench_group() -> None:
    sys.path.insert(0, str(ROOT))
    from graphmem.core.config import get_settings
    from graphmem.groups.service import forget_group
    from graphmem.store.db import Store, open_driver

    driver = open_driver(get_settings())
    try:
        forget_group(Store(driver), GROUP)
    finally:
        driver.close()


def mcp_first_call(graphmem: Path, env: dict[str, str]) -> float:
    """Seconds from starting ``graphmem mcp`` (stdio) to the first search_messages result."""
    t = time.perf_counter()
    proc = subprocess.Popen([str(graphmem), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict) -> None:
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def reply(want_id: int) -> dict:
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("graphmem mcp closed its output")
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}})
        reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "search_messages", "arguments": {"group_id": GROUP, "query": "which trail", "k": 3}}})
        result = reply(2)
        took = time.perf_counter() - t
        if "error" in result or result.get("result", {}).get("isError"):
            raise RuntimeError(f"search_messages failed: {result}")
        return took
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(timeout=30)


ENCODE_CODE = """
import json, statistics, sys, time
from graphmem.core.embed import Embedder
texts = json.load(open(sys.argv[1]))
e = Embedder(backend=sys.argv[2], device='cpu')
t = time.perf_counter(); e.warm(); load = time.perf_counter() - t
e.encode(texts[:8])
t = time.perf_counter(); e.encode(texts); bulk = len(texts) / (time.perf_counter() - t)
single = []
for q in texts[:40]:
    t = time.perf_counter(); e.encode([q]); single.append(time.perf_counter() - t)
print(json.dumps({"load_s": load, "texts_per_s": bulk, "single_ms": 1000 * statistics.median(single)}))
"""


def encoder_figures(python: Path, backend: str, texts_file: Path, env: dict[str, str]) -> dict | None:
    try:
        out = run([str(python), "-c", ENCODE_CODE, str(texts_file), backend], env=env, cwd=ROOT)
    except RuntimeError as e:
        print(f"  {backend}: not measured ({str(e).splitlines()[-1]})")
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheel", type=Path, help="an already built wheel (default: build one)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the temporary venv")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="graphmem-bench-install-"))
    try:
        wheel = args.wheel
        if wheel is None:
            t = time.perf_counter()
            run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"), str(ROOT)])
            wheel = next((tmp / "dist").glob("graphmem-*.whl"))
            print(f"wheel built in {time.perf_counter() - t:.1f} s: {wheel.name}, {wheel.stat().st_size / 1e6:.0f} MB")
        venv = tmp / "venv"
        run([sys.executable, "-m", "venv", str(venv)])
        py, gm = venv / "bin" / "python", venv / "bin" / "graphmem"
        t = time.perf_counter()
        run([str(py), "-m", "pip", "install", "-q", str(wheel)])
        install_s = time.perf_counter() - t
        listed = run([str(py), "-m", "pip", "list", "--format", "json"]).stdout
        names = sorted(p["name"].lower() for p in json.loads(listed))
        heavy = [n for n in names if n.startswith(HEAVY)]
        print(f"base install: {install_s:.1f} s (warm pip cache), venv {du_mb(venv):.0f} MB, "
              f"{len(names)} packages; heavy packages: {', '.join(heavy) or 'none'}")

        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["GRAPHMEM_HOME"] = str(Path(env.get("GRAPHMEM_HOME", ROOT / ".graphmem")).resolve())
        print(f"import graphmem: {import_s(py, 'graphmem', env, tmp, args.runs):.3f} s (median of {args.runs})")

        forget_bench_group()
        run([str(gm), "ingest", str(ROOT / "examples" / "sample_chat.jsonl"), "--format", "jsonl",
             "--group", GROUP], env=env, cwd=ROOT)
        med, all_s = wall([str(gm), "search", "--group", GROUP, "which trail did the family choose", "-k", "5"],
                          env, args.runs)
        print(f"cold graphmem search: {med:.2f} s median ({', '.join(f'{x:.2f}' for x in all_s)})")
        med, all_s = wall([str(gm), "ask", "--group", GROUP, "Which trail did the family choose, and does Ben agree?"],
                          {**env, "GRAPHMEM_LLM_BASE_URL": "", "GRAPHMEM_LLM_MODEL": ""}, args.runs)
        print(f"offline graphmem ask: {med:.2f} s median ({', '.join(f'{x:.2f}' for x in all_s)})")

        t = time.perf_counter()
        run([str(py), "-m", "pip", "install", "-q", "mcp>=2.3,<3"])
        print(f"mcp extra installed in {time.perf_counter() - t:.1f} s, venv now {du_mb(venv):.0f} MB")
        run([str(py), "-m", "pip", "install", "-q", "httpx>=0.27"])  # the client extra
        print(f"import graphmem.client: {import_s(py, 'graphmem.client', env, tmp, args.runs):.3f} s "
              f"(median of {args.runs}; target 0.5 s)")
        firsts = [mcp_first_call(gm, env) for _ in range(3)]
        print(f"MCP first call (start to first search_messages result): {statistics.median(firsts):.2f} s "
              f"median ({', '.join(f'{x:.2f}' for x in firsts)})")

        texts_file = tmp / "texts.json"
        sys.path.insert(0, str(ROOT))
        from loaders import load_conversations

        conv = load_conversations(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json", "locomo")[0]
        texts_file.write_text(json.dumps([f"{m.speaker} ({m.ts[:10]}): {m.text}" for m in conv.messages[:300]]))
        for backend, python in (("onnx", py), ("torch", Path(sys.executable))):
            f = encoder_figures(python, backend, texts_file, env)
            if f:
                print(f"encoder {backend}: load {f['load_s']:.2f} s, {f['texts_per_s']:.1f} texts/s (300 LoCoMo "
                      f"turns, batch 64), single query {f['single_ms']:.1f} ms (median of 40)")
        forget_bench_group()
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
