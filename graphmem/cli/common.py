"""Helpers every command module shares: consoles, JSON output, the per-command store."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console

from graphmem.core.config import get_settings

if TYPE_CHECKING:
    from graphmem.store.db import Store

out = Console()
err = Console(stderr=True)


def emit_json(obj: object) -> None:
    """Print ``obj`` as JSON on stdout (UTF-8, not ASCII-escaped)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


@contextmanager
def open_store() -> Iterator[Store]:
    """Open the driver for one command and close it afterwards.

    The driver's notification log lines are silenced here for every command: on a fresh store
    ``schema apply`` and the first reads would otherwise print "label does not exist" notices.
    """
    from graphmem.store.db import Store, open_driver, quiet_notifications

    quiet_notifications()
    driver = open_driver(get_settings())
    try:
        yield Store(driver)
    finally:
        driver.close()
