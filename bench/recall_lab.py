"""Offline lab for the System 1 recall pool: judge a scoring idea in seconds, not minutes.

Usage:
    .venv/bin/python bench/recall_lab.py dump [--data ../shared/data] [--cache runs/lab/cache.pkl]
    .venv/bin/python bench/recall_lab.py run [--variants base,all] [--split] [--cats]
    .venv/bin/python bench/recall_lab.py misses [--variants base] [--out runs/lab/misses.tsv]
    .venv/bin/python bench/recall_lab.py paired --cache A.pkl --against B.pkl [C.pkl ...]
    .venv/bin/python bench/recall_lab.py sentences   # after dump: vectors of single sentences
    .venv/bin/python bench/recall_lab.py words       # after dump: vectors of the vocabulary's words

``dump`` (Neo4j running, benchmark groups ingested, e.g. by bench/eval_retrieval.py) reads, for
every LoCoMo and staged SocialMemBench unit, the group's messages as stored (id, fulltext
document, speaker's person id, instant, session, order, stored MiniLM vector) and roster, and for
every question the text the system sees, the gold evidence, the category and the deterministic
Project output (rows, issue, tense), plus MiniLM vectors of the questions and issues. It writes
one pickle under runs/ (git-ignored; benchmark data is never committed).

``run`` rebuilds the recall pool of every question in numpy with the product's own code where
it can (analyser, anchors, :func:`graphmem.recall.pool.fuse_recall`) and prints recall@1/5/10/40
per benchmark (``--cats``: per category) for each variant. ``--split`` also prints a tune half
(odd LoCoMo conversations, odd-numbered SocialMem networks) and a held-out half.
A variant is a name from :data:`VARIANTS`: a dict of recipe knobs (:data:`KNOBS`: flat names of
the stage fields of :class:`graphmem.recall.recipe.RecallRecipe`, applied to
:data:`graphmem.recall.recipe.SPEAKERMEM_POOL` by :func:`recipe_of`, which refuses a combination
the recipe refuses) and lab switches.

Switches of the fourth round (places 11-40 and documents, docs/query.md): ``hop2=(seeds, terms,
weight, depth[, own_text])`` a second-hop BM25 ranking on the rarest terms of the pool's best
turns, fused into places 11-40; ``prf_tail=(docs, terms, weight, depth)`` the same with RM3-like
terms; ``person_tail=(weight, depth)`` each named person's own turns, deeper, into places 11-40;
``mmr=(lambda, candidates)`` and ``sess_tail=(penalty, candidates)`` places 11-40 re-picked for
diversity (dense vectors / sessions); ``dedup=cosine`` near-identical turns dropped;
``issue_budget=k`` the issue alone as a second query with k reserved places; ``sent=(a, "max")``
and ``sent_ctx=1`` dense over single sentences (needs ``sentences``). ``noop=1`` goes through
the same code path with no change (it must equal ``tail_learned=0``: the switches that fuse
rankings into places 11-40 are measured on the pool without the seventh round's learned tail).

Switches of the fifth round (places 11-40 only, docs/query.md): ``sess_ev=(seeds, sessions,
weight, depth, "pool"|"dense")`` session-level evidence: sessions ranked by the fused ranks of
the pool's best ``seeds`` turns ("pool") or by the mean of their three best cosines ("dense"),
the best ``sessions`` sessions' other turns by cosine fused into places 11-40;
``when_time=(weight, depth)`` for "when / what date / how long ago" questions, the turns whose
own line holds a time expression (weekday, month, "yesterday", "last week", a number), by
cosine, fused into places 11-40; ``sent_tail=(weight, depth)`` dense over single sentences
(max(turn, best sentence)) as a ranking of places 11-40 only (needs ``sentences``).

Switches of the seventh round (docs/query.md): ``sem=(threshold, per_word, weight, depth,
"head"|"tail")`` semantic term expansion - words of the group's vocabulary whose MiniLM word
vector is within ``threshold`` cosine of a question word (best ``per_word`` each, needs
``words``) - added to the fulltext score ("head") or as a ranking fused into places 11-40.
The tail path (``_fuse_tail_extra``) applies the learned head as the product does.

The sixth round's learned head (``graphmem.recall.learned``) is on in ``base`` as in the
product (``head_rerank=False`` turns it off), and so is the seventh round's learned tail
(``tail_learned=0`` turns it off); the lab fills ``RecallInputs.dense`` and
``senders`` as ``gather_recall`` does (:func:`_dense_evidence`), and ``bench/recall_ltr.py``
fits its weights on the pools built here.

``misses`` is the failure analysis of one variant: for every gold turn missing from the top-10
(and top-40), its rank in each ranking the pool is fused from, whether a neighbour or its session
is in the pool, and the oracle ceiling of R@10 (questions with more than 10 gold turns).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DATA = {"locomo": "locomo/locomo10.json", "socialmem": "socialmembench/networks"}
KS = (1, 5, 10, 40)


# --------------------------------------------------------------------------------------------
# dump
# --------------------------------------------------------------------------------------------

_MESSAGES = """
MATCH (m:Message {group_id: $group_id})-[:SOURCE]->(p:Person)
OPTIONAL MATCH (m)-[:IN_SESSION]->(s:Session)
RETURN m.id AS id, m.search_text AS doc, m.text AS text, m.speaker AS speaker, p.id AS person_id,
       m.instant AS instant, s.index AS session, m.channel AS channel, m.reply_to AS reply_to,
       m.seq AS seq, m.turn_created AS turn_created, m.embedding AS embedding
ORDER BY m.seq, m.turn_created
"""


def dump(data: Path, cache: Path, benches: list[str]) -> None:
    from graphmem.core.config import get_settings
    from graphmem.store.db import Store, open_driver
    from graphmem.eval.benchmarks import category_of, load_bench, question_text, recall_scored
    from graphmem.query.project import fallback_projection
    from graphmem.verbatim.roster import read_roster

    store = Store(open_driver(get_settings()))
    emb = _encoder()
    out: dict[str, Any] = {"groups": {}, "questions": []}
    texts: list[str] = []
    for bench in benches:
        bd = load_bench(bench, data / DATA[bench])
        for ui, unit in enumerate(bd.units):
            rows = store.read_text(_MESSAGES, group_id=unit.group_id)
            if not rows:
                sys.exit(f"group {unit.group_id} is not ingested (run bench/eval_retrieval.py first)")
            roster = read_roster(store, unit.group_id)
            vecs = np.array([r.pop("embedding") for r in rows], dtype=np.float32)
            out["groups"][unit.group_id] = {"bench": bench, "index": ui, "messages": rows, "vectors": vecs,
                                            "roster": roster}
            valid = unit.message_ids
            for q in unit.questions:
                text, _ = question_text(q)
                gold = [e for e in dict.fromkeys(q.evidence_ids) if e in valid]
                if not (recall_scored(bench, q) and gold):
                    continue
                p = fallback_projection(text, roster)
                out["questions"].append({
                    "bench": bench, "group": unit.group_id, "id": q.id, "category": category_of(bench, q),
                    "question": text, "gold": gold, "rows": list(p.rows), "issue": p.issue, "tense": p.tense,
                })
                texts += [text, p.issue]
        print(f"{bench}: {len(bd.units)} groups", flush=True)
    uniq = list(dict.fromkeys(texts))
    t = time.perf_counter()
    mat = emb.encode(uniq)
    out["text_vectors"] = {s: np.asarray(v, dtype=np.float32) for s, v in zip(uniq, mat)}
    print(f"encoded {len(uniq)} questions/issues in {time.perf_counter() - t:.1f} s")
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("wb") as f:
        pickle.dump(out, f)
    print(f"{len(out['questions'])} scored questions -> {cache}")


def sentences(cache: Path) -> None:
    """The product's sentence vectors of every turn of several sentences (``sent.pkl`` beside
    the cache): :func:`graphmem.core.embed.sentence_texts` of each stored message (speaker, ts and
    text read from the store that ``dump`` read), encoded by the product's embedder, as
    ``ingest`` stores them in ``Message.sentence_embeddings``. ``load`` then fills each group's
    ``sent_vecs`` / ``sent_owner``, and the pool's dense evidence gets the sentence read the
    product makes (``query/sentence_ranking``)."""
    from types import SimpleNamespace

    from graphmem.core.config import get_settings
    from graphmem.store.db import Store, open_driver
    from graphmem.core.embed import sentence_texts

    with cache.open("rb") as f:
        raw = pickle.load(f)
    store = Store(open_driver(get_settings()))
    texts: list[str] = []
    owner: list[tuple[str, str]] = []
    words: list[int] = []
    for gid in raw["groups"]:
        for r in store.read_text(_TEXTS, group_id=gid):
            ss = sentence_texts(SimpleNamespace(**r))
            texts += ss
            owner += [(gid, r["id"])] * len(ss)
            words += [len(t.split(": ", 1)[-1].split()) for t in ss]
    t = time.perf_counter()
    vecs = np.asarray(_encoder().encode(texts), dtype=np.float32)
    print(f"{len(texts)} sentences encoded in {time.perf_counter() - t:.0f} s")
    with (cache.parent / "sent.pkl").open("wb") as f:
        pickle.dump({"owner": owner, "vecs": vecs, "words": words}, f)


_TEXTS = "MATCH (m:Message {group_id: $group_id}) RETURN m.id AS id, m.speaker AS speaker, m.ts AS ts, m.text AS text"


def words(cache: Path) -> None:
    """MiniLM vectors of the groups' vocabulary, one per analysed term (seventh round, ``sem``).

    Each term is encoded through its most frequent surface word in the messages ("books" for the
    term "book"); written beside the cache (``words.pkl``: term -> surface, vector).
    """
    import re

    from graphmem.recall.lexical import analyze

    with cache.open("rb") as f:
        raw = pickle.load(f)
    surf: dict[str, Counter] = {}
    memo: dict[str, list[str]] = {}
    for g in raw["groups"].values():
        for m in g["messages"]:
            for w in re.findall(r"[a-z][a-z'-]+", (m["text"] or "").casefold()):
                ts = memo.get(w)
                if ts is None:
                    ts = memo[w] = analyze(w)
                if len(ts) == 1:
                    surf.setdefault(ts[0], Counter())[w] += 1
    terms = sorted(surf)
    forms = [surf[t].most_common(1)[0][0] for t in terms]
    t0 = time.perf_counter()
    vecs = np.asarray(_encoder().encode(forms), dtype=np.float32)
    print(f"{len(terms)} terms encoded in {time.perf_counter() - t0:.0f} s")
    with (cache.parent / "words.pkl").open("wb") as f:
        pickle.dump({"terms": terms, "forms": forms, "vecs": vecs}, f)


# --------------------------------------------------------------------------------------------
# the lab pipeline
# --------------------------------------------------------------------------------------------


@dataclass
class Group:
    """One group ready for scoring."""

    gid: str
    bench: str
    index: int
    ids: list[str]
    docs: list[str]
    person: list[str]
    instant: np.ndarray
    session: list[int | None]
    vectors: np.ndarray
    roster: list
    years: list[int]
    terms: list[list[str]] = field(default_factory=list)
    tf: list[Counter] = field(default_factory=list)
    df: Counter = field(default_factory=Counter)
    dl: np.ndarray | None = None
    by_id: dict[str, int] = field(default_factory=dict)
    prev: np.ndarray | None = None  # index of the previous turn of the session, -1 none
    next: np.ndarray | None = None
    vocab: dict[str, int] = field(default_factory=dict)
    tfm: np.ndarray | None = None
    sent_vecs: np.ndarray | None = None
    sent_owner: np.ndarray | None = None
    sent_words: np.ndarray | None = None
    replies: list[list[int]] = field(default_factory=list)  # reply parent and children (``reply_ctx``)
    word_terms: list[str] | None = None  # the vocabulary's terms with a word vector (``words``)
    word_mat: np.ndarray | None = None


def load(cache: Path) -> tuple[dict[str, Group], list[dict], dict[str, np.ndarray]]:
    from datetime import datetime, timezone

    from graphmem.recall.lexical import analyze

    with cache.open("rb") as f:
        raw = pickle.load(f)
    groups: dict[str, Group] = {}
    for gid, g in raw["groups"].items():
        ms = g["messages"]
        inst = np.array([m["instant"] if m["instant"] is not None else np.inf for m in ms], dtype=float)
        fin = inst[np.isfinite(inst)]
        years = list(range(datetime.fromtimestamp(fin.min(), timezone.utc).year,
                           datetime.fromtimestamp(fin.max(), timezone.utc).year + 1)) if len(fin) else []
        gr = Group(gid, g["bench"], g["index"], [m["id"] for m in ms], [m["doc"] or "" for m in ms],
                   [m["person_id"] for m in ms], inst, [m["session"] for m in ms], g["vectors"], g["roster"], years)
        gr.terms = [analyze(d) for d in gr.docs]
        gr.tf = [Counter(t) for t in gr.terms]
        for t in gr.terms:
            gr.df.update(set(t))
        gr.dl = np.array([len(t) for t in gr.terms], dtype=float)
        gr.vocab = {t: i for i, t in enumerate(gr.df)}
        gr.tfm = np.zeros((len(gr.vocab), len(ms)), dtype=np.float32)
        for j, c in enumerate(gr.tf):
            for t, k in c.items():
                gr.tfm[gr.vocab[t], j] = k
        gr.by_id = {m: i for i, m in enumerate(gr.ids)}
        prev = np.full(len(ms), -1)
        nxt = np.full(len(ms), -1)
        last: dict[Any, int] = {}
        for i in sorted(range(len(ms)), key=lambda j: ms[j]["turn_created"]):  # NEXT: per channel
            m = ms[i]
            key = m["channel"] or ""
            if key in last:
                prev[i] = last[key]
                nxt[last[key]] = i
            last[key] = i
        gr.prev, gr.next = prev, nxt
        gr.replies = [[] for _ in ms]  # reply edges both ways (REPLY_TO): parent and children
        for i, m in enumerate(ms):
            j = gr.by_id.get(m.get("reply_to") or "")
            if j is not None and j != i:
                gr.replies[i].append(j)
                gr.replies[j].append(i)
        groups[gid] = gr
    sp = cache.parent / "sent.pkl"
    if sp.exists():
        with sp.open("rb") as f:
            sent = pickle.load(f)
        rows: dict[str, list[int]] = {}
        for k, (gid, _) in enumerate(sent["owner"]):
            rows.setdefault(gid, []).append(k)
        for gid, ks in rows.items():
            gr = groups[gid]
            gr.sent_vecs = sent["vecs"][ks]
            gr.sent_owner = np.array([gr.by_id[sent["owner"][k][1]] for k in ks])
            gr.sent_words = np.array([sent["words"][k] for k in ks]) if "words" in sent else None
    wp = cache.parent / "words.pkl"
    if wp.exists():
        with wp.open("rb") as f:
            w = pickle.load(f)
        vecs = w["vecs"] / np.linalg.norm(w["vecs"], axis=1, keepdims=True)
        WORDS.update({t: vecs[i] for i, t in enumerate(w["terms"])})
    return groups, raw["questions"], raw["text_vectors"]


WORDS: dict[str, np.ndarray] = {}  # analysed term -> unit MiniLM vector of its surface word (``words``)


def _word_vec(word: str, term: str) -> np.ndarray:
    if term not in WORDS:
        v = _encoder().encode([word])[0].astype(np.float32)
        WORDS[term] = v / np.linalg.norm(v)
    return WORDS[term]


def semantic_terms(g: Group, text: str, tau: float, per: int, skip: set[str]) -> dict[str, float]:
    """Terms of the group's vocabulary close to a query word (word cosine >= tau), best ``per`` each.

    Returns term -> cosine (the best over the query's words); the query's own terms and ``skip``
    (names) are left out.
    """
    import re

    from graphmem.recall.lexical import analyze

    if g.word_mat is None:
        g.word_terms = [t for t in g.vocab if t in WORDS]
        g.word_mat = np.stack([WORDS[t] for t in g.word_terms]) if g.word_terms else np.zeros((0, 384))
    terms, mat = g.word_terms or [], g.word_mat
    q: dict[str, str] = {}
    for w in re.findall(r"[a-z][a-z'-]+", text.casefold()):
        ts = analyze(w)
        if len(ts) == 1 and ts[0] not in skip:
            q.setdefault(ts[0], w)
    out: dict[str, float] = {}
    for t, w in q.items():
        sims = mat @ _word_vec(w, t)
        for j in np.argsort(-sims)[: per + 1]:
            c = float(sims[j])
            if c < tau or terms[j] in q or terms[j] in skip:
                continue
            out[terms[j]] = max(out.get(terms[j], 0.0), c)
    return out


def bm25(g: Group, query_terms: list[str], k1: float, b: float, docs_tf: list[Counter] | None = None) -> np.ndarray:
    """BM25 of every document of the group (group statistics), 0 where no term matches."""
    import math

    terms = [t for t in dict.fromkeys(query_terms) if t in g.vocab]
    n = len(g.ids)
    avgdl = g.dl.mean() if g.dl.sum() else 1.0
    norm = k1 * (1.0 - b + b * g.dl / avgdl)
    if not terms:
        return np.zeros(n)
    rows = [g.vocab[t] for t in terms]
    tf = g.tfm[rows]  # terms x docs
    df = np.array([g.df[t] for t in terms], dtype=float)
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
    return (idf[:, None] * tf * (k1 + 1.0) / (tf + norm[None, :])).sum(axis=0)


def bm25_weighted(g: Group, weights: dict[str, float], k1: float, b: float) -> np.ndarray:
    """BM25 with a weight per query term (terms not in the group count 0)."""
    terms = [t for t in weights if t in g.vocab]
    if not terms:
        return np.zeros(len(g.ids))
    n = len(g.ids)
    avgdl = g.dl.mean() if g.dl.sum() else 1.0
    norm = k1 * (1.0 - b + b * g.dl / avgdl)
    tf = g.tfm[[g.vocab[t] for t in terms]]
    df = np.array([g.df[t] for t in terms], dtype=float)
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5)) * np.array([weights[t] for t in terms])
    return (idf[:, None] * tf * (k1 + 1.0) / (tf + norm[None, :])).sum(axis=0)


def top(scores: np.ndarray, k: int, mask: np.ndarray | None = None, positive: bool = False) -> list[int]:
    idx = np.arange(len(scores))
    if mask is not None:
        idx = idx[mask]
    if positive:
        idx = idx[scores[idx] > 0]
    if not len(idx):
        return []
    order = idx[np.lexsort((idx, -scores[idx]))]
    return order[:k].tolist()


BASE: dict[str, Any] = {}

_NO_CONTEXT = {"context_share": 0.0, "tail_rrf_k": None, "tail_learned": 0}  # what needs the context window goes too

VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},  # the product's recipe, SPEAKERMEM_POOL
    "landed": {"w_issue_vector": 0.0, "w_issue_terms": 0.0, "neighbour_share": 0.0,
               "rrf_k": 60, **_NO_CONTEXT},  # before the issue-aware round
    "issue": {"rrf_k": 60, **_NO_CONTEXT},  # the issue-aware round (before the context window)
}

KNOBS: dict[str, tuple[str, str]] = {
    "fulltext_depth": ("lexical", "depth"), "local_bm25": ("lexical", "local_bm25"),
    "w_issue_terms": ("lexical", "issue_terms"), "neighbour_share": ("lexical", "neighbour_share"),
    "vector_depth": ("dense", "depth"), "w_issue_vector": ("dense", "issue_vector"),
    "context_share": ("dense", "context_share"), "context_depth": ("dense", "context_depth"),
    "person_depth": ("anchors", "person_depth"), "person_budget": ("anchors", "person_budget"),
    "member_budget": ("anchors", "member_budget"), "time_depth": ("anchors", "time_depth"),
    "time_budget": ("anchors", "time_budget"), "change_budget": ("anchors", "change_budget"),
    "person_exact_max": ("anchors", "person_exact_max"), "person_oversample": ("anchors", "person_oversample"),
    "fuse_depth": ("fusion", "depth"), "w_fulltext": ("fusion", "w_fulltext"), "w_vector": ("fusion", "w_vector"),
    "w_person": ("fusion", "w_person"), "w_member": ("fusion", "w_member"), "w_time": ("fusion", "w_time"),
    "rrf_k": ("fusion", "rrf_k"), "head_n": ("fusion", "head_n"), "tail_rrf_k": ("fusion", "tail_rrf_k"),
    "head_rerank": ("learned", "head"), "head_sentences": ("learned", "head_sentences"),
    "tail_learned": ("learned", "tail_places"),
    "sentence_load_max": ("learned", "sentence_load_max"),
}
"""The lab's flat knob names (the variants' keys) -> (stage, field) of the recipe."""


def recipe_of(v: dict[str, Any]):
    """The recipe a variant names: :data:`SPEAKERMEM_POOL` with the variant's knobs changed
    (RecipeError for a combination the recipe refuses)."""
    from graphmem.recall.recipe import SPEAKERMEM_POOL

    stages: dict[str, dict[str, Any]] = {}
    for k, val in v.items():
        if k in KNOBS:
            stage, name = KNOBS[k]
            stages.setdefault(stage, {})[name] = val
    if v.get("head_rerank") is False:  # no learned head: no sentence-aware one either
        stages["learned"].setdefault("head_sentences", False)
    return SPEAKERMEM_POOL.evolve(**stages)


class Knobs:
    """A recipe read through the lab's flat knob names (``cfg.rrf_k`` is ``recipe.fusion.rrf_k``)."""

    def __init__(self, recipe) -> None:
        self.recipe = recipe

    def __getattr__(self, name: str) -> Any:
        stage, field_name = KNOBS[name]
        return getattr(getattr(self.recipe, stage), field_name)

    def evolve(self, **knobs: Any) -> Knobs:
        return Knobs(recipe_of({**{k: getattr(self, k) for k in KNOBS}, **knobs}))


_ENC: list = []


def _encoder():
    if not _ENC:
        from graphmem.core.config import get_settings
        from graphmem.core.embed import Embedder

        _ENC.append(Embedder.from_settings(get_settings()))
    return _ENC[0]


def _norm(x: np.ndarray, idx: list[int]) -> np.ndarray:
    """Scores of ``idx`` scaled to [0, 1] by the max (0 when all are 0)."""
    out = np.zeros(len(x))
    if idx:
        vals = x[idx]
        lo, hi = vals.min(), vals.max()
        if hi > lo:
            out[idx] = (vals - lo) / (hi - lo)
    return out


def pool(g: Group, q: dict, tv: dict[str, np.ndarray], v: dict[str, Any], n: int = 40,
         trace: dict[str, Any] | None = None) -> list[str]:
    """The lab's recall pool for one question (mirror of gather_recall + fuse_recall, with switches).

    ``trace``, when given, receives the rankings the pool was fused from (``misses`` reads them).
    """
    from graphmem.recall.anchors import find_anchors
    from graphmem.recall.lexical import analyze
    from graphmem.recall.pool import RecallInputs, fuse_recall

    if v.get("tail"):  # the top `tail[0]` of this config, then the rest of the pool of another
        head_n, other = v["tail"]
        a = pool(g, q, tv, {k: val for k, val in v.items() if k != "tail"}, n)
        b = pool(g, q, tv, {**{k: val for k, val in v.items() if k != "tail"}, **other}, n)
        head = a[:head_n]
        return (head + [m for m in b if m not in set(head)])[:n]
    cfg = Knobs(recipe_of(v))
    question = q["question"]
    from graphmem.query.project import fallback_projection

    proj = fallback_projection(question, g.roster)  # live: Project's changes show here
    q = {**q, "issue": proj.issue}
    if proj.issue not in tv:
        tv[proj.issue] = _encoder().encode([proj.issue])[0].astype(np.float32)
    anchors = find_anchors(question, g.roster, proj, years=g.years)
    if v.get("all_named_every") and len(g.roster) > 2 and set(anchors.persons) >= {m.id for m in g.roster}:
        anchors.persons = []  # naming every member is asking about every member
        anchors.every_member = True
    qv = tv[question]
    cos = g.vectors @ qv
    if v.get("ctx_dense"):  # dense over prev + cur + next besides the turn itself
        a = v["ctx_dense"]
        nb = np.zeros_like(cos)
        cnt = np.zeros_like(cos)
        for arr in (g.prev, g.next):
            ok = arr >= 0
            nb[ok] += cos[arr[ok]]
            cnt[ok] += 1
        cos = cos + a * np.where(cnt > 0, nb / np.maximum(cnt, 1), 0.0)
    k1, b = v.get("k1", 1.2), v.get("b", 0.75)
    qterms = analyze(question)
    ft_scores = bm25(g, qterms, k1, b)
    issue = q["issue"] if q["issue"].strip().casefold() != question.strip().casefold() else ""
    if cfg.w_issue_terms and issue:
        ft_scores = ft_scores + cfg.w_issue_terms * bm25(g, analyze(issue), k1, b)
    if cfg.w_issue_vector and issue:
        cos = cos + cfg.w_issue_vector * (g.vectors @ tv[issue])
    if v.get("sent") and g.sent_vecs is not None:  # dense over single sentences of a long turn
        a, mode = v["sent"]
        ss = g.sent_vecs @ qv
        if cfg.w_issue_vector and issue:
            ss = ss + cfg.w_issue_vector * (g.sent_vecs @ tv[issue])
        if v.get("sent_min_words") and g.sent_words is not None:  # fragments do not count
            ss = np.where(g.sent_words >= v["sent_min_words"], ss, -np.inf)
        best = np.full(len(cos), -np.inf)
        np.maximum.at(best, g.sent_owner, ss)
        has = np.isfinite(best)
        if v.get("sent_depth"):  # only the dense top sent_depth (own cosine) and the fulltext candidates
            d = v["sent_depth"]
            cand = np.zeros(len(cos), dtype=bool)
            cand[top(cos, d)] = True
            ftc = bm25(g, analyze(question), k1, b)
            if cfg.w_issue_terms and issue:
                ftc = ftc + cfg.w_issue_terms * bm25(g, analyze(issue), k1, b)
            cand[top(ftc, cfg.fulltext_depth, positive=True)] = True
            has = has & cand
        if mode == "max":
            cos = np.where(has, np.maximum(cos, best), cos)
        else:
            cos = np.where(has, (1 - a) * cos + a * best, cos)
    cos_anchor = cos  # the anchors' sub-pools rank by the plain cosine (unless ctx_anchor)
    cos_plain = cos
    cos_sent = cos
    if v.get("sent_ctx") and g.sent_vecs is not None:  # sentences re-score only the context window's read
        ss = g.sent_vecs @ qv
        if cfg.w_issue_vector and issue:
            ss = ss + cfg.w_issue_vector * (g.sent_vecs @ tv[issue])
        if v.get("sent_min_words") and g.sent_words is not None:
            ss = np.where(g.sent_words >= v["sent_min_words"], ss, -np.inf)
        best = np.full(len(cos), -np.inf)
        np.maximum.at(best, g.sent_owner, ss)
        cos_sent = np.maximum(cos, best)
    ring: list[int] = []
    if cfg.context_share:  # dense over a context window, as gather_recall: the dense top
        a = cfg.context_share  # context_depth and their NEXT neighbours re-scored
        nb = np.zeros_like(cos)
        cnt = np.zeros_like(cos)
        sides = {"both": (g.prev, g.next), "prev": (g.prev,), "next": (g.next,)}[v.get("ctx_side", "both")]
        for arr in sides:
            ok = arr >= 0
            nb[ok] += cos_sent[arr[ok]]
            cnt[ok] += 1
        if v.get("reply_ctx"):  # the reply parent and children are neighbours too (not yet counted)
            for i, rs in enumerate(g.replies):
                for j in rs:
                    if j not in (g.prev[i], g.next[i]):
                        nb[i] += cos_sent[j]
                        cnt[i] += 1
        ctx = cos_sent + a * np.where(cnt > 0, nb / np.maximum(cnt, 1), 0.0)
        cand = top(cos, max(cfg.context_depth, cfg.vector_depth, n))
        keep = set(cand)
        for i in cand:
            keep.update(int(j) for j in (g.prev[i], g.next[i]) if j >= 0)
            if v.get("reply_ctx"):
                keep.update(g.replies[i])
        mask = np.zeros(len(cos), dtype=bool)
        mask[list(keep)] = True
        ring = sorted(keep)
        if v.get("sent_ctx") == "plain":  # the plain dense order re-scored by sentences as well
            cos_plain = np.where(np.isin(np.arange(len(cos)), cand), cos_sent, -np.inf)
        cos = np.where(mask, ctx, -np.inf)
        if v.get("ctx_anchor"):  # the anchors' sub-pools by the context score as well
            cos_anchor = cos
    if v.get("dprf"):  # dense pseudo-relevance feedback (Rocchio): the centroid of the seeds joins the query
        m_seed, beta, src = v["dprf"]
        if src == "dense":
            seeds = top(cos, m_seed)
        else:  # the first-pass pool's best turns
            first = {k: val for k, val in v.items() if k != "dprf"}
            seeds = [g.by_id[x] for x in pool(g, q, tv, first, n)[:m_seed]]
        cent = g.vectors[seeds].mean(axis=0)
        cent = cent / (np.linalg.norm(cent) or 1.0)
        cos = cos + beta * (g.vectors @ cent)
    if v.get("prf"):  # RM3-like: terms of the top few fused turns, weighted by their idf
        m_docs, n_terms, w = v["prf"]
        seed = top(ft_scores / (ft_scores.max() or 1) + (cos - cos.mean()) / (cos.std() or 1) * v.get("prf_mix", 0.0),
                   m_docs, positive=False)
        cnt: Counter = Counter()
        import math
        N = len(g.ids)
        for i in seed:
            for t, c in g.tf[i].items():
                cnt[t] += c * math.log(1 + (N - g.df[t] + 0.5) / (g.df[t] + 0.5))
        qs = set(qterms)
        extra = [t for t, _ in cnt.most_common(n_terms * 3) if t not in qs][:n_terms]
        if extra:
            ft_scores = ft_scores + w * bm25(g, extra, k1, b)
    sem_scores = None
    if v.get("sem"):  # semantic term expansion: vocabulary words close to the query's words
        tau, per, w_sem, depth, mode = v["sem"]
        skip = {t for m in g.roster for nm in {m.name, *m.aliases} for t in analyze(nm or "")}
        ex = semantic_terms(g, question + " " + issue, tau, per, skip)
        if ex:
            sem_scores = ft_scores + w_sem * bm25_weighted(g, ex, k1, b)
            if mode == "head":
                ft_scores = sem_scores
    if cfg.neighbour_share:
        lam = cfg.neighbour_share
        nb = np.zeros_like(ft_scores)
        for arr in (g.prev, g.next):
            ok = arr >= 0
            nb[ok] = np.maximum(nb[ok], ft_scores[arr[ok]])
        if v.get("reply_smooth"):  # the reply parent and children count as neighbours too
            for i, rs in enumerate(g.replies):
                for j in rs:
                    nb[i] = max(nb[i], ft_scores[j])
        ft_scores = ft_scores + lam * nb
    ft = top(ft_scores, max(cfg.fulltext_depth, n), positive=True)
    vec = top(cos, max(cfg.vector_depth, n))
    if v.get("comb"):  # score fusion instead of rank fusion for the two global rankings
        wf = v["comb"]
        s = wf * _norm(ft_scores, ft) + (1 - wf) * _norm(cos, top(cos, max(cfg.vector_depth, n) * 3))
        order = top(s, max(cfg.fulltext_depth, n), positive=True)
        ft = order
        vec = order[: cfg.vector_depth] if v.get("comb_both") else vec
        ft_scores = s
    inputs = RecallInputs(anchors=anchors)
    inputs.fulltext = [(g.ids[i], float(ft_scores[i])) for i in ft]
    inputs.vector = [g.ids[i] for i in vec]
    if cfg.context_share:
        inputs.vector_plain = [g.ids[i] for i in top(cos_plain, max(cfg.vector_depth, n))]
    inputs.docs = {g.ids[i]: {"doc": g.docs[i], "person_id": g.person[i],
                              "instant": None if not np.isfinite(g.instant[i]) else g.instant[i]} for i in ft}
    _dense_evidence(g, inputs, cos_plain, cos, ring, cfg, tv[question], tv[issue] if issue else None, n)
    persons = list(anchors.persons)
    if not persons and anchors.every_member:
        persons = [m.id for m in g.roster]
    if persons and len(g.roster) > 1:
        parr = np.array(g.person)
        for pid in persons:
            inputs.person_vector[pid] = [g.ids[i] for i in top(cos_anchor, cfg.person_depth, mask=parr == pid)]
        inputs.names = {m.id: [t for t in {m.name, *m.aliases} if len(t) >= 2] for m in g.roster}
    if anchors.windows or anchors.sessions:
        mask = np.zeros(len(g.ids), dtype=bool)
        for a, bnd in anchors.windows:
            mask |= (g.instant >= a) & (g.instant < bnd)
        if anchors.sessions:
            mask |= np.array([s in anchors.sessions for s in g.session])
        inputs.window = [g.ids[i] for i in top(cos_anchor, cfg.time_depth, mask=mask)]
    if sem_scores is not None and v["sem"][4] == "tail":  # the expansion's ranking, fused into the tail
        v = {**v, "sem_tail": [g.ids[i] for i in top(sem_scores, v["sem"][3], positive=True)]}
    if trace is not None:
        trace.update(
            bm25_full=top(bm25(g, qterms, k1, b), len(g.ids), positive=True), ft=ft,
            dense_full=top(cos, len(g.ids)), anchors=anchors,
            person={pid: [g.by_id[m] for m in ids] for pid, ids in inputs.person_vector.items()},
            time=[g.by_id[m] for m in inputs.window],
            ft_scores=ft_scores, cos=cos, cos_plain=cos_plain, inputs=inputs,
        )
    if any(v.get(k) for k in NEW_SWITCHES):  # rankings fused into the tail: measured without the learned tail
        return _tail_variants(g, q, inputs, cfg.evolve(tail_learned=0), v, n, qterms, cos_plain, issue, tv)
    fused = fuse_recall(inputs, n if not (v.get("smooth_pool") or v.get("sess_cap") or v.get("nb_top")) else n * 3,
                        recipe=cfg.recipe)
    if v.get("head"):  # the best head of the fulltext and dense rankings are kept in the top-10
        from graphmem.recall.pool import reserve as _reserve

        h = v["head"]
        ids = [m for m, _ in fused]
        must = [i for i, _ in inputs.fulltext[:h]] + inputs.vector[:h]
        top10 = _reserve(ids, must, v.get("head_n", 10))
        return (top10 + [m for m in ids if m not in set(top10)])[:n]
    if v.get("nb_top"):  # the NEXT neighbours of the best few join the pool (the tail makes room)
        k_top = v["nb_top"]
        ids = [m for m, _ in fused]
        want = []
        for m in ids[:k_top]:
            i = g.by_id[m]
            want += [g.ids[j] for j in (g.prev[i], g.next[i]) if j >= 0 and g.ids[j] not in want]
        head = [m for m in ids if m not in set(want)]
        keep = ids[:n]
        missing = [m for m in want if m not in set(keep)]
        keep = [m for m in keep if m in set(want) or m in set(head[: n - len(missing) - len([w for w in want if w in set(keep)])])]
        return (keep + missing)[:n]
    if v.get("sess_cap"):  # at most sess_cap turns of one session in the pool (the rest fill up after)
        cap = v["sess_cap"]
        seen: Counter = Counter()
        first_pass, rest = [], []
        for m, _ in fused:
            s_ = g.session[g.by_id[m]]
            (first_pass if seen[s_] < cap else rest).append(m)
            seen[s_] += 1
        head = v.get("sess_head", 0)  # the first sess_head keep their fused order
        top_ids = [m for m, _ in fused[:head]]
        order = top_ids + [m for m in first_pass + rest if m not in set(top_ids)]
        return order[:n]
    if v.get("smooth_pool"):  # a turn next to a strong hit gets part of its fused score
        lam = v["smooth_pool"]
        sc = {m: s for m, s in fused}
        new = dict(sc)
        for m, s in fused:
            i = g.by_id[m]
            for j in (g.prev[i], g.next[i]):
                if j >= 0:
                    new[g.ids[j]] = new.get(g.ids[j], 0.0) + lam * s
        keep = [m for m, _ in fused]
        order = sorted(new, key=lambda m: -new[m])
        return order[:n]
    return [m for m, _ in fused]


def _dense_evidence(g: Group, inputs, own: np.ndarray, ctx: np.ndarray, ring: list[int], cfg, qv: np.ndarray,
                    iv: np.ndarray | None, n: int) -> None:
    """inputs.dense and inputs.senders as gather_recall fills them: the product's dense query is
    unit(unit(q) + w unit(issue)), so its cosines are the lab's sums divided by that norm; it
    knows the own cosines of the dense read (the top max(vector_depth, n, context_depth)), the
    ring and the ring's neighbours, and the senders of every message it read."""
    from graphmem.recall.learned import TAIL_DEPTH, DenseEvidence

    q = qv / np.linalg.norm(qv)
    if iv is not None and cfg.w_issue_vector:
        q = q + cfg.w_issue_vector * iv / np.linalg.norm(iv)
    norm = float(np.linalg.norm(q)) or 1.0
    wide = max(cfg.vector_depth, n, cfg.context_depth) if cfg.context_share else max(cfg.vector_depth, n)
    d = DenseEvidence(own=[(g.ids[i], float(own[i]) / norm) for i in top(own, wide)])
    d.cosines = dict(d.own)
    if cfg.context_share and ring:
        d.context = sorted(((g.ids[i], float(ctx[i]) / norm) for i in ring), key=lambda x: (-x[1], x[0]))
        for i in ring:
            nbs = [int(j) for j in (g.prev[i], g.next[i]) if j >= 0]
            d.neighbours[g.ids[i]] = [g.ids[j] for j in nbs]
            for j in [i, *nbs]:
                d.cosines[g.ids[j]] = float(own[j]) / norm
                d.senders[g.ids[j]] = g.person[j]
    if g.sent_vecs is not None:  # query/sentence_ranking (it shapes only the learned tail)
        best = own / norm
        np.maximum.at(best, g.sent_owner, g.sent_vecs @ (q / norm))
        has = np.unique(g.sent_owner)
        order = has[np.lexsort((has, -best[has]))][:TAIL_DEPTH]
        d.sentences = [(g.ids[i], float(best[i])) for i in order]
    d.sessions = {m: g.session[i] for i, m in enumerate(g.ids)}  # the reads return each turn's session
    inputs.dense = d
    inputs.senders = {g.ids[i]: g.person[i] for i in range(len(g.ids))}  # every read returns the sender


ADAPTED: dict[str, dict[str, np.ndarray]] = {}  # ``adapted_tail``: question vectors per oof cache

NEW_SWITCHES = ("noop", "adapted_tail", "hop2", "mmr", "dedup", "issue_budget", "person_tail", "prf_tail", "sess_tail",
                "sess_ev", "when_time", "sent_tail", "sem_tail")

_WHEN_Q = r"^\s*when\b|\b(what|which) (date|day|year|month|week|time)\b|\bhow long (ago|before|after)\b"
_TIME_EXPR = (r"\b(yesterday|today|tonight|tomorrow|ago|last|next|this (week|month|year|weekend)|weekend|"
              r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|"
              r"july|august|september|october|november|december|morning|evening|night|week|month|year|"
              r"recently|earlier|soon|since|\d{1,4})\b")



def _fuse_with(inputs, n: int, vector: list[str], rrf_k: int, recipe, extra: list) -> tuple[list[str], list[str]]:
    """The product's fusion (:func:`graphmem.recall.pool.fuse_rankings`) with ``extra`` (weight,
    ids) rankings added to its weighted-RRF scores: (the first ``n`` ids, the anchors' ids).
    RRF is a sum, so this equals one fusion of all the rankings."""
    from graphmem.recall.pool import fuse_rankings, reserve, weighted_rrf

    every, wanted = fuse_rankings(inputs, 10**9, vector, rrf_k, recipe)
    scores = dict(every)
    for m, s_ in weighted_rrf(extra, rrf_k).items():
        scores[m] = scores.get(m, 0.0) + s_
    order = sorted(scores, key=lambda m: (-scores[m], m))
    return reserve(order, wanted, n), wanted


def _fuse_tail_extra(inputs, n: int, cfg, extra: list) -> list[str]:
    """fuse_recall with ``extra`` rankings fused into the tail (places head_n+1..n) only."""
    from graphmem.recall.pool import fuse_rankings, rerank_pool, reserve
    from graphmem.recall.rerank import reranker_for

    recipe = cfg.recipe
    reranker = reranker_for(recipe)
    head, wanted = fuse_rankings(inputs, n, inputs.vector, cfg.rrf_k, recipe)
    if not inputs.vector_plain or cfg.tail_rrf_k is None or not 0 < cfg.head_n < n:
        return [m for m, _ in rerank_pool(head, inputs, wanted, n, reranker)]
    tail, wanted = _fuse_with(inputs, n, inputs.vector_plain, cfg.tail_rrf_k, recipe, extra)
    first = [m for m, _ in head[: cfg.head_n]]
    merged = list(dict.fromkeys(first + tail))
    return [m for m, _ in rerank_pool([(m, 0.0) for m in reserve(merged, wanted, n)], inputs, wanted, n, reranker)]


def _tail_variants(g: Group, q: dict, inputs, cfg, v: dict, n: int, qterms: list[str], cos: np.ndarray,
                   issue: str, tv: dict) -> list[str]:
    """Round-4 ideas: second hop, MMR tail, near-duplicate removal, issue budget, deeper person tail."""
    import math

    from graphmem.recall.lexical import analyze
    from graphmem.recall.pool import fuse_ids as _fuse_ids
    from graphmem.recall.pool import fuse_recall, fuse_rankings
    from graphmem.recall.pool import reserve as _reserve

    k1, b = v.get("k1", 1.2), v.get("b", 0.75)
    base = [m for m, _ in fuse_recall(inputs, n * 3, recipe=cfg.recipe)]
    extra: list = []
    N = len(g.ids)
    if v.get("hop2"):  # turns that share rare terms with the pool's best turns
        n_seed, n_terms, w, depth = v["hop2"][:4]
        own = v["hop2"][4] if len(v["hop2"]) > 4 else False
        seeds = [g.by_id[m] for m in base[:n_seed]]
        qs = set(qterms) | set(analyze(issue))
        cnt: Counter = Counter()
        for i in seeds:
            terms = analyze(g.docs[i].rsplit("\n", 1)[-1]) if own else g.terms[i]
            for t in set(terms):
                df = g.df[t]
                if t in qs or df < 2:
                    continue
                cnt[t] += math.log(1 + (N - df + 0.5) / (df + 0.5))
        terms = [t for t, _ in cnt.most_common(n_terms)]
        if terms:
            sc = bm25(g, terms, k1, b)
            sc[seeds] = 0
            extra.append((w, [g.ids[i] for i in top(sc, depth, positive=True)]))
    if v.get("prf_tail"):  # RM3-like expansion of the fulltext query, fused into the tail
        m_docs, n_terms, w, depth = v["prf_tail"]
        seeds = [g.by_id[m] for m in base[:m_docs]]
        qs = set(qterms)
        cnt = Counter()
        for i in seeds:
            for t, c in g.tf[i].items():
                if t not in qs:
                    cnt[t] += c * math.log(1 + (N - g.df[t] + 0.5) / (g.df[t] + 0.5))
        terms = [t for t, _ in cnt.most_common(n_terms)]
        sc = bm25(g, qterms, k1, b) + (bm25(g, terms, k1, b) * 0.5 if terms else 0)
        extra.append((w, [g.ids[i] for i in top(sc, depth, positive=True)]))
    if v.get("adapted_tail"):  # the query-adapted dense ranking (bench/recall_adapter.py oof)
        w, depth, path = v["adapted_tail"]
        if path not in ADAPTED:
            with open(path, "rb") as f:
                ADAPTED[path] = pickle.load(f)["text_vectors"]
        ca = g.vectors @ ADAPTED[path][q["question"]]
        extra.append((w, [g.ids[i] for i in top(ca, depth)]))
    if v.get("person_tail"):  # each named person's own turns, deeper, into the tail
        w, depth = v["person_tail"]
        parr = np.array(g.person)
        for pid in inputs.person_vector:
            extra.append((w, [g.ids[i] for i in top(cos, depth, mask=parr == pid)]))
    if v.get("issue_budget"):  # the issue as a second query on its own small budget
        k_b = v["issue_budget"]
        if issue:
            iv = g.vectors @ tv[issue]
            ib = bm25(g, analyze(issue), k1, b)
            sub = _fuse_ids([[g.ids[i] for i in top(ib, 40, positive=True)], [g.ids[i] for i in top(iv, 40)]],
                            cfg.rrf_k)
            extra_ids = sub[:k_b]
            base = _reserve(base, extra_ids, n * 3)
    if v.get("sess_ev"):  # session-level evidence: the best sessions' turns fused into the tail
        n_seed, n_sess, w, depth, mode = v["sess_ev"]
        sess = np.array([s_ if s_ is not None else -1 for s_ in g.session])
        ssc: Counter[int] = Counter()
        if mode == "pool":  # sessions by the fused ranks of the pool's best turns
            for r, m in enumerate(base[:n_seed]):
                s_ = sess[g.by_id[m]]
                if s_ >= 0:
                    ssc[int(s_)] += 1.0 / (cfg.rrf_k + r + 1)  # type: ignore[assignment]
        else:  # sessions by the mean of their top-3 cosines
            for s_ in set(sess.tolist()) - {-1}:
                top3 = np.sort(cos[sess == s_])[::-1][:3]
                ssc[int(s_)] = float(top3.mean())  # type: ignore[assignment]
        best_sess = [s_ for s_, _ in ssc.most_common(n_sess)]
        if best_sess:
            mask = np.isin(sess, best_sess)
            mask[[g.by_id[m] for m in base[:n_seed]]] = False
            extra.append((w, [g.ids[i] for i in top(cos, depth, mask=mask)]))
    if v.get("when_time"):  # "when" questions: turns holding a time expression, by cosine, into the tail
        import re as _re

        w, depth = v["when_time"]
        if _re.search(_WHEN_Q, q["question"], _re.IGNORECASE):
            pat = _re.compile(_TIME_EXPR, _re.IGNORECASE)
            mask = np.array([bool(pat.search(d.rsplit("\n", 1)[-1])) for d in g.docs])
            extra.append((w, [g.ids[i] for i in top(cos, depth, mask=mask)]))
    if v.get("sent_tail") and g.sent_vecs is not None:  # sentence-level dense as a tail-only ranking
        w, depth = v["sent_tail"]
        ss = g.sent_vecs @ tv[q["question"]]
        if cfg.w_issue_vector and issue:
            ss = ss + cfg.w_issue_vector * (g.sent_vecs @ tv[issue])
        bs = np.full(len(cos), -np.inf)
        np.maximum.at(bs, g.sent_owner, ss)  # type: ignore[arg-type]
        sc = np.maximum(cos, bs)
        extra.append((w, [g.ids[i] for i in top(sc, depth)]))
    if v.get("sem_tail"):  # semantic-expansion BM25 into the tail
        extra.append((0.5, v["sem_tail"]))
    pool_ids = _fuse_tail_extra(inputs, n * 3, cfg, extra) if extra else base
    if v.get("dedup"):  # drop a turn nearly identical to a better-ranked one (dense cosine)
        thr = v["dedup"]
        kept: list[int] = []
        for m in pool_ids:
            i = g.by_id[m]
            if kept and float((g.vectors[kept] @ g.vectors[i]).max()) > thr:
                continue
            kept.append(i)
        pool_ids = [g.ids[i] for i in kept]
    if v.get("mmr"):  # places head_n+1..n by maximal marginal relevance over the tail candidates
        lam, cand_n = v["mmr"]
        head = pool_ids[: cfg.head_n]
        cands = [g.by_id[m] for m in pool_ids[cfg.head_n: cand_n]]
        rel = {i: 1.0 - r / max(len(cands), 1) for r, i in enumerate(cands)}
        chosen = [g.by_id[m] for m in head]
        out = []
        while cands and len(chosen) < n:
            sims = (g.vectors[cands] @ g.vectors[chosen].T).max(axis=1) if chosen else np.zeros(len(cands))
            sc = [lam * rel[i] - (1 - lam) * s for i, s in zip(cands, sims)]
            j = int(np.argmax(sc))
            chosen.append(cands[j])
            out.append(cands.pop(j))
        pool_ids = head + [g.ids[i] for i in out]
    if v.get("sess_tail"):  # the tail by MMR over sessions: a session's k-th turn pays (k * penalty)
        pen, cand_n = v["sess_tail"]
        head = pool_ids[: cfg.head_n]
        seen = Counter(g.session[g.by_id[m]] for m in head)
        cands = pool_ids[cfg.head_n: cand_n]
        sc = {}
        for r, m in enumerate(cands):
            sc[m] = r
        out = []
        while cands and len(head) + len(out) < n:
            best = min(cands, key=lambda m: sc[m] + pen * seen[g.session[g.by_id[m]]])
            cands.remove(best)
            seen[g.session[g.by_id[best]]] += 1
            out.append(best)
        pool_ids = head + out
    wanted = fuse_rankings(inputs, n, inputs.vector_plain or inputs.vector, cfg.tail_rrf_k or cfg.rrf_k,
                           cfg.recipe)[1]
    return _reserve(pool_ids, wanted, n)


def recall(ranked: list[str], gold: list[str], k: int) -> float:
    got = set(ranked[:k])
    return sum(1 for e in gold if e in got) / len(gold)


def half(g: Group) -> str:
    return "tune" if g.index % 2 == 1 else "held"


def run(cache: Path, names: list[str], split: bool, cats: bool) -> None:
    groups, questions, tv = load(cache)
    import ast

    for name in names:
        if name in VARIANTS:
            v = {**BASE, **VARIANTS[name]}
        else:  # inline: "k1=0.9 b=0.4"
            v = dict(BASE)
            for kv in name.split():
                k, val = kv.split("=", 1)
                v[k] = ast.literal_eval(val)
        t = time.perf_counter()
        res: list[tuple[dict, list[float]]] = []
        for q in questions:
            g = groups[q["group"]]
            ranked = pool(g, q, tv, v)
            res.append((q, [recall(ranked, q["gold"], k) for k in KS]))
        wall = time.perf_counter() - t
        print(f"== {name}  ({wall:.1f} s)")
        report(res, groups, split, cats)


def report(res: list[tuple[dict, list[float]]], groups: dict[str, Group], split: bool, cats: bool) -> None:
    for bench in ("locomo", "socialmem"):
        rows = [(q, r) for q, r in res if q["bench"] == bench]
        subsets: list[tuple[str, list]] = [("all", rows)]
        if split:
            subsets += [(h, [(q, r) for q, r in rows if half(groups[q["group"]]) == h]) for h in ("tune", "held")]
        if cats:
            for c in sorted({q["category"] for q, _ in rows}):
                subsets.append((f"  {c}", [(q, r) for q, r in rows if q["category"] == c]))
        for label, sub in subsets:
            if not sub:
                continue
            m = np.mean([r for _, r in sub], axis=0)
            print(f"  {bench:9s} {label:12s} n={len(sub):4d} " + " ".join(f"R@{k} {100 * x:5.1f}" for k, x in zip(KS, m)))


def _per_question(cache: Path) -> dict[str, tuple[str, float, float]]:
    groups, questions, tv = load(cache)
    v = dict(BASE)
    out = {}
    for q in questions:
        ranked = pool(groups[q["group"]], q, tv, v)
        out[q["id"]] = (q["bench"], recall(ranked, q["gold"], 10), recall(ranked, q["gold"], 40))
    return out


def paired(cache: Path, others: list[Path], draws: int = 2000) -> None:
    """The landed recipe on ``cache`` against each of ``others`` (e.g. vectors of two encoders),
    question by question: mean difference of R@10 and R@40 per benchmark, its 95% bootstrap
    interval over questions (``draws`` resamples, seed 0), and how many questions gain or lose."""
    a = _per_question(cache)
    rng = np.random.default_rng(0)
    for other in others:
        b = _per_question(other)
        print(f"== {other} against {cache}")
        for bench in ("locomo", "socialmem"):
            ids = [i for i in a if a[i][0] == bench and i in b]
            for j, k in ((1, 10), (2, 40)):
                d = np.array([b[i][j] - a[i][j] for i in ids])
                boot = [d[rng.integers(len(d), size=len(d))].mean() for _ in range(draws)]
                print(f"  {bench:9s} R@{k}: {d.mean():+.4f} (95% {np.percentile(boot, 2.5):+.4f} to "
                      f"{np.percentile(boot, 97.5):+.4f}); {int((d > 0).sum())} questions better, "
                      f"{int((d < 0).sum())} worse")


def _bucket(r: int | None) -> str:
    if r is None:
        return "none"
    for hi in (10, 40, 100, 200):
        if r <= hi:
            return f"<={hi}"
    return ">200"


BUCKETS = ("<=10", "<=40", "<=100", "<=200", ">200", "none")


def misses(cache: Path, name: str, out: Path) -> None:
    """Failure analysis of one variant: where every gold turn missing from the top-10 / top-40 ranks.

    For each missed gold turn: its rank in the fulltext ranking (group-local BM25 with issue and
    smoothing, 200 deep), in the dense ranking (every message of the group), in the raw
    question-only BM25, in the person / time anchors' sub-pools; whether a NEXT neighbour or a
    turn of the same session is in the pool; the question's category and gold count. Prints a
    summary per benchmark and category; one row per miss goes to ``out`` (TSV).
    """
    import ast

    groups, questions, tv = load(cache)
    v = dict(BASE)
    if name in VARIANTS:
        v.update(VARIANTS[name])
    elif name:
        for kv in name.split():
            k, val = kv.split("=", 1)
            v[k] = ast.literal_eval(val)
    rows: list[dict[str, Any]] = []
    per_q: list[dict[str, Any]] = []
    for q in questions:
        g = groups[q["group"]]
        tr: dict[str, Any] = {}
        ranked = pool(g, q, tv, v, trace=tr)
        pos = {m: r for r, m in enumerate(ranked, start=1)}
        rank_of = {key: {i: r for r, i in enumerate(tr[key], start=1)} for key in ("ft", "dense_full", "bm25_full")}
        gold = [e for e in q["gold"] if e in g.by_id]
        per_q.append({"q": q, "gold": len(gold), "r10": recall(ranked, gold, 10), "r40": recall(ranked, gold, 40),
                      "oracle10": min(10, len(gold)) / len(gold) if gold else 0.0})
        for e in gold:
            i = g.by_id[e]
            p = pos.get(e)
            if p is not None and p <= 10:
                continue
            nbs = [j for j in (g.prev[i], g.next[i]) if j >= 0]
            sub_p = min((lst.index(i) + 1 for lst in tr["person"].values() if i in lst), default=None)
            sub_t = tr["time"].index(i) + 1 if i in tr["time"] else None
            ranks = {"ft": rank_of["ft"].get(i), "dense": rank_of["dense_full"].get(i),
                     "bm25q": rank_of["bm25_full"].get(i), "person": sub_p, "time": sub_t}
            best = min((r for k, r in ranks.items() if k in ("ft", "dense") and r is not None), default=None)
            sess_in_pool = any(g.session[g.by_id[m]] == g.session[i] for m in ranked[:40] if g.session[i] is not None)
            rows.append({
                "bench": q["bench"], "group": q["group"], "qid": q["id"], "category": q["category"],
                "n_gold": len(gold), "pool_rank": p, "miss40": p is None, **ranks, "best": best,
                "nb_in10": any(g.ids[j] in pos and pos[g.ids[j]] <= 10 for j in nbs),
                "nb_in40": any(g.ids[j] in pos for j in nbs),
                "sess_in40": sess_in_pool,
                "anchored": bool(tr["anchors"].persons or tr["anchors"].windows or tr["anchors"].sessions),
                "question": q["question"].replace("\t", " ").replace("\n", " ")[:160],
                "doc": g.docs[i].replace("\t", " ").replace("\n", " | ")[:200],
            })
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as f:
        keys = list(rows[0]) if rows else []
        f.write("\t".join(keys) + "\n")
        for r in rows:
            f.write("\t".join(str(r[k]) for k in keys) + "\n")
    print(f"{len(rows)} missed gold turns (top-10) -> {out}")
    hdr = (f"{'bench':9s} {'cat':11s} {'q':>4s} {'gold':>5s} {'R@10':>5s} {'orc10':>5s} {'R@40':>5s} | "
           f"{'miss10':>6s} " + " ".join(f"{b:>5s}" for b in BUCKETS) + f" {'ft<d':>5s} {'nb10':>5s} | "
           f"{'miss40':>6s} " + " ".join(f"{b:>5s}" for b in BUCKETS) + f" {'nb40':>5s} {'ses40':>5s}")
    print("best rank of a missed gold turn in the fulltext or dense ranking (share of misses); ft<d: fulltext"
          " ranks it better than dense; nb10/nb40: a NEXT neighbour is in the top-10/40; ses40: a turn of its"
          " session is in the pool")
    print(hdr)
    for bench in ("locomo", "socialmem"):
        qs = [x for x in per_q if x["q"]["bench"] == bench]
        for cat in ["all", *sorted({x["q"]["category"] for x in qs})]:
            sq = qs if cat == "all" else [x for x in qs if x["q"]["category"] == cat]
            sr = [r for r in rows if r["bench"] == bench and (cat == "all" or r["category"] == cat)]
            m10 = sr
            m40 = [r for r in sr if r["miss40"]]

            def share(lst: list, pred) -> str:
                return f"{sum(1 for r in lst if pred(r)) / len(lst):5.2f}" if lst else "    -"

            line = (f"{bench:9s} {cat:11s} {len(sq):4d} {sum(x['gold'] for x in sq):5d} "
                    f"{np.mean([x['r10'] for x in sq]):5.3f} {np.mean([x['oracle10'] for x in sq]):5.3f} "
                    f"{np.mean([x['r40'] for x in sq]):5.3f} | {len(m10):6d} "
                    + " ".join(share(m10, lambda r, b=b: _bucket(r["best"]) == b) for b in BUCKETS)
                    + " " + share(m10, lambda r: (r["ft"] or 10**9) < (r["dense"] or 10**9))
                    + " " + share(m10, lambda r: r["nb_in10"]) + f" | {len(m40):6d} "
                    + " ".join(share(m40, lambda r, b=b: _bucket(r["best"]) == b) for b in BUCKETS)
                    + " " + share(m40, lambda r: r["nb_in40"]) + " " + share(m40, lambda r: r["sess_in40"]))
            print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=("dump", "sentences", "words", "run", "misses", "paired"))
    ap.add_argument("--against", type=Path, nargs="+", help="paired: the caches compared with --cache")
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--cache", type=Path, default=Path("runs/lab/cache.pkl"))
    ap.add_argument("--variants", default="base")
    ap.add_argument("--benches", default="locomo,socialmem")
    ap.add_argument("--split", action="store_true")
    ap.add_argument("--cats", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("runs/lab/misses.tsv"))
    args = ap.parse_args()
    if args.cmd == "dump":
        dump(args.data, args.cache, args.benches.split(","))
    elif args.cmd == "sentences":
        sentences(args.cache)
    elif args.cmd == "words":
        words(args.cache)
    elif args.cmd == "paired":
        paired(args.cache, args.against or [])
    elif args.cmd == "misses":
        misses(args.cache, args.variants, args.out)
    else:
        run(args.cache, args.variants.split(";"), args.split, args.cats)


if __name__ == "__main__":
    main()
