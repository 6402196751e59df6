"""Pins of the stockroom rules: every refusal's JSON-RPC code and stable ``data.error``, the approval question,
the 2025-11-25 out-of-band path and the trace record each call leaves. Messages are checked by their leading words."""

from __future__ import annotations

import hashlib
import json

import pytest

from mcplab.evidence import canonical_json
from mcplab.stockroom import ApprovalError, Stockroom
from mcplab.stockroom.gate import open_state, payload_digest, seal_claims
from mcplab.stockroom.rules import MAX_LINES, REQUIRED_CAPABILITIES, TRACE_MAX_BYTES, TRACE_MAX_DEPTH

RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}
ACCEPT = {"approval": {"action": "accept"}}


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def room(clock):
    stockroom = Stockroom(now=clock)
    stockroom.reset()
    yield stockroom
    stockroom.close()


@pytest.fixture
def legacy(clock):
    stockroom = Stockroom(era="legacy", now=clock)
    stockroom.reset()
    yield stockroom
    stockroom.close()


def refused(outcome, error: str, start: str, code: int = -32602) -> dict:
    assert outcome.kind == "error", outcome
    assert outcome.error["code"] == code
    assert outcome.error["data"]["error"] == error, outcome.error
    assert outcome.error["message"].startswith(start), outcome.error["message"]
    return outcome.error["data"]


def last(room) -> dict:
    return room.trace()[-1]


def ask(room):
    room.draft_reorder()
    outcome = room.call_tool("commit_reorder", dict(RESTOCK))
    assert outcome.kind == "input_required", outcome.error
    return outcome


def retry(room, pending, responses=ACCEPT, state=None, arguments=None, **kwargs):
    return room.call_tool("commit_reorder", arguments or dict(RESTOCK), input_responses=responses,
                          request_state=pending.request_state if state is None else state, **kwargs)


# --- constructor and era -------------------------------------------------------------------------

def test_constructor_and_call_refuse_an_unknown_era():
    with pytest.raises(ValueError, match=r"^era must be one of \('modern', 'legacy'\), got 'future'$"):
        Stockroom(era="future")
    room = Stockroom()
    with pytest.raises(ValueError, match=r"^era must be one of \('modern', 'legacy'\), got 'x'$"):
        room.call_tool("read_stock", era="x")
    assert room.era == "modern"
    assert room.client_capabilities == {"elicitation": {"form": {}}}
    assert Stockroom(client_capabilities={}).client_capabilities == {}
    assert REQUIRED_CAPABILITIES == {"elicitation": {"form": {}}}
    room.close()


def test_reset_records_itself(room):
    record = last(room)
    assert (record["era"], record["tool"], record["decision"], record["arguments"]) == ("local", "reset", "reset", {})
    assert record["detail"] == {"ledger_version": 1}
    snapshot = room.reset()
    assert snapshot == room.snapshot()
    assert room.verify() == []


# --- allow-list and arguments ---------------------------------------------------------------------

def test_a_tool_off_the_allow_list(room):
    data = refused(room.call_tool("delete_item", {}), "tool_not_allowed", "tool 'delete_item' is not on the allow-list")
    assert data["tool"] == "delete_item"
    assert last(room)["decision"] == "denied"
    refused(room.call_tool(5, {}), "tool_not_allowed", "tool '5' is not on the allow-list")
    long_name = "x" * 300
    assert refused(room.call_tool(long_name), "tool_not_allowed", f"tool {'x' * 80!r} is not")
    assert last(room)["tool"] == "x" * 200


def test_arguments_default_to_an_empty_object(room):
    outcome = room.call_tool("read_stock")
    assert outcome.kind == "complete" and outcome.structured["ledger_version"] == 1
    assert last(room)["arguments"] == {} and last(room)["decision"] == "allowed"
    assert last(room)["detail"] == {"effect": "read"}
    assert outcome.trace_seq == last(room)["seq"]


@pytest.mark.parametrize("name, arguments, problems", [
    ("read_stock", [], ["arguments must be an object, got list"]),
    ("read_stock", {"x": 1, "y" * 50: 2}, ["unexpected argument 'x'", f"unexpected argument {'y' * 40!r}"]),
    ("draft_reorder", {"draft_id": "DR-0001"}, ["unexpected argument 'draft_id'"]),
    ("request_approval", {}, ["draft_id must be a draft id string such as 'DR-0001'"]),
    ("request_approval", {"draft_id": "DR-001"}, ["draft_id must be a draft id string such as 'DR-0001'"]),
    ("request_approval", {"draft_id": "DR-0001x"}, ["draft_id must be a draft id string such as 'DR-0001'"]),
    ("request_approval", {"draft_id": 1}, ["draft_id must be a draft id string such as 'DR-0001'"]),
    ("commit_reorder", {**RESTOCK, "ledger_version": 0}, ["ledger_version must be an integer >= 1"]),
    ("commit_reorder", {**RESTOCK, "ledger_version": True}, ["ledger_version must be an integer >= 1"]),
    ("commit_reorder", {**RESTOCK, "ledger_version": "1"}, ["ledger_version must be an integer >= 1"]),
    ("commit_reorder", {**RESTOCK, "lines": []}, ["lines must be a non-empty array of {sku, add_on_order}"]),
    ("commit_reorder", {**RESTOCK, "lines": {}}, ["lines must be a non-empty array of {sku, add_on_order}"]),
    ("commit_reorder", {**RESTOCK, "lines": [{"sku": f"S{i}", "add_on_order": 1} for i in range(MAX_LINES + 1)]},
     [f"lines may hold at most {MAX_LINES} entries, got {MAX_LINES + 1}"]),
    ("commit_reorder", {**RESTOCK, "lines": ["x", {"sku": "A"}, {"sku": "A", "add_on_order": 1, "x": 1}]},
     ["lines[0] must be exactly {sku, add_on_order}", "lines[1] must be exactly {sku, add_on_order}",
      "lines[2] must be exactly {sku, add_on_order}"]),
    ("commit_reorder", {**RESTOCK, "lines": [{"sku": 1, "add_on_order": 1}, {"sku": "A", "add_on_order": 1},
                                             {"sku": "A", "add_on_order": 2}]},
     ["lines[0].sku must be a string", "lines[2].sku 'A' appears twice"]),
    ("commit_reorder", {**RESTOCK, "approval_id": "AP-0123"},
     ["approval_id must be the id the server gave, such as 'AP-0123456789ab'"]),
    ("commit_reorder", {**RESTOCK, "approval_id": 5},
     ["approval_id must be the id the server gave, such as 'AP-0123456789ab'"]),
])
def test_argument_problems(room, name, arguments, problems):
    data = refused(room.call_tool(name, arguments), "invalid_arguments", f"{name}: {problems[0]}")
    assert data["problems"] == problems
    assert last(room)["decision"] == "refused"


@pytest.mark.parametrize("qty", [0, -1, 10_000_000, True, 1.0, "3"])
def test_add_on_order_bounds(room, qty):
    from mcplab.stockroom.catalog import MAX_ADD_ON_ORDER
    lines = [{"sku": "SR-101", "add_on_order": qty}]
    data = refused(room.call_tool("commit_reorder", {**RESTOCK, "lines": lines}), "invalid_arguments", "commit_reorder: lines[0]")
    assert data["problems"] == [f"lines[0].add_on_order must be an integer from 1 to {MAX_ADD_ON_ORDER}"]


def test_add_on_order_limits_are_inclusive(room):
    from mcplab.stockroom.catalog import MAX_ADD_ON_ORDER
    for qty in (1, MAX_ADD_ON_ORDER):
        outcome = room.call_tool("commit_reorder", {**RESTOCK, "lines": [{"sku": "SR-101", "add_on_order": qty}]})
        assert outcome.error["data"]["error"] == "unknown_draft"  # past the argument checks: no draft yet


def test_problems_are_capped_at_twenty(room):
    data = refused(room.call_tool("read_stock", {f"k{i}": i for i in range(30)}), "invalid_arguments", "read_stock: unexpected")
    assert len(data["problems"]) == 20


def test_read_tools_never_take_input(room):
    refused(room.call_tool("read_stock", {}, input_responses={}), "unexpected_input_responses",
            "read_stock never asks for input; send no inputResponses or requestState")
    refused(room.call_tool("draft_reorder", {}, request_state="x"), "unexpected_input_responses", "draft_reorder never asks")


# --- drafts ---------------------------------------------------------------------------------------

def test_draft_reorder_reuses_an_open_draft(room):
    first = room.call_tool("draft_reorder").structured
    assert first == RESTOCK
    assert room.call_tool("draft_reorder").structured["draft_id"] == "DR-0001"
    assert last(room)["detail"] == {"effect": "draft"}


def test_request_approval_shows_the_diff(room):
    room.draft_reorder()
    answer = room.call_tool("request_approval", {"draft_id": "DR-0001"}).structured
    assert answer["payload"] == RESTOCK
    assert (answer["draft_id"], answer["status"], answer["ledger_version"], answer["current_ledger_version"]) == ("DR-0001", "open", 1, 1)
    first = answer["diff"][0]
    assert set(first) == {"sku", "name", "on_order_before", "on_order_after", "add_on_order"}
    assert first["on_order_after"] == first["on_order_before"] + first["add_on_order"] == first["on_order_before"] + 6


def test_an_unknown_draft(room):
    data = refused(room.call_tool("request_approval", {"draft_id": "DR-0042"}), "unknown_draft",
                   "no draft DR-0042 (drafts are cleared by a reset)")
    assert data["draft_id"] == "DR-0042"


# --- the modern gate --------------------------------------------------------------------------------

def test_the_question(room, clock):
    pending = ask(room)
    request = pending.input_requests["approval"]
    assert request["method"] == "elicitation/create"
    params = request["params"]
    assert params["mode"] == "form"
    assert params["requestedSchema"] == {"type": "object", "properties": {
        "note": {"type": "string", "title": "Note for the trace", "maxLength": 200}}}
    lines = params["message"].split("\n")
    assert lines[0] == "Approve commit_reorder DR-0001 at ledger v1?"
    assert lines[1].startswith("  SR-101 ") and lines[1].endswith(" (+6)") and ": on_order " in lines[1]
    assert lines[-1] == "Payload: " + canonical_json(RESTOCK).decode()
    claims = open_state(_secret(room), pending.request_state, now=clock)
    assert (claims.tool, claims.draft_id, claims.digest, claims.ledger_version) == (
        "commit_reorder", "DR-0001", payload_digest(RESTOCK), 1)
    assert claims.expires == int(clock.t) + 900
    record = last(room)
    assert record["decision"] == "asked"
    assert record["detail"]["draft_id"] == "DR-0001" and record["detail"]["digest"] == payload_digest(RESTOCK)
    assert len(record["detail"]["diff"]) == 4


def _secret(room) -> bytes:
    with room.ledger.transaction() as tx:
        return tx.secret()


def test_accept_applies_and_reports_the_changes(room):
    pending = ask(room)
    before = {i["sku"]: i["on_order"] for i in room.read_stock()["items"]}
    done = retry(room, pending, {"approval": {"action": "accept", "content": {"note": "n" * 300}}})
    assert done.kind == "complete", done.error
    assert done.structured["ok"] is True and done.structured["draft_id"] == "DR-0001" and done.structured["ledger_version"] == 2
    assert done.structured["changes"][0] == {"sku": "SR-101", "on_order_before": before["SR-101"], "on_order_after": before["SR-101"] + 6}
    record = last(room)
    assert record["decision"] == "approved"
    assert record["detail"]["note"] == "n" * 200
    assert (record["detail"]["ledger_version_before"], record["detail"]["ledger_version_after"]) == (1, 2)
    assert record["detail"]["lines"] == RESTOCK["lines"] and record["detail"]["action"] == "accept"
    assert "_nonce" not in record["detail"]


@pytest.mark.parametrize("content", [None, {}, {"note": 5}, {"note": ""}, "note"])
def test_no_usable_note_records_none(room, content):
    pending = ask(room)
    retry(room, pending, {"approval": {"action": "accept", "content": content}})
    assert "note" not in last(room)["detail"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_block(room, action):
    pending = ask(room)
    done = retry(room, pending, {"approval": {"action": action}})
    assert done.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
    record = last(room)
    assert record["decision"] == "rejected" and record["detail"]["payload"] == RESTOCK and record["detail"]["action"] == action


@pytest.mark.parametrize("capabilities", [None, {}, {"elicitation": {"url": {}}}, {"elicitation": []}, {"elicitation": {"form": True}}, []])
def test_missing_form_capability(room, capabilities):
    room.draft_reorder()
    outcome = room.call_tool("commit_reorder", dict(RESTOCK), client_capabilities=capabilities)
    if capabilities is None:  # None means: the instance's own capabilities
        assert outcome.kind == "input_required"
        return
    data = refused(outcome, "missing_capability", "commit_reorder asks the user for approval in an elicitation form", code=-32021)
    assert data["requiredCapabilities"] == {"elicitation": {"form": {}}}


@pytest.mark.parametrize("capabilities", [{"elicitation": {}}, {"elicitation": {"form": {}, "url": {}}}])
def test_form_capability_spellings(room, capabilities):
    room.draft_reorder()
    assert room.call_tool("commit_reorder", dict(RESTOCK), client_capabilities=capabilities).kind == "input_required"


def test_modern_refuses_the_legacy_argument(room):
    room.draft_reorder()
    refused(room.call_tool("commit_reorder", {**RESTOCK, "approval_id": "AP-0123456789ab"}), "approval_argument_not_allowed",
            "approval_id is for 2025-11-25 clients; answer the elicitation with inputResponses")


@pytest.mark.parametrize("state", ["", 5])
def test_a_retry_needs_a_state(room, state):
    pending = ask(room)
    data = refused(retry(room, pending, state=state), "invalid_request_state", "a retry needs the requestState the server sent")
    assert data["reason"] == "missing"


def test_responses_without_state(room):
    ask(room)
    data = refused(room.call_tool("commit_reorder", dict(RESTOCK), input_responses=ACCEPT), "invalid_request_state", "a retry needs")
    assert data["reason"] == "missing"


@pytest.mark.parametrize("responses", [None, {}, {"approval": "accept"}, {"approval": {"action": "maybe"}}, ["approval"],
                                       {"other": {"action": "accept"}}])
def test_a_retry_needs_the_approval_answer(room, responses):
    pending = ask(room)
    refused(retry(room, pending, responses), "missing_input_response",
            "inputResponses.approval must be an elicitation result with action accept|decline|cancel")


def test_forged_expired_and_mismatched_states(room, clock):
    pending = ask(room)
    data = refused(retry(room, pending, state="v1.e30.AAAA"), "invalid_request_state", "requestState failed its integrity check")
    assert data["reason"] == "forged"
    clock.t += 901
    data = refused(retry(room, pending), "approval_expired", "the approval question expired")
    assert data["reason"] == "expired"


def forge(room, **changes) -> str:
    claims = open_state(_secret(room), ask(room).request_state, now=lambda: 0).to_dict()
    return seal_claims(_secret(room), {**claims, **changes})


@pytest.mark.parametrize("changes", [{"tool": "read_stock"}, {"draft_id": "DR-0009"}, {"digest": "0" * 64}])
def test_a_state_for_another_payload(room, changes):
    state = forge(room, **changes)
    data = refused(room.call_tool("commit_reorder", dict(RESTOCK), input_responses=ACCEPT, request_state=state),
                   "invalid_request_state", "requestState was issued for a different payload")
    assert data["reason"] == "mismatch"


def test_a_state_from_before_a_reset(room):
    state = forge(room, epoch="old-epoch")
    data = refused(room.call_tool("commit_reorder", dict(RESTOCK), input_responses=ACCEPT, request_state=state),
                   "approval_expired", "the stockroom was reset after this approval was asked")
    assert data["reason"] == "reset"


def test_an_answer_is_used_once_even_a_decline(room):
    pending = ask(room)
    retry(room, pending, {"approval": {"action": "decline"}})
    data = refused(retry(room, pending), "approval_already_used", "this approval was already answered; it applies at most once")
    assert data["draft_id"] == "DR-0001"


def test_stale_closed_and_drifted_payloads(room):
    pending = ask(room)
    retry(room, pending)
    data = refused(room.call_tool("commit_reorder", dict(RESTOCK)), "stale_ledger_version",
                   "ledger_version 1 is stale: the ledger is at v2; read_stock and draft again")
    assert (data["ledger_version"], data["requested"]) == (2, 1)
    data = refused(room.call_tool("commit_reorder", {**RESTOCK, "ledger_version": 2}), "draft_closed",
                   "draft DR-0001 was already committed")
    assert data["draft_id"] == "DR-0001"


def test_payload_drift_names_expected_and_got(room):
    room.draft_reorder()
    lines = [{"sku": "SR-101", "add_on_order": 7}]
    data = refused(room.call_tool("commit_reorder", {**RESTOCK, "lines": lines}), "payload_drift",
                   "the lines differ from draft DR-0001; commit exactly the draft")
    assert data["expected"] == RESTOCK["lines"] and data["got"] == lines and data["draft_id"] == "DR-0001"


# --- the 2025-11-25 path -----------------------------------------------------------------------------

def legacy_ask(room):
    room.draft_reorder()
    outcome = room.call_tool("commit_reorder", dict(RESTOCK))
    assert outcome.is_error and outcome.structured["error"] == "approval_required", outcome
    return outcome.structured["approval_id"]


def test_legacy_refuses_mrtr_fields(legacy):
    legacy.draft_reorder()
    refused(legacy.call_tool("commit_reorder", dict(RESTOCK), input_responses=ACCEPT), "unexpected_input_responses",
            "2025-11-25 has no multi-round-trip requests")
    refused(legacy.call_tool("commit_reorder", dict(RESTOCK), request_state="s"), "unexpected_input_responses", "2025-11-25 has no")


def test_legacy_question(legacy, clock):
    legacy.draft_reorder()
    outcome = legacy.call_tool("commit_reorder", dict(RESTOCK))
    approval_id = outcome.structured["approval_id"]
    assert outcome.kind == "complete" and outcome.is_error is True
    assert outcome.structured["ok"] is False and outcome.structured["payload"] == RESTOCK
    assert len(outcome.structured["diff"]) == 4
    message = outcome.structured["message"]
    assert message.startswith("Approve commit_reorder DR-0001 at ledger v1?\n")
    # issue 15: the message to the agent names no route it could call to approve itself
    assert message.endswith(f"\nA person approves or rejects {approval_id} out of band (in the stockroom's circuit panel); "
                            "then call commit_reorder again with the same arguments and approval_id.")
    assert "POST" not in message and "/stockroom/approvals" not in message
    record = last(legacy)
    assert record["decision"] == "asked" and record["detail"]["approval_id"] == approval_id
    assert record["detail"]["digest"] == payload_digest(RESTOCK)
    assert legacy.pending_approvals() == [{"approval_id": approval_id, "draft_id": "DR-0001", "ledger_version": 1,
                                            "payload": RESTOCK, "expires": int(clock.t) + 900}]


def test_legacy_pending_then_accept_then_used(legacy):
    approval_id = legacy_ask(legacy)
    waiting = legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    assert waiting.is_error and waiting.structured == {"ok": False, "error": "approval_pending", "approval_id": approval_id,
                                                      "message": f"{approval_id} is still waiting for a person to approve or reject it"}
    assert last(legacy)["detail"] == {"draft_id": "DR-0001", "approval_id": approval_id, "waiting": True}
    answer = legacy.decide_approval(approval_id, "accept")
    assert answer == {"approval_id": approval_id, "status": "accepted", "payload": RESTOCK}
    record = last(legacy)
    assert (record["era"], record["tool"], record["decision"]) == ("local", "approval", "accepted")
    assert record["arguments"] == {"approval_id": approval_id, "action": "accept", "channel": "api"}
    assert record["detail"] == {"draft_id": "DR-0001", "digest": payload_digest(RESTOCK)}
    done = legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    assert done.structured["ok"] is True and done.structured["ledger_version"] == 2
    assert last(legacy)["decision"] == "approved" and last(legacy)["detail"]["action"] == "accept"
    data = refused(legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id}),
                   "approval_already_used", "this approval was already used; it applies at most once")
    assert data["draft_id"] == "DR-0001"


@pytest.mark.parametrize("channel", ["panel", "cli", "http", "panel/http"])
def test_the_trace_records_the_channel_of_a_person_s_answer(legacy, channel):
    """Issue 15: the trace records which channel approved."""
    approval_id = legacy_ask(legacy)
    legacy.decide_approval(approval_id, "decline", channel=channel)
    assert last(legacy)["arguments"] == {"approval_id": approval_id, "action": "decline", "channel": channel}


def test_a_file_stockroom_names_the_cli_for_a_person(tmp_path, clock):
    db = tmp_path / "stock.db"
    stockroom = Stockroom(db, era="legacy", now=clock)
    try:
        stockroom.reset()
        stockroom.draft_reorder()
        outcome = stockroom.call_tool("commit_reorder", dict(RESTOCK))
        approval_id = outcome.structured["approval_id"]
        assert outcome.structured["message"].endswith(
            f"\nA person approves or rejects {approval_id} out of band (the circuit panel, or 'mcplab stockroom approve "
            f"{approval_id} --db {db}'); then call commit_reorder again with the same arguments and approval_id.")
        assert stockroom.approver_token not in outcome.structured["message"]
    finally:
        stockroom.close()


def test_legacy_decline(legacy):
    approval_id = legacy_ask(legacy)
    assert legacy.decide_approval(approval_id, "decline")["status"] == "declined"
    done = legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    assert done.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
    assert last(legacy)["detail"]["action"] == "decline"


def test_legacy_refusals(legacy, clock):
    data = refused(legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": "AP-0123456789ab"}), "unknown_approval",
                   "no approval AP-0123456789ab was asked here")
    assert data["approval_id"] == "AP-0123456789ab"
    approval_id = legacy_ask(legacy)
    lines = [{"sku": "SR-101", "add_on_order": 1}]
    data = refused(legacy.call_tool("commit_reorder", {**RESTOCK, "lines": lines, "approval_id": approval_id}),
                   "invalid_request_state", f"{approval_id} approves a different payload; repeat the original arguments exactly")
    assert data["reason"] == "mismatch"
    legacy.decide_approval(approval_id, "accept")
    clock.t += 901
    data = refused(legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id}), "approval_expired",
                   "the approval expired; call commit_reorder again")
    assert data["reason"] == "expired"


def test_legacy_expiry_boundary(legacy, clock):
    approval_id = legacy_ask(legacy)
    clock.t += 900
    assert legacy.decide_approval(approval_id, "accept")["status"] == "accepted"
    assert legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id}).structured["ok"] is True


def test_legacy_reset_voids(legacy):
    approval_id = legacy_ask(legacy)
    legacy.reset()
    legacy.draft_reorder()
    data = refused(legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id}), "approval_expired",
                   "the stockroom was reset after this approval was asked")
    assert data["reason"] == "reset"


def test_decide_approval_errors(legacy, clock):
    with pytest.raises(ApprovalError, match=r"^action must be 'accept' or 'decline', got 'cancel'$"):
        legacy.decide_approval("AP-0123456789ab", "cancel")
    with pytest.raises(ApprovalError, match=r"^no pending approval 'AP-0123456789ab' \(see 'mcplab stockroom approvals'\)$"):
        legacy.decide_approval("AP-0123456789ab", "accept")
    with pytest.raises(ApprovalError, match=r"^no pending approval '5' \(see 'mcplab stockroom approvals'\)$"):
        legacy.decide_approval(5, "accept")
    with pytest.raises(ApprovalError, match=r"^action must be 'accept' or 'decline', got 'a{40}'$"):
        legacy.decide_approval("AP-0123456789ab", "a" * 50)
    with pytest.raises(ApprovalError, match=r"^channel must be one of \(.*\), got 'c{40}'$"):
        legacy.decide_approval("AP-0123456789ab", "accept", channel="c" * 50)
    with pytest.raises(ApprovalError, match=r"^no pending approval 'p{40}' \(see 'mcplab stockroom approvals'\)$"):
        legacy.decide_approval("p" * 50, "accept")
    with pytest.raises(ApprovalError, match=r"^channel must be one of \('api', 'panel', 'cli', 'http', 'panel/http'\), got 'mail'$"):
        legacy.decide_approval("AP-0123456789ab", "accept", channel="mail")
    approval_id = legacy_ask(legacy)
    legacy.decide_approval(approval_id, "decline")
    with pytest.raises(ApprovalError, match=rf"^{approval_id} was already answered \(declined\)$"):
        legacy.decide_approval(approval_id, "accept")
    other = Stockroom(era="legacy", now=clock)
    other.reset()
    pending = legacy_ask(other)
    clock.t += 901
    with pytest.raises(ApprovalError, match=rf"^{pending} expired; the agent has to ask again$"):
        other.decide_approval(pending, "accept")
    other.reset()
    with pytest.raises(ApprovalError, match=r"^no pending approval"):
        other.decide_approval(pending, "accept")
    other.close()


def test_asking_twice_reuses_the_pending_approval(legacy):
    first = legacy_ask(legacy)
    assert legacy.call_tool("commit_reorder", dict(RESTOCK)).structured["approval_id"] == first


def test_the_durable_hint_names_the_database(tmp_path, clock):
    path = tmp_path / "stock.sqlite3"
    room = Stockroom(str(path), era="legacy", now=clock)
    room.reset()
    approval_id = legacy_ask(room)
    message = room.call_tool("commit_reorder", dict(RESTOCK)).structured["message"]
    assert f"(the circuit panel, or 'mcplab stockroom approve {approval_id} --db {path}')" in message
    room.close()


# --- the trace stores bounded arguments ---------------------------------------------------------------

def test_trace_limits():
    assert (TRACE_MAX_DEPTH, TRACE_MAX_BYTES) == (32, 65536)


def nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_trace_keeps_small_arguments_and_summarises_hostile_ones(room):
    room.call_tool("read_stock", {"x": nested(31)})
    assert last(room)["arguments"] == {"x": nested(31)}  # 32 containers deep: kept
    room.call_tool("read_stock", {"x": nested(32)})
    assert last(room)["arguments"] == {"omitted": "nested deeper than 32 levels"}
    room.call_tool("read_stock", {"x": [{"y": nested(31)}]})
    assert last(room)["arguments"] == {"omitted": "nested deeper than 32 levels"}
    room.call_tool("read_stock", {"x": float("nan")})
    assert last(room)["arguments"] == {"omitted": "not JSON (dict)"}
    big = {"x": "a" * TRACE_MAX_BYTES}
    text = canonical_json(big)
    room.call_tool("read_stock", big)
    assert last(room)["arguments"] == {"omitted": f"{len(text)} bytes, over the 65536-byte trace limit",
                                       "sha256": hashlib.sha256(text).hexdigest()}
    fits = {"x": "a" * (TRACE_MAX_BYTES - len('{"x":""}'))}
    room.call_tool("read_stock", fits)
    assert last(room)["arguments"] == fits
    assert room.verify() == []
    json.dumps(room.trace())


def test_non_string_tool_names_are_denied(room):
    for name in (5, ["read_stock"]):
        data = refused(room.call_tool(name, {}), "tool_not_allowed", f"tool {str(name)!r} is not on the allow-list")
        assert data["policy"] == "deny"
    assert refused(room.call_tool("delete_item"), "tool_not_allowed", "tool")["policy"] == "deny"


def test_a_hundred_lines_are_within_the_bound(room):
    lines = [{"sku": f"S{i:03}", "add_on_order": 1} for i in range(MAX_LINES)]
    outcome = room.call_tool("commit_reorder", {**RESTOCK, "lines": lines})
    assert outcome.error["data"]["error"] == "unknown_draft"  # past the argument checks: no draft yet


def test_a_given_ledger_is_used(clock):
    from mcplab.stockroom.ledger import Ledger
    ledger = Ledger(":memory:")
    room = Stockroom(ledger, now=clock)
    assert room.ledger is ledger
    room.close()


def test_verify_checks_the_given_head(room):
    head = room.ledger.head()
    assert room.verify(head) == []
    assert room.verify((head[0], "0" * 64)) != []


def test_the_outcome_carries_its_era(room, legacy):
    assert room.call_tool("read_stock").era == "modern"
    assert room.call_tool("read_stock", era="legacy").era == "legacy"
    assert legacy.call_tool("read_stock").era == "legacy"


def test_full_messages_of_the_gate(room):
    room.draft_reorder()
    outcome = room.call_tool("commit_reorder", dict(RESTOCK), client_capabilities={})
    assert outcome.error["message"] == ("commit_reorder asks the user for approval in an elicitation form: "
                                        "declare the elicitation capability (form mode)")
    state = forge(room, draft_id="DR-0009")
    outcome = room.call_tool("commit_reorder", dict(RESTOCK), input_responses=ACCEPT, request_state=state)
    assert outcome.error["message"] == ("requestState was issued for a different payload; "
                                        "a retry must repeat the original arguments exactly")


def test_trace_details_name_the_draft(room, legacy):
    pending = ask(room)
    retry(room, pending)
    assert last(room)["detail"]["draft_id"] == "DR-0001"
    assert room.call_tool("draft_reorder").structured == {"draft_id": None, "ledger_version": 2, "lines": [],
                                                          "message": "nothing is at or below its reorder point"}
    approval_id = legacy_ask(legacy)
    asked = last(legacy)["detail"]
    assert (asked["draft_id"], len(asked["diff"])) == ("DR-0001", 4)
    legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    assert last(legacy)["decision"] == "asked"
    legacy.decide_approval(approval_id, "accept")
    legacy.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    assert last(legacy)["detail"]["draft_id"] == "DR-0001" and last(legacy)["detail"]["approval_id"] == approval_id


def test_only_the_person_s_token_is_the_approver_token(legacy):
    """Issue 15: a person's approval needs a credential the agent never sees."""
    token = legacy.approver_token
    assert legacy.is_approver_token(token) is True
    assert legacy.is_approver_token(token[:-1] + ("x" if token[-1] != "x" else "y")) is False
    assert legacy.is_approver_token("") is False
    assert legacy.is_approver_token(None) is False
