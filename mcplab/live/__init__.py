"""Live wire: the recorded suite's cases judged on real traffic (a real client, server and proxy).

Layers: ``capture`` (one exchange over HTTP with timing; SSE events as they arrive), ``cases``
(which cases a live server can be asked, and the live cases built for it), ``judge`` (the
recorded runner on live captures, proxy hops, stream buffering), ``proxy`` (a real reverse proxy
with one fault per mode), ``check`` (era probe plus the direct/via run) and ``report`` (the
redacted HTML conformance matrix).
"""

from . import capture, cases, check, judge, proxy, report
from .capture import *  # noqa: F403
from .cases import *  # noqa: F403
from .check import *  # noqa: F403
from .judge import *  # noqa: F403
from .proxy import *  # noqa: F403
from .report import *  # noqa: F403

__all__ = [name for module in (capture, cases, judge, proxy, check, report) for name in module.__all__]
