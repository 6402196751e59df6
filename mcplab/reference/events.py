"""A bounded in-memory SSE event store, so 2025-11-25 clients can resume a stream (SEP-1699).

Design: the SDK's ``EventStore`` interface over one ``OrderedDict`` of the newest events (ids are
a counter plus the stream id); a client that reconnects with ``Last-Event-ID`` gets the later
events of that stream replayed. The SDK shares one store between sessions and names streams by
JSON-RPC request id, so each event also records its session (``SessionScope`` tags every HTTP
request and the tasks it starts) and a replay only ever returns the caller's own session's events.
Old events fall off the end once there are more than ``limit`` of them or they add up to more
than ``max_bytes`` of JSON, so memory stays bounded even when a fixture echoes a large argument.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

__all__ = ["MemoryEventStore", "MAX_EVENT_BYTES", "SessionScope"]

#: The most JSON the store keeps across all streams (about 16 MB).
MAX_EVENT_BYTES = 16 * 1024 * 1024
_SESSION_HEADER = b"mcp-session-id"


@dataclass
class _Scope:
    """The 2025-11-25 session of one HTTP request; an opening request learns it from its own response."""

    session: str | None = None


_SCOPE: ContextVar[_Scope | None] = ContextVar("mcplab_reference_event_scope", default=None)


def _session(scope: _Scope | None) -> str | None:
    return scope.session if scope is not None else None


class SessionScope:
    """ASGI middleware: tags each request, and every task it starts (a session's message router), with its session."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = next((value for name, value in scope.get("headers", ()) if name.lower() == _SESSION_HEADER), None)
        tag = _Scope(given.decode("latin-1") if given is not None else None)

        async def learn_session(message: Any) -> None:  # the opening request: the SDK names the session in its response
            if message["type"] == "http.response.start" and tag.session is None:
                found = next((v for n, v in message.get("headers", ()) if n.lower() == _SESSION_HEADER), None)
                tag.session = found.decode("latin-1") if found is not None else None
            await send(message)

        token = _SCOPE.set(tag)
        try:
            await self.app(scope, receive, learn_session if given is None else send)
        finally:
            _SCOPE.reset(token)


class MemoryEventStore(EventStore):
    """Keeps the newest events of all streams: at most ``limit`` of them and ``max_bytes`` of JSON."""

    def __init__(self, limit: int = 1000, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self._limit = limit
        self._max_bytes = max_bytes
        self._bytes = 0
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None, int, _Scope | None]] = OrderedDict()
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        size = len(message.model_dump_json(by_alias=True, exclude_none=True)) if message is not None else 0
        scope = _SCOPE.get()  # kept as the object: an opening request's session is known only once it has answered
        with self._lock:
            event_id = f"{next(self._counter)}_{stream_id}"
            self._events[event_id] = (stream_id, message, size, scope)
            self._bytes += size
            while len(self._events) > self._limit or (self._bytes > self._max_bytes and len(self._events) > 1):
                self._bytes -= self._events.popitem(last=False)[1][2]
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        mine = _session(_SCOPE.get())
        with self._lock:
            if last_event_id not in self._events or _session(self._events[last_event_id][3]) != mine:
                return None  # unknown, forgotten, or another session's event: nothing to resume
            stream_id = self._events[last_event_id][0]
            ids = list(self._events)
            later = [(i, self._events[i][1]) for i in ids[ids.index(last_event_id) + 1:]
                     if self._events[i][0] == stream_id and _session(self._events[i][3]) == mine]
        for event_id, message in later:
            if message is not None:  # priming events carry no message
                await send_callback(EventMessage(message, event_id))
        return stream_id
