"""``python -m graphmem ...`` is the ``graphmem`` command (for agents that start a module)."""

from graphmem.cli import run_cli

run_cli()
