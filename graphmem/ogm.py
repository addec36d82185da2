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
        """Every message of the group in conversation order (session index, turn)."""
        return list(Message.nodes.filter(group_id=self.uid).order_by("session", "turn"))

    def records(self, *, head_only: bool = True) -> list[Derived]:
        """Derived records of the group (current heads only by default)."""
        found = Derived.nodes.filter(group_id=self.uid)
        if head_only:
            found = found.filter(state="head")
        return list(found)

    def __repr__(self) -> str:
        return f"Group({self.uid!r})"


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

    def records(self, *, head_only: bool = True) -> list[Derived]:
        """Records about this person (OWNER), current heads only by default."""
        found = _manager(self.owned_records).all()
        return [r for r in found if r.state == "head"] if head_only else found

    def __repr__(self) -> str:
        return f"Person({self.group_id!r}, {self.uid!r})"


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
    supporting_messages = RelationshipTo(f"{__name__}.Message", "FROM", cardinality=ZeroOrMore)
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
