"""Pins of proxy evidence: each finding's case, fixed message and detail; hollow captures refused by name."""

from __future__ import annotations

import pytest

from mcplab.errors import EvidenceError
from mcplab.proxy_evidence import PROXY_ISSUES, inspect_proxy, proxy_findings

REQ = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "n"}}
JSON = [("Content-Type", "application/json")]
SSE = [("Content-Type", "text/event-stream")]
ERROR = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32020, "message": "Header mismatch"}}
HEADERS = [("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json"),
           ("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "n")]
INGRESS = {"headers": HEADERS, "body": REQ}
ORIGIN = {"status": 400, "headers": JSON, "body": ERROR}


def finding(case, detail):
    return {"case": case, "message": PROXY_ISSUES[case], "detail": detail}


def test_the_fixed_messages():
    assert PROXY_ISSUES == {
        "negative-proxy-collapsed-error": "proxy collapsed a protocol error into HTTP 500",
        "negative-proxy-changed-body": "proxy changed the origin JSON-RPC body",
        "negative-proxy-changed-status": "proxy changed the origin HTTP status",
        "negative-proxy-content-type": "proxy changed the response content type",
        "negative-proxy-request-changed": "proxy changed the client request on its way to the origin",
    }


@pytest.mark.parametrize("origin_status, egress_status", [(400, 500), (404, 502), (499, 599)])
def test_a_collapsed_error(origin_status, egress_status):
    origin = {**ORIGIN, "status": origin_status}
    assert proxy_findings(INGRESS, origin, {**origin, "status": egress_status}) == [finding(
        "negative-proxy-collapsed-error", f"origin HTTP {origin_status} JSON-RPC error became HTTP {egress_status}")]


@pytest.mark.parametrize("origin, egress_status", [
    ({**ORIGIN, "status": 399}, 500),                                  # not a 4xx
    ({**ORIGIN, "status": 500}, 502),                                  # not a 4xx
    ({**ORIGIN, "body": {"jsonrpc": "2.0", "id": 7, "result": {}}}, 500),  # not an error body
    ({**ORIGIN, "body": {"jsonrpc": "2.0", "id": 7, "error": "x"}}, 500),  # error is not an object
    (ORIGIN, 499),                                                      # not a 5xx
])
def test_other_status_changes(origin, egress_status):
    found = proxy_findings(INGRESS, origin, {**origin, "status": egress_status})
    assert found == [finding("negative-proxy-changed-status", f"origin HTTP {origin['status']}, egress HTTP {egress_status}")]


def test_a_raw_error_body_is_recognised():
    origin = {**ORIGIN, "body": b'{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"m"}}'}
    assert [f["case"] for f in proxy_findings(INGRESS, origin, {**origin, "status": 500})] == ["negative-proxy-collapsed-error"]


def test_changed_body_and_content_type_details():
    egress = {"status": 400, "headers": [("Content-Type", "text/html")], "body": "<html>"}
    assert proxy_findings(INGRESS, ORIGIN, egress) == [
        finding("negative-proxy-changed-body", "the egress body differs from the body the origin sent"),
        finding("negative-proxy-content-type", "origin 'application/json', egress 'text/html'"),
    ]
    assert proxy_findings(INGRESS, ORIGIN, {**ORIGIN, "headers": []})[0]["detail"] == "origin 'application/json', egress None"


@pytest.mark.parametrize("a, b, same", [
    (None, b"", True), ("  ", None, True), (b'{"a":1}', {"a": 1}, True), (bytearray(b"[1]"), "[1]", True),
    ("not json", "not json", True), ("not json", "not json ", False), ("1", 1, True), ("1", "1.0", False),
    ("not json", {"a": 1}, False), ('"text"', "text", False), (b"\xff", "\xff", False), ("[" * 5000, "[" * 5000, True),
])
def test_body_equality(a, b, same):
    origin = {"status": 200, "headers": JSON, "body": a}
    found = proxy_findings(INGRESS, origin, {**origin, "body": b})
    assert (found == []) is same


def test_event_streams():
    body = 'event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{}}\n\n'
    origin = {"status": 200, "headers": SSE, "body": body}
    assert proxy_findings(INGRESS, origin, {**origin, "body": body.encode().replace(b"\n", b"\r\n")}) == []
    assert proxy_findings(INGRESS, origin, {**origin, "body": body.replace("message", "other")}) != []
    assert proxy_findings(INGRESS, origin, {**origin, "body": body + body}) != []
    assert proxy_findings(INGRESS, origin, {**origin, "body": body.replace('"id":7', '"id":"7"')}) != []
    # a stream that is not UTF-8 on one side falls back to a byte comparison
    assert proxy_findings(INGRESS, origin, {**origin, "body": b"\xff"}) != []
    # the same events as a plain JSON answer are judged as bodies, not streams
    plain = {"status": 200, "headers": JSON, "body": body}
    assert proxy_findings(INGRESS, plain, {**plain, "body": body.replace("\n", "\r\n")}) != []


def test_request_side():
    seen = {"headers": [(k, v.replace(", ", ",")) for k, v in HEADERS], "body": dict(REQ)}
    assert proxy_findings(INGRESS, {**ORIGIN, "request": seen}, ORIGIN) == []
    changed = {"headers": [("Accept", "*/*"), ("Content-Type", "text/plain"), ("MCP-Protocol-Version", "2025-11-25"),
                           ("Mcp-Method", "tools/list"), ("Mcp-Name", "m"), ("X-Extra", "1")], "body": {**REQ, "id": 8}}
    assert proxy_findings(INGRESS, {**ORIGIN, "request": changed}, ORIGIN) == [finding(
        "negative-proxy-request-changed",
        "changed on the way in: body, accept, content-type, mcp-protocol-version, mcp-method, mcp-name")]
    dropped = {"headers": HEADERS[:-1], "body": REQ}
    assert proxy_findings(INGRESS, {**ORIGIN, "request": dropped}, ORIGIN)[0]["detail"] == "changed on the way in: mcp-name"


def test_inspect_proxy_lists_the_messages_in_order():
    egress = {"status": 500, "headers": [("Content-Type", "text/plain")], "body": "Internal Server Error"}
    assert inspect_proxy(INGRESS, ORIGIN, egress) == [
        "proxy collapsed a protocol error into HTTP 500", "proxy changed the origin JSON-RPC body",
        "proxy changed the response content type"]


@pytest.mark.parametrize("ingress, origin, egress, message", [
    ([], ORIGIN, ORIGIN, "ingress capture must be an object, got list"),
    (INGRESS, None, ORIGIN, "origin capture must be an object, got NoneType"),
    (INGRESS, {"headers": JSON, "body": None}, ORIGIN, "origin.status must be an HTTP status code, got None"),
    (INGRESS, ORIGIN, {**ORIGIN, "status": 99}, "egress.status must be an HTTP status code, got 99"),
    (INGRESS, ORIGIN, {**ORIGIN, "status": 600}, "egress.status must be an HTTP status code, got 600"),
    (INGRESS, ORIGIN, {**ORIGIN, "status": True}, "egress.status must be an HTTP status code, got True"),
    ({"headers": HEADERS}, ORIGIN, ORIGIN, "ingress capture needs the body (None for an empty one)"),
    (INGRESS, {"status": 400, "headers": JSON}, ORIGIN, "origin capture needs the body (None for an empty one)"),
    (INGRESS, {**ORIGIN, "headers": [("a",)]}, ORIGIN, "origin.headers: header entries must be (name, value) pairs, got ('a',)"),
    (INGRESS, {**ORIGIN, "request": {"headers": []}}, ORIGIN, "origin.request capture needs the body (None for an empty one)"),
    (INGRESS, {**ORIGIN, "request": "x"}, ORIGIN, "origin.request capture must be an object, got str"),
])
def test_hollow_captures_are_refused_by_name(ingress, origin, egress, message):
    with pytest.raises(EvidenceError) as caught:
        proxy_findings(ingress, origin, egress)
    assert str(caught.value) == message


def test_boundary_statuses_are_statuses():
    origin = {**ORIGIN, "status": 100}
    assert proxy_findings(INGRESS, origin, {**origin, "status": 599})[0]["case"] == "negative-proxy-changed-status"
    assert proxy_findings({"body": None}, {"status": 204, "body": None}, {"status": 204, "body": None}) == []


def test_raw_request_bodies_are_compared_as_json_not_as_event_streams():
    ingress = {"headers": HEADERS, "body": b'{"jsonrpc":"2.0","id":7,"method":"tools/call"}'}
    seen = {"headers": HEADERS, "body": b'{"jsonrpc":"2.0","id":8,"method":"tools/call"}'}
    assert proxy_findings(ingress, {**ORIGIN, "request": seen}, ORIGIN)[0]["detail"] == "changed on the way in: body"
