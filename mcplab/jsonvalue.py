"""JSON value helpers: equality and type checks that keep JSON's types apart.

Python says ``True == 1`` and ``1 == 1.0``, and ``bool`` is an ``int``; on the wire those are
different JSON values, and an id, a code or a body that changed type has changed.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["same_json_value", "is_json_integer", "is_json_number", "is_http_status", "without_lone_surrogates",
           "short_repr"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def same_json_value(a: Any, b: Any) -> bool:
    """Equality that also requires the same JSON type, at every depth (iterative: no recursion limit)."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif not x == y:
            return False
    return True


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters; never raises.

    A hostile value has no usable repr: an integer of more than 4,300 digits raises ``ValueError``,
    deep nesting ``RecursionError``; those are described instead of shown.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"<an integer of about {int(value.bit_length() * 0.30103)} digits>"
    if isinstance(value, (dict, list)) and len(value) > limit:
        return f"<a {'JSON object' if isinstance(value, dict) else 'JSON array'} of {len(value)} entries>"
    if isinstance(value, str) and len(value) > 4 * limit:
        value = value[: 4 * limit]
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<a {type(value).__name__} nested too deeply to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


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

