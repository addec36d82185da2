"""Small builders for test conversations (no database)."""

from __future__ import annotations

from graphmem.core.model import Conversation, MessageRecord


def conversation(group_id: str, rows: list[dict], name: str = "") -> Conversation:
    """Build a Conversation from dicts with keys speaker, text and optional id, session,
    speaker_id, ts, reply_to, channel. Missing ids/turns/timestamps are filled in order."""
    turns: dict[str, int] = {}
    sessions: dict[str, int] = {}
    messages = []
    for i, r in enumerate(rows):
        session = r.get("session", "s1")
        sessions.setdefault(session, len(sessions) + 1)
        turn = turns.get(session, 0)
        turns[session] = turn + 1
        messages.append(
            MessageRecord(
                id=r.get("id", f"m{i:04d}"),
                group_id=group_id,
                channel=r.get("channel", ""),
                session=session,
                session_index=sessions[session],
                turn=turn,
                speaker=r["speaker"],
                speaker_id=r.get("speaker_id", ""),
                text=r["text"],
                ts=r.get("ts", f"2026-01-01T10:{i // 60:02d}:{i % 60:02d}"),
                reply_to=r.get("reply_to", ""),
                source_ref=f"row {i}",
            )
        )
    return Conversation(group_id=group_id, name=name or group_id, messages=messages, source="test")


_RUNTIMES: dict[tuple[int, int], object] = {}


def runtime_of(store, embedder, *, model=None, settings=None):
    """A Runtime over the tests' store and embedder (one per pair, so its group cache lives as
    long as the session's), with ``model`` as its answer model and ``settings`` when given."""
    from graphmem.core.config import get_settings
    from graphmem.runtime import Runtime

    base = _RUNTIMES.get((id(store), id(embedder)))
    if base is None:
        base = _RUNTIMES.setdefault((id(store), id(embedder)),
                                    Runtime(get_settings(), store=store, embedder=embedder))
    rt = base.with_models(answer=model)
    if settings is not None:
        rt.settings = settings
    return rt


def ask_budgets(settings=None, **overrides):
    """The budgets of one ask: ``settings`` (default: the environment's) with ``overrides``."""
    from graphmem.core.config import get_settings
    from graphmem.query import budgets_from

    return budgets_from(settings or get_settings(), **overrides)
