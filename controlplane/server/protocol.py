"""uvicorn's HTTP/1.1 protocol (httptools) with a deadline on every request's headers.

uvicorn closes idle keep-alive connections but never times out a request whose headers are still
arriving: a client sending one header line every few seconds held its connection for as long as
it liked (slowloris). Here a request's headers must be complete within `header_timeout_s` of its
first byte, or of the connection when nothing came yet; then the connection is answered 408
(REQUEST_TIMED_OUT) and closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from controlplane.server.listener import error_answer


class DeadlineProtocol(HttpToolsProtocol):
    header_timeout_s = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_deadline()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_deadline is None:
            self._arm_header_deadline()

    def on_headers_complete(self) -> None:
        self._cancel_header_deadline()
        super().on_headers_complete()

    def _arm_header_deadline(self) -> None:
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _cancel_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if self.transport.is_closing():
            return
        answering = self.cycle is not None and not self.cycle.response_complete
        if not answering:  # never in the middle of another (pipelined) request's answer
            headers, body = error_answer(
                408,
                "REQUEST_TIMED_OUT",
                7,
                f"The request headers did not arrive within {self.header_timeout_s:g} s.",
            )
            head = b"HTTP/1.1 408 Request Timeout\r\n" + b"".join(
                name + b": " + value + b"\r\n" for name, value in headers
            )
            self.transport.write(head + b"\r\n" + body)
        self.transport.close()


def deadline_protocol(header_timeout_s: float) -> type[DeadlineProtocol]:
    """The protocol class with this listener's header deadline."""
    return type("DeadlineProtocol", (DeadlineProtocol,), {"header_timeout_s": header_timeout_s})
