"""The Python client refuses a group id holding '/' before it sends anything.

No group id can hold '/' (the id grammar refuses it at ingest); the API answers such ids with
404 ``no group ...`` (reads) or 422 field ``group`` (append). The client gives the same errors
up front: these tests point it at a port where nothing listens, so an id that reached the
network would raise ``APIError`` (unreachable) instead. Before, the client sent the request
(its docstring said group ids may hold '/').
"""

from __future__ import annotations

import pytest

httpx = pytest.importorskip("httpx")

from graphmem.client import AsyncGraphMemClient, GraphMemClient  # noqa: E402
from graphmem.core.errors import InvalidInputError, NotFoundError  # noqa: E402

NOWHERE = "http://127.0.0.1:9"  # discard port: nothing answers there
MSG = [{"id": "m1", "speaker": "Ana", "text": "hi", "ts": "2026-03-01T10:00:00"}]


def client() -> GraphMemClient:
    return GraphMemClient(NOWHERE, http=httpx.Client(base_url=NOWHERE, timeout=2.0))


@pytest.mark.parametrize("call", [
    lambda c: c.search("team/a", "hello"),
    lambda c: c.roster("team/a"),
    lambda c: c.ask("team/a", "who?"),
    lambda c: c.derive("team/a"),
    lambda c: c.person_memory("team/a", "ana"),
    lambda c: c.provenance("team/a", "r1"),
    lambda c: c.forget_person("team/a", "ana"),
])
def test_a_read_or_action_on_a_slashed_group_id_is_the_librarys_not_found(call) -> None:
    with pytest.raises(NotFoundError) as e:
        call(client())
    assert str(e.value) == "no group 'team/a': group ids contain no '/' (ingest refuses them)"


def test_append_to_a_slashed_group_id_names_the_field_group() -> None:
    with pytest.raises(InvalidInputError) as e:
        client().append_messages("team/a", MSG)
    assert e.value.field == "group" and "contains '/'" in str(e.value)


def test_the_async_client_refuses_it_too() -> None:
    import asyncio

    async def go() -> None:
        async with AsyncGraphMemClient(NOWHERE) as c:
            with pytest.raises(NotFoundError, match="contain no '/'"):
                await c.roster("team/a")
            with pytest.raises(InvalidInputError) as e:
                await c.append_messages("team/a", MSG)
            assert e.value.field == "group"

    asyncio.run(go())


def test_other_ids_still_go_out_percent_encoded() -> None:
    """A valid group id with a space or '%' is sent (here: unreachable), not refused."""
    from graphmem.client import APIError

    with pytest.raises(APIError):
        client().roster("team a%")
