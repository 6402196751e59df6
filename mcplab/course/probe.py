"""The probe: the only grading code that runs inside a student's kernel.

A sealed check (see :mod:`mcplab.course.checks`) becomes a probe cell in the sandboxed copy of
the notebook, right after the exercise's test cell::

    import mcplab.course.probe as _probe; _probe.run('<grade_id>', '<plan as JSON>')

:func:`run` calls the student's functions on the plan's inputs and shows their outputs as one
``application/vnd.mcplab.probe+json`` output. It knows no expected value: whatever the student's
code does to this module, its globals or the interpreter only changes the outputs it reports,
which is no more than their functions returning something else. The trusted judge reads the
outputs and decides.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

from .values import decode, encode

__all__ = ["MIME", "run"]

#: The mime type of a probe's output.
MIME = "application/vnd.mcplab.probe+json"


def _namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - the labs always run under IPython
        shell = None
    return shell.user_ns if shell is not None else vars(sys.modules["__main__"])


def _call(ns: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    fn = ns.get(call["fn"])
    if not callable(fn):
        return {"ok": False, "error": "NameError", "message": f"{call['fn']} is not defined"}
    args = [decode(a) for a in call.get("args", [])]
    kwargs = {k: decode(v) for k, v in call.get("kwargs", {}).items()}
    before = copy.deepcopy((args, kwargs))
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the student's exception is the observation
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"ok": False, "error": type(exc).__name__, "message": str(exc)[:300]}
    out = {"ok": True, "value": encode(value)}
    if (args, kwargs) != before:
        out["changedArgs"] = True
    return out


def run(grade_id: str, plan: str) -> None:
    """Call the functions named in ``plan`` (JSON from the trusted side) and display their outputs."""
    from IPython.display import display

    ns = _namespace()
    calls = json.loads(plan)
    results = [_call(ns, call) for call in calls]
    display({MIME: {"probe": grade_id, "results": results},
             "text/plain": f"sealed check {grade_id}: {len(results)} call(s) recorded for grading"}, raw=True)
