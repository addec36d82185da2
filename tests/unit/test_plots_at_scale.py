"""Plots that read at scale (issue 28, item 7), no database: the timeline bins messages on a
large group and draws derived records per person; the eval category chart labels n per bar."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from graphmem.eval.report import CategoryRow, RunSummary, _plot_categories  # noqa: E402
from graphmem.views import timeline as tl  # noqa: E402
from graphmem.views.common import SessionInfo  # noqa: E402


def _big(n: int) -> tl.Timeline:
    people = [("caroline", "Caroline"), ("melanie", "Melanie")]
    return tl.Timeline(
        group_id="conv", name="Caroline & Melanie", people=people,
        sessions=[SessionInfo(id="session_1", messages=n, ts_first="2023-05-08T13:56:00",
                              ts_last="2023-05-08T14:56:00", first_position=0, last_position=n - 1)],
        messages=[tl.TimelineMark(person=people[i % 2][0], position=i) for i in range(n)],
        stance_changes=[], decisions=[],
        records=[tl.TimelineMark(person="caroline", position=10, record="e1.1", content="x",
                                 layer="per_speaker_core", state="head"),
                 tl.TimelineMark(person="GROUP", position=20, record="e1.2", content="y",
                                 layer="group_interaction", state="superseded")],
    )


def _artists(monkeypatch, timeline: tl.Timeline) -> dict[str, list[object]]:
    """What render_timeline_png drew, by legend label (the real render, axes kept)."""
    from matplotlib.axes import Axes

    seen: dict[str, list[object]] = {}
    for name in ("scatter", "bar"):
        real = getattr(Axes, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            seen.setdefault(f"{_name}:{kwargs.get('label', '')}", []).append(args)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(Axes, name, spy)
    png = tl.render_timeline_png(timeline)
    assert png.startswith(b"\x89PNG")
    return seen


def test_a_large_group_is_binned_not_one_dot_per_message(monkeypatch):
    drawn = _artists(monkeypatch, _big(419))
    assert "scatter:message" not in drawn  # 419 dots would merge into two lines
    bars = [k for k in drawn if k.startswith("bar:messages per ")]
    assert len(bars) == 1 and "7-message bin" in bars[0]  # ceil(419 / 60) messages per bin
    assert sum(len(v) for k, v in drawn.items() if k in bars) <= 2 * tl.BINS
    assert "scatter:Core" in drawn and "scatter:Interaction, replaced" in drawn  # derived records shown


def test_a_small_group_keeps_a_dot_per_message(monkeypatch):
    drawn = _artists(monkeypatch, _big(40))
    (args,) = drawn["scatter:message"]
    assert len(args[0]) == 40 and not any(k.startswith("bar:") for k in drawn)


def _run(label: str, cats: dict[str, tuple[int, float]]) -> RunSummary:
    return RunSummary(run_dir=label, label=label, n=sum(n for n, _ in cats.values()),
                      config={"bench": "locomo", "system": "graphmem", "ablate": None, "ask_enabled": True},
                      categories=[CategoryRow(category=c, n=n, recall=v, recall_n=n) for c, (n, v) in cats.items()])


def test_the_category_chart_labels_n_on_every_bar(monkeypatch, tmp_path: Path):
    from matplotlib.axes import Axes

    labels: list[list[str]] = []
    ticks: list[list[str]] = []
    real_label, real_ticks = Axes.bar_label, Axes.set_xticklabels
    monkeypatch.setattr(Axes, "bar_label", lambda self, c, labels_=None, **kw: (
        labels.append(list(kw.get("labels", labels_ or []))), real_label(self, c, **kw))[1])
    monkeypatch.setattr(Axes, "set_xticklabels", lambda self, names, *a, **kw: (
        ticks.append(list(names)), real_ticks(self, names, *a, **kw))[1])
    runs = [_run("hybrid", {"multi-hop": (15, 40.0), "open-domain": (5, 20.0)}),
            _run("fulltext", {"multi-hop": (15, 33.0)})]
    assert _plot_categories(runs, tmp_path / "categories.png")
    assert (tmp_path / "categories.png").read_bytes().startswith(b"\x89PNG")
    cats = ticks[0]
    assert [lab for lab in cats] == [c for c in cats if "(n=" in c] and len(cats) == 2
    assert labels[0] == [f"n={15 if 'multi' in c else 5}" for c in cats]
    assert labels[1] == ["n=15" if "multi" in c else "" for c in cats]  # no bar, no label
