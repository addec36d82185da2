"""The four benchmarks as evaluation units: data paths, categories, gold evidence, group ids.

A benchmark *unit* is one memory space (SpeakerMem-R1 App. C): a LoCoMo conversation, a
SocialMemBench network, a GroupMemBench domain, an EverMemBench topic. Each unit is ingested
into its own Neo4j group, whose id is the unit's natural id (``conv-26``, ``grp_0d1e2f3a``,
``Finance``, ``evermem-01``) behind an optional namespace prefix (tests use a fresh prefix so
they never touch the natural benchmark groups).

Categories (the per-category tables of App. F and G):

- LoCoMo: ``single-hop`` (4), ``multi-hop`` (1), ``temporal`` (2), ``open-domain`` (3),
  ``adversarial`` (5) - the integer labels named as SpeakerMemR1 ``run_locomo.py`` names them.
- SocialMemBench: ``Q1`` .. ``Q9`` (the file's ``category``).
- GroupMemBench: the six question types (the question file's name).
- EverMemBench: the nine public behaviours, derived from the question id's prefix
  (:func:`evermem_behaviour`); multiple-choice / open-ended is kept as the record's ``format``.

Gold evidence for recall@k: LoCoMo ``evidence`` dia_ids (validated by the loader), SocialMem
``evidence_anchors`` turn ids, EverMem ``R`` references expanded to message ids. LoCoMo's
adversarial questions (category 5) are left out of recall, as the paper's retrieval figures do;
GroupMemBench has no evidence ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from graphmem.core.errors import InvalidInputError
from loaders import Conversation, Question, load_conversations, load_questions, question_with_options

BENCHES: tuple[str, ...] = ("locomo", "socialmem", "groupmem", "evermem")
"""Benchmarks ``graphmem eval`` runs (the ``--bench`` choices)."""

LOCOMO_CATEGORY_NAMES: dict[str, str] = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "5": "adversarial",
}
"""LoCoMo integer category -> name (SpeakerMemR1 ``run_locomo.py``; SOURCE.md counts)."""

CATEGORY_ORDER: dict[str, list[str]] = {
    "locomo": ["single-hop", "multi-hop", "temporal", "open-domain", "adversarial"],
    "socialmem": [f"Q{i}" for i in range(1, 10)],
    "groupmem": ["abstention", "user_implicit", "multi_hop", "temporal", "knowledge_update", "term_ambiguity"],
    "evermem": ["Single", "Multi", "Temp", "Const", "Proact", "Update", "Style", "Skill", "Role"],
}
"""Column order of each benchmark's category table (paper Tables 4/23, 17, 16, 2)."""

#: EverMemBench question-id prefix ``<major>_<minor>`` -> public behaviour label (Table 2).
#: Confirmed in public sources: ``F_SH`` (EverMemBench ``aggregate_evermemos_results.py``),
#: ``MA_U`` and ``P_Skill`` (same file's docstrings), ``MA_C`` (data notes). The others follow
#: the same naming (F = factual recall, MA = applied memory, P = personalisation) and are
#: matched by the minor code; anything else becomes ``other:<prefix>``.
EVERMEM_BEHAVIOURS: dict[str, str] = {
    "F_SH": "Single",
    "F_S": "Single",
    "F_MH": "Multi",
    "F_M": "Multi",
    "F_T": "Temp",
    "F_TR": "Temp",
    "F_TEMP": "Temp",
    "MA_C": "Const",
    "MA_P": "Proact",
    "MA_U": "Update",
    "P_STYLE": "Style",
    "P_SKILL": "Skill",
    "P_ROLE": "Role",
    "P_S": "Style",
    "P_R": "Role",
}

_EVERMEM_ID = re.compile(r"^([A-Za-z]+)_([A-Za-z0-9]+)_")


def evermem_behaviour(qa_id: str) -> str:
    """The public behaviour label of an EverMemBench question id.

    ``"F_SH_Top01_001"`` -> ``"Single"``, ``"MA_U_Top004_031"`` -> ``"Update"``,
    ``"P_Skill_Top004_001"`` -> ``"Skill"``. A prefix outside :data:`EVERMEM_BEHAVIOURS` whose
    minor code starts one of the behaviour names (``P_Style2`` -> ``Style``) is matched by that
    name; otherwise ``"other:<major>_<minor>"`` (``"other:?"`` for an id without a prefix).
    """
    m = _EVERMEM_ID.match(qa_id or "")
    if not m:
        return "other:?"
    major, minor = m.group(1).upper(), m.group(2)
    key = f"{major}_{minor.upper()}"
    if key in EVERMEM_BEHAVIOURS:
        return EVERMEM_BEHAVIOURS[key]
    for name in CATEGORY_ORDER["evermem"]:
        if len(minor) >= 3 and (name.lower().startswith(minor.lower()) or minor.lower().startswith(name.lower())):
            return name
    return f"other:{m.group(1)}_{minor}"


def category_of(bench: str, q: Question) -> str:
    """The category label a question is reported under (see the module docstring)."""
    if bench == "locomo":
        return LOCOMO_CATEGORY_NAMES.get(q.category, q.category or "?")
    if bench == "evermem":
        return evermem_behaviour(str(q.extra.get("qa_id") or q.id.rsplit("/", 1)[-1]))
    return q.category or "?"


def answer_format(bench: str, q: Question) -> str:
    """A secondary split: EverMem ``multiple_choice``/``open_ended``, SocialMem answer format."""
    if bench == "evermem":
        return q.category
    if bench == "socialmem":
        return str(q.extra.get("answer_format") or "")
    return "multiple_choice" if q.options else "open"


def recall_scored(bench: str, q: Question) -> bool:
    """Whether the question counts in evidence recall (has gold ids; LoCoMo category 5 excluded)."""
    if not q.evidence_ids:
        return False
    return not (bench == "locomo" and q.category == "5")


def question_text(q: Question) -> tuple[str, str]:
    """(text shown to the system, gold answer) - options appended for multiple choice.

    A first-person question (GroupMem ``user_implicit``) names its asker in front:
    ``"[asked by User_7] What am I ...?"``, as the benchmark's reference runner gives the asker.

    Raises:
        InvalidInputError: a multiple-choice question whose correct letter is not an option.
    """
    text, gold = question_with_options(q)
    if q.asker:
        text = f"[asked by {q.asker}] {text}"
    return text, gold


@dataclass
class Unit:
    """One benchmark unit.

    Attributes:
        unit_id: natural id (``conv-26``, ``grp_0d1e2f3a``, ``Finance``, ``evermem-01``).
        group_id: the Neo4j group it is stored in (prefix + unit id).
        conversation: its messages, group ids already set to ``group_id``.
        questions: its questions, in file order.
    """

    unit_id: str
    group_id: str
    conversation: Conversation
    questions: list[Question] = field(default_factory=list)

    @property
    def message_ids(self) -> set[str]:
        """Ids of the unit's messages (gold evidence outside it is not scored)."""
        return {m.id for m in self.conversation.messages}


@dataclass
class BenchData:
    """A loaded benchmark: its units (conversation + questions) in file order."""

    bench: str
    units: list[Unit]
    orphans: dict[str, int] = field(default_factory=dict)
    """Units that have questions but no conversation (left out), with their question counts."""

    @property
    def questions(self) -> list[Question]:
        """Every question of every unit, units in order."""
        return [q for u in self.units for q in u.questions]

    def unit(self, unit_id: str) -> Unit:
        """The unit with this natural id.

        Raises:
            InvalidInputError: no such unit.
        """
        for u in self.units:
            if u.unit_id == unit_id:
                return u
        raise InvalidInputError(f"no unit {unit_id!r} in {self.bench}", field="unit")


def _paths(bench: str, data: Path, questions: Path | None) -> tuple[Path, Path]:
    """(conversation path, question path) for a benchmark's ``--data`` / ``--questions``."""
    if not data.exists():
        raise InvalidInputError(f"nothing at {data}", source=str(data), field="data")
    if questions is not None:
        return data, questions
    if bench == "groupmem" and data.is_dir():
        # the upstream repository root: data/final/<Domain>/... and questions/<Domain>/...
        conv = data / "data" / "final" if (data / "data" / "final").is_dir() else data
        qdir = data / "questions" if (data / "questions").is_dir() else data
        return conv, qdir
    return data, data


def namespaced(group_prefix: str, unit_id: str) -> str:
    """The group id of a unit: ``group_prefix + unit_id`` (the prefix may be empty)."""
    return f"{group_prefix}{unit_id}"


def _rename(conv: Conversation, group_id: str) -> Conversation:
    if conv.group_id == group_id:
        return conv
    messages = [m.model_copy(update={"group_id": group_id}) for m in conv.messages]
    return conv.model_copy(update={"group_id": group_id, "messages": messages})


def load_bench(
    bench: str,
    data: Path,
    *,
    questions: Path | None = None,
    group_prefix: str = "",
    units: list[str] | None = None,
) -> BenchData:
    """Load a benchmark's units (conversations and questions) through :mod:`loaders`.

    Args:
        bench: one of :data:`BENCHES`.
        data: LoCoMo ``locomo10.json``; SocialMem ``networks`` folder (or one network file);
            GroupMem conversation file/folder or the upstream repository root (``data/final``
            and ``questions`` inside); EverMem folder with ``dialogues.jsonl`` and ``qars.jsonl``.
        questions: where the questions are when not beside the conversations (GroupMem).
        group_prefix: namespace put in front of every unit id to form its group id.
        units: natural unit ids to keep (None = all).

    Returns:
        A :class:`BenchData`; units without questions are dropped, questions of units
        without a conversation are counted in ``orphans`` and left out.

    Raises:
        InvalidInputError: unknown benchmark, nothing at ``data``, a unit id that does not
            exist, or the loaders' own errors (file, record and field named).
    """
    if bench not in BENCHES:
        raise InvalidInputError(f"unknown benchmark {bench!r}; expected one of {', '.join(BENCHES)}", field="bench")
    conv_path, q_path = _paths(bench, Path(data), Path(questions) if questions else None)
    conversations = load_conversations(conv_path, bench)
    qs = load_questions(q_path, bench)
    by_unit: dict[str, list[Question]] = {}
    for q in qs:
        by_unit.setdefault(q.group_id, []).append(q)
    known = {c.group_id for c in conversations}
    if units:
        missing = [u for u in units if u not in known]
        if missing:
            raise InvalidInputError(
                f"unknown unit(s) {', '.join(missing)}; have {', '.join(sorted(known))}", field="unit"
            )
    out: list[Unit] = []
    for conv in conversations:
        if units and conv.group_id not in units:
            continue
        unit_qs = by_unit.get(conv.group_id, [])
        if not unit_qs:
            continue
        gid = namespaced(group_prefix, conv.group_id)
        out.append(Unit(conv.group_id, gid, _rename(conv, gid), unit_qs))
    orphans = sorted(set(by_unit) - known)
    return BenchData(bench, out, {u: len(by_unit[u]) for u in orphans} if not units else {})
