"""The stockroom circuit: a real MCP server whose only write tool stops at an approval gate.

Layers, bottom up: ``catalog`` (seed data, tools, allow-list), ``ledger`` (SQLite ledger and
hash-chained trace), ``gate`` (sealed approval state), ``rules`` (the in-process ``Stockroom``),
``server`` (the MCP adapter under uvicorn) and ``client`` (``StockroomClient`` over HTTP).
"""

from . import catalog, client, gate, ledger, outcome, rules, server
from .catalog import *  # noqa: F403
from .client import *  # noqa: F403
from .gate import *  # noqa: F403
from .ledger import *  # noqa: F403
from .outcome import *  # noqa: F403
from .rules import *  # noqa: F403
from .server import *  # noqa: F403

__all__ = [name for module in (catalog, ledger, gate, outcome, rules, server, client) for name in module.__all__]
