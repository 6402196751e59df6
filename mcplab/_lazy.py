"""Lazy subpackage exports (PEP 562): a package's names load with their module on first use.

Design: a subpackage that would pull a heavy stack (httpx, Starlette, uvicorn, the SDK) into
``mcplab``'s command line lists its modules once and takes its ``__getattr__`` from here, so the
CLI can register its commands without importing any of it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any


def lazy_getattr(package: str, modules: Sequence[str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``__all__`` is the union of ``modules``' lists, and
    every other name comes from the first of ``modules`` that exports it."""
    def __getattr__(name: str) -> Any:
        if name == "__all__":
            return [n for module in modules for n in importlib.import_module(f"{package}.{module}").__all__]
        for module in modules:
            loaded = importlib.import_module(f"{package}.{module}")
            if name in loaded.__all__:
                return getattr(loaded, name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__
