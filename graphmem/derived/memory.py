"""The derived-record store of System 2: four layers, provenance and non-destructive chains.

Graph model (DESIGN.md): every derived record is a ``:Derived`` node with exactly one layer
label (:class:`LAYER_LABELS`), properties ``id`` (the entry_id), ``group_id``, ``content``,
``layer``, ``utype``, ``ts``, ``session``, ``turn_created``, ``confidence``, ``state``
(``head`` | ``superseded``) and ``embedding``, and links

- ``-[:OWNER]->`` the :Person it is about, or the :Group node for GROUP-layer records;
- ``-[:SOURCE]->`` the :Person (or :Group) who said or observed it;
- ``-[:FROM]->`` the supporting :Message nodes (provenance, never empty);
- ``(old)-[:SUPERSEDED_BY]->(new)`` for an UPDATE: the old node stays, only its ``state``
  becomes ``superseded``. Chains are linear (an UPDATE may only target a head).

Two extra properties serve this module: ``instant`` (epoch seconds of ``ts``, for
:func:`state_as_of`) and ``segment`` (id of the Writer segment that wrote the record).

Each Writer segment is written by :func:`write_segment` in ONE write transaction together
with its ``(:Segment {group_id, id, index, ...})-[:COVERS]->(:Message)`` marker, so after a
crash a segment is either fully written (records, chain links, marker) or not at all, and a
resumed run restarts exactly at the first uncovered message. The group node counts written
segments in ``Group.writer_segments``; updating it first in the transaction serialises two
writers of the same group.

Owners and sources are addressed by ``Person.id`` (speaker_id, else display name) or by the
reserved name :data:`GROUP` for the group itself.

Source: SpeakerMem-R1 §3.1-3.2, App. B.1 (Tables 5-6) and B.2.

Size (over 500 lines on purpose): the System 2 store is one contract over ``cypher/memory/``:
the record types, every read (heads, chains, as-of, provenance) and the one atomic segment
write share the row decoding; the Writer (:mod:`graphmem.derived.writer`) and the reads of
:mod:`graphmem.query` sit on top of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import neo4j
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graphmem.store.db import Store, run_tx
from graphmem.core.errors import ConflictError, InvalidInputError, NotFoundError, group_erasing, no_group
from graphmem.core.model import (  # constants re-exported: they moved to graphmem.core.model
    GROUP,
    GROUP_LAYERS,
    HEAD,
    LAYER_LABELS,
    LAYERS,
    PERSON_LAYERS,
    STATES,
    SUPERSEDED,
    UTYPES,
    StoredMessage,
)
from graphmem.core.text import gram_field, normalise_content, search_form
from graphmem.core.times import now_iso, to_instant
from graphmem.core.results import (  # moved to the light result models; re-exported
    DerivedRecord as DerivedRecord,
    Kind as Kind,
    ProvenanceMessage as ProvenanceMessage,
)

__all__ = [
    "GROUP",
    "GROUP_LAYERS",
    "HEAD",
    "LAYERS",
    "LAYER_LABELS",
    "PERSON_LAYERS",
    "STATES",
    "SUPERSEDED",
    "UTYPES",
    "DerivedRecord",
    "EditedMeanwhile",
    "ErasedMeanwhile",
    "NewRecord",
    "ProvenanceMessage",
    "SegmentInfo",
    "SegmentMarker",
    "SegmentWriteResult",
    "current_heads",
    "get_record",
    "get_records",
    "layer_label",
    "layer_scope",
    "list_records",
    "list_segments",
    "normalise_content",
    "record_chain",
    "record_chains",
    "record_provenance",
    "state_as_of",
    "to_instant",
    "write_segment",
]


def layer_label(layer: str) -> str:
    """Graph label of a layer code name (``per_speaker_core`` -> ``Core``).

    Raises:
        InvalidInputError: ``layer`` is not one of :data:`LAYERS`.
    """
    try:
        return LAYER_LABELS[layer]
    except KeyError:
        raise InvalidInputError(f"unknown layer; one of {', '.join(LAYERS)}", field="layer", value=layer) from None


def layer_scope(layer: str) -> Literal["PERSON", "GROUP"]:
    """``"PERSON"`` for per_speaker_* layers, ``"GROUP"`` for group_* layers.

    Raises:
        InvalidInputError: unknown layer.
    """
    layer_label(layer)
    return "GROUP" if layer in GROUP_LAYERS else "PERSON"


# --------------------------------------------------------------------------------------------
# record types
# --------------------------------------------------------------------------------------------


class NewRecord(BaseModel):
    """One validated record to create (an ADD, or the new state of an UPDATE).

    Attributes:
        id: entry_id to create (unique within the group).
        layer / utype / content: as in :class:`DerivedRecord`.
        owner: ``Person.id`` or :data:`GROUP`; must be :data:`GROUP` exactly for GROUP layers.
        source: ``Person.id`` or :data:`GROUP`.
        ts: ISO-8601 time (newest supporting message).
        session: session of the segment.
        turn_created: write position (``turn_created`` of the newest supporting message).
        confidence: in [0, 1].
        from_ids: supporting message ids of this group (at least one).
        embedding: float list of the embedder's dimension (L2-normalised), computed BEFORE the
            write transaction.
        supersedes: for an UPDATE, the entry_id of the head it replaces (the new record must
            carry that head's owner, source and layer); None for an ADD.
    """

    model_config = ConfigDict(frozen=True)

    id: str = Field(min_length=1)
    layer: str
    utype: str
    content: str
    owner: str = Field(min_length=1)
    source: str = Field(min_length=1)
    ts: str
    session: str = ""
    turn_created: int = 0
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    from_ids: list[str]
    embedding: list[float]
    supersedes: str | None = None

    @field_validator("layer")
    @classmethod
    def _known_layer(cls, v: str) -> str:
        if v not in LAYER_LABELS:
            raise ValueError(f"unknown layer {v!r}")
        return v

    @field_validator("utype")
    @classmethod
    def _known_utype(cls, v: str) -> str:
        if v not in UTYPES:
            raise ValueError(f"unknown utype {v!r}")
        return v

    @field_validator("content")
    @classmethod
    def _has_content(cls, v: str) -> str:
        if not normalise_content(v):
            raise ValueError("content is empty")
        return v

    @field_validator("from_ids")
    @classmethod
    def _has_provenance(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("from_ids must name at least one supporting message")
        return list(dict.fromkeys(v))

    @model_validator(mode="after")
    def _scope_matches_owner(self) -> NewRecord:
        if self.layer in GROUP_LAYERS and self.owner != GROUP:
            raise ValueError(f"{self.layer} records must be owned by {GROUP}, not {self.owner!r}")
        if self.layer in PERSON_LAYERS and self.owner == GROUP:
            raise ValueError(f"{self.layer} records must be owned by a person, not {GROUP}")
        return self

    @property
    def owner_kind(self) -> Kind:
        return "group" if self.owner == GROUP else "person"

    @property
    def source_kind(self) -> Kind:
        return "group" if self.source == GROUP else "person"


class SegmentMarker(BaseModel):
    """The marker of one Writer segment, written with its records (the resume point).

    Attributes:
        id: marker id, unique within the group (e.g. ``"seg-0003"``).
        index: 1-based position of the segment among the group's written segments; must be
            exactly one more than the segments already written (checked in the transaction).
        session / channel: where the segment's messages come from.
        mode: ``"session"`` or ``"window"``.
        message_ids: ids of every message the segment covers (not only supporting ones).
        first_turn_created / last_turn_created: write positions of its first/last message.
        ts_first / ts_last: ISO-8601 times of its first/last message.
        max_actions: the action budget max(8, 2 x messages).
        attempted / accepted / rejected: action counts of the validation report.
        added / updated: records created by ADD / by UPDATE.
        report: the validation report (JSON-serialisable dict), stored as a JSON string.
        stage / model: token-accounting stage (``"writer"``) and model name.
        calls / prompt_tokens / completion_tokens / latency_s: Writer usage for this segment
            (all calls, parse retries included; seconds).
        skipped: why no Writer call was made for the segment ("" = it was called; ``"blank"``
            = every message of the segment is blank, nothing to read).
    """

    id: str = Field(min_length=1)
    index: int = Field(ge=1)
    session: str = ""
    channel: str = ""
    mode: str = "session"
    message_ids: list[str] = Field(min_length=1)
    first_turn_created: int = 0
    last_turn_created: int = 0
    ts_first: str = ""
    ts_last: str = ""
    max_actions: int = 0
    attempted: int = 0
    accepted: int = 0
    rejected: int = 0
    added: int = 0
    updated: int = 0
    report: dict[str, Any] = Field(default_factory=dict)
    stage: str = "writer"
    model: str = ""
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    skipped: str = ""


class SegmentInfo(SegmentMarker):
    """A stored segment marker as read back by :func:`list_segments`.

    Attributes:
        written_at: ISO-8601 UTC time the segment was committed.
        n_messages: number of covered messages.
        (``message_ids`` is not stored on the marker; it is left empty here: the covered
        messages are the marker's COVERS links.)
    """

    message_ids: list[str] = Field(default_factory=list)
    written_at: str = ""
    n_messages: int = 0


class SegmentWriteResult(BaseModel):
    """Outcome of :func:`write_segment`.

    Attributes:
        segment_id: the marker id.
        created: entry_ids created (ADDs and new UPDATE states), in action order.
        superseded: entry_ids that stopped being heads.
    """

    segment_id: str
    created: list[str]
    superseded: list[str]


# --------------------------------------------------------------------------------------------
# writes
# --------------------------------------------------------------------------------------------


def _record_rows(segment_id: str, records: Sequence[NewRecord]) -> list[dict[str, Any]]:
    return [
        {
            "id": r.id,
            "label": layer_label(r.layer),  # whitelisted label, never user input
            "layer": r.layer,
            "utype": r.utype,
            # NFC, the form every search document is in (core.text.search_form): the Writer's
            # words, not the chat's, so only their Unicode form changes, never what they say
            "content": search_form(r.content),
            "content_grams": gram_field(r.content),
            "ts": r.ts,
            "instant": to_instant(r.ts),
            "session": r.session,
            "turn_created": r.turn_created,
            "confidence": float(r.confidence),
            "segment": segment_id,
            "owner": r.owner,
            "owner_kind": r.owner_kind,
            "source": r.source,
            "source_kind": r.source_kind,
            "from_ids": r.from_ids,
            "embedding": [float(x) for x in r.embedding],
        }
        for r in records
    ]


class ErasedMeanwhile(ConflictError):
    """A person (or the group) was erased after this derive read the group: the segment's
    Writer answer may rest on erased words, so nothing of it is written
    (:func:`write_segment` with ``erasures``); the derive plans its segments again."""


class EditedMeanwhile(ConflictError):
    """A message of the segment was edited after the Writer read it: its records would rest on
    the old text and the segment would mark the new one derived, so nothing of it is written
    (:func:`write_segment` with ``versions``); the derive plans its segments again."""


def write_segment(
    store: Store, group_id: str, marker: SegmentMarker, records: Sequence[NewRecord], *,
    written_at: str | None = None, n_messages: int | None = None, erasures: int | None = None,
    versions: Mapping[str, int] | None = None,
) -> SegmentWriteResult:
    """Write one segment's validated records and its marker in ONE write transaction.

    Creates every record (ADDs and UPDATE states) with its layer label, embedding and
    OWNER/SOURCE/FROM links; for each record with ``supersedes`` marks that head
    ``superseded`` and links ``(old)-[:SUPERSEDED_BY]->(new)`` (records apply in order, so a
    later record may supersede one created earlier in the same batch); finally stores the
    :class:`SegmentMarker` with ``COVERS`` links to all of the segment's messages. Either all
    of it is committed or nothing is. A segment with no record (NOOP, all rejected) still gets
    its marker, so it is not asked again.

    Args:
        store: open store (schema applied).
        group_id: the group.
        marker: the segment marker; ``marker.index`` must be the next segment number.
        records: validated records, embeddings already computed (never inside the
            transaction).
        written_at: the marker's ISO-8601 UTC commit time; None (a Writer run) is now, an
            import of a group export (graphmem.groups.export) passes the exported one.
        n_messages: messages the segment was written over; None (a Writer run) is
            ``len(marker.message_ids)``. An import passes the exported count: a message edited
            after the segment was written has left its COVERS, not its count.
        erasures: the group's erasure count when the Writer's input was read (a derive run
            passes it; None: not checked). Checked under the group's lock: when an erasure
            happened since, nothing is written (:class:`ErasedMeanwhile`).
        versions: ``{message id: edits}``, the text version of each message the Writer read
            (:attr:`graphmem.derived.writer.segments.SegmentMessage.edits`; None: not checked).
            Checked under the group's lock: a message edited since makes nothing be written
            (:class:`EditedMeanwhile`).

    Returns:
        A :class:`SegmentWriteResult`.

    Raises:
        NotFoundError: the group does not exist.
        ErasedMeanwhile: a person or the group was erased since ``erasures`` was read (a
            :class:`ConflictError`). Nothing is written.
        EditedMeanwhile: a message of ``versions`` was edited since it was read (a
            :class:`ConflictError`). Nothing is written.
        ConflictError: the group is being erased; the segment (or one of its messages) is already written, its index is
            not the next one, an UPDATE target is no longer a head, or an entry_id exists
            (e.g. another run is deriving the same group). Nothing is written.
        InvalidInputError: a record names an owner, source or supporting message that does not
            exist in the group, has only blank supporting messages (field ``from_ids``), or
            uses an entry_id twice. Nothing is written.
        StoreUnavailableError: Neo4j failed; nothing of this segment is written.
    """
    ids = [r.id for r in records]
    if len(set(ids)) != len(ids):
        raise InvalidInputError("entry_id used twice in one segment", record=marker.id, field="id")
    created_here: set[str] = set()
    for r in records:
        if r.supersedes is not None and r.supersedes == r.id:
            raise InvalidInputError("a record cannot supersede itself", record=r.id, field="supersedes")
        created_here.add(r.id)
    rows = _record_rows(marker.id, records)
    chain_rows = [{"old_id": r.supersedes, "new_id": r.id} for r in records if r.supersedes]
    props = marker.model_dump(exclude={"id", "message_ids", "report"})
    props["report"] = json.dumps(marker.report, ensure_ascii=False, default=str)
    props["n_messages"] = len(marker.message_ids) if n_messages is None else n_messages
    props["written_at"] = written_at or now_iso()

    def work(tx: neo4j.ManagedTransaction) -> SegmentWriteResult:
        lock = run_tx(
            tx, "memory/lock_segment",
            group_id=group_id, segment_id=marker.id, message_ids=marker.message_ids,
            versions=[{"id": k, "edits": v} for k, v in (versions or {}).items()],
        )
        if not lock:
            raise no_group(group_id)
        state = lock[0]
        if state["erasing"]:
            raise group_erasing(group_id)
        if erasures is not None and int(state["erasures"]) != erasures:
            raise ErasedMeanwhile(
                f"group {group_id!r}: data was erased while segment {marker.id} was derived; "
                "nothing of it was written (its messages are planned again)")
        if int(state["changed"]):
            raise EditedMeanwhile(
                f"group {group_id!r}: {state['changed']} message(s) of segment {marker.id} were edited while "
                "it was derived; nothing of it was written (its messages are planned again)")
        if state["existing"] or state["covered"]:
            raise ConflictError(
                f"group {group_id!r}: segment {marker.id} is already written "
                f"({state['covered']} of its messages are covered); is another derive running?"
            )
        if int(state["segments_before"]) != marker.index - 1:
            raise ConflictError(
                f"group {group_id!r}: segment {marker.id} has index {marker.index} but "
                f"{state['segments_before']} segments are written; is another derive running?"
            )
        if rows:
            made = run_tx(tx, "memory/create_records", group_id=group_id, rows=rows)
            by_id = {m["id"]: m for m in made}
            for row in rows:
                got = by_id.get(row["id"])
                if got is None or got["owners"] != 1 or got["sources"] != 1 or got["froms"] != len(row["from_ids"]):
                    raise InvalidInputError(
                        f"record {row['id']}: owner {row['owner']!r}, source {row['source']!r} or "
                        f"a supporting message of {row['from_ids']} is not in group {group_id!r} "
                        f"(links made: {got})",
                        record=row["id"],
                    )
                if not got.get("readable"):
                    raise InvalidInputError(
                        f"record {row['id']}: every supporting message is blank; a record needs at "
                        "least one message with text", record=row["id"], field="from_ids",
                    )
        if chain_rows:
            chained = run_tx(tx, "memory/supersede_records", group_id=group_id, rows=chain_rows)
            n = int(chained[0]["chained"]) if chained else 0
            if n != len(chain_rows):
                raise ConflictError(
                    f"group {group_id!r}: {len(chain_rows) - n} UPDATE target(s) of segment "
                    f"{marker.id} are not current heads: {[c['old_id'] for c in chain_rows]}"
                )
        seg = run_tx(
            tx, "memory/create_segment",
            group_id=group_id, segment_id=marker.id, props=props, message_ids=marker.message_ids,
        )
        if not seg or int(seg[0]["covers"]) != len(set(marker.message_ids)):
            raise InvalidInputError(
                f"segment {marker.id}: some covered messages are not in group {group_id!r}",
                record=marker.id, field="message_ids",
            )
        return SegmentWriteResult(
            segment_id=marker.id, created=ids, superseded=[c["old_id"] for c in chain_rows]
        )

    return store.write_tx(work)


# --------------------------------------------------------------------------------------------
# reads
# --------------------------------------------------------------------------------------------


def _records(rows: Iterable[dict[str, Any]]) -> list[DerivedRecord]:
    return [DerivedRecord(**{k: v for k, v in row.items() if k != "chain_of"}) for row in rows]


def list_records(
    store: Store,
    group_id: str,
    *,
    owners: Sequence[str] | None = None,
    layers: Sequence[str] | None = None,
    heads_only: bool = False,
) -> list[DerivedRecord]:
    """Derived records of a group, every state (``heads_only=False``) or only the heads.

    Args:
        store: open store.
        group_id: the group.
        owners: only records about these ``Person.id`` values and/or :data:`GROUP`; None = all.
        layers: only these layers; None = all.
        heads_only: only current states.

    Returns:
        Records ordered by ``turn_created`` then id (empty for an unknown group).

    Raises:
        InvalidInputError: an unknown layer name.
    """
    if layers is not None:
        for layer in layers:
            layer_label(layer)
    rows = store.read(
        "memory/list_records",
        group_id=group_id,
        heads_only=heads_only,
        owners=list(owners) if owners is not None else None,
        layers=list(layers) if layers is not None else None,
    )
    return _records(rows)


def current_heads(
    store: Store,
    group_id: str,
    *,
    owners: Sequence[str] | None = None,
    layers: Sequence[str] | None = None,
) -> list[DerivedRecord]:
    """The current heads (latest states) of a group's derived records: the "head" view.

    This is what the Writer sees as CURRENT MEMORY and what a ``head`` query reads.

    Args: as :func:`list_records`.

    Returns:
        Head records ordered by ``turn_created`` then id.
    """
    return list_records(store, group_id, owners=owners, layers=layers, heads_only=True)


def get_records(store: Store, group_id: str, entry_ids: Sequence[str]) -> list[DerivedRecord]:
    """Records by entry_id, in the order given; unknown ids are left out."""
    if not entry_ids:
        return []
    return _records(store.read("memory/get_records", group_id=group_id, ids=list(entry_ids)))


def get_record(store: Store, group_id: str, entry_id: str) -> DerivedRecord:
    """One record by entry_id.

    Raises:
        NotFoundError: no such record in the group.
    """
    found = get_records(store, group_id, [entry_id])
    if not found:
        raise NotFoundError(f"no derived record {entry_id!r} in group {group_id!r}")
    return found[0]


def record_chains(
    store: Store, group_id: str, entry_ids: Sequence[str]
) -> dict[str, list[DerivedRecord]]:
    """Full update chains of several records at once: the "full" view.

    Args:
        store: open store.
        group_id: the group.
        entry_ids: any state of each chain (typically heads).

    Returns:
        ``{entry_id: [oldest, ..., newest]}`` for every id that exists; each record carries
        its ``position`` (0 = the original ADD) and ``ts`` (when that state was written).
    """
    if not entry_ids:
        return {}
    rows = store.read("memory/record_chains", group_id=group_id, ids=list(entry_ids))
    out: dict[str, list[DerivedRecord]] = {}
    for row in rows:
        out.setdefault(row["chain_of"], []).append(_records([row])[0])
    return out


def record_chain(store: Store, group_id: str, entry_id: str) -> list[DerivedRecord]:
    """The whole update chain a record belongs to, oldest first (the last one is the head).

    Args:
        entry_id: any state of the chain.

    Returns:
        ``[original ADD, first UPDATE, ..., head]`` with ``position`` 0, 1, ... and ``ts``.

    Raises:
        NotFoundError: no such record in the group.
    """
    chain = record_chains(store, group_id, [entry_id]).get(entry_id)
    if not chain:
        raise NotFoundError(f"no derived record {entry_id!r} in group {group_id!r}")
    return chain


def record_provenance(store: Store, group_id: str, entry_id: str) -> list[ProvenanceMessage]:
    """The verbatim messages a record was written FROM, in conversation order.

    Raises:
        NotFoundError: no such record in the group.
    """
    rows = store.read("memory/record_provenance", group_id=group_id, entry_id=entry_id)
    if not rows:
        get_record(store, group_id, entry_id)  # raises NotFoundError when it does not exist
    return [ProvenanceMessage(**row, edited=bool(row["text_history"])) for row in rows]


def state_as_of(store: Store, group_id: str, at: str | datetime | float) -> list[DerivedRecord]:
    """The derived memory as it stood at a time: per chain, the state current at ``at``.

    A state counts from its ``ts`` (its newest supporting message) until the ``ts`` of the
    state that superseded it. Chains whose first state is later than ``at`` are left out.

    Args:
        store: open store.
        group_id: the group.
        at: ISO-8601 string (naive = UTC), datetime, or epoch seconds.

    Returns:
        Records ordered by ``turn_created`` then id; ``state`` is the record's state today.

    Raises:
        InvalidInputError: unparsable ``at``.
    """
    return _records(store.read("memory/records_as_of", group_id=group_id, instant=to_instant(at)))


def list_segments(store: Store, group_id: str) -> list[SegmentInfo]:
    """Written Writer segments of a group, by index, with their validation reports and usage."""
    infos = []
    for row in store.read("memory/list_segments", group_id=group_id):
        props = dict(row["props"])
        props.pop("group_id", None)
        try:
            props["report"] = json.loads(props.get("report") or "{}")
        except ValueError:
            props["report"] = {"unreadable": props.get("report")}
        infos.append(SegmentInfo(**props))
    return infos
