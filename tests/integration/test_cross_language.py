"""A question in another language than the group's messages says so (issue 27, item 11): the
embedder is English-only and fulltext matches words, so graphmem cannot find such evidence
reliably; it must not stay silent about it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphmem.core.language import detect
from graphmem.query import ask
from graphmem.recall.search import search_group
from graphmem.verbatim.ingest import ingest_conversations
from loaders import load_conversations
from tests.factories import runtime_of

pytestmark = pytest.mark.neo4j
ROOT = Path(__file__).resolve().parents[2]


def test_the_detector_tells_the_languages_apart():
    assert detect("¿Qué sendero eligió la familia para la excursión?") == "es"
    assert detect("Quel sentier la famille a-t-elle choisi pour la randonnée ?") == "fr"
    assert detect("Which trail did the family choose for the hike?") == "en"
    assert detect("ok") is None  # too short to tell


@pytest.fixture
def family(store, embedder, group_id):
    ingest_conversations(store, load_conversations(ROOT / "examples" / "sample_chat.jsonl", "jsonl", group=group_id), embedder)
    return group_id


def test_a_spanish_question_about_english_messages_says_so(store, embedder, family):
    rt = runtime_of(store, embedder)
    spanish = ask(rt, family, "¿Qué sendero eligió la familia para la excursión?")
    assert "Spanish (es)" in spanish.note and "English (en)" in spanish.note and "may be missed" in spanish.note
    english = ask(rt, family, "Which trail did the family choose for the hike?")
    assert "may be missed" not in english.note
    found = search_group(store, embedder, family, "Quel sentier la famille a-t-elle choisi pour la randonnée ?", k=5)
    assert "French (fr)" in found.warning
    assert "may be missed" not in search_group(store, embedder, family, "which trail did the family choose", k=5).warning


def test_the_cli_says_it_too(family):
    out = subprocess.run([sys.executable, "-m", "graphmem", "search", "--group", family, "--json",
                          "¿Qué sendero eligió la familia para la excursión?"],
                         capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Spanish (es)" in json.loads(out.stdout)["warning"] and "Spanish (es)" in out.stderr
