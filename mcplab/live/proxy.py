"""A real reverse proxy on loopback (Starlette + httpx streaming) with one fault per mode.

Modes: ``faithful`` streams the origin's status, headers that matter, body bytes and events
through unchanged; ``collapse-errors`` answers an origin 4xx JSON-RPC error with HTTP 500 (body
and content type kept, so the collapse is its only fault); ``rewrite-body`` adds a field to the
``result`` of every JSON answer (in a stream: of each event that carries one, event by event, so
streaming is kept and the change is its only fault); ``buffer-sse`` holds an event stream until it ends
and then sends it at once. An ``egress`` function (Python API only) replaces the mode: the proxy holds
the origin's answer and sends what the function builds from it, so a proxy repair written as a
function is judged on live hops. Hop-by-hop headers (and those ``Connection`` names) stay on their hop,
repeated headers stay separate lines, and httpx adds none of its defaults. Every exchange is
recorded as the proxy saw it (ingress; the request it sent the origin and the origin's answer)
and served at ``GET /.mcplab/exchanges/{n}``, the exchange number travelling in the
``X-Mcplab-Exchange`` response header, so ``proxy_findings`` runs on real hops. Recorded headers
are redacted; bodies stay as sent so comparisons are exact, which is why the proxy listens on
loopback only, keeps a bounded number of records and body bytes, and answers nothing to a
request whose ``Host`` is not a loopback name (421) or whose ``Origin`` is a foreign page (403):
the SDK's own DNS-rebinding check, with the loopback settings the mcplab servers use, so a web page
the user visits cannot reach the proxy (or the origin behind it) through a rebound name. Request
bodies over :data:`MAX_REQUEST_BYTES` are answered 413 and never forwarded; an origin answer is held
(the buffering modes) or recorded (streamed on) up to :data:`MAX_RESPONSE_BYTES` only: past it a held
answer is a 502 (``failure: "too_large"``) and a streamed one goes on unrecorded (``truncated``).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..bounded import BodyTooLarge, read_body
from ..errors import MCPLabError
from ..jsonvalue import is_http_status
from ..redaction import redact
from ..serving import is_loopback, serve_app, transport_security
from ..sse import is_event_stream

__all__ = ["PROXY_MODES", "EXCHANGE_HEADER", "RECORD_PREFIX", "ProxyError", "RunningProxy", "build_proxy_app", "serve_proxy",
           "EgressFunction",
           "decode_record_body", "MAX_REQUEST_BYTES", "MAX_RESPONSE_BYTES", "MAX_EVENT_BYTES"]

PROXY_MODES: tuple[str, ...] = ("faithful", "collapse-errors", "rewrite-body", "buffer-sse")
EXCHANGE_HEADER = "x-mcplab-exchange"
RECORD_PREFIX = "/.mcplab/exchanges/"
#: Added to every JSON result by ``rewrite-body``.
REWRITE_FIELD = "servedBy"
#: Hop-by-hop headers (RFC 9110 7.6.1) and those of the proxy's own hop: never forwarded either
#: way. ``Proxy-Authorization`` holds credentials for this proxy, never for the origin. Headers
#: that ``Connection`` names are hop-by-hop too (see :func:`_forwardable`).
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
                         "te", "trailer", "transfer-encoding", "upgrade", "host", "content-length"})
#: Records kept: at most this many exchanges and, beyond the newest one, this many body bytes.
_KEEP = 500
_KEEP_BYTES = 64 * 1024 * 1024
_RECORD_WAIT_SECONDS = 5.0
#: The largest request body the proxy reads and forwards; a larger one is answered 413.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
#: The most bytes of one origin answer the proxy holds back (``buffer-sse``, ``collapse-errors``,
#: ``rewrite-body`` on JSON: a larger one is answered 502) or records (a streamed answer goes on
#: past it, and its record is marked ``truncated``). The live capture keeps as much.
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: ``rewrite-body`` holds an event until its end; past this many bytes without one, the stream is
#: passed on unchanged from there (so an event without end holds no memory).
MAX_EVENT_BYTES = 16 * 1024 * 1024
#: How long the proxy waits on the origin (connect, each read) before it answers 504.
UPSTREAM_TIMEOUT_SECONDS = 30.0
#: One line per client that went away mid-body, in uvicorn's error log (never an ASGI traceback).
_log = logging.getLogger("uvicorn.error")


class ProxyError(MCPLabError):
    """Bad proxy settings (unknown mode, upstream that is not an http(s) URL, a host off loopback)."""


#: Builds the answer the client gets from the origin's: ``{"status", "headers", "body"}`` in
#: (headers as ``(name, value)`` pairs as the origin sent them, the body as the origin encoded
#: it) and the same shape out.
EgressFunction = Callable[[dict[str, Any]], Any]


def _built_egress(egress: EgressFunction, status: int, headers: list[tuple[str, str]], body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """Call ``egress`` on a copy of the origin's answer and check what it built (TypeError when malformed)."""
    built = egress({"status": status, "headers": list(headers), "body": body})
    if not isinstance(built, dict) or not {"status", "headers", "body"} <= set(built):
        raise TypeError("the egress function must return a dict with status, headers and body")
    if not is_http_status(built["status"]):
        raise TypeError(f"egress status must be an HTTP status code, got {built['status']!r}")
    if not isinstance(built["body"], (bytes, bytearray)):
        raise TypeError(f"egress body must be bytes, got {type(built['body']).__name__}")
    pairs = []
    for pair in built["headers"]:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise TypeError(f"egress headers must be (name, value) string pairs, got {pair!r}")
        pairs.append((pair[0], pair[1]))
    return built["status"], pairs, bytes(built["body"])


def _pairs(raw: Any) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]


def _forwardable(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` without hop-by-hop ones, including every header the ``Connection`` header names."""
    named = {token.strip().lower() for name, value in headers if name.lower() == "connection" for token in value.split(",")}
    return [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP and k.lower() not in named]


def _raw(pairs: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Header pairs as ASGI raw headers: every repeated name kept as its own line (``Set-Cookie``)."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in pairs]


def _body_record(body: bytes) -> dict[str, Any]:
    """A body in a record: exact text when UTF-8, else base64 (see :func:`decode_record_body`)."""
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


def decode_record_body(body: dict[str, Any]) -> bytes:
    """The exact bytes of a recorded body."""
    return base64.b64decode(body["base64"]) if "base64" in body else body["text"].encode("utf-8")


def _is_jsonrpc_error(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and isinstance(message.get("error"), dict)


def _rewritten(body: bytes) -> bytes:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return body
    if not (isinstance(message, dict) and isinstance(message.get("result"), dict)):
        return body
    message["result"][REWRITE_FIELD] = "mcplab-proxy"
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_DATA_LINE = re.compile(rb"^data: ?(.*)$", re.MULTILINE)


class _EventRewriter:
    """``rewrite-body`` on an event stream: each complete event whose one ``data`` line is a
    JSON-RPC result gets the rewrite; comments, priming events and notifications pass unchanged."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._passing = False  # an event went past MAX_EVENT_BYTES: the rest of the stream passes unchanged

    def feed(self, chunk: bytes) -> bytes:
        if self._passing:
            return chunk
        start = max(0, len(self._pending) - 3)  # an event end is at most 4 bytes: the rest was searched
        self._pending += chunk
        out = []
        while (end := _EVENT_END.search(self._pending, start)) is not None:
            event = bytes(self._pending[:end.end()])
            del self._pending[:end.end()]
            start = 0
            lines = _DATA_LINE.findall(event.replace(b"\r\n", b"\n"))
            if len(lines) == 1 and lines[0].strip():
                data = lines[0].rstrip(b"\r")
                rewritten = _rewritten(data)
                event = event.replace(data, rewritten, 1) if rewritten != data else event
            out.append(event)
        if len(self._pending) > MAX_EVENT_BYTES:
            self._passing = True
            out.append(self.rest())
        return b"".join(out)

    def rest(self) -> bytes:
        rest = bytes(self._pending)
        self._pending.clear()
        return rest


class _Records:
    """The recorded exchanges, bounded by count and by body bytes (oldest dropped first; the newest
    is always kept). Bodies are held as the bytes received, once (the request body the ingress and
    the origin's request share is one object, counted once); a response body grows as a list of
    chunks. Both become text or base64 only when a record is served."""

    def __init__(self) -> None:
        self._entries: OrderedDict[int, dict[str, Any]] = OrderedDict()
        self._sizes: dict[int, int] = {}
        self._total = 0

    def get(self, number: int) -> dict[str, Any] | None:
        return self._entries.get(number)

    def add(self, number: int, entry: dict[str, Any]) -> None:
        self._entries[number] = entry
        self._sizes[number] = 0
        self._trim()

    def grew(self, number: int, size: int) -> None:
        """Exchange ``number`` now holds ``size`` more body bytes."""
        if number in self._sizes:
            self._sizes[number] += size
            self._total += size
            self._trim()

    def _trim(self) -> None:
        while len(self._entries) > 1 and (len(self._entries) > _KEEP or self._total > _KEEP_BYTES):
            oldest, _ = self._entries.popitem(last=False)
            self._total -= self._sizes.pop(oldest)

    @staticmethod
    def served(entry: dict[str, Any]) -> dict[str, Any]:
        """The JSON form of ``entry``: its chunk lists joined into recorded bodies."""
        out = {key: value for key, value in entry.items() if key not in ("origin", "ingress")}
        out["ingress"] = {**entry["ingress"], "body": _body_record(entry["ingress"]["body"])}
        origin = entry.get("origin")
        if isinstance(origin, dict):
            out["origin"] = {key: value for key, value in origin.items() if key not in ("chunks", "request")}
            out["origin"]["request"] = {**origin["request"], "body": _body_record(origin["request"]["body"])}
            if "chunks" in origin:
                out["origin"]["body"] = _body_record(b"".join(origin["chunks"]))
        return out


class _Relay(StreamingResponse):
    """Streams the origin's body on. When the origin breaks off mid-body (``broken``), the last,
    empty chunk is never sent, so uvicorn cuts the client's connection too: a truncated answer
    never looks complete (and no traceback is logged)."""

    broken = False

    async def stream_response(self, send: Any) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for chunk in self.body_iterator:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if not self.broken:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:  # a client that went away: close the origin's answer now, not when collected
            await self.body_iterator.aclose()  # type: ignore[attr-defined]  # our own async generator


def build_proxy_app(upstream: str, mode: str = "faithful", *, host: str = "127.0.0.1",
                    upstream_timeout: float = UPSTREAM_TIMEOUT_SECONDS, egress: EgressFunction | None = None) -> Starlette:
    """The proxy app: every path is forwarded to ``upstream``'s scheme, host and port.

    ``host`` is the interface it listens on (loopback): requests must name a loopback host.
    ``egress`` (with mode ``faithful`` only) builds every answer from the origin's whole answer,
    held first, an event stream too (see :data:`EgressFunction`). It runs on the proxy's event
    loop, so it must be quick. Its hop-by-hop headers are dropped and ``Content-Length`` is set
    by the proxy; when it raises or returns something malformed the client gets a 502 (the
    record says why under ``failure``).
    """
    if mode not in PROXY_MODES:
        raise ProxyError(f"--mode {mode!r}: expected one of {', '.join(PROXY_MODES)}")
    if egress is not None and (mode != "faithful" or not callable(egress)):
        raise ProxyError("egress must be a function, and it replaces the mode: use it with mode 'faithful'")
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProxyError(f"--upstream {upstream!r}: expected an http(s) URL such as http://127.0.0.1:8765/mcp")
    if not is_loopback(host):
        raise ProxyError(f"--host {host!r}: the proxy serves its records unauthenticated, so it listens on loopback "
                         "only (127.0.0.1, ::1 or localhost)")
    origin = f"{parts.scheme}://{parts.netloc}"
    from mcp.server.transport_security import TransportSecurityMiddleware  # the SDK loads with a proxy, not with check

    rebinding = TransportSecurityMiddleware(transport_security(host))
    records = _Records()
    numbers = itertools.count(1)
    state: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(upstream_timeout), follow_redirects=False, trust_env=False) as client:
            # httpx's own defaults are not the client's request: send only what the client sent
            for name in ("accept", "accept-encoding", "user-agent"):
                client.headers.pop(name, None)
            state["client"] = client
            yield

    async def record(request: Request) -> Response:
        refused = await rebinding.validate_request(request)
        if refused is not None:
            return refused
        try:
            number = int(request.path_params["number"])
        except ValueError:
            return JSONResponse({"error": "exchange numbers are integers"}, status_code=400)
        deadline = time.monotonic() + _RECORD_WAIT_SECONDS
        found = records.get(number)
        while found is not None and not found["complete"] and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
            found = records.get(number)
        if found is None:
            return JSONResponse({"error": f"no exchange {number} (the proxy keeps the last {_KEEP}, "
                                          f"{_KEEP_BYTES // 2**20} MiB of bodies)"}, status_code=404)
        return JSONResponse(redact(_Records.served(found)))

    async def forward(request: Request) -> Response:
        refused = await rebinding.validate_request(request)  # Host and Origin only: Content-Type is the origin's to judge
        if refused is not None:
            return refused
        try:
            body = await read_body(request, MAX_REQUEST_BYTES)
        except BodyTooLarge:
            return Response(f"request body over {MAX_REQUEST_BYTES // 2**20} MiB: not forwarded\n", status_code=413,
                            media_type="text/plain")
        except ClientDisconnect:  # nobody is left to answer: one line in the log, nothing forwarded
            _log.warning("mcplab proxy: the client disconnected mid-body (%s %s); nothing was forwarded",
                         request.method, request.url.path[:200])
            return Response(status_code=400)
        client = state["client"]
        number = next(numbers)
        ingress = _pairs(request.headers.raw)
        # the request target as received: %2F stays %2F (request.url.path is decoded)
        raw_path = request.scope.get("raw_path") or request.url.path.encode("utf-8")
        query = request.scope.get("query_string", b"")
        target = origin + raw_path.decode("latin-1") + (f"?{query.decode('latin-1')}" if query else "")
        outgoing = client.build_request(request.method, target, headers=_forwardable(ingress), content=body)
        entry: dict[str, Any] = {"number": number, "mode": mode if egress is None else "egress", "complete": False,
                                 "ingress": {"method": request.method, "path": request.url.path, "headers": ingress,
                                             "body": body}}
        records.add(number, entry)
        records.grew(number, len(body))
        try:
            answer = await client.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            entry.update(complete=True, origin=None, failure=f"{type(exc).__name__}: {exc}")
            timeout = isinstance(exc, httpx.TimeoutException)
            return Response(f"upstream {'timed out' if timeout else 'unreachable'}: {type(exc).__name__}\n",
                            status_code=504 if timeout else 502, media_type="text/plain",
                            headers={EXCHANGE_HEADER: str(number)})
        headers = _pairs(answer.headers.raw)
        chunks: list[bytes] = []
        held = 0  # body bytes in ``chunks``
        origin_hop: dict[str, Any] = {"status": answer.status_code, "headers": headers, "chunks": chunks,
                                      "request": {"headers": _pairs(outgoing.headers.raw), "body": body}}
        entry["origin"] = origin_hop
        passed_on = _forwardable(headers) + [(EXCHANGE_HEADER, str(number))]
        stream = is_event_stream(answer.headers.get("content-type"))
        length = answer.headers.get("content-length")
        encoded = answer.headers.get("content-encoding", "identity").lower() != "identity"
        if egress is None and (mode == "faithful" or (stream and mode != "buffer-sse")):
            rewriter = _EventRewriter() if mode == "rewrite-body" and stream and not encoded else None

            async def relay() -> AsyncIterator[bytes]:
                nonlocal held
                try:
                    async for chunk in answer.aiter_raw():
                        if "truncated" not in origin_hop and held + len(chunk) <= MAX_RESPONSE_BYTES:
                            chunks.append(chunk)
                            held += len(chunk)
                            records.grew(number, len(chunk))
                        else:  # relayed on, no longer recorded
                            origin_hop["truncated"] = True
                        yield chunk if rewriter is None else rewriter.feed(chunk)
                    if rewriter is not None:
                        yield rewriter.rest()
                except httpx.HTTPError as exc:
                    entry["failure"] = f"{type(exc).__name__}: {exc}"
                    relayed.broken = True
                finally:
                    entry["complete"] = True
                    await answer.aclose()
            relayed = _Relay(relay(), status_code=answer.status_code)
            # the bytes are relayed unchanged (unless rewritten), so the origin's Content-Length still holds
            kept_length = length is not None and rewriter is None
            relayed.raw_headers = _raw(passed_on + ([("content-length", length)] if kept_length else []))
            return relayed
        try:
            async for chunk in answer.aiter_raw():  # raw: a compressed body stays as the origin encoded it
                if held + len(chunk) > MAX_RESPONSE_BYTES:
                    entry.update(complete=True, failure="too_large")
                    return Response(f"upstream answer over {MAX_RESPONSE_BYTES // 2**20} MiB: not held back\n",
                                    status_code=502, media_type="text/plain", headers={EXCHANGE_HEADER: str(number)})
                chunks.append(chunk)
                held += len(chunk)
                records.grew(number, len(chunk))
        except httpx.HTTPError as exc:
            entry.update(complete=True, failure=f"{type(exc).__name__}: {exc}")
            return Response(f"upstream broke off its answer: {type(exc).__name__}\n", status_code=502,
                            media_type="text/plain", headers={EXCHANGE_HEADER: str(number)})
        finally:
            await answer.aclose()
        data = b"".join(chunks)
        status = answer.status_code
        if egress is not None:
            try:
                status, built, data = _built_egress(egress, status, headers, data)
            except Exception as exc:  # the function's fault is the proxy's answer, never a traceback
                entry.update(complete=True, failure=f"egress function failed: {type(exc).__name__}: {exc}")
                return Response(f"egress function failed: {type(exc).__name__}\n", status_code=502, media_type="text/plain",
                                headers={EXCHANGE_HEADER: str(number)})
            passed_on = _forwardable(built) + [(EXCHANGE_HEADER, str(number))]
        elif mode == "collapse-errors" and 400 <= status < 500 and not encoded and _is_jsonrpc_error(data):
            status = 500
        elif mode == "rewrite-body" and not stream and not encoded:
            data = _rewritten(data)
        entry["complete"] = True
        answered = Response(data, status_code=status)
        answered.raw_headers = _raw(passed_on + [("content-length", str(len(data)))])
        return answered

    return Starlette(routes=[Route(RECORD_PREFIX + "{number}", record, methods=["GET"]),
                             Route("/{path:path}", forward, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])],
                     lifespan=lifespan)


@dataclass
class RunningProxy:
    """A proxy running in this process. ``url`` is the upstream URL as seen through the proxy."""

    url: str
    base_url: str
    upstream: str
    mode: str
    port: int


@contextmanager
def serve_proxy(upstream: str, mode: str = "faithful", *, host: str = "127.0.0.1", port: int = 0,
                log_level: str = "warning", upstream_timeout: float = UPSTREAM_TIMEOUT_SECONDS,
                egress: EgressFunction | None = None) -> Iterator[RunningProxy]:
    """Run the proxy under uvicorn in a daemon thread for the ``with`` block (``port=0``: a free port).

    ``host`` must be a loopback address: the proxy serves what it recorded (bodies included) to
    anyone who asks, so it never listens where another machine could.
    """
    app = build_proxy_app(upstream, mode, host=host, upstream_timeout=upstream_timeout, egress=egress)
    with serve_app(app, host=host, port=port, name=f"proxy ({mode})", log_level=log_level,
                   server_header=False, date_header=False) as bound:
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{bound}"
        parts = urlsplit(upstream)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        yield RunningProxy(url=base + path, base_url=base, upstream=upstream, mode=mode, port=bound)
