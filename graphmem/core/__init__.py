"""Core: what every other part of graphmem stands on, and nothing above it.

Configuration (:mod:`~graphmem.core.config`), the error tree (:mod:`~graphmem.core.errors`),
the domain and wire models (:mod:`~graphmem.core.model`, :mod:`~graphmem.core.wire`), time
(:mod:`~graphmem.core.times`), text (:mod:`~graphmem.core.text`), input rules
(:mod:`~graphmem.core.limits`), telemetry (:mod:`~graphmem.core.telemetry`), network exposure
defaults (:mod:`~graphmem.core.exposure`) and the sentence embedder (:mod:`~graphmem.core.embed`).
Layer 0: imports no other graphmem subsystem.
"""
