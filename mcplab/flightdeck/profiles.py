"""Policy knowledge: what Flight Deck may say about a tool's execution policy, targets, effects and proof.

Design: a server's policy is never invented. :class:`DescriptorProfile` (any server) reads only
what descriptors declare: the effect class in ``_meta["mcplab/effectClass"]`` or, weaker, the
standard annotation hints; allow-listing and approval stay ``None`` ("not known here"). The
:class:`StockroomProfile`, chosen when the server names itself ``mcplab-stockroom``, adds that
server's published rules (allow-list by effect class, approval gate on ``write``, drafts as
targets). It is the only Flight Deck module that knows the stockroom; the gate still decides at
execution time, so a profile's prediction is checked again there.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..evidence import canonical_json
from ..jsonvalue import is_json_integer
from ..stockroom.catalog import ALLOWED_EFFECTS, EFFECT_CLASSES, EFFECT_META_KEY, MAX_ADD_ON_ORDER, TOOL_NAMES, restock_lines
from ..stockroom.gate import APPROVAL_TTL_SECONDS, payload_digest
from ..stockroom.outcome import APPROVAL_KEY, LEGACY_APPROVAL_ERROR, StockroomAPI, ToolOutcome
from ..stockroom.rules import MAX_LINES, TRACE_MAX_BYTES, TRACE_MAX_DEPTH
from ..stockroom.rules import _argument_problems as _server_argument_problems
from ..stockroom.rules import _diff as _gate_diff
from ..stockroom.server import SERVER_NAME

__all__ = ["DescriptorProfile", "StockroomProfile", "profile_for", "digest_of", "UNPROVEN"]

#: The value of every layer no read-only diagnostic can prove (consent, downstream availability, outcome).
UNPROVEN = "unproven"


def digest_of(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


class DescriptorProfile:
    """What any server's descriptors declare; everything else stays unknown (``None``)."""

    name = "descriptor-hints"
    authority = "descriptor_hints"  # declared by the server about itself, not enforced knowledge
    known = False
    #: Whether this profile reads target state at all (a generic server is never sent the stockroom's admin GETs).
    observes_target = False

    def rules(self) -> dict[str, Any]:
        return {"effect_class": f"_meta[{EFFECT_META_KEY!r}] if declared, else annotations.readOnlyHint (a hint)",
                "allow_list": "unknown", "approval": "unknown", "unlisted_tools": "not in the effective catalog"}

    def identity(self) -> dict[str, Any]:
        body = {"profile": self.name, "authority": self.authority, "rules": self.rules()}
        return {**body, "digest": digest_of(body)}

    # per tool ---------------------------------------------------------------------------------
    @staticmethod
    def effect_of(descriptor: dict[str, Any]) -> tuple[str, str]:
        """``(effect_class, source)``: declared ``_meta`` effect class, else the read-only hint, else unknown."""
        meta = descriptor.get("_meta")
        declared = meta.get(EFFECT_META_KEY) if isinstance(meta, dict) else None
        if declared in EFFECT_CLASSES:
            return declared, "descriptor_meta"
        annotations = descriptor.get("annotations")
        hint = annotations.get("readOnlyHint") if isinstance(annotations, dict) else None
        if isinstance(hint, bool):
            return ("read" if hint else "write"), "annotation_hint"
        return "unknown", "none"

    def replay_class(self, descriptor: dict[str, Any], effect: str) -> str:
        annotations = descriptor.get("annotations")
        if effect == "read" or (isinstance(annotations, dict) and annotations.get("idempotentHint") is True):
            return "safe_to_repeat"
        return "not_safe_to_repeat" if effect == "write" else "unknown"

    def tool_policy(self, descriptor: dict[str, Any]) -> dict[str, Any]:
        effect, source = self.effect_of(descriptor)
        return {"effect_class": effect, "effect_source": source, "allow_listed": None, "approval_required": None,
                "replay_class": self.replay_class(descriptor, effect), "target_kind": None, "policy_source": self.authority}

    def unlisted_policy(self, name: str) -> dict[str, Any]:
        """Static policy for a name discovery did not show: not requestable here, whatever the server would do."""
        return {"effect_class": "unknown", "effect_source": "none", "allow_listed": None, "approval_required": None,
                "replay_class": "unknown", "target_kind": None, "policy_source": self.authority, "denied": False}

    def argument_problems(self, name: str, arguments: dict[str, Any]) -> list[str]:
        """Problems the server's published rules find beyond its input schema (none known for a generic server)."""
        return []

    # targets, effects, limits, proof --------------------------------------------------------------
    def target_check(self, name: str, arguments: dict[str, Any], observation: dict[str, Any] | None) -> dict[str, Any]:
        return {"target_scoped": False, "checked": False, "ready": None, "blockers": [], "identity": None}

    def predicted_effects(self, name: str, arguments: dict[str, Any], policy: dict[str, Any], era: str,
                          observation: dict[str, Any] | None) -> dict[str, Any]:
        if policy["effect_class"] == "read" and policy["effect_source"] != "none":
            return {"caller_only_output": True, "state_change": "none declared (read-only by the descriptor)",
                    "source": policy["effect_source"]}
        return {"caller_only_output": None, "state_change": UNPROVEN, "source": "no effect model for this server"}

    def server_limits(self) -> dict[str, Any]:
        return {}

    def postcondition_plan(self, name: str, policy: dict[str, Any]) -> dict[str, Any]:
        if policy["effect_class"] == "read":
            return {"reads": "the call's own result", "proves": "caller-only output received"}
        return {"reads": None, "proves": UNPROVEN, "why": "no authoritative postcondition reader is known for this server"}

    def before_call(self, api: StockroomAPI, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """Authoritative state read just before an execution, when the proof needs a 'before'."""
        return None

    def recheck(self, api: StockroomAPI, name: str, arguments: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any] | None:
        """The postcondition read again for a call an earlier run made (``earlier``: its proof), or None: no reader here."""
        return None

    def proof(self, api: StockroomAPI, name: str, arguments: dict[str, Any], policy: dict[str, Any], outcome: ToolOutcome,
              before: dict[str, Any] | None, observe: Any) -> dict[str, Any]:
        if outcome.kind == "complete" and not outcome.is_error and policy["effect_class"] == "read":
            return {"kind": "caller_only_output", "proven": True, "read_via": "the call's result"}
        return {"kind": "none", "proven": False, "why": "no authoritative postcondition reader is known for this server"}


def _payload(arguments: dict[str, Any]) -> dict[str, Any]:
    lines = sorted(({"sku": ln["sku"], "add_on_order": ln["add_on_order"]} for ln in arguments["lines"]), key=lambda ln: ln["sku"])
    return {"draft_id": arguments["draft_id"], "ledger_version": arguments["ledger_version"], "lines": lines}


def _blocker(code: str, message: str, layer: str = "target") -> dict[str, Any]:
    return {"code": code, "layer": layer, "message": message}


class StockroomProfile(DescriptorProfile):
    """The stockroom's published policy: allow-list by effect class, a person approves every write."""

    name = "mcplab-stockroom"
    authority = "server_profile"
    known = True
    observes_target = True
    _TARGETS = {"commit_reorder": "stockroom_draft_at_ledger_version", "request_approval": "stockroom_draft"}

    def rules(self) -> dict[str, Any]:
        return {"effect_class": f"_meta[{EFFECT_META_KEY!r}]", "allow_list": "by effect class",
                "allowed_effects": sorted(ALLOWED_EFFECTS), "approval_required_effects": ["write"],
                "unlisted_tools": "deny (tool_not_allowed)", "targets": self._TARGETS}

    def tool_policy(self, descriptor: dict[str, Any]) -> dict[str, Any]:
        effect, source = self.effect_of(descriptor)
        declared = source == "descriptor_meta"
        return {"effect_class": effect, "effect_source": source, "allow_listed": declared and effect in ALLOWED_EFFECTS,
                "approval_required": effect == "write", "replay_class": "safe_to_repeat" if effect in ("read", "draft") else
                "not_safe_to_repeat", "target_kind": self._TARGETS.get(descriptor.get("name")), "policy_source": self.authority}

    def unlisted_policy(self, name: str) -> dict[str, Any]:
        return {**super().unlisted_policy(name), "allow_listed": False, "denied": True, "policy_source": self.authority}

    def server_limits(self) -> dict[str, Any]:
        return {"max_lines_per_commit": MAX_LINES, "max_add_on_order": MAX_ADD_ON_ORDER,
                "approval_ttl_seconds": APPROVAL_TTL_SECONDS, "trace_argument_max_depth": TRACE_MAX_DEPTH,
                "trace_argument_max_bytes": TRACE_MAX_BYTES}

    def argument_problems(self, name: str, arguments: dict[str, Any]) -> list[str]:
        return _server_argument_problems(name, arguments) if name in TOOL_NAMES else []

    # the target: a draft at a ledger version ------------------------------------------------------
    def target_check(self, name: str, arguments: dict[str, Any], observation: dict[str, Any] | None) -> dict[str, Any]:
        kind = self._TARGETS.get(name)
        if kind is None:
            return super().target_check(name, arguments, observation)
        out: dict[str, Any] = {"target_scoped": True, "kind": kind, "checked": False, "ready": None, "blockers": [], "identity": None}
        if observation is None:
            out["why"] = "no read-only observation of drafts here (admin routes off?): target readiness unproven"
            return out
        draft_id = arguments.get("draft_id")
        draft = next((d for d in observation["drafts"] if d.get("draft_id") == draft_id), None)
        current = observation["ledger_version"]
        out["checked"] = True
        out["identity"] = {"kind": kind, "draft_id": draft_id, "draft_status": draft and draft.get("status"),
                           "ledger_version": current}
        blockers = out["blockers"]
        if draft is None:
            blockers.append(_blocker("target_missing", f"no draft {draft_id} in the stockroom (drafts are cleared by a reset)"))
        elif name == "commit_reorder":
            if draft.get("status") != "open":
                blockers.append(_blocker("target_closed", f"draft {draft_id} was already committed"))
            if arguments["ledger_version"] != current:
                blockers.append(_blocker("stale_ledger_version",
                                         f"ledger_version {arguments['ledger_version']} is stale: the ledger is at v{current}"))
            payload = _payload(arguments)
            drafted = sorted(draft.get("lines", []), key=lambda ln: ln["sku"])
            if payload["lines"] != drafted or draft.get("ledger_version") != payload["ledger_version"]:
                blockers.append(_blocker("payload_drift", f"the lines or version differ from draft {draft_id}; commit exactly the draft"))
            out["identity"]["payload_digest"] = payload_digest(payload)
        out["ready"] = not blockers
        return out

    def predicted_effects(self, name: str, arguments: dict[str, Any], policy: dict[str, Any], era: str,
                          observation: dict[str, Any] | None) -> dict[str, Any]:
        trace = {"tool": name, "era": era, "decision": "allowed"}
        if name in ("read_stock", "request_approval"):
            return {"caller_only_output": True, "ledger_change": None, "trace_records": [trace]}
        if name == "draft_reorder":
            out: dict[str, Any] = {"caller_only_output": False, "ledger_change": None, "trace_records": [trace]}
            if observation is not None:
                lines = restock_lines(observation["items"])
                reuse = next((d["draft_id"] for d in observation["drafts"] if d.get("status") == "open"
                              and d.get("ledger_version") == observation["ledger_version"] and d.get("lines") == lines), None)
                out["draft"] = {"lines": lines, "reuses_open_draft": reuse, "creates_new_draft": bool(lines) and reuse is None}
            return out
        if name != "commit_reorder":
            return super().predicted_effects(name, arguments, policy, era, observation)
        records = [{"tool": name, "era": era, "decision": "asked"}]
        if era == "legacy":
            records.append({"tool": "approval", "era": "local", "decision": "accepted | declined"})
        records.append({"tool": name, "era": era, "decision": "approved | rejected"})
        out = {"caller_only_output": False, "trace_records": records, "approval": self._approval_shape(era)}
        if observation is not None:
            known = {item["sku"] for item in observation["items"]}
            lines = [ln for ln in _payload(arguments)["lines"] if ln["sku"] in known]
            out["ledger_change"] = {"if": "approved", "ledger_version_before": observation["ledger_version"],
                                    "ledger_version_after": observation["ledger_version"] + 1,
                                    "on_order_diff": _gate_diff(observation["items"], lines)}
        return out

    @staticmethod
    def _approval_shape(era: str) -> dict[str, Any]:
        if era == "modern":
            return {"kind": "elicitation", "method": "elicitation/create", "mode": "form", "input_request_key": APPROVAL_KEY,
                    "answered_by": "the user, in the client's form; the retry carries inputResponses and the sealed requestState"}
        return {"kind": "out_of_band", "error": LEGACY_APPROVAL_ERROR, "answered_by": "a person in the stockroom (circuit "
                "panel or 'mcplab stockroom approve|reject', with the approver's own credential); the retry carries approval_id"}

    # proof -------------------------------------------------------------------------------------------
    def postcondition_plan(self, name: str, policy: dict[str, Any]) -> dict[str, Any]:
        if name == "commit_reorder":
            return {"reads": "read_stock", "proves": "ledger_version = requested + 1 and on_order raised by each line"}
        if name == "draft_reorder":
            return {"reads": "the drafts observation", "proves": "the returned draft exists and is open"}
        return super().postcondition_plan(name, policy)

    def before_call(self, api: StockroomAPI, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        return api.read_stock() if name == "commit_reorder" else None

    def proof(self, api: StockroomAPI, name: str, arguments: dict[str, Any], policy: dict[str, Any], outcome: ToolOutcome,
              before: dict[str, Any] | None, observe: Any) -> dict[str, Any]:
        if name == "commit_reorder":
            return self._ledger_proof(api, arguments, before or {})
        if name == "draft_reorder" and outcome.kind == "complete" and not outcome.is_error:
            draft_id = (outcome.structured or {}).get("draft_id")
            observation = observe()
            if draft_id is None:
                return {"kind": "caller_only_output", "proven": True, "read_via": "the call's result", "draft_id": None}
            if observation is None:
                return {"kind": "draft", "proven": False, "draft_id": draft_id, "why": "drafts cannot be observed here"}
            draft = next((d for d in observation["drafts"] if d.get("draft_id") == draft_id), None)
            return {"kind": "draft", "read_via": "drafts observation", "draft_id": draft_id,
                    "draft_status": draft and draft.get("status"), "proven": bool(draft and draft.get("status") == "open")}
        return super().proof(api, name, arguments, policy, outcome, before, observe)

    def recheck(self, api: StockroomAPI, name: str, arguments: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any] | None:
        expected = earlier.get("expected")
        if name != "commit_reorder" or not isinstance(expected, dict) or not isinstance(earlier.get("skus"), list):
            return super().recheck(api, name, arguments, earlier)
        stock = api.read_stock()
        after = {item["sku"]: item["on_order"] for item in stock.get("items", [])}
        observed = [after.get(sku) for sku in earlier["skus"]]
        version = stock.get("ledger_version")
        return {"kind": "ledger", "read_via": "read_stock", "rechecked": True, "ledger_version": version, "skus": earlier["skus"],
                "on_order": observed, "expected": expected,
                "proven": is_json_integer(version) and version == expected.get("ledger_version") and observed == expected.get("on_order")}

    @staticmethod
    def _ledger_proof(api: StockroomAPI, arguments: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
        """Read the ledger with ``read_stock`` (the authoritative tool) and compare with what an applied commit means."""
        stock = api.read_stock()
        after = {item["sku"]: item["on_order"] for item in stock.get("items", [])}
        start = {item["sku"]: item["on_order"] for item in before.get("items", [])}
        lines = arguments["lines"]
        expected_version = arguments["ledger_version"] + 1
        expected = [start.get(ln["sku"], 0) + ln["add_on_order"] for ln in lines]
        observed = [after.get(ln["sku"]) for ln in lines]
        version = stock.get("ledger_version")
        return {"kind": "ledger", "read_via": "read_stock", "ledger_version": version,
                "skus": [ln["sku"] for ln in lines], "on_order": observed,
                "expected": {"ledger_version": expected_version, "on_order": expected},
                "ledger_version_before": before.get("ledger_version"),
                "unchanged": version == before.get("ledger_version") and observed == [start.get(ln["sku"]) for ln in lines],
                "proven": is_json_integer(version) and version == expected_version and observed == expected}


def profile_for(server_info: dict[str, Any] | None) -> DescriptorProfile:
    """The stockroom's profile for a server that names itself ``mcplab-stockroom``; descriptor hints otherwise."""
    if isinstance(server_info, dict) and server_info.get("name") == SERVER_NAME:
        return StockroomProfile()
    return DescriptorProfile()
