"""The stockroom's fixed data: seed stock, the four tools, their effect classes and the allow-list.

Design: everything a reset restores and everything the policy decides from is plain data here,
so the in-process ``Stockroom``, the MCP server and the circuit panel draw from one source.
The restock rule is "on_hand + on_order <= reorder_point: order up to par".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "SEED_ITEMS",
    "SEED_LEDGER_VERSION",
    "EFFECT_CLASSES",
    "ALLOWED_EFFECTS",
    "EFFECT_META_KEY",
    "ToolSpec",
    "TOOLS",
    "TOOL_NAMES",
    "WRITE_TOOL",
    "STREAM_TOOL",
    "policy_for",
    "restock_lines",
    "tool_descriptor",
    "MAX_ADD_ON_ORDER",
]

#: Seed stock restored by every reset: (sku, name, on_hand, on_order, reorder_point, par).
#: Chosen so that "Restock low items" drafts SR-101 +6, SR-103 +13, SR-105 +3, SR-106 +6, while
#: SR-102 (plenty) and SR-104 (old stock, 5 on hand, reorder point 2) need nothing.
SEED_ITEMS: tuple[dict[str, Any], ...] = tuple(
    {"sku": sku, "name": name, "on_hand": on_hand, "on_order": on_order, "reorder_point": point, "par": par}
    for sku, name, on_hand, on_order, point, par in (
        ("SR-101", "Gaffer tape, black 50 mm", 2, 0, 4, 8),
        ("SR-102", "Cable ties, 200 mm (bag)", 40, 0, 20, 60),
        ("SR-103", "Sandbag, 10 kg", 3, 0, 6, 16),
        ("SR-104", "Lighting gel, old stock", 5, 0, 2, 6),
        ("SR-105", "C-stand knuckle", 1, 0, 2, 4),
        ("SR-106", "XLR cable, 10 m", 4, 0, 5, 10),
    )
)
SEED_LEDGER_VERSION = 1

#: Effect classes in order of power: read looks, draft prepares without touching the ledger,
#: write changes the ledger (only through the approval gate).
EFFECT_CLASSES = ("read", "draft", "write")
#: The allow-list is by effect class: every defined tool's class is allowed; anything else is denied.
ALLOWED_EFFECTS = frozenset(EFFECT_CLASSES)
#: Where a tool descriptor carries its effect class (a vendor ``_meta`` key, outside the spec's prefix).
EFFECT_META_KEY = "mcplab/effectClass"
#: Largest quantity one commit line may add.
MAX_ADD_ON_ORDER = 10_000


@dataclass(frozen=True)
class ToolSpec:
    """One allow-listed tool: name, effect class, description and JSON input schema."""

    name: str
    effect: str
    title: str
    description: str
    input_schema: dict[str, Any]


_DRAFT_ID = {"type": "string", "pattern": "^DR-[0-9]{4,}$", "description": "A draft id such as DR-0001."}
_LINES = {
    "type": "array",
    "minItems": 1,
    "maxItems": 100,
    "items": {
        "type": "object",
        "properties": {
            "sku": {"type": "string"},
            "add_on_order": {"type": "integer", "minimum": 1, "maximum": MAX_ADD_ON_ORDER},
        },
        "required": ["sku", "add_on_order"],
        "additionalProperties": False,
    },
}

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("read_stock", "read", "Read stock",
             "Return the ledger version and every item (on hand, on order, reorder point, par).",
             {"type": "object", "properties": {}, "additionalProperties": False}),
    ToolSpec("draft_reorder", "draft", "Draft a reorder",
             "Draft 'Restock low items': every item at or below its reorder point is ordered up to par. "
             "Never changes the ledger.",
             {"type": "object", "properties": {}, "additionalProperties": False}),
    ToolSpec("request_approval", "draft", "Show the pending change",
             "Show a draft as the change it would make: on_order before and after, per SKU. Never changes the ledger.",
             {"type": "object", "properties": {"draft_id": _DRAFT_ID}, "required": ["draft_id"],
              "additionalProperties": False}),
    ToolSpec("commit_reorder", "write", "Commit a reorder",
             "Apply a drafted reorder to the ledger. Stops at the approval gate: the first call answers "
             "input_required with the exact diff; only an accepted retry changes the ledger. 2025-11-25 "
             "clients, which have no multi-round-trip requests, get an approval_id that a person answers in the "
             "stockroom; the retry then carries approval_id.",
             {"type": "object",
              "properties": {
                  "draft_id": _DRAFT_ID,
                  "ledger_version": {"type": "integer", "minimum": 1},
                  "lines": _LINES,
                  "approval_id": {
                      "type": "string", "pattern": "^AP-[0-9a-f]{12}$",
                      "description": "2025-11-25 clients only: the approval a person answered in the stockroom.",
                  },
              },
              "required": ["draft_id", "ledger_version", "lines"],
              "additionalProperties": False}),
)
TOOL_NAMES = tuple(tool.name for tool in TOOLS)
WRITE_TOOL = "commit_reorder"
#: The read-only tool that streams: with ``params._meta.progressToken`` the server sends one
#: ``notifications/progress`` per item before its result (SSE when the server answers with SSE).
STREAM_TOOL = "read_stock"
_BY_NAME = {tool.name: tool for tool in TOOLS}


def policy_for(name: str) -> tuple[str, ToolSpec | None]:
    """``("allow", spec)`` for an allow-listed tool, ``("deny", None)`` for any other name."""
    spec = _BY_NAME.get(name)
    if spec is None or spec.effect not in ALLOWED_EFFECTS:
        return "deny", None
    return "allow", spec


def restock_lines(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The "Restock low items" lines for ``items``: order up to par what is at or below its reorder point."""
    lines = []
    for item in items:
        stock = item["on_hand"] + item["on_order"]
        if stock <= item["reorder_point"] and item["par"] > stock:
            lines.append({"sku": item["sku"], "add_on_order": item["par"] - stock})
    return lines


def tool_descriptor(spec: ToolSpec) -> dict[str, Any]:
    """The wire descriptor of one tool, with standard annotations and the effect class in ``_meta``."""
    return {
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "inputSchema": spec.input_schema,
        "annotations": {
            "title": spec.title,
            "readOnlyHint": spec.effect != "write",
            "destructiveHint": False,
            "idempotentHint": spec.effect != "write",
            "openWorldHint": False,
        },
        "_meta": {EFFECT_META_KEY: spec.effect},
    }
