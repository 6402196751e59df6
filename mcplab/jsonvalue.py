"""JSON value equality: the same value AND the same JSON type.

Python says ``True == 1`` and ``1 == 1.0``; on the wire those are different JSON values, and
an id, a payload or a body that changed type has changed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["same_json_value"]


def same_json_value(a: Any, b: Any) -> bool:
    """Equality that also requires the same JSON type, recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json_value(x, y) for x, y in zip(a, b))
    return bool(a == b)
