"""Where the first-load importer's intermediate files are, so that erasure can clear them.

``graphmem neo4j import`` (:mod:`graphmem.bulk_import`) writes every message of its input into
CSV files (a temporary folder, or ``--csv-dir``) and neo4j-admin leaves its report beside them.
They are only the importer's input, but they hold the messages verbatim: erasing a person must
remove them too (DESIGN.md "Guarantees"; docs/security.md "Erasure"). The importer notes each
set of files and the groups it holds in :data:`CSV_MANIFEST` under the project's home;
:func:`graphmem.groups.forget_person` clears the sets of the person's group.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from graphmem.core.config import Settings
from graphmem.core.errors import InvalidInputError

#: Where the importer notes each set of CSV files it wrote (a JSON file in the project's home,
#: ``GRAPHMEM_HOME``), so that erasing a person also clears the intermediate copies of their
#: group's messages (:func:`clear_csv_files`, called by :func:`graphmem.groups.forget_person`).
CSV_MANIFEST = "import-csv.json"
#: neo4j-admin's report of skipped entries, written beside the CSV files (it names their ids).
IMPORT_REPORT = "import.report"


def _read_manifest(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"cannot read the importer's list of CSV files {str(path)!r}: {e}",
                                field="csv_manifest") from e
    entries = data.get("imports") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _write_manifest(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"imports": entries}, f, ensure_ascii=False, indent=1)
    os.replace(tmp, path)


def record_csv_files(settings: Settings, folder: Path, group_ids: list[str], files: dict[str, list[Path]]) -> None:
    """Note a set of CSV files the importer wrote, and the groups they hold, in :data:`CSV_MANIFEST`.

    Args:
        settings: graphmem settings (``home``: where the manifest lives).
        folder: the CSV folder.
        group_ids: the groups whose messages the files hold.
        files: per kind, the files written (as :class:`graphmem.bulk_jsonl.CsvResult`).

    Raises:
        InvalidInputError: the manifest exists but cannot be read (field ``csv_manifest``).
        OSError: the manifest cannot be written.
    """
    path = Path(settings.home) / CSV_MANIFEST
    entries = _read_manifest(path)
    paths = sorted({str(p.resolve()) for kind in files.values() for p in kind})
    entries = [e for e in entries if e.get("csv_dir") != str(folder.resolve())]  # rewritten in place
    entries.append({"csv_dir": str(folder.resolve()), "groups": sorted(set(group_ids)), "files": paths})
    _write_manifest(path, entries)


def clear_csv_files(settings: Settings, group_id: str) -> list[str]:
    """Delete the importer's intermediate CSV files that hold a group's messages.

    A set of files holds every group of one import, so the whole set goes (the database has the
    data; the files were only the importer's input), with neo4j-admin's report beside them
    (:data:`IMPORT_REPORT`); an emptied folder is removed too. The set's
    entry leaves :data:`CSV_MANIFEST`. A file already gone is skipped, so a second call removes
    nothing.

    Args:
        settings: graphmem settings (``home``: where the manifest lives).
        group_id: the group.

    Returns:
        The paths removed (sorted; empty when there was nothing to remove).

    Raises:
        InvalidInputError: the manifest cannot be read (field ``csv_manifest``).
        OSError: a listed file exists but cannot be removed (the manifest keeps its entry).
    """
    path = Path(settings.home) / CSV_MANIFEST
    entries = _read_manifest(path)
    removed: list[str] = []
    kept = []
    for entry in entries:
        if group_id not in (entry.get("groups") or []):
            kept.append(entry)
            continue
        folder = Path(str(entry.get("csv_dir") or ""))
        names = [*(entry.get("files") or []), *([str(folder / IMPORT_REPORT)] if str(folder) else [])]
        for name in names:
            f = Path(str(name))
            if f.is_file() and not f.is_symlink():
                f.unlink()
                removed.append(str(f))
        if str(folder) and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if len(kept) != len(entries):
        _write_manifest(path, kept)
    return sorted(removed)
