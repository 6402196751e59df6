"""Server-Sent Events: parse a recorded ``text/event-stream`` body into events.

Follows the WHATWG event-stream rules that matter for MCP: lines end in CRLF, LF or CR; a
leading BOM is dropped; ``:`` lines are comments (keep-alives); ``data`` lines of one event
are joined with ``\\n``; a blank line dispatches the event; an event without data is not
dispatched, nor is one the stream cut off before its blank line. Live capture (with arrival times) builds on this; the core only needs the text.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import INVALID_REQUEST, ProtocolViolation

__all__ = ["parse_sse", "is_event_stream"]

_LINES = re.compile(r"\r\n|\r|\n")


def is_event_stream(media_type: str | None) -> bool:
    """True for a ``text/event-stream`` media type (parameters ignored)."""
    return media_type is not None and media_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def parse_sse(body: str | bytes) -> list[dict[str, Any]]:
    """The events of a stream as ``{"event", "data", "id", "retry"}`` dicts, in order.

    ``event`` defaults to ``"message"``; ``id`` and ``retry`` are ``None`` when absent.
    Raises :class:`~mcplab.errors.ProtocolViolation` (``negative-response-unparsable``) for bytes
    that are not UTF-8 or a body that is neither text nor bytes.
    """
    if isinstance(body, (bytes, bytearray)):
        try:
            text = bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolViolation(f"the event stream is not UTF-8 (byte {exc.start})", code=INVALID_REQUEST,
                                    case="negative-response-unparsable") from None
    elif isinstance(body, str):
        text = body
    else:
        raise ProtocolViolation(f"an event stream is text, got {type(body).__name__}", code=INVALID_REQUEST,
                                case="negative-response-unparsable")
    if text.startswith("\ufeff"):
        text = text[1:]
    events: list[dict[str, Any]] = []
    data: list[str] = []
    event, last_id, retry = "", None, None
    for line in _LINES.split(text):
        if line == "":
            if data:
                events.append({"event": event or "message", "data": "\n".join(data), "id": last_id, "retry": retry})
            data, event, retry = [], "", None
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value.isdigit():
            retry = int(value)
    return events
