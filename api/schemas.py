"""Moved to :mod:`graphmem.core.wire` (the wire models are shared by the API, MCP and the client).

Kept one release: every attribute read through this path warns with
:class:`graphmem._moved.MovedModuleWarning`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from graphmem._moved import REMOVAL, MovedModuleWarning


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    warnings.warn(f"api.schemas moved to graphmem.core.wire; import {name} from there (the old path goes in "
                  f"graphmem {REMOVAL})", MovedModuleWarning, stacklevel=2)
    return getattr(importlib.import_module("graphmem.core.wire"), name)
