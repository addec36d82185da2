"""Chat exports through the HTTP API (``POST /groups/{g}/imports``) and the typed client
(``GraphMemClient.import_chat``), against a real ``graphmem serve`` with a key: each platform's
fixture export is stored exactly as ``graphmem ingest --format`` stores it (compared field by
field with a CLI import of the same file), a second upload writes nothing, and a bad record is
refused naming record and field (nothing written) or, with ``on_bad_record=skip``, returned in
``rejects`` while the good records are written."""

from __future__ import annotations

import base64
import io
import json
import zipfile
from collections.abc import Iterator

import httpx
import pytest

from graphmem.client import GraphMemClient
from graphmem.core.errors import InvalidInputError
from tests.integration.test_chat_import import DISCORD, EXPORTS, ingest_cli, rows
from tests.processes import served_api

pytestmark = pytest.mark.neo4j
KEY = "import-test-key"
CASES = {
    "slack": EXPORTS / "slack" / "acme-export",  # a folder: the client zips it
    "discord": DISCORD,
    "telegram": EXPORTS / "telegram" / "result.json",
    "whatsapp": EXPORTS / "whatsapp" / "android.txt",
}


@pytest.fixture(scope="module")
def url(schema) -> Iterator[str]:
    with served_api(KEY) as base:
        yield base


def _stored(store, gid: str) -> list[dict]:
    """The group's messages, field by field, without what names the group."""
    return [{k: v for k, v in r.items() if k != "pos"} for r in rows(store, gid).values()]


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_an_upload_stores_what_the_cli_stores(url, store, make_group, fmt):
    by_api, by_cli = make_group(f"api-{fmt}"), make_group(f"cli-{fmt}")
    ingest_cli(CASES[fmt], by_cli)
    with GraphMemClient(url, api_key=KEY) as gm:
        first = gm.import_chat(by_api, CASES[fmt])  # format auto
        assert first.format == fmt and first.group_created and first.messages_written > 0
        assert first.messages_rejected == 0 and not first.rejects
        again = gm.import_chat(by_api, CASES[fmt], format=fmt)
    assert (again.messages_written, again.messages_edited, again.messages_skipped) == (0, 0, first.messages_written)
    api_rows, cli_rows = _stored(store, by_api), _stored(store, by_cli)
    assert len(api_rows) == first.messages_written and api_rows == cli_rows


def test_a_renamed_channel_is_reported_by_the_api_as_by_the_cli(url, store, group_id, tmp_path):
    """A later export of a renamed channel is filed under the stored name; the API and the typed
    client say so in ``channels_renamed`` (a new user saw the CLI file it silently)."""
    data = json.loads(DISCORD.read_text(encoding="utf-8"))
    with GraphMemClient(url, api_key=KEY) as gm:
        first = gm.import_chat(group_id, DISCORD)
        assert first.channels_renamed == []
        data["channel"]["name"] = "trip-planning"
        later = tmp_path / "later.json"
        later.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        again = gm.import_chat(group_id, later)
    assert (again.messages_written, again.messages_skipped) == (0, first.messages_written)
    assert again.channels_renamed == [f"{group_id}: trip-planning -> general"]


def test_a_bad_record_is_named_or_skipped_and_returned(url, store, group_id, tmp_path):
    data = json.loads(DISCORD.read_text(encoding="utf-8"))
    data["messages"][3]["timestamp"] = "yesterday"
    data["messages"][4]["author"] = {"name": "no id"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with GraphMemClient(url, api_key=KEY) as gm:
        with pytest.raises(InvalidInputError) as e:
            gm.import_chat(group_id, bad, format="discord")
        assert e.value.field == "timestamp" and "message 1000000000000000004" in str(e.value)
        assert "graphmem-import-" not in str(e.value)  # the server's temporary path is not shown
        assert not rows(store, group_id)  # nothing written
        got = gm.import_chat(group_id, bad, format="discord", on_bad_record="skip")
    assert got.messages_written == len(data["messages"]) - 2 and got.messages_rejected == 2
    assert [(r.record, r.field) for r in got.rejects] == [("message 1000000000000000004", "timestamp"),
                                                         ("message 1000000000000000005", "author.id")]
    assert got.rejects[0].source == "upload.json" and got.rejects[0].raw["timestamp"] == "yesterday"
    assert len(rows(store, group_id)) == got.messages_written


def test_the_body_is_checked_before_any_work(url, group_id):
    whatsapp = CASES["whatsapp"].read_text(encoding="utf-8")
    post = f"{url}/groups/{group_id}/imports"
    with httpx.Client(timeout=60) as http:
        r = http.post(post, json={"content": whatsapp})
        assert r.status_code == 401  # no key
        r = http.post(post, headers={"X-API-Key": KEY}, content=whatsapp.encode(),
                      params={"format": "whatsapp"})
        assert r.status_code in (415, 422)  # raw text is not the JSON body
        r = http.post(post, headers={"X-API-Key": KEY}, json={"content": whatsapp, "content_base64": "UEs="})
        assert r.status_code == 422 and "exactly one" in r.json()["detail"]
        r = http.post(post, headers={"X-API-Key": KEY}, json={"content_base64": "not base64!"})
        assert r.status_code == 422 and r.json()["field"] == "content_base64"
        r = http.post(post, headers={"X-API-Key": KEY}, json={"content": "just some words\n"})
        assert r.status_code == 422 and r.json()["field"] == "format"
        assert "--format" not in r.json()["detail"] and "name it in format" in r.json()["detail"]  # the API's words
        r = http.post(post, headers={"X-API-Key": KEY},
                      json={"format": "telegram", "content_base64": base64.b64encode(b"PK\x05\x06" + bytes(18)).decode()})
        assert r.status_code == 422 and r.json()["field"] == "content_base64" and "JSON file" in r.json()["detail"]
        r = http.post(post, headers={"X-API-Key": KEY}, json={"content": whatsapp, "format": "whatsapp",
                                                              "speaker": "x"})
        assert r.status_code == 422 and "speaker" in r.json()["detail"]
        r = http.post(post, headers={"X-API-Key": KEY},
                      json={"content_base64": base64.b64encode(b"PK\x03\x04 broken zip").decode()})
        assert r.status_code == 422
        r = http.post(post, headers={"X-API-Key": KEY}, json={"format": "discord", "content": "[" * 200_000})
        assert r.status_code == 422 and r.json()["field"] == "json", r.text
        bomb = io.BytesIO()  # 600 MB of zeros in a 0.6 MB zip: refused from the members' sizes
        with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
            with z.open("general/2025-07-01.json", "w", force_zip64=True) as member:
                for _ in range(600):
                    member.write(bytes(1024 * 1024))
        r = http.post(post, headers={"X-API-Key": KEY},
                      json={"format": "slack", "content_base64": base64.b64encode(bomb.getvalue()).decode()})
        assert r.status_code == 422 and r.json()["field"] == "content_base64" and "unpacks to 600 MB" in r.json()["detail"]
        assert http.get(f"{url}/groups/{group_id}/roster", headers={"X-API-Key": KEY}).status_code == 404


def _damaged_zips() -> dict[str, bytes]:
    """Zips whose members cannot be unpacked: a flipped byte (CRC), the encryption flag, a
    compression method Python has no codec for; each holding a WhatsApp chat and a Slack export."""
    members = {"chat.txt": CASES["whatsapp"].read_text(encoding="utf-8"), "users.json": "[]",
               "channels.json": json.dumps([{"id": "C1", "name": "general"}]),
               "general/2025-07-01.json": json.dumps([{"type": "message", "ts": "1751360100.000200", "user": "U1",
                                                       "text": "hello there"}])}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in members.items():
            z.writestr(name, text)
    good = buf.getvalue()
    out = {}
    crc = bytearray(good)
    for name in (b"chat.txt", b"general/2025-07-01.json"):  # a byte of each one's data
        at = crc.find(name) + len(name) + 3
        crc[at] ^= 0xFF
    out["crc"] = bytes(crc)
    for what, local, central, value in (("encrypted", 6, 8, None), ("method", 8, 10, 99)):
        d = bytearray(good)
        for sig, off in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
            at = d.find(sig)
            while at != -1:
                if value is None:
                    d[at + off] |= 1
                else:
                    d[at + off: at + off + 2] = value.to_bytes(2, "little")
                at = d.find(sig, at + 4)
        out[what] = bytes(d)
    return out


def test_a_damaged_encrypted_or_unreadable_zip_is_a_422_not_a_500(url, store, group_id, tmp_path):
    """A member that cannot be unpacked (bad CRC, encrypted, unknown compression) raised
    zipfile's own exception out of the loaders: a 500 over HTTP and a traceback from
    ``graphmem ingest``. It is now the input error naming field ``path`` and the member."""
    from tests.integration.test_input_rules import cli

    post = f"{url}/groups/{group_id}/imports"
    with httpx.Client(timeout=60, headers={"X-API-Key": KEY}) as http:
        for what, data in _damaged_zips().items():
            for fmt in ("whatsapp", "slack", "auto"):
                r = http.post(post, json={"format": fmt, "content_base64": base64.b64encode(data).decode()})
                assert r.status_code == 422, (what, fmt, r.status_code, r.text)
                body = r.json()
                assert body["error"] == "InvalidInputError" and body["field"] in ("path", "format"), (what, fmt, body)
                assert "graphmem-import-" not in body["detail"] and "/tmp" not in body["detail"], body
            path = tmp_path / f"{what}.zip"
            path.write_bytes(data)
            res = cli("ingest", str(path), "--format", "whatsapp", "--group", group_id)
            assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
            assert "field 'path'" in res.stderr and "chat.txt" in res.stderr, res.stderr
    assert not rows(store, group_id)  # nothing written


def test_a_slack_zip_with_many_channels_is_read_in_one_pass(url, group_id):
    """Each channel of channels.json looked through every member name for its day files: a
    1.6 MB zip of 100,000 channels and 10,000 day files took 90 s of the server's CPU (and a
    32 MB one hours). The day files are now grouped by folder once."""
    import time

    channels, folders = 80_000, 8_000
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("users.json", "[]")
        z.writestr("channels.json", json.dumps([{"id": f"C{i}", "name": f"c{i}"} for i in range(channels)]))
        for i in range(folders):
            z.writestr(f"c{i}/2025-07-01.json", "[]")
        z.writestr("c7/2025-07-02.json", json.dumps([{"type": "message", "ts": "1751414400.000100", "user": "U1",
                                                        "text": "the one message"}]))
    started = time.monotonic()
    with httpx.Client(timeout=600, headers={"X-API-Key": KEY}) as http:
        r = http.post(f"{url}/groups/{group_id}/imports",
                      json={"format": "slack", "content_base64": base64.b64encode(buf.getvalue()).decode()})
    took = time.monotonic() - started
    assert r.status_code == 200 and r.json()["messages_written"] == 1, r.text
    assert took < 20, f"{took:.1f} s"


def test_an_error_of_the_ingest_after_the_parse_names_no_server_path(url, store, group_id):
    """The loaders' errors had the server's temporary file renamed to ``upload.txt``, but the
    ingest's own checks (a text over 100,000 characters, a group id with a control character)
    ran after that and named ``/tmp/graphmem-import-.../upload.txt``."""
    whatsapp = "01/07/2025, 10:00 - Mei: Deposit due Friday\n01/07/2025, 10:01 - Ben: " + "x" * 100_001 + "\n"
    with httpx.Client(timeout=120, headers={"X-API-Key": KEY}) as http:
        for gid, content, field in ((group_id, whatsapp, "text"), (f"{group_id}%09x", CASES["whatsapp"].read_text(
                encoding="utf-8"), "group")):
            r = http.post(f"{url}/groups/{gid}/imports", json={"format": "whatsapp", "content": content})
            assert r.status_code == 422 and r.json()["field"] == field, r.text[:300]
            detail = r.json()["detail"]
            assert "graphmem-import-" not in detail and "/tmp" not in detail, detail
            assert detail.startswith("file upload.txt"), detail
        # a 409 names where the conflicting record came from: the upload, not the server's file
        for user in ("U1", "U2"):
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w") as z:
                z.writestr("users.json", "[]")
                z.writestr("channels.json", json.dumps([{"id": "C1", "name": "gen"}]))
                z.writestr("gen/2025-07-01.json", json.dumps([{"type": "message", "ts": "1751360100.000200",
                                                                "user": user, "text": "hi"}]))
            r = http.post(f"{url}/groups/{group_id}/imports",
                          json={"format": "slack", "content_base64": base64.b64encode(buf.getvalue()).decode()})
        assert r.status_code == 409, r.text
        assert "upload.zip:gen/2025-07-01.json" in r.json()["detail"] and "/tmp" not in r.json()["detail"], r.text
    assert [r["person"] for r in rows(store, group_id).values()] == ["U1"]
