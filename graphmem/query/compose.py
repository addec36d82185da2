"""Compose and Answer (SpeakerMem-R1 §3.3 "Compose", App. B.3 step 4, prompt I.6).

The evidence handed to the answerer has two parts:

- ``[RAW EXCERPTS]``: System 1 messages, one a line, tagged ``(speaker @ time, msg <id>)``;
  expansion neighbours say which anchor they belong to.
- ``[MEMORY SLICE]``: one block per row (person, or GROUP). A cell shows ``* current:`` with the
  record's layer, type, source and time and its id, and, in full mode, ``- history:`` lines
  after it (the earlier states, oldest first, with times; the header says so); ``+ said about <owner>:`` lines are source cells; a person with no record
  on the issue shows ``(none)``, or their own closest messages as ``raw fallback:`` lines.
"""

from __future__ import annotations


from graphmem.llm import ChatModel, Usage
from graphmem.query import prompts
from graphmem.query.types import Cell, Excerpt, Projection, RecordVersion, Row
from graphmem.text import strip_think



def _one_line(text: str) -> str:
    return " ".join(text.split())


def excerpt_line(e: Excerpt) -> str:
    """``(Ana @ 2026-03-05T10:02:00, msg m12) text`` (+ channel and expansion anchor)."""
    where = f" #{e.channel}" if e.channel else ""
    extra = f", context of msg {e.expanded_from}" if e.via == "expand" and e.expanded_from else ""
    return f"({e.speaker} @ {e.ts}{where}, msg {e.id}{extra}) {_one_line(e.text)}"


def _tag(v: RecordVersion, owner_id: str) -> str:
    parts = [p for p in (v.layer, v.utype) if p]
    if v.source_name and v.source_id != owner_id:
        parts.append(f"by {v.source_name}")
    if v.ts:
        parts.append(f"@ {v.ts}")
    parts.append(f"rec {v.id}")
    return "[" + "; ".join(parts) + "]"


def _cell_lines(c: Cell) -> list[str]:
    owner = c.owner_id if c.owner_kind == "person" else "GROUP"
    if c.via == "source":
        about = "the group" if c.owner_kind == "group" else (c.owner_name or c.owner_id)
        lines = [f"  + said about {about}: {_one_line(c.current.content)} {_tag(c.current, owner)}"]
        lines += [f"    - history: {_one_line(v.content)} @ {v.ts} [rec {v.id}]" for v in c.history]
        return lines
    lines = [f"  * current: {_one_line(c.current.content)} {_tag(c.current, owner)}"]
    lines += [f"  - history: {_one_line(v.content)} @ {v.ts} [rec {v.id}]" for v in c.history]
    return lines


def slice_text(projection: Projection, rows: list[Row], as_of: str = "") -> str:
    """The ``[MEMORY SLICE]`` block (see the module docstring)."""
    if as_of:
        mode = f"state as of {as_of}" + (" with earlier states" if projection.tense == "full" else "")
    else:
        mode = (
            "current state (head)" if projection.tense == "head"
            else "full history (current state first, then earlier states oldest first)"
        )
    out = [f"issue: {projection.issue} | {mode}"]
    if not rows:
        out.append("(no rows)")
    for row in rows:
        label = "GROUP" if row.kind == "group" else row.name
        owner_cells = [c for c in row.cells if c.via == "owner"]
        source_cells = [c for c in row.cells if c.via == "source"]
        if row.status == "records":
            out.append(label)
            for c in owner_cells:
                out.extend(_cell_lines(c))
        elif row.status == "raw":
            out.append(f"{label} (no derived record on this matter; own messages closest to it:)")
            out.extend(f"  raw fallback: {excerpt_line(e)}" for e in row.raw)
        else:
            out.append(f"{label} (none)")
        for c in source_cells:
            out.extend(_cell_lines(c))
    return "\n".join(out)


def excerpts_text(excerpts: list[Excerpt]) -> str:
    """The ``[RAW EXCERPTS]`` block, one numbered message a line."""
    if not excerpts:
        return "(none)"
    return "\n".join(f"{i}. {excerpt_line(e)}" for i, e in enumerate(excerpts, start=1))


def compose(
    question: str, projection: Projection, excerpts: list[Excerpt], rows: list[Row], as_of: str = ""
) -> str:
    """The whole user message for the answerer (question, raw excerpts, memory slice)."""
    return prompts.ANSWER_USER.format(
        question=question, excerpts=excerpts_text(excerpts), slice=slice_text(projection, rows, as_of)
    )


def answer(model: ChatModel, evidence: str, *, max_tokens: int = 512) -> tuple[str, Usage]:
    """Ask the answerer (prompt I.6, in our words) with the composed evidence.

    Returns:
        (answer text with any ``<think>`` block removed, usage).

    Raises:
        LLMError: the endpoint failed after retries.
    """
    text, usage = model.complete_text(
        [{"role": "system", "content": prompts.ANSWER_SYSTEM}, {"role": "user", "content": evidence}],
        stage="answer",
        max_tokens=max_tokens,
    )
    return strip_think(text), usage
