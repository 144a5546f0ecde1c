"""The followers' HTTP/1.1 client: asyncio streams, one keep-alive connection per broker, and
no more than a long-poll needs (a GET, an answer with its Content-Length).

The followers stand for brokers, which run on hosts of their own: every CPU second they spend
here is taken from the two cores the controller's side shares with them. httpx's own work per
answer (its request and response models, its stream machinery) cost the follower processes about
as much as decompressing and reading the answers; this client does what the bench's admin load
client does (bench.admin_forwarding.load_client): write the request, read the head, read the
body by its length.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.parse
from typing import NamedTuple

# What a fetch may fail with here: the connection lost or refused, an answer cut short, a head
# too long or not HTTP, no answer in time.
FETCH_ERRORS = (
    OSError,
    asyncio.IncompleteReadError,
    asyncio.LimitOverrunError,
    ValueError,
    TimeoutError,
)


class Response(NamedTuple):
    status_code: int
    headers: dict[str, str]  # names in lower case
    body: bytes


class RawHttpConnection:
    """GETs on one keep-alive connection to `base` (http://host:port), with `headers` on each;
    opened on first use and again after an error or a `Connection: close`."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        parts = urllib.parse.urlsplit(base)
        if parts.scheme != "http" or parts.hostname is None:
            raise ValueError(f"raw_http: only http://host:port bases, not {base!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        fixed = {"Host": f"{self.host}:{self.port}", **headers}
        self._fixed = "".join(f"{k}: {v}\r\n" for k, v in fixed.items()).encode("latin-1")
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, params: dict[str, int]) -> Response:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        target = f"{path}?{urllib.parse.urlencode(params)}" if params else path
        try:
            self._writer.write(b"GET " + target.encode() + b" HTTP/1.1\r\n" + self._fixed + b"\r\n")
            response = await _read_response(self._reader)
        except BaseException:  # cancelled or failed mid-answer: the connection is unusable
            await self.close()
            raise
        if response.headers.get("connection", "").lower() == "close":
            await self.close()
        return response

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def _read_response(reader: asyncio.StreamReader) -> Response:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    if not lines[0].startswith(b"HTTP/1.1 ") or len(lines[0]) < 12:
        raise ValueError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    length = headers.get("content-length")
    if length is None:  # the server sends every answer with its length
        raise ValueError("an answer without Content-Length")
    return Response(int(lines[0][9:12]), headers, await reader.readexactly(int(length)))
