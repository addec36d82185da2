"""What the command line prints of chat text: shown, never obeyed (graphmem.cli.common.terminal_safe)."""

from __future__ import annotations

from graphmem.cli.common import terminal_safe


def test_control_characters_print_as_visible_escapes_newline_and_tab_kept() -> None:
    assert terminal_safe("a\x1b[2Jb\x07c\rd\x9be") == "a\\x1b[2Jb\\x07c\\x0dd\\x9be"
    assert terminal_safe("line one\n\tline two") == "line one\n\tline two"


def test_bidirectional_overrides_and_isolates_cannot_reorder_a_printed_line() -> None:
    """A name holding RIGHT-TO-LEFT OVERRIDE (U+202E) made ``Mallory\u202e:dias boB`` print as
    if Bob had said it ("Trojan Source"); every embedding, override and isolate is now shown."""
    shown = terminal_safe("Mallory\u202e:dias boB\u202c \u2066x\u2069 \u202a\u202b\u202d \u2067\u2068")
    assert shown == ("Mallory\\u202e:dias boB\\u202c \\u2066x\\u2069 \\u202a\\u202b\\u202d "
                     "\\u2067\\u2068")
    assert not any(0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in shown)


def test_right_to_left_text_and_plain_direction_marks_print_as_written() -> None:
    text = "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627 \u200eok\u200f"
    assert terminal_safe(text) == text
