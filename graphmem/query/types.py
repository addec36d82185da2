"""Result types of the query pipeline (pydantic models, JSON-serialisable as they are)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

# re-exported ("X as X": explicit for mypy strict); their homes are graphmem.core.model and
# graphmem.verbatim.roster
from graphmem.core.model import Message as Message, Projection as Projection, Tense as Tense, View as View
from graphmem.verbatim.roster import RosterMember as RosterMember

Ablation = Literal["s1", "s2", "s2-group", "s2-person"]
RowKind = Literal["person", "group"]
RowStatus = Literal["records", "raw", "none"]
ExcerptVia = Literal["recall", "ask", "expand", "fallback"]
CellVia = Literal["owner", "source"]


class Excerpt(Message):
    """One verbatim message of the evidence.

    Attributes:
        id / speaker / person_id / session / turn / ts / channel / text: the stored message.
        score: fused RRF score from the recall pool (0 for expansion neighbours).
        via: how it entered: ``"recall"`` (first pool), ``"ask"`` (supplementary pool),
            ``"expand"`` (neighbour of an Expand anchor) or ``"fallback"`` (row raw fallback).
        expanded_from: the anchor's message id for ``"expand"``.
    """

    person_id: str = ""
    session: str = ""
    ts: str = ""
    score: float = 0.0
    via: ExcerptVia = "recall"
    expanded_from: str = ""


class RecordVersion(BaseModel):
    """One version (node) of a derived record chain.

    Attributes:
        id: the record's entry id.
        content / layer / utype / ts / session / turn_created / confidence / state: stored props.
        source_kind / source_id / source_name: who said or observed it (``"group"`` kind for the
            Group node; "" when the source is gone).
        from_ids: ids of the supporting verbatim messages (provenance).
    """

    id: str
    content: str
    layer: str = ""
    utype: str = ""
    ts: str = ""
    session: str = ""
    turn_created: int = 0
    confidence: float | None = None
    state: str = ""
    source_kind: str = ""
    source_id: str = ""
    source_name: str = ""
    from_ids: list[str] = Field(default_factory=list)


class Cell(BaseModel):
    """One record chain shown in a row.

    Attributes:
        head_id: id of the chain's head (its latest version).
        owner_kind / owner_id / owner_name: whom the chain is about.
        current: the version shown as current (the head; in as-of mode, the version that held).
        history: earlier versions, oldest first (only in full mode).
        via: ``"owner"`` (owned by the row's person or group) or ``"source"`` (the row's person
            is the source, someone else the owner; does not use the owner budget).
        score: fused RRF score of the chain among the row's candidates (for an issue without a
            topic word: the reciprocal rank in the record-type-then-recency order).
    """

    head_id: str
    owner_kind: str
    owner_id: str
    owner_name: str = ""
    current: RecordVersion
    history: list[RecordVersion] = Field(default_factory=list)
    via: CellVia = "owner"
    score: float = 0.0


class Row(BaseModel):
    """One row of the memory slice (a person, or GROUP).

    Attributes:
        kind / id / name: the roster row.
        status: ``"records"`` (derived cells), ``"raw"`` (no derived record on the issue: the
            person's own closest messages), ``"none"`` (nothing on the issue: explicit empty row).
        cells: derived record chains, owner cells first, then source cells.
        raw: raw fallback messages (status ``"raw"`` only).
    """

    kind: RowKind
    id: str
    name: str
    status: RowStatus
    cells: list[Cell] = Field(default_factory=list)
    raw: list[Excerpt] = Field(default_factory=list)


class Budgets(BaseModel):
    """The budgets one ask ran with (every one a setting; see :class:`graphmem.core.config.Settings`)."""

    recall_n: int
    top_k: int
    expand_anchors: int
    expand_window: int
    ask_enabled: bool
    ask_pool_n: int
    s2_k: int
    source_k: int
    fallback_k: int
    min_cosine: float


class StageUsage(BaseModel):
    """Model calls and tokens of one stage."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_s: float = 0.0


class AskResult(BaseModel):
    """Everything one ``ask`` produced, with provenance.

    Attributes:
        group_id / question: the input.
        answer: the answerer's reply, or None when no answer model is configured.
        note: human-readable remark ("no answer model is set ...", degraded stages), or "".
        projection: Project's output.
        excerpts: System 1 evidence in final order (top-k, expansion neighbours next to anchors).
        rows: System 2 memory slice, one row per roster row asked about.
        ask_query: the supplementary ASK query that was run, or "".
        evidence: the composed text given to the answerer.
        message_ids: every message id behind the evidence (excerpts, raw fallback, and the FROM
            messages of every record shown), in first-seen order.
        record_ids: every derived record id shown (heads and history versions).
        pool_ids: the System 1 recall pool (what Select ranks, ``recall_n`` messages), best first.
        as_of: the as-of time used (ISO-8601), or "".
        budgets: the budgets used.
        usage: model calls and tokens per stage (``project``, ``select``, ``sufficiency``,
            ``rerank``, ``answer``).
        timings_s: wall-clock seconds per stage (model time included; ``usage`` has it apart):
            project, embed (question and issue in one batch), s1_recall, select, expand, sufficiency,
            ask, rerank, s2, compose, answer.
        s2_timings_s: the parts of ``s2`` (rows, embed, chains, fulltext, rank, fallback).
        model: the answer model's name, or "".
    """

    group_id: str
    question: str
    answer: str | None = None
    note: str = ""
    projection: Projection
    excerpts: list[Excerpt] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)
    ask_query: str = ""
    evidence: str = ""
    message_ids: list[str] = Field(default_factory=list)
    record_ids: list[str] = Field(default_factory=list)
    pool_ids: list[str] = Field(default_factory=list)
    as_of: str = ""
    budgets: Budgets
    usage: dict[str, StageUsage] = Field(default_factory=dict)
    timings_s: dict[str, float] = Field(default_factory=dict)
    s2_timings_s: dict[str, float] = Field(default_factory=dict)
    model: str = ""

    @property
    def model_calls(self) -> int:
        """Number of language-model calls this ask made."""
        return sum(u.calls for u in self.usage.values())

    def non_model_s(self) -> dict[str, float]:
        """Seconds per stage with the model's own latency taken out (never below zero)."""
        return {
            stage: max(0.0, t - (self.usage[stage].model_s if stage in self.usage else 0.0))
            for stage, t in self.timings_s.items()
        }

    def compact(self) -> CompactAnswer:
        """The compact form of this result, for agents (:class:`CompactAnswer`)."""
        messages: dict[str, CitedMessage] = {}
        quoted = self.answer is None  # the evidence then quotes every text: not a second time
        for e in [*self.excerpts, *(e for row in self.rows for e in row.raw)]:
            messages.setdefault(e.id, CitedMessage(id=e.id, speaker=e.speaker, ts=e.ts,
                                                   text=None if quoted else e.text))
        records: dict[str, CitedRecord] = {}
        for row in self.rows:
            for c in row.cells:
                for v in [*c.history, c.current]:
                    records.setdefault(v.id, CitedRecord(id=v.id, layer=v.layer, owner=c.owner_id,
                                                         source=v.source_id, status=v.state))
        return CompactAnswer(
            group_id=self.group_id, question=self.question, answer=self.answer,
            evidence=self.evidence if self.answer is None else "", note=self.note, as_of=self.as_of,
            messages=list(messages.values()), records=list(records.values()),
        )


class CitedMessage(BaseModel):
    """One message behind a compact answer: id, speaker (display name), ts (ISO-8601) and
    text; text is None when the answer is None, because the evidence then quotes it (as
    ``(speaker @ ts, msg <id>) text``) and nothing is said twice."""

    id: str
    speaker: str
    ts: str = ""
    text: str | None = None


class CitedRecord(BaseModel):
    """One derived record behind a compact answer.

    Attributes:
        id: the record's entry id (``record_provenance`` traces it to its messages).
        layer: per_speaker_core, per_speaker_profile, group_interaction or group_insight.
        owner: the Person id (or group id) it is about; source: the Person id who said or
            observed it ("" when gone).
        status: ``head`` (current) or ``superseded`` (an earlier state).
    """

    id: str
    layer: str = ""
    owner: str = ""
    source: str = ""
    status: str = ""


class CompactAnswer(BaseModel):
    """An answer for an agent (MCP ``ask`` by default, ``POST /groups/{id}/ask?view=compact``):
    what :class:`AskResult` says with nothing repeated and no pipeline internals.

    Attributes:
        group_id / question: the input.
        answer: the answerer's reply, or None without an answer model (or with evidence only).
        evidence: the composed evidence, only when ``answer`` is None ("" otherwise).
        note: remarks (no answer model, clipped or cut evidence), or "".
        as_of: the as-of time used (ISO-8601), or "".
        messages: each message whose text is in the evidence, once, in evidence order (text
            None when ``evidence`` is given: it is quoted there).
        records: each derived record shown (heads and earlier states), once.
    """

    view: Literal["compact"] = "compact"
    group_id: str
    question: str
    answer: str | None = None
    evidence: str = ""
    note: str = ""
    as_of: str = ""
    messages: list[CitedMessage] = Field(default_factory=list)
    records: list[CitedRecord] = Field(default_factory=list)
