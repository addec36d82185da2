"""Shared test data for the Browser-query, graph-view and page tests: the shipped sample chat
(``examples/sample_chat.jsonl``, the family choosing between the lake loop and the ridge trail)
and a hand-written derived memory for it.

Messages are ingested with the real loader and :func:`graphmem.verbatim.ingest.ingest_conversations`;
derived records are created only through :func:`graphmem.derived.memory.write_segment` (one segment
per session), never by ad-hoc Cypher. No tests live here.

The memory has every shape the views must show: own records (source = owner), cross-person
records (Cara about Mom, Ben about Cara, Cara about Ben), GROUP records (an Interaction decision
that is updated once, an Insight norm), and a stance chain of three states (Ben and the ridge).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from graphmem.derived import memory
from graphmem.core.embed import Embedder
from graphmem.verbatim.ingest import ingest_conversations
from loaders import load_conversations

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample_chat.jsonl"
G = memory.GROUP

#: The sample chat's lines (dicts), in file order.
LINES: list[dict[str, Any]] = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
#: Person.id -> display name.
PEOPLE = {"ben": "Ben", "cara": "Cara", "dad": "Dad", "mom": "Mom"}

# (entry id, layer, utype, owner, source, content, from_ids, supersedes)
SEGMENTS: list[tuple[str, list[tuple[str, str, str, str, str, str, list[str], str | None]]]] = [
    ("s1", [
        ("e1.1", "per_speaker_core", "fact", "mom", "mom",
         "Mom's knee hurts after her fall, so no steep climbs for her this spring", ["s1-01"], None),
        ("e1.2", "per_speaker_profile", "observation", "mom", "cara",
         "Mom needs the easy trail", ["s1-02"], None),
        ("e1.3", "per_speaker_core", "stance", "ben", "ben",
         "Ben prefers the ridge trail for its views", ["s1-03"], None),
        ("e1.4", "group_interaction", "decision", G, "dad",
         "The trail choice waits until Dad checks the weather for the first weekend of May", ["s1-04"], None),
        ("e1.5", "per_speaker_profile", "observation", "cara", "ben",
         "Cara plans around everyone else and never says what she wants", ["s1-05"], None),
        ("e1.6", "per_speaker_core", "stance", "cara", "cara",
         "Cara wants a picnic at the lake", ["s1-06"], None),
    ]),
    ("s2", [
        ("e2.1", "per_speaker_core", "stance", "ben", "ben",
         "Ben still prefers the ridge and suggests splitting up for the day", ["s2-02"], "e1.3"),
        ("e2.2", "per_speaker_core", "stance", "mom", "mom",
         "Mom does not want the family to split up on a family trip", ["s2-03"], None),
        ("e2.3", "per_speaker_profile", "fact", "ben", "cara",
         "Ben booked a climbing course in June", ["s2-04"], None),
        ("e2.4", "per_speaker_core", "fact", "ben", "ben",
         "Ben's climbing course is in July, not June", ["s2-05"], None),
        ("e2.5", "group_insight", "fact", G, "dad",
         "Family trip rule: nobody walks alone and the group keeps the slowest pace", ["s2-06"], None),
    ]),
    ("s3", [
        ("e3.1", "group_interaction", "decision", G, "dad",
         "The family takes the lake loop on Saturday and leaves at 9:00 from home", ["s3-01", "s3-05"], "e1.4"),
        ("e3.2", "per_speaker_core", "stance", "ben", "ben",
         "Ben accepts the easy trail but still thinks the ridge is the better hike", ["s3-02"], "e2.1"),
        ("e3.3", "per_speaker_core", "fact", "mom", "mom",
         "Mom's knee is much better; she might try a short climb next month", ["s3-04"], "e1.1"),
        ("e3.4", "per_speaker_core", "fact", "cara", "cara",
         "Cara will stay with Mom at the back and bring the picnic", ["s3-03"], None),
    ]),
]

#: entry id -> spec tuple, for expectations.
RECORDS = {spec[0]: spec for _, specs in SEGMENTS for spec in specs}
SUPERSEDED = {spec[7] for spec in RECORDS.values() if spec[7]}
HEADS = sorted(set(RECORDS) - SUPERSEDED)


def text_of(message_id: str) -> str:
    """The verbatim text of one sample message."""
    return next(line["text"] for line in LINES if line["id"] == message_id)


def expected_talk() -> dict[tuple[str, str], dict[str, int]]:
    """Who talks to whom, computed from the file alone: ``{(from, to): {"replies", "next"}}``.

    A reply counts for its writer towards the replied-to speaker; NEXT follows the file order
    (one channel) and counts for the later speaker towards the earlier one; self links are
    left out.
    """
    speaker = {line["id"]: line["speaker_id"] for line in LINES}
    out: dict[tuple[str, str], dict[str, int]] = {}
    for line in LINES:
        target = line.get("reply_to")
        if target and speaker[target] != line["speaker_id"]:
            out.setdefault((line["speaker_id"], speaker[target]), {"replies": 0, "next": 0})["replies"] += 1
    for before, after in zip(LINES, LINES[1:]):
        if before["speaker_id"] != after["speaker_id"]:
            out.setdefault((after["speaker_id"], before["speaker_id"]), {"replies": 0, "next": 0})["next"] += 1
    return out


def build_trail(store, embedder: Embedder, group_id: str, *, derived: bool = True) -> None:
    """Ingest the sample chat under ``group_id`` and (by default) write its derived memory."""
    conversations = load_conversations(SAMPLE, "jsonl", group=group_id)
    ingest_conversations(store, conversations, embedder)
    if not derived:
        return
    stored = {r["id"]: r for r in store.read("writer/list_messages", group_id=group_id, pending_only=False)}
    for index, (session, specs) in enumerate(SEGMENTS, start=1):
        vectors = embedder.encode([s[5] for s in specs])
        records = []
        for i, (eid, layer, utype, owner, source, content, from_ids, supersedes) in enumerate(specs):
            newest = max((stored[m] for m in from_ids), key=lambda r: r["turn_created"])
            records.append(memory.NewRecord(
                id=eid, layer=layer, utype=utype, content=content, owner=owner, source=source,
                ts=newest["ts"], session=newest["session"], turn_created=newest["turn_created"],
                confidence=0.9, from_ids=from_ids, embedding=vectors[i].tolist(), supersedes=supersedes,
            ))
        cover = [r["id"] for r in stored.values() if r["session"] == session]
        marker = memory.SegmentMarker(
            id=f"seg-{index:04d}", index=index, session=session, message_ids=cover, model="test",
        )
        memory.write_segment(store, group_id, marker, records)
