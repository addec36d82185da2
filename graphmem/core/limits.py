"""Input rules and limits: one id grammar, one set of limits, one normal form for every entry point.

The library enforces these (``graphmem.verbatim.ingest.validate`` for messages, ``graphmem.query.ask``
for questions and budgets), so the CLI, the HTTP API and library callers accept and reject the
same input; the API's request models only repeat the limits so that OpenAPI documents them.
docs/reliability.md ("Input rules and limits") is the user-facing statement.

Id grammar (group, channel, session, message, speaker_id and reply_to ids):

- 1 to :data:`MAX_ID_CHARS` characters, no leading or trailing whitespace;
- no control characters (Unicode Cc: NUL, tab, newline, ...) and no lone UTF-16 surrogates;
- no invisible characters (:func:`invisible_in_id`): format characters (Unicode Cf: zero-width
  space U+200B, joiners, direction marks U+200E/U+202E, BOM, tags), line and paragraph
  separators, spaces other than U+0020 (no-break, thin, ideographic ...), the grapheme joiner,
  the Hangul fillers and the blank braille pattern; a variation selector only right after a
  symbol (an emoji's presentation) and a zero-width joiner only between two symbols (an emoji
  sequence such as a family) are drawn, so ``"dad"`` and ``"dad\u200b"`` can never be two people;
- group ids and channel names also contain no ``/``: a group id is a URL path segment of the
  API, and ``/`` separates the channel from the session name in a session id; for the same
  reason a session name given without a channel contains no ``/`` (``"a/b"`` without a channel
  would be the session ``b`` of channel ``a``).

Normal form:

- timestamps: :mod:`graphmem.core.times` (``Z`` is stored as ``+00:00``);
- session ids are channel-qualified: ``"<channel>/<session>"`` when the message has a channel,
  else the session name (:func:`session_id`).

Text (message text, display names, questions) is stored exactly as received, but a lone UTF-16
surrogate (``"\\ud83d"``, sent by old clients) cannot be stored or embedded as UTF-8: it is
rejected with an error naming record and field, never replaced.
"""

from __future__ import annotations

import os
import re
import functools
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from graphmem.core.errors import InvalidInputError

__all__ = [
    "existing_path",
    "MAX_ID_CHARS",
    "MAX_MESSAGES_PER_REQUEST",
    "MAX_NAME_CHARS",
    "MAX_QUESTION_CHARS",
    "MAX_RECALL_N",
    "MAX_S1_K",
    "MAX_S2_K",
    "MAX_TEXT_CHARS",
    "MAX_SOURCE_K",
    "BLANK_TEXT",
    "check_budget",
    "check_channel_session",
    "check_id",
    "check_lookup_id",
    "check_message_text",
    "check_name",
    "check_text",
    "did_you_mean",
    "display_form",
    "id_ok",
    "identity_form",
    "same_identity",
    "speaker_key",
    "invisible_in_id",
    "session_id",
    "visible_id",
]

MAX_ID_CHARS = 200
"""Longest id (characters)."""
MAX_NAME_CHARS = 200
"""Longest display name of a speaker or a group (characters)."""
MAX_TEXT_CHARS = 100_000
"""Longest message text (characters): far above what chat platforms allow in one message (tens
of thousands); a 10 MB message was stored and cost every search of its group seconds of BM25
re-scoring and every embed run seconds of tokenising."""
MAX_QUESTION_CHARS = 4000
"""Longest question for ``ask`` (characters)."""
MAX_MESSAGES_PER_REQUEST = 10_000
"""Most messages in one ``POST /groups/{id}/messages`` request (the CLI streams files in batches)."""
MAX_S1_K = 100
"""Largest System 1 top-k (``--s1-k`` / ``s1_k``)."""
MAX_S2_K = 50
"""Largest System 2 records per owner row (``--s2-k`` / ``s2_k``)."""
MAX_SOURCE_K = 50
"""Largest System 2 source supplement per person row (``--source-k`` / ``source_k``)."""
MAX_RECALL_N = 1000
"""Largest System 1 recall pool n (``GRAPHMEM_S1_RECALL_N``; eval sets it to the top-k)."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_text(value: str, *, field: str, record: str = "", source: str = "") -> None:
    """Reject a string holding a lone UTF-16 surrogate (it has no UTF-8 form).

    Raises:
        InvalidInputError: naming ``field`` (and ``record`` / ``source``) and the position.
    """
    m = _SURROGATE.search(value)
    if m is not None:
        raise InvalidInputError(
            f"lone UTF-16 surrogate U+{ord(m.group()):04X} at character {m.start()} (not valid "
            "Unicode text; send the full surrogate pair or the character itself)",
            source=source, record=record, field=field,
        )


BLANK_TEXT = ("text is empty or only whitespace or invisible characters (a message needs at least one "
              "visible character)")
"""Former refusal of a message without a visible character (issue 26: such messages are now
stored, flagged ``no_text``); kept for callers that quote it."""


_INVISIBLE = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me"})
"""Unicode categories that show nothing by themselves: spaces, separators, controls, format
characters (zero-width space U+200B, joiners, direction marks, BOM) and combining marks (accents,
variation selectors, the grapheme joiner U+034F: they only mark the character before them)."""

_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols that are drawn empty: the Hangul fillers and the blank braille pattern."""


def has_visible(value: str) -> bool:
    """Whether ``value`` holds a character a reader sees: not whitespace, not of a category in
    :data:`_INVISIBLE`, not in :data:`_BLANK_LOOKING` ("e\u0301" and emoji joined by U+200D do)."""
    return any(not ch.isspace() and ch not in _BLANK_LOOKING and unicodedata.category(ch) not in _INVISIBLE
               for ch in value)


_ID_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_VARIATION_SELECTORS = frozenset(chr(c) for c in (*range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)))
_ZWJ = "\u200d"
_KEYCAP_BASES = frozenset("0123456789#*")


def _refused_at(value: str, i: int) -> str | None:
    """Why the character at ``value[i]`` may not stand in an id (in its context), or None."""
    ch = value[i]
    prev = value[i - 1] if i > 0 else ""
    nxt = value[i + 1] if i + 1 < len(value) else ""
    if ch == _ZWJ:
        if prev and nxt and unicodedata.category(prev) == "So" and unicodedata.category(nxt) == "So":
            return None
        return "zero-width joiner U+200D outside an emoji sequence"
    if ch in _VARIATION_SELECTORS:
        if prev and (unicodedata.category(prev) == "So" or prev in _KEYCAP_BASES):
            return None
        return f"variation selector U+{ord(ch):04X} that does not follow a symbol"
    cat = unicodedata.category(ch)
    name = unicodedata.name(ch, "unnamed")
    if cat in _ID_INVISIBLE_CATEGORIES:
        kind = {"Cc": "control", "Cf": "invisible format", "Cs": "lone surrogate",
                "Zl": "line separator", "Zp": "paragraph separator"}[cat]
        return f"{kind} character U+{ord(ch):04X} ({name})"
    if cat == "Zs" and ch != " ":
        return f"space character U+{ord(ch):04X} ({name}); only U+0020 is allowed"
    if ch == "\u034f" or ch in _BLANK_LOOKING:
        return f"invisible character U+{ord(ch):04X} ({name})"
    return None


def invisible_in_id(value: str) -> tuple[int, str] | None:
    """The first character of ``value`` that an id may not hold because nobody sees it, as
    ``(position, why)``, or None.

    Refused: control characters (Cc), format characters (Cf: zero-width space, joiners,
    direction marks, BOM, tag characters), lone surrogates, line and paragraph separators, every
    space but U+0020, the grapheme joiner U+034F, the blank-looking letters of
    :data:`_BLANK_LOOKING`; a variation selector that does not follow a symbol or keycap base,
    and a zero-width joiner that does not stand between two symbols (emoji sequences stay
    valid: ``"\u2764\ufe0f"``, a family joined by U+200D).
    """
    if value.isascii() and value.isprintable():  # the common case: no ASCII character but a control is refused
        return None
    for i in range(len(value)):
        why = _refused_at(value, i)
        if why is not None:
            return i, why
    return None


def id_ok(value: str) -> bool:
    """Whether :func:`check_id` passes ``value`` (``/`` aside): the predicate of fast paths
    (:mod:`graphmem.bulk_jsonl`) that hand anything else to the checking path."""
    return (0 < len(value) <= MAX_ID_CHARS and value == value.strip() and has_visible(value)
            and invisible_in_id(value) is None)


def visible_id(value: str) -> str:
    """``value`` with every character :func:`invisible_in_id` refuses written as ``\\uXXXX``:
    how an id stored before the rule is shown beside a display name (``Dad (dad\\u200b)``)."""
    return "".join(f"\\u{ord(ch):04x}" if _refused_at(value, i) is not None else ch
                   for i, ch in enumerate(value))


def display_form(name: str) -> str:
    """The form two display names are compared in: NFC, invisible characters (format, controls,
    :data:`_BLANK_LOOKING`, variation selectors) dropped, runs of whitespace as one space,
    case-folded. ``"Dad"``, ``"dad\u200b"`` and ``" DAD "`` share one form, as do
    ``"Jos\u00e9"`` and ``"Jose\u0301"``.
    Stored names are never changed; the roster marks persons sharing a form (:class:`graphmem.roster.Roster`)."""
    text = unicodedata.normalize("NFC", name)
    kept = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf", "Cs")
                   and ch not in _BLANK_LOOKING and ch not in _VARIATION_SELECTORS and ch != "\u034f")
    return " ".join(kept.split()).casefold()


@functools.lru_cache(maxsize=8192)
def _latin_lookalike(ch: str) -> str:
    """The Latin character ``ch`` looks like (Unicode's confusables data, UTS #39, through
    confusable-homoglyphs: Cyrillic ``а`` -> ``a``, Greek ``Μ`` -> ``M``), else ``ch``."""
    from confusable_homoglyphs import confusables

    found = confusables.is_confusable(ch, preferred_aliases=["latin"], greedy=False)
    glyphs = found[0].get("homoglyphs") if found else None
    return str(glyphs[0]["c"]) if glyphs else ch


def confusable_form(name: str) -> str:
    """:func:`display_form` with every character that looks like a Latin one written as that one:
    the form in which two display names *look* alike. ``"Dad"`` and ``"D\\u0430d"`` (a Cyrillic
    ``а``) share one, as do ``"Mom"`` and ``"\\u039com"`` (a Greek ``Μ``). The roster marks
    persons sharing it (:class:`graphmem.verbatim.roster.Roster`); lookups never use it (a
    lookalike is another person, never a spelling of one). Source: Unicode TR39 confusables."""
    text = unicodedata.normalize("NFC", name)
    if text.isascii():
        return display_form(text)
    # before case-folding: a Greek capital Mu looks like M, its folded small mu does not. Only
    # the characters outside ASCII are mapped, as in an ASCII name: the data also maps some
    # ASCII ones ("1" -> "l"), and "Bob 1" with a zero-width space then escaped "Bob 1"
    return display_form("".join(ch if ch.isascii() else _latin_lookalike(ch) for ch in text))


def shown_id(value: str) -> str:
    """``value`` as a label shows it beside a name two persons share: :func:`visible_id` plus every
    character that merely looks like a Latin one written as ``\\uXXXX`` (``D\\u0430d`` beside
    ``Dad``), so two lookalike persons never show the same label."""
    visible = visible_id(value)
    if visible.isascii():
        return visible
    return "".join(ch if ch.isascii() or _latin_lookalike(ch) == ch else f"\\u{ord(ch):04x}" for ch in visible)


def identity_form(value: str) -> str:
    """The form in which two person ids (or a display name and a person id) are one identity:
    NFC, surrounding whitespace trimmed and inner runs of whitespace (any Unicode space) as one
    U+0020, case-folded (NFC again after folding). ``"Zo\u00eb"`` (NFC, a phone),
    ``"Zoe\u0308"`` (NFD, a Mac), ``"zo\u00eb"`` and ``"Zo\u00eb "`` share one form.

    Invisible characters (format characters such as U+200B, joiners, direction marks) are
    kept: ``"Dad"`` and ``"Dad\u200b"`` stay two identities (an id holding one is refused at
    input, :func:`check_id`; a display name holding one is another person, marked apart in the
    roster, :func:`display_form`), so nobody can pass for another person by an unseen character.
    The rule of every person lookup and of the speaker key of a message without ``speaker_id``
    (docs/reliability.md "Identity in every spelling").
    """
    folded = " ".join(unicodedata.normalize("NFC", value).split()).casefold()
    return unicodedata.normalize("NFC", folded)


def speaker_key(name: str) -> str:
    """The Person id a display name gives to a new person when no person of the group has its
    :func:`identity_form` yet: the name in NFC, trimmed, inner runs of whitespace as one space,
    case kept (``" Zoe\u0308  Li "`` -> ``"Zo\u00eb Li"``)."""
    return " ".join(unicodedata.normalize("NFC", name).split())


def same_identity(wanted: str, ids: Iterable[str]) -> list[str]:
    """The ids among ``ids`` that name the identity ``wanted`` names (:func:`identity_form`),
    ``wanted`` itself first when present, the others in code-point order. ``[]`` when none.

    ``same_identity("zoe\u0308 ", ["Zo\u00eb", "Zed"]) == ["Zo\u00eb"]``.
    """
    form = identity_form(wanted)
    found = sorted({i for i in ids if identity_form(i) == form})
    if wanted in found:
        found.remove(wanted)
        found.insert(0, wanted)
    return found


def erased_identity(wanted: str, ids: Iterable[str], *, field: str = "person_id") -> list[str]:
    """The ids among ``ids`` that an erasure of ``wanted`` takes: every id of its identity
    (:func:`same_identity`) when they are spellings of one text (NFC or NFD, surrounding or
    doubled spaces: :func:`speaker_key`), as an older store keeps "Zo\u00eb" twice. Ids that
    differ by more than that (``"UCab"`` and ``"UCAB"``: two platform ids, two persons) are
    told apart: the one spelt as ``wanted`` is taken alone, and a ``wanted`` that is neither
    names several persons.

    Raises:
        InvalidInputError: ``wanted`` names several persons spelt alike and none as it is spelt
            (field ``field``; nothing may be erased).
    """
    same = same_identity(wanted, ids)
    if len({speaker_key(i) for i in same}) <= 1:
        return same
    spelt = [i for i in same if speaker_key(i) == speaker_key(wanted)]
    if spelt:
        return spelt
    listed = ", ".join(repr(visible_id(i)) for i in same)
    raise InvalidInputError(f"person id {wanted!r} names {len(same)} persons spelt alike ({listed}); "
                            "send one of these ids exactly; nothing was erased", field=field)


def _unaccented(form: str) -> str:
    """``form`` without combining marks after canonical decomposition (``"zoë"`` -> ``"zoe"``)."""
    return "".join(ch for ch in unicodedata.normalize("NFD", form) if not unicodedata.combining(ch))


def did_you_mean(wanted: str, candidates: list[tuple[str, str]], *, limit: int = 3) -> str:
    """The hint for an id that names nothing: ``"; did you mean 'ben' (Ben)?"``, or "".

    A candidate ``(id, display name)`` matches when its id or its name has the
    :func:`display_form` of ``wanted`` (NFC, any case, invisible characters dropped) or that
    form without its accents (``"Zoe"`` for ``"Zo\u00eb"``), or, failing that, is close to it
    (difflib ratio >= 0.75 on those forms). The id is quoted as it must be sent; the name
    follows in parentheses when it differs from the id.

    Args:
        wanted: the id that was asked for.
        candidates: (id, display name) of everything that exists and the caller may reach.
        limit: at most this many suggestions.
    """
    import difflib

    form = display_form(wanted)
    bare = _unaccented(form)
    exact = [(i, n) for i, n in candidates if i != wanted and (
        form in (display_form(i), display_form(n)) or bare in (_unaccented(display_form(i)), _unaccented(display_form(n))))]
    found = exact
    if not found:
        scored = sorted(((max(difflib.SequenceMatcher(None, form, display_form(i)).ratio(),
                              difflib.SequenceMatcher(None, form, display_form(n)).ratio()), i, n)
                         for i, n in candidates if i != wanted), reverse=True)
        found = [(i, n) for r, i, n in scored if r >= 0.75]
    if not found:
        return ""
    said = [f"{i!r}" + (f" ({n})" if n and n != i else "") for i, n in found[:limit]]
    return "; did you mean " + " or ".join(said) + "?"


def check_message_text(value: str, *, record: str = "", source: str = "", field: str = "text") -> None:
    """Check a message text: at most :data:`MAX_TEXT_CHARS` characters, no lone surrogate.

    A text without a visible character ("", whitespace, zero-width or direction marks only: an
    attachment-only message, a sticker, a blank line) is stored verbatim and flagged
    (``no_text``): it is not indexed for search and not given to the Writer as evidence, but keeps
    its place in the conversation and as a reply target (docs/import.md, "Messages without text").

    Raises:
        InvalidInputError: the length, or the surrogate's position, naming ``field`` (and
            ``record`` / ``source``).
    """
    if len(value) > MAX_TEXT_CHARS:
        raise InvalidInputError(f"text is {len(value)} characters long; at most {MAX_TEXT_CHARS} are allowed",
                                source=source, record=record, field=field)
    check_text(value, field=field, record=record, source=source)


def check_id(value: str, *, field: str, record: str = "", source: str = "", slash: bool = True) -> None:
    """Check one id against the id grammar (module docstring).

    Args:
        value: the id.
        field: field name for the error.
        record / source: where the id came from, for the error.
        slash: whether ``/`` is allowed (False for group ids and channel names).

    Raises:
        InvalidInputError: naming the field and the rule broken (the id itself is not echoed
            when it is long).
    """
    def bad(why: str) -> InvalidInputError:
        return InvalidInputError(why, source=source, record=record, field=field)

    if not isinstance(value, str):
        raise bad(f"id must be a string, got {type(value).__name__}")
    if not value:
        raise bad("id is empty")
    if not has_visible(value):
        raise bad("id has no visible character")
    if len(value) > MAX_ID_CHARS:
        raise bad(f"id is {len(value)} characters long; at most {MAX_ID_CHARS} are allowed")
    check_text(value, field=field, record=record, source=source)
    if value != value.strip():
        raise bad("id has leading or trailing whitespace")
    m = _CONTROL.search(value)
    if m is not None:
        raise bad(f"id holds control character U+{ord(m.group()):04X} at character {m.start()}")
    hidden = invisible_in_id(value)
    if hidden is not None:
        raise bad(f"id holds {hidden[1]} at character {hidden[0]} (ids may hold no invisible characters)")
    if not slash and "/" in value:
        raise bad("id contains '/' (not allowed in group ids and channel names)")


def check_lookup_id(value: object, *, field: str) -> None:
    """Check an id a read or an erasure looks up (group, message, record, person): a string of
    1 to :data:`MAX_ID_CHARS` characters with no lone surrogate. The rule MCP's and the HTTP
    API's request models state; the rest of the id grammar is not asked of a lookup, so an id
    stored before a rule of it is still found.

    Raises:
        InvalidInputError: naming ``field`` (the id itself is not echoed when it is long); a
            lone surrogate (what the command line makes of an argument that is not UTF-8) would
            otherwise fail inside the driver as ``UnicodeEncodeError``.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"id must be a string, got {type(value).__name__}", field=field)
    if not value:
        raise InvalidInputError("id is empty", field=field)
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(f"id is {len(value)} characters long; at most {MAX_ID_CHARS} are allowed",
                                field=field)
    check_text(value, field=field)


def check_name(value: str, *, field: str, record: str = "", source: str = "") -> None:
    """Check a display name (speaker, group): non-blank, at most :data:`MAX_NAME_CHARS`, no lone
    surrogate. A name is stored as written: tabs, newlines and other control or invisible
    characters inside it are kept (only ids are strict); names are compared in
    :func:`display_form`.

    Raises:
        InvalidInputError: naming the field and the rule broken.
    """
    if not has_visible(value):
        raise InvalidInputError("name is blank (no visible character)", source=source, record=record, field=field)
    if len(value) > MAX_NAME_CHARS:
        raise InvalidInputError(
            f"name is {len(value)} characters long; at most {MAX_NAME_CHARS} are allowed",
            source=source, record=record, field=field,
        )
    check_text(value, field=field, record=record, source=source)


def check_budget(value: int, *, field: str, low: int, high: int) -> None:
    """Check one retrieval budget against its range ``[low, high]``.

    Raises:
        InvalidInputError: naming ``field`` and the range; also for a value that is not an
            integer ("5", 2.5, True: a library caller's slip would otherwise be a TypeError).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field} must be an integer between {low} and {high}", field=field, value=value)
    if not low <= value <= high:
        raise InvalidInputError(f"{field} must be between {low} and {high}", field=field, value=value)


def session_id(channel: str, session: str, *, record: str = "", source: str = "") -> str:
    """The normal form of a session id: ``"<channel>/<session>"`` with a channel, else ``session``.

    Idempotent: a ``session`` that already starts with ``"<channel>/"`` is the normal form and
    is returned unchanged, so messages read back from the store (or from ``graphmem export``)
    and loaded again keep their session ids (``general/week-1``, not ``general/general/week-1``).

    Raises:
        InvalidInputError: field ``channel`` for a channel name outside the id grammar (or with
            ``/``); field ``session`` for a session name outside it, or one holding ``/`` without
            a channel (:func:`check_channel_session`).
    """
    if channel:
        check_id(channel, field="channel", record=record, source=source, slash=False)
        check_id(session, field="session", record=record, source=source)
        return session if session.startswith(channel + "/") else f"{channel}/{session}"
    check_id(session, field="session", record=record, source=source)
    check_channel_session(channel, session, record=record, source=source)
    return session


def check_channel_session(channel: str, session: str, *, record: str = "", source: str = "") -> None:
    """Refuse a session id holding ``/`` on a message without a channel.

    ``/`` separates the channel from the session name in a stored session id
    (``"<channel>/<session>"``, :func:`session_id`), so a session ``"a/b"`` without a channel
    would be one Session with the session ``b`` of channel ``a``: two channels' messages in one
    session.

    Raises:
        InvalidInputError: field ``session``.
    """
    if not channel and "/" in session:
        raise InvalidInputError(
            "session name contains '/' but the message has no channel ('/' separates channel and "
            "session in stored session ids: give the channel, or a session name without '/')",
            source=source, record=record, field="session")


def existing_path(path: str | os.PathLike[str]) -> Path:
    """Return ``path`` as a :class:`Path` after checking that it exists.

    Raises:
        InvalidInputError: field ``path`` when nothing exists at ``path``.
    """
    p = Path(path)
    if not p.exists():
        raise InvalidInputError("no such file or folder", source=str(p), field="path")
    return p
