"""Capture one HTTP exchange as it really crossed the wire: status, headers, raw body, timing.

Design: the request is sent exactly as given (header pairs with their duplicates, body bytes;
httpx's default ``Accept``/``Accept-Encoding`` are removed so nothing is added that the case did
not ask for), and the response body is read as a stream. A ``text/event-stream`` answer is parsed
by ``httpx-sse`` while it arrives, so every event carries its arrival time; the raw bytes are
kept beside the events. A connection that cannot be opened (refused, or not within the timeout)
raises :class:`Unreachable`; a timeout or a dropped connection after that is recorded
(``failure``), never raised.
"""

from __future__ import annotations

import base64
import codecs
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import EventSource, SSEError

from ..errors import MCPLabError
from ..headers import content_codings, media_type, normalize_headers
from ..sse import is_event_stream

__all__ = ["Capture", "Unreachable", "capture_client", "send", "body_evidence", "FAILURES", "MAX_CAPTURE_BYTES",
           "MAX_CAPTURE_EVENTS"]

#: What ``Capture.failure`` may say when no complete response arrived.
FAILURES = ("timeout", "connection_closed", "refused_to_send", "too_large")

#: The most bytes of one response a capture keeps: past it the capture ends as ``too_large``
#: (the bytes before it are kept), so a server that answers without end cannot exhaust memory.
MAX_CAPTURE_BYTES = 64 * 1024 * 1024
#: The most events of one stream a capture keeps: an event costs ~50 times its smallest spelling
#: (``data:`` and a blank line, 7 bytes) in memory, so the byte limit alone would allow gigabytes.
MAX_CAPTURE_EVENTS = 100_000


class _TooLarge(Exception):
    """The response went past :data:`MAX_CAPTURE_BYTES`."""


def stacked_codings(response: httpx.Response) -> bool:
    """More than one content coding (``gzip, gzip``): httpx decodes each chunk whole, so a few hundred
    bytes could decode to gigabytes before any count. Such an answer is not read (``too_large``)."""
    return len(content_codings(response.headers.get_list("content-encoding"))) > 1


class Unreachable(MCPLabError):
    """Nothing answers at the URL (connection refused, unknown host): one line, exit 2."""


@dataclass
class Capture:
    """One request and what came back. Times are seconds from the moment the request was sent."""

    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    elapsed: float = 0.0
    first_byte: float | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    ended: bool = False
    failure: str | None = None

    @property
    def media_type(self) -> str | None:
        return media_type(normalize_headers(self.headers))

    @property
    def is_stream(self) -> bool:
        return is_event_stream(self.media_type)

    @property
    def first_event_latency(self) -> float | None:
        """Seconds until the first SSE event was complete (``None`` without events)."""
        return self.events[0]["at"] if self.events else None

    def header(self, name: str) -> str | None:
        values = normalize_headers(self.headers).get(name.lower())
        return values[0] if values else None

    def response_body(self) -> str | bytes | None:
        """The body as the validators take it: ``None`` when empty, text when UTF-8, else bytes."""
        if not self.body:
            return None
        try:
            return self.body.decode("utf-8")
        except UnicodeDecodeError:
            return self.body

    def timing(self) -> dict[str, Any]:
        """Stream duration, first-byte and first-event latency (ms) and the event count."""
        def ms(value: float | None) -> float | None:
            return None if value is None else round(value * 1000, 2)
        return {"durationMs": ms(self.elapsed), "firstByteMs": ms(self.first_byte),
                "firstEventMs": ms(self.first_event_latency), "eventCount": len(self.events)}

    def to_evidence(self) -> dict[str, Any]:
        """JSON-serialisable evidence with every body parsed where it is JSON (so redaction can
        reach secret keys inside it); a stream is kept as its events, not as raw text."""
        response: dict[str, Any] = {"status": self.status, "headers": [list(p) for p in self.headers]}
        if self.is_stream:
            response["events"] = [{**e, "data": body_evidence(e["data"])} for e in self.events]
            response["endOfStream"] = self.ended
        else:
            response["body"] = body_evidence(self.body)
        return {
            "url": self.url,
            "request": {"headers": [list(p) for p in self.request_headers], "body": body_evidence(self.request_body)},
            "response": response,
            "timing": self.timing(),
            "failure": self.failure,
        }


def body_evidence(body: bytes | str | None) -> Any:
    """A body as evidence: the JSON value, else the text, else ``{"base64": ...}``; ``None`` when empty."""
    if body is None or len(body) == 0:
        return None
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(body).decode("ascii")}
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return body


def capture_client(timeout: float = 10.0) -> httpx.Client:
    """An httpx client that adds no ``Accept``/``Accept-Encoding`` of its own and never follows redirects."""
    client = httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False)
    for name in ("accept", "accept-encoding"):
        client.headers.pop(name, None)
    client.headers["user-agent"] = "mcplab-live"
    return client


class _Tap:
    """Stands in for the response handed to ``httpx_sse.EventSource``: yields the body as text
    while keeping every raw chunk (in ``raw``) and the first byte's arrival time; past the
    request's whole ``budget`` it raises a timeout, so a server that trickles bytes forever ends."""

    def __init__(self, response: httpx.Response, capture: Capture, started: float, budget: float) -> None:
        self.headers = response.headers
        self.raw = bytearray()
        self._response, self._capture, self._started, self._budget = response, capture, started, budget

    def iter_text(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for chunk in self._response.iter_bytes():
            now = time.perf_counter() - self._started
            if self._capture.first_byte is None:
                self._capture.first_byte = now
            if len(self.raw) + len(chunk) > MAX_CAPTURE_BYTES:
                raise _TooLarge
            self.raw += chunk
            if now > self._budget:
                raise httpx.ReadTimeout(f"no end of the response within {self._budget:g} s")
            text = decoder.decode(chunk)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail


def _encode(body: bytes | str | Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def send(client: httpx.Client, url: str, headers: Sequence[tuple[str, str]], body: bytes | str | Any,
         *, timeout: float | None = None) -> Capture:
    """POST ``body`` (bytes, text, or a JSON value) with ``headers`` to ``url`` and capture the answer.

    ``timeout`` (default: the client's read timeout) bounds each wait for the server AND the
    whole response: a stream still running after it is recorded as ``failure="timeout"``.
    """
    content = _encode(body)
    capture = Capture(url=url, request_headers=[(str(k), str(v)) for k, v in headers], request_body=content)
    budget = timeout if timeout is not None else (client.timeout.read or float("inf"))
    started = time.perf_counter()
    tap: _Tap | None = None
    try:
        with client.stream("POST", url, headers=list(headers), content=content,
                           timeout=timeout if timeout is not None else client.timeout) as response:
            capture.request_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.request.headers.raw]
            capture.status = response.status_code
            capture.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw]
            if stacked_codings(response):
                raise _TooLarge
            tap = _Tap(response, capture, started, budget)
            if capture.is_stream:
                for event in EventSource(tap).iter_sse():  # type: ignore[arg-type]  # duck-typed response
                    if len(capture.events) >= MAX_CAPTURE_EVENTS:
                        raise _TooLarge
                    capture.events.append({"event": event.event, "data": event.data, "id": event.id or None,
                                           "retry": event.retry, "at": round(time.perf_counter() - started, 6)})
            else:
                for _text in tap.iter_text():
                    pass
            capture.ended = True
    except httpx.ConnectError as exc:
        raise Unreachable(f"{url}: nothing answers ({exc})") from None
    except httpx.ConnectTimeout:
        raise Unreachable(f"{url}: no connection within {budget:g} s (nothing answers there)") from None
    except httpx.TimeoutException:
        capture.failure = "timeout"
    except (httpx.RemoteProtocolError, httpx.ReadError, SSEError):
        capture.failure = "connection_closed"
    except httpx.LocalProtocolError:
        capture.failure = "refused_to_send"
    except _TooLarge:
        capture.failure = "too_large"
    if tap is not None:
        capture.body = bytes(tap.raw)
    capture.elapsed = time.perf_counter() - started
    return capture
