"""Which texts of an input a stored message still goes through (graphmem.verbatim.ingest.pending_texts;
no database): texts after the stored one, less those the message already had, so an older
export re-sent after an edit is a stale redelivery (docs/reliability.md, Edits)."""

from __future__ import annotations

import pytest

from graphmem.verbatim.ingest import pending_texts


@pytest.mark.parametrize(("texts", "stored", "history", "want"), [
    (["v1"], "v1", [], []),                          # identical redelivery
    (["v2"], "v1", [], ["v2"]),                      # an edit
    (["v1"], "v2", ["v1"], []),                      # the older export after the edit: stale
    (["v1", "v2"], "v2", ["v1"], []),                # an input going through both, rerun
    (["v1", "v2", "v3"], "v2", ["v1"], ["v3"]),      # a later version in a longer export
    (["v1", "v3"], "v2", ["v1"], ["v3"]),            # skips the stored one, still new at the end
    (["v3", "v1"], "v2", ["v1"], ["v3"]),            # the new text is kept, the old one dropped
    (["v2", "v1"], "v2", ["v1"], []),                # back to an earlier text: stale as well
    (["v0", "v2", "v3"], "v2", [], ["v3"]),          # what precedes the stored text is older
])
def test_pending_texts(texts: list[str], stored: str, history: list[str], want: list[str]) -> None:
    assert pending_texts(texts, stored, history) == want


def test_a_text_repeated_inside_one_input_is_stale_there_too():
    """p, q, p for one id in one input goes through p and q, as three separate inputs do
    (before, every change was applied: p, q, p, and the current text sat in its own history)."""
    from graphmem.verbatim.ingest import collapse
    from tests.factories import conversation

    rows = [{"id": "y1", "speaker": "Ana", "text": t, "ts": "2026-03-01T10:00:00"} for t in ("p", "q", "p", "q")]
    (d,) = collapse(conversation("g", rows))
    assert d.texts == ["p", "q"] and d.occurrences == 4
    assert pending_texts(d.texts, "base", []) == ["p", "q"]
    assert pending_texts(d.texts, "q", ["base", "p"]) == []
