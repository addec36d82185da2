"""Writer input: the pending messages of a group, its roster, and their cut into segments.

Source: SpeakerMem-R1 §3.1 (segments), App. E eq. 20 (action budget).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


from graphmem.core.config import Settings
from graphmem.store.db import Store
from graphmem.core.errors import InvalidInputError, NotFoundError, group_erasing
from graphmem.core.model import StoredMessage
from graphmem.verbatim.roster import Roster


class SegmentMessage(StoredMessage):
    """One stored message as the Writer sees it (read from System 1): a :class:`StoredMessage`.

    Attributes: id, channel, session, turn (0-based in its session), ts (ISO-8601),
    turn_created (write order in the group), text, speaker (display name), person_id;
    kind ("" a person's words, "bot", "system") and no_text (no visible character: an
    attachment-only or blank message), docs/import.md; edits (earlier texts kept: the version of
    the text the Writer reads, compared again when its segment is written).
    """

    kind: str = ""
    no_text: bool = False
    edits: int = 0

    @property
    def evidence(self) -> bool:
        """Whether the Writer may read this message as a person's statement: a person's own
        message ("" kind) with a visible character. Bot posts, system lines and text-less
        messages are covered by the segment but never shown nor accepted in a record's FROM."""
        return not self.kind and not self.no_text and bool(self.text.strip())


@dataclass(frozen=True)
class WriterSegment:
    """One Writer input unit: consecutive messages of one session.

    Attributes:
        session / channel: where the messages come from.
        part / parts: 1-based window number within the session's pending messages, and how
            many windows that session has (1 / 1 in session mode).
        messages: the messages in conversation order (at least one).
    """

    session: str
    channel: str
    part: int
    parts: int
    messages: tuple[SegmentMessage, ...]

    @property
    def message_ids(self) -> list[str]:
        return [m.id for m in self.messages]

    @property
    def evidence(self) -> tuple[SegmentMessage, ...]:
        """The messages the Writer reads and may cite (:attr:`SegmentMessage.evidence`), in order."""
        return tuple(m for m in self.messages if m.evidence)

    @property
    def blank(self) -> bool:
        """True when no message is evidence (all blank, text-less, bot or system): the Writer
        has nothing to read."""
        return not self.evidence


def plan_segments(
    messages: Sequence[SegmentMessage], mode: str = "session", window: int = 25
) -> list[WriterSegment]:
    """Cut messages into Writer segments.

    Sessions are taken in order of their first message (``turn_created``), messages inside a
    session in ``turn_created`` order. ``"session"`` makes one segment per session;
    ``"window"`` cuts each session into consecutive windows of ``window`` messages (the last
    may be shorter). Applied to the not-yet-derived messages only, so a resumed run plans the
    same remaining segments.

    Raises:
        InvalidInputError: unknown mode or window < 1.
    """
    if mode not in ("session", "window"):
        raise InvalidInputError(f"writer segment mode must be 'session' or 'window', not {mode!r}",
                                field="writer_segment")
    if window < 1:
        raise InvalidInputError(f"writer window must be >= 1, got {window}", field="writer_window")
    by_session: dict[str, list[SegmentMessage]] = {}
    for m in sorted(messages, key=lambda m: m.turn_created):
        by_session.setdefault(m.session, []).append(m)
    segments: list[WriterSegment] = []
    for session, msgs in by_session.items():  # dict keeps first-message order
        size = len(msgs) if mode == "session" else window
        chunks = [msgs[i : i + size] for i in range(0, len(msgs), size)]
        for part, chunk in enumerate(chunks, start=1):
            segments.append(WriterSegment(session, chunk[0].channel, part, len(chunks), tuple(chunk)))
    return segments


def max_actions_for(n_messages: int, settings: Settings) -> int:
    """Writer action budget ``max(8, 2 x |segment|)``.

    Source: SpeakerMem-R1 App. E, eq. 20.
    """
    s = settings
    return max(s.writer_min_actions, s.writer_actions_per_message * n_messages)


def load_roster(store: Store, group_id: str) -> tuple[str, Roster, int]:
    """Read the group's name, roster and number of written Writer segments.

    Raises:
        NotFoundError: the group does not exist.
        ConflictError: the group is being erased.
    """
    name, roster, segments, _erasures = load_group(store, group_id)
    return name, roster, segments


def load_group(store: Store, group_id: str) -> tuple[str, Roster, int, int]:
    """:func:`load_roster` and the group's erasure count (``memory/lock_segment`` compares it:
    a segment whose input was read before an erasure is not written).

    Raises:
        NotFoundError: the group does not exist.
        ConflictError: the group is being erased (``groups/fence_group``).
    """
    rows = store.read("writer/get_roster", group_id=group_id)
    if not rows:
        raise NotFoundError(f"group {group_id!r} does not exist (ingest its messages first)")
    row = rows[0]
    if row["erasing"]:
        raise group_erasing(group_id)
    return str(row["name"] or group_id), Roster(row["persons"]), int(row["segments"] or 0), int(row["erasures"])


def load_messages(store: Store, group_id: str, *, pending_only: bool = True) -> list[SegmentMessage]:
    """The group's messages in conversation order (only those no segment covers yet, by default)."""
    rows = store.read("writer/list_messages", group_id=group_id, pending_only=pending_only)
    return [SegmentMessage(**{k: v for k, v in r.items() if k != "instant"}) for r in rows]
