"""No secret in what graphmem prints: credentials taken out of URLs before they reach an error
message, a log line or a telemetry span.

A model endpoint or a Neo4j URI may carry credentials: ``https://user:pass@host/v1``,
``https://host/v1?api_key=...``. graphmem keeps the real URL for the request and shows
:func:`redact_url`'s form everywhere else; :func:`redact_text` cleans free text (a driver's or an
HTTP library's exception message) that may quote such a URL.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MASK", "SECRET_QUERY_KEYS", "redact_text", "redact_url"]

MASK = "***"
"""What a removed credential is shown as."""

SECRET_QUERY_KEYS = frozenset({
    "key", "api_key", "apikey", "api-key", "access_token", "token", "auth", "authorization",
    "password", "passwd", "pwd", "secret", "client_secret", "sig", "signature", "code",
    "x-api-key", "subscription-key", "sas", "credential",
})
"""Query parameters (compared case-insensitively) whose value is a credential."""

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>`]+")


def redact_url(url: str) -> str:
    """``url`` without credentials: the user and password of its authority become
    :data:`MASK` (``https://***@host/v1``), as does the value of every query parameter named in
    :data:`SECRET_QUERY_KEYS` (``?api_key=***``). Anything else is kept, so the URL still says
    where it points. A string that does not parse as a URL comes back with anything before an
    ``@`` masked."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(k.casefold() in SECRET_QUERY_KEYS for k, _ in pairs):
                query = urlencode([(k, MASK if k.casefold() in SECRET_QUERY_KEYS else v) for k, v in pairs],
                                  safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # e.g. an invalid IPv6 literal: mask the whole authority part
        return re.sub(r"//[^/@]*@", f"//{MASK}@", url)


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    return _URL.sub(lambda m: redact_url(m.group()), text)
