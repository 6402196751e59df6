from __future__ import annotations

import pytest

from mcplab import ProtocolViolation, validate_result

TOOL = {"name": "read_stock", "description": "Read the ledger.", "inputSchema": {"type": "object"}}
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def case_of(result, era="modern", method="tools/list", capabilities=None) -> str:
    with pytest.raises(ProtocolViolation) as info:
        validate_result(result, era, method, capabilities)
    return info.value.case


def test_the_seed_lab_calls():
    assert validate_result({"tools": []}, "legacy") == "complete"
    assert case_of({"tools": []}) == "negative-modern-missing-result-type"
    result = {"resultType": "complete", "tools": [], "futureHint": True}
    assert validate_result(result, "modern") == "complete"
    assert result["futureHint"] is True  # kept, not stripped
    assert case_of({"resultType": "future_mode", "tools": []}) == "negative-unknown-result-type"


def test_violation_codes_classify_client_faults():
    with pytest.raises(ProtocolViolation) as info:
        validate_result({"tools": []}, "modern")
    assert info.value.code == -32602


def test_legacy_era_knows_only_complete():
    assert case_of({"resultType": "input_required", "requestState": "x"}, "legacy", "tools/call") == "negative-unknown-result-type"
    assert validate_result({"resultType": "complete", "tools": []}, "legacy") == "complete"


def test_task_needs_the_extension_advertised():
    task = {"resultType": "task", "taskId": "t-1", "status": "working", "createdAt": "2026-09-01T10:00:00Z",
            "lastUpdatedAt": "2026-09-01T10:00:01Z", "ttlMs": 60000, "pollIntervalMs": 500}
    assert case_of(task, method="tools/call") == "negative-unadvertised-extension"
    assert case_of(task, method="tools/call", capabilities={"extensions": {}}) == "negative-unadvertised-extension"
    assert validate_result(task, "modern", "tools/call", TASKS) == "task"
    assert validate_result({**task, "ttlMs": None}, "modern", "tools/call", TASKS) == "task"
    for broken in ({**task, "status": "sleeping"}, {**task, "taskId": ""}, {**task, "createdAt": "yesterday"},
                   {k: v for k, v in task.items() if k != "ttlMs"}, {**task, "pollIntervalMs": 0}):
        assert case_of(broken, method="tools/call", capabilities=TASKS) == "negative-task-payload"
    assert case_of(task, method="tools/list", capabilities=TASKS) == "negative-task-payload"


def test_input_required_only_where_input_may_be_asked():
    ask = {"resultType": "input_required", "requestState": "opaque"}
    for method in ("tools/call", "prompts/get", "resources/read"):
        assert validate_result(ask, "modern", method) == "input_required"
    assert case_of(ask, method="tools/list") == "negative-input-required-misplaced"
    assert case_of({"resultType": "input_required"}, method="tools/call") == "negative-input-required-payload"
    bad = {"resultType": "input_required", "inputRequests": {"a": {"method": "tools/call"}}}
    assert case_of(bad, method="tools/call") == "negative-input-required-payload"
    good = {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create", "params": {}}}}
    assert validate_result(good, "modern", "tools/call") == "input_required"


@pytest.mark.parametrize(
    "tools",
    [None, "x", [TOOL, TOOL], [{**TOOL, "name": ""}], [{**TOOL, "description": "  "}],
     [{**TOOL, "inputSchema": {"type": "string"}}], [{**TOOL, "inputSchema": []}], ["read_stock"]],
)
def test_tools_list_payload(tools):
    result = {"resultType": "complete"}
    if tools is not None:
        result["tools"] = tools
    assert case_of(result) == "negative-tools-list-payload"


def test_well_typed_result_type_does_not_rescue_a_payload():
    assert case_of({"resultType": "complete", "completion": {"values": ["a"] * 101}}, method="completion/complete") == "negative-completion-payload"


@pytest.mark.parametrize(
    "completion, ok",
    [({"values": ["a"] * 100, "total": 100, "hasMore": False}, True), ({"values": [], "total": 0}, True),
     ({"values": ["a"] * 101}, False), ({"values": ["a", "b"], "total": 1}, False), ({"values": ["a"], "total": 2.5}, False),
     ({"values": ["a"], "total": True}, False), ({"values": ["a"], "total": -1}, False), ({"values": ["a"], "hasMore": "yes"}, False),
     ({"values": [1]}, False), ({}, False)],
)
def test_completion_limits(completion, ok):
    result = {"resultType": "complete", "completion": completion}
    if ok:
        assert validate_result(result, "modern", "completion/complete") == "complete"
    else:
        assert case_of(result, method="completion/complete") == "negative-completion-payload"


def test_tools_call_and_discover_payloads():
    assert validate_result({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}, "modern", "tools/call")
    assert case_of({"resultType": "complete", "content": "ok"}, method="tools/call") == "negative-tools-call-payload"
    assert case_of({"resultType": "complete", "content": [], "isError": "no"}, method="tools/call") == "negative-tools-call-payload"
    discover = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}
    assert validate_result(discover, "modern", "server/discover") == "complete"
    assert case_of({**discover, "supportedVersions": []}, method="server/discover") == "negative-discover-payload"


def test_cache_fields_are_type_checked():
    assert case_of({"resultType": "complete", "tools": [], "ttlMs": "1000"}) == "negative-cache-fields"
    assert case_of({"resultType": "complete", "tools": [], "cacheScope": "shared"}) == "negative-cache-fields"
    assert validate_result({"resultType": "complete", "tools": [], "ttlMs": -5, "cacheScope": "public"}, "modern") == "complete"


def test_non_object_results():
    assert case_of([]) == "negative-result-shape"
    assert case_of({"resultType": "complete", "tools": [], "_meta": []}) == "negative-result-shape"


def test_the_legacy_tasks_key_does_not_advertise_the_modern_extension():
    task = {"resultType": "task", "taskId": "t", "status": "working", "createdAt": "2026-09-01T10:00:00Z",
            "lastUpdatedAt": "2026-09-01T10:00:00Z", "ttlMs": None}
    assert case_of(task, method="tools/call", capabilities={"tasks": {}}) == "negative-unadvertised-extension"


def test_capabilities_must_be_a_mapping():
    with pytest.raises(TypeError, match="capabilities must be a mapping"):
        validate_result({"resultType": "complete", "tools": []}, "modern", "tools/list", ["tasks"])


def test_empty_input_requests_without_state_ask_for_nothing():
    assert case_of({"resultType": "input_required", "inputRequests": {}}, method="tools/call") == "negative-input-required-payload"
