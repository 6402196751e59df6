"""Flight Deck plan runs: refresh before each step, the server's own gate, proof after, stop when stale, resume."""

from __future__ import annotations

import pytest

from mcplab.flightdeck import FlightDeck, FlightDeckError
from mcplab.stockroom import Stockroom, StockroomClient

from .support import ERAS, RESTOCK


def tools_called(server) -> list[str]:
    return [record["tool"] for record in server.stockroom.trace()]


def restock_plan(deck) -> dict:
    assert deck.connection.api.draft_reorder() == RESTOCK  # the seed's "Restock low items"
    plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": RESTOCK}])
    step = plan["steps"][0]
    assert (step["effect_class"], step["approval_required"], step["static_request_blocked"]) == ("write", True, False)
    return plan


def test_restock_with_an_approving_callback_ends_in_ledger_proof(server, deck):
    plan = restock_plan(deck)
    questions = []
    run = deck.run_plan(plan, approver=lambda question: questions.append(question) or "accept")
    assert run["completed"] and run["stop_reason"] is None and run["resume_from"] is None
    step = run["steps"][0]
    assert step["status"] == "proven" and step["invoked"]
    assert step["proof"]["read_via"] == "read_stock" and step["proof"]["proven"] is True
    assert step["proof"]["ledger_version"] == 2 and step["proof"]["on_order"] == [6, 13, 3, 6]
    [question] = questions
    assert "SR-103 Sandbag, 10 kg: on_order 0 -> 13 (+13)" in question["message"] and question["payload"] == RESTOCK
    if deck.connection.era == "modern":
        assert question["kind"] == "elicitation" and question["requested_schema"]["type"] == "object"
    else:
        assert question["kind"] == "out_of_band" and question["approval_id"].startswith("AP-")
    assert server.stockroom.snapshot()["ledger_version"] == 2
    assert server.stockroom.verify() == []


def test_restock_with_a_rejecting_callback_stops_and_proves_nothing_changed(server, deck):
    plan = restock_plan(deck)
    run = deck.run_plan(plan, approver=lambda question: "decline")
    step = run["steps"][0]
    assert run["stop_reason"] == "approval_declined" and run["stopped_at"] == 0 and not run["completed"]
    assert step["status"] == "stopped" and step["outcome"]["structured"]["error"] == "mutation_blocked"
    assert step["proof"]["ledger_version"] == 1 and step["proof"]["on_order"] == [0, 0, 0, 0]
    assert step["proof"]["unchanged"] is True and step["proof"]["proven"] is False
    assert run["resume_from"] == 0
    assert server.stockroom.snapshot()["ledger_version"] == 1


def test_no_approver_means_approval_missing_and_no_change(server, deck):
    plan = restock_plan(deck)
    run = deck.run_plan(plan)
    assert run["stop_reason"] == "approval_missing" and run["steps"][0]["approvals"][0]["answer"] is None
    assert server.stockroom.snapshot()["ledger_version"] == 1


def test_a_plan_made_stale_by_another_client_stops_at_the_stale_step(server, deck):
    deck.connection.api.draft_reorder()
    plan = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}, {"tool": "commit_reorder", "arguments": RESTOCK},
                                         {"tool": "read_stock", "arguments": {}}])
    with StockroomClient(server.url) as other:  # someone else commits the same draft first
        other.approve(other.commit_reorder(RESTOCK))
    commits_before = tools_called(server).count("commit_reorder")
    run = deck.run_plan(plan, approver=lambda question: "accept")
    assert [step["status"] for step in run["steps"]] == ["proven", "stopped", "not_reached"]
    assert run["stopped_at"] == 1 and run["stop_reason"] == "target_missing"
    assert {"target_closed", "stale_ledger_version"} <= {b["code"] for b in run["steps"][1]["blockers"]}
    assert run["steps"][1]["invoked"] is False
    assert tools_called(server).count("commit_reorder") == commits_before
    assert server.stockroom.snapshot()["ledger_version"] == 2  # only the other client's commit


def test_a_reset_makes_the_target_disappear(server, deck):
    plan = restock_plan(deck)
    server.stockroom.reset()
    run = deck.run_plan(plan, approver=lambda question: "accept")
    assert run["stop_reason"] == "target_missing"
    assert [b["code"] for b in run["steps"][0]["blockers"]] == ["target_missing"]


def test_resume_continues_from_the_first_unproven_step(server, deck):
    deck.connection.api.draft_reorder()
    plan = deck.compile_invocation_plan([{"tool": "draft_reorder", "arguments": {}}, {"tool": "commit_reorder", "arguments": RESTOCK}])
    first = deck.run_plan(plan)  # nobody answers the approval
    assert [s["status"] for s in first["steps"]] == ["proven", "stopped"] and first["resume_from"] == 1
    assert first["steps"][0]["proof"] == {**first["steps"][0]["proof"], "draft_id": "DR-0001", "draft_status": "open", "proven": True}
    drafts_before = tools_called(server).count("draft_reorder")
    second = deck.run_plan(plan, approver=lambda question: True, resume=first)
    assert second["resumed_from"] == 1 and second["completed"]
    assert [s["status"] for s in second["steps"]] == ["proven_earlier", "proven"]
    assert second["steps"][1]["proof"]["on_order"] == [6, 13, 3, 6]
    assert tools_called(server).count("draft_reorder") == drafts_before  # the proven step was not repeated
    again = deck.run_plan(plan, resume=second)  # everything proven: nothing runs
    assert again["completed"] and all(s["status"] == "proven_earlier" for s in again["steps"])


def test_runs_refuse_edited_plans_foreign_records_and_odd_answers(deck):
    plan = restock_plan(deck)
    edited = {**plan, "steps": [{**plan["steps"][0], "arguments": {**RESTOCK, "ledger_version": 2}}]}
    with pytest.raises(FlightDeckError, match="plan_digest"):
        deck.run_plan(edited)
    with pytest.raises(FlightDeckError, match="plan"):
        deck.run_plan({"steps": []})
    other = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}])
    with pytest.raises(FlightDeckError, match="different plan"):
        deck.run_plan(plan, resume=deck.run_plan(other))
    with pytest.raises(FlightDeckError, match="approver answered"):
        deck.run_plan(plan, approver=lambda question: "maybe")


# -- in process -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("era", ERAS)
def test_in_process_restock_in_both_eras(era):
    room = Stockroom(era=era)
    deck = FlightDeck.in_process(room)
    room.draft_reorder()
    before = len(room.trace())
    plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": RESTOCK}])
    assert len(room.trace()) == before  # compiling wrote nothing
    run = deck.run_plan(plan, approver=lambda question: "accept")
    assert run["completed"] and run["steps"][0]["proof"]["on_order"] == [6, 13, 3, 6]
    assert room.verify() == []


def test_a_changed_catalog_stops_the_run_before_any_call():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    plan = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}])
    room.tools = lambda: [{**tool, "description": "changed"} if tool["name"] == "read_stock" else tool for tool in Stockroom.tools()]
    before = len(room.trace())
    run = deck.run_plan(plan)
    assert run["stop_reason"] == "catalog_changed" and run["steps"][0]["invoked"] is False
    assert len(room.trace()) == before


def test_an_execution_time_authority_error_is_reported_as_refused():
    room = Stockroom(client_capabilities={})  # a client that cannot answer forms: the server refuses at call time
    deck = FlightDeck.in_process(room)
    room.draft_reorder()
    plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": RESTOCK}])
    assert plan["blocked_steps"] == []  # static preflight cannot see this; the call's own policy does
    run = deck.run_plan(plan, approver=lambda question: "accept")
    assert run["stop_reason"] == "refused" and run["steps"][0]["error"]["data"]["error"] == "missing_capability"


def test_a_postcondition_that_is_not_observed_stops_the_run():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    room.draft_reorder()
    plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": RESTOCK}])
    stale = room.read_stock()
    room.read_stock = lambda: stale  # the authoritative read never shows the change
    run = deck.run_plan(plan, approver=lambda question: "accept")
    assert run["stop_reason"] == "postcondition_unproven" and run["steps"][0]["proof"]["proven"] is False
    assert room.snapshot()["ledger_version"] == 2  # the call happened; only its proof is missing


# -- review: hand-edited plans, validation_changed, resume never repeats an unsafe call ------------------------
def _redigested(plan: dict) -> dict:
    """``plan`` with its digest recomputed, as a caller who edits a plan file by hand could do."""
    from mcplab.flightdeck.profiles import digest_of

    body = {key: value for key, value in plan.items() if key != "plan_digest"}
    return {**body, "plan_digest": digest_of(body)}


def test_edited_arguments_with_a_recomputed_digest_stop_as_validation_changed():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    plan = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}, {"tool": "draft_reorder", "arguments": {}}])
    before = len(room.trace())
    edited = _redigested({**plan, "steps": [{**plan["steps"][0], "arguments": {"verbose": True}}, plan["steps"][1]]})
    run = deck.run_plan(edited)
    assert run["stop_reason"] == "validation_changed" and run["stopped_at"] == 0
    assert [s["status"] for s in run["steps"]] == ["stopped", "not_reached"] and run["steps"][0]["invoked"] is False
    assert "invalid_arguments" in [b["code"] for b in run["steps"][0]["blockers"]]
    swapped = _redigested({**plan, "steps": [{**plan["steps"][0], "tool": "delete_item"}, plan["steps"][1]]})
    assert deck.run_plan(swapped)["stop_reason"] == "validation_changed"
    assert len(room.trace()) == before  # nothing reached the server's tools


def test_a_changed_validation_without_blockers_is_validation_changed():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    plan = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}])
    step = plan["steps"][0]
    run = deck.run_plan(_redigested({**plan, "steps": [{**step, "validation_fingerprint": "sha256:" + "1" * 64}]}))
    assert run["stop_reason"] == "validation_changed" and run["steps"][0]["invoked"] is False


@pytest.mark.parametrize("edit", [
    lambda plan: {**plan, "steps": plan["steps"][::-1]},  # reordered: would run step 1 first
    lambda plan: {**plan, "steps": plan["steps"] * 11},  # 22 steps: over the bound
    lambda plan: {**plan, "steps": [1]},
    lambda plan: {**plan, "steps": [{"index": 0, "tool": "read_stock"}]},
    lambda plan: {**plan, "steps": [{**plan["steps"][0], "static_request_blocked": "no"}, plan["steps"][1]]},
    lambda plan: {key: value for key, value in plan.items() if key != "era"},
])
def test_a_malformed_plan_with_a_valid_digest_is_refused_before_any_call(edit):
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    room.draft_reorder()
    plan = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}, {"tool": "commit_reorder", "arguments": RESTOCK}])
    before = len(room.trace())
    with pytest.raises(FlightDeckError, match="plan"):
        deck.run_plan(_redigested(edit(plan)), approver=lambda question: "accept")
    assert len(room.trace()) == before and room.snapshot()["ledger_version"] == 1


def test_a_malformed_resume_record_is_read_safely():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    plan = deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}])
    bad = {"kind": "mcplab.flightdeck.run/v1", "plan_digest": plan["plan_digest"],
           "steps": [{"index": 0, "status": "proven", "proof": 5}, {"index": True}, "x"]}
    run = deck.run_plan(plan, resume=bad)
    assert run["completed"] and run["steps"][0]["status"] == "proven"  # the odd record proves nothing: the step ran


def test_resume_rereads_an_invoked_commit_instead_of_committing_again():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    room.draft_reorder()
    plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": RESTOCK}])
    real_read = room.read_stock
    stale = room.read_stock()
    room.read_stock = lambda: stale  # the proof read misses the commit this time
    first = deck.run_plan(plan, approver=lambda question: "accept")
    assert first["stop_reason"] == "postcondition_unproven" and first["steps"][0]["invoked"]
    room.read_stock = real_read
    commits = [r["tool"] for r in room.trace()].count("commit_reorder")
    second = deck.run_plan(plan, approver=lambda question: "accept", resume=first)
    step = second["steps"][0]
    assert second["completed"] and step["status"] == "proven" and step["invoked"] is False and step["invoked_earlier"]
    assert step["proof"]["rechecked"] and step["proof"]["on_order"] == [6, 13, 3, 6]
    assert [r["tool"] for r in room.trace()].count("commit_reorder") == commits  # not called again
