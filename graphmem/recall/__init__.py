"""System 1, the read side: the recall pool over a group's verbatim messages.

Search (:mod:`~graphmem.recall.search`), group-local BM25 (:mod:`~graphmem.recall.lexical`),
question anchors (:mod:`~graphmem.recall.anchors`), the pool and its fusion
(:mod:`~graphmem.recall.pool`) built by a typed recipe (:mod:`~graphmem.recall.recipe`, the
product's: ``SPEAKERMEM_POOL``), dense context windows (:mod:`~graphmem.recall.context_window`),
the rerankers (:mod:`~graphmem.recall.rerank`) and the learned scores behind them with their
JSON weights (:mod:`~graphmem.recall.learned`, ``weights/``), and the per-process
:class:`~graphmem.recall.cache.GroupCache` (BM25 statistics and vector matrices). Layer 3.
Source: SpeakerMem-R1 §3.3, App. A.
"""
