from __future__ import annotations

from mcplab import PROXY_ISSUES, inspect_proxy, proxy_findings

REQ = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
JSON = [("Content-Type", "application/json")]
ERROR = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32020, "message": "Header mismatch"}}
INGRESS = {"headers": [("Accept", "application/json, text/event-stream"), ("Mcp-Method", "tools/list")], "body": REQ}
ORIGIN = {"status": 400, "headers": JSON, "body": ERROR}


def test_faithful_proxy_has_no_issue():
    assert inspect_proxy(INGRESS, ORIGIN, dict(ORIGIN)) == []
    # the same bytes, parsed or raw, are the same body
    assert inspect_proxy(INGRESS, ORIGIN, {**ORIGIN, "body": b'{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch"}}'}) == []


def test_collapsed_error_and_changed_body_are_the_seed_strings():
    egress = {"status": 500, "headers": JSON, "body": {"jsonrpc": "2.0", "id": 7, "error": {"code": -32603, "message": "Internal error"}}}
    assert inspect_proxy(INGRESS, ORIGIN, egress) == ["proxy collapsed a protocol error into HTTP 500", "proxy changed the origin JSON-RPC body"]
    cases = [f["case"] for f in proxy_findings(INGRESS, ORIGIN, egress)]
    assert cases == ["negative-proxy-collapsed-error", "negative-proxy-changed-body"]


def test_a_500_origin_passed_through_is_not_a_collapse():
    origin = {"status": 500, "headers": JSON, "body": ERROR}
    assert inspect_proxy(INGRESS, origin, dict(origin)) == []


def test_status_and_content_type_changes():
    assert inspect_proxy(INGRESS, ORIGIN, {**ORIGIN, "status": 200}) == [PROXY_ISSUES["negative-proxy-changed-status"]]
    assert inspect_proxy(INGRESS, ORIGIN, {**ORIGIN, "headers": [("content-type", "text/plain")]}) == [PROXY_ISSUES["negative-proxy-content-type"]]
    assert inspect_proxy(INGRESS, ORIGIN, {**ORIGIN, "headers": [("content-type", "application/json; charset=utf-8")]}) == []


def test_id_type_change_is_a_body_change():
    assert inspect_proxy(INGRESS, ORIGIN, {**ORIGIN, "body": {**ERROR, "id": "7"}}) == [PROXY_ISSUES["negative-proxy-changed-body"]]


def test_request_side_changes_when_the_origin_request_was_captured():
    seen = {"headers": [("Accept", "application/json"), ("Mcp-Method", "tools/list")], "body": REQ}
    findings = proxy_findings(INGRESS, {**ORIGIN, "request": seen}, dict(ORIGIN))
    assert [f["case"] for f in findings] == ["negative-proxy-request-changed"]
    assert "accept" in findings[0]["detail"]
    assert proxy_findings(INGRESS, {**ORIGIN, "request": INGRESS}, dict(ORIGIN)) == []


def test_hollow_captures_are_not_evidence():
    import pytest

    from mcplab import EvidenceError

    for ingress, origin, egress in (({}, {}, {}), (INGRESS, {"body": ERROR}, ORIGIN), (INGRESS, ORIGIN, {"status": "500"}),
                                    (INGRESS, {**ORIGIN, "headers": "x"}, ORIGIN), ({"headers": []}, ORIGIN, ORIGIN)):
        with pytest.raises(EvidenceError):
            inspect_proxy(ingress, origin, egress)


def test_non_utf8_bodies_compare_byte_for_byte():
    assert inspect_proxy(INGRESS, {**ORIGIN, "body": b"\xff"}, {**ORIGIN, "body": b"\xfe"}) == [PROXY_ISSUES["negative-proxy-changed-body"]]
    assert inspect_proxy(INGRESS, {**ORIGIN, "body": b"\xff"}, {**ORIGIN, "body": b"\xff"}) == []


def test_conflicting_content_types_are_visible():
    doubled = {**ORIGIN, "headers": [("Content-Type", "application/json"), ("content-type", "text/html")]}
    assert inspect_proxy(INGRESS, ORIGIN, doubled) == [PROXY_ISSUES["negative-proxy-content-type"]]


def test_list_header_whitespace_is_not_a_change():
    seen = {"headers": [("Accept", "application/json,text/event-stream"), ("Mcp-Method", "tools/list")], "body": REQ}
    assert inspect_proxy(INGRESS, {**ORIGIN, "request": seen}, dict(ORIGIN)) == []


def test_event_streams_compare_by_events_not_bytes():
    sse = [("Content-Type", "text/event-stream")]
    body = 'event: message\r\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\r\n\r\n'
    origin = {"status": 200, "headers": sse, "body": body}
    relayed = {"status": 200, "headers": sse, "body": ": keep-alive\n\n" + body.replace("\r\n", "\n")}
    assert inspect_proxy(INGRESS, origin, relayed) == []
    rewritten = {"status": 200, "headers": sse, "body": body.replace('"result":{}', '"result":{"x":1}')}
    assert inspect_proxy(INGRESS, origin, rewritten) == [PROXY_ISSUES["negative-proxy-changed-body"]]
