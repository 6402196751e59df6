"""The stockroom as a real MCP server: the ``mcp`` SDK's low-level ``Server`` over Streamable HTTP.

Design: a thin adapter. ``tools/list`` returns the catalog; ``tools/call`` hands the name,
arguments, era (from the negotiated protocol version), the client's declared capabilities and
the MRTR fields to :class:`~mcplab.stockroom.rules.Stockroom` and maps its outcome onto the wire
(a result, ``InputRequiredResult``, or ``MCPError`` with data). One stateless ``/mcp`` route
serves 2026-07-28 and 2025-11-25. Course conveniences that are not MCP live beside it:
``GET /stockroom/trace``, ``GET /stockroom/ledger``, ``POST /stockroom/reset``, and the
out-of-band approvals of the 2025-11-25 path, ``GET /stockroom/approvals`` and
``POST /stockroom/approvals/{id}`` (``admin=False`` removes them; by default they exist only on
loopback hosts, behind the same Host/Origin checks as ``/mcp``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as t
import uvicorn
from mcp.server import Server
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .. import __version__
from ..errors import MCPLabError
from .ledger import MEMORY, Ledger
from .outcome import ToolOutcome
from .rules import ApprovalError, Stockroom

__all__ = ["SERVER_NAME", "INSTRUCTIONS", "build_server", "build_app", "serve_stockroom", "RunningServer", "ServeError"]

SERVER_NAME = "mcplab-stockroom"
INSTRUCTIONS = (
    "A studio stockroom. read_stock reads the ledger; draft_reorder and request_approval prepare a change "
    "without touching it; commit_reorder writes only after a person approves the exact payload (it answers "
    "input_required with the diff). Tools outside the allow-list are denied."
)
_STARTUP_SECONDS = 10.0


class ServeError(MCPLabError):
    """The server could not start (port in use, bad host); the message says which."""


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {key: _dump(item) for key, item in value.items()}
    return value


def _to_wire(outcome: ToolOutcome) -> t.CallToolResult | t.InputRequiredResult:
    if outcome.kind == "error":
        error = outcome.error or {}
        raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
    if outcome.kind == "input_required":
        return t.InputRequiredResult.model_validate({"resultType": "input_required", "inputRequests": outcome.input_requests,
                                                     "requestState": outcome.request_state})
    text = json.dumps(outcome.structured, ensure_ascii=False)
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], structured_content=outcome.structured,
                            is_error=outcome.is_error)


def build_server(stockroom: Stockroom) -> Server:
    """The low-level MCP ``Server`` for ``stockroom`` (tools only)."""
    tools = [t.Tool.model_validate(descriptor) for descriptor in stockroom.tools()]

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> t.CallToolResult | t.InputRequiredResult:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        capabilities = _dump(ctx.session.client_capabilities) if modern else None
        input_responses = getattr(params, "input_responses", None)
        outcome = await anyio.to_thread.run_sync(lambda: stockroom.call_tool(
            params.name, params.arguments,
            input_responses=_dump(input_responses) if input_responses is not None else None,
            request_state=getattr(params, "request_state", None),
            era="modern" if modern else "legacy",
            client_capabilities=capabilities or {},
        ))
        return _to_wire(outcome)

    return Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


def _security(host: str, allowed_hosts: Sequence[str]) -> TransportSecuritySettings | None:
    """DNS-rebinding protection as the SDK sets it for loopback hosts, plus ``allowed_hosts``."""
    if not allowed_hosts and not _is_loopback(host):
        return None
    own = f"[{host}]:*" if ":" in host else f"{host}:*"
    hosts = [*_LOOPBACK_HOSTS, *([own] if own not in _LOOPBACK_HOSTS else []), *allowed_hosts]
    origins = [f"http://{h}" for h in hosts] + [f"https://{h}" for h in allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def _admin_routes(stockroom: Stockroom, security: TransportSecuritySettings | None) -> list[Route]:
    """The course conveniences, behind the same Host/Origin checks as ``/mcp`` (and JSON-only POSTs)."""
    guard = TransportSecurityMiddleware(security)

    def guarded(handler: Any, *, post: bool = False) -> Any:
        async def endpoint(request: Request) -> Any:
            refused = await guard.validate_request(request, is_post=post)
            return refused if refused is not None else await handler(request)
        return endpoint

    async def run(func: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: func(*args))

    async def trace(request: Request) -> JSONResponse:
        records, problems = await run(stockroom.audit)
        return JSONResponse({"records": records, "problems": problems})

    async def ledger(request: Request) -> JSONResponse:
        return JSONResponse(await run(stockroom.snapshot))

    async def json_object(request: Request) -> dict[str, Any] | None:
        try:
            body = await request.json()
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    async def reset(request: Request) -> JSONResponse:
        if await json_object(request) is None:
            return JSONResponse({"error": "send a JSON object ({})"}, status_code=400)
        return JSONResponse(await run(stockroom.reset))

    async def approvals(request: Request) -> JSONResponse:
        return JSONResponse(await run(stockroom.pending_approvals))

    async def decide(request: Request) -> JSONResponse:
        action = (await json_object(request) or {}).get("action")
        try:
            return JSONResponse(await run(stockroom.decide_approval, request.path_params["approval_id"], action))
        except ApprovalError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)

    return [Route("/stockroom/trace", guarded(trace), methods=["GET"]),
            Route("/stockroom/ledger", guarded(ledger), methods=["GET"]),
            Route("/stockroom/reset", guarded(reset, post=True), methods=["POST"]),
            Route("/stockroom/approvals", guarded(approvals), methods=["GET"]),
            Route("/stockroom/approvals/{approval_id}", guarded(decide, post=True), methods=["POST"])]


def build_app(stockroom: Stockroom, *, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = (),
              json_response: bool = True, admin: bool = True) -> Any:
    """The Starlette app: stateless MCP at ``/mcp`` (both eras), plus the admin routes when ``admin``.

    DNS-rebinding protection (Host and Origin checks) stays on for loopback hosts and guards the
    admin routes too; ``allowed_hosts`` adds ``Host`` values (``name:port`` or ``name:*``) for use
    behind a proxy such as Binder's.
    """
    security = _security(host, allowed_hosts)
    server = build_server(stockroom)
    return server.streamable_http_app(stateless_http=True, json_response=json_response, host=host,
                                      transport_security=security,
                                      custom_starlette_routes=_admin_routes(stockroom, security) if admin else None)


@dataclass
class RunningServer:
    """A stockroom server running in this process: ``url`` is the MCP endpoint."""

    url: str
    host: str
    port: int
    stockroom: Stockroom

    @property
    def base_url(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextmanager
def serve_stockroom(db: str | os.PathLike[str] | Stockroom = MEMORY, *, host: str = "127.0.0.1", port: int = 0,
                    json_response: bool = True, admin: bool | None = None, allowed_hosts: Sequence[str] = (),
                    log_level: str = "warning") -> Iterator[RunningServer]:
    """Run the stockroom under uvicorn in a daemon thread for the ``with`` block; stop it after.

    ``db`` is a database path, ``":memory:"`` or a :class:`Stockroom`. ``port=0`` picks a free
    port. The admin routes default to on only for loopback hosts. The thread dies with the
    process (a notebook kernel), so nothing outlives its owner.
    """
    stockroom = db if isinstance(db, Stockroom) else Stockroom(Ledger(db))
    admin = _is_loopback(host) if admin is None else admin
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only for that proto,
    # and without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound_port = sock.getsockname()[1]
    app = build_app(stockroom, host=host, allowed_hosts=allowed_hosts, json_response=json_response, admin=admin)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"stockroom:{bound_port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _STARTUP_SECONDS
        while not server.started:
            if not thread.is_alive():
                raise ServeError(f"the stockroom server on {host}:{bound_port} stopped while starting")
            if time.monotonic() > deadline:
                raise ServeError(f"the stockroom server on {host}:{bound_port} did not start in {_STARTUP_SECONDS:.0f} s")
            time.sleep(0.01)
        shown = f"[{host}]" if ":" in host else host
        yield RunningServer(url=f"http://{shown}:{bound_port}/mcp", host=host, port=bound_port, stockroom=stockroom)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        if not isinstance(db, Stockroom):
            stockroom.close()
