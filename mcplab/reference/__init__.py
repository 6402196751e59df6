"""The reference server: a Python MCP server that passes the official conformance scenarios.

Layers, bottom up: ``media`` (fixture bytes), ``sessions`` (bounded per-session bookkeeping),
 ``mrtr`` (input_required rounds with sealed state), ``tasks`` (the tasks extension),
``events`` (SSE resumption), ``resources``, ``prompts``, ``completion`` and ``tools`` (the fixture tables), and ``server`` (the
``mcp`` SDK adapter under uvicorn, both eras on one route).

The names load with their module on first use (PEP 562), and :func:`serve_reference` loads the
server only when it is called, so a lab's setup cell that imports it does not pay for the SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .server import RunningReference

_MODULES = ("media", "sessions", "events", "mrtr", "tasks", "resources", "prompts", "completion", "tools", "server")

__getattr__ = lazy_getattr(__name__, _MODULES)


def serve_reference(*, host: str = "127.0.0.1", port: int = 0, allowed_hosts: Sequence[str] = (),
                    log_level: str = "warning", hide_modern: str | None = None) -> AbstractContextManager[RunningReference]:
    """Run the reference server in a daemon thread for the ``with`` block (``port=0``: a free port).

    The same call as :func:`mcplab.reference.server.serve_reference` (see there), importing the
    server and the SDK when it is made.
    """
    from .server import serve_reference as serve

    return serve(host=host, port=port, allowed_hosts=allowed_hosts, log_level=log_level, hide_modern=hide_modern)
