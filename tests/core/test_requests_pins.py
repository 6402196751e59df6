"""Pins of request validation: the code and case of every rule in MISSION.md's order, ``build_request``'s exact output
(the MRTR retry rules are in test_requests_retry_pins.py). Messages are checked by their leading words (field and rule)."""

from __future__ import annotations

import pytest

from mcplab.errors import ProtocolViolation
from mcplab.requests import (
    ROUTED_NAME_FIELDS,
    build_request,
    missing_capabilities,
    parse_message,
    routed_name_field,
    validate_request,
)
from mcplab.versions import LEGACY_VERSION, MODERN_VERSION

PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LOG = "io.modelcontextprotocol/logLevel"
ACCEPT = ("Accept", "application/json, text/event-stream")
JSON_CT = ("Content-Type", "application/json")


def fault(body, headers=None, era="modern", **kwargs) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation) as caught:
        validate_request(body, headers, era, **kwargs)
    return caught.value


def check(error: ProtocolViolation, code: int, case: str, start: str, data=None) -> None:
    assert (error.code, error.case) == (code, case), (error.code, error.case, error.message)
    assert error.message.startswith(start), error.message
    assert error.data == data


def call(name="read_stock", **params):
    return build_request("tools/call", {"name": name, **params})


# --- build_request ---------------------------------------------------------------------------

def test_build_request_modern_routed():
    body, headers = build_request("tools/call", {"name": "read_stock", "arguments": {"a": 1}}, id=7,
                                  capabilities={"elicitation": {}}, client_info={"name": "c", "version": "1"})
    assert body == {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "read_stock", "arguments": {"a": 1},
        "_meta": {PV: MODERN_VERSION, CAPS: {"elicitation": {}}, INFO: {"name": "c", "version": "1"}}}}
    assert headers == [ACCEPT, JSON_CT, ("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/call"),
                       ("Mcp-Name", "read_stock")]
    assert validate_request(body, headers) == body


def test_build_request_modern_defaults_keep_existing_meta_and_encode_the_name():
    body, headers = build_request("resources/read", {"uri": " file:///x ", "_meta": {"custom": 1}})
    assert body == {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                    "params": {"uri": " file:///x ", "_meta": {"custom": 1, PV: MODERN_VERSION, CAPS: {}}}}
    assert headers[-1] == ("Mcp-Name", "=?base64?IGZpbGU6Ly8veCA=?=")
    assert validate_request(body, headers) == body


def test_build_request_modern_unrouted_and_notification():
    body, headers = build_request("tools/list", id=None)
    assert body == {"jsonrpc": "2.0", "method": "tools/list", "params": {"_meta": {PV: MODERN_VERSION, CAPS: {}}}}
    assert headers == [ACCEPT, JSON_CT, ("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", "tools/list")]


def test_build_request_routed_without_a_string_name_sends_no_name_header():
    _, headers = build_request("tools/call", {"name": 5})
    assert [h for h in headers if h[0] == "Mcp-Name"] == []


def test_build_request_legacy():
    body, headers = build_request("tools/list", era="legacy", id="a")
    assert body == {"jsonrpc": "2.0", "id": "a", "method": "tools/list"}
    assert headers == [ACCEPT, JSON_CT, ("MCP-Protocol-Version", LEGACY_VERSION)]
    body, headers = build_request("initialize", {"protocolVersion": LEGACY_VERSION}, era="legacy", capabilities={"x": {}})
    assert body == {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": LEGACY_VERSION}}
    assert headers == [ACCEPT, JSON_CT]


def test_build_request_does_not_modify_its_inputs():
    params = {"name": "n", "_meta": {"k": 1}}
    caps = {"a": {}}
    build_request("tools/call", params, capabilities=caps)
    assert params == {"name": "n", "_meta": {"k": 1}} and caps == {"a": {}}


def test_build_request_rejects_an_unknown_era():
    with pytest.raises(ValueError, match="unknown era"):
        build_request("tools/list", era="future")


def test_routed_name_fields():
    assert ROUTED_NAME_FIELDS == {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                                  "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
    assert routed_name_field("resources/read") == "uri"
    assert routed_name_field("tools/list") is None


# --- parse_message and the envelope ------------------------------------------------------------

@pytest.mark.parametrize("raw", [b"{", "{", bytearray(b"nope"), b"\xff\xfe"])
def test_unparseable_bodies_are_parse_errors(raw):
    check(fault(raw), -32700, "negative-malformed-envelope", "body is not valid JSON: ")


def test_parse_message_passes_objects_through_and_takes_a_case():
    obj = {"a": 1}
    assert parse_message(obj) is obj
    assert parse_message(b'{"a": 1}') == obj
    assert parse_message(bytearray(b"[1]")) == [1]
    with pytest.raises(ProtocolViolation) as caught:
        parse_message("{", case="my-case", code=-32600)
    assert (caught.value.case, caught.value.code) == ("my-case", -32600)


def test_a_body_nested_too_deeply():
    check(fault("[" * 100_000), -32700, "negative-malformed-envelope", "body is nested too deeply to parse")


@pytest.mark.parametrize("message, start", [
    ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], "JSON-RPC batches are not allowed: one message per body"),
    ('"text"', "a JSON-RPC request must be an object, got str"),
    (5, "a JSON-RPC request must be an object, got int"),
    ({"id": 1, "method": "ping"}, 'request jsonrpc must be exactly "2.0", got None'),
    ({"jsonrpc": 2.0, "id": 1, "method": "ping"}, 'request jsonrpc must be exactly "2.0", got 2.0'),
    ({"jsonrpc": "2.0", "id": 1}, "request method must be a non-empty string"),
    ({"jsonrpc": "2.0", "id": 1, "method": ""}, "request method must be a non-empty string"),
    ({"jsonrpc": "2.0", "id": 1, "method": 3}, "request method must be a non-empty string"),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, "request id must be a string or an integer, got None"),
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "request id must be a string or an integer, got True"),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, "request id must be a string or an integer, got 1.5"),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}}, "a request must not carry result or error"),
    ({"jsonrpc": "2.0", "method": "ping", "error": {}}, "a request must not carry result or error"),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}, "request params must be an object"),
    ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None}, "request params must be an object"),
])
@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_envelope_faults_are_invalid_request(message, start, era):
    check(fault(message, era=era), -32600, "negative-malformed-envelope", start)


def test_string_and_integer_ids_and_absent_params_are_fine_in_legacy():
    for request_id in ("x", 0, -3):
        message = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
        assert validate_request(message, None, "legacy") == message


# --- _meta -------------------------------------------------------------------------------------

def modern(params, method="tools/list", request_id=1):
    body = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        body["id"] = request_id
    return body, [("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", method)]


def test_meta_is_required_on_requests_not_notifications():
    body, headers = modern({})
    check(fault(body, headers), -32602, "negative-missing-meta-key",
          f"params._meta is required on 2026-07-28 requests (with {PV} and {CAPS})")
    body, headers = modern({}, request_id=None)
    assert validate_request(body, headers) == body
    body, headers = modern({}, method="tools/list")
    del body["params"]
    check(fault(body, headers), -32602, "negative-missing-meta-key", "params._meta is required")


@pytest.mark.parametrize("is_request", [True, False])
def test_meta_must_be_an_object(is_request):
    body, headers = modern({"_meta": [1]}, request_id=1 if is_request else None)
    check(fault(body, headers), -32602, "negative-meta-type", "params._meta must be an object")


@pytest.mark.parametrize("key, value, label", [(PV, 20260728, "a string"), (CAPS, [], "an object"),
                                               (INFO, "c", "an object"), (LOG, 1, "a string")])
@pytest.mark.parametrize("is_request", [True, False])
def test_meta_key_types(key, value, label, is_request):
    meta = {PV: MODERN_VERSION, CAPS: {}, key: value}
    body, headers = modern({"_meta": meta}, request_id=1 if is_request else None)
    check(fault(body, headers), -32602, "negative-meta-type",
          f"params._meta[{key!r}] must be {label}, got {type(value).__name__}")


@pytest.mark.parametrize("key", [PV, CAPS])
def test_required_meta_keys_on_requests(key):
    meta = {PV: MODERN_VERSION, CAPS: {}}
    del meta[key]
    body, headers = modern({"_meta": meta})
    check(fault(body, headers), -32602, "negative-missing-meta-key", f"params._meta is missing the required key {key!r}")
    body, headers = modern({"_meta": meta}, request_id=None)
    assert validate_request(body, headers) == body


# --- headers in order ------------------------------------------------------------------------

def test_missing_routing_headers_are_minus_32020():
    body, headers = build_request("tools/call", {"name": "n"})
    check(fault(body, [h for h in headers if h[0] != "MCP-Protocol-Version"]), -32020, "negative-missing-header",
          "the MCP-Protocol-Version header is required")
    check(fault(body, [h for h in headers if h[0] != "Mcp-Method"]), -32020, "negative-missing-header",
          "the Mcp-Method header is required")
    check(fault(body, [h for h in headers if h[0] != "Mcp-Name"]), -32020, "negative-missing-header",
          "the Mcp-Name header is required")


def test_header_names_are_case_insensitive():
    body, headers = build_request("tools/call", {"name": "n"})
    assert validate_request(body, [(k.upper(), v) for k, v in headers]) == body
    assert validate_request(body, dict(headers)) == body


def test_version_mismatch_beats_unsupported_version():
    body, headers = build_request("tools/list")
    headers = [(k, "2099-01-01" if k == "MCP-Protocol-Version" else v) for k, v in headers]
    check(fault(body, headers), -32020, "negative-version-header-mismatch",
          f"MCP-Protocol-Version '2099-01-01' does not match params._meta version '{MODERN_VERSION}'")


def test_notification_without_meta_version_skips_the_version_comparison():
    body, headers = modern({"_meta": {}}, request_id=None)
    assert validate_request(body, headers) == body


def test_method_mismatch():
    body, headers = build_request("tools/list")
    headers = [(k, "tools/call" if k == "Mcp-Method" else v) for k, v in headers]
    check(fault(body, headers), -32020, "negative-header-body-mismatch", "Mcp-Method 'tools/call' does not match method 'tools/list'")


def test_conflicting_duplicate_routing_header():
    body, headers = build_request("tools/list")
    check(fault(body, headers + [("mcp-method", "ping")]), -32020, "negative-duplicate-header", "conflicting duplicate mcp-method headers")
    assert validate_request(body, headers + [("mcp-method", "tools/list")]) == body


@pytest.mark.parametrize("method, field", sorted(ROUTED_NAME_FIELDS.items()))
def test_routed_methods_need_their_string_field(method, field):
    body, headers = build_request(method, {field: 5})
    check(fault(body, headers), -32602, "negative-invalid-params", f"{method} needs a string params.{field}")
    body, headers = build_request(method, {field: "target"})
    assert ("Mcp-Name", "target") in headers
    assert validate_request(body, headers) == body


def with_name(value, name="read_stock"):
    body, headers = call(name)
    return body, [(k, value if k == "Mcp-Name" else v) for k, v in headers]


def test_name_mismatch():
    check(fault(*with_name("other")), -32020, "negative-name-header-mismatch",
          "Mcp-Name 'other' does not match params.name 'read_stock'")


def test_a_malformed_sentinel():
    check(fault(*with_name("=?base64?***?=")), -32020, "negative-name-header-mismatch",
          "Mcp-Name '=?base64?***?=' is a malformed base64 sentinel")


@pytest.mark.parametrize("raw", [" read_stock", "read_stock\t"])
def test_raw_edge_whitespace(raw):
    check(fault(*with_name(raw, name=raw)), -32020, "negative-raw-whitespace-name",
          f"Mcp-Name {raw!r} has leading/trailing whitespace: such a value must travel as a =?base64?...?= sentinel")


def test_raw_non_ascii():
    check(fault(*with_name("café", name="café")), -32020, "negative-name-header-mismatch",
          "Mcp-Name 'café' holds characters outside visible ASCII without the sentinel")


def test_a_sentinel_carries_any_value():
    body, headers = call(" café ")
    assert ("Mcp-Name", "=?base64?IGNhZsOpIA==?=") in headers
    assert validate_request(body, headers) == body
    # a plain value may also be sent as a sentinel
    assert validate_request(*with_name("=?base64?cmVhZF9zdG9jaw==?=")) is not None


# --- version and capabilities -----------------------------------------------------------------

def test_unsupported_version_after_the_header_checks():
    body, headers = build_request("tools/list")
    error = fault(body, headers, supported_versions=["2099-01-01"])
    check(error, -32022, "negative-unsupported-version", f"unsupported protocol version '{MODERN_VERSION}'",
          data={"supported": ["2099-01-01"], "requested": MODERN_VERSION})
    assert validate_request(body, headers, supported_versions=[MODERN_VERSION, "x"]) == body


def test_a_legacy_version_is_unsupported_on_the_modern_path():
    body, headers = modern({"_meta": {PV: LEGACY_VERSION, CAPS: {}}})
    headers = [(k, LEGACY_VERSION if k == "MCP-Protocol-Version" else v) for k, v in headers]
    check(fault(body, headers), -32022, "negative-unsupported-version", f"unsupported protocol version '{LEGACY_VERSION}'",
          data={"supported": [MODERN_VERSION], "requested": LEGACY_VERSION})


def test_legacy_version_header():
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert validate_request(body, [("MCP-Protocol-Version", "2024-11-05")], "legacy") == body
    assert validate_request(body, None, "legacy") == body
    check(fault(body, [("MCP-Protocol-Version", MODERN_VERSION)], "legacy"), -32022, "negative-unsupported-version",
          f"unsupported protocol version '{MODERN_VERSION}'",
          data={"supported": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"], "requested": MODERN_VERSION})
    check(fault(body, [("MCP-Protocol-Version", "2024-11-05")], "legacy", supported_versions=("2025-11-25",)), -32022,
          "negative-unsupported-version", "unsupported protocol version '2024-11-05'",
          data={"supported": ["2025-11-25"], "requested": "2024-11-05"})
    check(fault(body, [("MCP-Protocol-Version", "a"), ("mcp-protocol-version", "b")], "legacy"), -32020,
          "negative-duplicate-header", "conflicting duplicate")


def test_missing_capability():
    body, headers = build_request("tools/call", {"name": "n"}, capabilities={"sampling": {}})
    error = fault(body, headers, required_capabilities={"elicitation": {"form": {}}, "sampling": {}})
    check(error, -32021, "negative-missing-capability",
          "tools/call needs client capabilities the request did not declare: ['elicitation']",
          data={"requiredCapabilities": {"elicitation": {"form": {}}}})
    assert validate_request(body, headers, required_capabilities={"sampling": {}}) == body
    assert validate_request(body, headers, required_capabilities={}) == body


def test_missing_capabilities_nested():
    assert missing_capabilities({"a": {"x": {}}}, {"a": {"x": {}, "y": {"z": 1}}, "b": True}) == {"a": {"y": {"z": 1}}, "b": True}
    assert missing_capabilities({"a": {"x": {}}}, {"a": {"x": {}}}) == {}
    assert missing_capabilities({"a": "not a dict"}, {"a": {"x": {}}}) == {"a": {"x": {}}}
    assert missing_capabilities(None, {"a": {}}) == {"a": {}}
    assert missing_capabilities({"a": 1}, {"a": {}}) == {}

@pytest.mark.parametrize("raw", ["read\n", "Xé", "\x7fX"])
def test_raw_names_with_invisible_characters_are_mismatches_not_whitespace(raw):
    check(fault(*with_name(raw, name=raw)), -32020, "negative-name-header-mismatch",
          f"Mcp-Name {raw!r} holds characters outside visible ASCII without the sentinel")


def test_a_truthy_non_object_requirement_is_met_by_the_key():
    assert missing_capabilities({"a": {}}, {"a": True}) == {}
    assert missing_capabilities({}, {"a": True}) == {"a": True}
