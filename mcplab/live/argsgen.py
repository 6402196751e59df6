"""Arguments for a tool, generated from its ``inputSchema``: valid ones and deliberately invalid ones.

Design: a small seeded generator over the JSON Schema keywords tools use (type, properties,
required, enum, const, minimum/maximum, minLength/maxLength, items, min/maxItems, anyOf/oneOf,
default) rather than a property-based library, so ``mcplab check`` needs no test dependency and the
same seed always sends the same arguments. Every candidate is checked with ``jsonschema`` against
the tool's own schema (draft from its ``$schema``, 2020-12 by default) and only valid ones are kept;
an invalid candidate is kept only when the schema rejects it. Bounded: ``MAX_DEPTH`` levels,
``MAX_TRIES`` attempts, strings of at most 24 characters.
"""

from __future__ import annotations

import math
import random
from typing import Any

from .._schema import untrusted_validator

__all__ = ["valid_arguments", "invalid_arguments", "MAX_TRIES", "MAX_DEPTH"]

MAX_TRIES = 40
MAX_DEPTH = 4
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def _validator(schema: dict[str, Any]) -> Any:
    """The server's schema as a bounded validator (nothing fetched, no exponential regex), or None."""
    return untrusted_validator(schema)


def _number(schema: dict[str, Any], rng: random.Random, integer: bool) -> int | float:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -5))
    high = schema.get("maximum", schema.get("exclusiveMaximum", 50))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low > high:
        low, high = 0, 10
    if not all(isinstance(v, int) or math.isfinite(v) for v in (low, high)):  # NaN and infinities: no range
        low, high = 0, 10
    low, high = max(low, -1_000_000), min(high, 1_000_000)
    if integer:
        lo, hi = int(-(-low // 1)), int(high // 1)
        value: int | float = rng.randint(lo, hi) if lo <= hi else lo
    else:
        value = round(rng.uniform(low, high), 3)
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and 1e-9 <= step <= 1e9:  # a usable step only
        value = type(value)(round(value / step) * step)
    return value


def _string(schema: dict[str, Any], rng: random.Random) -> str:
    low = schema.get("minLength", 1)
    high = schema.get("maxLength", 12)
    low = low if isinstance(low, int) and 0 <= low <= 24 else 1
    high = high if isinstance(high, int) and high >= low else low + 8
    size = rng.randint(low, min(high, max(low, 24)))
    fmt = schema.get("format")
    if fmt == "date-time":
        return "2026-07-28T12:00:00Z"
    if fmt == "date":
        return "2026-07-28"
    if fmt in ("uri", "url"):
        return "https://example.com/mcplab"
    if fmt == "email":
        return "mcplab@example.com"
    return "".join(rng.choice(_ALPHABET) for _ in range(size))


def _value(schema: Any, rng: random.Random, depth: int) -> Any:
    if not isinstance(schema, dict):
        return rng.choice(["mcplab", 1, True])
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list) and schema[key] and depth < MAX_DEPTH:
            return _value(rng.choice(schema[key]), rng, depth + 1)
    if "default" in schema and rng.random() < 0.3:
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = rng.choice([k for k in kind if k != "null"] or ["null"])
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        return _object(schema, rng, depth + 1)
    if kind == "array":
        if depth >= MAX_DEPTH:
            return []
        low = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
        high = schema.get("maxItems", 3) if isinstance(schema.get("maxItems"), int) else 3
        return [_value(schema.get("items", {}), rng, depth + 1) for _ in range(rng.randint(min(low, 5), max(min(high, 3), min(low, 5))))]
    if kind == "integer":
        return _number(schema, rng, True)
    if kind == "number":
        return _number(schema, rng, False)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return _string(schema, rng)


def _object(schema: dict[str, Any], rng: random.Random, depth: int) -> dict[str, Any]:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)] if isinstance(schema.get("required"), list) else []
    out: dict[str, Any] = {}
    if depth > MAX_DEPTH:
        return out
    for name, sub in properties.items():
        if name in required or rng.random() < 0.5:
            out[name] = _value(sub, rng, depth)
    for name in required:
        out.setdefault(name, "mcplab")
    return out


def _accepts(validator: Any, value: Any) -> bool:
    """``validator.is_valid`` that treats a schema failing at validation time (an unresolvable ``$ref``,
    nesting too deep) as rejecting everything: no arguments are generated for it."""
    try:
        return bool(validator.is_valid(value))
    except Exception:  # noqa: BLE001  # a hostile schema must not stop the check
        return False


def valid_arguments(schema: Any, count: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``count`` distinct argument objects ``schema`` accepts (fewer when it accepts few or is unusable)."""
    if not isinstance(schema, dict):
        return []
    validator = _validator(schema)
    if validator is None:
        return []
    rng = random.Random(seed)
    found: list[dict[str, Any]] = []
    for _ in range(MAX_TRIES):
        candidate = _object(schema, rng, 0)
        if candidate not in found and _accepts(validator, candidate):
            found.append(candidate)
            if len(found) >= count:
                break
    return found


def invalid_arguments(schema: Any, seed: int) -> tuple[dict[str, Any], str] | None:
    """One argument object ``schema`` rejects and why (a required property left out, or one of the
    wrong type); ``None`` when the schema constrains nothing it could be tested on."""
    if not isinstance(schema, dict):
        return None
    validator = _validator(schema)
    base = valid_arguments(schema, 1, seed)
    if validator is None or not base:
        return None
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = [r for r in schema.get("required", []) if isinstance(r, str)] if isinstance(schema.get("required"), list) else []
    candidates: list[tuple[dict[str, Any], str]] = []
    for name in required:
        candidates.append(({k: v for k, v in base[0].items() if k != name}, f"required property {name!r} left out"))
    for name, sub in properties.items():
        kind = sub.get("type") if isinstance(sub, dict) else None
        wrong = {"string": 12345, "integer": "not a number", "number": "not a number", "boolean": "not a boolean",
                 "array": "not an array", "object": "not an object"}.get(kind if isinstance(kind, str) else "")
        if wrong is not None:
            candidates.append(({**base[0], name: wrong}, f"property {name!r} given a {type(wrong).__name__} where the schema wants {kind}"))
    for candidate, why in candidates:
        try:
            rejected = not validator.is_valid(candidate)
        except Exception:  # noqa: BLE001  # see _accepts
            return None
        if rejected:
            return candidate, why
    return None
