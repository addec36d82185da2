"""Read models beside ``ask``: the roster, one person's memory, a record's provenance.

Derived records are read through :mod:`graphmem.derived.memory` (heads, chains, as-of, provenance);
the roster comes from :mod:`graphmem.verbatim.roster`. Erasing a person or a group moved to
:mod:`graphmem.groups.service` (``forget_person``, ``forget_group``; re-exported here for one release).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from graphmem.derived import memory
from graphmem.store.db import Store
from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.groups.service import (  # moved; re-exported ("X as X") for one release
    ForgetSummary as ForgetSummary, forget_group as forget_group, forget_person as forget_person,
    get_group as get_group,
)
from graphmem.verbatim.roster import RosterMember as RosterMember, find_member, no_person, read_roster as read_roster
from graphmem.core.results import PersonMemory as PersonMemory, RecordProvenance as RecordProvenance  # moved; re-exported


def get_member(store: Store, group_id: str, person_id: str) -> RosterMember:
    """One roster member, named by its id in any spelling of it
    (:func:`graphmem.verbatim.roster.find_member`: NFC, trimmed, any case).

    Raises:
        NotFoundError: no such group ("no group 'x'", as every group read says), or no such
            person in the group (with a hint for a person whose id or name is close:
            ``no person 'Benn' in group 'g'; did you mean 'ben' (Ben)?``).
        InvalidInputError: the id names several persons spelt alike (stored before the rule)
            and none of them exactly.
    """
    roster = read_roster(store, group_id)
    member = find_member(person_id, roster)
    if member is not None:
        return member
    get_group(store, group_id)  # an unknown group is named as such, not as a missing person
    raise no_person(person_id, group_id, roster)


def person_memory(
    store: Store,
    group_id: str,
    person_id: str,
    *,
    mode: Literal["head", "full"] = "head",
    as_of: str | datetime | None = None,
) -> PersonMemory:
    """Read one person's derived memory: heads, full chains, or the state at a time.

    Args:
        store: open store.
        group_id / person_id: whose memory (the person id in any spelling of it: NFC or NFD,
            any case, surrounding whitespace; :func:`get_member`).
        mode: ``"head"`` or ``"full"``; with ``as_of``, ``"full"`` adds the states before it.
        as_of: ISO-8601 time (naive = UTC), or None for now.

    Raises:
        NotFoundError: no such group, or no such person in the group.
        InvalidInputError: unknown mode or unparsable ``as_of``; a person id naming several
            persons spelt alike.
    """
    if mode not in ("head", "full"):
        raise InvalidInputError("mode must be 'head' or 'full'", field="mode")
    person = get_member(store, group_id, person_id)
    person_id = person.id  # the stored id, whatever spelling of it was asked for
    if as_of is not None and as_of != "":
        text = as_of.isoformat() if isinstance(as_of, datetime) else str(as_of)
        try:
            states = memory.state_as_of(store, group_id, text)
        except InvalidInputError as e:
            raise InvalidInputError("unparsable as-of time (use ISO-8601)", field="as_of", value=text) from e
        mine = [r for r in states if r.owner_kind == "person" and r.owner == person_id]
        chains = [[r] for r in mine]
        if mode == "full" and mine:
            full = memory.record_chains(store, group_id, [r.id for r in mine])
            chains = []
            for r in mine:
                chain = full.get(r.id, [r])
                cut = next((i for i, v in enumerate(chain) if v.id == r.id), len(chain) - 1)
                chains.append(chain[: cut + 1])
        others = [r for r in states if r.source_kind == "person" and r.source == person_id
                  and not (r.owner_kind == "person" and r.owner == person_id)]
        return PersonMemory(group_id=group_id, person=person, mode="as_of", as_of=text,
                            chains=chains, said_about_others=others)
    heads = memory.current_heads(store, group_id, owners=[person_id])
    if mode == "full" and heads:
        full = memory.record_chains(store, group_id, [h.id for h in heads])
        chains = [full.get(h.id, [h]) for h in heads]
    else:
        chains = [[h] for h in heads]
    others = [
        r for r in memory.current_heads(store, group_id)
        if r.source_kind == "person" and r.source == person_id
        and not (r.owner_kind == "person" and r.owner == person_id)
    ]
    return PersonMemory(group_id=group_id, person=person, mode=mode, chains=chains, said_about_others=others)


def provenance(store: Store, group_id: str, record_id: str) -> RecordProvenance:
    """A record's FROM messages and chain.

    Raises:
        NotFoundError: no such group ("no group 'x'"), or no such record in the group.
    """
    try:
        record = memory.get_record(store, group_id, record_id)
    except NotFoundError:
        get_group(store, group_id)  # an unknown group is named as such
        raise
    return RecordProvenance(
        record=record,
        messages=memory.record_provenance(store, group_id, record_id),
        chain=memory.record_chain(store, group_id, record_id),
    )
