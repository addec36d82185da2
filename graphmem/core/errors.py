"""Domain errors. Every failure raised by graphmem derives from :class:`GraphMemError`.

The API maps them to HTTP statuses: NotFoundError -> 404, ConflictError -> 409,
InvalidInputError -> 422, ForbiddenError -> 403, StoreUnavailableError / LLMError -> 503.
"""

from __future__ import annotations


class GraphMemError(Exception):
    """Root of every graphmem error."""


class InvalidInputError(GraphMemError, ValueError):
    """Input that cannot be accepted.

    Attributes:
        source: file path or other origin of the input ("" when not a file).
        record: the record that is wrong (line number, message id, index), or "".
        field: the offending field name, or "".
        reason: the rule broken, without the source, record and field.
        value: a short ``repr`` of the refused value, or None. Never part of the message (the
            API and MCP bodies are the message: they name the field and the rule, never echo
            the input); the command line adds it for the user who typed it.
    """

    def __init__(self, message: str, *, source: str = "", record: str = "", field: str = "",
                 value: object = None) -> None:
        self.reason = message
        self.source = source
        self.record = record
        self.field = field
        self.value = None if value is None else _short(value)
        where = ", ".join(
            part
            for part in (
                # "api" marks a request body (its records say "request message N"), not a file
                f"file {source}" if source and source != "api" else "",
                f"record {record}" if record else "",
                f"field '{field}'" if field else "",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message)


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class NotFoundError(GraphMemError, LookupError):
    """A group, person, message or record that does not exist.

    Attributes:
        missing_group: the group id when the group itself does not exist (:func:`no_group`),
            else "": a face that knows the caller's scope adds a "did you mean" hint
            (:func:`graphmem.groups.service.group_hint`).
    """

    missing_group: str = ""


def no_group(group_id: str) -> NotFoundError:
    """The error of every read of a group that does not exist: ``no group 'x'``.

    A group id holding ``/`` can never exist (the id grammar, :mod:`graphmem.core.limits`, refuses it
    at ingest in every entry point); the message then says so, so that a caller of the
    library, the CLI, MCP or the HTTP API (where such an id arrives as ``%2F``) learns why.
    """
    if "/" in group_id:
        return NotFoundError(f"no group {group_id!r}: group ids contain no '/' (ingest refuses them)")
    error = NotFoundError(f"no group {group_id!r}")
    error.missing_group = group_id
    return error


class ForbiddenError(GraphMemError, PermissionError):
    """The caller's key does not reach this group, or is read-only and the call writes.

    Said the same way for a group that exists and one that does not, so a scoped key learns
    nothing about groups outside its scope (:mod:`graphmem.access`).
    """


class ConflictError(GraphMemError):
    """The request conflicts with stored state (e.g. a derivation already running)."""


def group_erasing(group_id: str) -> ConflictError:
    """The error of a write to a group that is being erased (``cypher/groups/fence_group.cypher``,
    :func:`graphmem.groups.service.erase_group`): nothing is written. A crash during an erasure
    leaves the group marked; erasing it again finishes the job."""
    return ConflictError(
        f"group {group_id!r} is being erased: nothing was written (retry once the erasure is done; "
        "if an erasure was interrupted, erase the group again to finish it)")


class EmbeddingSpaceError(ConflictError):
    """A group's stored vectors were written by another model or backend than this process
    embeds with (``GRAPHMEM_EMBED_MODEL`` / ``GRAPHMEM_EMBED_BACKEND``): mixing the two in one
    group would rank by meaningless cosines. ``stored`` and ``current`` describe the two spaces;
    the message says how to re-embed (``graphmem embed --group G --rebuild``)."""

    def __init__(self, message: str, *, group_id: str = "", stored: str = "", current: str = "") -> None:
        super().__init__(message)
        self.group_id, self.stored, self.current = group_id, stored, current


class ModelFileError(GraphMemError):
    """A model file the embedder needs is missing, corrupt or unreadable; ``path`` names it."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class StoreUnavailableError(GraphMemError):
    """Neo4j cannot be reached or refused the operation."""


class LocalServerError(GraphMemError):
    """The local Neo4j server could not be assembled, started or stopped."""


class ExtraMissingError(GraphMemError):
    """An optional extra the call needs is not installed (``extra`` names it: ``pip install
    'graphmem[<extra>]'``); the HTTP API answers 501."""

    def __init__(self, message: str, *, extra: str = "") -> None:
        super().__init__(message)
        self.extra = extra


class LLMError(GraphMemError):
    """The language-model endpoint failed after retries, or is not configured."""
