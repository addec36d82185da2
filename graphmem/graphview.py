"""Moved to :mod:`graphmem.views` (graph, summary, timeline); kept importable for one release."""

from graphmem.views import *  # noqa: F403
from graphmem.views import __all__  # noqa: F401
