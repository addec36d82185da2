"""Helpers every command module shares: consoles, JSON output, the per-command store."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from graphmem.core.config import get_settings

if TYPE_CHECKING:
    from graphmem.core.embed import Embedder
    from graphmem.runtime import Runtime
    from graphmem.store.db import Store

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): they reorder
# what follows them on the line, so a name or text holding U+202E could make a printed line
# read as another person's words ("Trojan Source", CVE-2021-42574). Letters of right-to-left
# scripts and the plain marks U+200E / U+200F are text and print as they are.
_BIDI_CONTROLS = re.compile(r"[\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` as a terminal shows it without obeying it: every C0 or C1 control character
    but newline and tab becomes a visible ``\\xNN`` (ESC begins the sequences that colour,
    clear the screen, move the cursor, make hidden links or write the clipboard; a carriage
    return overwrites a line), and every bidirectional embedding, override or isolate
    (U+202A-U+202E, U+2066-U+2069, which reorder the rest of the line) a visible ``\\uNNNN``.
    Chat text keeps its bytes in the store and in ``--json``
    output (where JSON escapes them); only what is printed for a person to read is escaped."""
    text = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _BIDI_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class _TerminalConsole(Console):
    """A rich Console whose printed strings are :func:`terminal_safe` (rich passes ESC through)
    and plain text: rich markup is off unless a call asks for it (``markup=True``), because
    nearly every printed line holds data (a group id, a name, a record type, a path), and
    ``[bold]`` or ``[/]`` in one was swallowed as a tag or crashed the print, so the id an
    operator read and copied was not the stored one."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, **kwargs)

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(terminal_safe(o) if isinstance(o, str) else o for o in objects), **kwargs)


out = _TerminalConsole()
err = _TerminalConsole(stderr=True)


def show_progress(requested: bool, as_json: bool) -> bool:
    """Whether a command draws a progress bar: asked for (``--progress``, the default), on a
    terminal (stderr is a TTY), and not in ``--json`` mode, whose output a program reads."""
    return requested and not as_json and sys.stderr.isatty()


def cells(*values: object, style: str = "") -> list[Text]:
    """Table cells shown as written: chat text and names are data, never rich markup (a name
    holding ``[/]`` crashed the table, ``[link=...]`` made a hidden link) nor terminal control
    sequences (:func:`terminal_safe`)."""
    return [Text(terminal_safe(str(v)), style=style) for v in values]


def emit_json(obj: object) -> None:
    """Print ``obj`` as JSON on stdout (UTF-8, not ASCII-escaped)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


@contextmanager
def open_runtime(*, models: bool = True, connect: bool = True, warm: bool = False) -> Iterator[Runtime]:
    """The Runtime of one command (:class:`graphmem.runtime.Runtime`), closed afterwards.

    One command is one process and one question: the group cache loads nothing in the
    background (a matrix loaded after the answer would go unused). The driver's notification
    log lines are silenced here for every command: on a fresh store ``schema apply`` and the
    first reads would otherwise print "label does not exist" notices. ``warm``: the command
    embeds, so the model starts loading before the connection is opened (they overlap).
    """
    from graphmem.runtime import Runtime
    from graphmem.store.db import quiet_notifications

    quiet_notifications()
    rt = Runtime.open(get_settings(), models=models, connect="lazy" if warm and connect else connect,
                      background_loads=False)
    try:
        if warm:
            rt.warm_in_background()
            if connect:
                _ = rt.store  # connect now: StoreUnavailableError here, as without warm
        yield rt
    finally:
        rt.close()  # also when the store is down: the model load is waited for (Runtime.close)


@contextmanager
def open_store() -> Iterator[Store]:
    """The store of one command (a Runtime without models), closed afterwards."""
    with open_runtime(models=False) as rt:
        yield rt.store


def command_embedder() -> Embedder:
    """The embedder of a command that needs no store (``GRAPHMEM_EMBED_*``); a command that has
    a Runtime uses ``rt.embedder``."""
    from graphmem.core.embed import Embedder

    return Embedder.from_settings(get_settings())
