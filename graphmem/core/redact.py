"""No secret in what graphmem prints: credentials taken out of URLs before they reach an error
message, a log line or a telemetry span.

A model endpoint or a Neo4j URI may carry credentials: ``https://user:pass@host/v1``,
``https://host/v1?api_key=...``. graphmem keeps the real URL for the request and shows
:func:`redact_url`'s form everywhere else; :func:`redact_text` cleans free text (a driver's or an
HTTP library's exception message) that may quote such a URL.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "SECRET_QUERY_KEYS", "AccessLogRedactor", "redact_text", "redact_url"]

MASK = "***"
"""What a removed credential is shown as."""

SECRET_QUERY_KEYS = frozenset({
    "key", "api_key", "apikey", "api-key", "access_token", "token", "auth", "authorization",
    "password", "passwd", "pwd", "secret", "client_secret", "sig", "signature", "code",
    "x-api-key", "subscription-key", "sas", "credential",
})
"""Query parameters (compared case-insensitively) whose value is a credential."""

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")
#: ``user:password@host`` without a scheme (a driver's or a proxy's message): the user and
#: password part
_BARE_CREDENTIALS = re.compile(r"(?<![\w/@:.-])[\w.%+-]+:[^\s@/'\"<>`]+@(?=[\w.-]+(?::\d+)?\b)")
#: a path segment that is a credential: a provider's key prefix (``sk-``, ``sk_``, ``xoxb-``,
#: ``ghp_``, ``glpat-``, ``AKIA``...) or a long run of letters and digits of both kinds
_KEY_SEGMENT = re.compile(
    r"^(?:(?:sk|pk|rk|ak)[-_][\w-]{8,}|xox[abposr]-[\w-]{8,}|gh[pousr]_[\w]{16,}|glpat-[\w-]{16,}"
    r"|AKIA[0-9A-Z]{12,}"
    r"|(?![0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)"  # a UUID is an id
    r"(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{32,})$")


def _masked_pairs(text: str) -> str:
    """A query string (or a fragment written like one) with every secret value masked; a ``;``
    separates pairs too (``?q=a;api_key=...``), as some servers read it."""
    pairs = parse_qsl(text.replace(";", "&"), keep_blank_values=True)
    if not any(k.casefold() in SECRET_QUERY_KEYS for k, _ in pairs):
        return text
    return urlencode([(k, MASK if k.casefold() in SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*")


#: a provider's key in free text, outside any URL (``sk-...``, ``ghp_...``, ``xoxb-...``)
_BARE_KEY = re.compile(r"\b(?:sk|rk)-[\w-]{16,}|\bxox[abposr]-[\w-]{8,}|\bgh[pousr]_\w{16,}|\bglpat-[\w-]{16,}"
                       r"|\bAKIA[0-9A-Z]{12,}")


def redact_url(url: str) -> str:
    """``url`` without credentials: the user and password of its authority become
    :data:`MASK` (``https://***@host/v1``), as does the value of every query parameter (or
    fragment parameter: ``#access_token=***``) named in :data:`SECRET_QUERY_KEYS`
    (``?api_key=***``) and every path segment that is a key (``/v1/***/chat`` for
    ``/v1/sk-proj-.../chat``: a provider key prefix, or 32 or more letters and digits). Anything
    else is kept, so the URL still says where it points. A string that does not parse as a URL comes back with anything before an
    ``@`` masked."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
        query = _masked_pairs(parts.query) if parts.query else ""
        fragment = _masked_pairs(parts.fragment) if "=" in parts.fragment else parts.fragment
        path = "/".join(MASK if _KEY_SEGMENT.match(seg) else seg for seg in parts.path.split("/"))
        return urlunsplit((parts.scheme, netloc, path, query, fragment))
    except ValueError:  # e.g. an invalid IPv6 literal: mask the whole authority part
        return re.sub(r"//[^/@]*@", f"//{MASK}@", url)


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`, every
    ``user:password@host`` written without a scheme shown as ``***@host``, and every provider
    key outside a URL (``sk-...``, ``ghp_...``, ``xoxb-...``, ``AKIA...``) shown as ``***``."""
    text = _BARE_CREDENTIALS.sub(f"{MASK}@", _URL.sub(lambda m: redact_url(m.group()), text))
    return _BARE_KEY.sub(MASK, text)


class AccessLogRedactor(logging.Filter):
    """A filter for uvicorn's access log (``uvicorn.access``): the request line's path passes
    through :func:`redact_url`, so a key sent by mistake as ``?api_key=...`` (refused with 401)
    is not written to the log in clear."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_url(args[2]), *args[3:])
        return True
