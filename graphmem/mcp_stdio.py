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
- a line the SDK's reader refuses for any other reason (a lone surrogate outside ``params``, a
  raw control character inside a string, JSON nested deeper than it reads, JSON cut short,
  bytes that are no JSON at all) is answered here too: a request whose ``id`` Python's reader
  can find gets a JSON-RPC error -32600 naming the rule (never the line's content), anything
  else a parse error -32700 with ``id`` null; notifications and responses stay unanswered;
- every other line goes to the SDK unchanged.

Nothing is written and no tool runs for a refused request, and no line stops the server.
Tested by tests/integration/test_identity_spelling.py (a raw JSON-RPC exchange with the server
process).
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
from pydantic import ValidationError

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


def _sdk_refuses(line: str) -> str | None:
    """Why the SDK's JSON-RPC reader refuses ``line`` (its first error's rule, without the
    line's content), or None when it reads it."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as e:
        first = e.errors(include_input=False)[0]
        return str(first["msg"])
    return None


def _unreadable(line: str, why: str) -> types.JSONRPCError | None:
    """The answer to a line the SDK cannot read (``why``): -32600 for a request whose id can be
    found, -32700 with id null for a line that is not JSON, None for a notification or a
    response (nobody waits for an answer)."""
    try:
        message = json.loads(line, strict=False)  # a raw control character still gives the id
    except (ValueError, RecursionError):
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=types.PARSE_ERROR, message=f"Parse error: not a JSON-RPC message this server can read ({why}); "
                                            "nothing was done"))
    if isinstance(message, dict) and "method" in message and "id" not in message:
        return None
    if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
        return None
    rid = message.get("id") if isinstance(message, dict) else None
    if not isinstance(rid, (int, str)) or isinstance(rid, bool) or (isinstance(rid, str) and _SURROGATE.search(rid)):
        rid = None
    try:
        found = _lone_surrogate(message)
    except RecursionError:
        found = None
    if found is not None:
        path, at, ch = found
        why = f"lone UTF-16 surrogate U+{ord(ch):04X} at character {at} of {'.'.join(path) or 'a key'}"
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"Invalid Request: {why}; nothing was done"))


def refusal(line: str) -> types.JSONRPCResponse | types.JSONRPCError | None:
    """The answer to a request line the SDK must not get, or None (the line is for the SDK).

    Args:
        line: one line of stdin, decoded with ``surrogateescape``.

    Returns:
        For a lone surrogate in ``params``: on ``tools/call`` a result with ``isError`` true
        whose text names the argument, on any other method a JSON-RPC error -32602 (invalid
        params) naming the place. For a line the SDK's reader refuses otherwise: a JSON-RPC
        error (:func:`_unreadable`); None for a notification or response it refuses.
    """
    if not line.strip():
        return None
    if not _MAYBE.search(line):
        why = _sdk_refuses(line)
        return None if why is None else _unreadable(line, why)
    try:
        message = json.loads(line)
        found = _lone_surrogate(message.get("params")) if isinstance(message, dict) else None
    except (ValueError, RecursionError):
        message, found = None, None
    rid = message.get("id") if isinstance(message, dict) and "method" in message else None
    if (found is None or not isinstance(rid, (int, str)) or isinstance(rid, bool)
            or (isinstance(rid, str) and _SURROGATE.search(rid))):
        why = _sdk_refuses(line)  # not a request with a lone surrogate in its params
        return None if why is None else _unreadable(line, why)
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
            logger.warning("answered request %s here: the SDK cannot read it", answer.id)


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
