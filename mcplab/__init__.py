"""mcplab: MCP conformance engineering for 2026-07-28 (stateless) versus 2025-11-25 (legacy).

The public API is the union of the modules' ``__all__`` lists below; ``from mcplab import *``
gives the lab calls (``validate_result``, ``select_era``, ``compare_sdk_view``, ...).
"""

from . import (
    cases,
    conformance,
    era,
    errors,
    evidence,
    headers,
    jsonvalue,
    plots,
    proxy_evidence,
    redaction,
    release,
    requests,
    responses,
    results,
    sdkview,
    sse,
    transcript,
    versions,
)
from .cases import *  # noqa: F403
from .conformance import *  # noqa: F403
from .era import *  # noqa: F403
from .errors import *  # noqa: F403
from .evidence import *  # noqa: F403
from .headers import *  # noqa: F403
from .jsonvalue import *  # noqa: F403
from .plots import *  # noqa: F403
from .proxy_evidence import *  # noqa: F403
from .redaction import *  # noqa: F403
from .release import *  # noqa: F403
from .requests import *  # noqa: F403
from .responses import *  # noqa: F403
from .results import *  # noqa: F403
from .sdkview import *  # noqa: F403
from .sse import *  # noqa: F403
from .transcript import *  # noqa: F403
from .versions import *  # noqa: F403

__version__ = "0.1.0"

__all__ = [
    name
    for module in (
        versions, errors, cases, jsonvalue, headers, requests, results, responses, era,
        sdkview, sse, proxy_evidence, redaction, evidence, release, transcript, conformance, plots,
    )
    for name in module.__all__
]
