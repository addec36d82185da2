"""Compose and Answer (SpeakerMem-R1 §3.3 "Compose", App. B.3 step 4, prompt I.6).

The evidence handed to the answerer has two parts:

- ``[RAW EXCERPTS]``: System 1 messages, one a line, tagged ``(speaker @ time, msg <id>)``;
  expansion neighbours say which anchor they belong to.
- ``[MEMORY SLICE]``: one block per row (person, or GROUP). A cell shows ``* current:`` with the
  record's layer, type, source and time and its id, and, in full mode, ``- history:`` lines
  after it (the earlier states, oldest first, with times; the header says so); ``+ said about <owner>:`` lines are source cells; a person with no record
  on the issue shows ``(none)``, or their own closest messages as ``raw fallback:`` lines.

Evidence a model can use (docs/reliability.md, "Evidence"):

- Labels: a display name shared by several persons is shown as ``"Alex (u_alex_r)"``, by the
  same rule as the Writer's roster labels (:class:`graphmem.verbatim.roster.Roster`), in excerpts,
  row headers, sources and owners.
- A message appears once: the raw fallback messages of a row that are already among the
  excerpts are referred to by their excerpt numbers, in one line (``raw fallback: shown above
  (excerpt 3; excerpt 8)``), instead of being repeated.
- Long messages are clipped to ``max_message_chars`` around the passage that shares most words
  with the question and the issue, with ``[... N characters clipped ...]`` markers.
- The whole user message stays within ``max_tokens`` (estimated, four characters a token):
  long messages are first clipped harder (down to 400 characters), then the lowest-ranked
  excerpts go, then raw fallback messages (last row first), then earlier states (history
  lines), and whatever fits again is given back, best first; a closing ``[CUT]`` line says
  what was left out.
- Chat text is data: both parts sit between ``<<<MATERIAL tag>>>`` fence lines
  (:func:`graphmem.text.fence`), and the answer prompt says that fenced text is never an
  instruction (docs/security.md "Attribution").
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from graphmem.core.tokens import count_tokens
from graphmem.llm import ChatModel, Usage, estimate_tokens
from graphmem.query import prompts
from graphmem.query.types import Cell, Excerpt, Projection, RecordVersion, Row
from graphmem.verbatim.roster import Roster
from graphmem.core.text import STOP_WORDS, fence, one_line, strip_think

_WORD = re.compile(r"\w+")


def speaker_label(name: str, person_id: str, roster: Roster | None) -> str:
    """``name``, or ``"name (person_id)"`` when the name is shared by several persons of the
    roster (as display name, id or alias) or is ``GROUP`` - the Writer's labelling rule. A
    person keyed by its name (no speaker id: its id is the name) is labelled too, so a
    lookalike such as ``"Dad\u200b"`` beside Dad is marked as in the roster. Always one line
    (:func:`graphmem.core.text.one_line`): a name cannot begin an excerpt line of its own."""
    return one_line(_speaker_label(name, person_id, roster)) or name


def _speaker_label(name: str, person_id: str, roster: Roster | None) -> str:
    if roster is None or not person_id:
        return name
    entry = roster.entry(person_id)
    if entry is not None and entry.label != entry.name and entry.name == name:
        return entry.label
    if name == person_id:
        return name
    pid, _why = roster.resolve(name)
    return name if pid == person_id else f"{name} ({person_id})"


def clip_text(text: str, terms: frozenset[str], max_chars: int) -> tuple[str, bool]:
    """Clip ``text`` to ``max_chars`` characters around the passage richest in ``terms``.

    The window is the one holding most occurrences of the terms (lower-cased words; a word
    matches a term when equal or, for terms of five letters or more, sharing its first five);
    with no occurrence, the start of the text. Cut parts are replaced by
    ``[... N characters clipped ...]``.

    Returns:
        (the text, clipped or not; whether it was clipped).
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text, False
    lowered = text.lower()
    prefixes = {t[:5] for t in terms if len(t) >= 5}
    hits = [m.start() for m in _WORD.finditer(lowered)
            if m.group() in terms or (len(m.group()) >= 5 and m.group()[:5] in prefixes)]
    start = 0
    if hits:
        lead = max_chars // 4
        best = -1
        for h in hits:
            s = max(0, min(h - lead, len(text) - max_chars))
            n = bisect.bisect_left(hits, s + max_chars) - bisect.bisect_left(hits, s)
            if n > best:
                best, start = n, s
    end = start + max_chars
    out = text[start:end]
    if start > 0:
        out = f"[... {start:,} characters clipped ...] " + out
    if end < len(text):
        out += f" [... {len(text) - end:,} characters clipped ...]"
    return out, True


def _terms(*texts: str) -> frozenset[str]:
    return frozenset(w for t in texts for w in _WORD.findall(t.lower()) if len(w) >= 3 and w not in STOP_WORDS)


@dataclass
class _View:
    """What one rendering shows (the budget loop shrinks it)."""

    excerpts: list[bool]  # which excerpts are shown
    raw: list[list[bool]]  # which raw fallback messages are shown, per row
    history: bool = True
    max_chars: int = 0
    parts: dict[str, str] = field(default_factory=dict)  # the last rendering's parts (Composed.parts)


@dataclass
class Composed:
    """The composed evidence and what was clipped or cut to keep it usable.

    Attributes:
        text: the user message for the answerer.
        clipped: ids of messages shown clipped around their matching passage.
        cut: one phrase per kind of material left out to fit the token budget ([] = nothing).
        tokens: estimated tokens of ``text`` (four characters a token).
        parts: the verbatim excerpts, the structured slice (System 2 rows) and the question as
            rendered in ``text`` (for :func:`evidence_tokens`).
    """

    text: str
    clipped: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)
    tokens: int = 0
    parts: dict[str, str] = field(default_factory=dict)


def excerpt_line(e: Excerpt, roster: Roster | None = None, max_chars: int = 0,
                 terms: frozenset[str] = frozenset(), clipped: list[str] | None = None) -> str:
    """``(Ana @ 2026-03-05T10:02:00, msg m12) text`` (+ channel and expansion anchor).

    With a roster, a shared display name is labelled ``"Ana (u_ana_2)"``; with ``max_chars``,
    a longer text is clipped around ``terms`` (its id is appended to ``clipped``).
    """
    where = f" #{e.channel}" if e.channel else ""
    extra = f", context of msg {e.expanded_from}" if e.via == "expand" and e.expanded_from else ""
    text, was_clipped = clip_text(one_line(e.text), terms, max_chars)
    if was_clipped and clipped is not None and e.id not in clipped:
        clipped.append(e.id)
    who = speaker_label(e.speaker, e.person_id, roster)
    return f"({who} @ {e.ts}{where}, msg {e.id}{extra}) {text}"


def _tag(v: RecordVersion, owner_id: str, roster: Roster | None = None) -> str:
    parts = [p for p in (v.layer, v.utype) if p]
    if v.source_name and v.source_id != owner_id:
        name = v.source_name if v.source_kind == "group" else speaker_label(v.source_name, v.source_id, roster)
        parts.append(f"by {name}")
    if v.ts:
        parts.append(f"@ {v.ts}")
    parts.append(f"rec {v.id}")
    return "[" + "; ".join(parts) + "]"


def _cell_lines(c: Cell, roster: Roster | None = None, history: bool = True) -> list[str]:
    owner = c.owner_id if c.owner_kind == "person" else "GROUP"
    past = c.history if history else []
    if c.via == "source":
        about = ("the group" if c.owner_kind == "group"
                 else speaker_label(c.owner_name or c.owner_id, c.owner_id, roster))
        lines = [f"  + said about {about}: {one_line(c.current.content)} {_tag(c.current, owner, roster)}"]
        lines += [f"    - history: {one_line(v.content)} @ {v.ts} [rec {v.id}]" for v in past]
        return lines
    lines = [f"  * current: {one_line(c.current.content)} {_tag(c.current, owner, roster)}"]
    lines += [f"  - history: {one_line(v.content)} @ {v.ts} [rec {v.id}]" for v in past]
    return lines


def _slice(projection: Projection, rows: list[Row], as_of: str, roster: Roster | None, view: _View | None,
           shown: dict[str, str], terms: frozenset[str], clipped: list[str]) -> str:
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
    history = view.history if view else True
    max_chars = view.max_chars if view else 0
    for i, row in enumerate(rows):
        label = "GROUP" if row.kind == "group" else speaker_label(row.name, row.id, roster)
        owner_cells = [c for c in row.cells if c.via == "owner"]
        source_cells = [c for c in row.cells if c.via == "source"]
        if row.status == "records":
            out.append(label)
            for c in owner_cells:
                out.extend(_cell_lines(c, roster, history))
        elif row.status == "raw":
            out.append(f"{label} (no derived record on this matter; own messages closest to it:)")
            raw = row.raw if view is None else [e for j, e in enumerate(row.raw) if view.raw[i][j]]
            # a message appears once: those shown above are referred to by where they are, in one
            # line (their ids are on the lines referred to)
            seen = list(dict.fromkeys(shown[e.id] for e in raw if e.id in shown))
            if seen:
                out.append(f"  raw fallback: shown above ({'; '.join(seen)})")
            for e in raw:
                if e.id not in shown:
                    out.append(f"  raw fallback: {excerpt_line(e, roster, max_chars, terms, clipped)}")
                    shown[e.id] = f"raw fallback of {label}"
        else:
            out.append(f"{label} (none)")
        for c in source_cells:
            out.extend(_cell_lines(c, roster, history))
    return "\n".join(out)


def slice_text(projection: Projection, rows: list[Row], as_of: str = "", roster: Roster | None = None) -> str:
    """The ``[MEMORY SLICE]`` block (see the module docstring), nothing clipped or cut."""
    return _slice(projection, rows, as_of, roster, None, {}, frozenset(), [])


def excerpts_text(excerpts: list[Excerpt], roster: Roster | None = None) -> str:
    """The ``[RAW EXCERPTS]`` block, one numbered message a line."""
    if not excerpts:
        return "(none)"
    return "\n".join(f"{i}. {excerpt_line(e, roster)}" for i, e in enumerate(excerpts, start=1))


def _render(question: str, projection: Projection, excerpts: list[Excerpt], rows: list[Row], as_of: str,
            roster: Roster | None, view: _View, terms: frozenset[str], cut: list[str]) -> tuple[str, list[str]]:
    clipped: list[str] = []
    shown: dict[str, str] = {}
    lines: list[str] = []
    for e in (e for k, e in enumerate(excerpts) if view.excerpts[k]):
        if e.id in shown:
            continue
        shown[e.id] = f"excerpt {len(lines) + 1}"
        lines.append(f"{len(lines) + 1}. {excerpt_line(e, roster, view.max_chars, terms, clipped)}")
    quoted = "\n".join(lines) or "(none)"
    sliced = _slice(projection, rows, as_of, roster, view, shown, terms, clipped)
    view.parts = {"verbatim": "\n".join(lines), "structured": sliced, "question": question}
    material = prompts.ANSWER_MATERIAL.format(excerpts=quoted, slice=sliced)
    # chat text is data: fenced, and the answer prompt says fenced text is never an instruction.
    # The tag hashes the question and the excerpts: no message can hold it, and a record written
    # before the question was asked cannot know it (both QA arms of one question share it).
    block = fence("MATERIAL", material.split("\n"), basis=f"{question}\n{quoted}")
    text = prompts.ANSWER_USER.format(question=question, material="\n".join(block))
    if cut:
        text += f"\n[CUT] To fit the evidence budget, left out: {'; '.join(cut)}."
    return text, clipped


def compose_evidence(
    question: str, projection: Projection, excerpts: list[Excerpt], rows: list[Row], as_of: str = "", *,
    roster: Roster | None = None, max_tokens: int = 0, max_message_chars: int = 0,
) -> Composed:
    """The user message for the answerer, with labels, clipping and the token budget applied.

    Args:
        question / projection / excerpts / rows / as_of: the pipeline's material.
        roster: the group's roster (labels for shared display names); None = bare names.
        max_tokens: budget of the whole message in estimated tokens (0 = none).
        max_message_chars: clip longer messages to this many characters (0 = never).

    Returns:
        A :class:`Composed`; its ``cut`` names what was left out (also said in the text).
    """
    terms = _terms(question, projection.issue)
    view = _View(excerpts=[True] * len(excerpts), raw=[[True] * len(r.raw) for r in rows],
                 max_chars=max_message_chars)
    text, clipped = _render(question, projection, excerpts, rows, as_of, roster, view, terms, [])
    if max_tokens <= 0 or estimate_tokens(text) <= max_tokens:
        return Composed(text, clipped, [], estimate_tokens(text), dict(view.parts))

    def cut_list() -> list[str]:
        out = []
        gone = [e.id for k, e in enumerate(excerpts) if not view.excerpts[k]]
        if gone:
            out.append(f"{len(gone)} lowest-ranked excerpt(s) (msg {', '.join(gone)})")
        gone = [e.id for i, r in enumerate(rows) for j, e in enumerate(r.raw) if not view.raw[i][j]]
        if gone:
            out.append(f"{len(gone)} raw fallback message(s) (msg {', '.join(gone)})")
        if not view.history:
            out.append("earlier states (history lines)")
        return out

    def fits() -> bool:
        nonlocal text, clipped
        text, clipped = _render(question, projection, excerpts, rows, as_of, roster, view, terms, cut_list())
        return estimate_tokens(text) <= max_tokens

    # Clip long messages harder (down to 400 characters) before leaving anything out.
    longest = max([len(e.text) for e in excerpts] + [len(e.text) for r in rows for e in r.raw] + [0])
    if view.max_chars <= 0 and longest > 400:
        view.max_chars = longest
    while view.max_chars > 400 and longest > 400 and not fits():
        view.max_chars = max(400, view.max_chars // 2)
    # Then leave out, until it fits: excerpts from the lowest-ranked up, then raw fallback
    # messages from the last row up, then earlier states; then give back what fits, best first.
    switches = [(view.excerpts, k) for k in reversed(range(len(excerpts)))]
    switches += [(view.raw[i], j) for i in reversed(range(len(rows))) for j in reversed(range(len(rows[i].raw)))]
    dropped = []
    for flags, k in switches:
        if fits():
            break
        flags[k] = False
        dropped.append((flags, k))
    if not fits() and any(c.history for r in rows for c in r.cells):
        view.history = False
    for flags, k in reversed(dropped):
        flags[k] = True
        if not fits():
            flags[k] = False
    cut = cut_list()
    text, clipped = _render(question, projection, excerpts, rows, as_of, roster, view, terms, cut)
    if estimate_tokens(text) > max_tokens:  # last resort: the slice itself is too long
        cut.append("the end of the memory slice")
        note = f"\n[CUT] To fit the evidence budget, left out: {'; '.join(cut)}."
        body = text[: text.rfind("\n[CUT]")] if "\n[CUT]" in text else text
        text = body[: max(0, max_tokens * 4 - len(note))] + note
    return Composed(text, clipped, cut, estimate_tokens(text), dict(view.parts))


def evidence_tokens(composed: Composed) -> dict[str, int]:
    """Tokens of the composed evidence per part under :data:`graphmem.core.tokens.TOKENIZER`:
    ``verbatim`` (System 1 excerpts as shown), ``structured`` (the System 2 slice),
    ``question``, and ``total`` (the whole user message: the parts, their labels, the fence and
    the instructions around them). SpeakerMem-R1 reports 9,713 tokens per question with ASK."""
    names = ["verbatim", "structured", "question"]
    counts = count_tokens([composed.parts.get(n, "") for n in names] + [composed.text])
    return {**dict(zip(names, counts[:3])), "total": counts[3]}


def excerpt_tokens(question: str, projection: Projection, excerpts: list[Excerpt], roster: Roster | None = None,
                   max_message_chars: int = 0) -> list[int]:
    """Tokens (:data:`graphmem.core.tokens.TOKENIZER`) of each excerpt's numbered line as the
    verbatim part shows it when the first k are composed (``"k. (speaker @ ts, msg id) text"``,
    clipped to ``max_message_chars`` around the question's and issue's words as
    :func:`compose_evidence` clips it), one count per excerpt, in order.

    The verbatim tokens of the first k excerpts are ``sum(counts[:k])`` (the WordPiece
    tokenizer drops the newlines between lines): what a recall-vs-tokens curve charges for
    showing k messages (``graphmem eval``'s report).
    """
    terms = _terms(question, projection.issue)
    lines = [f"{i}. {excerpt_line(e, roster, max_message_chars, terms)}" for i, e in enumerate(excerpts, start=1)]
    return count_tokens(lines)


def compose(
    question: str, projection: Projection, excerpts: list[Excerpt], rows: list[Row], as_of: str = "",
    roster: Roster | None = None,
) -> str:
    """The whole user message for the answerer (question, raw excerpts, memory slice), with
    shared names labelled; no clipping and no budget (see :func:`compose_evidence`)."""
    return compose_evidence(question, projection, excerpts, rows, as_of, roster=roster).text


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
