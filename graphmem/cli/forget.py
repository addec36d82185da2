"""``graphmem forget``: erase one person's data from a group (what ``DELETE
/groups/{g}/persons/{p}`` does), or the whole group (``--whole-group``, what ``DELETE
/groups/{g}`` does)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from graphmem.cli.common import emit_json, open_runtime, out
from graphmem.core.errors import InvalidInputError


def forget(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    person: Annotated[Optional[str], typer.Option("--person", "-p", help=(
        "Person id (speaker_id, else display name), in any spelling of it: NFC or NFD, any case, "
        "surrounding spaces."))] = None,
    whole_group: Annotated[bool, typer.Option(
        "--whole-group", help="Erase the whole group instead of one person.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print what was erased as JSON.")] = False,
) -> None:
    """Erase one person's data from a group, or the whole group (idempotent).

    With --person: deletes their messages, every record that holds their words whoever its
    source (written from their messages, or quoting them), the records they own or are the
    source of, their words in the neighbours' search documents, the first-load importer's CSV
    files of the group, and the Person node. Running it again erases nothing. With
    --whole-group: deletes every message, person, session, derived record and Writer segment
    of the group, the Group node and the importer's CSV files of it, in bounded transactions
    (writes to the group are refused from the first one on; its open derive jobs are
    cancelled). Exit status 1 for an unknown group, or a person id that names nobody but
    resembles a member (with a "did you mean")."""
    if (person is None) == (not whole_group):
        raise InvalidInputError("give either --person P or --whole-group", field="person")
    if whole_group:
        from graphmem.groups.service import erase_group

        with open_runtime(models=False) as rt:
            erased = erase_group(rt.store, group, settings=rt.settings, missing_ok=False)
        if as_json:
            emit_json(erased.model_dump())
        else:
            out.print(
                f"group {group}: {erased.nodes_deleted} nodes erased in {erased.batches} transactions, "
                f"{len(erased.jobs_cancelled)} open derive jobs cancelled, "
                f"{len(erased.import_files_removed)} importer files removed", highlight=False, soft_wrap=True)
        return
    from graphmem.groups.service import forget_person

    assert person is not None
    with open_runtime(models=False) as rt:
        summary = forget_person(rt.store, group, person, settings=rt.settings)
    if as_json:
        emit_json(summary.model_dump())
    else:
        out.print(
            f"{', '.join(summary.person_ids) or person} in {group}: {summary.messages_deleted} messages and {summary.records_deleted} "
            f"records erased ({summary.records_with_their_words} of other sources held their words), "
            f"{summary.chains_repaired} chains repaired, {summary.segments_redacted} segment reports "
            f"redacted, {len(summary.import_files_removed)} importer files removed, person "
            f"{'erased' if summary.person_deleted else 'not found'}"
        )
