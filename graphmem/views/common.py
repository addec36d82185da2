"""What every view reads about one group, read once, and the shared filters and colours.

Read: the group and its roster, the group's messages (``writer/list_messages``), every
person-to-person REPLY_TO / NEXT link (``browser/talk_links``, the Browser guide's query) and
the derived records through :mod:`graphmem.derived.memory`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from graphmem.derived import memory
from graphmem.store.db import Store
from graphmem.core.errors import InvalidInputError
from graphmem.groups.service import get_group
from graphmem.verbatim.roster import read_roster
from graphmem.core.times import to_instant

Mode = Literal["head", "full"]


#: Layer code name -> colour (the page, the timeline and docs/graphmem.grass use the same).
LAYER_COLOURS: dict[str, str] = {
    "per_speaker_core": "#4E79A7",
    "per_speaker_profile": "#B07AA1",
    "group_interaction": "#F28E2B",
    "group_insight": "#59A14F",
}


PERSON_COLOUR = "#76B7B2"


GROUP_COLOUR = "#3B3B3B"


class SessionInfo(BaseModel):
    """One session of the group (from its messages).

    Attributes: id, channel, messages (count), ts_first / ts_last (ISO-8601), first_position /
    last_position (0-based positions of its first/last message in the group's conversation
    order).
    """

    id: str
    channel: str = ""
    messages: int = 0
    ts_first: str = ""
    ts_last: str = ""
    first_position: int = 0
    last_position: int = 0


def parse_layers(values: Iterable[str] | None) -> list[str] | None:
    """Layer filter values -> layer code names.

    Accepts code names (``per_speaker_core``), graph labels (``Core``, any case) and
    comma-separated lists of them; duplicates are dropped, the paper's order is kept.

    Returns:
        Code names, or None when nothing was given.

    Raises:
        InvalidInputError: an unknown layer (field ``layer``).
    """
    if values is None:
        return None
    by_name = {code.casefold(): code for code in memory.LAYERS}
    by_name.update({label.casefold(): code for code, label in memory.LAYER_LABELS.items()})
    wanted: set[str] = set()
    for value in values:
        for part in str(value).split(","):
            part = part.strip()
            if not part:
                continue
            code = by_name.get(part.casefold())
            if code is None:
                raise InvalidInputError(
                    f"unknown layer; one of {', '.join(memory.LAYERS)} "
                    f"(or {', '.join(memory.LAYER_LABELS.values())})",
                    field="layer", value=part,
                )
            wanted.add(code)
    return [code for code in memory.LAYERS if code in wanted] or None


def _instant(value: str | None, field: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return to_instant(value)
    except InvalidInputError as e:
        raise InvalidInputError("unparsable time (ISO-8601 expected)", field=field, value=value) from e


class GroupData:
    """Everything the views read about one group, read once (roster, messages, talk links, records)."""

    def __init__(self, store: Store, group_id: str, *, heads_only: bool, layers: Sequence[str] | None) -> None:
        group = get_group(store, group_id)  # NotFoundError for an unknown group
        self.group_id = group_id
        self.name = group.name
        self.roster = read_roster(store, group_id)
        # what a person is shown as: the roster label ("Name (id)" where two share a display form)
        self.names = {m.id: m.label or m.name for m in self.roster}
        self.names[memory.GROUP] = group.name
        self.messages = store.read("writer/list_messages", group_id=group_id, pending_only=False)
        self.position = {m["id"]: i for i, m in enumerate(self.messages)}
        self.session_of = {m["id"]: m["session"] for m in self.messages}
        self.links = store.read("browser/talk_links", group_id=group_id)
        self.records = memory.list_records(store, group_id, layers=layers, heads_only=heads_only)

    def sessions(self) -> list[SessionInfo]:
        out: dict[str, SessionInfo] = {}
        for i, m in enumerate(self.messages):
            s = out.get(m["session"])
            if s is None:
                out[m["session"]] = SessionInfo(
                    id=m["session"], channel=m.get("channel") or "", messages=1,
                    ts_first=m["ts"], ts_last=m["ts"], first_position=i, last_position=i,
                )
            else:
                s.messages += 1
                s.ts_last, s.last_position = m["ts"], i
        return list(out.values())

    def record_position(self, r: memory.DerivedRecord) -> int:
        known = [self.position[m] for m in r.from_ids if m in self.position]
        return max(known) if known else 0


def _when(ts: str | None) -> float | None:
    """Epoch seconds of a stored time, or None when it is missing or unreadable."""
    try:
        return to_instant(ts) if ts else None
    except InvalidInputError:
        return None


def _message_instant(row: dict[str, Any]) -> float | None:
    value = row.get("instant")
    return float(value) if value is not None else _when(row.get("ts"))
