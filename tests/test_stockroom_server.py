"""The stockroom over real HTTP: the mcp SDK server under uvicorn on loopback, both eras.

Every answer is judged by the core's ``validate_response`` (through ``StockroomClient``), so the
server is held to the same rules as any other MCP server the harness looks at.
"""

from __future__ import annotations

import json

import anyio
import httpx
import mcp_types as t
import pytest
from mcp.client import Client

from mcplab import build_request, validate_response, validate_result
from mcplab.cases import CASES
from mcplab.errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from mcplab.stockroom import ApprovalError, ServeError, Stockroom, StockroomClient, StockroomConnectionError, serve_stockroom

RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}
RESTOCKED = ["SR-101", "SR-103", "SR-105", "SR-106"]
ERAS = ["modern", "legacy"]


@pytest.fixture(scope="module")
def server():
    with serve_stockroom() as srv:
        yield srv


@pytest.fixture(params=ERAS)
def client(server, request):
    with StockroomClient(server.url, era=request.param, approver_token=server.approver_token) as c:
        c.reset()
        yield c


def on_order(client) -> list[int]:
    items = {item["sku"]: item for item in client.read_stock()["items"]}
    return [items[sku]["on_order"] for sku in RESTOCKED]


def expected_error_status(client) -> int:
    return 400 if client.era == "modern" else 200


def test_url_and_tools_in_both_eras(server, client):
    assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")
    tools = client.list_tools()
    assert [tool["name"] for tool in tools] == ["read_stock", "draft_reorder", "request_approval", "commit_reorder"]
    assert validate_result(client.history[-1]["response"]["result"], client.era, "tools/list") == "complete"


def test_read_and_draft(client):
    assert client.read_stock()["ledger_version"] == 1
    assert client.draft_reorder() == RESTOCK
    diff = client.request_approval("DR-0001")["diff"]
    assert [(d["on_order_before"], d["on_order_after"]) for d in diff] == [(0, 6), (0, 13), (0, 3), (0, 6)]
    assert client.read_stock()["ledger_version"] == 1


def test_golden_stockroom_restock_approved(client):
    client.draft_reorder()
    pending = client.commit_reorder(RESTOCK)
    assert pending.asks_approval
    if client.era == "modern":
        assert pending.kind == "input_required"
        assert pending.raw["result"]["resultType"] == "input_required"
        assert pending.input_requests["approval"]["method"] == "elicitation/create"
        assert "0 -> 13" in pending.input_requests["approval"]["params"]["message"]
    assert on_order(client) == [0, 0, 0, 0]
    result = client.approve(pending)
    assert result.structured["ok"] is True and result.structured["ledger_version"] == 2
    assert on_order(client) == [6, 13, 3, 6]
    assert client.verify() == []


def test_golden_stockroom_restock_rejected(client):
    client.draft_reorder()
    result = client.reject(client.commit_reorder(RESTOCK))
    assert result.structured == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
    assert on_order(client) == [0, 0, 0, 0]
    rejected = [r for r in client.trace() if r["decision"] == "rejected"]
    assert rejected and rejected[-1]["arguments"]["draft_id"] == "DR-0001"


def test_negative_stockroom_tool_not_allowed(client):
    outcome = client.call_tool("delete_item", {"sku": "SR-104", "reason": "clear old stock"})
    assert outcome.kind == "error"
    assert client.history[-1]["status"] == expected_error_status(client)
    assert outcome.error["code"] == CASES["negative-stockroom-tool-not-allowed"].code == INVALID_PARAMS
    assert outcome.error["data"] == {"error": "tool_not_allowed", "tool": "delete_item", "policy": "deny"}
    sr104 = next(item for item in client.read_stock()["items"] if item["sku"] == "SR-104")
    assert (sr104["on_hand"], sr104["on_order"]) == (5, 0)
    assert client.read_stock()["ledger_version"] == 1
    records = client.trace()
    since_reset = records[max(i for i, r in enumerate(records) if r["decision"] == "reset"):]
    assert [r["decision"] for r in since_reset if r["tool"] == "delete_item"] == ["denied"]
    assert not any(r["decision"] == "asked" for r in since_reset)  # nobody was asked


def test_negative_stockroom_forged_state(server):
    with StockroomClient(server.url) as client:
        client.reset()
        client.draft_reorder()
        pending = client.commit_reorder(RESTOCK)
        body, mac = pending.request_state.rsplit(".", 1)
        forged = client.call_tool("commit_reorder", RESTOCK, input_responses={"approval": {"action": "accept"}},
                                  request_state=body + "." + mac[::-1])
        assert forged.error["code"] == INVALID_PARAMS and forged.error["data"]["error"] == "invalid_request_state"
        missing = client.call_tool("commit_reorder", RESTOCK, input_responses={"approval": {"action": "accept"}})
        assert missing.error["data"]["error"] == "invalid_request_state"
        assert on_order(client) == [0, 0, 0, 0]


def test_negative_stockroom_stale_version(client):
    client.draft_reorder()
    client.approve(client.commit_reorder(RESTOCK))
    stale = client.commit_reorder(RESTOCK)
    assert stale.error["code"] == INVALID_PARAMS and stale.error["data"]["error"] == "stale_ledger_version"
    assert "ledger is at v2" in stale.error["message"]
    assert on_order(client) == [6, 13, 3, 6]


def test_negative_stockroom_replayed_approval(client):
    client.draft_reorder()
    pending = client.commit_reorder(RESTOCK)
    client.approve(pending)
    if client.era == "modern":  # the same accepted retry, byte for byte
        replay = client.call_tool("commit_reorder", RESTOCK, input_responses={"approval": {"action": "accept", "content": {}}},
                                  request_state=pending.request_state)
    else:  # the agent repeats its retry; the person's answer cannot be given twice either
        replay = client.call_tool("commit_reorder", {**RESTOCK, "approval_id": pending.structured["approval_id"]})
        with pytest.raises(ApprovalError, match="already answered"):
            client.decide_approval(pending.structured["approval_id"], "accept")
    assert replay.error["data"]["error"] == "approval_already_used"
    assert on_order(client) == [6, 13, 3, 6] and client.read_stock()["ledger_version"] == 2


def test_negative_stockroom_payload_drift(client):
    client.draft_reorder()
    drift = client.commit_reorder({**RESTOCK, "lines": [{"sku": "SR-104", "add_on_order": 500}]})
    assert drift.error["data"]["error"] == "payload_drift"
    assert client.read_stock()["ledger_version"] == 1


def test_negative_stockroom_missing_capability(server):
    with StockroomClient(server.url, client_capabilities={}) as client:
        client.reset()
        client.draft_reorder()
        outcome = client.commit_reorder(RESTOCK)
        assert client.history[-1]["status"] == 400
        assert outcome.error["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
        assert outcome.error["data"]["requiredCapabilities"] == {"elicitation": {"form": {}}}


def test_never_500_for_bad_client_input(server):
    body, headers = build_request("tools/call", {"name": "commit_reorder", "arguments": {"lines": "nope"}})
    with httpx.Client() as http:
        reply = http.post(server.url, json=body, headers=headers)
        assert reply.status_code == 400
        validate_response(reply.json(), body, status=reply.status_code, headers=list(reply.headers.items()))
        assert reply.json()["error"]["data"]["error"] == "invalid_arguments"
        for raw in (b"{not json", b"[]", b'{"jsonrpc":"2.0"}'):
            reply = http.post(server.url, content=raw, headers=headers)
            assert 400 <= reply.status_code < 500


def test_the_real_sdk_client_approves_and_declines_through_elicitation(server):
    """mcp.client.Client drives the MRTR loop itself: its elicitation callback is the approver."""
    answers = iter(["decline", "accept"])
    shown: list[str] = []

    async def approver(context, params):
        shown.append(params.message)
        return t.ElicitResult(action=next(answers), content={})

    async def scenario() -> tuple:
        async with Client(server.url, elicitation_callback=approver) as sdk:
            draft = (await sdk.call_tool("draft_reorder", {})).structured_content
            declined = await sdk.call_tool("commit_reorder", RESTOCK)
            accepted = await sdk.call_tool("commit_reorder", RESTOCK)
            return draft, declined.structured_content, accepted.structured_content

    StockroomClient(server.url).reset()
    draft, declined, accepted = anyio.run(scenario)
    assert draft == RESTOCK
    assert declined == {"ok": False, "error": "mutation_blocked", "ledger_version": 1}
    assert accepted["ok"] is True and accepted["ledger_version"] == 2
    assert len(shown) == 2 and "SR-103" in shown[0]


def test_admin_routes_can_be_turned_off():
    with serve_stockroom(admin=False) as srv, StockroomClient(srv.url) as client:
        with pytest.raises(StockroomConnectionError, match="no admin routes"):
            client.reset()
        assert client.read_stock()["ledger_version"] == 1


def test_a_database_file_outlives_the_server(tmp_path):
    path = tmp_path / "stock.sqlite3"
    with serve_stockroom(path) as srv, StockroomClient(srv.url) as client:
        client.draft_reorder()
        client.approve(client.commit_reorder(RESTOCK))
    with serve_stockroom(path) as srv, StockroomClient(srv.url) as client:
        assert client.read_stock()["ledger_version"] == 2
        assert client.verify() == []


def test_port_in_use_is_a_clear_error(server):
    with pytest.raises(ServeError, match=f"cannot listen on 127.0.0.1:{server.port}"):
        with serve_stockroom(port=server.port):
            pass


def test_unreachable_server_is_a_clear_error():
    with StockroomClient("http://127.0.0.1:9/mcp") as client, pytest.raises(StockroomConnectionError, match="127.0.0.1:9"):
        client.read_stock()


def test_dns_rebinding_protection_is_on(server):
    body, headers = build_request("tools/list")
    with httpx.Client() as http:
        reply = http.post(server.url, json=body, headers=[*headers, ("Host", "evil.example")])
    assert reply.status_code in (400, 403, 421)


@pytest.mark.parametrize("headers", [{"Host": "evil.example"}, {"Origin": "http://evil.example"}])
@pytest.mark.parametrize("method, path", [("POST", "/stockroom/reset"), ("GET", "/stockroom/trace"),
                                          ("GET", "/stockroom/ledger"), ("POST", "/stockroom/approvals/AP-0123456789ab")])
def test_admin_routes_refuse_foreign_hosts_and_origins(server, headers, method, path):
    """A web page cannot reset a student's stockroom or read its trace (DNS rebinding, cross-site POST)."""
    with StockroomClient(server.url) as client:
        client.draft_reorder()
        before = client.snapshot()
        with httpx.Client() as http:
            reply = http.request(method, server.base_url + path, json={}, headers=headers)
        assert reply.status_code in (403, 421)
        assert client.snapshot() == before


def test_admin_posts_need_json(server):
    with httpx.Client() as http:
        reply = http.post(server.base_url + "/stockroom/reset", content=b"action=reset",
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert reply.status_code == 400


def test_legacy_out_of_band_approval_over_http(server):
    """The 2025-11-25 agent gets an approval id; a person approves through the admin route; the retry applies."""
    with StockroomClient(server.url, era="legacy") as agent, \
            StockroomClient(server.url, approver_token=server.approver_token) as person:
        agent.reset()
        agent.draft_reorder()
        pending = agent.commit_reorder(RESTOCK)
        approval_id = pending.structured["approval_id"]
        assert [a["approval_id"] for a in person.pending_approvals()] == [approval_id]
        early = agent.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
        assert early.structured["error"] == "approval_pending"
        person.decide_approval(approval_id, "accept")
        done = agent.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
        assert done.structured["ok"] is True and done.structured["ledger_version"] == 2
        assert person.pending_approvals() == []


def test_history_keeps_no_replayable_request_state(server):
    with StockroomClient(server.url) as client:
        client.reset()
        client.draft_reorder()
        pending = client.commit_reorder(RESTOCK)
        client.approve(pending)
        assert pending.request_state not in json.dumps(list(client.history))


def test_reset_needs_a_json_object(server):
    with httpx.Client() as http:
        reply = http.post(server.base_url + "/stockroom/reset", content=b"not json",
                          headers={"Content-Type": "application/json"})
    assert reply.status_code == 400


def test_any_loopback_address_serves_itself():
    with serve_stockroom(host="127.0.0.2") as srv, StockroomClient(srv.url) as client:
        assert client.read_stock()["ledger_version"] == 1


@pytest.mark.parametrize("version", [None, "2025-11-25", "2026-07-28"])
def test_get_mcp_is_405_not_a_stream_that_never_ends(server, version):
    headers = {"Accept": "text/event-stream", **({"MCP-Protocol-Version": version} if version else {})}
    reply = httpx.get(server.url, headers=headers, timeout=5)
    assert reply.status_code == 405
    assert "POST" in reply.headers["allow"]


ADMIN_POSTS = ["/stockroom/reset", "/stockroom/approvals/AP-0123456789ab"]


def person(server) -> dict[str, str]:
    """A person's JSON POST headers: an approval answer needs the approver token (issue 15)."""
    return {"Content-Type": "application/json", "Authorization": f"Bearer {server.approver_token}"}


@pytest.mark.parametrize("path", ADMIN_POSTS)
def test_admin_post_body_over_64_kib_is_413(server, path):
    from mcplab.stockroom.server import ADMIN_MAX_BODY_BYTES

    big = json.dumps({"action": "accept", "pad": "x" * ADMIN_MAX_BODY_BYTES}).encode()
    with StockroomClient(server.url) as client, httpx.Client() as http:
        before = client.snapshot()
        reply = http.post(server.base_url + path, content=big, headers=person(server))
        assert reply.status_code == 413 and str(ADMIN_MAX_BODY_BYTES) in reply.json()["error"]
        # without a Content-Length (chunked): the read itself stops at the limit
        chunked = http.post(server.base_url + path, content=iter([big[:40_000], big[40_000:]]),
                            headers=person(server))
        assert "content-length" not in chunked.request.headers and chunked.status_code == 413
        assert client.snapshot() == before


@pytest.mark.parametrize("path", ADMIN_POSTS)
def test_admin_post_deeply_nested_json_is_400_not_500(server, path):
    deep = b'{"action":' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    with httpx.Client() as http:
        reply = http.post(server.base_url + path, content=deep, headers=person(server))
        assert reply.status_code == 400 and "nested too deeply" in reply.json()["error"]
        # the server is still fine
        assert http.get(server.base_url + "/stockroom/ledger").status_code == 200


def test_admin_decision_needs_a_json_object(server):
    with httpx.Client() as http:
        reply = http.post(server.base_url + "/stockroom/approvals/AP-0123456789ab", content=b"[1]",
                          headers=person(server))
    assert reply.status_code == 400 and "JSON object" in reply.json()["error"]


def test_the_sdk_span_middleware_is_kept_only_when_a_tracer_provider_records(monkeypatch):
    """No OpenTelemetry SDK configured: the per-request span (a no-op) is dropped; a real provider keeps it."""
    from opentelemetry import trace

    from mcplab.stockroom.server import build_server

    def span_middleware(server) -> list[str]:
        return [type(m).__name__ for m in server.middleware if type(m).__name__ == "OpenTelemetryMiddleware"]

    assert span_middleware(build_server(Stockroom())) == []

    class Recording(trace.TracerProvider):
        def get_tracer(self, *args, **kwargs):
            return trace.NoOpTracer()

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: Recording())
    assert span_middleware(build_server(Stockroom())) == ["OpenTelemetryMiddleware"]
