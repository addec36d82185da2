"""Lab: a query-side linear adapter for the dense ranking (issue 29, tenth round).

The stored message vectors stay as they are (no ``embed --rebuild``); only the question's
MiniLM vector is mapped before the dense reads: ``q' = normalize(q + U (V^T q))`` with
``U, V`` of shape (384, rank), fitted so that, within a group, the gold turns of a question
outrank the other turns (softmax cross-entropy over every turn of the group at temperature
``tau``, plus ``l2 * (|U|^2 + |V|^2)``).

Usage (after ``bench/recall_lab.py dump``):
    .venv/bin/python bench/recall_adapter.py eval [--rank 16 --tau 0.05 --l2 1e-3 --epochs 40]
    .venv/bin/python bench/recall_adapter.py oof --out runs/lab/oof/cache.pkl [same knobs]

``eval`` prints dense-alone R@10 / R@40 (the turn's own cosine, group-local) out of fold:
fitted on one half (odd LoCoMo conversations and odd SocialMem networks = tune), scored on the
other, both ways, by benchmark and category, next to the plain MiniLM question vector; and
fitted on LoCoMo alone, scored on SocialMem (transfer).
``oof`` writes a copy of the lab cache whose question vectors are each replaced by the adapter
fitted on the other half, so ``recall_lab.py run --cache runs/lab/oof/cache.pkl --split`` scores
the whole pool out of fold (copy or link ``sent.pkl`` beside it).
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _half(raw: dict, gid: str) -> str:
    return "tune" if raw["groups"][gid]["index"] % 2 == 1 else "held"


def _items(raw: dict, qs: list[dict]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(question vector, group vectors, gold mask) per question."""
    out = []
    for q in qs:
        g = raw["groups"][q["group"]]
        ids = [m["id"] for m in g["messages"]]
        gold = np.isin(ids, q["gold"])
        if gold.any():
            out.append((raw["text_vectors"][q["question"]], g["vectors"], gold))
    return out


def fit(items: list, rank: int, tau: float, l2: float, epochs: int, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    d = items[0][0].shape[0]
    u = torch.nn.Parameter(torch.zeros(d, rank))
    v = torch.nn.Parameter(torch.randn(d, rank) * 0.01)
    opt = torch.optim.Adam([u, v], lr=3e-3)
    data = [(torch.tensor(qv), torch.tensor(gv), torch.tensor(gold)) for qv, gv, gold in items]
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(data))
        for start in range(0, len(order), 32):
            loss = torch.zeros(())
            for i in order[start:start + 32]:
                qv, gv, gold = data[i]
                q = qv + u @ (v.T @ qv)
                q = q / q.norm()
                logits = (gv @ q) / tau
                lse = torch.logsumexp(logits, 0)
                loss = loss + (lse - logits[gold]).mean()
            loss = loss / 32 + l2 * (u.pow(2).sum() + v.pow(2).sum())
            opt.zero_grad()
            loss.backward()
            opt.step()
    return u.detach().numpy(), v.detach().numpy()


def adapt(qv: np.ndarray, uv) -> np.ndarray:
    if uv is None:
        return qv
    u, v = uv
    q = qv + u @ (v.T @ qv)
    return (q / np.linalg.norm(q)).astype(np.float32)


def score(raw: dict, qs: list[dict], uv) -> dict[str, list[tuple[float, float]]]:
    res: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for q in qs:
        g = raw["groups"][q["group"]]
        ids = np.array([m["id"] for m in g["messages"]])
        cos = g["vectors"] @ adapt(raw["text_vectors"][q["question"]], uv)
        order = ids[np.argsort(-cos)]
        r = tuple(sum(1 for e in q["gold"] if e in set(order[:k])) / len(q["gold"]) for k in (10, 40))
        res[f"{q['bench']} all"].append(r)
        res[f"{q['bench']}   {q['category']}"].append(r)
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=("eval", "oof"))
    ap.add_argument("--cache", type=Path, default=Path("runs/lab/cache.pkl"))
    ap.add_argument("--out", type=Path, default=Path("runs/lab/oof/cache.pkl"))
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--tau", type=float, default=0.05)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--epochs", type=int, default=30)
    args = ap.parse_args()
    with args.cache.open("rb") as f:
        raw = pickle.load(f)
    qs = raw["questions"]
    halves = {h: [q for q in qs if _half(raw, q["group"]) == h] for h in ("tune", "held")}
    knobs = dict(rank=args.rank, tau=args.tau, l2=args.l2, epochs=args.epochs)
    fitted = {h: fit(_items(raw, halves[h]), **knobs) for h in ("tune", "held")}
    if args.cmd == "oof":
        other = {"tune": "held", "held": "tune"}
        tv = dict(raw["text_vectors"])
        for h in ("tune", "held"):
            for q in halves[h]:
                tv[q["question"]] = adapt(raw["text_vectors"][q["question"]], fitted[other[h]])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("wb") as f:
            pickle.dump({**raw, "text_vectors": tv}, f)
        sent = args.cache.parent / "sent.pkl"
        if sent.exists():
            shutil.copy(sent, args.out.parent / "sent.pkl")
        print(f"wrote {args.out}")
        return
    base = score(raw, qs, None)
    oof: dict[str, list] = defaultdict(list)
    for h, o in (("tune", "held"), ("held", "tune")):
        for k, v in score(raw, halves[h], fitted[o]).items():
            oof[k] += v
    loc = fit(_items(raw, [q for q in qs if q["bench"] == "locomo"]), **knobs)
    transfer = score(raw, [q for q in qs if q["bench"] == "socialmem"], loc)
    print(f"dense alone, R@10 / R@40; knobs {knobs}")
    for k in sorted(base):
        b = np.mean(base[k], axis=0)
        o = np.mean(oof[k], axis=0)
        t = np.mean(transfer[k], axis=0) if k in transfer else None
        tt = f"  transfer {t[0]:.3f} / {t[1]:.3f}" if t is not None else ""
        print(f"  {k:28s} n={len(base[k]):4d}  MiniLM {b[0]:.3f} / {b[1]:.3f}  adapter (oof) {o[0]:.3f} / {o[1]:.3f}{tt}")


if __name__ == "__main__":
    main()
