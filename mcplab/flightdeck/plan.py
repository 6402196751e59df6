"""An invocation plan: the caller's explicit calls, in the caller's order, each with what would stop it.

Design: compiling is preflight (validation and preview of every step, nothing invoked), so a plan
carries ``execution_authorized: false`` and ``execution_started: false``. Each step records its
blockers, effect class, replay class, target identity, validation fingerprint, stop conditions and
the postcondition a run must read. ``plan_digest`` covers the whole plan, so a run can tell the
plan it was given from an edited one. At most :data:`MAX_PLAN_STEPS` steps. A plan holds the
caller's exact arguments (a run needs them), so treat a plan file like those arguments; run
records and server URLs in outputs are redacted.
"""

from __future__ import annotations

from typing import Any

from .catalog import EffectiveCatalog
from .connection import FlightDeckError
from .profiles import digest_of
from .validation import bounds_blockers

__all__ = ["MAX_PLAN_STEPS", "PLAN_KIND", "STOP_REASONS", "compile_plan", "check_plan", "parse_calls"]

MAX_PLAN_STEPS = 20
PLAN_KIND = "mcplab.flightdeck.plan/v1"
#: Every reason a run stops at a step, as stable snake_case codes.
STOP_REASONS = ("catalog_changed", "step_blocked", "target_missing", "target_changed", "validation_changed",
                "approval_missing", "approval_declined", "refused", "postcondition_unproven")


def parse_calls(calls: Any, where: str = "calls") -> list[dict[str, Any]]:
    """``[{tool, arguments}]`` from a list (or ``{"calls": [...]}``) of ``{tool|name, arguments}``; raises FlightDeckError."""
    if isinstance(calls, dict) and "calls" in calls:
        calls, where = calls["calls"], f"{where}.calls"
    if not isinstance(calls, list) or not calls:
        raise FlightDeckError(f"{where}: expected a non-empty list of {{tool, arguments}} objects")
    if len(calls) > MAX_PLAN_STEPS:
        raise FlightDeckError(f"{where}: {len(calls)} calls; a plan holds at most {MAX_PLAN_STEPS}")
    parsed = []
    for index, call in enumerate(calls):
        name = call.get("tool", call.get("name")) if isinstance(call, dict) else None
        if not isinstance(name, str) or not name:
            raise FlightDeckError(f"{where}[{index}]: expected an object with a string 'tool' (or 'name')")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise FlightDeckError(f"{where}[{index}].arguments: expected a JSON object, got {type(arguments).__name__}")
        bounds, _size = bounds_blockers(arguments)
        if bounds:
            raise FlightDeckError(f"{where}[{index}].arguments: {bounds[0]['message']}")
        parsed.append({"tool": name, "arguments": arguments})
    return parsed


def _stop_conditions(validation: dict[str, Any]) -> list[str]:
    policy = validation["policy"]
    stops = ["catalog_changed", "validation_changed", "refused"]
    if validation["static_request_blocked"]:
        stops.insert(0, "step_blocked")
    if policy.get("target_kind"):
        stops += ["target_missing", "target_changed"]
    if policy.get("approval_required") is not False:
        stops += ["approval_missing", "approval_declined"]
    stops.append("postcondition_unproven")
    return [code for code in STOP_REASONS if code in stops]


def compile_plan(catalog: EffectiveCatalog, calls: list[dict[str, Any]], previews: list[dict[str, Any]]) -> dict[str, Any]:
    """The plan for ``calls`` given each call's preview (made against ``catalog``)."""
    steps = []
    for index, (call, preview) in enumerate(zip(calls, previews)):
        policy = preview["policy"]
        steps.append({
            "index": index, "tool": call["tool"], "arguments": call["arguments"], "arguments_digest": preview["arguments_digest"],
            "blockers": preview["blockers"], "static_request_blocked": preview["static_request_blocked"],
            "effect_class": policy["effect_class"], "replay_class": policy["replay_class"],
            "approval_required": policy["approval_required"], "target_identity": preview["target"].get("identity"),
            "validation_fingerprint": preview["validation_fingerprint"], "stop_conditions": _stop_conditions(preview),
            "predicted_effects": preview["preview"]["effects"], "postcondition": preview["preview"]["postcondition"],
        })
    plan = {"kind": PLAN_KIND, "server": catalog.server(), "era": catalog.era, "catalog_identity": catalog.identity,
            "policy_identity": catalog.profile.identity(), "steps": steps,
            "blocked_steps": [s["index"] for s in steps if s["static_request_blocked"]],
            "execution_authorized": False, "execution_started": False}
    plan["plan_digest"] = digest_of(plan)
    return plan


def check_plan(plan: Any) -> dict[str, Any]:
    """``plan`` if it is a compiled plan whose digest still matches; else FlightDeckError naming the problem."""
    if not isinstance(plan, dict) or plan.get("kind") != PLAN_KIND:
        raise FlightDeckError(f"plan: expected a compiled plan (kind {PLAN_KIND!r}); compile one with compile_invocation_plan")
    body = {k: v for k, v in plan.items() if k != "plan_digest"}
    try:
        digest = digest_of(body)
    except Exception as exc:  # noqa: BLE001 - anything that is not JSON
        raise FlightDeckError(f"plan: not JSON ({exc})") from None
    if digest != plan.get("plan_digest"):
        raise FlightDeckError("plan: plan_digest does not match its content (edited after compiling?); compile it again")
    _check_shape(plan)
    return plan


#: What a run reads from each step, with the type it must have (a re-digested, hand-edited plan is refused before any call).
_STEP_FIELDS: dict[str, type | tuple[type, ...]] = {
    "tool": str, "arguments": dict, "static_request_blocked": bool, "blockers": list, "validation_fingerprint": str,
    "target_identity": (dict, type(None))}


def _check_shape(plan: dict[str, Any]) -> None:
    """The fields a run relies on, with their types: every problem is a FlightDeckError naming the field."""
    for key in ("catalog_identity", "era"):
        if not isinstance(plan.get(key), str):
            raise FlightDeckError(f"plan.{key}: expected a string; compile the plan again")
    steps = plan.get("steps")
    if not isinstance(steps, list) or not steps or len(steps) > MAX_PLAN_STEPS:
        raise FlightDeckError(f"plan.steps: expected a list of 1 to {MAX_PLAN_STEPS} steps")
    for position, step in enumerate(steps):
        if not isinstance(step, dict) or step.get("index") != position or isinstance(step.get("index"), bool):
            raise FlightDeckError(f"plan.steps[{position}]: expected a step object with index {position} (steps run in the caller's order)")
        for key, kind in _STEP_FIELDS.items():
            if not isinstance(step.get(key), kind):
                raise FlightDeckError(f"plan.steps[{position}].{key}: missing or of the wrong type; compile the plan again")
