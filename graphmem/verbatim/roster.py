"""The roster: one model of a group's members and one name resolver.

:class:`RosterMember` is a Person as stored (id, display name, aliases, message count);
:class:`Roster` is the lookup every caller shares: the Writer maps owner/source names to
Person ids with it, Project maps row names, the graph view and the API read members with
:func:`read_roster`. A name that fits several persons is reported as ambiguous, never guessed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, Field

from graphmem.store.db import Store
from graphmem.core import paging
from graphmem.core.errors import no_group
from graphmem.core.model import GROUP
from graphmem.core.text import STOP_WORDS, one_line
from graphmem.core.errors import InvalidInputError, NotFoundError
from graphmem.core.limits import confusable_form, did_you_mean, display_form, same_identity, shown_id, visible_id
from graphmem.core.results import RosterMember as RosterMember  # moved to the light result models
from graphmem.core.results import ROSTER_ALIASES_SHOWN, RosterPage

__all__ = ["Roster", "RosterEntry", "RosterMember", "RosterPage", "find_member", "find_persons", "labelled_members",
           "name_pattern", "no_person", "read_roster", "resolve_person", "roster_page"]


@dataclass(frozen=True)
class RosterEntry:
    """One roster member: Person id, display name, aliases and the label the Writer sees."""

    id: str
    name: str
    aliases: tuple[str, ...]
    label: str


class Roster:
    """A group's roster: the labels the models see, and the one mapping of names to Person ids.

    Built from :class:`RosterMember` objects or from mappings with ``id``, ``name`` and
    ``aliases``. Used by the Writer (owner/source names) and by Project (row names).

    Labels are display names on one line (:func:`graphmem.core.text.one_line`); a display name
    that looks like another's
    (:func:`graphmem.core.limits.confusable_form`: NFC, invisible characters dropped,
    case-folded, lookalike characters as the Latin ones they look like) or like ``GROUP`` is shown
    as ``"Name (id)"``, the id's invisible and lookalike characters written as ``\\uXXXX`` (so
    ``Dad``, ``Dad\u200b`` and ``D\u0430d`` are told apart); so is a name that reads as another
    member's label (``"Ana (U1)"`` beside Ana whose id is U1), so no label names two persons.
    :meth:`resolve` accepts a label, a Person id, a display name or an alias (compared in
    display form) when it names exactly one person, and ``GROUP`` (any case) for the group.
    """

    def __init__(self, persons: Sequence[Mapping[str, Any] | RosterMember]) -> None:
        rows: list[Mapping[str, Any]] = [p.model_dump() if isinstance(p, BaseModel) else p for p in persons]
        names: dict[str, int] = {}
        for p in rows:
            for key in _clash_keys(str(p.get("name") or p["id"])):
                names[key] = names.get(key, 0) + 1
        entries = []
        for p in rows:
            name = str(p.get("name") or p["id"])
            shown = one_line(name) or name
            clash = any(names[k] > 1 or k == GROUP.casefold() for k in _clash_keys(name))
            label = f"{shown} ({shown_id(str(p['id']))})" if clash else shown
            aliases = tuple(str(a) for a in (p.get("aliases") or []) if a)
            entries.append(RosterEntry(str(p["id"]), name, aliases, label))
        # A label names one member: a display name written as another member's label ("Ana (U1)"
        # beside the Ana whose id is U1), or two names that are one line apart, show their ids too.
        labels: dict[str, int] = {}
        for e in entries:
            labels[confusable_form(e.label)] = labels.get(confusable_form(e.label), 0) + 1
        entries = [replace(e, label=f"{e.label} ({shown_id(e.id)})")
                   if labels[confusable_form(e.label)] > 1 and e.label == (one_line(e.name) or e.name) else e
                   for e in entries]
        self.entries: tuple[RosterEntry, ...] = tuple(entries)
        self._by_id = {e.id: e for e in self.entries}
        self._by_label: dict[str, set[str]] = {}
        for e in self.entries:
            self._by_label.setdefault(e.label.casefold(), set()).add(e.id)
        loose: dict[str, set[str]] = {}
        for e in self.entries:
            for n in {e.name, e.id, *e.aliases}:
                loose.setdefault(display_form(n), set()).add(e.id)
        self._loose = loose

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, person_id: object) -> bool:
        return person_id in self._by_id

    def label(self, person_id: str) -> str:
        """The Writer-facing label of a Person id (``GROUP`` for the group)."""
        if person_id == GROUP:
            return GROUP
        entry = self._by_id.get(person_id)
        return entry.label if entry else person_id

    def entry(self, person_id: str) -> RosterEntry | None:
        return self._by_id.get(person_id)

    def resolve(self, name: Any) -> tuple[str | None, str]:
        """Map a name from the Writer to a Person id or :data:`GROUP`.

        Returns:
            ``(person_id_or_GROUP, "")`` on success, ``(None, why)`` when the name is not in the
            roster or names several persons.
        """
        if not isinstance(name, str) or not name.strip():
            return None, "empty name"
        s = " ".join(name.split())
        folded = s.casefold()
        labelled = self._by_label.get(folded, set())
        if len(labelled) == 1:
            return next(iter(labelled)), ""
        if len(labelled) > 1:  # a label no rule above could make unique: never guessed
            return None, f"{s!r} is ambiguous ({', '.join(sorted(labelled))})"
        if s in self._by_id:
            return s, ""
        if folded == GROUP.casefold():
            return GROUP, ""
        ids = set(self._loose.get(display_form(s), set()))
        match = re.fullmatch(r"(.+?)\s*\((.+)\)", s)  # "Name (id)" with other spacing/case
        if match and match.group(2).strip() in self._by_id:
            ids.add(match.group(2).strip())  # a display name written "Ana (U1)" is not U1's: ambiguous
        if len(ids) == 1:
            return next(iter(ids)), ""
        if len(ids) > 1:
            labels = ", ".join(sorted(self.label(i) for i in ids))
            return None, f"{s!r} is ambiguous ({labels})"
        return None, f"{s!r} is not in the roster"


def _clash_keys(name: str) -> set[str]:
    """The forms in which a display name may be taken for another's: its confusable form, and
    that form up to its first opening bracket of any script (``"Ana (U1)"``, ``"Ana (U1)\u200b"``,
    ``"Ana（U1）"`` and ``"Ana ((U1))"`` read as the label of an Ana whose id is U1), so such a name and the
    name it imitates both show their ids."""
    form = confusable_form(name)
    opening = next((i for i, ch in enumerate(form) if unicodedata.category(ch) == "Ps"), len(form))  # ( （ [ ...
    bare = form[:opening].strip()
    return {form, *([bare] if bare and bare != form else [])}


def read_roster(store: Store, group_id: str, *, counts: bool = True) -> list[RosterMember]:
    """Every Person of the group, ordered by name (empty for an unknown group).

    ``counts=False`` leaves ``messages`` at 0 and reads the persons only: counting reads every
    message of the group (300k database hits for a 100k-message group), which ``ask`` does
    not need.
    """
    name = "query/list_roster" if counts else "query/list_members"
    return labelled_members(store.read(name, group_id=group_id))


def roster_page(store: Store, group_id: str, *, limit: int = paging.DEFAULT_LIMIT, cursor: str | None = None,
                max_bytes: int | None = None) -> RosterPage:
    """One page of the group's roster, ordered by person id (:mod:`graphmem.core.paging`).

    The order is the person id's: it never changes, while a display name may (a new message
    under the same ``speaker_id``), so members written between two pages take their own place
    and a walk over the pages meets every member once. Labels are those of the whole roster
    (:func:`labelled_members`); message counts are read for the page's members only.

    Args:
        limit: members on the page, 1 to ``MAX_LIMITS["roster"]`` (1,000).
        cursor: None, or ``next_cursor`` of the previous page.
        max_bytes: bound on the page as compact JSON (MCP); None: no bound.

    Raises:
        NotFoundError: no such group.
        InvalidInputError: ``limit``, ``max_bytes`` out of range or a cursor of another list
            (field named).
    """
    paging.check_limit(limit, maximum=paging.MAX_LIMITS["roster"])
    paging.check_max_bytes(max_bytes)
    scope = paging.list_scope("roster", group_id)
    after = paging.decode_cursor(cursor, kind="roster", scope=scope, size=1, types=(str,))
    members = sorted(labelled_members(store.read("query/list_members", group_id=group_id)), key=lambda m: m.id)
    rest = [m for m in members if after is None or m.id > str(after[0])][: limit + 1]
    rows = store.read("query/member_message_counts", group_id=group_id, ids=[m.id for m in rest[:limit]])
    if not rows:
        raise no_group(group_id)
    counts = {str(pid): int(n) for pid, n in rows[0]["counts"]}
    rest = [m.model_copy(update={"messages": counts.get(m.id, 0), **_latest_aliases(m)}) for m in rest]
    envelope = RosterPage(group_id=group_id, total=len(members), truncated=True)
    page, last = paging.take(rest, limit=limit, key=lambda m: [m.id], budget=paging.budget_of(envelope, max_bytes))
    return RosterPage(group_id=group_id, total=len(members), persons=page, truncated=last is not None,
                      next_cursor=None if last is None else paging.encode_cursor("roster", scope, last))


def _latest_aliases(member: RosterMember) -> dict[str, Any]:
    """The roster page's aliases of ``member``: the latest :data:`ROSTER_ALIASES_SHOWN` and their
    total when there are more (a row stays small whatever the person's history)."""
    if len(member.aliases) <= ROSTER_ALIASES_SHOWN:
        return {}
    return {"aliases": member.aliases[-ROSTER_ALIASES_SHOWN:], "aliases_total": len(member.aliases)}


def labelled_members(rows: Sequence[Mapping[str, Any]]) -> list[RosterMember]:
    """Roster members from their stored rows, each with its display ``label`` (the name, marked
    ``Name (id)`` where two members share one display form): the one place members are built,
    for :func:`read_roster` and for reads that fetch the roster with other data."""
    members = [RosterMember(**r) for r in rows]
    roster = Roster(members)
    return [m.model_copy(update={"label": roster.label(m.id)}) for m in members]


def resolve_person(name: Any, roster: Sequence[RosterMember] | Roster) -> str | None:
    """The Person id a name stands for, or None when it names nobody, several persons or GROUP.

    Same rules as :meth:`Roster.resolve` (label, id, display name or alias, case-insensitive).
    """
    r = roster if isinstance(roster, Roster) else Roster(roster)
    pid, _ = r.resolve(name)
    return None if pid in (None, GROUP) else pid


def find_member(wanted: str, members: Sequence[RosterMember], *, field: str = "person_id") -> RosterMember | None:
    """The member a person id names under the identity rule, or None when it names nobody.

    ``wanted`` names the member whose id is ``wanted`` exactly, else the one member whose id has
    its identity form (:func:`graphmem.core.limits.identity_form`: NFC, trimmed, case-folded;
    invisible characters count), so ``"zoe\u0308 "`` finds ``"Zo\u00eb"``. The one rule of every
    person lookup: person memory, the graph page's person filter, erasure
    (:func:`graphmem.groups.service.forget_person`, which erases every member it names).

    Raises:
        InvalidInputError: ``wanted`` is no member's exact id and names several (persons stored
            under two spellings of one name before the rule), naming them; send one exactly.
    """
    by_id = {m.id: m for m in members}
    same = same_identity(wanted, by_id)
    if not same:
        return None
    if same[0] == wanted or len(same) == 1:
        return by_id[same[0]]
    listed = ", ".join(repr(visible_id(i)) for i in same)
    raise InvalidInputError(f"person id {wanted!r} names {len(same)} persons spelt alike ({listed}); "
                            "send one of these ids exactly", field=field)


def no_person(wanted: str, group_id: str, members: Sequence[RosterMember]) -> NotFoundError:
    """The error for a person id that names no member: ``no person 'Zed' in group 'g'``, with a
    "did you mean" among the members (:func:`graphmem.core.limits.did_you_mean`)."""
    hint = did_you_mean(wanted, [(m.id, m.name) for m in members])
    return NotFoundError(f"no person {wanted!r} in group {group_id!r}{hint}")


def name_pattern(term: str) -> re.Pattern[str] | None:
    """A pattern finding ``term`` (a name, id or alias) as a whole word; None for terms under 2
    characters. Names that are everyday words ("Will", "May") match only with their capital."""
    term = term.strip()
    if len(term) < 2:
        return None
    # Names that are also everyday words ("Will", "May") only count with their capital letter.
    flags = 0 if term.lower() in STOP_WORDS or term.lower() in {"will", "may", "mark", "bill", "rose"} else re.IGNORECASE
    return re.compile(rf"(?<![\w]){re.escape(term)}(?![\w])", flags)


_NAME_EDGES = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)


def find_persons(question: str, roster: Sequence[RosterMember]) -> list[tuple[int, str]]:
    """Persons named in ``question``: ``(first position, person id)`` in order of appearance.

    Question and names are compared in NFC (an NFD "Jose\u0301" finds the roster's "Jos\u00e9");
    positions are those of the NFC question."""
    found: dict[str, int] = {}
    question = unicodedata.normalize("NFC", question)
    for p in roster:
        terms = {unicodedata.normalize("NFC", t) for t in (p.name, p.id, *p.aliases)}
        # a display name decorated with emoji or punctuation ("Игорь 🚀") is also found bare
        terms |= {core for t in terms if len(core := _NAME_EDGES.sub("", t)) >= 2}
        for term in terms:
            pat = name_pattern(term)
            if pat is None:
                continue
            m = pat.search(question)
            if m is not None and m.start() < found.get(p.id, len(question) + 1):
                found[p.id] = m.start()
    return sorted((pos, pid) for pid, pos in found.items())
