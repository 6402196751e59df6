"""A bounded in-memory SSE event store, so 2025-11-25 clients can resume a stream (SEP-1699).

Design: the SDK's ``EventStore`` interface over one ``OrderedDict`` of the newest events (ids are
a counter plus the stream id); a client that reconnects with ``Last-Event-ID`` gets the later
events of that stream replayed. Old events fall off the end once there are more than ``limit``
of them or they add up to more than ``max_bytes`` of JSON, so memory stays bounded even when a
fixture echoes a large argument.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp_types import JSONRPCMessage

__all__ = ["MemoryEventStore", "MAX_EVENT_BYTES"]

#: The most JSON the store keeps across all streams (about 16 MB).
MAX_EVENT_BYTES = 16 * 1024 * 1024


class MemoryEventStore(EventStore):
    """Keeps the newest events of all streams: at most ``limit`` of them and ``max_bytes`` of JSON."""

    def __init__(self, limit: int = 1000, max_bytes: int = MAX_EVENT_BYTES) -> None:
        self._limit = limit
        self._max_bytes = max_bytes
        self._bytes = 0
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None, int]] = OrderedDict()
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        size = len(message.model_dump_json(by_alias=True, exclude_none=True)) if message is not None else 0
        with self._lock:
            event_id = f"{next(self._counter)}_{stream_id}"
            self._events[event_id] = (stream_id, message, size)
            self._bytes += size
            while len(self._events) > self._limit or (self._bytes > self._max_bytes and len(self._events) > 1):
                self._bytes -= self._events.popitem(last=False)[1][2]
        return event_id

    async def replay_events_after(self, last_event_id: EventId, send_callback: EventCallback) -> StreamId | None:
        with self._lock:
            if last_event_id not in self._events:
                return None
            stream_id = self._events[last_event_id][0]
            ids = list(self._events)
            later = [(i, self._events[i][1]) for i in ids[ids.index(last_event_id) + 1:] if self._events[i][0] == stream_id]
        for event_id, message in later:
            if message is not None:  # priming events carry no message
                await send_callback(EventMessage(message, event_id))
        return stream_id
