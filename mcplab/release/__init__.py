"""The release gate: protocol conformance is necessary, not sufficient.

Design: a candidate is promoted only when transcript, SDK-diff, proxy and health evidence all
pass AND a signed rollback target is proven first; a failing candidate rolls back only to the
first proven target offered (a regressed stream also needs a target whose signed health observed
streams), otherwise traffic halts. Readiness is the boolean ``True``, never truthiness.

Modules: ``health`` (the health window), ``rollback`` (signed rollback evidence), ``gate`` (the decision).
"""

from __future__ import annotations

from . import gate, health, rollback
from .gate import *  # noqa: F403
from .health import *  # noqa: F403
from .health import _nearest_rank  # noqa: F401  (mcplab.plots draws the same percentile)
from .rollback import *  # noqa: F403

__all__ = [name for module in (health, rollback, gate) for name in module.__all__]
