"""Values that cross the sandbox wall: Python values as tagged JSON, with limits.

A sealed check sends its inputs into the sandbox and gets the student's outputs back, both as
JSON text. Plain JSON cannot tell a tuple from a list or carry bytes, and the labs' functions
take and return both, so a few values travel as one-key objects whose key starts with ``$``:

==================  ===========================================================
``{"$tuple": [..]}``  a tuple
``{"$bytes": "b64"}`` bytes
``{"$float": "nan"}`` a float JSON cannot spell (``nan``, ``inf``, ``-inf``)
``{"$dict": [[k, v], ..]}`` a dict whose keys are not all strings, or that would look like a tag
``{"$object": "T"}``  anything else (an opaque value of type ``T``: never equal to an expected value)
==================  ===========================================================

:func:`decode` is the trusted side's reader: it refuses text over ``MAX_TEXT`` characters or
nesting deeper than ``MAX_DEPTH`` with :class:`ValueError`, whatever the sandbox wrote.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_TEXT", "Opaque", "decode", "dumps", "encode", "loads", "same"]

#: Deepest nesting :func:`encode` writes and :func:`decode` reads.
MAX_DEPTH = 64
#: Longest JSON text :func:`loads` reads (characters).
MAX_TEXT = 8 * 1024 * 1024


class Opaque:
    """A value the sandbox could not express as data (its type name only); equal to nothing."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]


def encode(value: Any, _depth: int = 0) -> Any:
    """``value`` as a JSON-ready structure with the tags above (never raises)."""
    if _depth > MAX_DEPTH:
        return {"$object": "too deeply nested"}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, tuple):
        return {"$tuple": [encode(v, _depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        keys = list(value)
        if all(type(k) is str for k in keys) and not (len(keys) == 1 and keys[0].startswith("$")):
            return {k: encode(v, _depth + 1) for k, v in value.items()}
        return {"$dict": [[encode(k, _depth + 1), encode(v, _depth + 1)] for k, v in value.items()]}
    return {"$object": type(value).__name__}


def decode(data: Any, _depth: int = 0) -> Any:
    """The Python value of an :func:`encode` structure; malformed tags raise :class:`ValueError`."""
    if _depth > MAX_DEPTH + 1:
        raise ValueError("value nested too deeply")
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(v, _depth + 1) for v in data]
    if not isinstance(data, dict):
        raise ValueError(f"not a JSON value: {type(data).__name__}")
    if len(data) == 1:
        (tag, inner), = data.items()
        if tag == "$tuple" and isinstance(inner, list):
            return tuple(decode(v, _depth + 1) for v in inner)
        if tag == "$bytes" and isinstance(inner, str):
            try:
                return base64.b64decode(inner.encode("ascii"), validate=True)
            except (ValueError, UnicodeEncodeError):
                raise ValueError("$bytes is not base64") from None
        if tag == "$float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
        if tag == "$dict" and isinstance(inner, list):
            out = {}
            for pair in inner:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ValueError("$dict needs [key, value] pairs")
                key = decode(pair[0], _depth + 1)
                try:
                    out[key] = decode(pair[1], _depth + 1)
                except TypeError:
                    raise ValueError("$dict key is not hashable") from None
            return out
        if tag == "$object":
            return Opaque(str(inner)[:80])
        if tag.startswith("$"):
            raise ValueError(f"unknown tag {tag[:20]!r}")
    return {k: decode(v, _depth + 1) for k, v in data.items()}


def dumps(value: Any) -> str:
    """``encode(value)`` as compact JSON text."""
    return json.dumps(encode(value), separators=(",", ":"), ensure_ascii=True)


def loads(text: str) -> Any:
    """Read :func:`dumps` text written by untrusted code: bounded size and depth, errors as ValueError."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise ValueError("value text missing or too long")
    try:
        return decode(json.loads(text))
    except RecursionError:
        raise ValueError("value nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg}") from None


def same(got: Any, want: Any) -> bool:
    """Whether a student's output equals an expected value, with the types a careful assert would see.

    ``True`` is not ``1``, a list is not a tuple, ``str`` is not ``bytes``; ``1 == 1.0`` holds.
    """
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is type(want) and got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        if isinstance(want, float) and isinstance(got, float) and math.isnan(want):
            return math.isnan(got)
        return got == want
    if type(got) is not type(want):
        return False
    if isinstance(want, (list, tuple)):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    if isinstance(want, dict):
        return got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    return bool(got == want)
