"""A question in another language than the group's: rewritten into the group's language before
retrieval, when an answer model is set (issue 27, item 11).

The embedding model is English-only and the fulltext index matches words, so a Spanish,
Japanese or Chinese question about English messages finds little. When ``ask`` has an answer
model, :func:`rewrite_question` tells the question's language and the group's (fastText, as
:mod:`graphmem.core.language` does for the warning: the language most of the group's latest 40
messages are in), and when they differ - and the group does not write in the question's language
too (under :data:`MIN_SHARE` of those messages) - asks the model for the question in the
group's language (prompt :data:`graphmem.query.prompts.REWRITE_SYSTEM`; the
question is fenced as data, never instructions). Project, System 1 and System 2 then search
with the rewrite; the answerer still gets the question as asked, and the result says what was
searched (``AskResult.search_question`` and a note). Without a model nothing is rewritten and the
result warns when the evidence found is in another language than the question
(:func:`graphmem.core.language.mismatch_note`).

A rewrite that fails (the endpoint fails, or answers with nothing usable: empty, too long, not
valid text, the question unchanged in its own language) is not fatal: the question is searched
as asked and the note says why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from graphmem.core import language, limits
from graphmem.core.errors import GraphMemError
from graphmem.core.text import fence, strip_think
from graphmem.llm import ChatModel, Usage
from graphmem.query import prompts
from graphmem.store.db import Store

__all__ = ["MIN_SHARE", "SAMPLE_MESSAGES", "Rewrite", "group_language", "group_languages", "rewrite_question"]

SAMPLE_MESSAGES = 40
"""The group's latest messages (with text) whose languages are the group's."""
MIN_SHARE = 0.2
"""A group of which at least this share of the sampled messages is in the question's language
writes in it too: the question is searched as asked (a rewrite would lose those messages)."""


@dataclass
class Rewrite:
    """What :func:`rewrite_question` did.

    Attributes:
        question: the question to search with: the rewrite, or the question as asked.
        rewritten: whether ``question`` is the model's rewrite.
        asked / target: ISO 639-1 codes of the question's and the group's language ("" when
            not told).
        note: one sentence for ``AskResult.note`` ("" when the languages agree or were not told).
        usages: the model call's usage (empty when no call was made).
    """

    question: str
    rewritten: bool = False
    asked: str = ""
    target: str = ""
    note: str = ""
    usages: list[Usage] = field(default_factory=list)


def group_languages(store: Store, group_id: str) -> Counter[str]:
    """Languages of the group's latest :data:`SAMPLE_MESSAGES` messages with text: one count per
    message whose language is told (:func:`graphmem.core.language.detect`: 12 letters or more);
    when none is, the messages judged together (first 4000 characters) count once. One index seek
    from the group's end (about 3 database hits per message read)."""
    rows = store.read("query/group_language_sample", group_id=group_id, n=SAMPLE_MESSAGES)
    texts = [str(r["text"]) for r in rows if not r["no_text"]]
    found: Counter[str] = Counter(code for code in map(language.detect, texts) if code)
    if not found:
        whole = language.detect(" ".join(texts)[:4000])
        if whole:
            found[whole] = 1
    return found


def group_language(store: Store, group_id: str) -> str | None:
    """ISO 639-1 code of the language most of the group's latest messages are in
    (:func:`group_languages`), or None when it cannot be told."""
    found = group_languages(store, group_id)
    return found.most_common(1)[0][0] if found else None


def _name(code: str) -> str:
    return f"{language.NAMES.get(code, code)} ({code})"


def _usable(text: str, question: str, asked: str) -> str:
    """Why a model's rewrite cannot be searched with, or ""."""
    if not limits.has_visible(text):
        return "the model's rewrite was empty"
    if len(text) > min(limits.MAX_QUESTION_CHARS, 4 * len(question) + 200):
        return "the model's rewrite was far longer than the question"
    if "<<<" in text:
        return "the model's rewrite held fence lines"
    try:
        limits.check_text(text, field="question")
    except GraphMemError:
        return "the model's rewrite was not valid Unicode text"
    if text.strip() == question.strip():
        return "the model returned the question unchanged"
    said = language.detect(text)
    if said is not None and language.same_family(said, asked):
        return "the model's rewrite was still in the question's language"
    return ""


def rewrite_question(store: Store, group_id: str, question: str, model: ChatModel | None) -> Rewrite:
    """The question to search the group with: its rewrite into the group's language when the
    question is in another one and an answer model is set, else the question as asked.

    Args:
        store: open store (one read of the group's latest messages, only when the question's
            language is told and a model is set).
        group_id: the group.
        question: the question as asked.
        model: the answer model, or None (then nothing is rewritten and nothing is read).

    Returns:
        A :class:`Rewrite`. Never raises for model trouble: a failed or unusable rewrite leaves
        the question as asked and says why in ``note``.

    Raises:
        StoreUnavailableError: Neo4j failed.
    """
    if model is None:
        return Rewrite(question)
    asked = language.detect(question)
    if asked is None:
        return Rewrite(question)
    found = group_languages(store, group_id)
    target = found.most_common(1)[0][0] if found else None
    if target is None or language.same_family(asked, target):
        return Rewrite(question, asked=asked, target=target or "")
    if sum(n for code, n in found.items() if language.same_family(code, asked)) >= MIN_SHARE * sum(found.values()):
        return Rewrite(question, asked=asked, target=target)  # the group writes in the question's language too
    src, dst = language.NAMES.get(asked, asked), language.NAMES.get(target, target)
    messages = [
        {"role": "system", "content": prompts.REWRITE_SYSTEM},
        {"role": "user", "content": prompts.REWRITE_USER.format(
            source=src, target=dst, question="\n".join(fence("QUESTION", [question])))},
    ]
    usages: list[Usage] = []
    try:
        raw, usage = model.complete_text(messages, stage="rewrite", max_tokens=min(1000, 2 * len(question) + 100))
        usages.append(usage)
    except GraphMemError as e:
        why = f"rewriting it failed ({type(e).__name__})"
    else:
        lines = [ln.strip() for ln in strip_think(raw).splitlines() if ln.strip()]
        text = lines[0].strip().strip('"“”«»「」') if lines else ""
        why = _usable(text, question, asked)
        if not why:
            note = (f"The question is in {_name(asked)} and the group's messages in {_name(target)}: it was "
                    f"searched as its {dst} rewrite by the answer model: {text!r}")
            return Rewrite(text, rewritten=True, asked=asked, target=target, note=note, usages=usages)
    note = (f"The question is in {_name(asked)} and the group's messages in {_name(target)}: {why}, so "
            f"it was searched as asked and {dst} evidence may be missed")
    return Rewrite(question, asked=asked, target=target, note=note, usages=usages)
