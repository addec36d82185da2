"""Benchmark and chat-format readers: parse files into typed records, never touch Neo4j.

Every loader returns :class:`loaders.records.Conversation` objects (one per memory space /
group) and, where the format has them, :class:`loaders.records.Question` objects.
"""

from loaders.records import Conversation, MessageRecord, Question

__all__ = ["Conversation", "MessageRecord", "Question"]
