"""The stockroom as a real MCP server: the ``mcp`` SDK's low-level ``Server`` over Streamable HTTP.

Design: a thin adapter. ``tools/list`` returns the catalog; ``tools/call`` hands the name,
arguments, era (from the negotiated protocol version), the client's declared capabilities and
the MRTR fields to :class:`~mcplab.stockroom.rules.Stockroom` and maps its outcome onto the wire
(a result, ``InputRequiredResult``, or ``MCPError`` with data). One stateless ``/mcp`` route
serves 2026-07-28 and 2025-11-25. Course conveniences that are not MCP live beside it:
``GET /stockroom/trace``, ``GET /stockroom/ledger``, ``GET /stockroom/drafts``, ``POST /stockroom/reset``, and the
out-of-band approvals of the 2025-11-25 path, ``GET /stockroom/approvals`` and
``POST /stockroom/approvals/{id}``, which needs the approver token as ``Authorization: Bearer``
(see :mod:`~mcplab.stockroom.approver`; ``admin=False`` removes them; by default they exist only on
loopback hosts, behind the same Host/Origin checks as ``/mcp``). A ``GET /mcp`` is 405: a stateless
stockroom never pushes anything, and the SDK would otherwise hold a 2025-11-25 listen stream open
that no event ever reaches. The admin POST bodies are read up to :data:`ADMIN_MAX_BODY_BYTES`
(more is 413) and must be one JSON object (invalid, or nested too deeply to parse, is 400).
The SDK is imported by the functions that build the server, so importing the stockroom (a lab's
setup cell) does not pay for it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .. import __version__
from ..bounded import BodyTooLarge, read_body
from ..request_guard import RequestOrderGuard
from ..serving import ServeError, is_loopback, serve_app, spans_only_when_recorded, transport_security, wire_dump
from .approver import ApproverTokenError
from .catalog import STREAM_TOOL
from .ledger import MEMORY, Ledger
from .outcome import ToolOutcome
from .rules import ApprovalError, Stockroom

if TYPE_CHECKING:
    import mcp_types as t
    from mcp.server import Server
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["SERVER_NAME", "INSTRUCTIONS", "PROGRESS_INTERVAL_SECONDS", "ADMIN_MAX_BODY_BYTES", "build_server", "build_app",
           "serve_stockroom", "RunningServer", "ServeError"]

SERVER_NAME = "mcplab-stockroom"
INSTRUCTIONS = (
    "A studio stockroom. read_stock reads the ledger; draft_reorder and request_approval prepare a change "
    "without touching it; commit_reorder writes only after a person approves the exact payload (it answers "
    "input_required with the diff). Tools outside the allow-list are denied."
)
#: Pacing between read_stock's progress events (and before its result): the stream lasts about
#: ``len(items) * PROGRESS_INTERVAL_SECONDS``, long enough that a buffering proxy shows (first-event
#: latency close to the whole duration) while a direct stream's first event arrives at once.
PROGRESS_INTERVAL_SECONDS = 0.05
#: The largest body an admin POST (reset, an approval decision) may send; the answer to more is 413.
ADMIN_MAX_BODY_BYTES = 64 * 1024


class _BadBody(Exception):
    """An admin POST body that is refused: ``status`` and a one-line ``error``."""

    def __init__(self, status: int, error: str) -> None:
        super().__init__(error)
        self.status, self.error = status, error


async def _json_object(request: Request) -> dict[str, Any]:
    """The body of an admin POST as a JSON object, read up to :data:`ADMIN_MAX_BODY_BYTES` (else :class:`_BadBody`)."""
    try:
        body = await read_body(request, ADMIN_MAX_BODY_BYTES)
    except BodyTooLarge as exc:
        raise _BadBody(413, str(exc)) from None
    except ClientDisconnect:  # nobody to answer; never an ASGI traceback (issue 15)
        raise _BadBody(400, "the client disconnected before its body ended") from None
    try:
        value = json.loads(body)
    except RecursionError:
        raise _BadBody(400, "the JSON body is nested too deeply; send a JSON object ({})") from None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise _BadBody(400, "send a JSON object ({})")
    return value


def _to_wire(outcome: ToolOutcome) -> dict[str, Any]:
    """The wire result of ``outcome`` as a plain dict: the SDK validates it once and shapes it per protocol
    version (a 2025-11-25 answer loses ``resultType``)."""
    from mcp.shared.exceptions import MCPError

    if outcome.kind == "error":
        error = outcome.error or {}
        raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
    if outcome.kind == "input_required":
        return {"resultType": "input_required", "inputRequests": outcome.input_requests, "requestState": outcome.request_state}
    text = json.dumps(outcome.structured, ensure_ascii=False)
    return {"resultType": "complete", "content": [{"type": "text", "text": text}], "structuredContent": outcome.structured,
            "isError": outcome.is_error}


async def _stream_progress(ctx: Any, items: list[dict[str, Any]], interval: float) -> None:
    """One ``notifications/progress`` per item, ``interval`` apart, then ``interval`` before the result.

    Only when the request carries a progress token: without one the call answers at once. The
    items come from the one consistent read already recorded, so streaming adds no trace row.
    """
    from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

    if progress_token_from_params(ctx.params) is None:
        return
    total = len(items)
    for index, item in enumerate(items, start=1):
        if index > 1:
            await anyio.sleep(interval)
        await ctx.session.report_progress(index, total, f"{item['sku']}: {item['on_hand']} on hand")
    await anyio.sleep(interval)


def build_server(stockroom: Stockroom, *, progress_interval: float = PROGRESS_INTERVAL_SECONDS) -> Server:
    """The low-level MCP ``Server`` for ``stockroom`` (tools only).

    ``read_stock`` with a progress token streams its items as progress (see :data:`STREAM_TOOL`),
    ``progress_interval`` seconds apart.
    """
    import mcp_types as t
    from mcp.server import Server
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    tools = [t.Tool.model_validate(descriptor) for descriptor in stockroom.tools()]

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> dict[str, Any]:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        capabilities = wire_dump(ctx.session.client_capabilities) if modern else None
        input_responses = getattr(params, "input_responses", None)
        request = getattr(ctx, "request", None)
        announced = request.scope.get(_ANNOUNCED) if request is not None else None
        outcome = await stockroom.call_tool_async(
            params.name, params.arguments, announced=announced,
            input_responses=wire_dump(input_responses) if input_responses is not None else None,
            request_state=getattr(params, "request_state", None),
            era="modern" if modern else "legacy",
            client_capabilities=capabilities or {},
        )
        if params.name == STREAM_TOOL and outcome.kind == "complete":
            await _stream_progress(ctx, outcome.structured["items"], progress_interval)
        return _to_wire(outcome)

    return spans_only_when_recorded(Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS,
                                           on_list_tools=list_tools, on_call_tool=call_tool))


def _admin_routes(stockroom: Stockroom, security: TransportSecuritySettings | None) -> list[Route]:
    """The course conveniences, behind the same Host/Origin checks as ``/mcp`` (and JSON-only POSTs)."""
    from mcp.server.transport_security import TransportSecurityMiddleware

    guard = TransportSecurityMiddleware(security)

    def guarded(handler: Any, *, post: bool = False) -> Any:
        async def endpoint(request: Request) -> Any:
            refused = await guard.validate_request(request, is_post=post)
            if refused is not None:
                return refused
            try:
                return await handler(request)
            except _BadBody as bad:
                return JSONResponse({"error": bad.error}, status_code=bad.status)
        return endpoint

    async def run(func: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: func(*args))

    async def trace(request: Request) -> JSONResponse:
        records, problems = await run(stockroom.audit)
        return JSONResponse({"records": records, "problems": problems})

    async def ledger(request: Request) -> JSONResponse:
        return JSONResponse(await run(stockroom.snapshot))

    async def drafts(request: Request) -> JSONResponse:
        return JSONResponse(await run(stockroom.drafts))

    async def reset(request: Request) -> JSONResponse:
        await _json_object(request)
        return JSONResponse(await run(stockroom.reset))

    async def approvals(request: Request) -> JSONResponse:
        return JSONResponse(await run(stockroom.pending_approvals))

    async def decide(request: Request) -> JSONResponse:
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        try:
            known = scheme.lower() == "bearer" and stockroom.is_approver_token(presented.strip())
        except ApproverTokenError as exc:  # the token file is unusable (mode, owner, folder): say so, no traceback
            return JSONResponse({"error": str(exc)}, status_code=503)
        if not known:
            return JSONResponse({"error": "a person's answer needs the approver token (Authorization: Bearer ...)"},
                                status_code=403)
        body = await _json_object(request)
        channel = "panel/http" if body.get("via") == "panel" else "http"
        try:
            return JSONResponse(await run(lambda: stockroom.decide_approval(request.path_params["approval_id"],
                                                                            body.get("action"), channel=channel)))
        except ApprovalError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)

    return [Route("/stockroom/trace", guarded(trace), methods=["GET"]),
            Route("/stockroom/ledger", guarded(ledger), methods=["GET"]),
            Route("/stockroom/drafts", guarded(drafts), methods=["GET"]),
            Route("/stockroom/reset", guarded(reset, post=True), methods=["POST"]),
            Route("/stockroom/approvals", guarded(approvals), methods=["GET"]),
            Route("/stockroom/approvals/{approval_id}", guarded(decide, post=True), methods=["POST"])]


def build_app(stockroom: Stockroom, *, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = (),
              json_response: bool = True, admin: bool = True,
              progress_interval: float = PROGRESS_INTERVAL_SECONDS) -> Any:
    """The Starlette app: stateless MCP at ``/mcp`` (both eras), plus the admin routes when ``admin``.

    DNS-rebinding protection (Host and Origin checks) stays on for loopback hosts and guards the
    admin routes too; ``allowed_hosts`` adds ``Host`` values (``name:port`` or ``name:*``) for use
    behind a proxy such as Binder's. ``json_response=False`` answers as SSE whenever the handler
    emits notifications (read_stock with a progress token); requests that emit none still get JSON
    on the 2026-07-28 path (the SDK decides), and the 2025-11-25 path answers every request as SSE.
    """
    security = transport_security(host, allowed_hosts)
    # A JSON answer carries no progress (the SDK drops it), so only a stream is paced.
    server = build_server(stockroom, progress_interval=0.0 if json_response else progress_interval)
    app = server.streamable_http_app(stateless_http=True, json_response=json_response, host=host,
                                     transport_security=security,
                                     custom_starlette_routes=_admin_routes(stockroom, security) if admin else None)
    app.add_middleware(RequestOrderGuard, security=security)  # MISSION.md's validation order where the SDK differs
    app.add_middleware(_McpFront, ledger=stockroom.ledger)
    return app


class _McpFront:
    """In front of ``/mcp``: ``GET`` answers 405, and a ``POST`` carrying a ``tools/call`` is announced.

    A ``GET`` gets the transport's way to say "no server-initiated stream here". A ``POST`` whose
    body (once fully received) mentions ``tools/call`` is announced to the ledger
    (:meth:`~mcplab.stockroom.ledger.Ledger.announce`) until its unit of work runs or the request
    ends, so a group commit waits for calls already received instead of committing without them.
    A body that only looks like a call costs nothing but that wait, which is bounded.
    """

    def __init__(self, app: Any, ledger: Ledger) -> None:
        self.app, self.ledger = app, ledger

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != "/mcp":
            await self.app(scope, receive, send)
            return
        if scope["method"] == "GET":
            body = b"GET /mcp: this stateless server sends nothing unasked; POST requests instead\n"
            await send({"type": "http.response.start", "status": 405,
                        "headers": [(b"allow", b"POST"), (b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        calls = False

        async def receive_and_announce() -> Any:
            nonlocal calls
            message = await receive()
            if message["type"] == "http.request":
                calls = calls or b"tools/call" in message.get("body", b"")
                if calls and not message.get("more_body") and _ANNOUNCED not in scope:
                    scope[_ANNOUNCED] = self.ledger.announce()
            return message

        try:
            await self.app(scope, receive_and_announce, send)
        finally:
            announced = scope.get(_ANNOUNCED)
            if announced is not None:
                announced.withdraw()


#: Where :class:`_McpFront` leaves a request's announcement for the tool handler (an ASGI scope key).
_ANNOUNCED = "mcplab.stockroom.announced"


@dataclass
class RunningServer:
    """A stockroom server running in this process: ``url`` is the MCP endpoint."""

    url: str
    host: str
    port: int
    stockroom: Stockroom

    @property
    def approver_token(self) -> str:
        """The person's credential for ``POST /stockroom/approvals/{id}`` (never sent to the agent)."""
        return self.stockroom.approver_token

    @property
    def base_url(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]


@contextmanager
def serve_stockroom(db: str | os.PathLike[str] | Stockroom = MEMORY, *, host: str = "127.0.0.1", port: int = 0,
                    json_response: bool = True, admin: bool | None = None, allowed_hosts: Sequence[str] = (),
                    log_level: str = "warning",
                    progress_interval: float = PROGRESS_INTERVAL_SECONDS) -> Iterator[RunningServer]:
    """Run the stockroom under uvicorn in a daemon thread for the ``with`` block; stop it after.

    ``db`` is a database path, ``":memory:"`` or a :class:`Stockroom`. ``port=0`` picks a free
    port. The admin routes default to on only for loopback hosts. The thread dies with the
    process (a notebook kernel), so nothing outlives its owner. ``json_response=False`` serves SSE
    streams (see :func:`build_app`).
    """
    stockroom = db if isinstance(db, Stockroom) else Stockroom(Ledger(db))
    admin = is_loopback(host) if admin is None else admin
    app = build_app(stockroom, host=host, allowed_hosts=allowed_hosts, json_response=json_response, admin=admin,
                    progress_interval=progress_interval)
    try:
        with serve_app(app, host=host, port=port, name="stockroom", log_level=log_level) as bound_port:
            shown = f"[{host}]" if ":" in host else host
            yield RunningServer(url=f"http://{shown}:{bound_port}/mcp", host=host, port=bound_port, stockroom=stockroom)
    finally:
        if not isinstance(db, Stockroom):
            stockroom.close()
