"""Time: one home for reading, normalising and printing timestamps.

Stored timestamps are ISO-8601 text (``YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]``, offset kept as
given, naive read as UTC) and, for ordering and as-of cuts, epoch seconds (float, UTC).
Readers here: :func:`parse_ts` (strict input parsing with record/field errors, used by the
loaders and ingest), :func:`instant` (text -> epoch seconds), :func:`normalize` (text -> the
stored form), :func:`to_instant` (text, datetime or number -> epoch seconds),
:func:`parse_as_of` (a user's as-of time); printers: :func:`short_ts`, :func:`date_of`,
:func:`minute`, :func:`now_iso`.

The rule (one for the CLI, the API and the library; docs/reliability.md, "Timestamps"):

- Accepted: ISO-8601 calendar date-times with years 0001-9999 (see :func:`parse_ts` for the
  spellings); every reader here uses :func:`parse_ts`, so what one entry point accepts, all do.
- Normal form (stored): ``YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]``; a given offset is kept,
  ``Z`` becomes ``+00:00``, a naive time stays naive.
- Order is by instant: epoch seconds (float) of the UTC moment, naive read as UTC. The instant
  is computed by offset arithmetic, so the calendar's edges (``0001-01-01T00:00:00+14:00``,
  ``9999-12-31T23:59:59-12:00``) are accepted and ordered although their UTC moment lies
  outside Python's ``datetime`` range.
- Anything else is refused with :class:`InvalidInputError` naming the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from datetime import datetime, timedelta, timezone
from typing import Any

from graphmem.core.errors import InvalidInputError
from graphmem.core.text import short_repr

__all__ = [
    "ParsedTs",
    "date_of",
    "instant",
    "minute",
    "now_iso",
    "parse_as_of",
    "parse_date",
    "normalize",
    "offset_of",
    "parse_ts",
    "short_ts",
    "to_instant",
]


@dataclass(frozen=True)
class ParsedTs:
    """A parsed timestamp.

    Attributes:
        text: normalised ISO-8601 string ``YYYY-MM-DDTHH:MM:SS[.ffffff][+HH:MM]``; the UTC
            offset is kept exactly as given (``Z`` becomes ``+00:00``); naive stays naive.
        instant: epoch seconds (float) of the UTC moment (naive input is read as UTC), for
            ordering and as-of cuts; defined for the whole calendar (see the module docstring).
    """

    text: str
    instant: float


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


_ISO_RE = re.compile(
    r"""
    (?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})
    (?:
        [Tt\ ]
        (?P<h>\d{2}):(?P<mi>\d{2})
        (?::(?P<s>\d{2})(?:[.,](?P<frac>\d{1,9}))?)?
        \s*(?P<tz>[Zz]|[+-]\d{2}(?::?\d{2})?)?
    )?
    """,
    re.VERBOSE,
)


def parse_ts(value: Any, *, source: str = "", record: str = "", field: str = "ts") -> ParsedTs:
    """Parse an ISO-8601 timestamp (with or without UTC offset) and normalise it.

    Accepted: ``2025-07-09T01:42:41``, ``2025-07-09 01:42:41``, ``2025-07-09T01:42``,
    fractions (``.123``, up to 9 digits, kept to microseconds), offsets ``Z``, ``+05:30``,
    ``+0530``, ``+05``, and a bare date ``2025-07-09`` (midnight). Surrounding whitespace is
    ignored.

    Args:
        value: the raw value (must be a string).
        source: file path for errors.
        record: record label for errors.
        field: field name for errors.

    Returns:
        :class:`ParsedTs` with the normalised text (``T`` separator, seconds always present,
        offset kept, e.g. ``"2025-07-09T10:00:00+05:30"``) and the instant (epoch seconds).

    Raises:
        InvalidInputError: when ``value`` is not a string or not a valid ISO-8601 date-time.
    """
    if not isinstance(value, str):
        raise InvalidInputError(
            f"timestamp must be a string, got {type(value).__name__}", value=value,
            source=source,
            record=record,
            field=field,
        )
    fast = _normal_form_cached(value) if len(value) in _NORMAL_LENGTHS else None
    if fast is not None:
        return fast
    m = _ISO_RE.fullmatch(value.strip())
    if m is None:
        raise InvalidInputError(
            "unparsable timestamp (expected ISO-8601)", source=source, record=record, field=field, value=value
        )
    try:
        tz = _parse_offset(m.group("tz"))
        frac = m.group("frac") or ""
        micro = int((frac + "000000")[:6]) if frac else 0
        dt = datetime(
            int(m.group("y")),
            int(m.group("mo")),
            int(m.group("d")),
            int(m.group("h") or 0),
            int(m.group("mi") or 0),
            int(m.group("s") or 0),
            micro,
            tzinfo=tz,
        )
    except ValueError as e:
        raise InvalidInputError(
            f"invalid timestamp: {e}", source=source, record=record, field=field, value=value
        ) from e
    aware = dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)
    # Subtraction works on (date, offset) pairs and never builds the UTC datetime, so it cannot
    # overflow at the calendar's edges (astimezone() would).
    return ParsedTs(text=dt.isoformat(), instant=(aware - _EPOCH).total_seconds())


def _normal_form(value: str) -> ParsedTs | None:
    """The parse of a timestamp already in the stored normal form, else None.

    Bulk input and every stored timestamp are in normal form; ``datetime.fromisoformat`` (C)
    reads it several times faster than the general pattern. The shape checks below admit only
    the normal form (``T``, seconds, six fraction digits unless zero, ``+HH:MM`` with ``-00:00``
    spelled ``+00:00``), so the result equals the general parse.
    """
    n = len(value)
    if n not in (19, 25, 26, 32) or value[10] != "T" or value[4] != "-" or value[7] != "-" \
            or value[13] != ":" or value[16] != ":":
        return None
    if n >= 26 and (value[19] != "." or not value[20:26].isascii() or not value[20:26].isdigit()
                    or value[20:26] == "000000"):
        return None
    if n in (25, 32):
        tail = value[-6:]
        if tail[0] not in "+-" or tail[3] != ":" or tail == "-00:00" or tail[4] not in "012345":
            return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    aware = dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)
    return ParsedTs(text=value, instant=(aware - _EPOCH).total_seconds())


_NORMAL_LENGTHS = frozenset({19, 25, 26, 32})


@lru_cache(maxsize=65536)
def _normal_form_cached(value: str) -> ParsedTs | None:
    """:func:`_normal_form`, remembered: a load reads each timestamp several times (validation,
    instant, stored form) and a chat repeats timestamps; only strings of a normal-form length
    come here, so the cache holds at most 65,536 short strings."""
    return _normal_form(value)


def _parse_offset(raw: str | None) -> timezone | None:
    if raw is None:
        return None
    if raw in ("Z", "z"):
        return timezone.utc
    sign = -1 if raw[0] == "-" else 1
    digits = raw[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4] or 0)
    if minutes >= 60:
        raise ValueError(f"offset minutes out of range: {raw}")
    if hours >= 24:
        raise ValueError(f"offset {raw} out of range (must lie strictly between -24:00 and +24:00)")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def parse_date(value: Any, *, source: str, record: str, field: str) -> str:
    """Parse a calendar date, also given as a midnight date-time, and return ``YYYY-MM-DD``.

    Accepts ``2025-01-09`` and ``2025-01-09 00:00:00`` / ``2025-01-09T00:00:00`` (the form a
    dataframe timestamp takes when dumped with ``default=str``). A non-midnight time is kept out
    of the result (only the date part is returned).

    Raises:
        InvalidInputError: when ``value`` is not a string holding an ISO-8601 date.
    """
    parsed = parse_ts(value, source=source, record=record, field=field)
    return parsed.text[:10]


def date_of(ts_text: str) -> str:
    """Return the calendar date ``YYYY-MM-DD`` of a normalised timestamp, in its own offset."""
    return ts_text[:10]


def instant(ts: Any, *, source: str = "", record: str = "", field: str = "ts") -> float:
    """Epoch seconds of an ISO-8601 timestamp (naive times are read as UTC; :func:`parse_ts`).

    Raises:
        InvalidInputError: ``ts`` is not ISO-8601 text (also a ``ValueError``).
    """
    return parse_ts(ts, source=source, record=record, field=field).instant


def normalize(ts: Any, *, source: str = "", record: str = "", field: str = "ts") -> str:
    """The stored (normal) form of an ISO-8601 timestamp (:func:`parse_ts`).

    Raises:
        InvalidInputError: ``ts`` is not ISO-8601 text.
    """
    return parse_ts(ts, source=source, record=record, field=field).text


def offset_of(ts: Any) -> str:
    """The UTC offset a timestamp is written in, as stored (``"+02:00"``; ``Z`` is ``"+00:00"``;
    ``""`` for a naive time): two forms of one instant in other offsets are one moment seen
    from two time zones, whose local calendar days may differ.

    Raises:
        InvalidInputError: ``ts`` is not ISO-8601 text.
    """
    text = normalize(ts)
    return text[-6:] if len(text) >= 25 and text[-6] in "+-" and text[-3] == ":" else ""


def to_instant(at: str | datetime | float | int) -> float:
    """Epoch seconds of an ISO-8601 string, a datetime or a number (naive times are UTC).

    Raises:
        InvalidInputError: an unparsable time string.
    """
    if isinstance(at, (int, float)):
        return float(at)
    if isinstance(at, str):
        try:
            return parse_ts(at, field="at").instant  # the one rule for every entry point
        except InvalidInputError as e:
            raise InvalidInputError("unparsable time (use ISO-8601)", field="at", value=at) from e
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    return at.timestamp()


def parse_as_of(as_of: str | datetime | None) -> tuple[str, float | None]:
    """(ISO text, epoch seconds) of an as-of time; ("", None) when not given.

    Raises:
        InvalidInputError: unparsable time (field ``as_of``).
    """
    if as_of is None or as_of == "":
        return "", None
    text = as_of.isoformat() if isinstance(as_of, datetime) else str(as_of).strip()
    try:
        return text, to_instant(text)
    except InvalidInputError as e:
        raise InvalidInputError("unparsable as-of time (use ISO-8601)", field="as_of", value=text) from e


def short_ts(ts: str) -> str:
    """``YYYY-MM-DD HH:MM`` of an ISO-8601 timestamp; the text itself (or ``"?"``) when unparsable."""
    try:
        return datetime.fromisoformat(ts).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError):
        return ts or "?"


def minute(ts: str) -> str:
    """``YYYY-MM-DD HH:MM`` of a stored timestamp, cut from the text (no parsing, own offset)."""
    return ts[:16].replace("T", " ")


def now_iso() -> str:
    """The current UTC time as ISO-8601 text to the second (``...+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
