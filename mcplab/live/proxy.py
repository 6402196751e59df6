"""A real reverse proxy on loopback (Starlette + httpx streaming) with one fault per mode.

Modes: ``faithful`` streams the origin's status, headers that matter, body bytes and events
through unchanged; ``collapse-errors`` answers an origin 4xx JSON-RPC error with HTTP 500 (body
and content type kept, so the collapse is its only fault); ``rewrite-body`` adds a field to the
``result`` of every JSON (non-stream) answer; ``buffer-sse`` holds an event stream until it ends
and then sends it at once. Every exchange is recorded as the proxy saw it (ingress; the request
it sent the origin and the origin's answer) and served at ``GET /.mcplab/exchanges/{n}``, the
exchange number travelling in the ``X-Mcplab-Exchange`` response header, so ``proxy_findings``
runs on real hops. Recorded headers are redacted; bodies stay as sent so comparisons are exact.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..errors import MCPLabError
from ..redaction import redact
from ..serving import serve_app
from ..sse import is_event_stream
from .capture import body_evidence

__all__ = ["PROXY_MODES", "EXCHANGE_HEADER", "RECORD_PREFIX", "ProxyError", "RunningProxy", "build_proxy_app", "serve_proxy",
           "decode_record_body"]

PROXY_MODES: tuple[str, ...] = ("faithful", "collapse-errors", "rewrite-body", "buffer-sse")
EXCHANGE_HEADER = "x-mcplab-exchange"
RECORD_PREFIX = "/.mcplab/exchanges/"
#: Added to every JSON result by ``rewrite-body``.
REWRITE_FIELD = "servedBy"
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-connection", "te", "trailer",
                         "transfer-encoding", "upgrade", "host", "content-length"})
_KEEP = 500
_RECORD_WAIT_SECONDS = 5.0


class ProxyError(MCPLabError):
    """Bad proxy settings (unknown mode, upstream that is not an http(s) URL)."""


def _pairs(raw: Any) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]


def _forwardable(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP]


def _body_record(body: bytes) -> dict[str, Any]:
    """A body in a record: exact text when UTF-8, else base64 (see :func:`decode_record_body`)."""
    evidence = body_evidence(body) if body else None
    if isinstance(evidence, dict) and set(evidence) == {"base64"}:
        return evidence
    return {"text": body.decode("utf-8")}


def decode_record_body(body: dict[str, Any]) -> bytes:
    """The exact bytes of a recorded body."""
    import base64

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


def build_proxy_app(upstream: str, mode: str = "faithful") -> Starlette:
    """The proxy app: every path is forwarded to ``upstream``'s scheme, host and port."""
    if mode not in PROXY_MODES:
        raise ProxyError(f"--mode {mode!r}: expected one of {', '.join(PROXY_MODES)}")
    parts = urlsplit(upstream)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProxyError(f"--upstream {upstream!r}: expected an http(s) URL such as http://127.0.0.1:8765/mcp")
    origin = f"{parts.scheme}://{parts.netloc}"
    records: OrderedDict[int, dict[str, Any]] = OrderedDict()
    numbers = itertools.count(1)
    state: dict[str, httpx.AsyncClient] = {}

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0), follow_redirects=False, trust_env=False) as client:
            state["client"] = client
            yield

    def keep(number: int, record: dict[str, Any]) -> None:
        records[number] = record
        while len(records) > _KEEP:
            records.popitem(last=False)

    async def record(request: Request) -> JSONResponse:
        try:
            number = int(request.path_params["number"])
        except ValueError:
            return JSONResponse({"error": "exchange numbers are integers"}, status_code=400)
        deadline = time.monotonic() + _RECORD_WAIT_SECONDS
        while number in records and not records[number]["complete"] and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        found = records.get(number)
        if found is None:
            return JSONResponse({"error": f"no exchange {number} (the proxy keeps the last {_KEEP})"}, status_code=404)
        return JSONResponse(redact(found))

    async def forward(request: Request) -> Response:
        client = state["client"]
        number = next(numbers)
        body = await request.body()
        ingress = _pairs(request.headers.raw)
        target = origin + request.url.path + (f"?{request.url.query}" if request.url.query else "")
        outgoing = client.build_request(request.method, target, headers=_forwardable(ingress), content=body)
        entry: dict[str, Any] = {"number": number, "mode": mode, "complete": False,
                                 "ingress": {"method": request.method, "path": request.url.path, "headers": ingress,
                                             "body": _body_record(body)}}
        keep(number, entry)
        try:
            answer = await client.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            entry.update(complete=True, origin=None, failure=f"{type(exc).__name__}: {exc}")
            return Response(f"upstream unreachable: {type(exc).__name__}\n", status_code=502, media_type="text/plain",
                            headers={EXCHANGE_HEADER: str(number)})
        headers = _pairs(answer.headers.raw)
        origin_hop: dict[str, Any] = {"status": answer.status_code, "headers": headers, "body": None,
                                      "request": {"headers": _pairs(outgoing.headers.raw), "body": _body_record(body)}}
        entry["origin"] = origin_hop
        egress_headers = _forwardable(headers) + [(EXCHANGE_HEADER, str(number))]
        stream = is_event_stream(answer.headers.get("content-type"))
        if mode == "faithful" or (stream and mode != "buffer-sse"):
            async def relay() -> AsyncIterator[bytes]:
                chunks: list[bytes] = []
                try:
                    async for chunk in answer.aiter_raw():
                        chunks.append(chunk)
                        origin_hop["body"] = _body_record(b"".join(chunks))
                        yield chunk
                finally:
                    origin_hop["body"] = _body_record(b"".join(chunks))
                    entry["complete"] = True
                    await answer.aclose()
            return StreamingResponse(relay(), status_code=answer.status_code, headers=dict(_merge(egress_headers)))
        data = await answer.aread()
        await answer.aclose()
        origin_hop["body"] = _body_record(data)
        status = answer.status_code
        if mode == "collapse-errors" and 400 <= status < 500 and _is_jsonrpc_error(data):
            status = 500
        elif mode == "rewrite-body" and not stream:
            data = _rewritten(data)
        entry["complete"] = True
        return Response(data, status_code=status, headers=dict(_merge(egress_headers)))

    return Starlette(routes=[Route(RECORD_PREFIX + "{number}", record, methods=["GET"]),
                             Route("/{path:path}", forward, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"])],
                     lifespan=lifespan)


def _merge(pairs: list[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """Header pairs as one value per name (repeated names joined with ", ", as HTTP allows)."""
    merged: dict[str, str] = {}
    for name, value in pairs:
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return iter(merged.items())


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
                log_level: str = "warning") -> Iterator[RunningProxy]:
    """Run the proxy under uvicorn in a daemon thread for the ``with`` block (``port=0``: a free port)."""
    app = build_proxy_app(upstream, mode)
    with serve_app(app, host=host, port=port, name=f"proxy ({mode})", log_level=log_level,
                   server_header=False, date_header=False) as bound:
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{bound}"
        parts = urlsplit(upstream)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        yield RunningProxy(url=base + path, base_url=base, upstream=upstream, mode=mode, port=bound)
