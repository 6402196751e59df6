"""How Flight Deck reaches a server: discovery, read-only target observation, and the calling surface.

Design: a :class:`Connection` does three separate things. :meth:`~Connection.discover` reads what
this caller can see (every ``tools/list`` page plus the server's self-description: ``server/discover``
in 2026-07-28, the ``initialize`` result in 2025-11-25), none of which reaches a tool.
:meth:`~Connection.observe_target` reads target state through an observation that records nothing
(the stockroom's ``snapshot`` and ``drafts``: ``GET /stockroom/ledger`` and ``/stockroom/drafts``
over HTTP), or answers ``None``. ``api`` calls tools; only a plan run uses it. Over HTTP the wire is
:class:`~mcplab.stockroom.client.StockroomClient`, a plain JSON-RPC client built on
``build_request``/``validate_response`` that works with any MCP server, in either era.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .. import __version__
from ..errors import MODERN_ERROR_CODES, MCPLabError
from ..jsonvalue import is_json_integer
from ..stockroom.client import StockroomClient, StockroomConnectionError
from ..stockroom.outcome import StockroomAPI
from ..stockroom.rules import Stockroom
from ..versions import check_era

__all__ = ["FlightDeckError", "Discovery", "Connection", "HttpConnection", "InProcessConnection", "MAX_TOOL_PAGES", "MAX_TOOLS"]

#: ``tools/list`` pages read per discovery, and tools kept: a runaway cursor cannot keep Flight Deck busy.
MAX_TOOL_PAGES = 20
MAX_TOOLS = 1000
_META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"


class FlightDeckError(MCPLabError):
    """Bad input to Flight Deck (a malformed plan, arguments that are not JSON, a bad URL); the message names it."""


@dataclass
class Discovery:
    """What discovery saw: the era, the server's self-description and the caller-effective tool descriptors."""

    era: str
    where: str
    server_info: dict[str, Any] | None
    instructions: str | None
    capabilities: dict[str, Any] | None
    tools: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


_ITEM_FIELDS = {"sku": str, "name": str, "on_hand": int, "on_order": int, "reorder_point": int, "par": int}
_DRAFT_FIELDS = {"draft_id": str, "ledger_version": int, "status": str, "lines": list}
_LINE_FIELDS = {"sku": str, "add_on_order": int}


def _shaped(value: Any, fields: dict[str, type]) -> bool:
    """``value`` is an object whose ``fields`` have these types (``int`` means a JSON integer)."""
    return isinstance(value, dict) and all(is_json_integer(value.get(key)) if kind is int else isinstance(value.get(key), kind)
                                           for key, kind in fields.items())


class Connection(ABC):
    """One server as Flight Deck sees it; subclasses supply the transport."""

    era: str
    where: str
    api: StockroomAPI

    @abstractmethod
    def discover(self) -> Discovery:
        """Read the caller-effective catalog now (never a tool call)."""

    def observe_target(self) -> dict[str, Any] | None:
        """``{ledger_version, items, drafts}`` read without a tool call, or ``None`` when no such observation exists."""
        try:
            snapshot = self.api.snapshot()
            drafts = self.api.drafts()
        except (StockroomConnectionError, NotImplementedError):
            return None
        if not (isinstance(snapshot, dict) and is_json_integer(snapshot.get("ledger_version")) and isinstance(snapshot.get("items"), list)
                and all(_shaped(item, _ITEM_FIELDS) for item in snapshot["items"]) and isinstance(drafts, list)
                and all(_shaped(draft, _DRAFT_FIELDS) and all(_shaped(line, _LINE_FIELDS) for line in draft["lines"]) for draft in drafts)):
            return None  # not the stockroom's shapes: target readiness stays unproven
        return {"ledger_version": snapshot["ledger_version"], "items": snapshot["items"], "drafts": drafts}

    def close(self) -> None:  # noqa: B027 - a no-op unless the transport holds something
        """Release the transport (nothing for in-process use)."""


class HttpConnection(Connection):
    """Any MCP server over Streamable HTTP: ``HttpConnection("http://127.0.0.1:8765/mcp", era="legacy")``."""

    def __init__(self, url: str, *, era: str = "modern", timeout: float = 10.0, approver_token: str | None = None) -> None:
        try:
            parts = urlsplit(url) if isinstance(url, str) else None
        except ValueError:  # e.g. an unclosed IPv6 bracket
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise FlightDeckError(f"url {url!r}: expected an http(s) URL such as http://127.0.0.1:8765/mcp")
        self.era = check_era(era)
        self.where = url
        self.api = self.client = StockroomClient(url, era=self.era, timeout=timeout,
                                                     approver_token=approver_token)

    def close(self) -> None:
        self.client.close()

    def discover(self) -> Discovery:
        notes: list[str] = []
        server_info = instructions = capabilities = None
        legacy_signal = None  # server/discover failed without a recognised 2026-07-28 error: maybe a 2025-11-25 server
        if self.era == "modern":
            try:
                response = self.client.request("server/discover")
            except StockroomConnectionError as exc:
                response = {"error": {"message": str(exc)}}
            error = response.get("error")
            if "result" not in response and not (isinstance(error, dict) and error.get("code") in MODERN_ERROR_CODES):
                legacy_signal = str(error.get("message") if isinstance(error, dict) else error)[:160]
            if isinstance(response.get("result"), dict):
                result = response["result"]
                capabilities, instructions = result.get("capabilities"), result.get("instructions")
                server_info = (result.get("_meta") or {}).get(_META_SERVER_INFO)
            else:
                error = response.get("error")
                notes.append("server/discover answered " + (f"an error: {str(error.get('message'))[:200]}" if isinstance(error, dict)
                                                             else "a result that is not an object"))
        hint = ("server/discover was not answered the 2026-07-28 way and no modern error came back "
                f"({legacy_signal}): if this is a 2025-11-25 server, try --era legacy")
        try:
            tools, list_meta = self._list_tools(notes)
        except StockroomConnectionError as exc:
            if legacy_signal is not None:
                raise StockroomConnectionError(f"{exc}; {hint}") from None
            raise
        if legacy_signal is not None:
            notes.append(hint)
        if self.era == "legacy" and self.client.initialize_result:
            result = self.client.initialize_result
            server_info, instructions, capabilities = result.get("serverInfo"), result.get("instructions"), result.get("capabilities")
        if server_info is None and isinstance(list_meta, dict):
            server_info = list_meta.get(_META_SERVER_INFO)
        return Discovery(era=self.era, where=self.where, server_info=server_info if isinstance(server_info, dict) else None,
                         instructions=instructions if isinstance(instructions, str) else None,
                         capabilities=capabilities if isinstance(capabilities, dict) else None, tools=tools, notes=notes)

    def _list_tools(self, notes: list[str]) -> tuple[list[dict[str, Any]], Any]:
        tools: list[dict[str, Any]] = []
        cursor, meta = None, None
        for _page in range(MAX_TOOL_PAGES):
            response = self.client.request("tools/list", {"cursor": cursor} if cursor else None)
            if "error" in response:
                error = response["error"]
                raise StockroomConnectionError(f"{self.where}: tools/list failed: "
                                               f"{str(error.get('message') if isinstance(error, dict) else error)[:200]}")
            result = response.get("result")
            if not isinstance(result, dict) or not isinstance(result.get("tools", []), list):
                raise StockroomConnectionError(f"{self.where}: tools/list answered a result that is not "
                                               "{tools: [...]}: is this an MCP server?")
            meta = meta or result.get("_meta")
            tools.extend(tool for tool in result.get("tools", []) if isinstance(tool, dict))
            cursor = result.get("nextCursor")
            if not cursor or len(tools) >= MAX_TOOLS:
                break
        else:
            notes.append(f"tools/list still had pages after {MAX_TOOL_PAGES}; the catalog is cut there")
        if len(tools) > MAX_TOOLS:
            notes.append(f"more than {MAX_TOOLS} tools; the catalog is cut there")
        return tools[:MAX_TOOLS], meta


class InProcessConnection(Connection):
    """The in-process :class:`~mcplab.stockroom.rules.Stockroom`: the same catalog the server would list."""

    def __init__(self, stockroom: Stockroom) -> None:
        self.api = self.stockroom = stockroom
        self.era = stockroom.era
        self.where = "in-process"

    def discover(self) -> Discovery:
        from ..stockroom.server import INSTRUCTIONS, SERVER_NAME

        return Discovery(era=self.era, where=self.where, server_info={"name": SERVER_NAME, "version": __version__},
                         instructions=INSTRUCTIONS, capabilities={"tools": {"listChanged": False}},
                         tools=[dict(tool) for tool in self.stockroom.tools()])
