"""``graphmem eval``: benchmark runs, top-k grids, reports and verdict comparisons.

Commands:

- ``graphmem eval run --bench B --data PATH --system S [...]`` (also ``graphmem eval --bench ...``):
  one system over one benchmark into a resumable run folder, then its report.
- ``graphmem eval grid --bench B --data PATH --s1-k 5,10,20 --s2-k 2,4,6 --out DIR``: the
  App. H retrieval-budget grid (no ASK, S1 recall-n = S1 top-k), one run folder per cell.
- ``graphmem eval report PATH``: ``report.md`` + ``summary.json`` + PNG plots for one run
  folder or every run folder below ``PATH``.
- ``graphmem eval compare RUN_DIR OTHER``: verdict agreement with another system's
  per-question records (a JSONL file or a folder of them).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from graphmem.cli.common import emit_json, err, open_store, out
from graphmem.core.config import Settings, get_settings
from graphmem.core.errors import InvalidInputError

if TYPE_CHECKING:
    from graphmem.eval.runner import QuestionRecord, RunOutcome

eval_app = typer.Typer(
    help="Benchmark runs (graphmem and baselines), ablations, top-k grids, reports and comparisons.",
    no_args_is_help=False,
)

BenchOpt = Annotated[Optional[str], typer.Option("--bench", "-b", help="locomo|socialmem|groupmem|evermem")]
DataOpt = Annotated[Optional[Path], typer.Option("--data", "-d", help="Benchmark file or folder (see docs/eval.md).")]
QuestionsOpt = Annotated[Optional[Path], typer.Option("--questions", help="Question files when not beside --data (GroupMem).")]
UnitsOpt = Annotated[Optional[str], typer.Option("--units", help="Comma-separated unit ids to run (default: all).")]
LimitOpt = Annotated[Optional[int], typer.Option("--limit", help="At most this many questions (file order).")]
ConcOpt = Annotated[int, typer.Option("--concurrency", "-j", help="Questions in flight at once.")]
PrefixOpt = Annotated[str, typer.Option("--group-prefix", help="Namespace in front of each unit's group id.")]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-").lower()


def _default_out(bench: str, system: str, ablate: str | None, no_ask: bool, s1_k: int | None, s2_k: int | None,
                 recipe: str | None = None) -> Path:
    parts = [system]
    if ablate:
        parts.append(f"wo-{ablate}")
    if recipe and recipe != "speakermem":
        parts.append(f"recipe-{recipe}")
    if no_ask and system == "speakermem":
        parts.append("noask")
    if s1_k is not None:
        parts.append(f"s1-{s1_k}")
    if s2_k is not None and system == "speakermem":
        parts.append(f"s2-{s2_k}")
    return Path("runs") / bench / _slug("_".join(parts))


def _units(units: str | None) -> list[str] | None:
    return [u.strip() for u in units.split(",") if u.strip()] if units else None


def _execute(
    *, bench: str, data: Path, system: str, questions: Path | None, ablate: str | None, no_ask: bool,
    s1_k: int | None, s2_k: int | None, recall_n: int | None, limit: int | None, units: list[str] | None,
    concurrency: int, group_prefix: str, out_dir: Path, settings: Settings, quiet: bool = False,
    recipe: str | None = None,
) -> RunOutcome:
    """Run one configuration (models from the settings) and return its outcome (``recipe``: a
    :data:`graphmem.recall.recipe.RECIPE_VARIANTS` name, None the product's)."""
    from graphmem.cli.common import command_embedder
    from graphmem.eval.runner import RunOptions, run_eval
    from graphmem.llm import TokenLedger, answer_model, judge_model, writer_model

    opts = RunOptions(
        bench=bench, data=data, system=system, out=out_dir, questions=questions, ablate=ablate, recipe=recipe,
        ask_enabled=not no_ask, s1_k=s1_k, s2_k=s2_k, recall_n=recall_n, limit=limit, units=units,
        concurrency=concurrency, group_prefix=group_prefix,
    )
    answer = answer_model(settings, ledger=TokenLedger())
    judge = judge_model(settings, ledger=TokenLedger())
    writer = writer_model(settings, ledger=TokenLedger()) if system == "speakermem" else None
    embedder = command_embedder() if system in ("speakermem", "embed") else None
    bar = None

    def on_record(rec: QuestionRecord | None, done: int, total: int) -> None:
        nonlocal bar
        if bar is None and sys.stderr.isatty() and not quiet:
            from tqdm import tqdm

            bar = tqdm(total=total, unit="q", desc=f"{bench}/{system}")
        if bar is not None:
            bar.update(1)

    def log(msg: str) -> None:
        if not quiet:
            err.print(msg, highlight=False, markup=False, soft_wrap=True)

    try:
        if system == "speakermem":
            from graphmem.store.db import quiet_notifications
            from graphmem.store.schema import apply_schema
            from graphmem.verbatim.order import backfill_order

            quiet_notifications()
            assert embedder is not None  # built above for speakermem
            with open_store() as store:
                apply_schema(store, embedder.dimension, migrate=backfill_order,
                     global_vector_index=get_settings().vector_global_index)
                return run_eval(opts, settings=settings, store=store, embedder=embedder, answer=answer, judge=judge,
                                writer=writer, log=log, on_record=on_record)
        return run_eval(opts, settings=settings, store=None, embedder=embedder, answer=answer, judge=judge,
                        writer=None, log=log, on_record=on_record)
    finally:
        if bar is not None:
            bar.close()
        for m in (answer, judge, writer):
            if m is not None:
                m.close()


execute = _execute
"""The public name of :func:`_execute` for scripts (bench/eval_retrieval.py, bench/eval_scripted.py)."""


def _print_outcome(outcome: RunOutcome, as_json: bool) -> None:
    from graphmem.eval.report import summarize

    s = summarize(outcome.run_dir, n_resamples=get_settings().eval_bootstrap_resamples,
                  seed=get_settings().eval_bootstrap_seed)
    if as_json:
        emit_json({"run_dir": str(outcome.run_dir), "questions": outcome.total, "skipped": outcome.skipped,
                   "done": outcome.done, "failed": outcome.failed, "not_applicable": outcome.not_applicable,
                   "wall_s": round(outcome.wall_s, 2), "notes": outcome.notes, "summary": s.to_dict()})
        return
    out.print(f"{s.label} on {s.config['bench']}: {outcome.total} question(s), {outcome.skipped} already done, "
              f"{outcome.done} recorded now, {outcome.failed} failed, in {outcome.wall_s:.1f} s -> {outcome.run_dir}",
              highlight=False, markup=False, soft_wrap=True)
    for note in outcome.notes:
        out.print(f"  note: {note}", highlight=False, markup=False, soft_wrap=True)
    parts = []
    if s.accuracy:
        parts.append(f"Acc. {s.accuracy.accuracy:.1f}% ({s.accuracy.correct}/{s.accuracy.total})")
    if s.token_f1 is not None:
        parts.append(f"token-F1 {s.token_f1:.1f}")
    if s.socialmem:
        parts.append(f"MeanQ {s.socialmem.mean_q:.3f} MeanN {s.socialmem.mean_n:.3f} "
                     f"CI [{s.socialmem.ci_low:.3f}, {s.socialmem.ci_high:.3f}]")
    for k, v in s.recall.items():
        parts.append(f"recall@{k} {100 * v['recall']:.1f}% (hit {100 * v['hit']:.1f}%, n={v['n']})")
    if parts:
        out.print("  " + "; ".join(parts), highlight=False, markup=False, soft_wrap=True)
    if outcome.failed:
        out.print(f"  {outcome.failed} question(s) failed (see errors.jsonl); run the same command again to retry them",
                  highlight=False, markup=False, soft_wrap=True)


def _run(
    ctx: typer.Context,
    bench: BenchOpt = None,
    data: DataOpt = None,
    system: Annotated[str, typer.Option("--system", "-s", help="speakermem|bm25|embed|full-context")] = "speakermem",
    questions: QuestionsOpt = None,
    no_ask: Annotated[bool, typer.Option("--no-ask", help="graphmem without Sufficiency/ASK.")] = False,
    ablate: Annotated[Optional[str], typer.Option("--ablate", help="s1|s2|s2-group|s2-person (graphmem only).")] = None,
    recipe: Annotated[Optional[str], typer.Option(
        "--recipe", help="graphmem's recall recipe: speakermem (the product's) or a lab variant (docs/query.md).")] = None,
    s1_k: Annotated[Optional[int], typer.Option("--s1-k", help="System 1 top-k (baselines: messages retrieved).")] = None,
    s2_k: Annotated[Optional[int], typer.Option("--s2-k", help="System 2 records per owner row.")] = None,
    recall_n: Annotated[Optional[int], typer.Option("--recall-n", help="System 1 recall pool size.")] = None,
    limit: LimitOpt = None,
    units: UnitsOpt = None,
    concurrency: ConcOpt = 1,
    group_prefix: PrefixOpt = "",
    out_dir: Annotated[Optional[Path], typer.Option("--out", "-o", help="Run folder (default runs/<bench>/<system...>).")] = None,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Write the report when done.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the outcome and summary as JSON.")] = False,
) -> None:
    """Run one system over one benchmark (resumable: re-run the same command to continue).

    Without an answer model (GRAPHMEM_LLM_*) every system still retrieves and the run records
    evidence ids and recall@k. The judge is GRAPHMEM_JUDGE_* (falling back to GRAPHMEM_LLM_*),
    the Writer GRAPHMEM_WRITER_* (graphmem only; without one, System 2 is what is stored).
    """
    if ctx.invoked_subcommand is not None:
        return
    if bench is None or data is None:
        if bench is None and data is None and ctx.info_name != "run":  # plain `graphmem eval`
            out.print(ctx.get_help(), highlight=False, markup=False)
            raise typer.Exit(0)
        raise InvalidInputError("--bench and --data are required", field="bench" if bench is None else "data")
    settings = get_settings()
    target = out_dir or _default_out(bench, system, ablate, no_ask, s1_k, s2_k, recipe)
    outcome = _execute(
        bench=bench, data=data, system=system, questions=questions, ablate=ablate, recipe=recipe, no_ask=no_ask, s1_k=s1_k,
        s2_k=s2_k, recall_n=recall_n, limit=limit, units=_units(units), concurrency=concurrency,
        group_prefix=group_prefix, out_dir=target, settings=settings, quiet=as_json,
    )
    if report:
        from graphmem.eval.report import write_report

        path, _ = write_report(target, n_resamples=settings.eval_bootstrap_resamples, seed=settings.eval_bootstrap_seed)
        if not as_json:
            out.print(f"  report: {path}", highlight=False, markup=False, soft_wrap=True)
    _print_outcome(outcome, as_json)


eval_app.callback(invoke_without_command=True)(_run)
eval_app.command("run")(_run)


def _ints(text: str, name: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError as e:
        raise InvalidInputError(f"{name} must be comma-separated integers, got {text!r}", field=name) from e
    if not values or min(values) < 1:
        raise InvalidInputError(f"{name} needs values >= 1", field=name)
    return values


@eval_app.command("grid")
def grid(
    bench: BenchOpt = None,
    data: DataOpt = None,
    s1: Annotated[str, typer.Option("--s1-k", help="S1 top-k values (App. H: 5,10,20).")] = "5,10,20",
    s2: Annotated[str, typer.Option("--s2-k", help="S2 k values (App. H: 2,4,6).")] = "2,4,6",
    questions: QuestionsOpt = None,
    limit: LimitOpt = None,
    units: UnitsOpt = None,
    concurrency: ConcOpt = 1,
    group_prefix: PrefixOpt = "",
    out_dir: Annotated[Optional[Path], typer.Option("--out", "-o", help="Grid folder (default runs/<bench>/grid).")] = None,
) -> None:
    """The App. H S1 top-k x S2 k grid: graphmem without ASK, recall-n = S1 top-k, one run per cell."""
    if bench is None or data is None:
        raise InvalidInputError("--bench and --data are required", field="bench" if bench is None else "data")
    settings = get_settings()
    target = out_dir or Path("runs") / bench / "grid"
    for b in _ints(s2, "s2-k"):
        for a in _ints(s1, "s1-k"):
            cell = target / f"s1-{a}_s2-{b}"
            outcome = _execute(
                bench=bench, data=data, system="speakermem", questions=questions, ablate=None, no_ask=True,
                s1_k=a, s2_k=b, recall_n=a, limit=limit, units=_units(units), concurrency=concurrency,
                group_prefix=group_prefix, out_dir=cell, settings=settings,
            )
            out.print(f"S1 k={a}, S2 k={b}: {outcome.done} recorded, {outcome.skipped} already done, "
                      f"{outcome.failed} failed -> {cell}", highlight=False, markup=False, soft_wrap=True)
    from graphmem.eval.report import write_report

    path, _ = write_report(target, n_resamples=settings.eval_bootstrap_resamples, seed=settings.eval_bootstrap_seed)
    out.print(f"grid report: {path}", highlight=False, markup=False, soft_wrap=True)


@eval_app.command("report")
def report_command(
    path: Annotated[Path, typer.Argument(help="A run folder, or a folder holding run folders.")],
    out_dir: Annotated[Optional[Path], typer.Option("--out", "-o", help="Where to write (default: PATH).")] = None,
    plots: Annotated[bool, typer.Option("--plots/--no-plots", help="Write the PNG plots.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summaries as JSON.")] = False,
) -> None:
    """Write report.md, summary.json and PNG plots (category bars, recall@k, App. H grid)."""
    from graphmem.eval.report import write_report

    s = get_settings()
    report, summaries = write_report(path, out=out_dir, n_resamples=s.eval_bootstrap_resamples,
                                     seed=s.eval_bootstrap_seed, plots=plots)
    if as_json:
        emit_json({"report": str(report), "runs": [x.to_dict() for x in summaries]})
        return
    out.print(f"{len(summaries)} run(s) -> {report}", highlight=False, markup=False, soft_wrap=True)


@eval_app.command("compare")
def compare_command(
    run_dir: Annotated[Path, typer.Argument(help="Our run folder.")],
    other: Annotated[Path, typer.Argument(help="Their per-question JSONL file, or a folder of them.")],
    mapping: Annotated[Optional[list[str]], typer.Option("--map", help="ours=theirs field name, e.g. --map verdict=judgment (repeatable).")] = None,
    label: Annotated[str, typer.Option("--label", help="Name of the other system in the output.")] = "published",
    out_dir: Annotated[Optional[Path], typer.Option("--out", "-o", help="Where to write compare.md/json (default: RUN_DIR).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare our verdicts with another system's per question and per category."""
    import json

    from graphmem.eval.compare import compare_run, comparison_markdown
    from graphmem.eval.runner import read_config

    field_map: dict[str, str] = {}
    for item in mapping or []:
        if "=" not in item:
            raise InvalidInputError(f"--map takes ours=theirs, got {item!r}", field="map")
        k, v = item.split("=", 1)
        field_map[k.strip()] = v.strip()
    cmp = compare_run(run_dir, other, field_map=field_map)
    config = read_config(run_dir)
    md = comparison_markdown(cmp, ours_label=f"{config.label} ({run_dir})", theirs_label=f"{label} ({other})")
    target = Path(out_dir or run_dir)
    target.mkdir(parents=True, exist_ok=True)
    (target / "compare.md").write_text(md, encoding="utf-8")
    (target / "compare.json").write_text(json.dumps(cmp.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if as_json:
        emit_json(cmp.to_dict())
        return
    out.print(md, highlight=False, markup=False, soft_wrap=True)
    out.print(f"written: {target / 'compare.md'}, {target / 'compare.json'}", highlight=False, markup=False, soft_wrap=True)
