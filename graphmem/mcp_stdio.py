"""MCP over stdio that answers every request, also one whose JSON the SDK cannot read.

The SDK's stdio transport (:func:`mcp.server.stdio.stdio_server`) parses each line with
pydantic's JSON reader, which refuses a lone UTF-16 surrogate escape (``"\\ud800"``: an
unpaired half of an emoji, as some clients send after cutting a string) and turns bytes that are
not UTF-8 into U+FFFD. A refused line becomes an exception that the server only logs, so the
agent never gets an answer to its request and waits until its own timeout (issue 27, item 6);
a replaced byte would be stored as a character nobody wrote.

:func:`serve_stdio` runs the same server over the same transport, with stdin read here first:

- a line is decoded as UTF-8 with ``surrogateescape`` (an undecodable byte becomes a lone
  surrogate, never U+FFFD);
- a line that may hold a lone surrogate (an escape ``\\udXXX`` or such a byte) is read with
  Python's JSON reader, which keeps lone surrogates; when it is a request (it has an ``id``)
  and a string in its ``params`` holds one, the request is answered here at once and never
  reaches a tool: a ``tools/call`` gets a tool error naming the argument (``argument
  'messages.0.text': ...``, as :func:`graphmem.mcp_args.explain` names arguments), any other
  method a JSON-RPC error -32602 naming where in ``params`` it was;
- every other line goes to the SDK unchanged.

Nothing is written and no tool runs for a refused request. Tested by
tests/integration/test_identity_spelling.py (a raw JSON-RPC exchange with the server process).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from typing import Any, BinaryIO, cast

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

logger = logging.getLogger(__name__)

#: A JSON escape of a UTF-16 surrogate (paired or not) or a lone surrogate character (an
#: undecodable byte under ``surrogateescape``): the lines worth a second look.
_MAYBE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _lone_surrogate(value: Any, path: tuple[str, ...] = ()) -> tuple[tuple[str, ...], int, str] | None:
    """The first string in ``value`` (keys included) holding a lone surrogate, as (path,
    character position, the surrogate), or None. Python's JSON reader joins a valid pair into
    one character, so what is left is lone."""
    if isinstance(value, str):
        m = _SURROGATE.search(value)
        return (path, m.start(), m.group()) if m else None
    if isinstance(value, dict):
        for k, v in value.items():
            found = _lone_surrogate(k, path) or _lone_surrogate(v, (*path, str(k)))
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _lone_surrogate(v, (*path, str(i)))
            if found:
                return found
    return None


def refusal(line: str) -> types.JSONRPCResponse | types.JSONRPCError | None:
    """The answer to a request line that holds a lone surrogate in its ``params``, or None
    (the line is for the SDK: no surrogate, not a request, or not JSON at all).

    Args:
        line: one line of stdin, decoded with ``surrogateescape``.

    Returns:
        For ``tools/call``: a result with ``isError`` true whose text names the argument; for
        any other method: a JSON-RPC error -32602 (invalid params) naming the place.
    """
    if not _MAYBE.search(line):
        return None
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None  # a notification or a response: nobody waits for an answer
    rid = message["id"]
    if not isinstance(rid, (int, str)) or isinstance(rid, bool) or (isinstance(rid, str) and _SURROGATE.search(rid)):
        return None
    found = _lone_surrogate(message.get("params"))
    if found is None:
        return None
    path, at, ch = found
    code = ord(ch)
    what = (f"byte 0x{code - 0xDC00:02X} that is not UTF-8" if 0xDC80 <= code <= 0xDCFF and ch in line
            else f"lone UTF-16 surrogate U+{code:04X}")
    why = (f"{what} at character {at} (not valid Unicode text: send the full surrogate pair or the "
           "character itself); nothing was done")
    if message.get("method") == "tools/call" and len(path) > 1 and path[0] == "arguments":
        text = f"argument {'.'.join(path[1:])!r}: {why}"
        result = types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        return types.JSONRPCResponse(jsonrpc="2.0", id=rid,
                                     result=result.model_dump(by_alias=True, exclude_none=True))
    where = "params." + ".".join(path) if path else "params"
    return types.JSONRPCError(jsonrpc="2.0", id=rid,
                              error=types.ErrorData(code=types.INVALID_PARAMS, message=f"Invalid params: {where}: {why}"))


class RequestLines:
    """stdin as the SDK's transport reads it (an async iterator of lines), less the requests
    :func:`refusal` answers; those answers go out through the server's own write stream, so they
    are framed like every other message."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.replies: Any = None
        self.ready = anyio.Event()

    def answer_with(self, write_stream: Any) -> None:
        """Where refusals are sent: the transport's write stream (set once it exists)."""
        self.replies = write_stream
        self.ready.set()

    def __aiter__(self) -> RequestLines:
        return self

    async def __anext__(self) -> str:
        while True:
            raw = await anyio.to_thread.run_sync(self.stream.readline, abandon_on_cancel=True)
            if not raw:
                raise StopAsyncIteration
            line = raw.decode("utf-8", "surrogateescape")
            answer = refusal(line)
            if answer is None:
                return line
            await self.ready.wait()
            try:
                await self.replies.send(SessionMessage(answer))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise StopAsyncIteration from None
            logger.warning("refused request %s: a lone surrogate in its params", answer.id)


async def serve_stdio(server: Any) -> None:
    """Run ``server`` (an :class:`mcp.server.mcpserver.MCPServer`) over stdin and stdout until
    stdin closes, as ``server.run("stdio")`` does, with stdin read by :class:`RequestLines`."""
    lines = RequestLines(sys.stdin.buffer)
    async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
        lines.answer_with(write_stream)
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def run_stdio(server: Any) -> None:
    """Serve ``server`` over stdio (blocks until stdin closes)."""
    anyio.run(serve_stdio, server)
