"""JSON value helpers: equality and type checks that keep JSON's types apart.

Python says ``True == 1`` and ``1 == 1.0``, and ``bool`` is an ``int``; on the wire those are
different JSON values, and an id, a code or a body that changed type has changed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["same_json_value", "is_json_integer", "is_json_number", "is_http_status"]


def same_json_value(a: Any, b: Any) -> bool:
    """Equality that also requires the same JSON type, recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json_value(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json_value(x, y) for x, y in zip(a, b))
    return bool(a == b)


def is_json_integer(value: Any) -> bool:
    """An integer that is not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_json_number(value: Any) -> bool:
    """An integer or float that is not a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_http_status(value: Any) -> bool:
    """An HTTP status code: an integer in 100..599."""
    return is_json_integer(value) and 100 <= value <= 599
