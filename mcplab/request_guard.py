"""ASGI middleware that puts mcplab's request-validation order in front of the ``mcp`` SDK.

Design: ``mcp`` 2.3.0 compares ``MCP-Protocol-Version`` with the body before it checks the
``_meta`` value types, so a number where the version string belongs gets -32020 instead of the
-32602 that MISSION.md's order requires (``negative-meta-type``). The guard runs
:func:`mcplab.requests.validate_request` on each 2026-07-28 POST and answers only the faults in
``GUARDED_CASES`` itself (HTTP 400, the request id, the same code and case as the recorded
suite); every other request reaches the SDK byte for byte. It also answers a malformed envelope
(unparsable JSON, a batch, a bad ``jsonrpc``) itself, because the SDK answers those with
``"id": null``, which the MCP schemas' RequestId forbids: an id that cannot be read is left out. A request the SDK's transport checks
refuse (Host, Origin, Content-Type: DNS-rebinding protection) is never judged here, so it gets the
SDK's 421/403/400 first. Bodies above ``MAX_GUARDED_BYTES`` pass through unread. A client that
disconnects before its body ends gets no answer and leaves one log line (the SDK would log a traceback).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request

from .errors import ProtocolViolation
from .headers import PROTOCOL_VERSION_HEADER
from .requests import _META_TYPES, validate_request
from .versions import META_PROTOCOL_VERSION, MODERN_VERSIONS

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["GUARDED_CASES", "MAX_GUARDED_BYTES", "RequestOrderGuard", "note_mid_body_disconnect"]

#: Faults the SDK reports under a different code because it checks them later than MISSION.md.
GUARDED_CASES = frozenset({"negative-meta-type", "negative-malformed-envelope"})
_NO_ID = object()
_log = logging.getLogger("uvicorn.error")
MAX_GUARDED_BYTES = 1 << 20

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _is_modern(headers: list[tuple[str, str]], message: Any) -> bool:
    if any(name.lower() == PROTOCOL_VERSION_HEADER.lower() and value in MODERN_VERSIONS for name, value in headers):
        return True
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def _meta_mistyped(message: Any) -> bool:
    """Whether ``params._meta`` (or one of its typed keys) has the wrong type: the only way to ``negative-meta-type``."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if meta is None:
        return False
    return not isinstance(meta, dict) or any(key in meta and not isinstance(meta[key], expected) for key, expected, _label in _META_TYPES)


def _plain_envelope(message: Any) -> bool:
    """A JSON-RPC request object with nothing for ``negative-malformed-envelope`` to find (as ``validate_request`` judges it)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "result" in message or "error" in message:
        return False
    request_id = message.get("id", "")
    return (isinstance(message.get("method"), str) and bool(message["method"]) and isinstance(message.get("params", {}), dict)
            and (isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))))


def guarded_violation(body: bytes, headers: list[tuple[str, str]]) -> tuple[Any, ProtocolViolation] | None:
    """The request id and fault the guard answers for this body, or ``None`` to let the SDK judge."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        message = body  # unparsable: validate_request names the parse error
    if _plain_envelope(message) and not _meta_mistyped(message):
        return None  # a plain envelope with a well-typed _meta cannot end in a guarded case: skip the full validation
    if not _is_modern(headers, message if isinstance(message, dict) else None):
        return None
    try:
        validate_request(message, headers, era="modern")
    except ProtocolViolation as fault:
        if fault.case in GUARDED_CASES:
            readable = isinstance(message, dict) and isinstance(message.get("id"), (str, int)) and not isinstance(message.get("id"), bool)
            return (message["id"] if readable else _NO_ID), fault
    return None


class RequestOrderGuard:
    """Wrap an ASGI app; POSTs to ``path`` are checked by :func:`guarded_violation` first.

    ``security`` is the app's own DNS-rebinding settings: a request they refuse goes straight on.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], path: str = "/mcp",
                 security: TransportSecuritySettings | None = None) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware  # the SDK loads with a server

        self.app = app
        self.path = path
        self.transport = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > MAX_GUARDED_BYTES:
                break
        if chunks[-1]["type"] == "http.disconnect":  # gone before its body ended: nothing to judge or answer
            note_mid_body_disconnect(scope)
            return
        if size <= MAX_GUARDED_BYTES and chunks[-1]["type"] == "http.request":
            headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
            found = guarded_violation(b"".join(m.get("body", b"") for m in chunks), headers)
            # a request the transport checks refuse (Host, Origin, Content-Type) gets the SDK's answer first;
            # checked only when the guard would answer, so a well-formed request is checked once, by the SDK
            if found is not None and await self.transport.validate_request(Request(scope), is_post=True) is None:
                await _answer(send, *found)
                return
        pending = list(chunks)

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        try:
            await self.app(scope, replay, send)
        except ClientDisconnect:  # a body too large to read first, cut off: nobody is left to answer
            note_mid_body_disconnect(scope)


def note_mid_body_disconnect(scope: Scope) -> None:
    """The one log line for a client that went away before its request body ended (never a traceback)."""
    _log.warning("mcplab: the client disconnected mid-body (%s %s); nothing was decided or answered",
                 scope.get("method"), scope.get("path"))


async def _answer(send: Send, request_id: Any, fault: ProtocolViolation) -> None:
    answer: dict[str, Any] = {"jsonrpc": "2.0", "error": fault.to_error()}
    if request_id is not _NO_ID:
        answer["id"] = request_id
    body = json.dumps(answer).encode()
    await send({"type": "http.response.start", "status": fault.http_status or 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
