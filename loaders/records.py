"""Moved to :mod:`graphmem.model` (the domain's input records); kept importable for one release."""

from graphmem.model import Conversation, MessageRecord, Question

__all__ = ["Conversation", "MessageRecord", "Question"]
