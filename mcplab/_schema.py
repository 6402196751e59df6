"""jsonschema on first use, without the format checkers' grammar compile at import.

Design: jsonschema fills its format-checker table when it is imported, and when ``rfc3987-syntax``
is installed (the Jupyter stack brings it) that compiles a Lark grammar: about a second on every
first import, although mcplab never checks ``format`` (it passes no format checker). So mcplab's
modules import jsonschema inside the function that validates, through :func:`jsonschema`, which
lends jsonschema a stand-in ``rfc3987_syntax`` for the length of its import: the stand-in's
``is_valid_syntax`` loads the real module on its first call, so the "iri" checks behave exactly as
before for anyone who asks for them, and only they pay for the grammar.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from typing import Any

__all__: list[str] = []

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
