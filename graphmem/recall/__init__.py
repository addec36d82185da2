"""System 1, the read side: the recall pool over a group's verbatim messages.

Search (:mod:`~graphmem.recall.search`), group-local BM25 (:mod:`~graphmem.recall.lexical`),
question anchors (:mod:`~graphmem.recall.anchors`), the pool and its fusion
(:mod:`~graphmem.recall.pool`), dense context windows (:mod:`~graphmem.recall.context_window`),
the learned re-ranking (:mod:`~graphmem.recall.learned`) and the per-process vector matrices
(:mod:`~graphmem.recall.cache`). Layer 3. Source: SpeakerMem-R1 §3.3, App. A.
"""
