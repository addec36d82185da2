"""Files only their owner can read: the local store's password and the importer's CSV files.

Both hold what nobody else on the machine may read (the key to every message, or every message),
so they are written 0600 in a 0700 folder and never through a symlink: a link planted where one
of them is written would send it elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from graphmem.core.errors import InvalidInputError

__all__ = ["csv_folder", "open_private", "write_private"]


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600), replacing it atomically;
    the folder is made 0700. A symlink at ``path`` is replaced, never followed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def open_private(path: Path) -> TextIO:
    """Open ``path`` for writing text, readable by its owner only (0600, also when it existed
    with a wider mode); a symlink at ``path`` is refused, never followed (``O_NOFOLLOW``).

    Raises:
        InvalidInputError: field ``csv_dir``: ``path`` is a symlink or cannot be written.
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        why = "is a symlink (refused: the CSV files hold every message)" if path.is_symlink() else (e.strerror or str(e))
        raise InvalidInputError(f"CSV file {path.name} {why}", field="csv_dir") from e
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def csv_folder(folder: Path) -> None:
    """Make the folder of the CSV files (checked before the input is read or the server stopped).

    The files hold every message of the input, so the folder is the owner's alone: made (or
    set) 0700, and refused when it is a symlink or holds one (a link planted where a CSV file or
    the importer's report will be written would send them elsewhere). The files themselves are
    written 0600 without following links (:func:`open_private`).

    Raises:
        InvalidInputError: it cannot be a folder (a file has that name, no permission, ...), it
            is a symlink or holds one, field ``csv_dir``.
    """
    if folder.is_symlink():
        raise InvalidInputError("the CSV folder is a symlink (refused: give the real folder)", field="csv_dir")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
        planted = sorted(p.name for p in folder.iterdir() if p.is_symlink())
        if planted:
            raise InvalidInputError(f"the CSV folder holds symlinks ({', '.join(planted[:5])}); refused, "
                                    "use an empty folder of your own", field="csv_dir")
        probe = folder / f".graphmem-write-check-{os.getpid()}"
        open_private(probe).close()
        probe.unlink()
    except OSError as e:
        raise InvalidInputError(f"cannot write the CSV files into {str(folder)!r}: {e.strerror or e}",
                                field="csv_dir") from e
