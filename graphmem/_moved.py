"""Old import paths of modules that moved, kept one release with a warning that names the new home.

``import graphmem.db`` still works until :data:`REMOVAL`; every attribute read through an old
path (``from graphmem.db import Store``) raises :class:`MovedModuleWarning` (a
``DeprecationWarning``) naming the new module, then returns the attribute from there. The table
is the only place that knows the old names; nothing in the repository imports them (the test
suite turns this warning into an error).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "REMOVAL", "MovedModuleWarning", "install"]

REMOVAL = "0.3.0"

#: old dotted module path -> new dotted module path
MOVED: dict[str, str] = {
    "graphmem.bulk_import": "graphmem.verbatim.bulk_import",
    "graphmem.bulk_jsonl": "graphmem.verbatim.bulk_jsonl",
    "graphmem.config": "graphmem.core.config",
    "graphmem.db": "graphmem.store.db",
    "graphmem.embed": "graphmem.core.embed",
    "graphmem.errors": "graphmem.core.errors",
    "graphmem.exposure": "graphmem.core.exposure",
    "graphmem.graphview": "graphmem.views",
    "graphmem.groups": "graphmem.groups.service",
    "graphmem.ingest": "graphmem.verbatim.ingest",
    "graphmem.jobs": "graphmem.groups.jobs",
    "graphmem.limits": "graphmem.core.limits",
    "graphmem.local_bm25": "graphmem.recall.lexical",
    "graphmem.local_server": "graphmem.store.local_server",
    "graphmem.memory": "graphmem.derived.memory",
    "graphmem.model": "graphmem.core.model",
    "graphmem.order": "graphmem.verbatim.order",
    "graphmem.query.anchors": "graphmem.recall.anchors",
    "graphmem.query.context_window": "graphmem.recall.context_window",
    "graphmem.query.groups": "graphmem.groups.service",
    "graphmem.query.head_rank": "graphmem.recall.learned",
    "graphmem.query.local_bm25": "graphmem.recall.lexical",
    "graphmem.query.recall": "graphmem.recall.pool",
    "graphmem.roster": "graphmem.verbatim.roster",
    "graphmem.schema": "graphmem.store.schema",
    "graphmem.scope": "graphmem.store.scope",
    "graphmem.search": "graphmem.recall.search",
    "graphmem.telemetry": "graphmem.core.telemetry",
    "graphmem.text": "graphmem.core.text",
    "graphmem.times": "graphmem.core.times",
    "graphmem.vector_cache": "graphmem.recall.cache",
    "graphmem.vectors": "graphmem.verbatim.vectors",
    "graphmem.writer": "graphmem.derived.writer",
    "graphmem.writer.derive": "graphmem.derived.writer.derive",
    "graphmem.writer.prompt": "graphmem.derived.writer.prompt",
    "graphmem.writer.provenance": "graphmem.derived.writer.provenance",
    "graphmem.writer.segments": "graphmem.derived.writer.segments",
    "graphmem.writer.validate": "graphmem.derived.writer.validate",
}


class MovedModuleWarning(DeprecationWarning):
    """An import through a module path that moved (see :data:`MOVED`)."""


def _forward(old: str, new: str) -> Any:
    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        warnings.warn(
            f"{old} moved to {new}; import {name} from {new} (the old path goes in graphmem {REMOVAL})",
            MovedModuleWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths of :data:`MOVED` and makes each a module whose ``__getattr__`` warns."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        is_pkg = any(k.startswith(fullname + ".") for k in MOVED)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=is_pkg)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        new = MOVED[module.__name__]
        module.__doc__ = f"Moved to :mod:`{new}` (this path goes in graphmem {REMOVAL})."
        module.__getattr__ = _forward(module.__name__, new)  # type: ignore[method-assign]  # PEP 562 hook on a module object
        if module.__spec__ is not None and module.__spec__.submodule_search_locations is not None:
            module.__path__ = []


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (called by ``graphmem/__init__``)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
