"""Pins of ``validate_result``: each broken rule answers -32602 with its stable case name and a message naming the field.

Messages are checked by their leading words (the field and the rule) so a later rewording of the
tail does not break the pin; lists of allowed values are checked in full where the message spells them.
"""

from __future__ import annotations

import pytest

from mcplab.cases import spec_rules_only
from mcplab.errors import INVALID_PARAMS, ProtocolViolation
from mcplab.results import (
    BASE_RESULT_TYPES,
    INPUT_REQUEST_METHODS,
    INPUT_REQUIRED_METHODS,
    MAX_COMPLETION_VALUES,
    TASK_STATUSES,
    tasks_advertised,
    validate_result,
)

TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TOOL = {"name": "read_stock", "description": "Read the ledger.", "inputSchema": {"type": "object"}}
TASK = {"resultType": "task", "taskId": "t-1", "status": "working", "createdAt": "2026-09-01T10:00:00Z",
        "lastUpdatedAt": "2026-09-01T10:00:01Z", "ttlMs": 60000}


def violation(result, era="modern", method="tools/list", capabilities=None) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation) as caught:
        validate_result(result, era, method, capabilities)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == str(caught.value)
    return caught.value


def check(result, case, message_start, era="modern", method="tools/list", capabilities=None):
    error = violation(result, era, method, capabilities)
    assert error.case == case
    assert error.message.startswith(message_start), error.message


def ok(result, era="modern", method="tools/list", capabilities=None):
    return validate_result(result, era, method, capabilities)


def test_the_tables():
    assert BASE_RESULT_TYPES == ("complete", "input_required")
    assert INPUT_REQUIRED_METHODS == {"tools/call", "prompts/get", "resources/read"}
    assert INPUT_REQUEST_METHODS == {"elicitation/create", "sampling/createMessage", "roots/list"}
    assert TASK_STATUSES == {"working", "input_required", "completed", "failed", "cancelled"}
    assert MAX_COMPLETION_VALUES == 100


# --- shape, era and resultType ---------------------------------------------------------------

@pytest.mark.parametrize("result", [[], "x", None, 3])
def test_a_result_that_is_not_an_object(result):
    check(result, "negative-result-shape", f"a result must be a JSON object, got {type(result).__name__}")


def test_meta_must_be_an_object():
    check({"resultType": "complete", "tools": [], "_meta": []}, "negative-result-shape", "result _meta must be an object")
    assert ok({"resultType": "complete", "tools": [], "_meta": {}}) == "complete"


def test_unknown_era_and_bad_capabilities_are_caller_errors():
    with pytest.raises(ValueError):
        validate_result({"tools": []}, "future")
    with pytest.raises(TypeError, match="capabilities must be a mapping of server capabilities, got list"):
        validate_result({"resultType": "complete", "tools": []}, "modern", "tools/list", [])


def test_missing_result_type_is_complete_only_in_legacy():
    assert ok({"tools": []}, era="legacy") == "complete"
    check({"tools": []}, "negative-modern-missing-result-type", "a 2026-07-28 result must carry resultType")


@pytest.mark.parametrize("result_type", ["future_mode", None, "COMPLETE", 1])
def test_unknown_result_type(result_type):
    check({"resultType": result_type, "tools": []}, "negative-unknown-result-type",
          f"resultType {result_type!r} is not known in the modern era")


def test_legacy_knows_only_complete():
    check({"resultType": "input_required", "requestState": "s"}, "negative-unknown-result-type",
          "resultType 'input_required' is not known in the legacy era", era="legacy", method="tools/call")


@pytest.mark.parametrize("era, caps", [("modern", None), ("modern", {}), ("modern", {"extensions": []}),
                                       ("modern", {"tasks": {}}), ("legacy", TASKS)])
def test_task_needs_modern_and_the_extension(era, caps):
    check(TASK, "negative-unadvertised-extension",
          'resultType "task" needs the io.modelcontextprotocol/tasks extension advertised for this exchange',
          era=era, method="tools/call", capabilities=caps)


def test_tasks_advertised():
    assert tasks_advertised(TASKS) is True
    assert tasks_advertised(None) is False
    assert tasks_advertised({"extensions": {"other": {}}}) is False
    assert tasks_advertised({"extensions": ["io.modelcontextprotocol/tasks"]}) is False
    with pytest.raises(TypeError, match="capabilities must be a mapping of server capabilities, got str"):
        tasks_advertised("tasks")


# --- cache fields --------------------------------------------------------------------------

@pytest.mark.parametrize("ttl", ["60", 1.5, True, None])
def test_ttl_must_be_an_integer(ttl):
    check({"resultType": "complete", "tools": [], "ttlMs": ttl}, "negative-cache-fields", f"ttlMs must be an integer, got {ttl!r}")


@pytest.mark.parametrize("scope", ["shared", "PRIVATE", None])
def test_cache_scope_is_public_or_private(scope):
    check({"resultType": "complete", "tools": [], "cacheScope": scope}, "negative-cache-fields",
          f'cacheScope must be "public" or "private", got {scope!r}')


@pytest.mark.parametrize("scope", ["public", "private"])
def test_cache_fields_accepted(scope):
    assert ok({"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": scope}) == "complete"


def test_cache_fields_are_checked_for_every_method_and_in_legacy():
    check({"resultType": "complete", "ttlMs": "x"}, "negative-cache-fields", "ttlMs must be", method="prompts/get")
    check({"tools": [], "cacheScope": "x"}, "negative-cache-fields", "cacheScope must be", era="legacy")


# --- tools/list ------------------------------------------------------------------------------

def tools(*entries, **extra):
    return {"resultType": "complete", "tools": list(entries), **extra}


@pytest.mark.parametrize("result, start", [
    ({"resultType": "complete"}, "tools/list result needs a tools array"),
    ({"resultType": "complete", "tools": {}}, "tools/list result needs a tools array"),
    (tools(TOOL, "x"), "tools[1] must be an object"),
    (tools({**TOOL, "name": ""}), "tools[0].name must be a non-empty string"),
    (tools({k: v for k, v in TOOL.items() if k != "name"}), "tools[0].name must be a string"),
    (tools({**TOOL, "name": 5}), "tools[0].name must be a string"),
    (tools({**TOOL, "description": 5}), "tool 'read_stock': description must be a string"),
    (tools(TOOL, dict(TOOL)), "tool name 'read_stock' appears twice"),
    (tools({**TOOL, "description": "  "}), "tool 'read_stock' needs a useful (non-empty) description"),
    (tools({k: v for k, v in TOOL.items() if k != "description"}), "tool 'read_stock' needs a useful (non-empty) description"),
    (tools({**TOOL, "inputSchema": {"type": "string"}}), "tool 'read_stock' needs an inputSchema object with type \"object\""),
    (tools({**TOOL, "inputSchema": ["object"]}), "tool 'read_stock' needs an inputSchema object with type \"object\""),
    (tools({k: v for k, v in TOOL.items() if k != "inputSchema"}), "tool 'read_stock' needs an inputSchema object"),
    (tools(TOOL, nextCursor=3), "nextCursor must be a string"),
])
def test_tools_list_rules(result, start):
    check(result, "negative-tools-list-payload", start)


def test_tools_list_accepts_distinct_tools_and_a_cursor():
    other = {**TOOL, "name": "commit_reorder"}
    assert ok(tools(TOOL, other, nextCursor="c2")) == "complete"
    assert ok(tools()) == "complete"


# --- tools/call ------------------------------------------------------------------------------

def call(**fields):
    return {"resultType": "complete", "content": [{"type": "text", "text": "ok"}], **fields}


@pytest.mark.parametrize("result, start", [
    ({"resultType": "complete"}, "tools/call result needs a content array"),
    ({"resultType": "complete", "content": "text"}, "tools/call result needs a content array"),
    (call(content=[{"type": "text"}, "x"]), "content[1] must be an object with a string type"),
    (call(content=[{"text": "no type"}]), "content[0] must be an object with a string type"),
    (call(content=[{"type": 1}]), "content[0] must be an object with a string type"),
    (call(isError="yes"), "isError must be a boolean"),
])
def test_tools_call_rules(result, start):
    check(result, "negative-tools-call-payload", start, method="tools/call")


@pytest.mark.parametrize("value", [[1], "text", 0, None, False, {"a": 1}])
def test_structured_content_is_any_json_in_2026_07_28(value):
    """Issue 19: 2026-07-28 allows any JSON value (server/tools § Structured Content); the object rule is 2025-11-25's."""
    assert ok(call(structuredContent=value), method="tools/call") == "complete"


@pytest.mark.parametrize("value", [[1], "text", 0, None])
def test_structured_content_is_an_object_in_2025_11_25(value):
    error = violation(call(structuredContent=value), era="legacy", method="tools/call")
    assert (error.case, error.message) == ("negative-tools-call-payload", "structuredContent must be an object in 2025-11-25")
    assert ok(call(structuredContent={"a": 1}), era="legacy", method="tools/call") == "complete"


def test_should_and_course_rules_are_waived_by_the_specification_alone():
    """Issue 19: tool names (SHOULD) and a useful description (course rule) are waivable; a name's type is not."""
    listing = tools({**TOOL, "name": ""}, {**TOOL, "name": ""}, {k: v for k, v in TOOL.items() if k != "description"})
    with spec_rules_only() as waived:
        assert ok(listing) == "complete"
    assert waived == [("should-tool-names", "tools[0].name is empty"), ("should-tool-names", "tools[1].name is empty"),
                      ("should-tool-names", "tool name '' appears twice"),
                      ("course-tool-description", "tool 'read_stock' has no useful description")]
    with spec_rules_only() as waived:
        check(tools({**TOOL, "name": 5}), "negative-tools-list-payload", "tools[0].name must be a string")
        check(tools({**TOOL, "description": ["x"]}), "negative-tools-list-payload", "tool 'read_stock': description must be a string")
    assert waived == []


def test_tools_call_accepts_its_optional_fields():
    assert ok(call(isError=False, structuredContent={"a": 1}), method="tools/call") == "complete"
    assert ok(call(content=[]), method="tools/call") == "complete"


# --- completion/complete ---------------------------------------------------------------------

def completion(**fields):
    return {"resultType": "complete", "completion": {"values": ["a", "b"], **fields}}


@pytest.mark.parametrize("result, start", [
    ({"resultType": "complete"}, "completion/complete result needs a completion object"),
    ({"resultType": "complete", "completion": []}, "completion/complete result needs a completion object"),
    ({"resultType": "complete", "completion": {}}, "completion.values must be an array of strings"),
    (completion(values=["a", 1]), "completion.values must be an array of strings"),
    (completion(values=["v"] * 101), "completion.values holds 101 values; at most 100 are allowed"),
    (completion(total=-1), "completion.total must be a non-negative integer, got -1"),
    (completion(total=True), "completion.total must be a non-negative integer, got True"),
    (completion(total=2.0), "completion.total must be a non-negative integer, got 2.0"),
    (completion(total=1), "completion.total 1 is smaller than the 2 values sent"),
    (completion(hasMore="no"), "completion.hasMore must be a boolean, got 'no'"),
])
def test_completion_rules(result, start):
    check(result, "negative-completion-payload", start, method="completion/complete")


def test_completion_boundaries_accepted():
    assert ok(completion(values=["v"] * 100, total=100, hasMore=False), method="completion/complete") == "complete"
    assert ok(completion(values=[], total=0), method="completion/complete") == "complete"
    assert ok(completion(total=2), method="completion/complete") == "complete"


# --- server/discover -------------------------------------------------------------------------

@pytest.mark.parametrize("result, start", [
    ({"resultType": "complete", "capabilities": {}}, "server/discover result needs a non-empty supportedVersions array"),
    ({"resultType": "complete", "supportedVersions": [], "capabilities": {}}, "server/discover result needs a non-empty supportedVersions array"),
    ({"resultType": "complete", "supportedVersions": "2026-07-28", "capabilities": {}}, "server/discover result needs a non-empty supportedVersions array"),
    ({"resultType": "complete", "supportedVersions": ["2026-07-28", 1], "capabilities": {}}, "server/discover result needs a non-empty supportedVersions array"),
    ({"resultType": "complete", "supportedVersions": ["2026-07-28"]}, "server/discover result needs a capabilities object"),
    ({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": []}, "server/discover result needs a capabilities object"),
])
def test_discover_rules(result, start):
    check(result, "negative-discover-payload", start, method="server/discover")


def test_discover_accepted_and_unknown_methods_unchecked():
    assert ok({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}, method="server/discover") == "complete"
    assert ok({"resultType": "complete"}, method="resources/list") == "complete"


# --- input_required --------------------------------------------------------------------------

def ask(**fields):
    return {"resultType": "input_required", **fields}


@pytest.mark.parametrize("method", ["tools/list", "completion/complete", "server/discover"])
def test_input_required_is_misplaced_outside_its_methods(method):
    check(ask(requestState="s"), "negative-input-required-misplaced",
          f"{method} may not answer input_required (only prompts/get, resources/read, tools/call)", method=method)


@pytest.mark.parametrize("method", sorted(INPUT_REQUIRED_METHODS))
def test_input_required_accepted_with_a_state_or_requests(method):
    assert ok(ask(requestState="s"), method=method) == "input_required"
    assert ok(ask(inputRequests={"a": {"method": "roots/list"}}), method=method) == "input_required"
    assert ok(ask(inputRequests={"a": {"method": "sampling/createMessage", "params": {}}}, requestState=""), method=method) == "input_required"


@pytest.mark.parametrize("result, start", [
    (ask(), "input_required needs at least one input request or a requestState"),
    (ask(inputRequests={}), "input_required needs at least one input request or a requestState"),
    (ask(requestState=5), "requestState must be a string"),
    (ask(inputRequests=[{"method": "roots/list"}]), "inputRequests must be an object"),
    (ask(inputRequests={"a": "roots/list"}), "inputRequests['a'] must be an object whose method is one of "
                                             "elicitation/create, roots/list, sampling/createMessage"),
    (ask(inputRequests={"b": {"method": "tools/call"}}), "inputRequests['b'] must be an object whose method is one of "
                                                         "elicitation/create, roots/list, sampling/createMessage"),
    (ask(inputRequests={"a": {"method": "roots/list", "params": []}}), "inputRequests['a'].params must be an object"),
])
def test_input_required_payload_rules(result, start):
    check(result, "negative-input-required-payload", start, method="tools/call")


def test_input_required_payload_skips_cache_and_method_payload_checks():
    assert ok(ask(requestState="s", ttlMs="not checked"), method="tools/call") == "input_required"


# --- task ------------------------------------------------------------------------------------

def task(**fields):
    return {**TASK, **fields}


def without(key):
    return {k: v for k, v in TASK.items() if k != key}


@pytest.mark.parametrize("result, start", [
    (without("taskId"), "task result needs a non-empty taskId"),
    (task(taskId=""), "task result needs a non-empty taskId"),
    (task(taskId=7), "task result needs a non-empty taskId"),
    (task(status="sleeping"), "task status 'sleeping' is not one of cancelled, completed, failed, input_required, working"),
    (without("status"), "task status None is not one of cancelled, completed, failed, input_required, working"),
    (task(createdAt="yesterday"), "task createdAt must be an ISO 8601 timestamp, got 'yesterday'"),
    (task(createdAt="2026-09-01"), "task createdAt must be an ISO 8601 timestamp, got '2026-09-01'"),
    (task(createdAt=20260901), "task createdAt must be an ISO 8601 timestamp, got 20260901"),
    (task(lastUpdatedAt="2026-13-01T00:00:00"), "task lastUpdatedAt must be an ISO 8601 timestamp, got '2026-13-01T00:00:00'"),
    (without("lastUpdatedAt"), "task lastUpdatedAt must be an ISO 8601 timestamp, got None"),
    (without("ttlMs"), "task result needs ttlMs: a non-negative number or null"),
    (task(ttlMs=-1), "task result needs ttlMs: a non-negative number or null"),
    (task(ttlMs=-0.5), "task result needs ttlMs: a non-negative number or null"),
    (task(ttlMs="60000"), "task result needs ttlMs: a non-negative number or null"),
    (task(ttlMs=True), "task result needs ttlMs: a non-negative number or null"),
    (task(pollIntervalMs=0), "pollIntervalMs must be a positive number"),
    (task(pollIntervalMs=-5), "pollIntervalMs must be a positive number"),
    (task(pollIntervalMs="500"), "pollIntervalMs must be a positive number"),
    (task(statusMessage=3), "statusMessage must be a string"),
])
def test_task_payload_rules(result, start):
    check(result, "negative-task-payload", start, method="tools/call", capabilities=TASKS)


@pytest.mark.parametrize("method", ["tools/list", "prompts/get"])
def test_only_tools_call_creates_a_task(method):
    check(TASK, "negative-task-payload", f"{method} cannot create a task (only tools/call)", method=method, capabilities=TASKS)


@pytest.mark.parametrize("fields", [{"ttlMs": 0}, {"ttlMs": None}, {"ttlMs": 0.5}, {"pollIntervalMs": 1},
                                    {"pollIntervalMs": 0.5}, {"statusMessage": ""}, {"status": "completed"},
                                    {"createdAt": "2026-09-01T10:00:00+02:00"}])
def test_task_boundaries_accepted(fields):
    assert ok(task(**fields), method="tools/call", capabilities=TASKS) == "task"


def test_a_task_skips_the_complete_payload_checks():
    assert ok(task(ttlMs=5, cacheScope="odd"), method="tools/call", capabilities=TASKS) == "task"


def test_the_result_is_not_modified():
    result = call(extra={"kept": True})
    snapshot = {**result}
    ok(result, method="tools/call")
    assert result == snapshot


def test_the_default_method_is_tools_list():
    with pytest.raises(ProtocolViolation) as caught:
        validate_result({"resultType": "complete"}, "modern")
    assert caught.value.case == "negative-tools-list-payload"
