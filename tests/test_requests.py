from __future__ import annotations

import json

import pytest

from mcplab import (
    LEGACY_VERSION,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    ProtocolViolation,
    validate_request,
)

from .conftest import modern_headers, modern_request


def violation(body, headers=None, era="modern", **kw) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation) as info:
        validate_request(body, headers, era, **kw)
    return info.value


def test_valid_modern_request_returns_the_message():
    body = modern_request()
    assert validate_request(body, modern_headers()) is body
    assert validate_request(json.dumps(body).encode(), modern_headers()) == body


def test_valid_call_with_name_header(call_request):
    body, headers = call_request
    validate_request(body, headers)


def test_header_names_are_case_insensitive(call_request):
    body, headers = call_request
    validate_request(body, [(k.upper(), v) for k, v in headers])
    validate_request(body, {k.lower(): v for k, v in headers})


@pytest.mark.parametrize(
    "body, code",
    [(b"{not json", -32700), (b"[]", -32600), ("[{}]", -32600), ({"jsonrpc": "1.0", "id": 1, "method": "x"}, -32600),
     ({"jsonrpc": "2.0", "id": 1}, -32600), ({"jsonrpc": "2.0", "id": None, "method": "tools/list"}, -32600),
     ({"jsonrpc": "2.0", "id": True, "method": "tools/list"}, -32600), ({"jsonrpc": "2.0", "id": 1, "method": "m", "params": []}, -32600)],
)
def test_malformed_envelope(body, code):
    v = violation(body, modern_headers())
    assert (v.code, v.case) == (code, "negative-malformed-envelope")
    assert v.http_status == 400


def test_missing_meta_key_is_32602():
    body = modern_request()
    del body["params"]["_meta"][META_CLIENT_CAPABILITIES]
    v = violation(body, modern_headers())
    assert (v.code, v.case) == (-32602, "negative-missing-meta-key")
    body = modern_request()
    del body["params"]["_meta"]
    assert violation(body, modern_headers()).case == "negative-missing-meta-key"


def test_meta_types():
    body = modern_request()
    body["params"]["_meta"][META_PROTOCOL_VERSION] = 20260728
    v = violation(body, modern_headers())
    assert (v.code, v.case) == (-32602, "negative-meta-type")


def test_version_header_mismatch():
    v = violation(modern_request(), [("MCP-Protocol-Version", LEGACY_VERSION), ("Mcp-Method", "tools/list")])
    assert (v.code, v.case) == (-32020, "negative-version-header-mismatch")


def test_method_header_mismatch():
    v = violation(modern_request(), modern_headers("tools/call"))
    assert (v.code, v.case) == (-32020, "negative-header-body-mismatch")


@pytest.mark.parametrize("drop", ["MCP-Protocol-Version", "Mcp-Method"])
def test_missing_routing_header(drop):
    headers = [h for h in modern_headers() if h[0] != drop]
    assert violation(modern_request(), headers).case == "negative-missing-header"


def test_mismatch_is_reported_before_unsupported_version():
    # Both the version header and _meta say 2099-01-01 but Mcp-Method lies: integrity first.
    body = modern_request()
    body["params"]["_meta"][META_PROTOCOL_VERSION] = "2099-01-01"
    v = violation(body, [("MCP-Protocol-Version", "2099-01-01"), ("Mcp-Method", "tools/call")])
    assert v.code == -32020
    v = violation(body, [("MCP-Protocol-Version", "2099-01-01"), ("Mcp-Method", "tools/list")])
    assert (v.code, v.case) == (-32022, "negative-unsupported-version")
    assert v.data == {"supported": ["2026-07-28"], "requested": "2099-01-01"}


def test_name_header_rules(call_request):
    body, headers = call_request
    base = [h for h in headers if h[0] != "Mcp-Name"]
    assert violation(body, base).case == "negative-missing-header"
    assert violation(body, base + [("Mcp-Name", "delete_item")]).case == "negative-name-header-mismatch"
    assert violation(body, base + [("Mcp-Name", "=?base64?!!?=")]).case == "negative-name-header-mismatch"
    assert violation(body, base + [("Mcp-Name", "read_stock"), ("mcp-name", "other")]).case == "negative-duplicate-header"
    # identical duplicates are not a conflict
    validate_request(body, base + [("Mcp-Name", "read_stock"), ("mcp-name", "read_stock")])


def test_padded_name_must_travel_as_sentinel():
    body = modern_request("tools/call", params={"name": " padded ", "arguments": {}})
    v = violation(body, modern_headers("tools/call", " padded "))
    assert (v.code, v.case) == (-32020, "negative-raw-whitespace-name")
    validate_request(body, modern_headers("tools/call", "=?base64?IHBhZGRlZCA=?="))


def test_non_ascii_name_needs_the_sentinel():
    body = modern_request("tools/call", params={"name": "Hello, 世界"})
    assert violation(body, modern_headers("tools/call", "Hello, 世界")).case == "negative-name-header-mismatch"
    validate_request(body, modern_headers("tools/call", "=?base64?SGVsbG8sIOS4lueVjA==?="))


def test_resources_read_routes_on_uri():
    body = modern_request("resources/read", params={"uri": "test://static-text"})
    validate_request(body, modern_headers("resources/read", "test://static-text"))
    assert violation(body, modern_headers("resources/read", "test://other")).case == "negative-name-header-mismatch"


def test_routed_method_without_a_string_name_is_invalid_params():
    body = modern_request("tools/call", params={"arguments": {}})
    v = violation(body, modern_headers("tools/call", "x"))
    assert (v.code, v.case) == (-32602, "negative-invalid-params")


def test_missing_capability_names_what_is_required():
    body = modern_request("tools/call", params={"name": "commit"}, caps={"sampling": {}})
    v = violation(body, modern_headers("tools/call", "commit"), required_capabilities={"elicitation": {"form": {}}})
    assert (v.code, v.case) == (-32021, "negative-missing-capability")
    assert v.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    body = modern_request("tools/call", params={"name": "commit"}, caps={"elicitation": {}})
    v = violation(body, modern_headers("tools/call", "commit"), required_capabilities={"elicitation": {"form": {}}})
    assert v.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    body = modern_request("tools/call", params={"name": "commit"}, caps={"elicitation": {"form": {}}})
    validate_request(body, modern_headers("tools/call", "commit"), required_capabilities={"elicitation": {"form": {}}})


def test_notifications_need_headers_not_meta():
    note = {"jsonrpc": "2.0", "method": "notifications/dev.mcplab/course-event", "params": {}}
    validate_request(note, [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", note["method"])])
    assert violation(note, [("Mcp-Method", note["method"])]).case == "negative-missing-header"


def test_legacy_era_rules():
    body = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
    validate_request(body, {"MCP-Protocol-Version": LEGACY_VERSION}, "legacy")
    validate_request(body, None, "legacy")
    v = violation(body, {"MCP-Protocol-Version": "2026-07-28"}, "legacy")
    assert v.code == -32022
    # the same legacy body is not a modern request
    assert violation(body, modern_headers(), "modern").case == "negative-missing-meta-key"


def test_unknown_era_is_a_caller_error():
    with pytest.raises(ValueError, match="unknown era"):
        validate_request(modern_request(), modern_headers(), "future")


def test_deeply_nested_bodies_are_a_parse_error_not_a_crash():
    v = violation(b"[" * 100000, modern_headers())
    assert (v.code, v.case) == (-32700, "negative-malformed-envelope")
