"""System 1, the write side: verbatim messages in conversation order.

Ingest (:mod:`~graphmem.verbatim.ingest`), placement by instant (:mod:`~graphmem.verbatim.order`),
deferred vectors (:mod:`~graphmem.verbatim.vectors`), the first-load importer
(:mod:`~graphmem.verbatim.bulk_import`, :mod:`~graphmem.verbatim.bulk_jsonl`) and the roster
read model (:mod:`~graphmem.verbatim.roster`). Layer 2.
"""
