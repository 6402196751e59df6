"""Issue 15, item 5: every public validator raises only ``ProtocolViolation`` on any JSON value.

A property test feeds arbitrary JSON plus pathological values (deep nesting, huge integers, lone
surrogates, NaN and infinities) to the validators; the regressions the attack found are pinned
one by one below it. ``proxy_findings`` promises ``EvidenceError`` for a malformed capture instead.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcplab.errors import EvidenceError, ProtocolViolation
from mcplab.headers import decode_header_value, encode_header_value, normalize_headers
from mcplab.proxy_evidence import inspect_proxy, proxy_findings
from mcplab.requests import build_request, parse_message, reject_unsolicited_retry, validate_request, validate_retry
from mcplab.responses import validate_response
from mcplab.results import validate_result
from mcplab.sse import parse_sse

from .conftest import modern_headers, modern_request

DEPTH = 5000


def deep_list(depth: int = DEPTH) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def deep_dict(depth: int = DEPTH) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


PATHOLOGICAL = [
    10**400, -(10**400), 10**5000, float("nan"), float("inf"), -float("inf"), "\ud800", "x\udfffy", "\udc80" * 50,
    "\x00", "=?base64?////?=", "", [], {}, None, True, 1.5, deep_list(), deep_dict(), deep_list(400), deep_dict(400),
]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec=None, categories=None), max_size=20),
    st.integers(0, len(PATHOLOGICAL) - 1).map(lambda i: PATHOLOGICAL[i]),  # by index: some have no repr
    st.sampled_from(["2.0", "complete", "input_required", "task", "tools/call", "tools/list", "elicitation/create",
                     "2026-07-28", "2025-11-25", "text/event-stream", "application/json"]),
)
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data",
                                     "resultType", "inputRequests", "requestState", "_meta", "tools", "content",
                                     "completion", "values", "total", "status", "taskId", "name", "uri",
                                     "io.modelcontextprotocol/protocolVersion",
                                     "io.modelcontextprotocol/clientCapabilities", "\ud800", "approval"]),
                    inner, max_size=6)), max_leaves=30)
HEADERS = st.one_of(st.none(), st.lists(st.tuples(
    st.sampled_from(["Content-Type", "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "X", "\ud800"]),
    st.one_of(st.sampled_from(["application/json", "text/event-stream", "2026-07-28", "tools/call", "\udfff",
                               "=?base64?////?=", "=?base64?7aCA?="]), st.text(max_size=10))), max_size=4))
METHODS = st.sampled_from(["tools/list", "tools/call", "completion/complete", "server/discover", "prompts/get", "x"])
ERAS = st.sampled_from(["modern", "legacy"])
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def only_violations(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except ProtocolViolation:
        pass


@PROPERTY
@given(JSON, ERAS, METHODS, st.one_of(st.none(), JSON))
def test_validate_result_raises_only_protocol_violation(value, era, method, capabilities):
    only_violations(validate_result, value, era, method, capabilities if isinstance(capabilities, dict) else None)


@PROPERTY
@given(JSON, HEADERS, ERAS, st.booleans())
def test_validate_request_raises_only_protocol_violation(value, headers, era, as_text):
    body = value
    if as_text:
        try:
            body = json.dumps(value)
        except (ValueError, RecursionError):
            body = "[" * DEPTH
    only_violations(validate_request, body, headers, era)


@PROPERTY
@given(JSON, JSON, st.one_of(st.none(), st.integers(), st.sampled_from([200, 202, 400, 500])), HEADERS, ERAS)
def test_validate_response_raises_only_protocol_violation(body, request, status, headers, era):
    only_violations(validate_response, body, request, status=status, headers=headers, era=era)


@PROPERTY
@given(JSON, JSON, JSON)
def test_validate_retry_raises_only_protocol_violation(original, input_required, retry):
    only_violations(validate_retry, original, input_required if isinstance(input_required, dict) else {}, retry)
    if isinstance(retry, dict):
        only_violations(reject_unsolicited_retry, retry)


@PROPERTY
@given(st.one_of(JSON, st.binary(max_size=40), st.text(st.characters(codec=None, categories=None), max_size=40)))
def test_parse_message_and_parse_sse_raise_only_protocol_violation(raw):
    only_violations(parse_message, raw)
    if isinstance(raw, (str, bytes)):
        only_violations(parse_sse, raw)


@PROPERTY
@given(st.text(st.characters(codec=None, categories=None), max_size=30), JSON)
def test_builders_raise_only_protocol_violation(text, params):
    only_violations(encode_header_value, text)
    only_violations(build_request, "tools/call", {"name": text, "arguments": params})
    assert decode_header_value(text) is None or isinstance(decode_header_value(text), str)


CAPTURE = st.fixed_dictionaries({"status": st.sampled_from([200, 400, 500]), "body": JSON, "headers": HEADERS})


@PROPERTY
@given(CAPTURE, CAPTURE, CAPTURE, JSON)
def test_proxy_findings_raises_only_evidence_error(ingress, origin, egress, junk):
    for captures in ((ingress, origin, egress), (junk, origin, egress), (ingress, {**origin, "request": junk}, egress)):
        try:
            proxy_findings(*captures)
        except EvidenceError:
            pass


# -- the regressions the attack found, one by one -----------------------------------------------------
def test_a_list_as_an_input_request_method_is_a_violation_not_a_type_error():
    result = {"resultType": "input_required", "inputRequests": {"approval": {"method": ["elicitation/create"]}}}
    with pytest.raises(ProtocolViolation) as caught:
        validate_result(result, "modern", "tools/call")
    assert caught.value.case == "negative-input-required-payload"


@pytest.mark.parametrize("status", [["working"], {"a": 1}])
def test_an_unhashable_task_status_is_a_violation(status):
    result = {"resultType": "task", "taskId": "t", "status": status, "createdAt": "2026-01-01T00:00:00Z",
              "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 1}
    caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    with pytest.raises(ProtocolViolation):
        validate_result(result, "modern", "tools/call", caps)


@pytest.mark.parametrize("value", [10**5000, {"resultType": 10**5000}, {"resultType": "complete", "ttlMs": float("nan")},
                                   {"resultType": "complete", "ttlMs": -(10**5000), "completion": {"values": [],
                                                                                          "total": -(10**5000)}}],
                         ids=["huge-result", "huge-result-type", "nan-ttl", "huge-total"])
def test_huge_numbers_and_nan_are_violations(value):
    with pytest.raises(ProtocolViolation) as caught:
        validate_result(value, "modern", "completion/complete")
    assert len(str(caught.value)) < 300


def test_a_huge_but_valid_integer_is_accepted():
    assert validate_result({"resultType": "complete", "ttlMs": 10**5000, "tools": []}, "modern", "tools/list") == "complete"


@pytest.mark.parametrize("name", ["\ud800", "a\udfffb"])
def test_a_lone_surrogate_cannot_be_sent_as_a_header(name):
    with pytest.raises(ProtocolViolation):
        encode_header_value(name)
    with pytest.raises(ProtocolViolation):
        build_request("tools/call", {"name": name, "arguments": {}})


def test_parse_sse_of_bytes_that_are_not_utf8_is_a_violation():
    with pytest.raises(ProtocolViolation) as caught:
        parse_sse(b"data: \xff\xfe\n\n")
    assert caught.value.case == "negative-response-unparsable"


def test_a_dict_body_with_an_sse_content_type_is_a_violation():
    with pytest.raises(ProtocolViolation):
        validate_response({"jsonrpc": "2.0", "id": 1, "result": {}}, modern_request(), status=200,
                          headers=[("Content-Type", "text/event-stream")])


def test_a_request_with_array_params_does_not_crash_the_stream_check():
    stream = 'data: {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}\n\n'
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1, 2]}
    assert validate_response(stream, request, status=200, headers=[("Content-Type", "text/event-stream")])["id"] == 1


@pytest.mark.parametrize("depth", [400, 2000, DEPTH])
def test_proxy_findings_on_deep_bodies_does_not_recurse_out(depth):
    body = "[" * depth + "]" * depth
    hop = {"status": 200, "headers": [("Content-Type", "application/json")], "body": body}
    assert inspect_proxy({"body": "{}", "headers": modern_headers()}, hop, dict(hop)) == []
    deep_origin = {**hop, "body": deep_list(depth)}
    assert inspect_proxy({"body": "{}", "headers": []}, deep_origin, dict(deep_origin)) == []


def test_normalize_headers_with_surrogates_is_not_a_crash():
    assert normalize_headers([("Mcp-Name", "\ud800")]) == {"mcp-name": ["\ud800"]}


def test_transcripts_run_on_a_list_method_is_a_failed_case_not_a_traceback(tmp_path, capsys):
    from mcplab.cli import main
    from mcplab.transcript import transcripts_dir

    text = (transcripts_dir() / "golden-input-required.json").read_text(encoding="utf-8")
    hostile = text.replace('"method": "elicitation/create"', '"method": ["elicitation/create"]', 1)
    assert hostile != text
    path = tmp_path / "golden-input-required.json"
    path.write_text(hostile, encoding="utf-8")
    assert main(["transcripts", "run", "--file", str(path)]) == 1
    captured = capsys.readouterr()
    assert "negative-input-required-payload" in captured.out and "Traceback" not in captured.err
