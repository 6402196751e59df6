"""The official MCP JSON Schemas as a judge of live messages (the ``schema`` authority level).

Design: the two schema files ship unmodified in ``mcplab/spec/``; a message is validated against one
``$defs`` entry with ``jsonschema``'s Draft 2020-12 validator, built once per (revision, definition).
``jsonschema`` is imported only here, on first use (it is 30-45x slower than ``json.loads``, so
this judges captured evidence, never a hot path).
"""

from __future__ import annotations

import heapq
import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["RESULT_DEFS", "schema_errors", "result_def"]

_FILES = {"modern": "mcp-2026-07-28.schema.json", "legacy": "mcp-2025-11-25.schema.json"}

#: The result definition of each method, per era (``None``: the method does not exist in that era).
RESULT_DEFS: dict[str, dict[str, str | None]] = {
    "server/discover": {"modern": "DiscoverResult", "legacy": None},
    "initialize": {"modern": None, "legacy": "InitializeResult"},
    "tools/list": {"modern": "ListToolsResult", "legacy": "ListToolsResult"},
    "tools/call": {"modern": "CallToolResult", "legacy": "CallToolResult"},
    "resources/list": {"modern": "ListResourcesResult", "legacy": "ListResourcesResult"},
    "resources/templates/list": {"modern": "ListResourceTemplatesResult", "legacy": "ListResourceTemplatesResult"},
    "resources/read": {"modern": "ReadResourceResult", "legacy": "ReadResourceResult"},
    "prompts/list": {"modern": "ListPromptsResult", "legacy": "ListPromptsResult"},
    "prompts/get": {"modern": "GetPromptResult", "legacy": "GetPromptResult"},
    "completion/complete": {"modern": "CompleteResult", "legacy": "CompleteResult"},
}


@cache
def _defs(era: str) -> dict[str, Any]:
    text = (resources.files("mcplab") / "spec" / _FILES[era]).read_text(encoding="utf-8")
    return json.loads(text)["$defs"]


@cache
def _validator(era: str, name: str) -> Any:
    from ._schema import jsonschema  # lazy, and without the IRI grammar: only a judge of evidence needs it

    return jsonschema().Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": _defs(era)})


def result_def(method: str, era: str, result: Any) -> str | None:
    """The ``$defs`` name a result of ``method`` is judged by (``InputRequiredResult`` for one that asks for input)."""
    if era == "modern" and isinstance(result, dict) and result.get("resultType") == "input_required":
        return "InputRequiredResult"
    return RESULT_DEFS.get(method, {}).get(era)


def schema_errors(value: Any, era: str, name: str, limit: int = 3) -> list[str]:
    """Up to ``limit`` messages of why ``value`` breaks ``$defs/<name>`` of the era's schema (empty: valid)."""
    if name not in _defs(era):
        raise KeyError(f"{name!r} is not a definition of the {era} schema")
    out = []
    try:
        found = heapq.nsmallest(limit, _validator(era, name).iter_errors(value), key=lambda e: list(e.absolute_path))
    except RecursionError:  # a hostile answer nested deeper than the validator can follow
        return [f"$defs/{name}: nested too deeply to check"]
    for error in found:
        path = "/".join(str(p) for p in error.absolute_path) or "(root)"
        out.append(f"$defs/{name} at {path}: {error.message[:200]}")
    return out
