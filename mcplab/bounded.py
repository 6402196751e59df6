"""Bounded reads of HTTP bodies: what a server receives and what a client reads back.

Design: a body is refused by its declared ``Content-Length`` before reading and counted while it is
read (a chunked body has no length), so no peer can make mcplab hold more than the caller's
``limit``. A reply with stacked content codings (``gzip, gzip``) is refused unread: an HTTP client
decodes each chunk whole, so a few hundred bytes could decode to gigabytes before any count.
Both raise :class:`BodyTooLarge`, whose message says why.
"""

from __future__ import annotations

from typing import Any

from .headers import content_codings

__all__ = ["BodyTooLarge", "read_body", "read_reply"]


class BodyTooLarge(Exception):
    """A body over the ``limit`` a reader allows (a server answers 413; a client reports it)."""

    def __init__(self, limit: int, why: str | None = None) -> None:
        super().__init__(why or f"the body is larger than {limit} bytes")
        self.limit = limit


def _declared_over(headers: Any, limit: int) -> bool:
    declared = headers.get("content-length", "")
    return declared.isdigit() and int(declared) > limit


async def read_body(request: Any, limit: int) -> bytes:
    """A Starlette request's body, at most ``limit`` bytes (else :class:`BodyTooLarge`)."""
    if _declared_over(request.headers, limit):
        raise BodyTooLarge(limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit)
    return bytes(body)


def read_reply(response: Any, limit: int) -> bytes:
    """An open (streamed) httpx response's decoded body, at most ``limit`` bytes, and at most one
    content coding (else :class:`BodyTooLarge`)."""
    if _declared_over(response.headers, limit):
        raise BodyTooLarge(limit)
    codings = content_codings(response.headers.get_list("content-encoding"))
    if len(codings) > 1:
        raise BodyTooLarge(limit, f"the answer stacks content codings ({', '.join(codings)}); one at most is read")
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(limit)
    return bytes(body)
