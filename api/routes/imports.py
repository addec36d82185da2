"""``POST /groups/{group_id}/imports``: a platform chat export (Slack, Discord, Telegram,
WhatsApp) into the group, parsed by the same loaders as ``graphmem ingest --format``
(docs/import.md) and written by the same ingest as every other path."""

from __future__ import annotations

import base64
import binascii
import io
import os
import tempfile
import zipfile
from pathlib import Path as FilePath

from fastapi import APIRouter

from api.deps import EmbedderDep, SettingsDep, StoreDep, GroupId
from api.openapi import errors_of
from graphmem.core.errors import ConflictError, InvalidInputError
from graphmem.core.wire import ChatImportCreate, ChatImportPublic, RejectPublic
from graphmem.verbatim.ingest import ingest_conversations
from loaders import Reject, detect_format, load_conversations

router = APIRouter(prefix="/groups/{group_id}", tags=["groups"])

MAX_REJECTS_SHOWN = 100
"""Rejected records returned in one response (``rejects_truncated`` says when there were more)."""


def _check_unpacked(data: bytes, limit_mb: float) -> None:
    """Refuse a zip whose members would unpack to more than ``limit_mb`` MB (a zip bomb: the
    request limit bounds the zip, not what it holds) or that is no zip at all."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            unpacked = sum(i.file_size for i in z.infolist())
    except zipfile.BadZipFile:
        raise InvalidInputError("content_base64 is not a zip file", source="api", field="content_base64") from None
    if unpacked > limit_mb * 1024 * 1024:
        raise InvalidInputError(
            f"the zip unpacks to {unpacked / 1024 / 1024:.0f} MB, over GRAPHMEM_API_MAX_IMPORT_UNPACKED_MB "
            f"({limit_mb:.0f} MB): import it with `graphmem ingest` where the file is", source="api",
            field="content_base64")


def _upload(body: ChatImportCreate, folder: FilePath, limit_mb: float) -> tuple[FilePath, str]:
    """Write the uploaded export into ``folder`` (0700, removed after the request) as the file a
    loader reads; returns its path and the name errors call it by."""
    if body.content_base64 is not None:
        try:
            data = base64.b64decode(body.content_base64, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInputError("not valid base64", source="api", field="content_base64") from None
        name = "upload.zip"
        _check_unpacked(data, limit_mb)
    else:
        data = (body.content or "").encode("utf-8", "surrogatepass")
        name = "upload.json" if (body.content or "").lstrip("\ufeff \t\r\n")[:1] in ("{", "[") else "upload.txt"
    path = folder / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path, name


def _named(text: str, path: FilePath, name: str) -> str:
    """``text`` with the temporary file's path replaced by the name the caller knows."""
    return text.replace(str(path), name)


def _renamed(e: InvalidInputError, path: FilePath, name: str) -> InvalidInputError:
    """``e`` naming the uploaded file as the caller knows it, never the server's temporary path."""
    source = _named(e.source, path, name) if e.source and e.source != "api" else e.source
    return InvalidInputError(_named(e.reason, path, name), source=source, record=e.record, field=e.field)


@router.post("/imports", response_model=ChatImportPublic, summary="Import a Slack, Discord, Telegram or WhatsApp export",
             operation_id="import_chat", responses=errors_of(401, 403, 408, 409, 413, 415, 422, 503))
def post_import(
    group_id: GroupId,
    body: ChatImportCreate, store: StoreDep, embedder: EmbedderDep, settings: SettingsDep,
) -> ChatImportPublic:
    """Import one chat export into the group: every message stored verbatim with the platform's
    ids, speakers, threads, edits, attachments, mentions, bots and system lines, exactly as
    ``graphmem ingest --format <format>`` stores it (docs/import.md). Idempotent: the same
    export again writes nothing; a later export of the same chat appends what is new and
    stores changed texts as edits.

    422 names the record and field of a bad record (nothing is written), unless
    ``on_bad_record=skip``: then the good records are written and the bad ones returned in
    ``rejects``. 409 as for ``POST /messages``. A whole workspace export larger than the
    request limit (413) is imported with ``graphmem ingest`` where the file is.
    """
    with tempfile.TemporaryDirectory(prefix="graphmem-import-") as tmp:
        path, name = _upload(body, FilePath(tmp), settings.api_max_import_unpacked_mb)
        rejects: list[Reject] | None = [] if body.on_bad_record == "skip" else None
        if body.content_base64 is not None and body.format in ("discord", "telegram"):
            raise InvalidInputError(
                f"a {body.format} export is a JSON file, not a zip: send its text as content",
                source="api", field="content_base64")
        try:
            try:
                fmt = detect_format(path) if body.format == "auto" else body.format
            except InvalidInputError as e:
                if e.field != "format":
                    raise
                raise InvalidInputError(
                    "cannot tell the format: the content is not a Slack, Discord, Telegram or WhatsApp export; "
                    "name it in format (slack, discord, telegram, whatsapp)", source="api", field="format") from None
            if fmt not in ("slack", "discord", "telegram", "whatsapp"):
                raise InvalidInputError(f"the content is a {fmt} file, not a chat export", source="api",
                                        field="format")
            conversations = load_conversations(path, fmt, group=group_id, rejects=rejects)
        except InvalidInputError as e:
            raise _renamed(e, path, name) from None
        shown = [RejectPublic(source=_named(r.source, path, name), record=r.record, field=r.field,
                              rule=_named(r.rule, path, name), raw=r.raw)
                 for r in (rejects or [])[:MAX_REJECTS_SHOWN]]
    try:  # the ingest checks the records again (text length, the group id): its errors name the file too
        summary = ingest_conversations(store, conversations, embedder, batch_size=settings.write_batch_size,
                                       exact_max=settings.vector_exact_max)
    except InvalidInputError as e:
        raise _renamed(e, path, name) from None
    except ConflictError as e:  # names the record's source: the file as the caller knows it
        raise ConflictError(_named(str(e), path, name)) from None
    return ChatImportPublic(
        group_id=group_id, format=fmt, messages_written=summary.messages_written,
        messages_edited=summary.messages_edited, messages_skipped=summary.messages_skipped,
        persons_created=summary.persons_created, sessions_created=summary.sessions_created,
        group_created=bool(summary.groups_created), messages_rejected=len(rejects or []),
        channels_renamed=summary.channels_renamed,
        rejects=shown, rejects_truncated=len(rejects or []) > MAX_REJECTS_SHOWN,
    )
