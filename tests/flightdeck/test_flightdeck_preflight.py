"""Flight Deck preflight: read-only discovery, inspection, validation, preview and plans.

Against a real stockroom server over HTTP in both eras, the in-process ``Stockroom``, and a plain
MCP server that is not the stockroom (so nothing about its policy may be invented).
"""

from __future__ import annotations

import json
from contextlib import contextmanager

import mcp_types as t
import pytest
from mcp.server import Server

from mcplab.flightdeck import STOP_REASONS, FlightDeck, FlightDeckError, check_arguments
from mcplab.serving import serve_app
from mcplab.stockroom import Stockroom, StockroomClient, serve_stockroom

from .support import ERAS, RESTOCK


def trace_length(server) -> int:
    return len(server.stockroom.trace())


def codes(result) -> list[str]:
    return [b["code"] for b in result["blockers"]]


# -- discovery and inspection ----------------------------------------------------------------------------
def test_inspect_server_reports_the_discovered_catalog_era_and_identity(server, deck):
    before = trace_length(server)
    report = deck.inspect_server()
    assert report["era"] == deck.connection.era
    assert report["server"]["name"] == "mcplab-stockroom"
    assert report["tool_count"] == len(server.stockroom.tools())
    assert [tool["name"] for tool in report["tools"]] == sorted(tool["name"] for tool in server.stockroom.tools())
    assert report["catalog_identity"].startswith("sha256:") and report["policy_identity"]["profile"] == "mcplab-stockroom"
    assert report["discovered_via"][-1] == "tools/list"
    json.dumps(report)  # JSON-serialisable
    assert trace_length(server) == before


def test_catalog_identity_is_the_same_in_process_and_changes_with_any_descriptor():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    first = deck.inspect_server()["catalog_identity"]
    assert deck.inspect_server()["catalog_identity"] == first
    changed = [dict(tool) for tool in Stockroom.tools()]
    changed[0] = {**changed[0], "description": changed[0]["description"] + " (now slower)"}
    room.tools = lambda: changed  # the server's catalog changed under us
    assert deck.inspect_server()["catalog_identity"] != first
    legacy = FlightDeck.in_process(Stockroom(era="legacy")).inspect_server()["catalog_identity"]
    assert legacy != first  # the era is part of the identity


def test_search_stays_inside_the_effective_catalog(deck):
    found = deck.search_tools("ledger")
    names = {hit["name"] for hit in found["matches"]}
    assert names and names <= {"read_stock", "draft_reorder", "request_approval", "commit_reorder"}
    assert deck.search_tools("delete")["matches"] == []
    assert [hit["name"] for hit in deck.search_tools("Approval GATE")["matches"]] == ["commit_reorder"]
    with pytest.raises(FlightDeckError):
        deck.search_tools("   ")


def test_inspect_tool_commit_reorder_is_write_with_approval(deck):
    info = deck.inspect_tool("commit_reorder")
    assert info["in_effective_catalog"] and info["descriptor"]["name"] == "commit_reorder"
    assert info["input_schema"]["required"] == ["draft_id", "ledger_version", "lines"]
    assert info["annotations"]["readOnlyHint"] is False
    policy = info["execution_policy"]
    assert (policy["effect_class"], policy["allow_listed"], policy["approval_required"], policy["denied"]) == ("write", True, True, False)
    assert policy["replay_class"] == "not_safe_to_repeat"
    assert info["authority"]["consent"] == "unproven" and info["denial_evidence"] == []


def test_delete_item_is_not_in_the_catalog_and_denied_without_reaching_the_server(server, deck):
    before = trace_length(server)
    info = deck.inspect_tool("delete_item")
    assert not info["in_effective_catalog"] and info["execution_policy"]["denied"] is True
    verdict = deck.validate_tool_call("delete_item", {"sku": "SR-101"})
    assert verdict["static_request_blocked"] and {"not_in_catalog", "denied_by_policy"} <= set(codes(verdict))
    plan = deck.compile_invocation_plan([{"tool": "delete_item", "arguments": {"sku": "SR-101"}}])
    run = deck.run_plan(plan, approver=lambda question: "accept")
    assert run["stop_reason"] == "step_blocked" and run["steps"][0]["invoked"] is False
    assert not [record for record in server.stockroom.trace() if record["tool"] == "delete_item"]
    assert trace_length(server) == before


def test_authority_layers_stay_separate_and_unproven(deck):
    layers = deck.inspect_authority("commit_reorder")
    assert layers["runtime_visibility"] == {**layers["runtime_visibility"], "visible": True, "proven": True}
    assert layers["policy_knowledge"]["known"] and layers["policy_knowledge"]["approval_required"]
    assert layers["target_readiness"]["status"] == "unproven"  # no arguments: no exact target
    for layer in ("consent", "downstream_availability", "outcome"):
        assert layers[layer]["proven"] is False and layers[layer]["status"] == "unproven"
    assert layers["denial_evidence"] == [] and "never 'denied'" in layers["false_proof_means"]


def test_authority_with_arguments_reads_the_exact_target(server, deck):
    deck.connection.api.draft_reorder()
    layers = deck.inspect_authority("commit_reorder", RESTOCK)
    assert layers["target_readiness"]["proven"] and layers["target_readiness"]["identity"]["draft_id"] == "DR-0001"
    assert deck.inspect_authority("commit_reorder", {**RESTOCK, "draft_id": "DR-0009"})["target_readiness"]["status"] == "blocked"


def test_limits_are_reported_without_reserving(deck):
    limits = deck.inspect_limits()
    assert limits["reserves_capacity"] is False
    assert limits["server_limits"]["max_lines_per_commit"] == 100 and limits["server_limits"]["max_add_on_order"] == 10_000
    assert limits["tool_schema_limits"]["commit_reorder"]["$.lines"] == {"minItems": 1, "maxItems": 100}
    assert limits["flightdeck_bounds"]["max_argument_depth"] == 32


# -- validation and preview ---------------------------------------------------------------------------------
def test_restock_preflight_is_write_with_approval_and_writes_nothing(server, deck):
    assert deck.connection.api.draft_reorder() == RESTOCK
    before, ledger = trace_length(server), server.stockroom.snapshot()
    identity = deck.inspect_server()["catalog_identity"]
    verdict = deck.validate_tool_call("commit_reorder", RESTOCK, catalog_identity=identity)
    assert verdict["static_request_blocked"] is False and verdict["blockers"] == []
    assert verdict["catalog_precondition"]["holds"] is True
    assert verdict["policy"]["effect_class"] == "write" and verdict["approval_required"] is True
    assert verdict["target"]["identity"] | {"draft_id": "DR-0001", "draft_status": "open", "ledger_version": 1} == verdict["target"]["identity"]
    assert verdict["invoked"] is False and verdict["queued"] is False
    preview = deck.preview_tool_call("commit_reorder", RESTOCK)["preview"]
    assert preview["prediction"] is True and preview["receipt"] is False
    change = preview["effects"]["ledger_change"]
    assert change["ledger_version_after"] == 2
    assert [row["on_order_after"] for row in change["on_order_diff"]] == [6, 13, 3, 6]
    approval = preview["effects"]["approval"]
    assert approval["kind"] == ("elicitation" if deck.connection.era == "modern" else "out_of_band")
    assert [r["decision"] for r in preview["effects"]["trace_records"]][0] == "asked"
    deck.compile_invocation_plan([{"tool": "read_stock", "arguments": {}}, {"tool": "commit_reorder", "arguments": RESTOCK}])
    deck.inspect_authority("commit_reorder", RESTOCK)
    deck.inspect_limits()
    deck.search_tools("stock")
    assert trace_length(server) == before and server.stockroom.snapshot() == ledger
    assert server.stockroom.pending_approvals() == []


@pytest.mark.parametrize(("change", "code"), [
    ({"draft_id": "DR-0042"}, "target_missing"),
    ({"ledger_version": 7}, "stale_ledger_version"),
    ({"lines": [{"sku": "SR-101", "add_on_order": 5}]}, "payload_drift"),
    ({"lines": [{"sku": "SR-101", "add_on_order": 0}]}, "invalid_arguments"),
    ({"surprise": True}, "invalid_arguments"),
])
def test_validation_names_the_blocker(deck, change, code):
    deck.connection.api.draft_reorder()
    verdict = deck.validate_tool_call("commit_reorder", {**RESTOCK, **change})
    assert verdict["static_request_blocked"] and code in codes(verdict)


def test_a_committed_draft_is_a_closed_target(server, deck):
    room = server.stockroom
    room.approve(room.commit_reorder(room.draft_reorder()))
    verdict = deck.validate_tool_call("commit_reorder", RESTOCK)
    assert {"target_closed", "stale_ledger_version"} <= set(codes(verdict))


def test_a_stale_catalog_identity_is_a_blocker(deck):
    verdict = deck.validate_tool_call("read_stock", {}, catalog_identity="sha256:" + "0" * 64)
    assert verdict["catalog_precondition"]["holds"] is False and codes(verdict) == ["catalog_changed"]


def test_bounded_schema_check_refuses_deep_and_huge_arguments_before_validating():
    schema = {"type": "object"}
    deep: dict = {}
    node = deep
    for _ in range(40):
        node["x"] = {}
        node = node["x"]
    assert [b["code"] for b in check_arguments(schema, deep)["blockers"]] == ["arguments_too_deep"]
    assert [b["code"] for b in check_arguments(schema, {"x": "a" * 70_000})["blockers"]] == ["arguments_too_large"]
    assert [b["code"] for b in check_arguments(schema, {"x": float("nan")})["blockers"]] == ["arguments_not_json"]
    assert [b["code"] for b in check_arguments({"type": 12}, {})["blockers"]] == ["descriptor_schema_invalid"]
    many = check_arguments({"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(50)}},
                           {f"p{i}": i for i in range(50)})
    assert len(many["errors"]) == 20 and many["valid"] is False


def test_plan_keeps_order_and_authorises_nothing(deck):
    deck.connection.api.draft_reorder()
    calls = [{"tool": "read_stock", "arguments": {}}, {"tool": "commit_reorder", "arguments": RESTOCK},
             {"name": "delete_item", "arguments": {}}]
    plan = deck.compile_invocation_plan(calls)
    assert plan["execution_authorized"] is False and plan["execution_started"] is False
    assert [step["tool"] for step in plan["steps"]] == ["read_stock", "commit_reorder", "delete_item"]
    read, commit, delete = plan["steps"]
    assert (read["effect_class"], read["replay_class"], read["static_request_blocked"]) == ("read", "safe_to_repeat", False)
    assert (commit["effect_class"], commit["replay_class"], commit["approval_required"]) == ("write", "not_safe_to_repeat", True)
    assert commit["target_identity"]["draft_id"] == "DR-0001"
    assert {"approval_missing", "target_changed", "postcondition_unproven"} <= set(commit["stop_conditions"])
    assert set(commit["stop_conditions"]) <= set(STOP_REASONS)
    assert delete["static_request_blocked"] and plan["blocked_steps"] == [2]
    with pytest.raises(FlightDeckError, match="at most 20"):
        deck.compile_invocation_plan([{"tool": "read_stock"}] * 21)
    with pytest.raises(FlightDeckError, match=r"calls\[0\]"):
        deck.compile_invocation_plan([{"arguments": {}}])
    with pytest.raises(FlightDeckError, match=r"calls\[1\]\.arguments: arguments are \d+ bytes"):
        deck.compile_invocation_plan([{"tool": "read_stock"}, {"tool": "read_stock", "arguments": {"x": "a" * 70_000}}])


# -- any MCP server: nothing is invented ---------------------------------------------------------------------
@contextmanager
def serve_generic():
    """A plain MCP server (the SDK's low-level Server) with one read-only tool and one unannotated tool."""
    calls: list[str] = []
    tools = [t.Tool.model_validate({"name": "echo", "description": "Echo the text back.", "annotations": {"readOnlyHint": True},
                                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 50}},
                                                    "required": ["text"]}}),
             t.Tool.model_validate({"name": "launch", "description": "Launch a job.",
                                    "inputSchema": {"type": "object", "properties": {"count": {"type": "integer", "maximum": 3}}}})]

    async def list_tools(ctx, params):
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        calls.append(params.name)
        return t.CallToolResult(content=[t.TextContent(type="text", text="ok")], structured_content={"ok": True})

    app = Server("generic-test", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool).streamable_http_app(
        stateless_http=True, json_response=True, host="127.0.0.1")
    with serve_app(app, port=0, name="generic test server") as port:
        yield f"http://127.0.0.1:{port}/mcp", calls


@pytest.mark.parametrize("era", ERAS)
def test_a_generic_server_gets_hints_and_unknowns_never_invented_policy(era):
    with serve_generic() as (url, calls), FlightDeck.connect(url, era=era) as deck:
        report = deck.inspect_server()
        assert report["server"]["name"] == "generic-test" and report["tool_count"] == 2
        assert report["policy_identity"]["profile"] == "descriptor-hints"
        echo, launch = deck.inspect_tool("echo")["execution_policy"], deck.inspect_tool("launch")["execution_policy"]
        assert (echo["effect_class"], echo["effect_source"], echo["allow_listed"]) == ("read", "annotation_hint", None)
        assert (launch["effect_class"], launch["approval_required"], launch["replay_class"]) == ("unknown", None, "unknown")
        assert deck.inspect_authority("launch")["policy_knowledge"]["known"] is False
        assert codes(deck.validate_tool_call("launch", {"count": 4})) == ["invalid_arguments"]
        assert deck.validate_tool_call("launch", {"count": 2})["static_request_blocked"] is False
        assert deck.preview_tool_call("launch", {"count": 2})["preview"]["effects"]["state_change"] == "unproven"
        assert deck.inspect_limits()["tool_schema_limits"]["echo"] == {"$.text": {"maxLength": 50}}
        plan = deck.compile_invocation_plan([{"tool": "echo", "arguments": {"text": "hi"}},
                                             {"tool": "launch", "arguments": {"count": 2}}])
        assert calls == []  # preflight called nothing
        run = deck.run_plan(plan)
        assert run["steps"][0]["status"] == "proven" and run["steps"][0]["proof"]["kind"] == "caller_only_output"
        assert run["stop_reason"] == "postcondition_unproven" and run["resume_from"] == 1
        assert calls == ["echo", "launch"]


def test_the_drafts_observation_reads_without_a_trace_record(server):
    with StockroomClient(server.url) as client:
        client.reset()
        client.draft_reorder()
        before = trace_length(server)
        assert client.drafts() == [{"draft_id": "DR-0001", "ledger_version": 1, "lines": RESTOCK["lines"], "status": "open"}]
        assert trace_length(server) == before
        client.reset()
        assert client.drafts() == []


@pytest.mark.parametrize("era", ERAS)
def test_without_admin_routes_the_target_stays_unproven_not_denied(era):
    with serve_stockroom(admin=False) as srv, FlightDeck.connect(srv.url, era=era) as deck:
        deck.connection.api.draft_reorder()
        verdict = deck.validate_tool_call("commit_reorder", RESTOCK)
        assert verdict["static_request_blocked"] is False and verdict["target"]["checked"] is False
        layers = deck.inspect_authority("commit_reorder", RESTOCK)
        assert layers["target_readiness"]["status"] == "unproven" and layers["target_readiness"]["proven"] is False
        assert layers["denial_evidence"] == []
        plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": RESTOCK}])
        run = deck.run_plan(plan, approver=lambda question: "accept")
        if era == "modern":  # the gate asks in the form; the proof is read with read_stock
            assert run["completed"] and run["steps"][0]["proof"]["on_order"] == [6, 13, 3, 6]
        else:  # nobody can answer out of band here: no route for the person
            assert run["stop_reason"] == "approval_missing" and "admin routes" in run["steps"][0]["error"]["message"]


def test_a_remote_or_recursive_ref_in_a_descriptor_is_never_fetched(monkeypatch):
    import urllib.request

    def fetch(*args, **kwargs):
        raise AssertionError("a $ref was fetched")

    monkeypatch.setattr(urllib.request, "urlopen", fetch)
    remote = check_arguments({"$ref": "http://127.0.0.1:9/schema.json"}, {})
    recursive = check_arguments({"$ref": "#", "type": "object"}, {})
    assert [b["code"] for b in remote["blockers"] + recursive["blockers"]] == ["descriptor_schema_unusable"] * 2
    local = check_arguments({"$defs": {"n": {"type": "integer"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}}, {"a": "x"})
    assert local["valid"] is False and local["errors"][0]["path"] == "$.a"


def test_outputs_show_the_url_without_its_secrets():
    from mcplab.flightdeck import shown_url

    assert shown_url("http://ann:hunter2@127.0.0.1:8765/mcp?token=abc&x=1") == \
        "http://ann:[REDACTED]@127.0.0.1:8765/mcp?token=%5BREDACTED%5D&x=1"
    assert shown_url("http://127.0.0.1:8765/mcp") == "http://127.0.0.1:8765/mcp"


def test_resume_never_repeats_an_invoked_call_whose_effect_is_unproven():
    with serve_generic() as (url, calls), FlightDeck.connect(url) as deck:
        plan = deck.compile_invocation_plan([{"tool": "echo", "arguments": {"text": "hi"}}, {"tool": "launch", "arguments": {"count": 1}}])
        first = deck.run_plan(plan)
        assert first["stop_reason"] == "postcondition_unproven" and calls == ["echo", "launch"]
        second = deck.run_plan(plan, resume=first)
        step = second["steps"][1]
        assert second["stop_reason"] == "postcondition_unproven" and step["invoked"] is False and step["invoked_earlier"]
        assert "not invoked again" in step["why"]
        assert calls == ["echo", "launch"]  # launch (not known to be safe to repeat) ran once
        from mcplab.flightdeck.profiles import digest_of

        body = {k: v for k, v in plan.items() if k != "plan_digest"}
        body["steps"] = [body["steps"][0], {**body["steps"][1], "replay_class": "safe_to_repeat"}]  # a hand edit
        edited = {**body, "plan_digest": digest_of(body)}
        third = deck.run_plan(edited)
        assert deck.run_plan(edited, resume=third)["steps"][1]["invoked"] is False  # the server's policy decides, not the file
        assert calls.count("launch") == 2


def test_a_pattern_that_backtracks_exponentially_is_listed_not_run():
    from mcplab.flightdeck.validation import risky_pattern

    evil = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}}
    result = check_arguments(evil, {"a": "a" * 30 + "!"})  # re.search would run for minutes on this
    assert result["unchecked_patterns"] == ["^(a+)+$"] and result["checked"] and result["blockers"] == []
    assert [b["code"] for b in check_arguments({"type": "object", "patternProperties": {"(x|xy)*$": {}}}, {"x": 1})["blockers"]] == [
        "descriptor_schema_unusable"]
    assert [risky_pattern(p) for p in ("(ab|a)*c", r"(a)\1", "^DR-[0-9]{4}$", "^[a-z]+-[0-9]+$")] == [True, True, False, False]
    safe = check_arguments({"type": "object", "properties": {"d": {"type": "string", "pattern": "^DR-[0-9]{4}$"}}}, {"d": "DR-12"})
    assert safe["valid"] is False and "unchecked_patterns" not in safe  # ordinary patterns are still checked


def test_odd_observations_and_loose_schemas_leave_the_target_unproven_without_a_crash():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    room.draft_reorder()
    real_snapshot = room.snapshot
    room.snapshot = lambda: {"ledger_version": 1, "items": [1, 2]}  # not the stockroom's shapes
    verdict = deck.preview_tool_call("commit_reorder", RESTOCK)
    assert verdict["target"]["checked"] is False and verdict["static_request_blocked"] is False
    assert "ledger_change" not in verdict["preview"]["effects"]
    room.snapshot = real_snapshot
    loose = [{**tool, "inputSchema": {"type": "object"}} if tool["name"] == "commit_reorder" else tool for tool in Stockroom.tools()]
    room.tools = lambda: loose  # a server whose schema lets through what the profile cannot read
    preview = deck.preview_tool_call("commit_reorder", {"draft_id": "DR-0001"})
    assert preview["static_request_blocked"] and "invalid_arguments" in codes(preview)  # the server's own rules still hold
    assert preview["preview"]["effects"] is None
    assert deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": {"draft_id": "DR-0001"}}])["blocked_steps"] == [0]


def test_the_stockroom_rules_stricter_than_its_schema_are_checked(server, deck):
    deck.connection.api.draft_reorder()
    before = trace_length(server)
    verdict = deck.validate_tool_call("commit_reorder", {**RESTOCK, "ledger_version": 1.0})  # JSON Schema calls 1.0 an integer
    assert verdict["static_request_blocked"] and codes(verdict) == ["invalid_arguments"]
    assert "ledger_version must be an integer" in verdict["blockers"][0]["message"] and verdict["schema"]["valid"] is False
    outcome = deck.connection.api.call_tool("commit_reorder", {**RESTOCK, "ledger_version": 1.0})
    assert outcome.kind == "error"  # the server refuses it too, which the preflight now predicts
    assert trace_length(server) == before + 1


def test_catalog_identity_changes_with_a_shadowed_duplicate_descriptor():
    room = Stockroom()
    deck = FlightDeck.in_process(room)
    read = next(tool for tool in Stockroom.tools() if tool["name"] == "read_stock")
    room.tools = lambda: [*Stockroom.tools(), {**read, "description": "a second copy"}]
    first = deck.inspect_server()
    assert "read_stock is listed twice; the first descriptor is used" in first["notes"]
    room.tools = lambda: [*Stockroom.tools(), {**read, "description": "a second copy, changed"}]
    assert deck.inspect_server()["catalog_identity"] != first["catalog_identity"]
    room.tools = Stockroom.tools
    assert deck.inspect_server()["catalog_identity"] != first["catalog_identity"]


def test_schema_errors_never_quote_a_value_under_a_secret_named_key():
    schema = {"type": "object", "properties": {"api_key": {"type": "string", "maxLength": 4}, "name": {"type": "string", "maxLength": 2}}}
    result = check_arguments(schema, {"api_key": "sk-live-hunter2", "name": "long"})
    assert "hunter2" not in json.dumps(result)
    assert [e["path"] for e in result["errors"]] == ["$.api_key", "$.name"]
    assert "[REDACTED]" in result["errors"][0]["message"] and "'long' is too long" in result["errors"][1]["message"]
