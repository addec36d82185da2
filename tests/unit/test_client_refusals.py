"""The typed client refuses what the API would refuse before it sends anything, as graphmem's
own InvalidInputError naming the field, never a pydantic ValidationError or a UnicodeEncodeError
from inside httpx, and never repeating the refused value."""

from __future__ import annotations

import httpx
import pytest

from graphmem.client import AsyncGraphMemClient, GraphMemClient
from graphmem.core.errors import GraphMemError, InvalidInputError

SECRET = "the question nobody should see echoed"


def _client() -> tuple[GraphMemClient, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500, json={"error": "GraphMemError", "detail": "should not be reached"})

    http = httpx.Client(base_url="http://testserver", transport=httpx.MockTransport(handler))
    return GraphMemClient("http://testserver", http=http), sent


@pytest.mark.parametrize(("call", "field"), [
    (lambda gm: gm.ask("g", ""), "question"),
    (lambda gm: gm.ask("g", SECRET * 200), "question"),  # over 4,000 characters
    (lambda gm: gm.ask("g", SECRET + "\ud83d"), "question"),
    (lambda gm: gm.ask("g", "which trail?", s1_k=0), "s1_k"),
    (lambda gm: gm.search("g", SECRET + "\ud83d"), "q"),
    (lambda gm: gm.person_memory("g", "ana\ud83d"), "id"),
    (lambda gm: gm.forget_person("g", "ana\udc00"), "id"),
    (lambda gm: gm.get_message("g\ud83d", "m1"), "id"),
    (lambda gm: gm.person_memory("g", "ana", as_of="2026\ud83d"), "as_of"),
])
def test_refused_before_sending_as_graphmem_errors_naming_the_field(call, field):
    gm, sent = _client()
    with pytest.raises(InvalidInputError) as caught:
        call(gm)
    assert isinstance(caught.value, GraphMemError) and caught.value.field == field, caught.value
    assert SECRET not in str(caught.value) and "input_value" not in str(caught.value)
    assert not sent


def test_the_async_client_refuses_the_same_way():
    import anyio

    async def go() -> None:
        sent: list[httpx.Request] = []
        http = httpx.AsyncClient(base_url="http://testserver",
                                 transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(500)))
        async with AsyncGraphMemClient("http://testserver", http=http) as gm:
            with pytest.raises(InvalidInputError) as caught:
                await gm.ask("g", "")
            assert caught.value.field == "question"
            with pytest.raises(InvalidInputError) as caught:
                await gm.search("g", "x\ud83dy")
            assert caught.value.field == "q"
        assert not sent

    anyio.run(go)
