"""System 2: derived records in four layers (:mod:`~graphmem.derived.memory`) and the Writer that
proposes them (:mod:`~graphmem.derived.writer`). Layer 3. Source: SpeakerMem-R1 §3.2, App. E.
"""
