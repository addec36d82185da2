"""uvicorn's h11 protocol with a limit on slow request headers (``graphmem serve``, ``graphmem mcp``).

uvicorn has no such limit of its own: its ``timeout_keep_alive`` only covers an idle kept-alive
connection, and any byte received resets it, so a client trickling one header byte at a time
holds a connection forever. :class:`TimedH11Protocol` closes a connection whose request headers
are not complete within ``GRAPHMEM_API_HEADER_TIMEOUT_S`` seconds (default 10) of the
connection opening, or of the previous response on a kept-alive connection. Slow *bodies* are
answered 408 by :class:`graphmem.boundary.Boundary`. The 400 uvicorn answers itself to a request
it cannot parse carries the headers the boundary gives every response.

Given to uvicorn by import string (``http=PROTOCOL``), so it also reaches worker processes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from graphmem.boundary import ALWAYS_HEADERS
from graphmem.core.config import get_settings

#: The import string for ``uvicorn.run(http=...)``.
PROTOCOL = "graphmem.boundary_h11:TimedH11Protocol"


class TimedH11Protocol(H11Protocol):
    """:class:`uvicorn.protocols.http.h11_impl.H11Protocol` plus the header time limit."""

    _header_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        limit = get_settings().api_header_timeout_s
        self._header_timer = self.loop.call_later(limit, self._headers_late, self.cycle)

    def _headers_late(self, cycle_before: Any) -> None:
        if self.cycle is cycle_before and not self.transport.is_closing():
            self.transport.close()  # no new request began: its headers never completed

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """The 400 uvicorn answers itself to a request it cannot parse (a bad request line, a
        malformed header, no Host on HTTP/1.1), which never reaches the app: with the headers
        :class:`graphmem.boundary.Boundary` gives every response (``nosniff``, and no other site
        may embed it), so "every response" holds (an attacker re-test found it without them)."""
        headers = [(b"content-type", b"text/plain; charset=utf-8"), *ALWAYS_HEADERS, (b"connection", b"close")]
        for event in (h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                      h11.Data(data=msg.encode("ascii", "replace")), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event))
        self.transport.close()
