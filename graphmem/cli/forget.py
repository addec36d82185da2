"""``graphmem forget``: erase one person's data from a group (what ``DELETE
/groups/{g}/persons/{p}`` does)."""

from __future__ import annotations

from typing import Annotated

import typer

from graphmem.cli.common import emit_json, open_runtime, out


def forget(
    group: Annotated[str, typer.Option("--group", "-g", help="Group id.")],
    person: Annotated[str, typer.Option("--person", "-p", help=(
        "Person id (speaker_id, else display name), in any spelling of it: NFC or NFD, any case, "
        "surrounding spaces."))],
    as_json: Annotated[bool, typer.Option("--json", help="Print what was erased as JSON.")] = False,
) -> None:
    """Erase one person's data from a group (idempotent).

    Deletes their messages, every record that holds their words whoever its source (written
    from their messages, or quoting them), the records they own or are the source of, their
    words in the neighbours' search documents, the first-load importer's CSV files of the
    group, and the Person node. Running it again erases nothing. Exit status 1 for an unknown
    group, or a person id that names nobody but resembles a member (with a "did you mean")."""
    from graphmem.groups.service import forget_person

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
