"""Terminal QA gain of a written memory (SpeakerMem-R1 §4 eq. 8, App. E eq. 22).

``R_QA = QA(System 1 + System 2; M_T) - QA(System 1; M_T)``: the fixed questions of a
training network are answered twice from the memory a Writer trajectory ended with, once
with both tracks and once with System 1 alone, on the *same* System 1 evidence, and each
answer is judged against the gold answer by the binary judge; ``QA`` is the mean verdict
(:func:`graphmem.train.rewards.qa_score`).

How a final memory state reaches System 2 here: the state lives in memory
(:class:`graphmem.train.state.MemoryState`), but System 2 retrieval reads Neo4j. So the
network's messages (those of the trajectory's segments) and the state's records (every
version, with OWNER / SOURCE / FROM links and SUPERSEDED_BY chains) are written into a
*scratch group* through the store's own write paths
(:func:`graphmem.verbatim.ingest.ingest_conversations`, :func:`graphmem.derived.memory.write_segment`, one
segment marker per writing position), the questions go through :func:`graphmem.query.ask`
exactly as ``graphmem ask`` runs them (Project, System 1, System 2, Compose, Answer), the
System 1-only arm is composed from the same ask's projection and excerpts with no rows
(:func:`graphmem.query.answer_system1_only`), both answers are judged by
:func:`graphmem.eval.judge.judge_answer`, and the scratch group is erased. One code path with
``ask``; no second composer.

Results are cached per (network, state hash), so G samples that end in identical states cost
one evaluation (the answerer is frozen during training).

The questions (``examples/train/questions.jsonl``) are JSONL in the chat format's family: one
question a line, ``{"group", "id", "question", "answer", "category"?, "evidence"?}``;
:func:`load_questions` validates them and names the line and field of anything wrong. Per
network a fixed subset of at most four is used (sorted by id, evenly spaced: App. E).

Source: SpeakerMem-R1 §4 (eq. 8), App. E ("Terminal QA gain", eq. 22).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graphmem.core.errors import InvalidInputError
from graphmem.derived.memory import DerivedRecord
from graphmem.train.rewards import qa_gain, qa_score
from graphmem.train.trajectories import WriterStep

__all__ = [
    "MAX_QUESTIONS",
    "QA_NOTE_NO_MODEL",
    "QA_NOTE_NO_QUESTIONS",
    "QAGain",
    "QAPair",
    "QAResult",
    "fixed_subset",
    "load_questions",
    "state_hash",
    "terminal_qa_from_settings",
    "write_scratch_group",
]

#: At most this many questions per network (App. E: "at most four questions").
MAX_QUESTIONS = 4

QA_NOTE_NO_QUESTIONS = ("terminal QA gain (eq. 8, 22) skipped: no --questions file given; "
                        "returns use R_valid, R_mem and P only")
QA_NOTE_NO_MODEL = ("terminal QA gain (eq. 8, 22) skipped: no answerer/judge configured (set GRAPHMEM_LLM_BASE_URL "
                    "and GRAPHMEM_LLM_MODEL; the judge is GRAPHMEM_JUDGE_*, falling back to GRAPHMEM_LLM_*); "
                    "returns use R_valid, R_mem and P only")


class QAPair(BaseModel):
    """One fixed question about a training network.

    Attributes:
        group: the network (group id, as in the chat file and the trajectories).
        id: question id, unique within the network (the subset is taken in id order).
        question: the question text.
        answer: the gold answer the judge compares with.
        category: free label (``update``, ``source-owner``, ``group-decision``, ...).
        evidence: ids of the network's messages that answer it (checked against the
            trajectory when the gain is computed).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str = Field(min_length=1)
    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    category: str = ""
    evidence: list[str] = Field(default_factory=list)

    @field_validator("group", "id", "question", "answer")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v


def load_questions(path: str | Path) -> dict[str, list[QAPair]]:
    """Read a question file (JSONL, one :class:`QAPair` a line; blank lines skipped).

    Returns:
        Questions by network, each list sorted by id.

    Raises:
        InvalidInputError: unreadable file, malformed JSON, a missing / blank / unknown field
            or an id used twice in one network; the message names the file, the line and the
            field.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InvalidInputError(f"cannot read question file: {e}", source=str(path)) from e
    out: dict[str, list[QAPair]] = {}
    seen: set[tuple[str, str]] = set()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidInputError(f"malformed JSON: {e.msg}", source=str(path), record=f"line {n}") from e
        if not isinstance(raw, dict):
            raise InvalidInputError("a question line must be a JSON object", source=str(path), record=f"line {n}")
        try:
            pair = QAPair.model_validate(raw)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ()))
            raise InvalidInputError(f"not a question: {first.get('msg')}", source=str(path), record=f"line {n}",
                                    field=where) from e
        if (pair.group, pair.id) in seen:
            raise InvalidInputError(f"question id {pair.id!r} used twice in network {pair.group!r}",
                                    source=str(path), record=f"line {n}", field="id")
        seen.add((pair.group, pair.id))
        out.setdefault(pair.group, []).append(pair)
    for items in out.values():
        items.sort(key=lambda q: q.id)
    return out


def fixed_subset(questions: Sequence[QAPair], k: int = MAX_QUESTIONS) -> list[QAPair]:
    """The fixed question subset Q of a network: sorted by id, at most ``k`` evenly spaced.

    App. E samples at most four questions uniformly after sorting by id; evenly spaced
    positions make that choice deterministic (the same Q in every round and run).
    """
    ordered = sorted(questions, key=lambda q: q.id)
    if len(ordered) <= k:
        return ordered
    return [ordered[(i * len(ordered)) // k] for i in range(k)]


def state_hash(records: Sequence[DerivedRecord]) -> str:
    """16 hex digits identifying a memory state: every record version with its fields (not
    the group id), in id order. Equal states (same records, chains and provenance) hash equal."""
    rows = sorted((r.model_dump(exclude={"group_id", "position"}) for r in records), key=lambda d: d["id"])
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def write_scratch_group(
    store: Any, embedder: Any, scratch_id: str, steps: Sequence[WriterStep], records: Sequence[DerivedRecord]
) -> None:
    """Write a network's messages and a memory state into a new group ``scratch_id``.

    The messages are the trajectory's segments (in order; each speaker's Person id is kept,
    so the records' owners and sources resolve); one segment marker per writing position
    covers that segment's messages and carries the records written there (``e<index>.<k>``),
    UPDATE versions linked to the version they supersede. Written with the store's own
    ingest and :func:`graphmem.derived.memory.write_segment` (embeddings by ``embedder``).

    Raises:
        InvalidInputError: the trajectory does not start at the network's first segment (its
            first pre-state holds records whose messages are not in the trajectory), or a
            record belongs to no segment of the trajectory.
        StoreUnavailableError, ConflictError: as the write paths.
    """
    from graphmem.derived import memory
    from graphmem.verbatim.ingest import ingest_conversations
    from graphmem.core.model import Conversation, MessageRecord

    first = steps[0]
    if first.pre_state:
        raise InvalidInputError(
            f"network {first.group_id!r}: the trajectory starts at segment {first.index} with "
            f"{len(first.pre_state)} record(s) already written; the QA gain needs the whole network "
            "from its first segment", record=first.group_id, field="pre_state")
    session_index: dict[str, int] = {}
    msgs = []
    for step in steps:
        for m in step.messages:
            session_index.setdefault(m.session, len(session_index) + 1)
            msgs.append(MessageRecord(
                id=m.id, group_id=scratch_id, channel=m.channel, session=m.session,
                session_index=session_index[m.session], turn=m.turn, ts=m.ts, speaker=m.speaker,
                speaker_id=m.person_id, text=m.text, source_ref=f"{first.group_id}#{m.id}"))
    ingest_conversations(store, [Conversation(group_id=scratch_id, name=f"QA scratch of {first.group_id}",
                                              messages=msgs, source="graphmem.train.qa")], embedder)
    by_index: dict[int, list[DerivedRecord]] = {}
    for r in records:
        try:
            index = int(r.id[1:].split(".", 1)[0])
        except ValueError:
            index = -1
        by_index.setdefault(index, []).append(r)
    known = {s.index for s in steps}
    stray = [r.id for i, rs in by_index.items() if i not in known for r in rs]
    if stray:
        raise InvalidInputError(f"network {first.group_id!r}: record(s) {stray} belong to no segment of the "
                                "trajectory", record=stray[0], field="id")
    for n, step in enumerate(steps, start=1):
        seg = step.segment()
        made = sorted(by_index.get(step.index, []), key=lambda r: int(r.id.split(".", 1)[1]))
        vectors = embedder.encode([r.content for r in made]) if made else []
        new = [memory.NewRecord(
            id=r.id, layer=r.layer, utype=r.utype, content=r.content, owner=r.owner, source=r.source, ts=r.ts,
            session=r.session, turn_created=r.turn_created, confidence=r.confidence, from_ids=r.from_ids,
            embedding=[float(x) for x in vectors[k]], supersedes=r.supersedes) for k, r in enumerate(made)]
        memory.write_segment(store, scratch_id, memory.SegmentMarker(
            id=f"seg-{n:04d}", index=n, session=seg.session, channel=seg.channel, message_ids=seg.message_ids,
            first_turn_created=seg.messages[0].turn_created, last_turn_created=seg.messages[-1].turn_created,
            ts_first=seg.messages[0].ts, ts_last=seg.messages[-1].ts, max_actions=step.max_actions,
            accepted=len(new), added=sum(1 for r in new if r.supersedes is None),
            updated=sum(1 for r in new if r.supersedes is not None), stage="train-qa", model="scratch"), new)


@dataclass
class QAResult:
    """The terminal QA gain of one final memory state.

    Attributes:
        network: the network (group id).
        state_hash: :func:`state_hash` of the state.
        gain: ``R_QA`` in [-1, 1] (eq. 8).
        with_s2 / s1_only: ``QA(S1+S2)`` and ``QA(S1)`` in [0, 1] (eq. 22).
        questions: per question: id, question, gold, both answers and verdicts.
    """

    network: str
    state_hash: str
    gain: float
    with_s2: float
    s1_only: float
    questions: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class QAGain:
    """Terminal QA gain evaluator: ``qa(steps, records) -> QAResult | None``.

    Args:
        store: open store (the scratch groups are written and erased there).
        embedder: the embedder of the store's vectors.
        answerer: the answer model of ``graphmem ask`` (Project, Select, Sufficiency, Answer).
        judge: the binary judge (:func:`graphmem.llm.judge_model`).
        questions: questions by network (:func:`load_questions`); networks without questions
            get None (no QA term).
        settings: budgets (:class:`graphmem.core.config.Settings`).
        max_questions: size of the fixed subset per network (App. E: 4).

    Attributes:
        evaluations: states actually evaluated (cache misses); cache hits cost nothing.
    """

    def __init__(self, store: Any, embedder: Any, answerer: Any, judge: Any,
                 questions: Mapping[str, Sequence[QAPair]], *, settings: Any,
                 max_questions: int = MAX_QUESTIONS) -> None:
        self.store, self.embedder, self.answerer, self.judge = store, embedder, answerer, judge
        self.settings = settings
        self.questions = {gid: fixed_subset(qs, max_questions) for gid, qs in questions.items() if qs}
        self.cache: dict[tuple[str, str], QAResult] = {}
        self.evaluations = 0

    def __call__(self, steps: Sequence[WriterStep], records: Sequence[DerivedRecord]) -> QAResult | None:
        """The QA gain of the memory ``records`` written over the network of ``steps``.

        Returns:
            A :class:`QAResult`, or None when the network has no questions.

        Raises:
            InvalidInputError: a question names an evidence message not in the network, or
                the trajectory does not cover the network from its first segment.
            LLMError: the answerer or the judge failed after retries.
        """
        network = steps[0].group_id
        qs = self.questions.get(network)
        if not qs:
            return None
        key = (network, state_hash(records))
        if key in self.cache:
            return self.cache[key]
        ids = {m.id for s in steps for m in s.messages}
        for q in qs:
            missing = [e for e in q.evidence if e not in ids]
            if missing:
                raise InvalidInputError(f"question {q.id!r} of network {network!r} names message(s) {missing} "
                                        "that are not in the network", record=q.id, field="evidence")
        result = self._evaluate(network, key[1], steps, records, qs)
        self.cache[key] = result
        self.evaluations += 1
        return result

    def _evaluate(self, network: str, digest: str, steps: Sequence[WriterStep], records: Sequence[DerivedRecord],
                  qs: Sequence[QAPair]) -> QAResult:
        from graphmem.eval.judge import judge_answer
        from graphmem.groups.service import forget_group
        from graphmem.query import answer_system1_only, ask
        from graphmem.runtime import Runtime

        scratch = f"qa-scratch-{uuid.uuid4().hex[:12]}"
        rows: list[dict[str, Any]] = []
        try:
            write_scratch_group(self.store, self.embedder, scratch, steps, records)
            rt = Runtime(self.settings, store=self.store, embedder=self.embedder, answer=self.answerer)
            for q in qs:
                both = ask(rt, scratch, q.question)
                alone, _usage = answer_system1_only(rt, both, self.answerer)
                verdicts = []
                for answer in (both.answer or "", alone):
                    v = judge_answer(self.judge, question=q.question, gold=q.answer, answer=answer,
                                     max_tokens=self.settings.eval_judge_max_tokens)
                    verdicts.append(bool(v.correct))  # no Final: line counts as not correct (App. C)
                rows.append({"id": q.id, "question": q.question, "gold": q.answer, "answer_s1_s2": both.answer,
                             "answer_s1": alone, "correct_s1_s2": verdicts[0], "correct_s1": verdicts[1],
                             "records_in_slice": both.record_ids})
        finally:
            forget_group(self.store, scratch)
        with_s2 = [r["correct_s1_s2"] for r in rows]
        s1 = [r["correct_s1"] for r in rows]
        return QAResult(network, digest, qa_gain(with_s2, s1), qa_score(with_s2), qa_score(s1), rows)


def terminal_qa_from_settings(
    questions_path: str | Path | None, store: Any, embedder: Any, settings: Any
) -> tuple[QAGain | None, str]:
    """The configured QA gain evaluator, or None and the note saying why it is skipped.

    The answerer is ``GRAPHMEM_LLM_*`` (:func:`graphmem.llm.answer_model`, the model of
    ``graphmem ask``), the judge ``GRAPHMEM_JUDGE_*`` falling back to ``GRAPHMEM_LLM_*``
    (:func:`graphmem.llm.judge_model`, the judge of ``graphmem eval``). Questions are
    loaded (and validated) before anything else.

    Returns:
        ``(evaluator, note)``: note is "" when the evaluator is returned.
    """
    from graphmem.llm import answer_model, judge_model

    if questions_path is None:
        return None, QA_NOTE_NO_QUESTIONS
    questions = load_questions(questions_path)
    s = settings
    answerer, judge = answer_model(s), judge_model(s)
    if answerer is None or judge is None:
        return None, QA_NOTE_NO_MODEL
    return QAGain(store, embedder, answerer, judge, questions, settings=s), ""
