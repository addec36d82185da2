"""Who holds a lease: an owner token naming this process, and whether a token's process is gone.

A lease (``graphmem embed``'s on a group) records the token of the process that took it. A
later run on the same machine whose holder's process no longer exists takes the lease over at
once instead of waiting for it to run out (a run killed with SIGKILL never releases it).
The token is ``host|boot id|pid|process start time``: the boot id and the start time (clock
ticks since boot, ``/proc/<pid>/stat`` field 22) tell a reused pid from the holder. A token of
another machine or boot, or one that cannot be read, is never judged dead: its lease runs out.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> str:
    """Start time of ``pid`` in clock ticks since boot ("" when it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rpartition(")")[2].split()[19]  # field 22; the name in () may hold spaces


def owner_token() -> str:
    """This process's token (``host|boot id|pid|start ticks``)."""
    pid = os.getpid()
    return f"{socket.gethostname()}|{_boot_id()}|{pid}|{_start_ticks(pid)}"


def owner_gone(token: str | None, *, local: bool = False) -> bool:
    """True when ``token`` names a process of this machine and boot that no longer runs (its
    pid is free, or taken by a process that started at another time).

    ``local``: the token was written on this machine's own disk (a note in the local store's
    folder, not a lease in a shared database), so a token of this host from an earlier boot
    is gone too: every process of that boot ended when the machine stopped."""
    if not token:
        return False
    parts = token.split("|")
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    host, boot, pid, ticks = parts
    if local and host == socket.gethostname() and boot and _boot_id() and boot != _boot_id():
        return True
    if host != socket.gethostname() or not boot or boot != _boot_id() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return bool(ticks) and _start_ticks(int(pid)) not in ("", ticks)
