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
from ..errors import MCPLabError
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
        if not (isinstance(snapshot, dict) and isinstance(snapshot.get("items"), list) and isinstance(drafts, list)):
            return None
        return {"ledger_version": snapshot.get("ledger_version"), "items": snapshot["items"], "drafts": drafts}

    def close(self) -> None:  # noqa: B027 - a no-op unless the transport holds something
        """Release the transport (nothing for in-process use)."""


class HttpConnection(Connection):
    """Any MCP server over Streamable HTTP: ``HttpConnection("http://127.0.0.1:8765/mcp", era="legacy")``."""

    def __init__(self, url: str, *, era: str = "modern", timeout: float = 10.0) -> None:
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise FlightDeckError(f"url {url!r}: expected an http(s) URL such as http://127.0.0.1:8765/mcp")
        self.era = check_era(era)
        self.where = url
        self.api = self.client = StockroomClient(url, era=self.era, timeout=timeout)

    def close(self) -> None:
        self.client.close()

    def discover(self) -> Discovery:
        notes: list[str] = []
        server_info = instructions = capabilities = None
        if self.era == "modern":
            try:
                response = self.client.request("server/discover")
            except StockroomConnectionError as exc:
                response = {"error": {"message": str(exc)}}
            if "result" in response:
                result = response["result"]
                capabilities, instructions = result.get("capabilities"), result.get("instructions")
                server_info = (result.get("_meta") or {}).get(_META_SERVER_INFO)
            else:
                notes.append(f"server/discover answered an error: {str(response['error'].get('message'))[:200]}")
        tools, list_meta = self._list_tools(notes)
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
                raise StockroomConnectionError(f"{self.where}: tools/list failed: {str(response['error'].get('message'))[:200]}")
            result = response["result"]
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
