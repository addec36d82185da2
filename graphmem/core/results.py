"""The library's result models: pure pydantic, importable without the store, the query stack,
numpy or the database driver (the typed client :mod:`graphmem.client` reads its answers into
them and loads nothing else).

Each model is re-exported from the module that makes it, its old import path
(``graphmem.query.AskResult``, ``graphmem.recall.search.SearchResult``,
``graphmem.derived.memory.DerivedRecord``, ``graphmem.groups.jobs.DeriveJob`` ...): the same
class, so ``isinstance`` and the OpenAPI component names do not change.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from graphmem.core.model import GROUP, GROUP_LAYERS, HEAD, Message, Projection, StoredMessage, Tense, View
from graphmem.core.paging import Paged, clip_text

__all__ = [
    "Ablation", "AskResult", "Budgets", "Cell", "CellVia", "DeriveJob", "DerivedRecord", "Excerpt",
    "ExcerptVia", "ForgetSummary", "FullMessage", "GroupForgetSummary", "GroupInfo", "GroupsPage", "JobState",
    "JobsPage", "Kind", "MessageHit", "Mode", "Paged", "PersonMemory", "Projection", "ProvenanceMessage",
    "RecordProvenance", "RecordVersion", "RosterMember", "RosterPage", "Row", "RowKind", "RowStatus", "SearchResult",
    "StageUsage", "Tense", "View",
]

Kind = Literal["person", "group"]
Mode = Literal["hybrid", "fulltext", "vector"]
JobState = Literal["queued", "running", "done", "failed", "cancelled"]
Ablation = Literal["s1", "s2", "s2-group", "s2-person"]
RowKind = Literal["person", "group"]
RowStatus = Literal["records", "raw", "none"]
ExcerptVia = Literal["recall", "ask", "expand", "fallback"]
CellVia = Literal["owner", "source"]


ROSTER_ALIASES_SHOWN = 20
"""Display names a roster page lists per person (the latest): one who renamed 600 times made a
122 KB row, past any page's byte bound (a page always holds its first row)."""


class RosterMember(BaseModel):
    """One Person of a group's roster.

    Attributes:
        id: person id inside the group (speaker_id, else display name).
        name: latest display name.
        speaker_id: stable id from the source, or "".
        aliases: every display name seen (in a roster page, the latest
            :data:`ROSTER_ALIASES_SHOWN` when there are more: ``aliases_total`` counts them all).
        aliases_total: how many display names were seen, set only when ``aliases`` holds fewer.
        messages: number of messages the person sent in the group.
        label: how the person is shown: the display name, or ``"Name (id)"`` when another
            member shares its display form (:func:`graphmem.limits.display_form`: NFC, no
            invisible characters, any case), with invisible characters of the id written as
            ``\\uXXXX``. Filled by :func:`read_roster`.
    """

    id: str
    name: str
    speaker_id: str = ""
    aliases: list[str] = Field(default_factory=list)
    aliases_total: int | None = None
    messages: int = 0
    label: str = ""


class RosterPage(Paged):
    """One page of a group's roster (``GET /groups/{id}/roster``, MCP ``roster``,
    ``graphmem roster``), ordered by person id (an id never changes; a display name may).

    Attributes:
        group_id: the group.
        total: members of the group when the page was read.
        persons: the members of this page, each with their message count and label.
        truncated / next_cursor: :class:`graphmem.core.paging.Paged`.
    """

    group_id: str
    total: int = 0
    persons: list[RosterMember] = Field(default_factory=list)


class GroupInfo(BaseModel):
    """A group with its size: id, name (the id when it has none), persons (roster size) and
    messages (messages stored)."""

    id: str
    name: str
    persons: int
    messages: int


class GroupsPage(Paged):
    """One page of the groups a caller reaches (``GET /groups``, MCP ``list_groups``,
    ``graphmem groups``), ordered by id; a key scoped to some groups lists only those.

    Attributes:
        groups: the groups of this page with their sizes.
        truncated / next_cursor: :class:`graphmem.core.paging.Paged`.
    """

    groups: list[GroupInfo] = Field(default_factory=list)


class DerivedRecord(BaseModel):
    """One stored derived record, as read back from Neo4j (the embedding is not returned).

    Attributes:
        id: entry_id, unique within the group (e.g. ``"e12.3"``: segment 12, action 3).
        group_id: the group (memory space).
        layer: one of :data:`LAYERS`.
        utype: one of :data:`UTYPES`.
        content: the record text.
        ts: ISO-8601 time of the record (its newest supporting message).
        session: session of the segment that wrote it.
        turn_created: write position in the group's message stream (``turn_created`` of the
            newest supporting message).
        confidence: writing confidence in [0, 1] (set by code from the provenance match).
        state: ``"head"`` (current) or ``"superseded"``.
        segment: id of the Writer segment that wrote it.
        owner: ``Person.id`` of whom it is about, or :data:`GROUP`.
        owner_kind: ``"person"`` or ``"group"``.
        owner_name: display name of the owner (the group's name for GROUP).
        source: ``Person.id`` of who said/observed it, or :data:`GROUP`.
        source_kind / source_name: as for the owner.
        from_ids: supporting message ids in conversation order (never empty).
        supersedes: entry_id of the previous state in the chain, or None for an ADD.
        superseded_by: entry_id of the next state, or None for a head.
        position: 0-based position in its chain (set by :func:`record_chain`), else None.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    group_id: str
    layer: str
    utype: str
    content: str
    ts: str
    session: str = ""
    turn_created: int = 0
    confidence: float = 1.0
    state: str = HEAD
    segment: str = ""
    owner: str
    owner_kind: Kind
    owner_name: str = ""
    source: str
    source_kind: Kind
    source_name: str = ""
    from_ids: list[str] = Field(default_factory=list)
    supersedes: str | None = None
    superseded_by: str | None = None
    position: int | None = None

    @property
    def scope(self) -> Literal["PERSON", "GROUP"]:
        """``"PERSON"`` or ``"GROUP"`` (from the layer)."""
        return "GROUP" if self.layer in GROUP_LAYERS else "PERSON"

    @property
    def is_head(self) -> bool:
        """True for the current state of its chain."""
        return self.state == HEAD


class ProvenanceMessage(StoredMessage):
    """A verbatim message a derived record was written FROM (a :class:`StoredMessage`).

    Attributes: id, channel, speaker (display name), person_id (None when the Person was
    erased), session, turn (0-based), ts (ISO-8601), text (exactly as received; the current
    text), turn_created (write order in the group), edited (the text changed after it was
    first stored: the record may have been written from an earlier text), text_history (the
    earlier texts, oldest first, each cut like ``text``).
    """

    person_id: str | None = None  # type: ignore[assignment]  # widened on purpose: an erased Person leaves no id (StoredMessage's is str)
    text_truncated: bool = False
    text_chars: int | None = None
    edited: bool = False
    text_history: list[str] = []


class MessageHit(StoredMessage):
    """One retrieved message: a :class:`graphmem.core.model.StoredMessage` with its retrieval score.

    ``score`` is the fused RRF score in hybrid mode (in (0, 2/(rrf_k+1)]), the group-local BM25
    score (> 0, unbounded, :func:`group_fulltext_ranking`) in fulltext mode, or Neo4j's cosine
    score (1 + cos) / 2 in [0, 1] in vector mode; ``expanded_from`` names the anchor for
    neighbouring turns added by expansion (their score is 0); ``ranks`` holds the 1-based rank
    of the message in each ranking that was fused ("fulltext": the group-local BM25 order).
    ``text`` is cut to :data:`graphmem.core.paging.LIST_TEXT_CHARS` characters when longer
    (``text_truncated`` true, ``text_chars`` the full length; :class:`FullMessage` reads it whole).
    """

    score: float
    person_id: str = ""
    turn_created: int = 0
    expanded_from: str = ""
    ranks: dict[str, int] = Field(default_factory=dict)
    text_truncated: bool = False
    text_chars: int | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-serialisable form."""
        return self.model_dump()


class SearchResult(Paged):
    """One search: the hits and how they were ranked (``graphmem search --json``,
    ``GET /groups/{id}/search``, the MCP tool ``search_messages``).

    Attributes:
        group_id / query: what was searched.
        mode: the ranking asked for ("hybrid", "fulltext" or "vector").
        mode_used: the ranking that ran: "fulltext" when hybrid was asked while some messages
            of the group have no vector yet (``ingest --embed later``), else ``mode``.
        vectors_pending: messages of the group without a vector when the search ran (0 once
            ``graphmem embed --group G`` has run); in vector mode they cannot be found.
        warning: "" or sentences (joined by "; ") saying what ``vectors_pending`` changed and how
            to fix it, and that the query's language differs from the hits'
            (:func:`graphmem.core.language.mismatch_note`).
        hits: best first, as :func:`search_messages` returns them (one page: ``k`` hits at most).
        truncated / next_cursor: more hits of the same ranking follow (:func:`search_group`).
    """

    group_id: str
    query: str
    mode: Mode
    mode_used: Mode
    vectors_pending: int
    warning: str = ""
    hits: list[MessageHit]


class PersonMemory(Paged):
    """One person's derived memory.

    Attributes:
        group_id / person: whose memory.
        mode: ``"head"`` (current states), ``"full"`` (whole chains, oldest first) or
            ``"as_of"`` (the state that held at ``as_of``; with ``full=True`` the earlier states too).
        as_of: the as-of time, or "".
        chains: records the person owns: one list per chain, oldest first; the last element is
            the state shown as current (head, or the state at ``as_of``).
        said_about_others: current (or as-of) records the person is the source of but does not
            own (what they said or observed about others or the group).
        truncated / next_cursor: one page holds at most ``limit`` items (a chain counts as one),
            chains first, then ``said_about_others``, each ordered by the first state of its
            chain (its segment, then id: :func:`graphmem.query.people.person_memory`).
    """

    group_id: str
    person: RosterMember
    mode: Literal["head", "full", "as_of"]
    as_of: str = ""
    chains: list[list[DerivedRecord]] = Field(default_factory=list)
    said_about_others: list[DerivedRecord] = Field(default_factory=list)


class RecordProvenance(Paged):
    """A derived record with the verbatim messages it was written FROM and its update chain.

    Attributes:
        record: the record.
        messages: its FROM messages, in conversation order (texts cut as in a search hit).
        chain: every state of its chain, oldest first (the last one is the head).
        truncated / next_cursor: one page holds at most ``limit`` messages and states, the
            messages first, then the chain (:func:`graphmem.query.people.provenance`).
    """

    record: DerivedRecord
    messages: list[ProvenanceMessage]
    chain: list[DerivedRecord]


class ForgetSummary(BaseModel):
    """What erasing one person removed (all zero / empty when there was nothing left to erase).

    Attributes:
        group_id / person_id: whose data (the stored id erased, whatever spelling of it was
            asked for; the id as asked when nothing was left to erase).
        person_ids: every Person id erased: the one asked for and any stored under another
            spelling of the same identity (NFC/NFD, case, surrounding whitespace:
            :func:`graphmem.core.limits.same_identity`); empty when nothing was left.
        messages_deleted: messages the person sent.
        records_deleted: derived records (nodes, every version) erased: those that hold the
            person's words whoever their source (``records_with_their_words``), those the
            person owned or was the source of, and those left without any supporting message.
        records_with_their_words: of these, records of any owner and source that were written
            FROM a message of the person or whose content quotes them (five words in a row of
            one of their messages, or a whole message of three or four words), with the later
            states of their chains.
        record_ids: the entry ids of every erased record, sorted.
        chains_repaired: superseded records that became heads again because their successor
            was erased.
        segments_redacted: Writer segments whose stored validation report was replaced (it
            quoted actions written from the person's messages or of erased records).
        import_files_removed: the first-load importer's intermediate CSV files (``graphmem neo4j
            import``) that held the group's messages, deleted (paths, sorted).
        person_deleted: whether the Person node was still there and was deleted.
    """

    group_id: str
    person_id: str
    person_ids: list[str] = Field(default_factory=list)
    messages_deleted: int = 0
    records_deleted: int = 0
    records_with_their_words: int = 0
    record_ids: list[str] = Field(default_factory=list)
    chains_repaired: int = 0
    segments_redacted: int = 0
    import_files_removed: list[str] = Field(default_factory=list)
    person_deleted: bool = False


class FullMessage(StoredMessage):
    """One whole stored message (``GET /groups/{id}/messages/{message_id}``, MCP ``get_message``,
    ``graphmem message``): what a list cut short, read whole.

    Attributes:
        id / channel / session / turn / ts / speaker / person_id / turn_created: as stored
            (:class:`graphmem.core.model.StoredMessage`).
        group_id: the group.
        text: the text exactly as stored; over MCP the slice ``text_offset .. text_offset +
            len(text)`` (characters) of it when the whole does not fit the result's size.
        text_chars: length of the whole text in characters.
        text_offset: where ``text`` starts in the whole text (0 unless sliced).
        text_truncated: true when ``text`` is a slice that stops before the end.
        next_text_offset: ``text_offset`` of the next slice, or None.
        reply_to: the id of the message it answers, or "".
        kind: "" (a person's words), "bot" or "system".
        edited: the text was changed after it was first stored (an edit; the export keeps the
            earlier texts).
    """

    group_id: str
    text_chars: int = 0
    text_offset: int = 0
    text_truncated: bool = False
    next_text_offset: int | None = None
    reply_to: str = ""
    kind: str = ""
    edited: bool = False


class GroupForgetSummary(BaseModel):
    """What erasing a whole group removed (:func:`graphmem.groups.service.erase_group`).

    Attributes:
        group_id: the group.
        nodes_deleted: nodes deleted: messages, persons, sessions, derived records (every
            version), Writer segments and the Group node (0 when nothing was left).
        batches: write transactions the deletion took (each deletes a bounded number of nodes).
        jobs_cancelled: ids of the group's open derive jobs, now ``cancelled`` (their records
            stay readable at ``GET /jobs/{id}``; every job of the group is kept as a receipt
            that holds no chat text).
        import_files_removed: the first-load importer's intermediate CSV files that held the
            group's messages, deleted (paths, sorted).
        group_deleted: whether the Group node was still there and was deleted.
    """

    group_id: str
    nodes_deleted: int = 0
    batches: int = 0
    jobs_cancelled: list[str] = Field(default_factory=list)
    import_files_removed: list[str] = Field(default_factory=list)
    group_deleted: bool = False


class DeriveJob(BaseModel):
    """A background derive job and its progress, as stored.

    Attributes:
        id / group_id: the job and its group.
        state: ``queued`` | ``running`` | ``done`` | ``failed`` | ``cancelled`` (its group was
            erased while the job was open; ``error`` says so).
        created_at / updated_at / finished_at: ISO-8601 UTC ("" when not yet).
        segments_before: Writer segments the group had when the job opened.
        segments_done: segments written since (read from the Segment markers).
        segments_total: segments_done + the segments still pending now (grows when messages
            arrive while the job runs).
        pending_messages: messages no segment covers yet.
        calls / prompt_tokens / completion_tokens: Writer usage of the written segments.
        records_added / records_updated / actions_rejected: over the written segments.
        runs: how many times a runner claimed the job (> 1 after a restart or takeover).
        rate_limited: waits after HTTP 429 answers from the model endpoint.
        error: the error that failed the job, or the last one it waited out ("" if none).
    """

    id: str
    group_id: str
    state: JobState
    created_at: str
    updated_at: str = ""
    finished_at: str = ""
    segments_before: int = 0
    segments_done: int = 0
    segments_total: int = 0
    pending_messages: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    records_added: int = 0
    records_updated: int = 0
    actions_rejected: int = 0
    runs: int = 0
    rate_limited: int = 0
    error: str = ""


class JobsPage(Paged):
    """One page of a group's derive jobs (``GET /groups/{id}/jobs``, ``graphmem jobs``),
    newest first (by ``created_at``, then id).

    Attributes:
        group_id: the group.
        jobs: the jobs of this page with their progress (as ``GET /jobs/{id}``).
        truncated / next_cursor: :class:`graphmem.core.paging.Paged`.
    """

    group_id: str
    jobs: list[DeriveJob] = Field(default_factory=list)


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
        search_question: the question as searched when it was rewritten into the group's
            language by the answer model (a question in another language than the group's
            messages: :mod:`graphmem.query.translate`); "" when it was searched as asked.
        answer: the answerer's reply, or None when no answer model is configured.
        note: human-readable remark ("no answer model is set ...", degraded stages), or "".
        projection: Project's output.
        excerpts: System 1 evidence in final order (top-k, expansion neighbours next to anchors).
        rows: System 2 memory slice, one row per roster row asked about.
        ask_query: the supplementary ASK query that was run, or "".
        evidence: the composed text given to the answerer.
        evidence_tokens: tokens of ``evidence`` per part (``verbatim``, ``structured``,
            ``question``, ``total``) under :data:`graphmem.core.tokens.TOKENIZER`, counted with or
            without a model (:func:`graphmem.query.compose.evidence_tokens`).
        message_ids: every message id behind the evidence (excerpts, raw fallback, and the FROM
            messages of every record shown), in first-seen order.
        record_ids: every derived record id shown (heads and history versions).
        pool_ids: the System 1 recall pool (what Select ranks, ``recall_n`` messages), best first.
        pool_tokens: tokens of each pool message's numbered excerpt line, in ``pool_ids`` order
            (:func:`graphmem.query.compose.excerpt_tokens`): showing the pool's first k costs
            ``sum(pool_tokens[:k])`` verbatim tokens (the evidence token curve of ``graphmem eval``).
        as_of: the as-of time used (ISO-8601), or "".
        budgets: the budgets used.
        usage: model calls and tokens per stage (``rewrite``, ``project``, ``select``,
            ``sufficiency``, ``rerank``, ``answer``).
        timings_s: wall-clock seconds per stage (model time included; ``usage`` has it apart):
            project (with ``rewrite`` apart when a rewrite was asked for), embed (question and
            issue in one batch), s1_recall, select, expand, sufficiency, ask, rerank, s2, compose,
            answer.
        s2_timings_s: the parts of ``s2`` (rows, embed, chains, fulltext, rank, fallback).
        model: the answer model's name, or "".
    """

    group_id: str
    question: str
    search_question: str = ""
    answer: str | None = None
    note: str = ""
    projection: Projection
    excerpts: list[Excerpt] = Field(default_factory=list)
    rows: list[Row] = Field(default_factory=list)
    ask_query: str = ""
    evidence: str = ""
    evidence_tokens: dict[str, int] = Field(default_factory=dict)
    message_ids: list[str] = Field(default_factory=list)
    record_ids: list[str] = Field(default_factory=list)
    pool_ids: list[str] = Field(default_factory=list)
    pool_tokens: list[int] = Field(default_factory=list)
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
            text, cut, chars = clip_text(e.text)
            messages.setdefault(e.id, CitedMessage(id=e.id, speaker=e.speaker, ts=e.ts,
                                                   text=None if quoted else text,
                                                   text_truncated=cut and not quoted,
                                                   text_chars=chars if not quoted else None))
        records: dict[str, CitedRecord] = {}
        for row in self.rows:
            for c in row.cells:
                for v in [*c.history, c.current]:
                    records.setdefault(v.id, CitedRecord(
                        id=v.id, layer=v.layer, owner=GROUP if c.owner_kind == "group" else c.owner_id,
                        source=GROUP if v.source_kind == "group" else v.source_id, status=v.state))
        return CompactAnswer(
            group_id=self.group_id, question=self.question, answer=self.answer,
            evidence=self.evidence if self.answer is None else "", note=self.note, as_of=self.as_of,
            messages=list(messages.values()), records=list(records.values()),
            evidence_tokens=dict(self.evidence_tokens),
        )



class CitedMessage(BaseModel):
    """One message behind a compact answer: id, speaker (display name), ts (ISO-8601) and
    text; text is None when the answer is None, because the evidence then quotes it (as
    ``(speaker @ ts, msg <id>) text``) and nothing is said twice. A text over 2,000 characters
    is cut (``text_truncated``; ``text_chars`` is the whole length, ``get_message`` reads it);
    both appear only on a cut text (a compact answer says nothing that carries nothing)."""

    id: str
    speaker: str
    ts: str = ""
    text: str | None = None
    text_truncated: bool = False
    text_chars: int | None = None

    @model_serializer(mode="wrap")
    def _only_when_cut(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.text_truncated:
            data.pop("text_truncated", None)
            data.pop("text_chars", None)
        return data


class CitedRecord(BaseModel):
    """One derived record behind a compact answer.

    Attributes:
        id: the record's entry id (``record_provenance`` traces it to its messages).
        layer: per_speaker_core, per_speaker_profile, group_interaction or group_insight.
        owner: the Person id it is about, or ``GROUP`` for the group (as provenance, the graph
            and the export write it); source: the Person id who said or observed it, ``GROUP``,
            or "" when gone.
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
        evidence_tokens: what the composed evidence costs, per part (``verbatim``,
            ``structured``, ``question``, ``total``; tokens under
            :data:`graphmem.core.tokens.TOKENIZER`), as :attr:`AskResult.evidence_tokens`.
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
    evidence_tokens: dict[str, int] = Field(default_factory=dict)


DEFAULT_PAGE_BYTES = 256_000
"""Bytes (JSON Lines, UTF-8) an export page holds at most by default (graphmem.groups.export)."""


class ExportPage(Paged):
    """One page of a group export (:func:`graphmem.groups.export.export_page`).

    Attributes:
        group_id: the group.
        lines: export lines (JSON objects with ``kind``), in export order.
        bytes: size of the page as JSON Lines (UTF-8, one newline per line).
        truncated: more pages follow (as every list, :class:`graphmem.core.paging.Paged`).
        next_cursor: pass it back for the next page; None on the last page.
    """

    group_id: str
    lines: list[dict[str, Any]]
    bytes: int = 0
