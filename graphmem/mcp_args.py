"""The typed arguments of graphmem's MCP tools, and how a refused argument is said.

Every tool argument of :mod:`graphmem.mcp_server` is one of the ``Annotated`` types below: a
pydantic ``Field`` with a description written for an agent, the bounds (``minimum`` /
``maximum``, ``minLength``), ``format: "date-time"`` for ISO-8601 times, and ``strict``
validation: ``k: "3"`` or ``k: true`` is refused, never read as 3 or 1 (an integer argument
takes a JSON integer, a flag takes ``true``/``false``). The SDK builds each tool's argument
model from them; :func:`finish_tools` then makes every model strict and closed (an unknown
argument is refused), turns off the SDK's reading of JSON inside strings, dedents the
descriptions, and installs :class:`ArgumentsTool`, which answers a refused call with one
sentence naming the argument and what it accepts (:func:`explain`)::

    argument 'k' must be an integer from 1 to 100 (got a string)
    unknown argument 'asOf' (did you mean 'as_of'?); ask takes group_id, question, as_of, ...
"""

from __future__ import annotations

import difflib
import inspect
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import Field, ValidationError, WithJsonSchema

from graphmem.core import limits, paging
from graphmem.core.wire import NewMessage

__all__ = [
    "ArgumentsTool", "AsOf", "Cursor", "CypherParams", "CypherQuery", "EvidenceOnly", "ExportBytes", "ExportCursor",
    "Expand", "GroupId", "GroupsLimit", "K", "MaxBytes", "MaxRows", "MemoryLimit", "MemoryMode", "MessageId",
    "Messages", "Name", "PersonId", "ProvenanceLimit", "Question", "RecordId", "ResultBytes", "RosterLimit",
    "SearchMode", "SearchQuery", "Tense", "TextOffset", "TimeoutS", "View", "WithDerived", "explain", "finish_tools",
]

#: An ISO-8601 instant as a JSON-schema string with ``format: date-time``.
_DateTime = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]

GroupId = Annotated[str, Field(
    min_length=1, max_length=limits.MAX_ID_CHARS, strict=True,
    description="The group (one chat's memory space) to use, e.g. \"trip\". Every call names one group.")]
PersonId = Annotated[str, Field(
    min_length=1, max_length=limits.MAX_ID_CHARS, strict=True,
    description="The person's id as the roster tool lists it (their speaker_id, else their display name), "
                "e.g. \"ben\".")]
RecordId = Annotated[str, Field(
    min_length=1, max_length=limits.MAX_ID_CHARS, strict=True,
    description="A derived record's id, as ask or person_memory return it (record_ids, records[].id).")]
Question = Annotated[str, Field(
    min_length=1, max_length=limits.MAX_QUESTION_CHARS, strict=True,
    description="The question in plain language, e.g. \"Which trail did Ben prefer?\" (at most 4000 characters).")]
SearchQuery = Annotated[str, Field(
    min_length=1, max_length=limits.MAX_QUESTION_CHARS, strict=True,
    description="What to look for: words or a sentence, e.g. \"campsite booking\".")]
K = Annotated[int, Field(ge=1, le=limits.MAX_S1_K, strict=True,
                         description="How many messages to return, best first: an integer from 1 to 100.")]
Expand = Annotated[int, Field(ge=0, le=5, strict=True,
                              description="Neighbouring turns to add around each hit (context): 0 to 5.")]
SearchMode = Annotated[Literal["hybrid", "fulltext", "vector"], Field(
    description="Ranking: \"hybrid\" (words and meaning fused; the default), \"fulltext\" (words only) "
                "or \"vector\" (meaning only).")]
AsOf = Annotated[_DateTime | None, Field(
    description="Answer from the state that held at this ISO-8601 time, e.g. \"2026-04-01T00:00:00Z\" "
                "(a time without a zone is UTC); leave it out for the current state.")]
Tense = Annotated[Literal["head", "full"] | None, Field(
    description="Force \"head\" (the current state of each record) or \"full\" (how it changed over time); "
                "leave it out to let the question decide.")]
EvidenceOnly = Annotated[bool, Field(
    strict=True, description="true: skip the answer model and return only the evidence (faster; the answer is null).")]
View = Annotated[Literal["compact", "full"], Field(
    description="\"compact\" (the default): the answer, each cited message once (id, speaker, time, text) "
                "and each derived record once (id, layer, owner, source, status). \"full\": everything the "
                "pipeline produced (projection, excerpts, memory rows, budgets, timings) for analysis.")]
MemoryMode = Annotated[Literal["head", "full"], Field(
    description="\"head\" (the default): the current state of each record; \"full\": every state, oldest first.")]
Name = Annotated[str, Field(
    max_length=limits.MAX_NAME_CHARS, strict=True,
    description="The group's display name, set when the group is created (optional).")]
Messages = Annotated[list[NewMessage], Field(
    min_length=1, max_length=limits.MAX_MESSAGES_PER_REQUEST,
    description="1 to 10,000 messages; each needs id, speaker, text and ts (ISO-8601); session defaults to "
                "\"main\"; speaker_id, channel and reply_to are optional.")]
CypherQuery = Annotated[str, Field(
    min_length=1, strict=True,
    description="One read-only Cypher statement; pin every node it starts from to the group, e.g. "
                "\"MATCH (m:Message {group_id: $group_id}) RETURN m.id, m.text LIMIT 5\".")]
CypherParams = Annotated[dict[str, Any] | None, Field(
    description="Values for the query's $parameters (not group_id, which graphmem binds), e.g. {\"who\": \"ben\"}.")]
MaxRows = Annotated[int, Field(ge=1, le=10_000, strict=True, description="Rows returned at most: 1 to 10000.")]
ResultBytes = Annotated[int, Field(
    ge=paging.MIN_RESULT_BYTES, le=paging.MAX_RESULT_BYTES, strict=True,
    description="Bytes of JSON the result holds at most: 1000 to 1000000 (default 64000). A longer list comes "
                "in pages: truncated is true and next_cursor reads on.")]
MaxBytes = ResultBytes
Cursor = Annotated[str | None, Field(
    max_length=4100, description="The next_cursor of the previous page (with the same other arguments); "
                                 "leave it out for the first page.")]
RosterLimit = Annotated[int, Field(ge=1, le=paging.MAX_LIMITS["roster"], strict=True,
                                   description="People on one page: 1 to 1000.")]
GroupsLimit = Annotated[int, Field(ge=1, le=paging.MAX_LIMITS["groups"], strict=True,
                                   description="Groups on one page: 1 to 1000.")]
MemoryLimit = Annotated[int, Field(ge=1, le=paging.MAX_LIMITS["person_memory"], strict=True,
                                   description="Record chains and records on one page: 1 to 500.")]
ProvenanceLimit = Annotated[int, Field(ge=1, le=paging.MAX_LIMITS["provenance"], strict=True,
                                       description="Messages and chain states on one page: 1 to 1000.")]
MessageId = Annotated[str, Field(
    min_length=1, max_length=limits.MAX_ID_CHARS, strict=True,
    description="A message id as search_messages, ask or record_provenance return it, e.g. \"m12\".")]
TextOffset = Annotated[int, Field(
    ge=0, le=limits.MAX_TEXT_CHARS, strict=True,
    description="Where the text starts, in characters: 0, or next_text_offset of the previous call.")]
ExportCursor = Annotated[str | None, Field(
    max_length=1000, description="The next_cursor of the previous export page; leave it out for the first page.")]
WithDerived = Annotated[bool, Field(
    strict=True, description="true: also export the Writer segments and derived records (System 2).")]
ExportBytes = Annotated[int, Field(ge=1_000, le=paging.MAX_RESULT_BYTES, strict=True,
                                   description="Bytes of JSON Lines a page holds at most: 1000 to 1000000 "
                                               "(default 64000); one message longer than that is a page of its own.")]
TimeoutS = Annotated[float, Field(gt=0, le=60, strict=True,
                                  description="Seconds the query may run, more than 0 and at most 60.")]


# ----------------------------------------------------------------------------- errors
_KIND = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
         "array": "a list", "object": "an object", "null": "null"}


def _given(value: Any) -> str:
    """What kind of JSON value was sent (never the value itself)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    for kind, name in ((str, "a string"), (int, "an integer"), (float, "a number"), (list, "a list"),
                       (dict, "an object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        resolved: dict[str, Any] = root.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return resolved
    return schema


def expected(schema: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """What a JSON-schema property accepts, in words: ``"an integer from 1 to 100"``,
    ``"one of 'head', 'full'"``, ``"an ISO-8601 date-time string or null"``."""
    root = root or schema
    schema = _resolve(schema, root)
    if "anyOf" in schema:
        return " or ".join(expected(s, root) for s in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type", "")
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        words = _KIND[kind]

        def num(x: float) -> str:  # 1000000, not 1e+06
            return str(int(x)) if float(x).is_integer() else f"{x:g}"

        if lo is not None and hi is not None:
            more = "more than " if "exclusiveMinimum" in schema else "from "
            return f"{words} {more}{num(lo)} to {num(hi)}"
        if lo is not None:
            return f"{words} of at least {num(lo)}"
        return words
    if kind == "string":
        if schema.get("format") == "date-time":
            return "an ISO-8601 date-time string"
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if lo and hi:
            return f"a string of {lo} to {hi} characters"
        if lo:
            return "a non-empty string"
        if hi:
            return f"a string of at most {hi} characters"
        return "a string"
    if kind == "array":
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        items = _resolve(schema.get("items", {}), root)
        what = "messages" if items.get("title") == "NewMessage" else "items"
        if lo is not None and hi is not None:
            return f"a list of {lo} to {hi} {what}"
        return f"a list of {what}"
    if kind == "object":
        return "an object"
    return _KIND.get(str(kind), "a value")


def _close(name: str, names: list[str]) -> str:
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not near:
        lowered = {n.replace("_", "").lower(): n for n in names}
        hit = lowered.get(name.replace("_", "").replace("-", "").lower())
        near = [hit] if hit else []
    return f" (did you mean {near[0]!r}?)" if near else ""


def explain(tool: str, error: ValidationError, schema: dict[str, Any]) -> str:
    """One sentence for the first refused argument of a tool call (the others are counted).

    Names the argument (``messages.3.ts`` for a field inside one message) and what it accepts,
    read from the tool's advertised input schema; says what kind of value came, never the value.
    """
    errors = error.errors()
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ())]
    name = ".".join(loc) or "arguments"
    props: dict[str, Any] = schema.get("properties", {})
    kind = first.get("type", "")
    if kind == "extra_forbidden":
        text = (f"unknown argument {name!r}{_close(loc[-1], list(props)) if len(loc) == 1 else ''}; "
                f"{tool} takes {', '.join(props)}")
        if len(loc) > 1:  # inside a message
            item = _resolve(schema.get("$defs", {}).get("NewMessage", {}), schema)
            text = (f"unknown field {name!r}{_close(loc[-1], list(item.get('properties', {})))}; "
                    f"a message takes {', '.join(item.get('properties', {}))}")
    elif kind == "missing":
        text = f"argument {name!r} is required ({expected(props.get(loc[0], {}), schema)})" if len(loc) == 1 \
            else f"argument {name!r} is required"
    elif len(loc) == 1 and loc[0] in props:
        got = "" if kind.startswith(("greater", "less", "too_", "string_too")) else f" (got {_given(first.get('input'))})"
        text = f"argument {name!r} must be {expected(props[loc[0]], schema)}{got}"
    else:  # inside a message: pydantic's rule text, without the value
        text = f"argument {name!r}: {first.get('msg', 'invalid value')}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return text


class _PlainArguments(FuncMetadata):
    """The SDK's argument handling without its reading of JSON inside strings (``"[1]"`` as a
    list): an argument is taken as the JSON type it was sent as."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return data


class ArgumentsTool(Tool):
    """A tool whose refused arguments come back as one readable sentence (:func:`explain`)
    instead of the validation dump."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            self.fn_metadata.arg_model.model_validate(arguments)
        except ValidationError as e:
            raise ToolError(explain(self.name, e, self.parameters)) from e
        return await super().run(arguments, context, convert_result)


def finish_tools(server: Any) -> None:
    """Make every tool of ``server`` strict, closed and readable (see the module docstring).
    An argument without a description is left as it is here (the server still starts);
    tests/integration/test_mcp_schemas.py fails on it."""
    for tool in server._tool_manager.list_tools():
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_config["strict"] = True
        model.model_rebuild(force=True)
        meta = tool.fn_metadata
        tool.fn_metadata = _PlainArguments(arg_model=model, output_schema=meta.output_schema,
                                           output_model=meta.output_model, wrap_output=meta.wrap_output)
        schema = model.model_json_schema(by_alias=True)
        schema["additionalProperties"] = False
        for spec in schema.get("properties", {}).values():
            spec.pop("title", None)
        schema.pop("title", None)
        tool.parameters = schema
        tool.description = inspect.cleandoc(tool.description)
        tool.__class__ = ArgumentsTool
