"""The request-order guard: mcplab's servers answer `negative-meta-type` as MISSION.md orders it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from mcplab.errors import HEADER_MISMATCH, INVALID_PARAMS
from mcplab.request_guard import MAX_GUARDED_BYTES, RequestOrderGuard
from mcplab.requests import build_request
from mcplab.stockroom.server import serve_stockroom
from mcplab.versions import META_PROTOCOL_VERSION


@pytest.fixture(scope="module")
def url():
    with serve_stockroom(":memory:", port=0) as srv:
        yield srv.url


def _post(url: str, body: dict, headers) -> httpx.Response:
    return httpx.post(url, content=json.dumps(body), headers=headers, timeout=10)


def test_numeric_meta_version_is_invalid_params_before_the_header_comparison(url):
    body, headers = build_request("tools/list", {}, era="modern", id=7)
    body["params"]["_meta"][META_PROTOCOL_VERSION] = 20260728
    reply = _post(url, body, headers)
    assert reply.status_code == 400
    answer = reply.json()
    assert answer["id"] == 7
    assert answer["error"]["code"] == INVALID_PARAMS
    assert "must be a string" in answer["error"]["message"]


def test_other_faults_still_reach_the_sdk(url):
    body, headers = build_request("tools/list", {}, era="modern", id="x")
    # Mcp-Method differs from the body: a mismatch, not a type fault, so the SDK answers.
    headers = [(name, "prompts/list" if name.lower() == "mcp-method" else value) for name, value in headers]
    reply = _post(url, body, headers)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == HEADER_MISMATCH


def test_a_valid_request_streamed_in_chunks_is_replayed_intact(url):
    body, headers = build_request("tools/list", {}, era="modern", id=3)
    raw = json.dumps(body).encode()

    def chunks():
        for start in range(0, len(raw), 5):
            yield raw[start:start + 5]

    reply = httpx.post(url, content=chunks(), headers=headers, timeout=10)
    assert reply.status_code == 200
    assert reply.json()["id"] == 3
    assert {tool["name"] for tool in reply.json()["result"]["tools"]} >= {"read_stock", "commit_reorder"}


def _through_guard(messages: list[dict], path: str = "/mcp") -> tuple[list[bytes], list[dict]]:
    """Run the guard over an in-memory app that records the body it receives."""
    received: list[bytes] = []
    sent: list[dict] = []

    async def app(scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        received.append(body)

    queue = list(messages)

    async def receive():
        return queue.pop(0)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path,
             "headers": [(b"mcp-protocol-version", b"2026-07-28"), (b"content-type", b"application/json")]}
    asyncio.run(RequestOrderGuard(app)(scope, receive, send))
    return received, sent


def test_oversized_bodies_pass_through_unread_and_whole():
    big = b"x" * (MAX_GUARDED_BYTES + 10)
    received, sent = _through_guard([{"type": "http.request", "body": big[:MAX_GUARDED_BYTES + 1], "more_body": True},
                                     {"type": "http.request", "body": big[MAX_GUARDED_BYTES + 1:], "more_body": False}])
    assert received == [big] and sent == []


def test_legacy_and_other_paths_are_not_judged():
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                       "params": {"_meta": {META_PROTOCOL_VERSION: 5}}}).encode()
    received, sent = _through_guard([{"type": "http.request", "body": body}], path="/stockroom/reset")
    assert received == [body] and sent == []
    received, sent = _through_guard([{"type": "http.request", "body": body}])
    assert received == [] and sent[0]["status"] == 400


def test_dns_rebinding_protection_answers_before_the_guard(url):
    body, headers = build_request("tools/list", {}, era="modern", id=9)
    body["params"]["_meta"][META_PROTOCOL_VERSION] = 20260728
    port = url.split(":")[2].split("/")[0]
    foreign_host = [*headers, ("Host", f"evil.example:{port}")]
    assert _post(url, body, foreign_host).status_code == 421
    foreign_origin = [*headers, ("Origin", "http://evil.example")]
    assert _post(url, body, foreign_origin).status_code == 403


def test_the_cheap_meta_type_filter_answers_exactly_as_the_full_validation(monkeypatch):
    """Every recorded request, and every _meta mistyping of a valid one: the guard's verdict is the same
    with its pre-filter as with the full validation run on every body."""
    import mcplab.request_guard as guard
    from mcplab.transcript import load_transcripts
    from mcplab.versions import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL

    bodies = []
    for transcript in load_transcripts():
        for exchange in transcript.exchanges:
            if isinstance(exchange.request, dict):
                bodies.append((json.dumps(exchange.request).encode(), list(exchange.request_headers)))
    for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL):
        for wrong in (1, "s", [], {}, None, True):
            body, headers = build_request("tools/list", {}, era="modern", id=3)
            body["params"]["_meta"][key] = wrong
            bodies.append((json.dumps(body).encode(), headers))
    for meta in ("text", 5, [], None):
        body, headers = build_request("tools/list", {}, era="modern", id=4)
        body["params"]["_meta"] = meta
        bodies.append((json.dumps(body).encode(), headers))
    filtered = [guard.guarded_violation(body, headers) for body, headers in bodies]
    monkeypatch.setattr(guard, "_meta_mistyped", lambda message: True)
    full = [guard.guarded_violation(body, headers) for body, headers in bodies]
    verdicts = [None if found is None else (found[0], found[1].case, found[1].code) for found in filtered]
    assert verdicts == [None if found is None else (found[0], found[1].case, found[1].code) for found in full]
    assert sum(v is not None for v in verdicts) >= 8  # the mistyped ones are answered by the guard
