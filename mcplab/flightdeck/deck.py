"""The Flight Deck facade: read-only preflight of MCP tool calls, and a plan run that ends in proof.

Design: every preflight operation starts from a fresh discovery (the catalog "as currently
discovered") and reads target state only through observations that record nothing, so
``inspect_*``, ``search_tools``, ``validate_tool_call``, ``preview_tool_call`` and
``compile_invocation_plan`` never call a tool, never queue one and never add a trace record.
Only :meth:`FlightDeck.run_plan` calls tools, each through the server's own policy and gate.
Outputs are JSON-serialisable dictionaries with snake_case keys.
"""

from __future__ import annotations

from typing import Any

from ..stockroom.rules import Stockroom
from .authority import authority_layers, authority_summary
from .catalog import MAX_QUERY_CHARS, EffectiveCatalog, build_catalog
from .connection import MAX_TOOL_PAGES, MAX_TOOLS, Connection, FlightDeckError, HttpConnection, InProcessConnection
from .plan import MAX_PLAN_STEPS, compile_plan, parse_calls
from .run import Approver, run_plan
from .validation import once, preview_call, schema_bounds, validate_call

__all__ = ["FlightDeck", "schema_limits"]

_LIMIT_KEYWORDS = ("minItems", "maxItems", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
                   "exclusiveMaximum", "maxProperties")
_MAX_SCHEMA_NODES = 500


def schema_limits(schema: Any) -> dict[str, dict[str, Any]]:
    """``{json_path: {keyword: value}}`` for the size and range keywords in an input schema (bounded walk)."""
    found: dict[str, dict[str, Any]] = {}
    stack: list[tuple[Any, str, int]] = [(schema, "$", 0)]
    seen = 0
    while stack and seen < _MAX_SCHEMA_NODES:
        node, path, depth = stack.pop()
        seen += 1
        if not isinstance(node, dict) or depth > 16:
            continue
        limits = {key: node[key] for key in _LIMIT_KEYWORDS if key in node}
        if limits:
            found[path] = limits
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend((child, f"{path}.{key}", depth + 1) for key, child in properties.items())
        if isinstance(node.get("items"), dict):
            stack.append((node["items"], f"{path}[]", depth + 1))
    return dict(sorted(found.items()))


class FlightDeck:
    """``FlightDeck.connect(url)`` for any MCP server over HTTP, ``FlightDeck.in_process(Stockroom())`` without HTTP."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    @classmethod
    def connect(cls, url: str, *, era: str = "modern", timeout: float = 10.0,
                approver_token: str | None = None) -> FlightDeck:
        """Flight Deck over HTTP; ``approver_token`` lets a 2025-11-25 run's ``approver`` answer out of band."""
        return cls(HttpConnection(url, era=era, timeout=timeout, approver_token=approver_token))

    @classmethod
    def in_process(cls, stockroom: Stockroom | None = None) -> FlightDeck:
        return cls(InProcessConnection(stockroom if stockroom is not None else Stockroom()))

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> FlightDeck:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # discovery ------------------------------------------------------------------------------------
    def catalog(self) -> EffectiveCatalog:
        """The caller-effective catalog, discovered now."""
        return build_catalog(self.connection.discover())

    def inspect_server(self) -> dict[str, Any]:
        """The effective catalog as discovered now, the era, the policy identity and the ``catalog_identity``."""
        catalog = self.catalog()
        via = ["in-process catalog"] if self.connection.where == "in-process" else (
            ["server/discover", "tools/list"] if catalog.era == "modern" else ["initialize", "tools/list"])
        notes = list(catalog.discovery.notes) + [f"{name} is listed twice; the first descriptor is used" for name in catalog.duplicates]
        return {"server": catalog.server(), "era": catalog.era, "discovered_via": via, "catalog_identity": catalog.identity,
                "policy_identity": catalog.profile.identity(), "tool_count": len(catalog.tools), "tools": catalog.summary(),
                "descriptors": list(catalog.tools.values()), "notes": notes,
                "visible_means": "a visible tool can be requested by this caller; that does not prove it may execute"}

    def search_tools(self, query: str) -> dict[str, Any]:
        """Tools of the effective catalog matching every word of ``query`` (never anything discovery did not show)."""
        if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
            raise FlightDeckError(f"query: expected 1 to {MAX_QUERY_CHARS} characters of search words")
        catalog = self.catalog()
        hits = catalog.search(query)
        return {"query": query, "catalog_identity": catalog.identity, "searched": len(catalog.tools), "matches": hits}

    def inspect_tool(self, name: str) -> dict[str, Any]:
        """The exact descriptor, input schema, annotations, execution policy and an authority summary of ``name``."""
        catalog = self.catalog()
        descriptor = catalog.tools.get(name)
        layers = authority_layers(catalog, name)
        return {"tool": name, "catalog_identity": catalog.identity, "in_effective_catalog": descriptor is not None,
                "descriptor": descriptor, "input_schema": descriptor.get("inputSchema") if descriptor else None,
                "annotations": descriptor.get("annotations") if descriptor else None,
                "execution_policy": catalog.policy_of(name), "authority": authority_summary(layers),
                "denial_evidence": layers["denial_evidence"]}

    def inspect_authority(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Visibility, policy knowledge, target readiness (with ``arguments``) and the unproven layers of ``name``."""
        catalog = self.catalog()
        validation = validate_call(catalog, name, arguments, observe=once(self.connection.observe_target)) if arguments is not None else None
        return authority_layers(catalog, name, validation)

    def inspect_limits(self) -> dict[str, Any]:
        """Non-secret server and schema limits; nothing is reserved."""
        catalog = self.catalog()
        return {"era": catalog.era, "catalog_identity": catalog.identity, "reserves_capacity": False,
                "server_limits": {"source": catalog.profile.authority, **catalog.profile.server_limits()},
                "tool_schema_limits": {name: schema_limits(tool.get("inputSchema")) for name, tool in catalog.tools.items()},
                "flightdeck_bounds": {**schema_bounds(), "max_plan_steps": MAX_PLAN_STEPS, "max_tool_pages": MAX_TOOL_PAGES,
                                      "max_tools": MAX_TOOLS, "max_query_chars": MAX_QUERY_CHARS}}

    # validation, preview, plan ------------------------------------------------------------------------
    def validate_tool_call(self, name: str, arguments: Any, *, catalog_identity: str | None = None) -> dict[str, Any]:
        """Static admissibility of one call (never invoked, never queued); see ``mcplab.flightdeck.validation``."""
        return validate_call(self.catalog(), name, arguments, catalog_identity=catalog_identity,
                             observe=once(self.connection.observe_target))

    def preview_tool_call(self, name: str, arguments: Any, *, catalog_identity: str | None = None) -> dict[str, Any]:
        """Validation plus bounded predicted effects, marked as a prediction."""
        return preview_call(self.catalog(), name, arguments, catalog_identity=catalog_identity,
                            observe=once(self.connection.observe_target))

    def compile_invocation_plan(self, calls: Any) -> dict[str, Any]:
        """A plan for the caller's explicit calls, in order; ``execution_authorized`` and ``execution_started`` are false."""
        parsed = parse_calls(calls)
        catalog = self.catalog()
        observe = once(self.connection.observe_target)
        previews = [preview_call(catalog, call["tool"], call["arguments"], observe=observe) for call in parsed]
        return compile_plan(catalog, parsed, previews)

    # execution ----------------------------------------------------------------------------------------
    def run_plan(self, plan: Any, *, approver: Approver | None = None, resume: Any = None) -> dict[str, Any]:
        """Run a compiled plan through each tool's own policy and gate; stops on staleness; ends each step in proof."""
        return run_plan(self.connection, plan, approver=approver, resume=resume)
