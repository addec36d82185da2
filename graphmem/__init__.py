"""graphmem: speaker-centred dual-track memory for multi-party dialogue on Neo4j.

Implements the SpeakerMem-R1 method: System 1 keeps every message verbatim with its speaker,
session, turn, time and channel; System 2 holds derived Core/Profile (per person) and
Interaction/Insight (per group) records written by a Writer model and validated by code.
"""

__version__ = "0.1.0"

from graphmem import _moved as _moved

_moved.install()
