"""Text helpers shared by the write and read paths: one home for words, stop words and cleanup.

Everything here is pure (no I/O, no model): content normalisation for duplicate checks, the
Lucene-safe query text, the two stop-word lists (question words and function words), removal
of ``<think>`` blocks from model answers, and a short ``repr`` for error messages.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = [
    "FUNCTION_WORDS",
    "LUCENE_STOP_WORDS",
    "STOP_WORDS",
    "THINK_BLOCK",
    "gram_field",
    "gram_terms",
    "gram_token",
    "lucene_query",
    "normalise_content",
    "search_form",
    "short_repr",
    "split_sentences",
    "strip_think",
    "without_grams",
]

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\w+", re.UNICODE)

#: Where a message's text splits into sentences: after . ! ? and whitespace, after the CJK
#: full stops 。！？ and the Arabic question mark ؟ (whitespace or not), and before a
#: "[shares ...]" caption (the benchmarks' image descriptions).
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[。！？؟])\s*|\s*(?=\[shares)")

#: A reasoning model's ``<think>...</think>`` block (any case, spanning lines).
THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)

#: Words that carry no topic of a question: question words, auxiliaries, pronouns, quantifiers,
#: and the words that name the kind of question (say, think, opinion, stance ...). Project drops
#: them from the fallback issue; System 2 drops them from its fulltext query.
STOP_WORDS = frozenset(
    """
    a an and are as at be been being but by can could did do does doing done for from had has
    have having he her hers him his how i if in into is it its me my of on or our ours she so
    than that the their theirs them then there these they this those to was we were what when
    where which while who whom whose why will with would you your yours about also any anyone
    anybody all each every everyone everybody someone somebody group chat members member person
    people one ones other others s t just very more most much many some such only own same
    tell say said says mentioned mention conversation conversations based show shows showed
    reveal reveals revealed suggest suggests seem seems seemed appear appears appeared think
    thinks thought feel feels felt know knows knew view views opinion opinions stance stances
    position positions attitude attitudes currently current now still ever never not no
    nobody anything something nothing everything anyone someone """.split()
)

#: The stop set of Lucene's english analyzer (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET): words the
#: message fulltext index never holds, so a query made only of them matches nothing.
LUCENE_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)

#: Function words only (no topic and no question-kind words): the Writer's provenance step
#: ignores them when it compares a record's content with the segment's messages.
FUNCTION_WORDS = frozenset(
    "a an the and or but if then so of to in on at by for with from as is are was were be been "
    "being am do does did have has had i you he she it we they me him her us them my your his its "
    "our their this that these those there here not no yes just very really also too can could "
    "will would shall should may might must about into over than what which who whom when where "
    "why how all any some each every more most other such only own same s t don ok okay".split()
)


def search_form(text: str) -> str:
    """``text`` in the form it is searched in: NFC (Unicode canonical composition).

    ``"cafe\u0301"`` (NFD, as macOS file names and some keyboards send it) and ``"caf\u00e9"``
    are one word to Lucene only when both reach it in one form: every search document (a
    message's ``search_text`` and ``search_grams``, a derived record's ``content``) is stored in
    this form, and every query (:func:`lucene_query`, the group-local BM25's
    :func:`graphmem.recall.lexical.analyze`) is put in it, while a message's ``text`` stays
    as received (docs/reliability.md "Identity in every spelling"). Already-NFC text (the usual
    case) is returned unchanged after Python's quick check.
    """
    return unicodedata.normalize("NFC", text or "")


def normalise_content(text: str) -> str:
    """Normalised content used for duplicate and "unchanged" checks.

    Case-folded word runs (Unicode ``\\w+``: any script) of the NFC text joined by single
    spaces, so punctuation, case, spacing and the Unicode form (``"cafe\u0301"`` and
    ``"caf\u00e9"``: in NFD the accent is no word character and would split the word) never make
    two records differ; erasure finds a quote of a message in either form by it.

    Source: SpeakerMem-R1 App. E (normalised content in the action keys of eq. 19).
    """
    return " ".join(_WORD.findall(search_form(text).casefold()))


#: Scripts written without spaces between words, as (first, last) code points: Han (with the
#: iteration marks 々〆〇 and the compatibility and extension blocks), Hiragana, Katakana (with
#: the half-width forms), Hangul (syllables and jamo, half-width too), Thai, Lao, Khmer and
#: Myanmar. A run of these characters is indexed as character bigrams (:func:`gram_terms`).
GRAM_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F), (0x0E80, 0x0EFF), (0x1000, 0x109F), (0x1100, 0x11FF), (0x1780, 0x17FF),
    (0x3005, 0x3007), (0x3040, 0x30FF), (0x3130, 0x318F), (0x31F0, 0x31FF), (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7FF), (0xF900, 0xFAFF), (0xFF65, 0xFFDC),
    (0x20000, 0x3134F),
)
#: The class of :data:`GRAM_RANGES` in Java's regex syntax (``=~`` in Cypher), for migrations
#: that find stored documents with such a run.
GRAM_JAVA_PATTERN = "(?s).*[" + "".join(f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in GRAM_RANGES) + "].*"
_GRAM_RUN = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in GRAM_RANGES) + "]+")


def gram_terms(text: str) -> list[str]:
    """Character bigrams of the unspaced-script runs of ``text`` (:data:`GRAM_RANGES`), in order.

    Each maximal run is NFKC-normalised (half-width katakana and hangul become full-width, as
    Lucene's CJKWidthFilter does) and cut into overlapping pairs of code points; a run of one
    character is its own term. ``"我们的押金"`` -> ``["我们", "们的", "的押", "押金"]``, so a word of
    two or more characters inside an unspaced sentence shares all its terms with the sentence.
    Thai, Lao, Khmer and Myanmar get the same bigrams (a dictionary segmenter would disagree
    between Lucene and Python; bigrams are the same on both sides by construction).
    """
    out: list[str] = []
    for run in _GRAM_RUN.findall(text or ""):
        run = unicodedata.normalize("NFKC", run)
        out.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return out


def gram_token(gram: str) -> str:
    """The spelling of one gram in the fulltext index: ``g`` and its code points in decimal,
    joined by ``x`` (``"押金"`` -> ``"g25276x37329"``). Letters and digits only, ending in a
    digit, so the english analyzer keeps it as one token, unchanged (no stop word, no stem)."""
    return "g" + "x".join(str(ord(c)) for c in gram)


def gram_field(text: str) -> str | None:
    """The ``search_grams`` value of a document: its :func:`gram_terms`, each spelt by :func:`gram_token`,
    joined by spaces, or None when it has no unspaced-script run (the property is then absent)."""
    grams = gram_terms(text)
    return " ".join(gram_token(g) for g in grams) if grams else None


def without_grams(text: str) -> str:
    """``text`` with each unspaced-script run replaced by a space: the part that is tokenised
    into words (the english analyzer's share of a document or query)."""
    return _GRAM_RUN.sub(" ", text or "")


def lucene_query(text: str) -> str:
    """Turn free text into a safe Lucene query: word tokens, lower-cased, OR-ed.

    Lower-casing keeps words such as AND/OR/NOT from acting as operators; every Lucene special
    character is dropped because only ``\\w`` runs survive. The text is put in NFC first
    (:func:`search_form`), the form the documents are indexed in: ``"Zu\u0308rich"`` asks for
    ``zürich``, not for ``zu`` and ``rich``.
    """
    return " ".join(t.lower() for t in _TOKEN.findall(search_form(text)))


def strip_think(text: str | None) -> str:
    """The text without ``<think>`` blocks, stripped of surrounding whitespace."""
    return THINK_BLOCK.sub("", text or "").strip()


def split_sentences(text: str, limit: int = 8) -> list[str]:
    """The sentences of a message's text, when it has more than one; else ``[]``.

    Splits after ``.``, ``!`` or ``?`` followed by whitespace, after ``。``, ``！``, ``？`` or
    ``؟``, and before a ``[shares ...]`` caption; pieces of one character or less are dropped;
    at most ``limit`` sentences (the first ones). Used for the sentence vectors of System 1 (graphmem.core.embed.sentence_texts):
    a long turn's one relevant sentence is drowned in its whole-turn vector.
    """
    parts = [p.strip() for p in _SENTENCE_SPLIT.split(text or "") if p and len(p.strip()) > 1]
    return parts[:limit] if len(parts) > 1 else []


def short_repr(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (``...`` marks the cut), for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(text: str) -> str:
    """``text`` on one line, for a line-structured model prompt or a label: every run of
    whitespace (line breaks, tabs, U+2028/U+2029, U+0085, any Unicode space) as one space, the
    ends trimmed. Chat-controlled names and texts pass through it wherever they enter such a
    prompt, so none can begin a line of its own (a forged message line, candidate or fence
    line; docs/security.md "Attribution")."""
    return " ".join(text.split())


def fence(label: str, lines: list[str], basis: str | None = None) -> list[str]:
    """Quoted chat text for a model prompt, between an opening and a closing fence line.

    ``<<<LABEL tag>>>``, the lines, ``<<<END LABEL tag>>>``. The tag is the first 12 hex digits
    of SHA-256 over the quoted lines, so the same input gives the same prompt (recorded prompts
    can be compared) while a message cannot carry the closing line of the fence around it: it
    would have to contain a hash of itself. The prompts tell the model that what is fenced is
    data, never instructions (docs/security.md "Attribution").

    Args:
        label: upper-case name of what is quoted (``MESSAGES``, ``MEMORY``, ``MATERIAL``).
        lines: the quoted lines (may be empty).
        basis: hash this instead of ``lines``: text that holds, or that an author of the quoted
            lines cannot know in advance (the answer prompt uses the question and the excerpts,
            so both QA arms of one question share a tag).

    Returns:
        ``[opening line, *lines, closing line]``.
    """
    import hashlib

    seed = "\n".join(lines) if basis is None else basis
    tag = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return [f"<<<{label} {tag}>>>", *lines, f"<<<END {label} {tag}>>>"]
