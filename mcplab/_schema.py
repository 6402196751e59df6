"""jsonschema on first use, without the format checkers' grammar compile at import.

Design: jsonschema fills its format-checker table when it is imported, and when ``rfc3987-syntax``
is installed (the Jupyter stack brings it) that compiles a Lark grammar: about a second on every
first import, although mcplab never checks ``format`` (it passes no format checker). So mcplab's
modules import jsonschema inside the function that validates, through :func:`jsonschema`, which
lends jsonschema a stand-in ``rfc3987_syntax`` for the length of its import: the stand-in's
``is_valid_syntax`` loads the real module on its first call, so the "iri" checks behave exactly as
before for anyone who asks for them, and only they pay for the grammar.

Schemas a server hands us (a tool's ``inputSchema`` or ``outputSchema``) are untrusted: run them
through :func:`bounded` with the dialects' metaschema registry (``jsonschema_specifications``), so
a ``$ref`` to a URL or a file is never fetched, and a ``pattern`` that can backtrack exponentially
(:func:`risky_pattern`) is not run (Python's ``re`` cannot be interrupted).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
import types
from collections.abc import Iterator
from functools import lru_cache
from re import _constants as _sre
from re import _parser as _sre_parser
from typing import Any

__all__ = ["jsonschema", "bounded", "untrusted_validator", "risky_pattern"]

_DEFERRED = "rfc3987_syntax"
_lock = threading.Lock()
_real: list[types.ModuleType] = []


def _stand_in() -> types.ModuleType:
    """A module named ``rfc3987_syntax`` whose only function defers to the real one, loaded on first call."""
    stand_in = types.ModuleType(_DEFERRED, "mcplab: rfc3987_syntax, loaded on first use")

    def is_valid_syntax(*args: Any, **kwargs: Any) -> Any:
        if not _real:
            with _lock:
                if sys.modules.get(_DEFERRED) is stand_in:
                    del sys.modules[_DEFERRED]
                if not _real:
                    _real.append(importlib.import_module(_DEFERRED))
        return _real[0].is_valid_syntax(*args, **kwargs)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    return stand_in


def jsonschema() -> types.ModuleType:
    """The ``jsonschema`` module, imported (once) without compiling the IRI grammar up front."""
    loaded = sys.modules.get("jsonschema")
    if loaded is not None:
        return loaded
    with _lock:
        if _DEFERRED in sys.modules or importlib.util.find_spec(_DEFERRED) is None:
            return importlib.import_module("jsonschema")
        stand_in = sys.modules[_DEFERRED] = _stand_in()
        try:
            return importlib.import_module("jsonschema")
        finally:
            # jsonschema keeps the stand-in's function; anyone importing rfc3987_syntax later gets the real module
            if sys.modules.get(_DEFERRED) is stand_in:
                del sys.modules[_DEFERRED]


_REPEATS = (_sre.MAX_REPEAT, _sre.MIN_REPEAT)


def _backtracks(items: Any, in_repeat: bool) -> bool:
    """Whether a parsed pattern nests a repeat or an alternation inside a repeat, or uses a backreference."""
    for op, arg in items:
        if op in _REPEATS:
            many = arg[1] > 1
            if (many and in_repeat) or _backtracks(arg[2], in_repeat or many):
                return True
        elif op is _sre.BRANCH:
            if in_repeat or any(_backtracks(branch, in_repeat) for branch in arg[1]):
                return True
        elif op is _sre.SUBPATTERN:
            if _backtracks(arg[3], in_repeat):
                return True
        elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
            if _backtracks(arg[1], in_repeat):
                return True
        elif op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS, _sre.POSSESSIVE_REPEAT, _sre.ATOMIC_GROUP):
            return True  # rare in schemas; not worth proving safe
    return False


@lru_cache(maxsize=256)
def risky_pattern(pattern: str) -> bool:
    """True for a regex that can backtrack exponentially (``^(a+)+$``): Python's ``re`` cannot be interrupted, so it is not run."""
    try:
        return _backtracks(_sre_parser.parse(pattern), False)
    except (re.error, RecursionError, OverflowError, TypeError, ValueError):
        return False  # not a valid regex: the schema check reports it


def _safe_pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and isinstance(pattern, str) and not risky_pattern(pattern):
        if not re.search(pattern, instance):
            yield jsonschema().ValidationError(f"{instance[:60]!r} does not match {pattern[:80]!r}")


@lru_cache(maxsize=16)
def bounded(cls: Any) -> Any:
    """``cls`` whose ``pattern`` keyword skips a pattern that can backtrack exponentially."""
    return jsonschema().validators.extend(cls, {"pattern": _safe_pattern})


def untrusted_validator(schema: Any, *, unknown_dialect_as_2020_12: bool = False) -> Any | None:
    """A bounded validator for a schema from a server (see the module docstring), or ``None`` when the
    schema is unusable: not an object, invalid against its dialect, or of a ``$schema`` jsonschema
    does not know (unless ``unknown_dialect_as_2020_12``; no ``$schema`` means 2020-12, the MCP
    default). Validating can still raise: an unresolvable ``$ref``, nesting too deep."""
    import warnings

    if not isinstance(schema, dict):
        return None
    schemas = jsonschema()
    from jsonschema_specifications import REGISTRY as metaschemas

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # jsonschema warns about an unknown $schema
            fallback = schemas.Draft202012Validator if unknown_dialect_as_2020_12 or "$schema" not in schema else None
            cls = schemas.validators.validator_for(schema, default=fallback)
        if cls is None:
            return None
        cls.check_schema(schema)
        return bounded(cls)(schema, registry=metaschemas)
    except Exception:  # noqa: BLE001 - an unusable schema (bad keyword value, nested too deeply)
        return None
