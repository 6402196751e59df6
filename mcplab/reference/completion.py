"""Argument completion for the reference prompts and resource template.

Design: fixed candidate lists per (reference, argument), filtered by the typed prefix and capped
at the spec's 100 values, with ``total`` and ``hasMore`` telling the truth about the cut.
"""

from __future__ import annotations

from typing import Any

from .resources import TEMPLATE_URI

__all__ = ["CANDIDATES", "complete"]

MAX_VALUES = 100
CANDIDATES: dict[tuple[str, str, str], tuple[str, ...]] = {
    ("ref/prompt", "test_prompt_with_arguments", "arg1"): ("paris", "park", "party", "test", "testing", "tested"),
    ("ref/prompt", "test_prompt_with_arguments", "arg2"): ("world", "work", "wonder"),
    ("ref/resource", TEMPLATE_URI, "id"): ("1", "2", "3", "42", "123"),
}


def complete(ref: dict[str, Any], argument: str, value: str) -> dict[str, Any]:
    """The wire ``completion`` object for ``ref`` (``{type, name}`` or ``{type, uri}``) and a typed prefix."""
    key = (ref.get("type", ""), ref.get("name") or ref.get("uri") or "", argument)
    matches = [c for c in CANDIDATES.get(key, ()) if c.startswith(value)]
    return {"values": matches[:MAX_VALUES], "total": len(matches), "hasMore": len(matches) > MAX_VALUES}
