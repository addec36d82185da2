"""The SpeakerMem-R1 authors' published figures (``published.json``), for side-by-side views.

Transcribed by hand from the paper (Tables 1, 2, 4, 9-12, 16-19, 22, 23 and Figures 5-6); the
numbers are theirs, not graphmem's, and every report that shows them labels them so.
:func:`paper_rows` finds the rows that correspond to one of our runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["PaperRow", "load_published", "paper_category_row", "paper_main_row", "paper_row_name", "paper_rows"]

PUBLISHED_LABEL = "published by the SpeakerMem-R1 authors (their numbers, not ours)"


@lru_cache(maxsize=1)
def load_published() -> dict[str, Any]:
    """The parsed ``published.json``: ``{"source": str, "tables": {id: {title, columns, rows}}}``."""
    text = resources.files("graphmem.eval").joinpath("published.json").read_text(encoding="utf-8")
    published: dict[str, Any] = json.loads(text)
    return published


@dataclass(frozen=True)
class PaperRow:
    """One published row: table id and title, row name, and ``{column: value}`` (None = dash)."""

    table: str
    title: str
    row: str
    values: dict[str, float | None]


def _row(table: str, row: str) -> PaperRow | None:
    t = load_published()["tables"].get(table)
    if t is None or row not in t["rows"]:
        return None
    return PaperRow(table, t["title"], row, dict(zip(t["columns"], t["rows"][row], strict=True)))


def paper_row_name(system: str, ablate: str | None, ask_enabled: bool) -> str:
    """The paper's row name for one of our systems (``"BM25"``, ``"SpeakerMem-R1 (no ASK)"``, ``"w/o S2"``)."""
    if system == "bm25":
        return "BM25"
    if system == "embed":
        return "Embed"
    if system == "full-context":
        return "Full context"
    if ablate:
        return "w/o " + {"s1": "S1", "s2": "S2", "s2-group": "S2-group", "s2-person": "S2-person"}[ablate]
    return "SpeakerMem-R1" if ask_enabled else "SpeakerMem-R1 (no ASK)"


_MAIN_COLUMNS = {
    "groupmem": ("GM Acc", "GM F1", None, None),
    "socialmem": ("SM Acc", "SM F1", "MeanQ", "MeanN"),
    "evermem": ("EM-All Acc", "EM-All F1", None, None),
}
_CATEGORY_TABLES = {"groupmem": ("table16", "table18"), "socialmem": ("table17", "table19"),
                    "evermem": ("table2", None), "locomo": ("table4", None)}
_ABLATION_COLUMN = {"socialmem": "SM", "groupmem": "GM", "evermem": "EM"}


def paper_main_row(bench: str, system: str, ablate: str | None, ask_enabled: bool) -> dict[str, tuple[float | None, str]]:
    """Published headline figures for a run: ``{metric: (value, "table / row")}``.

    Metrics: ``accuracy`` and ``token_f1`` (%), ``mean_q`` / ``mean_n`` (SocialMem), taken from
    Table 1 (DeepSeek-V4-Flash block), Table 22 (ablations) or Tables 4 / 23 (LoCoMo). Empty
    when the paper has no such row.
    """
    name = paper_row_name(system, ablate, ask_enabled)
    out: dict[str, tuple[float | None, str]] = {}
    if bench == "locomo":
        if system == "speakermem" and not ablate:
            r = _row("table23", "All questions")
            if r:
                out["accuracy"] = (r.values["accuracy"], "Table 23, all questions")
            r = _row("table23", "Excluding AD")
            if r:
                out["accuracy_non_ad"] = (r.values["accuracy"], "Table 23 / Table 4, excluding AD")
        return out
    if ablate:
        r = _row("table22", name)
        if r:
            out["accuracy"] = (r.values[_ABLATION_COLUMN[bench]], f"Table 22, {name}")
        return out
    r = _row("table1_deepseek", name)
    if r:
        acc, f1, mq, mn = _MAIN_COLUMNS[bench]
        where = f"Table 1 (DeepSeek-V4-Flash), {name}"
        out["accuracy"] = (r.values[acc], where)
        out["token_f1"] = (r.values[f1], where)
        if mq and mn:
            out["mean_q"] = (r.values[mq], where)
            out["mean_n"] = (r.values[mn], where)
    if bench == "evermem" and name == "SpeakerMem-R1":
        r = _row("table2", name)
        if r:
            out["accuracy_table2"] = (r.values["Weighted total"], "Table 2 (GPT-4.1-mini / Gemini-3-Flash), SpeakerMem-R1")
    return out


def paper_category_row(bench: str, system: str, ablate: str | None, ask_enabled: bool, metric: str = "accuracy") -> PaperRow | None:
    """The published per-category row (accuracy or token-F1) matching a run, or None."""
    if ablate:
        return None
    acc_table, f1_table = _CATEGORY_TABLES.get(bench, (None, None))
    table = acc_table if metric == "accuracy" else f1_table
    if table is None:
        return None
    name = paper_row_name(system, ablate, ask_enabled)
    if bench in ("locomo", "evermem") and name != "SpeakerMem-R1":
        return None
    if bench == "locomo":  # Table 23 has all five categories (Table 4 leaves out adversarial)
        t = load_published()["tables"]["table23"]
        values = {name_: vals[2] for name_, vals in t["rows"].items()}
        return PaperRow("table23", t["title"], "SpeakerMem-R1", values)
    return _row(table, name)


def paper_rows(table: str) -> list[PaperRow]:
    """Every row of one published table, in the paper's order."""
    t = load_published()["tables"][table]
    return [PaperRow(table, t["title"], name, dict(zip(t["columns"], vals, strict=True))) for name, vals in t["rows"].items()]
