"""What both EverMemBench layouts share (:mod:`loaders.evermem`, :mod:`loaders.evermem_batches`):
file names, group ids of topics, and the answer-letter rule of the multiple-choice questions."""

from __future__ import annotations

import re

__all__ = ["DIALOGUES_FILE", "QARS_FILE", "group_id_of"]

DIALOGUES_FILE = "dialogues.jsonl"
QARS_FILE = "qars.jsonl"
_LETTER_RE = re.compile(r"\(?([A-Za-z])\)?(?:[.:)]\s*.*)?", re.DOTALL)
_TASK_CODE_RE = re.compile(r"(.+?)_Top\w*", re.IGNORECASE)


def group_id_of(topic_id: str | int) -> str:
    """``"01"`` -> ``"evermem-01"``."""
    return f"evermem-{topic_id}"


def _matches(topic: str, group: str | None) -> bool:
    return group is None or group in (topic, group_id_of(topic))


def _correct_letter(answer: str, options: dict[str, str]) -> str | None:
    if answer in options:
        return answer
    m = _LETTER_RE.fullmatch(answer.strip())
    if m and m.group(1).upper() in options:
        return m.group(1).upper()
    return None
