"""Who may reach which group: API keys, their scopes, and the check every face makes.

Keys come from two settings, both optional:

- ``GRAPHMEM_API_KEY``: one key that reaches every group, read and write (as before).
- ``GRAPHMEM_API_KEYS_FILE``: a JSON file listing more keys, each limited to some groups
  and/or read-only::

      {"keys": [
        {"name": "dashboard", "key": "s3cr3t-1", "groups": ["family", "work"], "read_only": true},
        {"name": "bot", "key": "s3cr3t-2", "groups": ["family"]}
      ]}

  ``groups`` omitted (or null) = every group; ``read_only`` defaults to false; ``name`` is
  what logs and errors call the key (never the key itself). The file should be readable by
  the server's user only.

With neither set, the server is key-less (only allowed on loopback, :mod:`graphmem.core.exposure`)
and every caller gets :data:`EVERYTHING`. With any key set, every request needs one of them.

A caller's :class:`Access` is checked with :meth:`Access.check_group` (every route and tool
naming a group) and :meth:`Access.check_write` (every call that writes). Both raise
:class:`graphmem.core.errors.ForbiddenError` (403), with the same text whether or not the group
exists.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from graphmem.core.errors import ForbiddenError, InvalidInputError
from graphmem.core.limits import did_you_mean


class ApiKey(BaseModel):
    """One configured key and what it reaches."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="key", min_length=1, max_length=100)
    key: SecretStr
    groups: list[str] | None = None  # None: every group
    read_only: bool = False


class _KeysFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    keys: list[ApiKey]


@dataclass(frozen=True)
class Access:
    """What one caller may do: the groups it reaches (None = all) and whether it may write.

    Attributes:
        name: the key's name ("" for the key-less default).
        groups: group ids reached, or None for every group.
        read_only: True when the key may only read.
    """

    name: str = ""
    groups: frozenset[str] | None = None
    read_only: bool = False

    def reaches(self, group_id: str) -> bool:
        """Whether this caller may touch ``group_id`` (exists or not)."""
        return self.groups is None or group_id in self.groups

    def refusal(self, group_id: str) -> str:
        """The 403 text for a group outside the key's scope: the same whether the group exists
        or not, with a "did you mean" among the key's own groups (``'Band'`` for a key of
        ``band``: the key names them, so nothing else is told; no store read)."""
        hint = did_you_mean(group_id, [(g, g) for g in sorted(self.groups or ())])
        return f"this key does not reach group {group_id!r}{hint}"

    def check_group(self, group_id: str) -> None:
        """Raise unless this caller reaches ``group_id``.

        Raises:
            ForbiddenError: the group is outside the key's scope (:meth:`refusal`).
        """
        if not self.reaches(group_id):
            raise ForbiddenError(self.refusal(group_id))

    def check_write(self) -> None:
        """Raise when this caller may only read.

        Raises:
            ForbiddenError: the key is read-only.
        """
        if self.read_only:
            raise ForbiddenError("this key is read-only")

    def narrowed(self, groups: Iterable[str] | None) -> Access:
        """This access limited further to ``groups`` (None: unchanged)."""
        if groups is None:
            return self
        allowed = frozenset(groups)
        return Access(self.name, allowed if self.groups is None else self.groups & allowed, self.read_only)


#: The key-less default: every group, read and write.
EVERYTHING = Access()


def load_keys(api_key: str, keys_file: Path | None) -> list[ApiKey]:
    """Every configured key: ``api_key`` (every group, read-write) first, then the file's.

    Args:
        api_key: ``GRAPHMEM_API_KEY`` ("" = none).
        keys_file: ``GRAPHMEM_API_KEYS_FILE`` (None = none).

    Raises:
        InvalidInputError: the file cannot be read, is not the documented JSON, holds an empty
            key, or two keys are equal (field ``api_keys_file``).
    """
    keys = [ApiKey(name="GRAPHMEM_API_KEY", key=SecretStr(api_key))] if api_key else []
    if keys_file is not None:
        try:
            data = json.loads(Path(keys_file).read_text(encoding="utf-8"))
            keys += _KeysFile.model_validate(data).keys
        except OSError as e:
            raise InvalidInputError(f"cannot read the keys file: {e.strerror}", field="api_keys_file") from e
        except (ValueError, ValidationError) as e:
            raise InvalidInputError(
                'keys file is not {"keys": [{"name", "key", "groups", "read_only"}, ...]} JSON',
                field="api_keys_file") from e
    seen: set[str] = set()
    for k in keys:
        secret = k.key.get_secret_value()
        if not secret.strip():
            raise InvalidInputError(f"key {k.name!r} is empty", field="api_keys_file")
        if secret in seen:
            raise InvalidInputError(f"key {k.name!r} is listed twice", field="api_keys_file")
        seen.add(secret)
    return keys


def authenticate(keys: Sequence[ApiKey], presented: str | None) -> Access | None:
    """The access of the presented key, or None when it matches none.

    With no key configured every caller gets :data:`EVERYTHING`. Every configured key is
    compared (constant time each), so the time taken does not say which one came close.
    """
    if not keys:
        return EVERYTHING
    if presented is None:
        return None
    given = presented.encode("utf-8", "surrogatepass")
    found: ApiKey | None = None
    for k in keys:
        if secrets.compare_digest(given, k.key.get_secret_value().encode("utf-8")):
            found = k
    if found is None:
        return None
    return Access(found.name, None if found.groups is None else frozenset(found.groups), found.read_only)
