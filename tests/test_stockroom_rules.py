"""The stockroom's rules, in process: the MISSION scenarios exactly, and the gate's hard cases by case name."""

from __future__ import annotations

import pytest

from mcplab.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcplab.stockroom import SEED_ITEMS, TOOL_NAMES, ApprovalError, Stockroom, ToolRefused, open_state
from mcplab.stockroom.catalog import EFFECT_META_KEY, restock_lines

RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}
RESTOCKED = ["SR-101", "SR-103", "SR-105", "SR-106"]


def on_order(room: Stockroom, skus: list[str] = RESTOCKED) -> list[int]:
    items = {item["sku"]: item for item in room.read_stock()["items"]}
    return [items[sku]["on_order"] for sku in skus]


def commits(room: Stockroom) -> list[dict]:
    return [record for record in room.trace() if record["tool"] == "commit_reorder"]


def ledger_state(room: Stockroom) -> dict:
    return room.snapshot()


@pytest.fixture
def room() -> Stockroom:
    stockroom = Stockroom()
    stockroom.reset()
    yield stockroom
    stockroom.close()


def pending_commit(room: Stockroom, payload: dict | None = None):
    draft = room.draft_reorder()
    outcome = room.commit_reorder(payload or {k: draft[k] for k in ("draft_id", "ledger_version", "lines")})
    assert outcome.kind == "input_required", outcome.error
    return outcome


def test_catalog_is_exactly_four_tools_with_effect_classes(room):
    tools = room.tools()
    assert [t["name"] for t in tools] == ["read_stock", "draft_reorder", "request_approval", "commit_reorder"]
    assert {t["name"]: t["_meta"][EFFECT_META_KEY] for t in tools} == {
        "read_stock": "read", "draft_reorder": "draft", "request_approval": "draft", "commit_reorder": "write"}
    assert [t["annotations"]["readOnlyHint"] for t in tools] == [True, True, True, False]
    assert "delete_item" not in TOOL_NAMES


def test_seed_drafts_exactly_the_restock_payload_and_sr104_is_old_stock(room):
    assert room.draft_reorder() == RESTOCK
    sr104 = next(item for item in room.read_stock()["items"] if item["sku"] == "SR-104")
    assert (sr104["on_hand"], sr104["on_order"]) == (5, 0)
    assert restock_lines(list(SEED_ITEMS)) == RESTOCK["lines"]


def test_read_stock_returns_version_and_every_item(room):
    stock = room.read_stock()
    assert stock["ledger_version"] == 1
    assert [item["sku"] for item in stock["items"]] == [f"SR-10{i}" for i in range(1, 7)]
    assert set(stock["items"][0]) == {"sku", "name", "on_hand", "on_order", "reorder_point", "par"}


def test_draft_tools_never_change_the_ledger(room):
    before = ledger_state(room)
    draft = room.draft_reorder()
    again = room.draft_reorder()
    assert again["draft_id"] == draft["draft_id"] == "DR-0001"  # the same draft, not a new one
    approval = room.request_approval("DR-0001")
    assert ledger_state(room) == before
    assert approval["payload"] == RESTOCK
    assert [(d["sku"], d["on_order_before"], d["on_order_after"]) for d in approval["diff"]] == [
        ("SR-101", 0, 6), ("SR-103", 0, 13), ("SR-105", 0, 3), ("SR-106", 0, 6)]


def test_golden_stockroom_restock_approved(room):
    pending = pending_commit(room)
    request = pending.input_requests["approval"]
    assert request["method"] == "elicitation/create"
    message = request["params"]["message"]
    for line in ("SR-101", "0 -> 6", "0 -> 13", "0 -> 3"):
        assert line in message
    assert '"lines":[{"add_on_order":6,"sku":"SR-101"}' in message  # the exact payload is shown
    assert on_order(room) == [0, 0, 0, 0]  # asking changes nothing
    result = room.approve(pending)
    assert result.kind == "complete" and not result.is_error
    assert result.structured["ok"] is True and result.structured["ledger_version"] == 2
    assert on_order(room) == [6, 13, 3, 6]
    assert room.read_stock()["ledger_version"] == 2
    assert [r["decision"] for r in commits(room)] == ["asked", "approved"]
    assert room.verify() == []


def test_golden_stockroom_restock_rejected(room):
    pending = pending_commit(room)
    result = room.reject(pending)
    assert result.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
    assert on_order(room) == [0, 0, 0, 0]
    rejected = commits(room)[-1]
    assert rejected["decision"] == "rejected"
    assert rejected["arguments"]["lines"] == RESTOCK["lines"]  # the rejected request is kept
    assert rejected["detail"]["payload"] == RESTOCK


def test_negative_stockroom_tool_not_allowed(room):
    before = ledger_state(room)
    outcome = room.call_tool("delete_item", {"sku": "SR-104", "reason": "clear old stock"})
    assert outcome.kind == "error"
    assert outcome.error["code"] == INVALID_PARAMS
    assert outcome.error["data"] == {"error": "tool_not_allowed", "tool": "delete_item", "policy": "deny"}
    assert ledger_state(room) == before
    assert room.trace()[-1]["decision"] == "denied"
    assert not any(r["decision"] == "asked" for r in room.trace())  # nobody was asked


@pytest.mark.parametrize("state", [
    lambda s: s[:-2] + ("AA" if not s.endswith("AA") else "BB"),  # signature changed
    lambda s: "v1." + s.split(".")[1][::-1] + "." + s.split(".")[2],  # claims changed
    lambda s: "",
    lambda s: "v1.e30.AAAA",  # forged from scratch
])
def test_negative_stockroom_forged_state(room, state):
    pending = pending_commit(room)
    forged = room.call_tool("commit_reorder", pending.arguments, input_responses={"approval": {"action": "accept"}},
                            request_state=state(pending.request_state))
    assert forged.kind == "error" and forged.error["code"] == INVALID_PARAMS
    assert forged.error["data"]["error"] == "invalid_request_state"
    assert on_order(room) == [0, 0, 0, 0] and room.read_stock()["ledger_version"] == 1


def test_negative_stockroom_forged_state_missing(room):
    pending = pending_commit(room)
    missing = room.call_tool("commit_reorder", pending.arguments, input_responses={"approval": {"action": "accept"}})
    assert missing.error["data"]["error"] == "invalid_request_state"
    assert missing.error["data"]["reason"] == "missing"
    assert room.read_stock()["ledger_version"] == 1


def test_a_state_from_another_database_is_forged(room):
    pending = pending_commit(room)
    other = Stockroom()
    other.draft_reorder()
    forged = other.call_tool("commit_reorder", pending.arguments, input_responses={"approval": {"action": "accept"}},
                             request_state=pending.request_state)
    assert forged.error["data"]["error"] == "invalid_request_state"
    assert other.read_stock()["ledger_version"] == 1


def test_negative_stockroom_stale_version(room):
    first = pending_commit(room)
    room.approve(first)
    stale = room.commit_reorder(RESTOCK)
    assert stale.kind == "error" and stale.error["code"] == INVALID_PARAMS
    assert stale.error["data"]["error"] == "stale_ledger_version"
    assert stale.error["data"]["ledger_version"] == 2
    assert "stale" in stale.error["message"]
    assert on_order(room) == [6, 13, 3, 6] and room.read_stock()["ledger_version"] == 2


def test_negative_stockroom_replayed_approval(room):
    pending = pending_commit(room)
    assert room.approve(pending).structured["ok"] is True
    replay = room.approve(pending)
    assert replay.kind == "error" and replay.error["data"]["error"] == "approval_already_used"
    assert on_order(room) == [6, 13, 3, 6] and room.read_stock()["ledger_version"] == 2
    assert room.verify() == []


def test_a_declined_approval_cannot_be_replayed_as_accept(room):
    pending = pending_commit(room)
    room.reject(pending)
    replay = room.approve(pending)
    assert replay.error["data"]["error"] == "approval_already_used"
    assert room.read_stock()["ledger_version"] == 1


@pytest.mark.parametrize("lines", [
    [{"sku": "SR-101", "add_on_order": 60}, *RESTOCK["lines"][1:]],
    RESTOCK["lines"][:3],
    [*RESTOCK["lines"], {"sku": "SR-104", "add_on_order": 1}],
    [*RESTOCK["lines"][:3], {"sku": "SR-999", "add_on_order": 6}],
])
def test_negative_stockroom_payload_drift(room, lines):
    room.draft_reorder()
    drift = room.commit_reorder({**RESTOCK, "lines": lines})
    assert drift.kind == "error" and drift.error["data"]["error"] == "payload_drift"
    assert room.read_stock()["ledger_version"] == 1


def test_payload_drift_on_the_retry_is_refused_too(room):
    pending = pending_commit(room)
    changed = {**RESTOCK, "lines": [{"sku": "SR-101", "add_on_order": 600}, *RESTOCK["lines"][1:]]}
    outcome = room.call_tool("commit_reorder", changed, input_responses={"approval": {"action": "accept"}},
                             request_state=pending.request_state)
    assert outcome.error["data"]["error"] == "invalid_request_state"
    assert outcome.error["data"]["reason"] == "mismatch"
    assert on_order(room) == [0, 0, 0, 0]


def test_line_order_does_not_matter(room):
    room.draft_reorder()
    pending = room.commit_reorder({**RESTOCK, "lines": list(reversed(RESTOCK["lines"]))})
    assert pending.kind == "input_required"
    assert room.approve(pending).structured["ledger_version"] == 2


@pytest.mark.parametrize("capabilities", [{}, {"elicitation": {"url": {}}}, {"elicitation": True}, {"sampling": {}}])
def test_negative_stockroom_missing_capability(capabilities):
    room = Stockroom(client_capabilities=capabilities)
    room.draft_reorder()
    outcome = room.commit_reorder(RESTOCK)
    assert outcome.error["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert outcome.error["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}
    assert room.read_stock()["ledger_version"] == 1


@pytest.mark.parametrize("capabilities", [{"elicitation": {}}, {"elicitation": {"form": {}, "url": {}}}])
def test_form_elicitation_is_enough(capabilities):
    room = Stockroom(client_capabilities=capabilities)
    room.draft_reorder()
    assert room.commit_reorder(RESTOCK).kind == "input_required"


def test_a_reset_voids_approvals_asked_before_it(room):
    pending = pending_commit(room)
    room.reset()
    room.draft_reorder()  # DR-0001 again, same payload
    late = room.approve(pending)
    assert late.error["data"]["error"] == "approval_expired" and late.error["data"]["reason"] == "reset"
    assert room.read_stock()["ledger_version"] == 1


def test_an_expired_approval_does_not_apply():
    clock = [1_000_000.0]
    room = Stockroom(now=lambda: clock[0])
    pending = pending_commit(room)
    clock[0] += 16 * 60
    late = room.approve(pending)
    assert late.error["data"]["error"] == "approval_expired"
    assert room.read_stock()["ledger_version"] == 1


def test_request_state_claims_bind_draft_digest_version_and_epoch(room):
    pending = pending_commit(room)
    with room.ledger.transaction() as tx:
        secret = tx.secret()
    claims = open_state(secret, pending.request_state)
    assert claims.draft_id == "DR-0001" and claims.ledger_version == 1 and claims.tool == "commit_reorder"
    assert len(claims.digest) == 64 and claims.epoch


@pytest.mark.parametrize("arguments, problem", [
    ("not an object", "arguments must be an object"),
    ({"draft_id": 1, "ledger_version": 1, "lines": RESTOCK["lines"]}, "draft_id"),
    ({"draft_id": "DR-0001", "ledger_version": True, "lines": RESTOCK["lines"]}, "ledger_version"),
    ({"draft_id": "DR-0001", "ledger_version": 1, "lines": []}, "lines"),
    ({"draft_id": "DR-0001", "ledger_version": 1, "lines": [{"sku": "SR-101", "add_on_order": -6}]}, "add_on_order"),
    ({"draft_id": "DR-0001", "ledger_version": 1, "lines": [{"sku": "SR-101", "add_on_order": 6.5}]}, "add_on_order"),
    ({**RESTOCK, "lines": RESTOCK["lines"] + RESTOCK["lines"][:1]}, "twice"),
    ({**RESTOCK, "extra": 1}, "unexpected argument"),
])
def test_malformed_commit_arguments_are_invalid_params(room, arguments, problem):
    outcome = room.call_tool("commit_reorder", arguments)
    assert outcome.error["code"] == INVALID_PARAMS
    assert outcome.error["data"]["error"] == "invalid_arguments"
    assert any(problem in p for p in outcome.error["data"]["problems"])
    assert room.trace()[-1]["decision"] == "refused"


def test_read_tools_refuse_input_responses(room):
    outcome = room.call_tool("read_stock", {}, input_responses={"approval": {"action": "accept"}}, request_state="x")
    assert outcome.error["data"]["error"] == "unexpected_input_responses"


def test_unknown_draft_is_refused(room):
    with pytest.raises(ToolRefused) as info:
        room.request_approval("DR-0042")
    assert info.value.data["error"] == "unknown_draft"


def test_every_call_appends_exactly_one_trace_record(room):
    start = len(room.trace())
    room.read_stock()
    room.draft_reorder()
    room.call_tool("delete_item", {})
    room.call_tool("commit_reorder", "bad")
    pending = pending_commit(room)
    room.approve(pending)
    assert len(room.trace()) == start + 7
    assert [r["seq"] for r in room.trace()] == list(range(1, len(room.trace()) + 1))


class TestLegacyEra:
    """2025-11-25 has no MRTR: a person answers out of band; the agent only learns an approval id."""

    def legacy_pending(self, room):
        room.draft_reorder()
        pending = room.commit_reorder(RESTOCK)
        assert pending.kind == "complete" and pending.is_error and pending.asks_approval
        assert pending.structured["error"] == "approval_required"
        return pending

    @staticmethod
    def retry(room, pending, **changes):
        """The agent's retry: the same arguments (unless changed) plus the approval id it was given."""
        return room.call_tool("commit_reorder", {**RESTOCK, "approval_id": pending.structured["approval_id"], **changes})

    def test_restock_approved(self):
        room = Stockroom(era="legacy")
        pending = self.legacy_pending(room)
        assert "0 -> 13" in pending.structured["message"]
        result = room.approve(pending)
        assert result.structured["ok"] is True and on_order(room) == [6, 13, 3, 6]
        assert [(r["tool"], r["decision"]) for r in room.trace() if r["tool"] in ("commit_reorder", "approval")] == [
            ("commit_reorder", "asked"), ("approval", "accepted"), ("commit_reorder", "approved")]
        assert room.verify() == []

    def test_restock_rejected(self):
        room = Stockroom(era="legacy")
        result = room.reject(self.legacy_pending(room))
        assert result.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
        assert commits(room)[-1]["decision"] == "rejected" and commits(room)[-1]["arguments"]["lines"] == RESTOCK["lines"]

    def test_the_agent_cannot_approve_its_own_write(self):
        """Nothing the agent sees lets it approve: the retry before a person answered applies nothing."""
        room = Stockroom(era="legacy")
        pending = self.legacy_pending(room)
        assert not any(key in pending.structured for key in ("approval_token", "requestState"))
        retry = self.retry(room, pending)
        assert retry.structured["error"] == "approval_pending" and room.read_stock()["ledger_version"] == 1
        made_up = room.call_tool("commit_reorder", {**RESTOCK, "approval_id": "AP-000000000000"})
        assert made_up.error["data"]["error"] == "unknown_approval"
        assert room.read_stock()["ledger_version"] == 1

    def test_asking_twice_gives_the_same_approval(self):
        room = Stockroom(era="legacy")
        first = self.legacy_pending(room)
        assert room.commit_reorder(RESTOCK).structured["approval_id"] == first.structured["approval_id"]
        assert [a["approval_id"] for a in room.pending_approvals()] == [first.structured["approval_id"]]

    def test_an_approval_applies_once(self):
        room = Stockroom(era="legacy")
        pending = self.legacy_pending(room)
        room.approve(pending)
        replay = self.retry(room, pending)
        assert replay.error["data"]["error"] == "approval_already_used"
        assert room.read_stock()["ledger_version"] == 2

    def test_an_approval_is_for_its_payload_only(self):
        room = Stockroom(era="legacy")
        pending = self.legacy_pending(room)
        room.decide_approval(pending.structured["approval_id"], "accept")
        assert self.retry(room, pending, lines=RESTOCK["lines"][:2]).error["data"]["error"] == "invalid_request_state"
        assert room.read_stock()["ledger_version"] == 1

    @pytest.mark.parametrize("action, message", [("maybe", "must be 'accept' or 'decline'"), ("accept", "already answered")])
    def test_bad_out_of_band_answers(self, action, message):
        room = Stockroom(era="legacy")
        approval_id = self.legacy_pending(room).structured["approval_id"]
        room.decide_approval(approval_id, "decline")
        with pytest.raises(ApprovalError, match=message):
            room.decide_approval(approval_id, action)
        with pytest.raises(ApprovalError, match="no pending approval"):
            room.decide_approval("AP-ffffffffffff", "accept")

    def test_an_accepted_approval_expires_too(self):
        clock = [1_000_000.0]
        room = Stockroom(era="legacy", now=lambda: clock[0])
        pending = self.legacy_pending(room)
        room.decide_approval(pending.structured["approval_id"], "accept")
        clock[0] += 16 * 60
        late = self.retry(room, pending)
        assert late.error["data"]["error"] == "approval_expired"
        assert room.read_stock()["ledger_version"] == 1

    def test_a_reset_voids_a_legacy_approval(self):
        room = Stockroom(era="legacy")
        pending = self.legacy_pending(room)
        room.decide_approval(pending.structured["approval_id"], "accept")
        room.reset()
        room.draft_reorder()
        late = self.retry(room, pending)
        assert late.error["data"]["error"] == "approval_expired" and late.error["data"]["reason"] == "reset"

    def test_the_message_tells_the_person_how_to_answer(self, tmp_path):
        room = Stockroom(tmp_path / "s.sqlite3", era="legacy")
        message = self.legacy_pending(room).structured["message"]
        assert f"--db {tmp_path / 's.sqlite3'}" in message

    def test_modern_clients_may_not_use_the_legacy_argument(self, room):
        room.draft_reorder()
        outcome = room.call_tool("commit_reorder", {**RESTOCK, "approval_id": "AP-0123456789ab"})
        assert outcome.error["data"]["error"] == "approval_argument_not_allowed"


def test_nothing_to_draft_after_restock(room):
    room.approve(pending_commit(room))
    draft = room.draft_reorder()
    assert draft["draft_id"] is None and draft["lines"] == [] and draft["ledger_version"] == 2


def test_request_approval_of_a_committed_draft_shows_nothing_pending(room):
    room.approve(pending_commit(room))
    shown = room.request_approval("DR-0001")
    assert shown["status"] == "committed" and shown["diff"] == [] and "already committed" in shown["message"]


def test_call_tool_refuses_an_unknown_era(room):
    with pytest.raises(ValueError, match="era must be one of"):
        room.call_tool("read_stock", {}, era="local")
    assert room.verify() == []
