"""The reference server: every fixture the official conformance scenarios call, on the real ``mcp`` SDK.

Design: a thin adapter over the fixture tables (``tools``, ``prompts``, ``resources``,
``completion``) and the MRTR rounds (``mrtr``). One ``/mcp`` route serves both eras: 2026-07-28
requests take the SDK's stateless path (``input_required`` rounds, ``subscriptions/listen``,
caching hints); 2025-11-25 clients get a session (so sampling and elicitation can go over the
back channel). SSE responses are on, so progress and log notifications reach the caller.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, get_args

import anyio
import mcp_types as t
from mcp.server import Server
from mcp.server.caching import CacheHint
from mcp.server.connection import allowed_log_levels
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, PromptsListChanged, SubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.inbound import decode_header_value
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict

from .. import __version__
from ..request_guard import RequestOrderGuard
from ..serving import serve_app, spans_only_when_recorded, transport_security, wire_dump
from ..versions import era_of_version
from .completion import complete
from .events import MemoryEventStore, SessionScope
from .mrtr import Completed, Flow, InputRequired, RoundKeeper, capability_error, missing_capabilities, plan
from .prompts import PROMPT_FLOWS, PROMPTS, prompt_messages
from .resources import RESOURCES, TEMPLATES, Subscriptions, read_contents
from .sessions import MAX_REMEMBERED_SESSIONS, SessionTable
from .tasks import TASKS_EXTENSION, TaskStore, extension_required, tasks_declared
from .tools import TOOLS, ToolFixture, text_result, tool_descriptors

__all__ = ["SERVER_NAME", "INSTRUCTIONS", "CACHE_HINTS", "RETRY_MS", "MAX_REQUEST_BYTES", "SESSION_IDLE_SECONDS",
           "SHUTDOWN_GRACE_SECONDS", "HIDE_MODERN_ANSWERS", "HideModern", "build_server", "build_app", "serve_reference",
           "RunningReference"]

SERVER_NAME = "mcplab-reference"
INSTRUCTIONS = ("The mcplab reference server: the fixture tools, prompts and resources of the official MCP conformance "
                "scenarios, for 2026-07-28 and 2025-11-25 clients.")
#: Fixture lists change only when a trigger tool announces it; reads of fixed resources never change.
CACHE_HINTS = {
    "server/discover": CacheHint(ttl_ms=60_000, scope="public"),
    "tools/list": CacheHint(ttl_ms=0, scope="public"),
    "prompts/list": CacheHint(ttl_ms=0, scope="public"),
    "resources/list": CacheHint(ttl_ms=60_000, scope="public"),
    "resources/templates/list": CacheHint(ttl_ms=60_000, scope="public"),
    "resources/read": CacheHint(ttl_ms=60_000, scope="public"),
}

#: The reconnection delay suggested to 2025-11-25 clients in each SSE stream's priming event.
RETRY_MS = 500
#: The largest request body accepted (the fixtures need a few kB; the SDK's default is 4 MiB).
MAX_REQUEST_BYTES = 1024 * 1024
#: A 2025-11-25 session with no request for this long is closed (the SDK's default is 30 minutes).
SESSION_IDLE_SECONDS = 10 * 60
#: On shutdown, how long responses still streaming (a 2025-11-25 GET stream, a slow call) may
#: finish before they are cancelled; listen streams are ended gracefully before that.
SHUTDOWN_GRACE_SECONDS = 2
_LOG_LEVELS: tuple[str, ...] = get_args(t.LoggingLevel)  # severity-ascending

_REQUEST_MODELS: dict[str, tuple[type[Any], type[Any]]] = {
    "elicitation/create": (t.ElicitRequest, t.ElicitResult),
    "sampling/createMessage": (t.CreateMessageRequest, t.CreateMessageResult),
    "roots/list": (t.ListRootsRequest, t.ListRootsResult),
}


def _modern(ctx: Any) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _session_of(ctx: Any) -> str | None:
    """The 2025-11-25 session id of this request (``None`` on the stateless 2026-07-28 wire)."""
    request = getattr(ctx, "request", None)
    return request.headers.get("mcp-session-id") if request is not None else None


class _RequestEffects:
    """A tool's notifications for one request: on its own stream, or to the listen streams."""

    def __init__(self, ctx: Any, bus: SubscriptionBus, legacy_levels: SessionTable[str]) -> None:
        self._ctx = ctx
        self._bus = bus
        self._legacy_levels = legacy_levels

    async def log(self, level: str, message: str) -> None:
        # 2026-07-28: only at or above the level the request's _meta opted in to (none without it);
        # 2025-11-25: at or above the session's logging/setLevel (everything before one arrives).
        if _modern(self._ctx):
            allowed = level in allowed_log_levels(self._ctx.protocol_version, wire_dump(self._ctx.meta))
        else:
            floor = self._legacy_levels.get(_session_of(self._ctx), _LOG_LEVELS[0])
            allowed = _LOG_LEVELS.index(level) >= _LOG_LEVELS.index(floor)
        if allowed:
            notification = t.LoggingMessageNotification(
                params=t.LoggingMessageNotificationParams(level=level, data=message, logger=SERVER_NAME))
            await self._ctx.session.send_notification(notification, related_request_id=self._ctx.request_id)

    async def progress(self, progress: float, total: float, message: str | None = None) -> None:
        await self._ctx.session.report_progress(progress, total, message)  # a no-op without a progressToken

    async def close_stream(self) -> bool:
        close = getattr(self._ctx, "close_sse_stream", None)  # only 2025-11-25 streams with an event store
        if close is None:
            return False
        await close()
        return True

    async def tools_changed(self) -> None:
        await self._bus.publish(ToolsListChanged())
        if not _modern(self._ctx):
            await self._ctx.session.send_tool_list_changed()

    async def prompts_changed(self) -> None:
        await self._bus.publish(PromptsListChanged())
        if not _modern(self._ctx):
            await self._ctx.session.send_prompt_list_changed()


async def _ask_client(ctx: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    """One server-to-client request over the 2025-11-25 session, related to the current call."""
    request_model, result_model = _REQUEST_MODELS[request["method"]]
    result = await ctx.session.send_request(request_model.model_validate(dict(request)), result_model,
                                            metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
    return wire_dump(result)


async def _run_flow(ctx: Any, keeper: RoundKeeper, flow: Flow, arguments: Mapping[str, Any] | None,
                    params: Any) -> InputRequired | Completed:
    """The next step of ``flow``: 2026-07-28 may answer ``InputRequired``; 2025-11-25 asks over the back channel."""
    capabilities = wire_dump(ctx.session.client_capabilities) or {}
    if _modern(ctx):
        input_responses = getattr(params, "input_responses", None)
        return keeper.advance(flow, arguments, input_responses=wire_dump(input_responses) if input_responses is not None else None,
                              request_state=getattr(params, "request_state", None), capabilities=capabilities)
    answers: dict[str, Any] = {}
    for round_ in plan(flow, dict(arguments or {}), capabilities):
        for key, request in round_.items():
            answers[key] = await _ask_client(ctx, request)
    return Completed(flow.finish(dict(arguments or {}), answers))


class _SyncHandle:
    """A task job run synchronously (no tasks extension): 2025-11-25 asks over the session."""

    def __init__(self, ctx: Any, tool: str) -> None:
        self._ctx = ctx
        self._tool = tool

    async def ask(self, requests: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
        if _modern(self._ctx):  # parking for input needs a task on the 2026-07-28 wire
            raise extension_required(self._tool)
        needed = missing_capabilities(requests, wire_dump(self._ctx.session.client_capabilities) or {})
        if needed:  # as a flow would: -32021 before asking, not the client's refusal
            raise capability_error(self._tool, needed)
        return {key: await _ask_client(self._ctx, request) for key, request in requests.items()}


class _TaskParams(t.RequestParams):
    """``tasks/get``, ``tasks/update``, ``tasks/cancel`` params (the SDK has no 2026-07-28 models for them)."""

    model_config = ConfigDict(extra="allow")
    taskId: Any = None  # noqa: N815 - the wire name
    inputResponses: Any = None  # noqa: N815


def _task_request(ctx: Any, params: _TaskParams, method: str) -> str:
    """Gate a tasks/* request: the extension declared, and ``Mcp-Name`` equal to the ``taskId`` (SEP-2663)."""
    if not _modern(ctx) or not tasks_declared(wire_dump(ctx.session.client_capabilities)):
        raise extension_required(method)
    request = getattr(ctx, "request", None)
    header = request.headers.get("mcp-name") if request is not None else None
    if header is None or decode_header_value(header) != params.taskId:
        raise MCPError(code=t.HEADER_MISMATCH, message="Mcp-Name header does not match the request body's 'taskId' parameter")
    return params.taskId


class _Shutdown:
    """Ends the open listen streams gracefully (each gets its final result) from the thread that stops the server.

    uvicorn waits for open responses before it runs the lifespan shutdown, so a listen stream,
    which never ends by itself, must be closed first; the lifespan records the event loop.
    """

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listen: ListenHandler | None = None

    def begin(self) -> None:
        loop, listen = self.loop, self.listen
        if loop is not None and listen is not None and not loop.is_closed():
            loop.call_soon_threadsafe(listen.close)


def _input_required(step: InputRequired) -> t.InputRequiredResult:
    return t.InputRequiredResult.model_validate(step.to_wire())


def build_server(*, keeper: RoundKeeper | None = None, bus: SubscriptionBus | None = None,
                 shutdown: _Shutdown | None = None) -> Server:
    """The low-level MCP ``Server`` with every reference fixture."""
    keeper = keeper or RoundKeeper()
    bus = bus or InMemorySubscriptionBus()
    shutdown = shutdown or _Shutdown()
    shutdown.listen = ListenHandler(bus)
    subscriptions = Subscriptions()
    tasks = TaskStore()
    legacy_levels: SessionTable[str] = SessionTable()
    tools = {tool.name: tool for tool in TOOLS}

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult.model_validate({"tools": tool_descriptors()})

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> Any:
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(code=t.INVALID_PARAMS, message=f"Unknown tool: {params.name}", data={"name": params.name})
        problems = tool.argument_problems(params.arguments or {})
        if problems:  # a tool execution error the model can correct, not a protocol error (SEP-1303)
            return t.CallToolResult.model_validate(text_result("Invalid arguments: " + "; ".join(problems), is_error=True))
        if tool.task is not None:
            return await call_task_tool(ctx, tool, params)
        if tool.flow is not None:
            step = await _run_flow(ctx, keeper, tool.flow, params.arguments, params)
            if isinstance(step, InputRequired):
                return _input_required(step)
            wire = step.result
        else:
            assert tool.handler is not None
            wire = await tool.handler(params.arguments or {}, _RequestEffects(ctx, bus, legacy_levels))
        return t.CallToolResult.model_validate(wire)

    async def call_task_tool(ctx: Any, tool: ToolFixture, params: t.CallToolRequestParams) -> Any:
        """A task when the request declares the extension; otherwise synchronous, or -32021 if a task is required.

        Only 2026-07-28 requests can declare the extension, so 2025-11-25 clients run every task tool synchronously.
        """
        declared = _modern(ctx) and tasks_declared(wire_dump(ctx.session.client_capabilities))
        if tool.task == "required" and _modern(ctx) and not declared:
            raise extension_required(tool.name)
        arguments = dict(params.arguments or {})
        answers: Mapping[str, Any] = {}
        if tool.flow is not None:  # input first (MRTR), then the task (SEP-2663 composition)
            step = await _run_flow(ctx, keeper, tool.flow, arguments, params)
            if isinstance(step, InputRequired):
                return _input_required(step)
            answers = step.result
        assert tool.job is not None
        job = tool.job
        if not declared:
            return t.CallToolResult.model_validate(await job(arguments, answers, _SyncHandle(ctx, tool.name)))
        record = tasks.create(lambda handle: job(arguments, answers, handle))
        return {"resultType": "task", **record.envelope()}

    async def get_task(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        return tasks.get(_task_request(ctx, params, "tasks/get")).detailed()

    async def update_task(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        tasks.update(_task_request(ctx, params, "tasks/update"), params.inputResponses)
        return {}

    async def cancel_task(ctx: Any, params: _TaskParams) -> dict[str, Any]:
        tasks.cancel(_task_request(ctx, params, "tasks/cancel"))
        return {}

    async def list_prompts(ctx: Any, params: Any) -> t.ListPromptsResult:
        return t.ListPromptsResult.model_validate({"prompts": list(PROMPTS)})

    async def get_prompt(ctx: Any, params: t.GetPromptRequestParams) -> t.GetPromptResult | t.InputRequiredResult:
        flow = PROMPT_FLOWS.get(params.name)
        if flow is None:
            return t.GetPromptResult.model_validate({"messages": prompt_messages(params.name, params.arguments)})
        step = await _run_flow(ctx, keeper, flow, params.arguments, params)
        if isinstance(step, InputRequired):
            return _input_required(step)
        return t.GetPromptResult.model_validate({"messages": step.result})

    async def list_resources(ctx: Any, params: Any) -> t.ListResourcesResult:
        return t.ListResourcesResult.model_validate({"resources": list(RESOURCES)})

    async def list_templates(ctx: Any, params: Any) -> t.ListResourceTemplatesResult:
        return t.ListResourceTemplatesResult.model_validate({"resourceTemplates": list(TEMPLATES)})

    async def read_resource(ctx: Any, params: t.ReadResourceRequestParams) -> t.ReadResourceResult:
        return t.ReadResourceResult.model_validate({"contents": read_contents(str(params.uri))})

    async def subscribe(ctx: Any, params: t.SubscribeRequestParams) -> t.EmptyResult:
        subscriptions.add(_session_of(ctx), str(params.uri))
        return t.EmptyResult()

    async def unsubscribe(ctx: Any, params: t.UnsubscribeRequestParams) -> t.EmptyResult:
        subscriptions.remove(_session_of(ctx), str(params.uri))
        return t.EmptyResult()

    async def completion(ctx: Any, params: t.CompleteRequestParams) -> t.CompleteResult:
        return t.CompleteResult.model_validate({"completion": complete(wire_dump(params.ref), params.argument.name, params.argument.value)})

    async def set_logging_level(ctx: Any, params: t.SetLevelRequestParams) -> t.EmptyResult:
        session = _session_of(ctx)
        if session is not None:  # 2025-11-25 only (the modern wire answers logging/setLevel with 404)
            legacy_levels.set(session, params.level)
        return t.EmptyResult()

    @asynccontextmanager
    async def lifespan(_: Server) -> AsyncIterator[dict[str, Any]]:
        shutdown.loop = asyncio.get_running_loop()
        async with anyio.create_task_group() as group:  # task jobs run here; shutdown cancels them
            tasks.attach(group)
            try:
                yield {}
            finally:
                tasks.attach(None)
                group.cancel_scope.cancel()

    # Logging (setLevel) is deprecated in 2026-07-28; this server serves 2025-11-25 clients on purpose.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server = Server(SERVER_NAME, lifespan=lifespan, version=__version__, instructions=INSTRUCTIONS, cache_hints=CACHE_HINTS,
                      on_list_tools=list_tools, on_call_tool=call_tool, on_list_prompts=list_prompts, on_get_prompt=get_prompt,
                      on_list_resources=list_resources, on_list_resource_templates=list_templates, on_read_resource=read_resource,
                      on_subscribe_resource=subscribe, on_unsubscribe_resource=unsubscribe, on_completion=completion,
                      on_set_logging_level=set_logging_level, on_subscriptions_listen=shutdown.listen)
    spans_only_when_recorded(server)
    server.extensions[TASKS_EXTENSION] = {}
    server.add_request_handler("tasks/get", _TaskParams, get_task)
    server.add_request_handler("tasks/update", _TaskParams, update_task)
    server.add_request_handler("tasks/cancel", _TaskParams, cancel_task)
    return server


def build_app(*, host: str = "127.0.0.1", allowed_hosts: Sequence[str] = (), keeper: RoundKeeper | None = None,
              max_sessions: int = MAX_REMEMBERED_SESSIONS) -> Any:
    """The Starlette app: MCP at ``/mcp`` for both eras, DNS-rebinding protection on loopback hosts.

    Everything a client can grow is capped: request bodies, open 2025-11-25 sessions (as many as
    the per-session tables remember; idle ones close), the event store, tasks, listen streams.
    """
    shutdown = _Shutdown()
    server = build_server(keeper=keeper, shutdown=shutdown)
    security = transport_security(host, allowed_hosts)
    app = server.streamable_http_app(stateless_http=False, json_response=False, host=host, event_store=MemoryEventStore(),
                                     retry_interval=RETRY_MS, transport_security=security,
                                     max_request_body_size=MAX_REQUEST_BYTES, max_sessions=max_sessions,
                                     session_idle_timeout=SESSION_IDLE_SECONDS)
    app.add_middleware(RequestOrderGuard, security=security)  # MISSION.md's validation order where the SDK differs
    app.add_middleware(SessionScope)  # the event store keeps sessions apart (one store, request-id stream names)
    app.state.begin_shutdown = shutdown.begin  # call before stopping uvicorn: ends the listen streams
    return app


def _drop_shutdown_cancellations(record: logging.LogRecord) -> bool:
    """Keep uvicorn's one-line "Cancel N running task(s)" notice, not the traceback of each cancelled call."""
    error = record.exc_info[1] if record.exc_info else None
    return not (isinstance(error, asyncio.CancelledError) and "graceful shutdown" in str(error))


#: How :class:`HideModern` answers a 2026-07-28 request: ``refuse`` as a 2025-11-25-only server does
#: (HTTP 400, JSON-RPC -32000, no modern error code), or ``empty`` (HTTP 200 with no body: silence).
HIDE_MODERN_ANSWERS: tuple[str, ...] = ("refuse", "empty")


class HideModern:
    """ASGI filter in front of an app: every request naming a modern ``MCP-Protocol-Version`` gets
    ``answer`` (see :data:`HIDE_MODERN_ANSWERS`) and never reaches the app; every other request passes.

    It plays a gateway (or an old deployment) that hides the modern era of a server that speaks
    both: what a client then observes proves nothing modern, and only an endpoint allowed legacy
    may go on to ``initialize`` (the era lab's filtering-proxy scenario).
    """

    def __init__(self, app: Any, answer: str = "refuse") -> None:
        if answer not in HIDE_MODERN_ANSWERS:
            raise ValueError(f"answer {answer!r}: expected one of {', '.join(HIDE_MODERN_ANSWERS)}")
        self.app = app
        self.answer = answer

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        version = dict(scope.get("headers", ())).get(b"mcp-protocol-version", b"") if scope["type"] == "http" else b""
        if era_of_version(version.decode("latin-1")) != "modern":  # the fixed version list, never a string prefix
            await self.app(scope, receive, send)
            return
        if self.answer == "empty":
            status, body, headers = 200, b"", [(b"content-length", b"0")]
        else:
            requested = version.decode("latin-1")
            body = ('{"jsonrpc": "2.0", "id": null, "error": {"code": -32000, '
                    f'"message": "Bad Request: Unsupported protocol version: {requested}"}}}}').encode()
            status, headers = 400, [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class RunningReference:
    """A reference server running in this process: ``url`` is the MCP endpoint."""

    url: str
    host: str
    port: int


@contextmanager
def serve_reference(*, host: str = "127.0.0.1", port: int = 0, allowed_hosts: Sequence[str] = (),
                    log_level: str = "warning", hide_modern: str | None = None) -> Iterator[RunningReference]:
    """Run the reference server in a daemon thread for the ``with`` block (``port=0``: a free port).

    ``hide_modern`` (``"refuse"`` or ``"empty"``) puts :class:`HideModern` in front: the server then
    looks like a 2025-11-25-only deployment (or a gateway that swallows 2026-07-28 requests).

    Leaving the block ends listen streams gracefully and gives other open responses
    ``SHUTDOWN_GRACE_SECONDS`` before they are cancelled, so a long-lived stream cannot hold it up.
    """
    app = build_app(host=host, allowed_hosts=allowed_hosts)
    uvicorn_errors = logging.getLogger("uvicorn.error")
    uvicorn_errors.addFilter(_drop_shutdown_cancellations)
    try:
        served = app if hide_modern is None else HideModern(app, hide_modern)
        with serve_app(served, host=host, port=port, name="reference server", log_level=log_level,
                       timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS) as bound:
            shown = f"[{host}]" if ":" in host else host
            try:
                yield RunningReference(url=f"http://{shown}:{bound}/mcp", host=host, port=bound)
            finally:
                app.state.begin_shutdown()
    finally:
        uvicorn_errors.removeFilter(_drop_shutdown_cancellations)
