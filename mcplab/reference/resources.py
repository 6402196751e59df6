"""The reference server's resources: fixed ``test://`` resources, one template, and subscriptions.

Design: resources are data (a table of URI -> mime type and content), read through one function
that raises -32602 with ``data.uri`` for an unknown URI (never an empty ``contents``). Legacy
``resources/subscribe`` keeps a set per session id (at most ``MAX_SUBSCRIPTIONS`` URIs each, in a
bounded :class:`~mcplab.reference.sessions.SessionTable`); 2026-07-28 clients use ``subscriptions/listen``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from .media import PNG_BASE64
from .sessions import SessionTable

__all__ = ["STATIC_TEXT_URI", "STATIC_BINARY_URI", "WATCHED_URI", "TEMPLATE_URI", "RESOURCES", "TEMPLATES",
           "read_contents", "template_id", "Subscriptions", "MAX_SUBSCRIPTIONS"]

STATIC_TEXT_URI = "test://static-text"
STATIC_BINARY_URI = "test://static-binary"
WATCHED_URI = "test://watched-resource"
TEMPLATE_URI = "test://template/{id}/data"
#: The most URIs one session may subscribe to (the template makes the URI space unbounded).
MAX_SUBSCRIPTIONS = 100
_TEMPLATE = re.compile(r"^test://template/(?P<id>[^/]+)/data$")

RESOURCES: tuple[dict[str, Any], ...] = (
    {"uri": STATIC_TEXT_URI, "name": "static-text", "description": "A static text resource for testing",
     "mimeType": "text/plain"},
    {"uri": STATIC_BINARY_URI, "name": "static-binary", "description": "A static binary resource (a 1x1 PNG) for testing",
     "mimeType": "image/png"},
    {"uri": WATCHED_URI, "name": "watched-resource", "description": "A resource to subscribe to for update notifications",
     "mimeType": "text/plain"},
)
TEMPLATES: tuple[dict[str, Any], ...] = (
    {"uriTemplate": TEMPLATE_URI, "name": "template-data", "description": "JSON data for an id, substituted into the URI",
     "mimeType": "application/json"},
)
_CONTENTS: Mapping[str, dict[str, Any]] = {
    STATIC_TEXT_URI: {"mimeType": "text/plain", "text": "This is the content of the static text resource."},
    STATIC_BINARY_URI: {"mimeType": "image/png", "blob": PNG_BASE64},
    WATCHED_URI: {"mimeType": "text/plain", "text": "The watched resource's current content."},
}


def template_id(uri: str) -> str | None:
    """The ``{id}`` of a ``test://template/{id}/data`` URI, or ``None``."""
    match = _TEMPLATE.match(uri)
    return match.group("id") if match else None


def read_contents(uri: str) -> list[dict[str, Any]]:
    """The wire ``contents`` for ``uri``; unknown URIs raise ``MCPError`` -32602 with ``data.uri``."""
    if uri in _CONTENTS:
        return [{"uri": uri, **_CONTENTS[uri]}]
    ident = template_id(uri)
    if ident is not None:
        text = json.dumps({"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}, separators=(",", ":"))
        return [{"uri": uri, "mimeType": "application/json", "text": text}]
    raise MCPError(code=INVALID_PARAMS, message="Resource not found", data={"uri": uri})


class Subscriptions:
    """Legacy ``resources/subscribe`` bookkeeping: subscribed URIs per session (``None`` = no session id)."""

    def __init__(self, sessions: SessionTable[set[str]] | None = None) -> None:
        self._by_session: SessionTable[set[str]] = sessions if sessions is not None else SessionTable()

    def add(self, session: str | None, uri: str) -> None:
        read_contents(uri)  # subscribing to a resource that does not exist is -32602

        def subscribe(uris: set[str]) -> None:
            if uri not in uris and len(uris) >= MAX_SUBSCRIPTIONS:
                raise MCPError(code=INVALID_PARAMS, message=f"a session may subscribe to at most {MAX_SUBSCRIPTIONS} resources; "
                                                            "unsubscribe from one first", data={"limit": MAX_SUBSCRIPTIONS})
            uris.add(uri)

        self._by_session.update(session, set, subscribe)

    def remove(self, session: str | None, uri: str) -> None:
        self._by_session.change_existing(session, lambda uris: uris.discard(uri))

    def uris(self, session: str | None) -> set[str]:
        return set(self._by_session.get(session, set()))
