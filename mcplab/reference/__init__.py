"""The reference server: a Python MCP server that passes the official conformance scenarios.

Layers, bottom up: ``media`` (fixture bytes), ``sessions`` (bounded per-session bookkeeping),
 ``mrtr`` (input_required rounds with sealed state), ``tasks`` (the tasks extension),
``events`` (SSE resumption), ``resources``, ``prompts``, ``completion`` and ``tools`` (the fixture tables), and ``server`` (the
``mcp`` SDK adapter under uvicorn, both eras on one route).
"""

from . import completion, events, media, mrtr, prompts, resources, server, sessions, tasks, tools
from .completion import *  # noqa: F403
from .events import *  # noqa: F403
from .media import *  # noqa: F403
from .mrtr import *  # noqa: F403
from .prompts import *  # noqa: F403
from .resources import *  # noqa: F403
from .server import *  # noqa: F403
from .sessions import *  # noqa: F403
from .tasks import *  # noqa: F403
from .tools import *  # noqa: F403

__all__ = [name for module in (media, sessions, events, mrtr, tasks, resources, prompts, completion, tools, server) for name in module.__all__]
