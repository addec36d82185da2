"""Safe defaults for anything graphmem serves on a network (``graphmem serve``, ``graphmem mcp``).

One rule, shared by the HTTP API and the MCP server: listening on an address other than
loopback without an API key is refused, unless the operator says so explicitly
(``--allow-no-key``), in which case a loud warning is logged. Keys are compared in constant
time (:func:`keys_match`).
"""

from __future__ import annotations

import ipaddress
import logging
import secrets

from graphmem.core.errors import InvalidInputError

logger = logging.getLogger(__name__)

_LOOPBACK_NAMES = {"localhost", "ip6-localhost", "ip6-loopback"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP literal or a name) only listens on this machine.

    ``0.0.0.0``, ``::`` and ``""`` (every interface) are not loopback; a name other than
    ``localhost`` is treated as reachable from outside.
    """
    h = host.strip().strip("[]").lower()
    if h in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, api_key: str, *, allow_no_key: bool = False, what: str = "graphmem") -> bool:
    """Refuse to serve on a non-loopback address without an API key.

    Args:
        host: the address to listen on.
        api_key: the configured key ("" = none).
        allow_no_key: the operator's explicit override; logs a warning instead of refusing.
        what: name of the server, for the message.

    Returns:
        True when the server will be open to the network without a key (the override was
        used; the caller should say so loudly), else False.

    Raises:
        InvalidInputError: ``host`` is not loopback, no key is set and no override was given
            (field ``host``).
    """
    if is_loopback(host) or api_key:
        return False
    if allow_no_key:
        logger.warning(open_warning(host, what))
        return True
    raise InvalidInputError(
        f"refusing to serve {what} on non-loopback address {host!r} without an API key: set "
        "GRAPHMEM_API_KEY (clients then send it as X-API-Key), bind 127.0.0.1, or pass "
        "--allow-no-key to accept an open server",
        field="host",
    )


def open_warning(host: str, what: str = "graphmem") -> str:
    """The warning printed when a server runs on a non-loopback address without a key."""
    return (f"{what} is serving on {host} WITHOUT an API key (--allow-no-key): anyone who can "
            "reach this address can read and erase every group's memory")


def keys_match(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented key with the configured one (False for None)."""
    if given is None:
        return False
    return secrets.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
