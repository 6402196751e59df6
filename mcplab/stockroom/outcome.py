"""What a stockroom tool call produced, and the one calling surface shared by in-process and HTTP use.

Design: a call ends in exactly one :class:`ToolOutcome`: ``complete`` (a tool result, maybe
``is_error``), ``input_required`` (the approval gate is asking) or ``error`` (a JSON-RPC error with
code and data). :class:`StockroomAPI` builds the scenario calls (read, draft, approve, reject)
on one abstract ``call_tool``, so ``Stockroom`` (no HTTP) and ``StockroomClient`` (a running
server) behave the same and the circuit panel takes either.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from ..errors import MCPLabError

__all__ = ["ToolOutcome", "ToolRefused", "StockroomAPI", "APPROVAL_KEY", "LEGACY_APPROVAL_ERROR"]

#: The ``inputRequests`` key under which ``commit_reorder`` asks for approval.
APPROVAL_KEY = "approval"
#: The structured error a 2025-11-25 client gets instead of ``input_required`` (with an ``approval_id``
#: that a person answers out of band; the id grants nothing to whoever holds it).
LEGACY_APPROVAL_ERROR = "approval_required"


class ToolRefused(MCPLabError):
    """A tool call answered with a JSON-RPC error; carries ``code`` and ``data`` (e.g. ``tool_not_allowed``)."""

    def __init__(self, message: str, *, code: int, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


@dataclass
class ToolOutcome:
    """The result of one tool call, in wire terms but independent of the transport."""

    tool: str
    arguments: Any
    kind: str  # "complete" | "input_required" | "error"
    structured: dict[str, Any] | None = None
    is_error: bool = False
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = None
    request_state: str | None = None
    era: str = "modern"
    trace_seq: int | None = None
    raw: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def asks_approval(self) -> bool:
        """True when the gate is waiting for an approver (either era's form)."""
        if self.kind == "input_required":
            return True
        return bool(self.is_error and self.structured
                    and self.structured.get("error") in (LEGACY_APPROVAL_ERROR, "approval_pending"))

    @property
    def approval_details(self) -> dict[str, Any]:
        """``{message, payload}`` of a pending approval, whichever era asked.

        ``message`` is what the approver reads (the diff, one line per SKU, and the exact payload);
        ``payload`` is the commit being approved. ``request_approval`` gives the diff as data.
        """
        if self.kind == "input_required":
            params = (self.input_requests or {}).get(APPROVAL_KEY, {}).get("params", {})
            message = params.get("message", "")
        else:
            message = (self.structured or {}).get("message", "")
        arguments = self.arguments if isinstance(self.arguments, dict) else {}
        return {"message": message, "payload": {k: arguments.get(k) for k in ("draft_id", "ledger_version", "lines")}}

    def raise_for_error(self) -> ToolOutcome:
        if self.kind == "error":
            error = self.error or {}
            raise ToolRefused(f"{self.tool}: {error.get('message')}", code=error.get("code", 0), data=error.get("data"))
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tool": self.tool, "kind": self.kind, "era": self.era}
        if self.kind == "error":
            out["error"] = self.error
        elif self.kind == "input_required":
            out["inputRequests"] = self.input_requests
            out["requestState"] = _abbreviate(self.request_state)
        else:
            out["structured"] = self.structured
            out["isError"] = self.is_error
        return out

    def text(self) -> str:
        """The outcome as the one-line JSON a notebook prints (sealed tokens shortened)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


def _abbreviate(token: Any) -> Any:
    """A sealed approval token shortened for display: enough to recognise it, not to replay it."""
    return f"{token[:12]}...(sealed, {len(token)} chars)" if isinstance(token, str) and len(token) > 24 else token


class StockroomAPI(ABC):
    """The scenario calls, all made through :meth:`call_tool`; subclasses supply transport and admin."""

    era: str = "modern"

    @abstractmethod
    def call_tool(self, name: str, arguments: Any = None, *, input_responses: dict[str, Any] | None = None,
                  request_state: str | None = None) -> ToolOutcome:
        """Call one tool (any name: the policy decides) and return its outcome."""

    @abstractmethod
    def reset(self) -> dict[str, Any]:
        """Restore the seed state; returns the snapshot after the reset."""

    @abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """``{ledger_version, items}`` for display: an observation, not a tool call, so it leaves no trace record."""

    def drafts(self) -> list[dict[str, Any]]:
        """The drafts since the last reset (``draft_id``, ``ledger_version``, ``lines``, ``status``).

        An observation like :meth:`snapshot` (no tool call, no trace record); Flight Deck reads a
        target draft through it without calling ``request_approval``.
        """
        raise NotImplementedError(f"{type(self).__name__} cannot observe drafts")

    @abstractmethod
    def decide_approval(self, approval_id: str, action: str, *, channel: str = "api") -> dict[str, Any]:
        """A person's out-of-band answer (``accept``/``decline``) to a pending 2025-11-25 approval.

        ``channel`` names where the person answered (``api``, ``panel``...): the trace records it."""

    @abstractmethod
    def audit(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Every trace record (oldest first, as dictionaries) and the problems verification finds, read together."""

    def trace(self) -> list[dict[str, Any]]:
        """Every trace record, oldest first, as dictionaries."""
        return self.audit()[0]

    def verify(self) -> list[str]:
        """Problems found in the trace chain or the ledger; empty when intact."""
        return self.audit()[1]

    # scenario calls -------------------------------------------------------------------
    def read_stock(self) -> dict[str, Any]:
        return self._structured("read_stock", {})

    def draft_reorder(self) -> dict[str, Any]:
        return self._structured("draft_reorder", {})

    def request_approval(self, draft_id: str) -> dict[str, Any]:
        return self._structured("request_approval", {"draft_id": draft_id})

    def commit_reorder(self, payload: dict[str, Any]) -> ToolOutcome:
        """The first round of a commit: normally an outcome that :attr:`~ToolOutcome.asks_approval`."""
        return self.call_tool("commit_reorder", payload)

    def answer(self, pending: ToolOutcome, action: str, note: str | None = None, *, channel: str = "api") -> ToolOutcome:
        """Answer a pending approval with ``accept``, ``decline`` or ``cancel`` (a retry of the same call)."""
        if not pending.asks_approval:
            raise ValueError("this outcome is not waiting for approval")
        if pending.kind == "input_required":
            response: dict[str, Any] = {"action": action}
            if action == "accept":
                response["content"] = {"note": note} if note else {}
            return self.call_tool(pending.tool, pending.arguments, input_responses={APPROVAL_KEY: response},
                                  request_state=pending.request_state)
        # 2025-11-25: the person answers out of band (never through the agent), then the agent retries
        approval_id = (pending.structured or {}).get("approval_id")
        self.decide_approval(approval_id, "accept" if action == "accept" else "decline", channel=channel)
        return self.call_tool(pending.tool, {**pending.arguments, "approval_id": approval_id})

    def approve(self, pending: ToolOutcome, note: str | None = None, *, channel: str = "api") -> ToolOutcome:
        return self.answer(pending, "accept", note, channel=channel)

    def reject(self, pending: ToolOutcome, *, channel: str = "api") -> ToolOutcome:
        return self.answer(pending, "decline", channel=channel)

    def _structured(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = self.call_tool(name, arguments).raise_for_error()
        return dict(outcome.structured or {})
