"""Small CLI wording rules: counts agree with their nouns."""

from graphmem.cli.ask import _count


def test_count_uses_singular_for_one_and_plural_otherwise():
    assert _count(1, "row") == "1 row"
    assert _count(0, "row") == "0 rows"
    assert _count(2, "model call") == "2 model calls"
