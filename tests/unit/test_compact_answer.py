"""The compact answer form (:meth:`graphmem.query.AskResult.compact`): each cited message and
derived record once, the evidence only without an answer, nothing of the pipeline's internals."""

from __future__ import annotations

from graphmem.query import AskResult, Budgets, Cell, Excerpt, Projection, RecordVersion, Row

BUDGETS = Budgets(recall_n=40, top_k=10, expand_anchors=2, expand_window=1, ask_enabled=False, ask_pool_n=20,
                  s2_k=2, source_k=1, fallback_k=2, min_cosine=0.0)


def result(answer: str | None) -> AskResult:
    m1 = Excerpt(id="m1", speaker="Ben", text="I prefer the ridge.", ts="2026-03-05T18:06:00+01:00", turn=1)
    m2 = Excerpt(id="m2", speaker="Mom", text="My knee hurts.", ts="2026-03-05T18:07:00+01:00", turn=2)
    old = RecordVersion(id="r1", content="prefers the ridge", layer="per_speaker_core", state="superseded",
                        source_id="Ben", from_ids=["m1"])
    new = RecordVersion(id="r2", content="accepts the lake loop", layer="per_speaker_core", state="head",
                        source_id="Ben", from_ids=["m1", "m3"])
    rows = [Row(kind="person", id="Ben", name="Ben", status="records",
                cells=[Cell(head_id="r2", owner_kind="person", owner_id="Ben", current=new, history=[old])]),
            Row(kind="person", id="Mom", name="Mom", status="raw", raw=[m2, m1]),  # m1 again: listed once
            Row(kind="group", id="GROUP", name="GROUP", status="records",
                cells=[Cell(head_id="r2", owner_kind="person", owner_id="Ben", current=new, via="source")])]
    return AskResult(group_id="g", question="Which trail?", answer=answer, projection=Projection(issue="trail", rows=["Ben"], tense="head"), excerpts=[m1],
                     rows=rows, evidence="(Ben @ 2026-03-05T18:06:00+01:00, msg m1) I prefer the ridge. ...",
                     message_ids=["m1", "m2", "m3"], record_ids=["r1", "r2"], budgets=BUDGETS,
                     timings_s={"answer": 1.0},
                     evidence_tokens={"verbatim": 20, "structured": 12, "question": 4, "total": 36})


def test_each_message_and_record_once_with_text_when_answered():
    c = result("The lake loop.").compact()
    assert c.answer == "The lake loop." and c.evidence == ""
    assert [(m.id, m.speaker, m.text) for m in c.messages] == [("m1", "Ben", "I prefer the ridge."),
                                                                ("m2", "Mom", "My knee hurts.")]
    assert [(r.id, r.layer, r.owner, r.source, r.status) for r in c.records] == [
        ("r1", "per_speaker_core", "Ben", "Ben", "superseded"), ("r2", "per_speaker_core", "Ben", "Ben", "head")]
    dumped = c.model_dump()
    assert dumped["evidence_tokens"] == {"verbatim": 20, "structured": 12, "question": 4, "total": 36}
    assert not {"budgets", "timings_s", "pool_ids", "excerpts", "rows", "projection", "usage"} & set(dumped)


def test_offline_the_evidence_carries_the_texts_once():
    r = result(None)
    c = r.compact()
    assert c.answer is None and c.evidence == r.evidence
    assert [m.id for m in c.messages] == ["m1", "m2"] and all(m.text is None for m in c.messages)
    assert len(c.model_dump_json()) < len(r.model_dump_json()) / 2


def test_a_long_cited_message_is_cut_with_its_length():
    r = result("The lake loop.")
    r.excerpts[0] = r.excerpts[0].model_copy(update={"text": "log line\n" * 1000})  # 9,000 characters
    m1 = r.compact().messages[0]
    assert (m1.id, len(m1.text or ""), m1.text_truncated, m1.text_chars) == ("m1", 2000, True, 9000)
    assert r.compact().messages[1].text_truncated is False
