"""Group-local BM25: a group's fulltext order that does not depend on other groups.

Lucene keeps its term statistics (document count, document frequency, mean document length)
for the whole index, i.e. for every group in the store, so the BM25 order of one group's
messages moves when unrelated groups are loaded. System 1 therefore uses Lucene only to find
candidates and re-scores them here with statistics of the group alone:

    score(d, q) = sum_{t in q} idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

(Robertson & Zaragoza 2009; Lucene's BM25Similarity form, k1 = 1.2, b = 0.75), where N, df and
avgdl count the group's messages only. Documents are the messages' ``search_text`` (previous
turn + "speaker: text", see :func:`graphmem.verbatim.ingest.search_text`), analysed like Lucene's
``english`` analyzer: word tokens, possessive "'s" dropped, lower-cased, Lucene's English stop
words removed, Porter-stemmed (PyStemmer's ``porter``); runs of scripts written without spaces
(Chinese, Japanese, Korean, Thai, Lao, Khmer, Myanmar) are not words but character bigrams
(:func:`graphmem.core.text.gram_terms`), the same terms the fulltext index holds in the
message's ``search_grams`` field, so Lucene's candidates and this ranking agree (docs/query.md
"Tokenisation").

The statistics of a group are built once from one read of its documents and kept by the
caller's :class:`graphmem.recall.cache.GroupCache`, under the group's one freshness key
(``vector_rev``, ``version``) read with its state: an erasure, an edit or a late message moves
``vector_rev`` and the statistics are rebuilt; an append moves only ``version`` and they are
rebuilt too, except for groups over :data:`DRIFT_FREE_MAX` messages, which are rebuilt once the
group has grown by :data:`MAX_DRIFT` (:func:`stats_usable`), so that a large, busy group is not
re-read on every append. The documents themselves are always read fresh.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import Stemmer

from graphmem.store.db import Store
from graphmem.core.text import LUCENE_STOP_WORDS, gram_terms, search_form, without_grams

K1 = 1.2
B = 0.75
DRIFT_FREE_MAX = 20_000
"""Groups up to this many messages get exact statistics (rebuilt on every count change)."""
MAX_DRIFT = 0.05
"""Larger groups rebuild once their message count moved by this share since the last build."""

_WORD = re.compile(r"\w+(?:['’]\w+)*", re.UNICODE)
# Porter's original algorithm (as Lucene's PorterStemFilter), from libstemmer in C (PyStemmer):
# it agrees with NLTK's ORIGINAL_ALGORITHM on 12,214 of the 12,215 distinct words of LoCoMo and
# SocialMemBench ("trekked": trekk, NLTK trek) and imports in under 1 ms against NLTK's 2 s.
_STEMMER = Stemmer.Stemmer("porter")
_STEMMER_LOCK = threading.Lock()  # a Stemmer object is not thread-safe; misses of the cache are rare


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    with _STEMMER_LOCK:
        stem: str = _STEMMER.stemWord(word)
    return stem


@lru_cache(maxsize=200_000)
def _terms(word: str) -> tuple[str, ...]:
    """Index terms of one word token (usually one; none for a stop word)."""
    w = word.lower()
    if w.endswith(("'s", "’s")):
        w = w[:-2]
    w = w.replace("’", "'")
    return tuple(_stem(part) for part in w.split("'") if part and part not in LUCENE_STOP_WORDS)


def analyze(text: str) -> list[str]:
    """Index terms of ``text`` in order (close to Lucene's ``english`` analyzer).

    ``"Caroline's dogs ran"`` -> ``["carolin", "dog", "ran"]``. Each distinct word token is
    analysed once per process (cached), so re-scoring the candidates of a query costs about a
    dictionary lookup per token. The runs of unspaced scripts give their character bigrams
    after the words (``"押金 deposit"`` -> ``["deposit", "押金"]``); a text without such a run
    gives exactly the word terms. The text is put in NFC first (documents are stored in it,
    :func:`graphmem.core.text.search_form`; a question may come in NFD): an accent is part of
    its word, as Lucene's tokenizer keeps it.
    """
    text = search_form(text)
    grams = gram_terms(text)
    plain = without_grams(text) if grams else (text or "")
    words = [t for w in _WORD.findall(plain) for t in _terms(w)]
    return words + grams if grams else words


@dataclass(frozen=True)
class GroupStats:
    """Term statistics of one group's fulltext documents.

    Attributes:
        group_id: the group.
        n_docs: messages counted (N).
        avgdl: mean document length in terms (>= 1 when the group has any term).
        df: term -> number of the group's documents containing it.
        version: write position (turn_created) of the group's latest message when built.
        vector_rev: the group's ``vector_rev`` when built (moved by edits, erasures, late
            messages and embeds: :class:`graphmem.recall.search.GroupState`).
    """

    group_id: str
    n_docs: int
    avgdl: float
    df: dict[str, int]
    version: int = -1
    vector_rev: int = 0

    def idf(self, term: str) -> float:
        """BM25 idf of ``term`` in the group (0 < idf; a term the group lacks gets the largest)."""
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))


def build_stats(store: Store, group_id: str, version: int = -1, vector_rev: int = 0) -> GroupStats:
    """Read the group's documents once and count N, df and the mean length (as of the group
    state ``version`` / ``vector_rev`` the caller read before)."""
    df: Counter[str] = Counter()
    n = 0
    total = 0
    for row in store.read("recall/group_documents", group_id=group_id):
        terms = analyze(row["doc"] or "")
        n += 1
        total += len(terms)
        df.update(set(terms))
    return GroupStats(
        group_id=group_id, n_docs=n, avgdl=(total / n) if n and total else 1.0, df=dict(df), version=version,
        vector_rev=vector_rev,
    )


def stats_usable(stats: GroupStats, version: int, vector_rev: int) -> bool:
    """Whether ``stats`` still serve the group state (``version``, ``vector_rev``): the same
    ``vector_rev`` (no edit, erasure or late message since) and the same ``version``, or, for a
    group over :data:`DRIFT_FREE_MAX` messages, a version at most :data:`MAX_DRIFT` x N ahead."""
    if stats.vector_rev != vector_rev:
        return False
    return stats.version == version or (
        stats.n_docs > DRIFT_FREE_MAX and 0 <= version - stats.version <= MAX_DRIFT * stats.n_docs
    )


def rescore(
    query: str, docs: dict[str, str], stats: GroupStats, *, issue: str = "", issue_weight: float = 0.0
) -> list[tuple[str, float]]:
    """BM25 of each candidate document for ``query`` (plus the issue's terms) with the group's statistics.

    ``score(d) = sum_t w(t) * bm25(t, d)`` with ``w(t) = [t in query] + issue_weight * [t in issue]``:
    the issue (Project's one matter asked about, names and question words removed) counts its
    topic words once more, so a question's content words outweigh its names and function words.

    Args:
        query: free text (analysed like the documents; repeated query terms count once).
        docs: message id -> fulltext document.
        stats: the group's statistics.
        issue: a second, weighted query (Project's issue), or "".
        issue_weight: weight of the issue's terms (0: the issue is ignored).

    Returns:
        (message id, score >= 0) for documents with a positive score, best first; ties by id.
    """
    weights: dict[str, float] = dict.fromkeys(analyze(query), 1.0)
    if issue and issue_weight > 0:
        for t in dict.fromkeys(analyze(issue)):
            weights[t] = weights.get(t, 0.0) + issue_weight
    if not weights:
        return []
    idf = {t: w * stats.idf(t) for t, w in weights.items()}
    out: list[tuple[str, float]] = []
    for mid, doc in docs.items():
        terms = analyze(doc)
        norm = K1 * (1.0 - B + B * len(terms) / stats.avgdl)
        s = 0.0
        for t, w in idf.items():  # a query has a few terms: counting them beats a Counter of the doc
            tf = terms.count(t)
            if tf:
                s += w * tf * (K1 + 1.0) / (tf + norm)
        if s > 0:
            out.append((mid, s))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


def smooth(scores: list[tuple[str, float]], neighbours: dict[str, tuple[str | None, str | None]], share: float) -> list[tuple[str, float]]:
    """Neighbour smoothing: each turn gains ``share`` x the larger score of its two neighbours.

    ``score'(m) = score(m) + share * max(score(prev(m)), score(next(m)))`` along NEXT (the
    conversation order of the channel). A turn next to a strong hit - the answer after a
    question, the question before an answer - enters the ranking even when it shares no word
    with the query. Neighbours not in ``scores`` count 0 and are added when they gain a score.

    Args:
        scores: (id, score >= 0), any order.
        neighbours: id -> (previous id or None, next id or None) for the ids of ``scores``.
        share: 0..1 (0: ``scores`` unchanged, re-sorted).

    Returns:
        (id, smoothed score), best first; ties by id.
    """
    base = dict(scores)
    if share <= 0:
        return sorted(base.items(), key=lambda x: (-x[1], x[0]))
    gain: dict[str, float] = {}
    for mid, s in base.items():
        for nb in neighbours.get(mid, (None, None)):
            if nb is not None and s > gain.get(nb, 0.0):
                gain[nb] = s
    out = {m: base.get(m, 0.0) + share * gain.get(m, 0.0) for m in set(base) | set(gain)}
    return sorted(((m, s) for m, s in out.items() if s > 0), key=lambda x: (-x[1], x[0]))


def smoothed_candidates(store: Store, group_id: str, ft: list[tuple[str, float]], docs: dict[str, dict[str, Any]],
                        share: float, depth: int) -> list[tuple[str, float]]:
    """:func:`smooth` over the fulltext candidates ``ft``; ``docs`` (id -> the candidate's
    document row) gains, by one read (``recall/message_documents``), the neighbours that rose
    into the first ``depth``. Returns (id, smoothed score), best first, only ids with a row."""
    neighbours = {i: (d.get("prev_id"), d.get("next_id")) for i, d in docs.items()}
    smoothed = smooth(ft, neighbours, share)
    missing = [i for i, _ in smoothed[:depth] if i not in docs]
    if missing:
        for r in store.read("recall/message_documents", group_id=group_id, ids=missing):
            docs[r["id"]] = r
    return [(i, s) for i, s in smoothed if i in docs]
