"""A GRAPHMEM_* setting that does not parse, or is out of range, stops a command with one line
naming the setting and the value (no traceback), before anything connects."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("name, value, words", [
    ("GRAPHMEM_VECTOR_CACHE_MB", "-1", "greater than or equal to 0"),
    ("GRAPHMEM_VECTOR_CACHE_MB", "abc", "valid integer"),
    ("GRAPHMEM_VECTOR_EXACT_MAX", "-5", "greater than or equal to 0"),
])
def test_a_bad_setting_is_one_clear_line(name, value, words):
    env = {**os.environ, name: value, "COLUMNS": "200"}
    run = subprocess.run([sys.executable, "-m", "graphmem", "stats"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1
    assert "Traceback" not in run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, run.stderr
    assert name in lines[0] and repr(value) in lines[0] and words in lines[0]
