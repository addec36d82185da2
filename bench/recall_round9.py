"""Lab of the ninth recall round (issue 29): head features, head diversity and tail feeds, out of fold.

Usage (after ``bench/recall_lab.py dump`` and ``bench/recall_lab.py sentences``):
    .venv/bin/python bench/recall_round9.py collect                 # the fused pools, once (runs/lab/round9.pkl)
    .venv/bin/python bench/recall_round9.py head [--extra sent,sess,qtype,qfull,qwhen,len] [--wide N] [--div L]
    .venv/bin/python bench/recall_round9.py tail [--extra prf|prfc|hop] [--seeds 5] [--terms 10] [--depth 40]

``collect`` builds every question's fused pool as the product fuses it, without the learned head
and tail (``recall_lab.pool`` with ``head_rerank=False, tail_learned=0``), with the reads it was
fused from. ``head`` fits the learned head (``bench/recall_ltr.py``'s logistic regression) on
the sixth round's features plus ``--extra`` ones and scores it out of fold (tune / held-out
halves both ways, and one benchmark against the other), R@10:

- ``sent``: the turn's rank and score gap in the best-sentence ranking (shipped:
  ``learned.head_sentences``);
- ``sess``: Σ 1 / (20 + place) of the fused pool's first 10 turns in the turn's session, and
  the share of the pool in its session;
- ``qtype``: a time expression in the turn's own line and its product with a "when" question;
  ``qwhen`` adds the products of "when" with the fulltext, context, own-cosine and sentence
  ranks, ``qfull`` the same for "when", yes/no and "who" questions (question-type-aware weights);
- ``len``: log of the turn's words;
- ``--wide N``: the head chooses from the pool and the top N of the sentence, fulltext and
  context rankings (R@40 printed too: the pool is the head, then the rest in pool order);
- ``--div L``: the head's 10 picked greedily, each pick's standardised score less L times the
  number already picked from its session (session diversity).

``tail`` re-ranks the pool's head as the product does and fits the learned tail (10 places) on
:data:`graphmem.recall.learned.TAIL_FEATURES` plus a feed: ``prf`` the rank in a BM25 ranking of
the best ``--terms`` terms of the head's first ``--seeds`` turns by the Bo1 weight
(divergence from randomness, terms of the question and terms in one turn left out), ``prfc``
also its top ``--depth`` as candidates, ``hop`` a second hop: the turns closest to the centroid of
the head's first ``--seeds`` turns' vectors in other sessions than theirs, as candidates and
rank; R@40 out of fold. Nothing here is a test; figures: docs/lab/recall-rounds.md, ninth round.
"""

from __future__ import annotations

import argparse
import math
import pickle
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_lab  # noqa: E402
import recall_ltr  # noqa: E402

from graphmem.recall.learned import (  # noqa: E402
    RRF_K,
    head_features,
    rerank_head,
    rerank_tail,
    sentence_features,
    tail_candidates,
    tail_features,
)
from graphmem.recall.lexical import analyze  # noqa: E402
from graphmem.recall.pool import fuse_rankings, reserve  # noqa: E402
from graphmem.recall.recipe import SPEAKERMEM_POOL  # noqa: E402

LAB = Path("runs/lab")
WHEN = re.compile(recall_lab._WHEN_Q, re.I)
TIME = re.compile(recall_lab._TIME_EXPR, re.I)
YESNO = re.compile(r"^\s*(is|are|does|do|did|would|will|can|has|have|was|were|could|should)\b", re.I)
WHO = re.compile(r"^\s*who\b", re.I)


def rr(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / (RRF_K + rank)


def collect(cache: Path) -> None:
    groups, questions, tv = recall_lab.load(cache)
    v = {**recall_lab.BASE, "head_rerank": False, "tail_learned": 0}
    out = []
    for q in questions:
        g = groups[q["group"]]
        tr: dict = {}
        ids = recall_lab.pool(g, q, tv, v, trace=tr)
        out.append({"q": q, "pool": ids, "inp": tr["inputs"], "half": recall_lab.half(g)})
    with (LAB / "round9.pkl").open("wb") as f:
        pickle.dump(out, f)
    print(f"{len(out)} pools -> {LAB / 'round9.pkl'}")


def _rows(cache: Path):
    groups, _, _ = recall_lab.load(cache)
    with (LAB / "round9.pkl").open("rb") as f:
        return groups, pickle.load(f)


def _halves(rows: list[dict], ranked: dict[int, list[str]], k: int, base) -> None:
    for h in ("tune", "held"):
        for bench in ("locomo", "socialmem"):
            sub = [(i, r) for i, r in enumerate(rows) if r["half"] == h and r["q"]["bench"] == bench]
            b = np.mean([recall_lab.recall(base(r), r["q"]["gold"], k) for _, r in sub])
            n = np.mean([recall_lab.recall(ranked[i], r["q"]["gold"], k) for i, r in sub])
            print(f"    {h:4s} {bench:9s} R@{k} {b:.3f} -> {n:.3f}")


def head(cache: Path, extra: set[str], wide: int, div: float, c: float) -> None:
    groups, rows = _rows(cache)
    for r in rows:
        q, pool, inp = r["q"], r["pool"], r["inp"]
        g = groups[q["group"]]
        cands = list(pool)
        if wide:
            from graphmem.recall.learned import sentence_order

            more = [m for m, _ in sentence_order(inp.dense)[:wide]] + [m for m, _ in inp.fulltext[:wide]]
            cands = list(dict.fromkeys(cands + more + [m for m, _ in inp.dense.context[:wide]]))
        X = head_features(cands, inp.fulltext, inp.dense, inp.person_vector, inp.window, inp.senders, head_n=10)
        X[len(pool):, :2] = 0.0
        blocks = [X]
        sent = sentence_features(cands, inp.dense)
        if "sent" in extra:
            blocks.append(sent)
        sess = inp.dense.sessions
        if "sess" in extra:
            by_s: dict = {}
            for place, m in enumerate(pool[:10], 1):
                if sess.get(m) is not None:
                    by_s.setdefault(sess[m], []).append((m, rr(place)))
            cnt = Counter(sess.get(m) for m in pool if sess.get(m) is not None)
            blocks.append(np.array([[sum(w for x, w in by_s.get(sess.get(m), []) if x != m),
                                     cnt.get(sess.get(m), 0) / 40.0] for m in cands]))
        text = q["question"]
        when, yesno, who = (float(bool(p.search(text))) for p in (WHEN, YESNO, WHO))
        ft = {m: k for k, (m, _) in enumerate(inp.fulltext, 1)}
        ctx = {m: k for k, (m, _) in enumerate(inp.dense.context, 1)}
        own = {m: k for k, (m, _) in enumerate(inp.dense.own, 1)}
        if "qtype" in extra or "qwhen" in extra or "qfull" in extra:
            cols = []
            for j, m in enumerate(cands):
                te = float(bool(TIME.search(g.docs[g.by_id[m]].rsplit("\n", 1)[-1])))
                ranks = [rr(ft.get(m)), rr(ctx.get(m)), rr(own.get(m)), sent[j, 0]]
                row = [te, when * te]
                if "qwhen" in extra:
                    row += [when * x for x in ranks]
                if "qfull" in extra:
                    row += [t * x for t in (when, yesno, who) for x in ranks]
                cols.append(row)
            blocks.append(np.array(cols))
        if "len" in extra:
            blocks.append(np.array([[math.log1p(len(g.docs[g.by_id[m]].rsplit("\n", 1)[-1].split()))] for m in cands]))
        gold = set(q["gold"])
        r["cands"], r["X"], r["y"] = cands, np.hstack(blocks), np.array([m in gold for m in cands])

    def order(r: dict, w: np.ndarray) -> list[str]:
        score = r["X"] @ w
        o = sorted(range(len(r["cands"])), key=lambda k: (-score[k], k))
        if div > 0:
            sess = r["inp"].dense.sessions
            seen: Counter = Counter()
            chosen: list[int] = []
            sd = float(np.std(score)) or 1.0
            while o and len(chosen) < 10:
                best = max(o, key=lambda k: score[k] / sd - div * seen[sess.get(r["cands"][k])])
                o.remove(best)
                chosen.append(best)
                seen[sess.get(r["cands"][best])] += 1
            o = chosen
        top = [r["cands"][k] for k in o[:10]]
        return top + [m for m in r["pool"] if m not in set(top)]

    for label, split in recall_ltr.SPLITS:
        ranked = recall_ltr.out_of_fold(rows, split, order, c)
        for k in ((10, 40) if wide else (10,)):
            recall_ltr.score(rows, ranked, label, k=k)
        if label == "halves":
            _halves(rows, ranked, 10, lambda r: r["pool"])


def tail(cache: Path, extra: set[str], seeds: int, terms: int, depth: int) -> None:
    groups, rows = _rows(cache)
    out = []
    for r in rows:
        q, fused, inp = r["q"], r["pool"], r["inp"]
        g = groups[q["group"]]
        X0 = np.hstack([head_features(fused, inp.fulltext, inp.dense, inp.person_vector, inp.window, inp.senders),
                        sentence_features(fused, inp.dense)])
        from graphmem.recall.learned import head_sentence_weights

        pool = rerank_head(fused, X0, 10, head_sentence_weights().weights)  # the product's head
        cand = tail_candidates(pool, inp.fulltext, inp.dense, 150)
        feed: dict[str, int] = {}
        first = [g.by_id[m] for m in pool[:seeds]]
        if extra & {"prf", "prfc"}:
            n = len(g.ids)
            qts = set(analyze(q["question"])) | set(analyze(q["issue"] or ""))
            tf: Counter = Counter()
            for i in first:
                tf.update(g.tf[i])
            weight = {}
            for t, cnt in tf.items():
                if t in qts or g.df[t] < 2:
                    continue
                lam = float(g.tfm[g.vocab[t]].sum()) / n  # the term's mean frequency in the group
                weight[t] = cnt * math.log2((1 + lam) / lam) + math.log2(1 + lam)  # Bo1
            best = dict(sorted(weight.items(), key=lambda x: -x[1])[:terms])
            if best:
                mx = max(best.values())
                sc = recall_lab.bm25_weighted(g, {t: x / mx for t, x in best.items()}, 1.2, 0.75)
                sc[first] = 0
                ranked = [g.ids[i] for i in recall_lab.top(sc, depth, positive=True)]
                feed = {m: k for k, m in enumerate(ranked, 1)}
                if "prfc" in extra:
                    cand = list(dict.fromkeys(cand + ranked))
        if "hop" in extra:
            cent = g.vectors[first].mean(axis=0)
            sc = g.vectors @ cent
            sess = np.array([s if s is not None else -1 for s in g.session])
            mask = ~np.isin(sess, list({sess[i] for i in first}))
            ranked = [g.ids[i] for i in recall_lab.top(sc, depth, mask=mask)]
            feed = {m: k for k, m in enumerate(ranked, 1)}
            cand = list(dict.fromkeys(cand + ranked))
        X = tail_features(cand, head_features(cand, inp.fulltext, inp.dense, inp.person_vector, inp.window,
                                              inp.senders), pool, inp.dense, 10)
        if extra:
            X = np.hstack([X, np.array([[rr(feed.get(m))] for m in cand])])
        keep = set(pool[:30])
        wanted = fuse_rankings(inp, len(pool), inp.vector_plain or inp.vector, 60, SPEAKERMEM_POOL)[1]
        gold = set(q["gold"])
        out.append({"q": q, "pool": pool, "cand": cand, "X": X, "rest": [k for k, m in enumerate(cand) if m not in keep],
                    "wanted": wanted, "y": np.array([m in gold for m in cand]), "half": r["half"]})

    def order(r: dict, w: np.ndarray) -> list[str]:
        n = len(r["pool"])
        return reserve(rerank_tail(r["pool"], r["cand"], r["X"], 10, n, w), r["wanted"], n)

    for label, split in recall_ltr.SPLITS:
        ranked = recall_ltr.out_of_fold(out, split, order, 1.0,
                                        train=lambda r: {"X": r["X"][r["rest"]], "y": r["y"][r["rest"]]})
        recall_ltr.score(out, ranked, label, k=40)
        if label == "halves":
            _halves(out, ranked, 40, lambda r: r["pool"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("collect", "head", "tail"))
    ap.add_argument("--cache", type=Path, default=LAB / "cache.pkl")
    ap.add_argument("--extra", default="")
    ap.add_argument("--wide", type=int, default=0)
    ap.add_argument("--div", type=float, default=0.0)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--terms", type=int, default=10)
    ap.add_argument("--depth", type=int, default=40)
    a = ap.parse_args()
    extra = {x for x in a.extra.split(",") if x}
    if a.cmd == "collect":
        collect(a.cache)
    elif a.cmd == "head":
        head(a.cache, extra, a.wide, a.div, a.c)
    else:
        tail(a.cache, extra, a.seeds, a.terms, a.depth)


if __name__ == "__main__":
    main()
