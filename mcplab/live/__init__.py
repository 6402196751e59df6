"""Live wire: the recorded suite's cases judged on real traffic (a real client, server and proxy).

Layers: ``capture`` (one exchange over HTTP with timing; SSE events as they arrive), ``cases``
(which cases a live server can be asked, and the live cases built for it), ``generated`` (checks
generated from what a server declares, with ``argsgen`` for tool arguments), ``judge`` (the
recorded runner on live captures, proxy hops, stream buffering), ``proxy`` (a real reverse proxy
with one fault per mode), ``check`` (era probe plus the direct/via run) and ``report`` (the
redacted HTML conformance matrix).

The names load on first use (PEP 562), so ``mcplab``'s command line can register ``check`` and
``proxy`` without importing httpx, Starlette and uvicorn for every other command.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_MODULES = ("capture", "cases", "generated", "argsgen", "judge", "proxy", "check", "report")

__getattr__ = lazy_getattr(__name__, _MODULES)
