"""Dense ranking over a context window: a turn scored with its NEXT neighbours' cosines.

A turn that answers in a word ("Biscuit.", "sure") is close to nothing but its neighbours;
scored as cos(m) + share x mean cos(NEXT neighbours of m) it rises with them (docs/query.md;
measured in docs/lab/recall-rounds.md, "Failure analysis, the context window and a sharper
fusion"). These functions turn the one row
of ``recall/context_cosines`` into that ranking; :mod:`graphmem.recall.pool` reads the row.
"""

from __future__ import annotations

from typing import Any

__all__ = ["context_ranking", "context_rows"]


def context_rows(read: dict[str, Any]) -> list[dict[str, Any]]:
    """Each ring message's own score and its NEXT neighbours' scores, from ``recall/context_cosines``.

    Args:
        read: the template's row: ``ring`` (ids), ``edges`` ([ring id, neighbour id or None]),
            ``cosines`` ([id, Neo4j's (1 + cos) / 2 in [0, 1]] for the messages with a vector).

    Returns:
        {"id", "own", "around"} for every ring message with a vector, in ring order: ``own`` its
        score, ``around`` those of its neighbours with a vector (one per NEXT relationship), the
        rows :func:`context_ranking` takes.
    """
    cos = {mid: score for mid, score in read["cosines"]}
    around: dict[str, list[float]] = {}
    for mid, nb in read["edges"]:
        if nb is not None and nb in cos:
            around.setdefault(mid, []).append(cos[nb])
    return [{"id": m, "own": cos[m], "around": around.get(m, [])} for m in read["ring"] if m in cos]


def context_ranking(rows: list[dict[str, Any]], share: float) -> list[tuple[str, float]]:
    """Dense ranking over a context window: ``cos(m) + share * mean(cos(NEXT neighbours of m))``.

    A turn whose neighbours speak of the matter (the answer to a question asked just before it,
    a reply that only says "yes, that one") rises with them. Cosines are Neo4j's normalised
    scores (1 + cos) / 2 as ``recall/context_cosines`` returns them, turned back into cosines.

    Args:
        rows: {"id", "own": score of the turn, "around": scores of its NEXT neighbours}.
        share: 0..1 (0: the turn's own cosine).

    Returns:
        (id, score in [-1 - share, 1 + share]), best first; ties by id.
    """
    out: list[tuple[str, float]] = []
    for r in rows:
        if r.get("own") is None:
            continue
        around = [2.0 * float(a) - 1.0 for a in (r.get("around") or [])]
        ctx = sum(around) / len(around) if around else 0.0
        out.append((r["id"], 2.0 * float(r["own"]) - 1.0 + share * ctx))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out
