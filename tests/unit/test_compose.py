"""The deployable compose file and image, checked where Docker is absent: docker/compose.yaml
loaded with PyYAML and held to the deployment rules (API + Neo4j + optional Writer on distinct
loopback ports, the Writer off 8000, every image pinned, passwords and keys from `secrets:`
files with no default, `restart:` and healthchecks with timeouts), docker/Dockerfile read for
its user, command and healthcheck, and docker/entrypoint.sh run for real with sh. No database."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))


def _pinned(image: str) -> bool:
    """A tag that names one release (or a digest): not ``latest``, not missing, not a variable
    whose default is either."""
    if VAR.search(image):
        return False  # an image that a variable can swap is not pinned
    if "@sha256:" in image:
        return True
    name, _, tag = image.rpartition(":")
    return bool(name) and "/" not in tag and tag not in ("", "latest") and any(c.isdigit() for c in tag)


def _published(service: dict) -> list[tuple[str, int, int]]:
    out = []
    for entry in service.get("ports", []):
        host_ip, host, container = str(entry).rsplit(":", 2) if str(entry).count(":") == 2 else ("", *str(entry).split(":"))
        out.append((host_ip, int(host), int(container)))
    return out


def test_api_neo4j_and_an_optional_writer(compose):
    services = compose["services"]
    assert set(services) == {"api", "neo4j", "writer"}
    assert services["writer"]["profiles"] == ["writer"]  # optional: `--profile writer`
    assert "profiles" not in services["api"] and "profiles" not in services["neo4j"]
    assert services["api"]["depends_on"]["neo4j"]["condition"] == "service_healthy"
    assert services["api"]["build"]["dockerfile"] == "docker/Dockerfile"


def test_every_image_is_pinned(compose):
    for name, service in compose["services"].items():
        assert _pinned(service["image"]), f"{name}: {service['image']!r} is not pinned"
    for bad in ("neo4j", "neo4j:latest", "vllm/vllm-openai:${TAG:-latest}", "localhost:5000/graphmem"):
        assert not _pinned(bad), bad
    assert not _pinned("vllm/vllm-openai:latest") and not _pinned("${IMAGE:-vllm/vllm-openai:v0.10.2}")
    for line in (DOCKER / "Dockerfile").read_text().splitlines():
        if line.startswith("ARG PYTHON_IMAGE="):
            assert _pinned(line.split("=", 1)[1]), line


def test_ports_are_distinct_on_loopback_and_the_writer_is_off_8000(compose):
    seen: dict[int, str] = {}
    for name, service in compose["services"].items():
        for host_ip, host, _container in _published(service):
            assert host_ip == "127.0.0.1", f"{name} publishes {host} on {host_ip or 'every interface'}"
            assert host not in seen, f"{name} and {seen.get(host)} both publish {host}"
            seen[host] = name
    assert seen[8000] == "api"  # graphmem serve's default port is the API's
    writer = compose["services"]["writer"]
    assert all(8000 not in (h, c) for _ip, h, c in _published(writer))
    port = writer["command"][writer["command"].index("--port") + 1]
    assert int(port) in {c for _ip, _h, c in _published(writer)}
    assert "8001" in writer["healthcheck"]["test"][-1]


def test_passwords_and_keys_come_from_uncommitted_secret_files(compose):
    services = compose["services"]
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASSWORD|API_KEY|AUTH|TOKEN", key) and not key.endswith("_FILE"):
                # only the optional Hugging Face token may come from the caller's environment,
                # and it has no default
                m = VAR.fullmatch(str(value))
                assert key == "HF_TOKEN" and m and not m.group(2), f"{name}: {key}={value!r}"
    api = services["api"]
    env = api["environment"]
    assert "GRAPHMEM_NEO4J_PASSWORD" not in env and "GRAPHMEM_API_KEY" not in env
    assert env["GRAPHMEM_NEO4J_PASSWORD_FILE"] == "/run/secrets/neo4j_auth"
    assert env["GRAPHMEM_API_KEY_FILE"] == "/run/secrets/api_key"
    assert set(api["secrets"]) == {"neo4j_auth", "api_key"}
    assert services["neo4j"]["secrets"] == ["neo4j_auth"]
    for secret in compose["secrets"].values():
        path = DOCKER / secret["file"]
        ignored = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=ROOT)
        assert ignored.returncode == 0, f"{path} must be git-ignored"


def test_restart_and_healthchecks_with_timeouts(compose):
    for name, service in compose["services"].items():
        assert service["restart"] in ("unless-stopped", "always", "on-failure"), name
        check = service["healthcheck"]
        for key in ("test", "interval", "timeout", "retries"):
            assert key in check, f"{name}: healthcheck without {key}"
        assert re.fullmatch(r"\d+(ms|s|m)", check["timeout"]), check["timeout"]
    assert "/health" in " ".join(compose["services"]["api"]["healthcheck"]["test"])


def test_the_image_runs_the_api_as_a_non_root_user_with_a_healthcheck():
    text = (DOCKER / "Dockerfile").read_text()
    final = text[text.rindex("\nFROM "):]  # the runtime stage
    users = re.findall(r"^USER\s+(\S+)", final, re.M)
    assert users and users[-1].split(":")[0] not in ("root", "0")
    assert final.index("USER") < final.index("CMD")
    cmd = re.search(r"^CMD\s+(\[.*\])", final, re.M)
    assert cmd and yaml.safe_load(cmd.group(1))[:2] == ["graphmem", "serve"]
    health = re.search(r"^HEALTHCHECK\s+(.*?)\n(?!\s)", final, re.M | re.S)
    assert health and "--timeout=" in health.group(1) and "/health" in health.group(1)
    assert "latest" not in text
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert ignore[1 if ignore[0].startswith("#") else 0] == "*"  # only what is listed goes in


def _entrypoint(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"]}
    return subprocess.run(
        ["sh", str(DOCKER / "entrypoint.sh"), "sh", "-c",
         'printf "%s|%s|%s" "${GRAPHMEM_NEO4J_PASSWORD:-}" "${GRAPHMEM_API_KEY:-}" "${GRAPHMEM_API_KEY_FILE:-unset}"'],
        env={**base, **env}, capture_output=True, text=True, cwd=tmp_path)


def test_the_entrypoint_reads_secret_files_and_refuses_two_sources(tmp_path):
    auth, key = tmp_path / "neo4j_auth", tmp_path / "api_key"
    auth.write_text("neo4j/s3cr3t/with-slash\n")
    key.write_text("k-123\n")
    done = _entrypoint({"GRAPHMEM_NEO4J_PASSWORD_FILE": str(auth), "GRAPHMEM_API_KEY_FILE": str(key)}, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "s3cr3t/with-slash|k-123|unset"  # "neo4j/" dropped, the rest kept
    both = _entrypoint({"GRAPHMEM_API_KEY_FILE": str(key), "GRAPHMEM_API_KEY": "other"}, tmp_path)
    assert both.returncode == 64 and "not both" in both.stderr and "k-123" not in both.stderr + both.stdout
    missing = _entrypoint({"GRAPHMEM_API_KEY_FILE": str(tmp_path / "absent")}, tmp_path)
    assert missing.returncode == 66 and missing.stdout == ""
