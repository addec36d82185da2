"""A scripted answerer and judge for the terminal QA gain on the hand-written training networks.

Used by the tests (through :class:`tests.scripted_llm.ScriptedLLM`, so graphmem's real client,
``ask`` pipeline and judge code run) and by ``bench/train_e2e.py --qa``. It is a script, not a
model: every figure it yields is labelled "scripted answerer".

Rules, per chat request (routed on the system prompt):

- Project: the issue, rows and tense listed for the question in :data:`SCRIPT`.
- Select: an empty ranking (the fused order is kept); Sufficiency: enough.
- Answer: the gold answer when the evidence holds what the question needs — for a ``"slice"``
  need, an owner cell line (``* current:`` or ``- history:``) in the right row of the ``[MEMORY
  SLICE]`` containing the phrase (never a raw fallback line, nor a ``+ said about`` line: a
  record filed under the wrong owner does not count, which is what attribution errors cost);
  for an ``"excerpts"`` need, the ``[RAW EXCERPTS]`` containing it — and the abstention
  sentence otherwise.
- Judge: ``Final: Correct`` when the agent's answer is exactly the gold answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphmem.eval.prompts import JUDGE_SYSTEM
from graphmem.query.prompts import ABSTAIN, MARKERS
from tests.scripted_llm import Reply

QUESTIONS = Path(__file__).resolve().parents[1] / "examples" / "train" / "questions.jsonl"

#: question text -> Project's answer and what the answer needs: ("slice", phrase, row) or
#: ("excerpts", phrase).
SCRIPT: dict[str, dict[str, Any]] = {
    "When did the beta release happen in the end?":
        {"issue": "beta release date", "rows": ["GROUP"], "tense": "head", "needs": ("slice", "Beta released on April 27", "GROUP")},
    "How far along is Raj's payments module now?":
        {"issue": "payments module progress", "rows": ["Raj"], "tense": "head",
         "needs": ("slice", "payments module is done", "Raj")},
    "Is Lena still blocked on the design tokens?":
        {"issue": "design tokens and checkout styling", "rows": ["Lena"], "tense": "head",
         "needs": ("slice", "Lena finished the checkout styling", "Lena")},
    "Who said that Tom is quitting his job at the bank?":
        {"issue": "Tom quitting his bank job", "rows": ["Tom"], "tense": "head",
         "needs": ("slice", "Mia says Tom is quitting", "Tom")},
    "How does Tom see Zoe?":
        {"issue": "how Tom sees Zoe", "rows": ["Zoe"], "tense": "head", "needs": ("slice", "Tom sees Zoe as the calm one", "Zoe")},
    "Where will Tom work from May?":
        {"issue": "Tom's new job", "rows": ["Tom"], "tense": "head", "needs": ("slice", "bike shop in May", "Tom")},
    "What did the group decide for the team dinner?":
        {"issue": "team dinner decision", "rows": ["GROUP"], "tense": "head",
         "needs": ("slice", "Team dinner is Thai food on Friday at 7", "GROUP")},
    "Which food did Leo want for the team dinner, and why?":
        {"issue": "team dinner food preference", "rows": ["Leo"], "tense": "head", "needs": ("slice", "Leo prefers pizza", "Leo")},
    "What rule did the group agree on for choosing a dinner place?":
        {"issue": "rule for choosing a dinner place", "rows": ["GROUP"], "tense": "head",
         "needs": ("slice", "always pick a dinner place", "GROUP")},
    "Who said good morning first?":
        {"issue": "good morning greeting", "rows": ["ALL"], "tense": "head", "needs": ("excerpts", "Morning all!")},
}

_OWNER_CELL = ("  * current:", "  - history:")


def _gold() -> dict[str, str]:
    out = {}
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[row["question"]] = row["answer"]
    return out


def _question(user: str) -> str:
    first = user.split("\n", 1)[0]
    return first[len("Question: "):] if first.startswith("Question: ") else ""


def _section(user: str, start: str, end: str | None) -> str:
    if start not in user:
        return ""
    body = user.split(start, 1)[1]
    return body.split(end, 1)[0] if end and end in body else body


def holds(user: str, needs: tuple[str, ...]) -> bool:
    """Whether the answerer's evidence (its user message) holds what a question needs."""
    where, phrase = needs[0], needs[1].casefold()
    if where == "excerpts":
        return phrase in _section(user, "[RAW EXCERPTS]", "[MEMORY SLICE]").casefold()
    row, current = needs[2], ""
    for line in _section(user, "[MEMORY SLICE]", None).splitlines():
        if line and not line.startswith(" "):  # a row header: "Tom", "Tom (none)", "GROUP" ...
            current = line.split(" (", 1)[0].strip()
        elif current == row and line.startswith(_OWNER_CELL) and phrase in line.casefold():
            return True
    return False


def make_handler() -> Any:
    """The request handler (set it as ``ScriptedLLM.handler``)."""
    gold = _gold()

    def handle(body: dict[str, Any]) -> Reply | str:
        messages = body.get("messages") or []
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        user = next((m["content"] for m in messages if m.get("role") == "user"), "")
        if MARKERS["project"] in system:
            spec = SCRIPT[_question(user)]
            return Reply.json({"issue": spec["issue"], "rows": spec["rows"], "tense": spec["tense"]})
        if MARKERS["select"] in system:
            return Reply.json({"ranked": [], "expand": []})
        if MARKERS["sufficiency"] in system:
            return Reply.json({"enough": True, "ask": ""})
        if MARKERS["answer"] in system:
            question = _question(user)
            return gold[question] if holds(user, SCRIPT[question]["needs"]) else ABSTAIN
        if system == JUDGE_SYSTEM:
            fields = dict(line.split(": ", 1) for line in user.splitlines() if ": " in line)
            same = fields.get("Agent Answer", "").strip() == fields.get("Gold Answer", "").strip()
            return f"Compared with the gold answer.\nFinal: {'Correct' if same else 'Incorrect'}"
        return Reply.http_error(400, "not scripted")

    return handle
