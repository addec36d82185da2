"""Pages of a list: one limit rule, one cursor form and one size rule for every list graphmem returns.

Every list of the product (search hits, the roster, the groups a key reaches, a group's derive
jobs, one person's memory, a record's provenance, read_cypher rows) is read a page at a time:

- ``limit`` (``k`` for search): items on the page, 1 to the list's documented maximum
  (:data:`MAX_LIMITS`); :func:`check_limit` refuses anything else, naming the field.
- ``cursor``: None for the first page, else the ``next_cursor`` of the previous page, unchanged.
- the answer says ``truncated`` (true: more items follow this page) and ``next_cursor`` (pass
  it back for the next page; None on the last page) (:class:`Paged`).
- ``max_bytes`` (MCP tools; optional in the library): the page is cut shorter so that the
  whole result, as compact JSON in UTF-8, stays within it (:func:`take`); a page always holds
  at least one item, so paging always moves on.

A cursor is ``"<kind>:<payload>"`` (the form of the export's cursors,
:mod:`graphmem.groups.export`): ``payload`` is base64url JSON of the list's scope (a short hash of
what the list is of: group, query, person, mode ...; a cursor of another list is refused) and the
**sort key of the last item returned**, never an offset. Each list is ordered by a key that
never changes for an item (a person's id, a record chain's first state, a message's write
position), so items written between two pages take their own place in that order instead of
shifting the others: a walk over the pages sees every item that was there when it started once,
with no gap and no repeat. The one list that is a ranking (search) says what it can promise
(:func:`graphmem.recall.search.search_group`).

Long message texts in a list are cut to :data:`LIST_TEXT_CHARS` characters (:func:`clip_text`)
with ``text_truncated`` and the full length ``text_chars``; the whole message is one read away
(``GET /groups/{id}/messages/{message_id}``, MCP ``get_message``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel

from graphmem.core.errors import InvalidInputError

__all__ = [
    "DEFAULT_LIMIT", "LIST_TEXT_CHARS", "MAX_LIMITS", "MAX_RESULT_BYTES", "MIN_RESULT_BYTES", "Paged",
    "RESULT_BYTES", "budget_of", "check_limit", "check_max_bytes", "clip_text", "decode_cursor", "encode_cursor",
    "json_size", "list_scope", "take",
]

T = TypeVar("T")

#: Items a page holds when the caller gives no limit.
DEFAULT_LIMIT = 100

#: The largest ``limit`` of each list (``k`` for search: the ranking's page size).
MAX_LIMITS: dict[str, int] = {
    "search": 100,
    "roster": 1000,
    "groups": 1000,
    "jobs": 1000,
    "person_memory": 500,
    "provenance": 1000,
    "read_cypher": 10_000,
}

#: Characters of a message text a list shows; a longer text is cut there (``text_truncated``).
LIST_TEXT_CHARS = 2_000

#: Bytes of compact JSON (UTF-8) an MCP tool result holds by default (about 16k tokens: well
#: under an agent's tool-output budget of ~25k tokens).
RESULT_BYTES = 64_000
#: The range an MCP ``max_bytes`` argument takes.
MIN_RESULT_BYTES = 1_000
MAX_RESULT_BYTES = 1_000_000

#: Bytes a ``next_cursor`` may take in a result: room kept for it when a page is cut by size.
_CURSOR_ROOM = 600


class Paged(BaseModel):
    """What every page of a list says besides its items.

    Attributes:
        truncated: true when more items follow this page (by ``limit`` or by size).
        next_cursor: pass it back as ``cursor`` for the next page; None on the last page.
    """

    truncated: bool = False
    next_cursor: str | None = None


def check_limit(limit: int, *, maximum: int, field: str = "limit") -> None:
    """Refuse a page size outside ``1 .. maximum`` (or not an integer).

    Raises:
        InvalidInputError: naming ``field`` and the range.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidInputError(f"{field} must be an integer from 1 to {maximum}", field=field, value=limit)
    if not 1 <= limit <= maximum:
        raise InvalidInputError(f"{field} must be from 1 to {maximum}", field=field, value=limit)


def check_max_bytes(max_bytes: int | None, *, low: int = MIN_RESULT_BYTES, high: int = MAX_RESULT_BYTES,
                    field: str = "max_bytes") -> None:
    """Refuse a result size bound outside ``low .. high`` (None: no bound).

    Raises:
        InvalidInputError: naming ``field`` and the range.
    """
    if max_bytes is None:
        return
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not low <= max_bytes <= high:
        raise InvalidInputError(f"{field} must be an integer from {low} to {high}", field=field, value=max_bytes)


def list_scope(*parts: Any) -> str:
    """A short hash of what a list is of (group id, query, person, mode ...): a cursor carries
    it, and a cursor whose scope differs is refused."""
    raw = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def encode_cursor(kind: str, scope: str, key: Sequence[Any]) -> str:
    """``"<kind>:<base64url JSON [scope, *key]>"``: opaque to the caller, checked on the way back."""
    raw = json.dumps([scope, *key], ensure_ascii=False, separators=(",", ":"))
    return f"{kind}:{base64.urlsafe_b64encode(raw.encode('utf-8')).decode('ascii').rstrip('=')}"


def decode_cursor(cursor: str | None, *, kind: str, scope: str, size: int,
                  types: Sequence[type] | None = None) -> list[Any] | None:
    """The sort key a cursor carries (None for no cursor: the first page).

    Args:
        cursor: what the caller passed back.
        kind / scope: what the list is (:func:`encode_cursor` made it with the same).
        size: how many values the key has.
        types: the type of each value of the key (``int`` refuses a bool). The scope is a hash
            of what the caller knows, so a cursor can be forged with any key: one of another
            shape must be refused here, before the list compares it with its own keys.

    Raises:
        InvalidInputError: field ``cursor``: not a cursor of this list (another list's, another
            query's, edited, cut, or a key of the wrong types).
    """
    if cursor is None or cursor == "":
        return None
    wrong = InvalidInputError(f"not a cursor of this {kind.replace('_', ' ')} list (pass next_cursor back "
                              "unchanged, with the same arguments)", field="cursor")
    prefix, sep, payload = cursor.partition(":")
    if not sep or prefix != kind or len(payload) > 4000:
        raise wrong
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as e:
        raise wrong from e
    if not isinstance(data, list) or len(data) != size + 1 or data[0] != scope:
        raise wrong
    if types is not None and not all(isinstance(v, t) and not (isinstance(v, bool) and t is not bool)
                                      for v, t in zip(data[1:], types, strict=True)):
        raise wrong
    return data[1:]


def json_size(value: Any) -> int:
    """Bytes of ``value`` (a model, or plain data) as compact JSON in UTF-8: what an MCP result
    carries and what :func:`take` counts."""
    return len(pydantic_core.to_json(value, fallback=str))


def take(items: Sequence[T], *, limit: int, key: Callable[[T], Sequence[Any]], budget: int | None = None,
         size: Callable[[T], int] = json_size) -> tuple[list[T], Sequence[Any] | None]:
    """The page out of ``items`` (the items after the cursor, in order; at most ``limit + 1``
    read is enough to know whether more follow).

    Args:
        limit: items on the page at most.
        key: the sort key of an item (what the next cursor carries).
        budget: bytes the page's items may take as JSON (None: no bound); the first item is
            always taken, so a page is never empty while items are left.
        size: bytes of one item.

    Returns:
        (the page, the key of its last item when more items follow, else None).
    """
    page: list[T] = []
    used = 0
    for item in items:
        if len(page) == limit:
            break
        if budget is not None:
            used += size(item) + 1  # the comma
            if page and used > budget:
                break
        page.append(item)
    more = len(page) < len(items)
    return page, (key(page[-1]) if more and page else None)


def budget_of(envelope: BaseModel, max_bytes: int | None) -> int | None:
    """Bytes left for a page's items when the rest of the result (``envelope``, the result
    with its lists empty) and a next cursor are counted; None when ``max_bytes`` is None."""
    if max_bytes is None:
        return None
    return max(0, max_bytes - json_size(envelope) - _CURSOR_ROOM)


def clip_text(text: str, max_chars: int | None = LIST_TEXT_CHARS) -> tuple[str, bool, int | None]:
    """A message text as a list shows it.

    Returns:
        (the text, cut to ``max_chars`` characters when longer; whether it was cut; the full
        length in characters when it was cut, else None: a whole text says nothing more).
        ``max_chars`` None: never cut.
    """
    n = len(text)
    if max_chars is None or n <= max_chars:
        return text, False, None
    return text[:max_chars], True, n
