"""Moved to :mod:`graphmem.core.model` (the domain's input records); kept importable for one release."""

from graphmem.core.model import Conversation, MessageRecord, Question

__all__ = ["Conversation", "MessageRecord", "Question"]
