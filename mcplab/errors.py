"""Errors raised by mcplab, and the JSON-RPC error codes they classify.

Exception tree::

    MCPLabError                 anything mcplab raises on purpose
     ├── ProtocolViolation      a message broke an MCP rule; carries .code and .case
     ├── TranscriptError        a transcript data file is malformed (names the file and problem)
     └── EvidenceError          evidence is missing or unusable for a decision

``ProtocolViolation.code`` is the JSON-RPC error code the peer should send (origin
boundary: -32020, -32021, -32022, -32602, -32600, -32700, -32601) or, for faults only a
client or intermediary can see, the code that classifies them: -32600 for a malformed
JSON-RPC message or its HTTP framing, -32602 for a well-formed result whose payload
breaks its method or era rules. ``.case`` is the stable case name from ``mcplab.cases``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

__all__ = [
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "HEADER_MISMATCH",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "PROTOCOL_ERROR_HTTP_STATUS",
    "MODERN_ERROR_CODES",
    "MCPLabError",
    "ProtocolViolation",
    "TranscriptError",
    "EvidenceError",
    "http_status_for_code",
    "nesting_is_a_violation",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

#: HTTP status a 2026-07-28 server must use for each known protocol error.
PROTOCOL_ERROR_HTTP_STATUS: dict[int, int] = {
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    INVALID_PARAMS: 400,
    INVALID_REQUEST: 400,
    PARSE_ERROR: 400,
    METHOD_NOT_FOUND: 404,
}

#: Errors only a 2026-07-28 server sends: receiving one proves the modern era.
MODERN_ERROR_CODES: frozenset[int] = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)


def http_status_for_code(code: int) -> int | None:
    """HTTP status required for a known protocol error code, ``None`` if the code is not in the table."""
    return PROTOCOL_ERROR_HTTP_STATUS.get(code)


class MCPLabError(Exception):
    """Base class of every error mcplab raises on purpose."""


class ProtocolViolation(MCPLabError):
    """A message broke an MCP rule.

    ``code`` is a JSON-RPC error code (see the module docstring), ``case`` the stable case
    name (e.g. ``"negative-header-body-mismatch"``), ``data`` the structured error data a
    server would send (e.g. ``{"supported": [...], "requested": "..."}`` for -32022).
    """

    def __init__(self, message: str, *, code: int, case: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.case = case
        self.data = data

    @property
    def http_status(self) -> int | None:
        """HTTP status a modern server answers this violation with (``None`` if not a wire error)."""
        return http_status_for_code(self.code)

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object a server would send for this violation."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"ProtocolViolation(code={self.code}, case={self.case!r}, message={self.message!r})"


def nesting_is_a_violation(case: str, code: int) -> Callable[[_F], _F]:
    """Decorate a public validator: JSON nested too deeply to check is a violation, never ``RecursionError``."""

    def decorate(func: _F) -> _F:
        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except RecursionError:
                raise ProtocolViolation("the message is nested too deeply to check", code=code, case=case) from None
        return checked  # type: ignore[return-value]
    return decorate


class TranscriptError(MCPLabError, ValueError):
    """A transcript file is malformed. ``str()`` is one line naming the file and the problem."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


class EvidenceError(MCPLabError, ValueError):
    """Evidence needed for a decision is missing, empty or malformed."""
