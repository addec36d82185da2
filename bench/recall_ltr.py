"""Lab: fit and judge the learned re-ranking of the pool's first places (graphmem.recall.learned).

Usage (after ``bench/recall_lab.py dump``):
    .venv/bin/python bench/recall_ltr.py [--cache runs/lab/cache.pkl] [--c 1.0] [--drop F1,F2] [--export]
    .venv/bin/python bench/recall_ltr.py --sentences [--export]   # the sentence-aware head (head_sent.json)
    .venv/bin/python bench/recall_ltr.py --tail 150 [--learned 10] [--export]   # the pool's last places

For every question the pool is built as the product builds it without the re-ranking
(``recall_lab.pool`` with ``head_rerank=False``), and each of its 40 turns gets the product's
own features (:func:`graphmem.recall.learned.head_features`, from the same reads the lab
mirrors). A logistic regression (scikit-learn, class-balanced, features standardised) learns
P(turn is gold evidence | features); the pool's first 10 places are then the turns with the
highest score and the rest keep the pool's order, so R@40 cannot move and R@10 shows the effect.

Every figure is out of fold, so no question is scored by a model that saw it:
- halves: trained on the tune half (odd LoCoMo conversations, odd SocialMem networks), scored
  on the held-out half, and the other way round;
- transfer: trained on one benchmark, scored on the other (the unseen-network case of issue 11).
Prints R@10 before -> after per benchmark and category. ``--export`` fits on every question
and writes the product's artifact ``graphmem/recall/weights/head.json`` (``--to`` another path):
the weights (coefficients divided by the features' standard deviations: the product needs no
scaler, and only the order counts), the feature names, head length, what it was fitted on, the
code version (graphmem's and the git commit) and the out-of-fold figures printed. Nothing here is a test.

``--sentences`` adds each turn's rank and gap in the turns ranked by their best sentence
(:func:`graphmem.recall.learned.sentence_features`, :data:`HEAD_SENT_FEATURES`; needs
``recall_lab.py sentences``) to the head's features; ``--export`` then writes
``weights/head_sent.json``, the product's head (``learned.head_sentences``, ninth round).

``--tail D`` judges the learned tail (:func:`graphmem.recall.learned.rerank_tail`) the same
way: the pool as the product builds it without the tail, the candidates the reads returned
(``D`` deep), the pool's last ``--learned`` places chosen by the score and the anchors' turns
kept; R@40 before -> after, out of fold (``--export``: ``weights/tail.json``). ``--learned 30``
is the experiment of the sixth round (every place after the first 10 chosen).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import recall_lab  # noqa: E402

from graphmem.recall.learned import (  # noqa: E402
    FEATURES,
    HEAD_SENT_FEATURES,
    RRF_K,
    TAIL_FEATURES,
    WEIGHTS_DIR,
    LearnedWeights,
    head_features,
    head_weights,
    load_weights,
    rerank_head,
    rerank_tail,
    sentence_features,
    tail_candidates,
    tail_features,
)
from graphmem.recall.recipe import SPEAKERMEM_POOL  # noqa: E402

HEAD = head_weights().head_n
"""The head length the features and the re-ranking use (the product's artifact's)."""


def export(name: str, features: tuple[str, ...], w: np.ndarray, to: Path | None, cache: Path, command: str,
           metrics: dict[str, Any]) -> None:
    """Write the fitted weights as the product's JSON artifact and read it back as the product does."""
    import graphmem

    path = to or WEIGHTS_DIR / f"{name}.json"
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parents[1], check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    art = LearnedWeights(
        name=name, features=features, weights=w, head_n=HEAD, feature_rrf_k=RRF_K,
        fitted_on={"data": f"every question of the lab cache {cache} (bench/recall_lab.py dump: LoCoMo and "
                           "staged SocialMemBench)", "split": "all questions (the metrics: out of fold)",
                   "command": command},
        code_version={"graphmem": graphmem.__version__, "commit": commit}, metrics=metrics, path=path,
    )
    import json

    path.write_text(json.dumps(art.as_json(), indent=1) + "\n", encoding="utf-8")
    load_weights(path, features)  # refused now, not in the product, if it does not fit the code
    print(f"{name} weights -> {path}")


def collect(cache: Path, sentences: bool = False) -> list[dict]:
    groups, questions, tv = recall_lab.load(cache)
    v = {**recall_lab.BASE, "head_rerank": False, "tail_learned": 0}  # the fused pool, as the product fuses it
    out = []
    for q in questions:
        g = groups[q["group"]]
        tr: dict = {}
        ids = recall_lab.pool(g, q, tv, v, trace=tr)
        inp = tr["inputs"]
        X = head_features(ids, inp.fulltext, inp.dense, inp.person_vector, inp.window, inp.senders)
        if sentences:
            X = np.hstack([X, sentence_features(ids, inp.dense)])
        gold = set(q["gold"])
        out.append({"q": q, "pool": ids, "X": X, "y": np.array([m in gold for m in ids]), "half": recall_lab.half(g)})
    return out


def fit(rows: list[dict], c: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X = np.vstack([r["X"] for r in rows])
    y = np.concatenate([r["y"] for r in rows])
    model = make_pipeline(StandardScaler(), LogisticRegression(C=c, class_weight="balanced", max_iter=5000))
    model.fit(X, y)
    return model


def raw_weights(model) -> np.ndarray:
    """Weights on the unscaled features (the scaler's division folded in; no intercept)."""
    scale = model[0].scale_
    return model[-1].coef_[0] / np.where(scale > 0, scale, 1.0)


SPLITS = (("halves", lambda r: r["half"]), ("transfer", lambda r: r["q"]["bench"]))
"""Out-of-fold splits: tune / held-out halves, and one benchmark against the other."""


def out_of_fold(rows: list[dict], split, order, c: float, train=lambda r: r) -> dict[int, list[str]]:
    """Row index -> ``order(row, weights)`` with weights fitted on the rows of the other parts
    of ``split`` (``train(row)``: the row's part that is fitted on, {"X", "y"})."""
    ranked: dict[int, list[str]] = {}
    for part in sorted({split(r) for r in rows}):
        w = raw_weights(fit([train(r) for r in rows if split(r) != part], c))
        ranked.update({k: order(r, w) for k, r in enumerate(rows) if split(r) == part})
    return ranked


def score(rows: list[dict], ranked: dict[int, list[str]], label: str, k: int = 10) -> dict[str, list[float]]:
    """R@k of the pool -> of ``ranked``, per benchmark and category (printed; returned per
    benchmark as {"label bench R@k": [before, after]})."""
    figures: dict[str, list[float]] = {}
    for bench in ("locomo", "socialmem"):
        sub = [(i, r) for i, r in enumerate(rows) if r["q"]["bench"] == bench and i in ranked]
        if not sub:
            continue

        def rk(items, use: bool) -> float:
            return float(np.mean([recall_lab.recall(ranked[i] if use else r["pool"], r["q"]["gold"], k)
                                  for i, r in items]))

        figures[f"{label} {bench} R@{k}"] = [round(rk(sub, False), 4), round(rk(sub, True), 4)]
        line = f"  {label:9s} {bench:9s} n={len(sub):4d} R@{k} {rk(sub, False):.3f} -> {rk(sub, True):.3f} |"
        for c in sorted({r["q"]["category"] for _, r in sub}):
            cs = [(i, r) for i, r in sub if r["q"]["category"] == c]
            line += f" {c} {rk(cs, False):.3f}->{rk(cs, True):.3f}"
        print(line)
    return figures


def tail_experiment(cache: Path, depth: int, learned: int, c: float, to_export: bool, drop: set[str],
                    to: Path | None = None, head_sentences: bool = True) -> None:
    """``--tail D``: the pool's last ``learned`` places chosen by the learned tail score from the
    pool and the candidates the reads returned (each ranking ``D`` deep); R@40 before -> after,
    out of fold (docs/query.md, sixth and seventh rounds)."""
    from graphmem.recall.pool import fuse_rankings, reserve

    groups, questions, tv = recall_lab.load(cache)
    cfg = SPEAKERMEM_POOL.fusion
    rows = []
    for q in questions:
        g = groups[q["group"]]
        tr: dict = {}
        pool = recall_lab.pool(g, q, tv, {**recall_lab.BASE, "tail_learned": 0, "head_sentences": head_sentences},
                               trace=tr)
        inp = tr["inputs"]
        cand = tail_candidates(pool, inp.fulltext, inp.dense, depth)
        X = tail_features(cand, head_features(cand, inp.fulltext, inp.dense, inp.person_vector, inp.window,
                                              inp.senders), pool, inp.dense, cfg.head_n)
        X[:, [k for k, f in enumerate(TAIL_FEATURES) if f in drop]] = 0.0
        keep = set(pool[: len(pool) - learned])
        rest = [k for k, m in enumerate(cand) if m not in keep]
        wanted = fuse_rankings(inp, len(pool), inp.vector_plain or inp.vector, cfg.tail_rrf_k or cfg.rrf_k,
                               SPEAKERMEM_POOL)[1]
        gold = set(q["gold"])
        rows.append({"q": q, "pool": pool, "cand": cand, "X": X, "rest": rest, "wanted": wanted,
                     "y": np.array([m in gold for m in cand]), "half": recall_lab.half(g)})

    def tail(r: dict, w: np.ndarray) -> list[str]:
        n = len(r["pool"])
        return reserve(rerank_tail(r["pool"], r["cand"], r["X"], learned, n, w), r["wanted"], n)

    def train(r: dict) -> dict:
        return {"X": r["X"][r["rest"]], "y": r["y"][r["rest"]]}

    metrics: dict[str, list[float]] = {}
    for label, split in SPLITS:
        metrics |= score(rows, out_of_fold(rows, split, tail, c, train=train), label, k=40)
    if to_export:
        w = raw_weights(fit([train(r) for r in rows], c))
        export("tail", TAIL_FEATURES, np.array([float(f"{x:.6g}") for x in w]), to, cache,
               f"bench/recall_ltr.py --tail {depth} --learned {learned} --c {c} --export", metrics)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("runs/lab/cache.pkl"))
    ap.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    ap.add_argument("--drop", default="", help="comma-separated FEATURES (TAIL_FEATURES with --tail) left out")
    ap.add_argument("--export", action="store_true",
                    help="write the weights fitted on every question (graphmem/recall/weights/head.json or tail.json)")
    ap.add_argument("--to", type=Path, default=None, help="with --export: write the artifact here instead")
    ap.add_argument("--tail", type=int, default=0, metavar="D",
                    help="instead: the learned tail, choosing the pool's last places from candidates D deep")
    ap.add_argument("--learned", type=int, default=10, help="with --tail: how many of the last places it chooses")
    ap.add_argument("--sentences", action="store_true",
                    help="the head weighs the sentence ranking too (head_sent.json); with --tail: the pool's head "
                         "is re-ranked by it (the product's), --no-head-sentences: by the sixth round's")
    ap.add_argument("--no-head-sentences", action="store_true", help="with --tail: the head of head.json")
    a = ap.parse_args()
    if a.tail:
        tail_experiment(a.cache, a.tail, a.learned, a.c, a.export, {f for f in a.drop.split(",") if f}, a.to,
                        head_sentences=not a.no_head_sentences)
        return
    rows = collect(a.cache, a.sentences)
    names = HEAD_SENT_FEATURES if a.sentences else FEATURES
    drop = {names.index(f) for f in a.drop.split(",") if f}
    for r in rows:
        r["X"][:, list(drop)] = 0.0
    metrics: dict[str, list[float]] = {}
    for label, split in SPLITS:
        metrics |= score(rows, out_of_fold(rows, split, lambda r, w: rerank_head(r["pool"], r["X"], HEAD, w), a.c),
                         label)
    if a.export:
        w = raw_weights(fit(rows, a.c))
        export("head_sent" if a.sentences else "head", names, np.array([float(f"{x:.6g}") for x in w]), a.to,
               a.cache, f"bench/recall_ltr.py{' --sentences' if a.sentences else ''} --c {a.c} --export", metrics)


if __name__ == "__main__":
    main()
