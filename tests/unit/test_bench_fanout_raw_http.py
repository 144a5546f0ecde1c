"""The fan-out followers' HTTP/1.1 client against a small asyncio server: keep-alive GETs with
their query, a `Connection: close`, and answers it cannot read."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from bench.fanout.raw_http import FETCH_ERRORS, RawHttpConnection

Answer = Callable[[bytes], tuple[bytes, bool]]  # the bytes to send, and whether to close then


async def _serve(answer: Answer) -> tuple[asyncio.Server, list[bytes], list[int]]:
    """A server answering each request head with `answer(head)` (and closing the connection
    when it says so): the heads it read, and one entry per connection it accepted."""
    heads: list[bytes] = []
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                heads.append(head)
                data, close = answer(head)
                writer.write(data)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, heads, connections


def _ok(body: bytes, *extra: bytes) -> bytes:
    headers = b"".join(h + b"\r\n" for h in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), headers, body)


def _run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


def test_gets_share_one_connection_and_carry_their_query_and_headers() -> None:
    async def test() -> None:
        server, heads, connections = await _serve(
            lambda head: (_ok(b"x" * 70_000, b"Content-Type: application/msgpack"), False)
        )
        port = server.sockets[0].getsockname()[1]
        client = RawHttpConnection(f"http://127.0.0.1:{port}", {"Authorization": "Bearer t"})
        try:
            first = await client.get("/internal/v1/metadata", {"after_offset": 5, "wait_ms": 10})
            second = await client.get("/internal/v1/metadata", {"after_offset": 6})
        finally:
            await client.close()
            server.close()
        assert first.status_code == 200 and len(first.body) == 70_000
        assert first.headers["content-type"] == "application/msgpack"
        assert second.body == first.body
        assert heads[0].startswith(b"GET /internal/v1/metadata?after_offset=5&wait_ms=10 ")
        assert b"Authorization: Bearer t\r\n" in heads[0]
        assert f"Host: 127.0.0.1:{port}".encode() in heads[0]
        assert heads[1].startswith(b"GET /internal/v1/metadata?after_offset=6 ")
        assert len(connections) == 1

    _run(test)


def test_a_connection_close_answer_opens_a_new_connection_for_the_next_get() -> None:
    async def test() -> None:
        server, _, connections = await _serve(lambda head: (_ok(b"{}", b"Connection: close"), True))
        port = server.sockets[0].getsockname()[1]
        client = RawHttpConnection(f"http://127.0.0.1:{port}", {})
        try:
            for _ in range(2):
                assert (await client.get("/x", {})).body == b"{}"
        finally:
            await client.close()
            server.close()
        assert len(connections) == 2

    _run(test)


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",  # cut short
        b"SSH-2.0-OpenSSH\r\n\r\n",
    ],
    ids=["no-content-length", "cut-short", "not-http"],
)
def test_an_answer_it_cannot_read_is_an_error_and_the_next_get_reconnects(answer: bytes) -> None:
    async def test() -> None:
        answers = iter([(answer, True)])
        server, _, connections = await _serve(lambda head: next(answers, (_ok(b"{}"), False)))
        port = server.sockets[0].getsockname()[1]
        client = RawHttpConnection(f"http://127.0.0.1:{port}", {})
        try:
            with pytest.raises(FETCH_ERRORS):
                await asyncio.wait_for(client.get("/x", {}), 5)
            assert (await asyncio.wait_for(client.get("/x", {}), 5)).body == b"{}"
        finally:
            await client.close()
            server.close()
        assert len(connections) == 2

    _run(test)
