"""The repository holds code and small shipped artifacts only: benchmark data and Neo4j jars
live outside it, and no tracked file reaches 5 MB (the embedder update, the largest, is a
compressed archive of float16 factors)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 5_000_000


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_no_tracked_file_reaches_5_mb():
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    big = {name: (ROOT / name).stat().st_size for name in files.decode().split("\0")
           if name and (ROOT / name).is_file() and (ROOT / name).stat().st_size >= LIMIT}
    assert not big, big
