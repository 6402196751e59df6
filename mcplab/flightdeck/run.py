"""Running a compiled plan: refresh, invoke the exact capability under its own policy, then read the proof.

Design: before each step the run rediscovers the catalog and re-validates the step against the
target as it is now; it stops (a stable code from :data:`~mcplab.flightdeck.plan.STOP_REASONS`)
instead of continuing when anything differs from the compiled step. The call itself goes through
the server's own gate: an approval question is handed to the caller's ``approver`` (it plays the
user answering the elicitation form in 2026-07-28, the person answering out of band in 2025-11-25)
and Flight Deck never answers one by itself. After the call the profile reads the authoritative
postcondition (``read_stock`` for ``commit_reorder``) and stores it as the step's ``proof``. A run
record given back as ``resume`` continues from the first step whose proof is not ``proven``; a step it
already invoked without proof and that is not safe to repeat is re-read, never called twice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..redaction import redact
from ..stockroom.client import StockroomConnectionError
from ..stockroom.rules import ApprovalError
from .catalog import build_catalog, without_url_secrets
from .connection import Connection, FlightDeckError
from .plan import check_plan
from .validation import once, validate_call

__all__ = ["RUN_KIND", "Approver", "run_plan", "approval_question"]

RUN_KIND = "mcplab.flightdeck.run/v1"
#: ``approver(question) -> "accept" | "decline" | "cancel" | bool | None`` (None: no answer, the step stops).
Approver = Callable[[dict[str, Any]], Any]
_MAX_APPROVAL_ROUNDS = 3
_ACTIONS = {True: "accept", False: "decline", "accept": "accept", "approve": "accept", "decline": "decline",
            "reject": "decline", "cancel": "cancel"}
_TARGET_GONE = {"target_missing", "target_closed"}
_TARGET_MOVED = {"stale_ledger_version", "payload_drift"}


def approval_question(outcome: Any) -> dict[str, Any]:
    """What the approver is asked, from a pending outcome of either era."""
    details = outcome.approval_details
    question = {"tool": outcome.tool, "era": outcome.era, "message": details["message"], "payload": details["payload"]}
    if outcome.kind == "input_required":
        params = next(iter((outcome.input_requests or {}).values()), {}).get("params", {})
        return {**question, "kind": "elicitation", "requested_schema": params.get("requestedSchema")}
    return {**question, "kind": "out_of_band", "approval_id": (outcome.structured or {}).get("approval_id")}


def _summary(outcome: Any) -> dict[str, Any]:
    """The outcome in snake_case, sealed tokens left out (the run record is for reading, not replaying)."""
    out = {"kind": outcome.kind, "trace_seq": outcome.trace_seq}
    if outcome.kind == "error":
        return redact({**out, "error": outcome.error})
    if outcome.kind == "input_required":
        return redact({**out, "input_requests": outcome.input_requests})
    return redact({**out, "structured": outcome.structured, "is_error": outcome.is_error})


def _action(answer: Any) -> str | None:
    if answer is None:
        return None
    key = answer.lower() if isinstance(answer, str) else answer
    if isinstance(key, (bool, str)) and key in _ACTIONS:
        return _ACTIONS[key]
    raise FlightDeckError(f"approver answered {answer!r}; expected 'accept', 'decline', 'cancel', True, False or None")


def _prior(plan: dict[str, Any], resume: Any) -> dict[int, dict[str, Any]]:
    if resume is None:
        return {}
    if not isinstance(resume, dict) or resume.get("kind") != RUN_KIND or not isinstance(resume.get("steps"), list):
        raise FlightDeckError(f"resume: expected a run record (kind {RUN_KIND!r}) from an earlier run_plan")
    if resume.get("plan_digest") != plan["plan_digest"]:
        raise FlightDeckError("resume: this run record belongs to a different plan (plan_digest differs)")
    return {rec["index"]: rec for rec in resume["steps"] if isinstance(rec, dict) and isinstance(rec.get("index"), int)
            and not isinstance(rec.get("index"), bool)}


def _proven(record: dict[str, Any] | None) -> bool:
    proof = (record or {}).get("proof")
    return bool(record and record.get("status") in ("proven", "proven_earlier") and isinstance(proof, dict) and proof.get("proven") is True)


def _invoked_unproven(earlier: dict[str, Any] | None, replay_class: Any) -> bool:
    """An earlier run invoked the step and its effect was not proven, and the current policy does not call it safe to repeat."""
    return bool(earlier and earlier.get("invoked") is True and earlier.get("stop_reason") == "postcondition_unproven"
                and replay_class != "safe_to_repeat")


def _recheck_step(connection: Connection, profile: Any, step: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
    """Resume of an invoked, unproven, not-repeatable step: read its postcondition again; never call it twice."""
    record: dict[str, Any] = {"index": step["index"], "tool": step["tool"], "status": "stopped", "invoked": False,
                              "invoked_earlier": True}
    earlier_proof = earlier.get("proof") if isinstance(earlier.get("proof"), dict) else {}
    proof = profile.recheck(connection.api, step["tool"], step["arguments"], earlier_proof)
    if proof is not None and proof.get("proven"):
        return {**record, "status": "proven", "proof": proof}
    return {**record, "stop_reason": "postcondition_unproven", "proof": proof,
            "why": "invoked by an earlier run and not safe to repeat, so not invoked again; its effect is still unproven: "
                   "check it at the server, then compile a new plan"}


def run_plan(connection: Connection, plan: Any, *, approver: Approver | None = None, resume: Any = None) -> dict[str, Any]:
    """Run ``plan`` step by step (see the module docstring); returns the run record with each step's proof."""
    plan = check_plan(plan)
    prior = _prior(plan, resume)
    start = next((step["index"] for step in plan["steps"] if not _proven(prior.get(step["index"]))), len(plan["steps"]))
    records: list[dict[str, Any]] = []
    stopped: dict[str, Any] | None = None
    for step in plan["steps"]:
        if step["index"] < start:
            records.append({**prior[step["index"]], "status": "proven_earlier"})
        elif stopped is not None:
            records.append({"index": step["index"], "tool": step["tool"], "status": "not_reached"})
        else:
            record = _run_step(connection, plan, step, approver, prior.get(step["index"]))
            records.append(record)
            if record["status"] != "proven":
                stopped = record
    unproven = [r["index"] for r in records if r["status"] not in ("proven", "proven_earlier")]
    return {"kind": RUN_KIND, "plan_digest": plan["plan_digest"], "catalog_identity": plan["catalog_identity"], "era": plan["era"],
            "resumed_from": start if prior else None, "steps": records, "completed": not unproven,
            "stopped_at": stopped["index"] if stopped else None, "stop_reason": stopped["stop_reason"] if stopped else None,
            "resume_from": unproven[0] if unproven else None,
            "execution_started": any(r.get("invoked") for r in records), "execution_authorized_by": "each step's own server policy"}


def _run_step(connection: Connection, plan: dict[str, Any], step: dict[str, Any], approver: Approver | None,
              earlier: dict[str, Any] | None) -> dict[str, Any]:
    record: dict[str, Any] = {"index": step["index"], "tool": step["tool"], "status": "stopped", "invoked": False}

    def stop(reason: str, **detail: Any) -> dict[str, Any]:
        return {**record, "stop_reason": reason, **detail}

    catalog = build_catalog(connection.discover())
    if catalog.identity != plan["catalog_identity"]:
        return stop("catalog_changed", expected=plan["catalog_identity"], current=catalog.identity)
    if earlier is not None and _invoked_unproven(earlier, catalog.policy_of(step["tool"])["replay_class"]):
        return _recheck_step(connection, catalog.profile, step, earlier)
    if step["static_request_blocked"]:
        return stop("step_blocked", blockers=step["blockers"])
    name, arguments = step["tool"], step["arguments"]
    validation = validate_call(catalog, name, arguments, catalog_identity=plan["catalog_identity"], observe=once(connection.observe_target))
    codes = {b["code"] for b in validation["blockers"]}
    if codes:
        reason = "target_missing" if codes & _TARGET_GONE else "target_changed" if codes & _TARGET_MOVED else "validation_changed"
        return stop(reason, blockers=validation["blockers"])
    if validation["validation_fingerprint"] != step["validation_fingerprint"]:
        moved = validation["target"].get("identity") != step["target_identity"]
        return stop("target_changed" if moved else "validation_changed", target_identity=validation["target"].get("identity"))

    api, profile, policy = connection.api, catalog.profile, validation["policy"]
    before = profile.before_call(api, name, arguments)
    outcome = api.call_tool(name, arguments)
    record["invoked"] = True
    approvals: list[dict[str, Any]] = []
    for _round in range(_MAX_APPROVAL_ROUNDS):
        if not outcome.asks_approval:
            break
        question = approval_question(outcome)
        action = _action(approver(question)) if approver is not None else None
        approvals.append({"question": redact(question), "answer": action})
        if action is None:
            return stop("approval_missing", approvals=approvals, outcome=_summary(outcome))
        try:
            outcome = api.answer(outcome, action)
        except (StockroomConnectionError, ApprovalError) as exc:  # the out-of-band route is off or refused the answer
            return stop("approval_missing", approvals=approvals, error={"message": without_url_secrets(str(exc), connection.where)[:300]})
    record["approvals"] = approvals
    record["outcome"] = _summary(outcome)
    if outcome.asks_approval:
        return stop("approval_missing")
    if outcome.kind == "error":
        return stop("refused", error=redact(outcome.error))
    record["proof"] = profile.proof(api, name, arguments, policy, outcome, before, connection.observe_target)
    if any(a["answer"] != "accept" for a in approvals):
        return stop("approval_declined")
    if not record["proof"].get("proven"):
        return stop("postcondition_unproven")
    return {**record, "status": "proven"}
