"""JSON value helpers: equality and type checks that keep JSON's types apart.

Python says ``True == 1`` and ``1 == 1.0``, and ``bool`` is an ``int``; on the wire those are
different JSON values, and an id, a code or a body that changed type has changed.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["same_json_value", "is_json_integer", "is_json_number", "is_http_status", "without_lone_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")


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


def without_lone_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) replaced by U+FFFD.

    Python's ``json`` accepts ``"\\ud800"``, but such a string cannot be encoded as UTF-8: client
    text carrying one would otherwise make a record, a digest or a file impossible to write. Call it
    on values of bounded depth (it recurses once per container level).
    """
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_lone_surrogates(item) for item in value]
    return value

