"""Plot labels (issue 24, point 11): a display name, group name, session id or decision that
looks like matplotlib mathtext must not fail ``timeline.png`` / ``summary --plot``. No database:
the timeline is built by hand and rendered."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from graphmem.views.common import SessionInfo  # noqa: E402
from graphmem.views.summary import DecisionEvent  # noqa: E402
from graphmem.views.timeline import Timeline, TimelineMark, _plain, render_timeline_png  # noqa: E402

MATH = r"$\foo$"  # an unknown mathtext command: matplotlib raised ValueError for the whole plot


def _timeline(text: str) -> Timeline:
    return Timeline(
        group_id="g", name=f"trip {text}", people=[("p1", text), ("p2", f"Ben {text} $5")],
        sessions=[SessionInfo(id=f"s {text}", messages=2, ts_first="2026-03-01T10:00:00",
                              ts_last="2026-03-01T10:01:00", first_position=0, last_position=1)],
        messages=[TimelineMark(person="p1", position=0), TimelineMark(person="p2", position=1)],
        stance_changes=[TimelineMark(person="p1", position=1, record="r0", content=text)],
        decisions=[DecisionEvent(id="r1", layer="group_insight", label="Insight", utype="decision",
                                 content=f"we pay {text} and $\\sqrt{{x}}$", state="head",
                                 ts="2026-03-01T10:01:00", source="p1", source_name=text, position=1)],
    )


@pytest.mark.parametrize("text", [MATH, "$x^$", "a $ b", "$$", "\\$"])
def test_timeline_draws_names_that_look_like_mathtext(text):
    png = render_timeline_png(_timeline(text))
    assert png.startswith(b"\x89PNG")


def test_labels_are_drawn_as_written():
    assert _plain(MATH, 24) == r"\$\foo\$"  # escaped: matplotlib shows "$\foo$" literally
    assert _plain("x" * 30 + "$", 10).endswith("…")  # cut before escaping: no half escape
