"""Flight Deck: read-only preflight of MCP tool calls, and plan runs that end in postcondition proof.

Modules, one concept each: ``connection`` (discovery and read-only target observation, over HTTP
for any server or in process for the ``Stockroom``), ``profiles`` (policy knowledge: descriptor
hints, or the stockroom's published rules), ``catalog`` (the caller-effective catalog and its
identity), ``authority`` (the separate authority layers), ``validation`` (static checks and
preview), ``plan`` (compiled plans), ``run`` (execution through the server's gate, with proof),
``deck`` (the :class:`FlightDeck` facade) and ``cli`` (``mcplab preflight``).

The names load on first use (PEP 562), so ``mcplab``'s command line can register ``preflight``
without importing the SDK and the server for every other command.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

_MODULES = ("connection", "profiles", "catalog", "authority", "validation", "plan", "run", "deck")

__getattr__ = lazy_getattr(__name__, _MODULES)
