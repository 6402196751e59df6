"""Authority layers of one capability, kept apart: visibility, policy knowledge, target readiness, the unproven rest.

Design: each layer says what proved it (``source``) or stays ``unproven``. Runtime visibility is
proven by discovery; policy knowledge is as strong as its profile (a server profile, or mere
descriptor hints); target readiness only by a read-only observation of the exact target; consent,
downstream availability and outcome are never proven by preflight, only by the approver's answer
and the postcondition read after a real call. ``proven: false`` means "not proven here", never
"denied": denial evidence is only an explicit static blocker (listed in ``denial_evidence``) or an
execution-time authority error.
"""

from __future__ import annotations

from typing import Any

from .catalog import EffectiveCatalog
from .profiles import UNPROVEN

__all__ = ["authority_layers", "authority_summary", "FALSE_PROOF_MEANS"]

FALSE_PROOF_MEANS = ("a false proof flag means 'not proven here', never 'denied'; only an explicit static blocker "
                     "or an execution-time authority error is denial evidence")


def authority_layers(catalog: EffectiveCatalog, name: str, validation: dict[str, Any] | None = None) -> dict[str, Any]:
    """The layers for ``name``; ``validation`` (of concrete arguments) adds the exact target's readiness."""
    visible = name in catalog.tools
    policy = catalog.policy_of(name)
    known = catalog.profile.known
    target = (validation or {}).get("target") or {}
    if not policy.get("target_kind"):
        readiness = {"target_scoped": False, "proven": None, "status": "not target-scoped" if known else UNPROVEN,
                     "source": catalog.profile.authority}
    elif not target.get("checked"):
        unreadable = [b["message"] for b in (validation or {}).get("blockers", []) if b["layer"] in ("bounds", "schema")]
        why = (f"the arguments do not pass validation, so the target was not read: {unreadable[0]}" if unreadable
               else target.get("why") or "give arguments (the exact target) to check it")
        readiness = {"target_scoped": True, "kind": policy["target_kind"], "proven": False, "status": UNPROVEN, "why": why}
    else:
        readiness = {"target_scoped": True, "kind": policy["target_kind"], "proven": bool(target["ready"]),
                     "status": "ready" if target["ready"] else "blocked", "identity": target["identity"],
                     "source": "read-only target observation"}
    denial = [b for b in (validation or {}).get("blockers", []) if b["layer"] in ("catalog", "policy")] if validation else (
        [] if visible and not policy.get("denied") else
        [{"code": "not_in_catalog" if not visible else "denied_by_policy", "layer": "catalog" if not visible else "policy"}])
    return {
        "tool": name,
        "catalog_identity": catalog.identity,
        "runtime_visibility": {"visible": visible, "proven": True, "source": f"tools/list ({catalog.era})",
                               "means": "the tool can be requested by this caller, not that it may execute"},
        "policy_knowledge": {"known": known, "source": policy["policy_source"], "profile": catalog.profile.name,
                             "effect_class": policy["effect_class"], "effect_source": policy["effect_source"],
                             "allow_listed": policy["allow_listed"], "approval_required": policy["approval_required"],
                             "denied": bool(policy.get("denied"))},
        "target_readiness": readiness,
        "consent": {"proven": False, "status": UNPROVEN, "proven_by": "the approver's answer at execution time"
                    if policy.get("approval_required") else "nothing preflight can read"},
        "downstream_availability": {"proven": False, "status": UNPROVEN, "proven_by": "the real call's answer"},
        "outcome": {"proven": False, "status": UNPROVEN, "proven_by": catalog.profile.postcondition_plan(name, policy)},
        "denial_evidence": denial,
        "false_proof_means": FALSE_PROOF_MEANS,
    }


def authority_summary(layers: dict[str, Any]) -> dict[str, Any]:
    """One line per layer, for :func:`inspect_tool`."""
    return {"visible": layers["runtime_visibility"]["visible"], "policy_known": layers["policy_knowledge"]["known"],
            "denied": layers["policy_knowledge"]["denied"], "approval_required": layers["policy_knowledge"]["approval_required"],
            "target_readiness": layers["target_readiness"]["status"], "consent": UNPROVEN,
            "downstream_availability": UNPROVEN, "outcome": UNPROVEN}
