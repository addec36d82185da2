"""Store: Neo4j access (:mod:`~graphmem.store.db`), the schema (:mod:`~graphmem.store.schema`),
group scoping of the message indexes (:mod:`~graphmem.store.scope`) and the local server
(:mod:`~graphmem.store.local_server`). Layer 1: imports only :mod:`graphmem.core`.
"""
