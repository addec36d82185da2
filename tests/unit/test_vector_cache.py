"""PersonMatrix.ranking (order, ties, as-of filter) and VectorCache's byte budget, no database."""

from __future__ import annotations

import numpy as np

from graphmem.recall.cache import PersonMatrix, VectorCache


def _matrix(n: int, seed: int = 0, version: int = 1) -> PersonMatrix:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return PersonMatrix(ids=[f"m{i}" for i in range(n)], vectors=v, turn_created=np.arange(n, dtype=np.int64),
                        instants=np.arange(n, dtype=np.float64), version=version, vector_rev=0)


def test_ranking_is_the_sorted_cosines_with_ties_to_the_earlier_write():
    m = _matrix(200)
    q = m.vectors[17].copy()
    cos = m.vectors @ q
    want = sorted(range(200), key=lambda i: (-cos[i], i))[:7]
    assert [i for i, _ in m.ranking(q, 7, None)] == [f"m{i}" for i in want]
    # two identical rows: the one written first comes first, whatever their positions
    twins = PersonMatrix(ids=["late", "early"], vectors=np.stack([q, q]),
                         turn_created=np.array([9, 3]), instants=np.array([1.0, 2.0]), version=1, vector_rev=0)
    assert [i for i, _ in twins.ranking(q, 2, None)] == ["early", "late"]
    # as of an instant: later messages and those without an instant are left out
    m2 = PersonMatrix(m.ids, m.vectors, m.turn_created, np.where(np.arange(200) == 5, np.nan, m.instants), 1, 0)
    got = [i for i, _ in m2.ranking(q, 200, 20.0)]
    assert set(got) == {f"m{i}" for i in range(21)} - {"m5"}
    assert m.ranking(q, 0, None) == [] and m.ranking(q, 3, -1.0) == []


def test_the_cache_keeps_the_most_recently_used_within_its_bytes():
    one = _matrix(100).nbytes
    cache = VectorCache(max_bytes=int(2.5 * one))
    for p in ("a", "b", "c"):
        cache._put(("g", p), _matrix(100))
    assert set(cache._entries) == {("g", "b"), ("g", "c")} and cache.nbytes <= cache.max_bytes
    cache._put(("g", "huge"), _matrix(1000))  # larger than the whole budget: not kept
    assert ("g", "huge") not in cache._entries
