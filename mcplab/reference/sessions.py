"""Per-session bookkeeping for 2025-11-25 sessions (log level, resource subscriptions), bounded.

Design: the SDK ends idle sessions but tells the handlers nothing, so entries cannot be removed
when a session ends; instead a :class:`SessionTable` keeps the most recently touched
``max_sessions`` entries (least recently used fall off), the same cap as the SDK's open sessions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["SessionTable", "MAX_REMEMBERED_SESSIONS"]

#: As many sessions as the reference server lets be open at once.
MAX_REMEMBERED_SESSIONS = 1000

V = TypeVar("V")


class SessionTable(Generic[V]):
    """``session id -> value`` for at most ``max_sessions`` sessions (``None`` is a key like any other)."""

    def __init__(self, max_sessions: int = MAX_REMEMBERED_SESSIONS) -> None:
        self._max = max_sessions
        self._entries: OrderedDict[str | None, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, session: str | None, default: V) -> V:
        with self._lock:
            return self._entries.get(session, default)

    def set(self, session: str | None, value: V) -> None:
        with self._lock:
            self._entries[session] = value
            self._touch(session)

    def update(self, session: str | None, make: Callable[[], V], change: Callable[[V], None]) -> None:
        """Apply ``change`` to the session's value (made with ``make`` when the session is new)."""
        with self._lock:
            if session not in self._entries:
                self._entries[session] = make()
            change(self._entries[session])
            self._touch(session)

    def change_existing(self, session: str | None, change: Callable[[V], None]) -> None:
        """Apply ``change`` to the session's value if it has one (an unknown session gains no entry)."""
        with self._lock:
            if session in self._entries:
                change(self._entries[session])
                self._touch(session)

    def _touch(self, session: str | None) -> None:
        self._entries.move_to_end(session)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
