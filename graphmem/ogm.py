"""A typed, read-only object model of the memory graph on neomodel (optional extra ``ogm``).

For analysts in notebooks who would rather walk objects than write Cypher::

    from graphmem.core.config import get_settings
    from graphmem.store.db import open_driver
    from graphmem import ogm

    ogm.connect(open_driver(get_settings()))
    trip = ogm.group("trail-trip")
    for person in trip.persons():
        print(person.name, len(person.messages))
    rec = ogm.Derived.nodes.filter(group_id="trail-trip", state="head")[0]
    print(rec.content, rec.owner(), rec.source(), [m.text for m in rec.supporting_messages])
    print([v.content for v in rec.history()])   # the SUPERSEDED_BY chain, oldest first
    print(trip, trip.records()[0])               # readable one-liners: Group 'trail-trip' ...

``records()`` (on :class:`Group` and :class:`Person`) returns the current **heads only** unless
asked ``records(history=True)``, which adds every superseded state. ``supporting_messages`` and
``Group.messages()`` come in conversation order (``turn_created``, the message's place in the
group's stream by time, then id).

Classes mirror the graph model of the design (labels, relationship types and property names
are the same): :class:`Group`, :class:`Person`, :class:`Session`, :class:`Message`, and
:class:`Derived` with its layers :class:`Core`, :class:`Profile`, :class:`Interaction`,
:class:`Insight` (a node labelled ``Derived:Core`` comes back as a :class:`Core`).
A node's ``id`` property is the attribute ``uid`` (neomodel reserves ``id``); filters use it
too: ``ogm.Person.nodes.filter(group_id=g, uid="ben")``. Traversals: ``OWNER``, ``SOURCE``, ``FROM``, ``SUPERSEDED_BY``, ``MEMBER_OF``, ``IN_SESSION``,
``IN_GROUP``, ``NEXT``, ``REPLY_TO``.

What neomodel is used for here, and why only that:

- **Reading and navigating** (``.nodes.filter``, relationship managers): the typed objects and
  lazy traversals are what neomodel does well, and they cost one small query per hop, which
  is fine interactively.
- **Not the schema.** graphmem's constraints and indexes are declared in ``cypher/schema/``
  and applied by ``graphmem schema apply``; these classes declare no ``unique_index`` and
  nothing here calls ``install_labels``. Ids are unique per group, a composite key
  (``(group_id, id)``) that neomodel 7 cannot declare on a model anyway.
- **Not writes.** Every write goes through graphmem's validated, idempotent, batched paths
  (``UNWIND`` per batch, embeddings computed before the transaction, Writer validation);
  :meth:`save`, :meth:`delete` and relationship ``connect``/``disconnect`` raise here.
  neomodel's per-object ``save`` is one round trip per node, far slower than a batch.
- **Not search.** neomodel 7 can query fulltext and vector indexes, but it writes the query
  text and the vector into the Cypher string instead of passing parameters, and expects its
  own index names; graphmem's System 1 and System 2 retrieval (``graphmem.recall.search``,
  ``graphmem.query``) stay the way to search.

Requires ``pip install 'graphmem[ogm]'`` (neomodel 7, which pins the neo4j driver to 6.1.x).
"""

from __future__ import annotations

from typing import Any, cast

from neo4j import Driver
from neomodel import (
    ArrayProperty,
    FloatProperty,
    IntegerProperty,
    RelationshipDefinition,
    RelationshipFrom,
    RelationshipManager,
    RelationshipTo,
    StringProperty,
    StructuredNode,
    ZeroOrMore,
    db,
)

from graphmem.core.errors import InvalidInputError, no_group

__all__ = [
    "Core", "Derived", "Group", "Insight", "Interaction", "Message", "Person", "Profile", "Session",
    "connect", "group",
]


def connect(driver: Driver, database: str | None = None) -> None:
    """Point neomodel at an open driver (the caller owns and closes it).

    Args:
        driver: an open driver (:func:`graphmem.store.db.open_driver`).
        database: database name (default: the driver's default database).
    """
    db.set_connection(driver=driver)
    if database:
        db._database_name = database  # noqa: SLF001 - neomodel's own setter for the target database


def _manager(definition: RelationshipDefinition) -> RelationshipManager:
    """A relationship attribute read on an instance, typed as what it is there.

    neomodel declares relationships as class-level definitions (``RelationshipTo``/``From``);
    ``StructuredNode.__init__`` replaces each with its manager (``build_manager``) on the
    instance, so ``self.members`` is a :class:`RelationshipManager` at run time while a type
    checker only sees the class attribute. Returns ``definition`` itself (a cast).
    """
    return cast(RelationshipManager, definition)


def _short(text: str | None, limit: int = 80) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= limit else one[: limit - 3] + "..."


def _heads(found: list[Derived], history: bool, head_only: bool | None) -> list[Derived]:
    keep_history = history if head_only is None else not head_only
    return found if keep_history else [r for r in found if r.state == "head"]


class _InConversationOrder(ZeroOrMore):
    """A relationship to messages that iterates them in conversation order (``turn_created``,
    then id), as ``graphmem`` reads provenance; ``filter``/``order_by`` still work as usual."""

    def all(self) -> list[Any]:
        return sorted(super().all(), key=lambda m: (m.turn_created if m.turn_created is not None else -1, m.uid))

    def __iter__(self) -> Any:
        return iter(self.all())

    def __getitem__(self, key: int | slice) -> Any:
        return self.all()[key]


class _ReadOnly(StructuredNode):
    """Base of every model here: reading only (writes belong to graphmem's validated paths)."""

    __abstract_node__ = True

    def save(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidInputError("graphmem.ogm is read-only: write through graphmem (ingest, derive, "
                                "the API)", record=type(self).__name__)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise InvalidInputError("graphmem.ogm is read-only: erase with graphmem.query.forget_person "
                                "or the API", record=type(self).__name__)

    def refresh(self) -> None:  # noqa: D102 - neomodel's refresh, allowed (it only reads)
        super().refresh()


class Group(_ReadOnly):
    """``(:Group {id, name})``: one memory space."""

    uid = StringProperty(required=True, db_property="id")
    name = StringProperty()
    members = RelationshipFrom(f"{__name__}.Person", "MEMBER_OF", cardinality=ZeroOrMore)
    sessions = RelationshipFrom(f"{__name__}.Session", "IN_GROUP", cardinality=ZeroOrMore)
    owned_records = RelationshipFrom(f"{__name__}.Derived", "OWNER", cardinality=ZeroOrMore)
    sourced_records = RelationshipFrom(f"{__name__}.Derived", "SOURCE", cardinality=ZeroOrMore)

    def persons(self) -> list[Person]:
        """The roster, ordered by name."""
        return sorted(_manager(self.members).all(), key=lambda p: p.name or p.uid)

    def messages(self) -> list[Message]:
        """Every message of the group in conversation order (``turn_created``, then id)."""
        found = list(Message.nodes.filter(group_id=self.uid))
        return sorted(found, key=lambda m: (m.turn_created if m.turn_created is not None else -1, m.uid))

    def records(self, *, history: bool = False, head_only: bool | None = None) -> list[Derived]:
        """Derived records of the group (every owner), ordered by ``turn_created`` then id.

        Args:
            history: False (default) = current heads only; True = every state, superseded
                ones included (walk one chain with :meth:`Derived.history`).
            head_only: the older spelling (``head_only=False`` = ``history=True``); wins when given.
        """
        found = list(Derived.nodes.filter(group_id=self.uid))
        return sorted(_heads(found, history, head_only), key=lambda r: (r.turn_created or 0, r.uid))

    def __repr__(self) -> str:
        return f"Group({self.uid!r})"

    def __str__(self) -> str:
        return f"Group {self.uid!r}" + (f" ({self.name})" if self.name and self.name != self.uid else "")


class Person(_ReadOnly):
    """``(:Person {id, group_id, name, speaker_id, aliases})``: one roster member of one group."""

    uid = StringProperty(required=True, db_property="id")
    group_id = StringProperty(required=True)
    name = StringProperty()
    speaker_id = StringProperty()
    aliases = ArrayProperty(StringProperty())
    member_of = RelationshipTo(f"{__name__}.Group", "MEMBER_OF", cardinality=ZeroOrMore)
    messages = RelationshipFrom(f"{__name__}.Message", "SOURCE", cardinality=ZeroOrMore)
    owned_records = RelationshipFrom(f"{__name__}.Derived", "OWNER", cardinality=ZeroOrMore)
    sourced_records = RelationshipFrom(f"{__name__}.Derived", "SOURCE", cardinality=ZeroOrMore)

    def records(self, *, history: bool = False, head_only: bool | None = None) -> list[Derived]:
        """Records about this person (OWNER), ordered by ``turn_created`` then id.

        Args:
            history: False (default) = current heads only; True = every state, superseded
                ones included.
            head_only: the older spelling (``head_only=False`` = ``history=True``); wins when given.
        """
        found = _manager(self.owned_records).all()
        return sorted(_heads(found, history, head_only), key=lambda r: (r.turn_created or 0, r.uid))

    def __repr__(self) -> str:
        return f"Person({self.group_id!r}, {self.uid!r})"

    def __str__(self) -> str:
        shown = self.name or self.uid
        return f"Person {shown}" + (f" (id {self.uid!r})" if shown != self.uid else "") + f" in {self.group_id!r}"


class Session(_ReadOnly):
    """``(:Session {id, group_id, channel, index, ts})``."""

    uid = StringProperty(required=True, db_property="id")
    group_id = StringProperty(required=True)
    channel = StringProperty()
    index = IntegerProperty()
    ts = StringProperty()
    group = RelationshipTo(f"{__name__}.Group", "IN_GROUP", cardinality=ZeroOrMore)
    messages = RelationshipFrom(f"{__name__}.Message", "IN_SESSION", cardinality=ZeroOrMore)

    def __repr__(self) -> str:
        return f"Session({self.group_id!r}, {self.uid!r})"

    def __str__(self) -> str:
        where = f", channel {self.channel!r}" if self.channel else ""
        return f"Session {self.uid!r} #{self.index} of {self.group_id!r}{where}, {self.ts or 'no time'}"


class Message(_ReadOnly):
    """``(:Message {...})``: one verbatim message (text exactly as received)."""

    uid = StringProperty(required=True, db_property="id")
    group_id = StringProperty(required=True)
    channel = StringProperty()
    text = StringProperty()
    speaker = StringProperty()
    session = StringProperty()
    turn = IntegerProperty()
    ts = StringProperty()
    turn_created = IntegerProperty()
    reply_to = StringProperty()
    sender = RelationshipTo(f"{__name__}.Person", "SOURCE", cardinality=ZeroOrMore)
    in_session = RelationshipTo(f"{__name__}.Session", "IN_SESSION", cardinality=ZeroOrMore)
    next_message = RelationshipTo(f"{__name__}.Message", "NEXT", cardinality=ZeroOrMore)
    replies_to = RelationshipTo(f"{__name__}.Message", "REPLY_TO", cardinality=ZeroOrMore)
    records = RelationshipFrom(f"{__name__}.Derived", "FROM", cardinality=ZeroOrMore)

    def person(self) -> Person:
        """Who sent it."""
        # every message has its SOURCE person (ingest writes both in one transaction)
        return cast(Person, _manager(self.sender).single())

    def __repr__(self) -> str:
        return f"Message({self.group_id!r}, {self.uid!r})"

    def __str__(self) -> str:
        """``[ts] speaker: text`` (text on one line, cut at 80 characters)."""
        return f"[{self.ts}] {self.speaker}: {_short(self.text)}"


class Derived(_ReadOnly):
    """``(:Derived {...})``: one state of a System 2 record (see the layer subclasses).

    ``state`` is ``head`` (current) or ``superseded``; ``layer`` one of per_speaker_core,
    per_speaker_profile, group_interaction, group_insight.
    """

    uid = StringProperty(required=True, db_property="id")
    group_id = StringProperty(required=True)
    content = StringProperty()
    layer = StringProperty()
    utype = StringProperty()
    ts = StringProperty()
    session = StringProperty()
    turn_created = IntegerProperty()
    confidence = FloatProperty()
    state = StringProperty()
    owner_person = RelationshipTo(f"{__name__}.Person", "OWNER", cardinality=ZeroOrMore)
    owner_group = RelationshipTo(f"{__name__}.Group", "OWNER", cardinality=ZeroOrMore)
    source_person = RelationshipTo(f"{__name__}.Person", "SOURCE", cardinality=ZeroOrMore)
    source_group = RelationshipTo(f"{__name__}.Group", "SOURCE", cardinality=ZeroOrMore)
    #: FROM messages; iterating (or ``.all()``) gives them in conversation order
    supporting_messages = RelationshipTo(f"{__name__}.Message", "FROM", cardinality=_InConversationOrder)
    superseded_by = RelationshipTo(f"{__name__}.Derived", "SUPERSEDED_BY", cardinality=ZeroOrMore)
    supersedes = RelationshipFrom(f"{__name__}.Derived", "SUPERSEDED_BY", cardinality=ZeroOrMore)

    def owner(self) -> Person | Group:
        """Whom the record is about: a Person (person layers) or the Group (group layers)."""
        # the Writer writes every record with its OWNER (a person or the group)
        return cast("Person | Group", _manager(self.owner_person).single() or _manager(self.owner_group).single())

    def source(self) -> Person | Group:
        """Who said or observed it."""
        # the Writer writes every record with its SOURCE (a person or the group)
        return cast("Person | Group", _manager(self.source_person).single() or _manager(self.source_group).single())

    def history(self) -> list[Derived]:
        """Every state of this record's chain, oldest first (this one included)."""
        chain: list[Derived] = [self]
        # SUPERSEDED_BY links Derived to Derived only, so the other end is a Derived (or none)
        earlier = cast("Derived | None", _manager(self.supersedes).single())
        while earlier is not None:
            chain.insert(0, earlier)
            earlier = cast("Derived | None", _manager(earlier.supersedes).single())
        later = cast("Derived | None", _manager(self.superseded_by).single())
        while later is not None:
            chain.append(later)
            later = cast("Derived | None", _manager(later.superseded_by).single())
        return chain

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.group_id!r}, {self.uid!r}, {self.state!r})"

    def __str__(self) -> str:
        """``Core 'e3.1' (head, fact): content`` (content on one line, cut at 80 characters)."""
        return f"{type(self).__name__} {self.uid!r} ({self.state}, {self.utype}): {_short(self.content)}"


class Core(Derived):
    """``(:Derived:Core)``: per_speaker_core, what a person states about themself."""


class Profile(Derived):
    """``(:Derived:Profile)``: per_speaker_profile, what others say or observe about a person."""


class Interaction(Derived):
    """``(:Derived:Interaction)``: group_interaction, decisions and relations in the group."""


class Insight(Derived):
    """``(:Derived:Insight)``: group_insight, norms and patterns of the group."""


def group(group_id: str) -> Group:
    """The group.

    Raises:
        NotFoundError: no such group.
    """
    found = Group.nodes.get_or_none(uid=group_id)
    if found is None:
        raise no_group(group_id)
    return found
