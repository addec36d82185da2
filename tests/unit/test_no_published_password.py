"""No password in what people read or copy (issue 24, point 2): the README, the docs, the
Makefile's ``make demo`` message and the example configs say where the local store's password is
kept and how to print it; the compose file takes its password from an uncommitted secret file,
with no default. No database."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from graphmem.core.config import LEGACY_PASSWORD

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = [ROOT / "README.md", ROOT / "Makefile", ROOT / "docker" / "compose.yaml",
             *sorted((ROOT / "examples").glob("*.json")), *sorted((ROOT / "docs").glob("*.md"))]


def test_no_fixed_password_is_printed_or_suggested():
    for path in PUBLISHED:
        text = path.read_text()
        if path.name == "security.md":  # names the old password to explain the upgrade
            continue
        assert LEGACY_PASSWORD not in text, path
    make = (ROOT / "Makefile").read_text()
    assert "neo4j password" in make and "neo4j-password" in make
    assert "graphmem neo4j password" in (ROOT / "README.md").read_text()


def test_compose_takes_the_password_from_an_uncommitted_secret():
    compose = yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())
    neo4j = compose["services"]["neo4j"]
    assert "NEO4J_AUTH" not in neo4j["environment"]  # no default, no variable with a fallback
    assert neo4j["environment"]["NEO4J_AUTH_FILE"] == "/run/secrets/neo4j_auth"
    assert neo4j["secrets"] == ["neo4j_auth"]
    secret = ROOT / "docker" / compose["secrets"]["neo4j_auth"]["file"]
    ignored = subprocess.run(["git", "check-ignore", "-q", str(secret)], cwd=ROOT)
    assert ignored.returncode == 0, f"{secret} must be git-ignored"
    assert neo4j["environment"]["NEO4J_dbms_security_http__access__control__allow__origin"] != "*"
