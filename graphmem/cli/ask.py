"""``graphmem ask``: the query pipeline (Project, System 1, System 2, Compose, Answer)."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from graphmem.cli.common import emit_json, err, open_runtime, out, terminal_safe
from graphmem.core.config import get_settings
from graphmem.core.errors import InvalidInputError
from graphmem.core.tokens import TOKENIZER


def ask_command(
    question: Annotated[str, typer.Argument(help="The question, free text.")],
    group: Annotated[str, typer.Option("--group", "-g", help="Group id to ask about.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")] = False,
    no_ask: Annotated[bool, typer.Option("--no-ask", help="Skip Sufficiency/ASK (no supplementary query).")] = False,
    s1_k: Annotated[Optional[int], typer.Option("--s1-k", help="System 1 top-k (default GRAPHMEM_S1_TOP_K, 10).")] = None,
    s2_k: Annotated[Optional[int], typer.Option("--s2-k", help="System 2 records per owner row (default 2).")] = None,
    source_k: Annotated[Optional[int], typer.Option("--source-k", help="System 2 source supplement per person row (default 1).")] = None,
    as_of: Annotated[Optional[str], typer.Option("--as-of", help="Answer from the state at this ISO-8601 time.")] = None,
    tense: Annotated[Optional[str], typer.Option("--tense", help="Force head|full instead of Project's choice.")] = None,
    evidence: Annotated[bool, typer.Option("--evidence/--no-evidence", help="Print the composed evidence (always "
                                                                           "printed when there is no answer model: "
                                                                           "it is then the result).")] = True,
    view: Annotated[str, typer.Option("--view", help="With --json: full (everything, default) or compact (the answer, "
                                                     "each cited message and record once, as the MCP ask).")] = "full",
) -> None:
    """Answer a question from both memory tracks (Project, System 1, System 2, Compose, Answer).

    Without a configured answer model (GRAPHMEM_LLM_BASE_URL + GRAPHMEM_LLM_MODEL) it still runs
    Project (deterministic fallback) and both retrieval paths and prints the composed evidence.
    """
    from graphmem.query import ask, budgets_from

    if tense is not None and tense not in ("head", "full"):
        raise InvalidInputError("--tense must be head or full", field="tense")
    if view not in ("full", "compact"):
        raise InvalidInputError("--view must be full or compact", field="view")
    if view != "full" and not as_json:
        err.print("note: --view shapes the --json output; the text output is the same for every view",
                  markup=False, highlight=False, soft_wrap=True)
    with open_runtime(warm=True) as rt:
        budgets = budgets_from(rt.settings, ask_enabled=False if no_ask else None, s1_k=s1_k, s2_k=s2_k,
                               source_k=source_k)
        result = ask(rt, group, question, budgets=budgets, as_of=as_of, tense=tense)  # type: ignore[arg-type]  # checked above
    if as_json:
        emit_json((result.compact() if view == "compact" else result).model_dump(mode="json"))
        return
    p = result.projection
    rows = ", ".join(p.names.get(r, r) for r in p.rows)
    views = "; ".join(f"{p.names.get(v.source_id, v.source_id)} -> {p.names.get(v.owner_id, v.owner_id)}" for v in p.views)
    out.print(
        f"projection ({p.method}): issue={p.issue!r} rows=[{rows}] tense={p.tense}"
        + (f" views=[{views}]" if views else "") + (f" as_of={result.as_of}" if result.as_of else ""),
        markup=False, highlight=False,
    )
    if result.ask_query:
        out.print(f"ASK query: {result.ask_query!r}", markup=False, highlight=False)
    if evidence or result.answer is None:
        sys.stdout.write("\n" + terminal_safe(result.evidence.strip()) + "\n\n")
    if result.answer is not None:
        out.print("answer:", style="bold")
        sys.stdout.write(terminal_safe(result.answer.strip()) + "\n")
    if result.note:
        err.print(f"note: {result.note}", markup=False, highlight=False, soft_wrap=True)
    calls = result.model_calls
    tokens = sum(u.prompt_tokens for u in result.usage.values())
    wall = sum(result.timings_s.values())
    err.print(
        f"{_count(len(result.excerpts), 'excerpt')}, {_count(len(result.rows), 'row')}, "
        f"{_count(len(result.record_ids), 'record')}, {_count(len(result.message_ids), 'message id')}; "
        f"{_count(calls, 'model call')}, {_count(tokens, 'prompt token')}; "
        f"{wall:.2f} s", markup=False, highlight=False, soft_wrap=True,
    )
    if result.evidence_tokens:
        parts = result.evidence_tokens
        err.print(
            f"evidence: {_count(parts.get('total', 0), 'token')} (verbatim {parts.get('verbatim', 0)}, "
            f"structured {parts.get('structured', 0)}, question {parts.get('question', 0)}; {TOKENIZER})",
            markup=False, highlight=False, soft_wrap=True,
        )


def _count(n: int, noun: str) -> str:
    """``"1 row"``, ``"2 rows"``: a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
