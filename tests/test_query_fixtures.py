"""Shared test data for the query and API tests: a family chat and its derived memory.

Derived records are created only through :func:`graphmem.derived.memory.write_segment` (the System 2
store's own write path), never by ad-hoc Cypher. No tests live here.
"""

from __future__ import annotations

from typing import Any

from graphmem.derived import memory
from graphmem.core.embed import Embedder
from graphmem.verbatim.ingest import ingest_conversations
from graphmem.query.prompts import MARKERS
from graphmem.core.model import Conversation, MessageRecord

S1, S2, S3 = "2026-03-05", "2026-03-18", "2026-05-02"

# (id, session, speaker, text, ts)
FAMILY: list[tuple[str, str, str, str, str]] = [
    ("m00", "s1", "Mom", "My knee still hurts, so I need an easy walk.", f"{S1}T10:00:00"),
    ("m01", "s1", "Ben", "The ridge trail has far better views than the lake path.", f"{S1}T10:01:00"),
    ("m02", "s1", "Cara", "Mom needs the easy lake trail, let's be kind.", f"{S1}T10:02:00"),
    ("m03", "s1", "Dad", "I'll fire up the barbecue when we get back.", f"{S1}T10:03:00"),
    ("m04", "s1", "Eli", "Has anyone seen my blue jacket?", f"{S1}T10:04:00"),
    ("m05", "s1", "Mom", "For our anniversary I'd love a big party with all the cousins.", f"{S1}T10:05:00"),
    ("m06", "s2", "Ben", "I still prefer the ridge, honestly.", f"{S2}T18:00:00"),
    ("m07", "s2", "Dad", "Let's take the easy lake trail, everyone.", f"{S2}T18:01:00"),
    ("m08", "s2", "Cara", "I'll bring sandwiches for lunch.", f"{S2}T18:02:00"),
    ("m09", "s2", "Mom", "Actually a small dinner would suit me better for the anniversary.", f"{S2}T18:03:00"),
    ("m10", "s2", "Eli", "Found the jacket, it was in the car.", f"{S2}T18:04:00"),
    ("m11", "s2", "Cara", "Ben is late again, as always.", f"{S2}T18:05:00"),
    ("m12", "s3", "Dad", "Easy lake trail it is, that's settled.", f"{S3}T09:00:00"),
    ("m13", "s3", "Mom", "Let's just do a picnic in the park for the anniversary.", f"{S3}T09:01:00"),
    ("m14", "s3", "Ben", "Okay, easy trail then, but I think the ridge is better.", f"{S3}T09:02:00"),
    ("m15", "s3", "Dad", "I'll grill burgers for everyone after the walk.", f"{S3}T09:03:00"),
]
TS = {mid: ts for mid, _, _, _, ts in FAMILY}
MEMBERS = ["Ben", "Cara", "Dad", "Eli", "Mom"]


def family_conversation(group_id: str) -> Conversation:
    turns: dict[str, int] = {}
    msgs = []
    for mid, session, speaker, text, ts in FAMILY:
        turn = turns.get(session, 0)
        turns[session] = turn + 1
        msgs.append(
            MessageRecord(
                id=mid, group_id=group_id, session=session, session_index=int(session[1:]),
                turn=turn, speaker=speaker, text=text, ts=ts, source_ref=mid,
            )
        )
    return Conversation(group_id=group_id, name="family trip", messages=msgs, source="test")


def rec(id: str, owner: str, content: str, from_ids: list[str], *, source: str | None = None,
        layer: str | None = None, utype: str = "fact", supersedes: str | None = None) -> dict[str, Any]:
    """One record spec (layer defaults by owner: GROUP -> group_interaction, else core)."""
    return {
        "id": id, "owner": owner, "source": source or owner, "content": content,
        "from_ids": from_ids, "utype": utype, "supersedes": supersedes,
        "layer": layer or ("group_interaction" if owner == memory.GROUP else "per_speaker_core"),
    }


class MemoryWriter:
    """Writes record specs segment by segment through :func:`graphmem.derived.memory.write_segment`."""

    def __init__(self, store, embedder: Embedder, group_id: str) -> None:
        self.store, self.embedder, self.group_id = store, embedder, group_id
        self.index = 0

    def segment(self, cover: list[str], *specs: dict[str, Any]) -> memory.SegmentWriteResult:
        self.index += 1
        vectors = self.embedder.encode([s["content"] for s in specs]) if specs else []
        records = [
            memory.NewRecord(
                id=s["id"], layer=s["layer"], utype=s["utype"], content=s["content"],
                owner=s["owner"], source=s["source"], ts=max(TS[m] for m in s["from_ids"]),
                session="", turn_created=0, from_ids=s["from_ids"],
                embedding=vectors[i].tolist(), supersedes=s["supersedes"],
            )
            for i, s in enumerate(specs)
        ]
        marker = memory.SegmentMarker(id=f"seg-{self.index:04d}", index=self.index, message_ids=cover)
        return memory.write_segment(self.store, self.group_id, marker, records)


def build_family(store, embedder: Embedder, group_id: str, *, derived: bool = True) -> None:
    """Ingest the family chat and (by default) write its derived memory in three segments."""
    ingest_conversations(store, [family_conversation(group_id)], embedder)
    if not derived:
        return
    w = MemoryWriter(store, embedder, group_id)
    G = memory.GROUP
    w.segment(
        ["m00", "m01", "m02", "m03", "m04", "m05"],
        rec("r-mom-knee", "Mom", "Mom's knee hurts, so she needs an easy walk", ["m00"]),
        rec("r-ben-ridge", "Ben", "Ben prefers the ridge trail for its views", ["m01", "m06"], utype="stance"),
        rec("r-cara-easy", "Cara", "Cara supports the easy lake trail for Mom's sake", ["m02"], utype="stance"),
        rec("a1", "Mom", "Mom wants a big party with all the cousins for the anniversary", ["m05"], utype="stance"),
        rec("r-eli-jacket", "Eli", "Eli misplaced his blue jacket", ["m04"]),
    )
    w.segment(
        ["m06", "m07", "m08", "m09", "m10", "m11"],
        rec("a2", "Mom", "Mom prefers a small dinner for the anniversary", ["m09"], utype="stance", supersedes="a1"),
        rec("r-cara-sandwich", "Cara", "Cara offered to bring sandwiches for lunch", ["m08"]),
        rec("r-ben-late", "Ben", "Ben is always late", ["m11"], source="Cara",
            layer="per_speaker_profile", utype="observation"),
        rec("r-group-trail", G, "The group decided to take the easy lake trail", ["m07", "m12"],
            source="Dad", utype="decision"),
    )
    w.segment(
        ["m12", "m13", "m14", "m15"],
        rec("a3", "Mom", "Mom wants a picnic in the park for the anniversary", ["m13"], utype="stance", supersedes="a2"),
        rec("r-dad-grill", "Dad", "Dad offered to grill burgers for everyone", ["m15"]),
    )


def script(server, **stages: Any) -> None:
    """Route each pipeline stage of the scripted server by its prompt marker.

    ``stages``: project, select, sufficiency, answer -> a Reply, string or callable. Stages not
    given get harmless defaults (select: fused order; sufficiency: enough; answer: "ok").
    """
    from tests.scripted_llm import Reply

    defaults = {
        "project": None,
        "select": Reply.json({"ranked": [], "expand": []}),
        "sufficiency": Reply.json({"enough": True, "ask": ""}),
        "answer": Reply.text("ok"),
    }
    defaults.update(stages)
    for stage, reply in defaults.items():
        if reply is not None:
            server.route(server.system_contains(MARKERS[stage]), reply)


def stage_requests(server, stage: str) -> list[dict[str, Any]]:
    """Chat requests the scripted server received for one stage (by prompt marker)."""
    marker = MARKERS[stage]
    return [
        b for b in server.chat_requests
        if any(m.get("role") == "system" and marker in (m.get("content") or "") for m in b["messages"])
    ]
