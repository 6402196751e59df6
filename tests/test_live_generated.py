"""The generated checks on hostile declarations: garbage descriptors, unusable or unsatisfiable
schemas, names that need the sentinel, a cursor that never ends. The check finishes, stays bounded
and never calls a tool that is not marked read-only."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcplab.live.argsgen import invalid_arguments, valid_arguments
from mcplab.live.check import run_check
from mcplab.live.generated import MAX_PAGES
from mcplab.serving import serve_app

DEEP: dict = {"type": "object"}
for _ in range(200):  # a chain, not a tree: deep but small
    DEEP = {"anyOf": [{"type": "object", "properties": {"x": DEEP}}]}

TOOLS = [
    5, {"name": 3}, {"name": ""},
    {"name": "ünï cödé ", "description": "needs the sentinel", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}},
    {"name": "dangling-ref", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}, "required": ["x"]}},
    {"name": "unknown-dialect", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object", "$schema": "http://example.invalid/s"}},
    {"name": "unsatisfiable", "annotations": {"readOnlyHint": True},
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 1}}, "required": ["n"]}},
    {"name": "deep", "annotations": {"readOnlyHint": True}, "inputSchema": {"type": "object", "properties": {"d": DEEP}}},
    {"name": "writes", "annotations": {"readOnlyHint": False}, "inputSchema": {"type": "object"}},
]


@pytest.fixture
def hostile():
    seen: list[dict] = []

    async def mcp(request: Request) -> Response:
        try:
            message = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse"}}, status_code=400)
        if not isinstance(message, dict):
            return JSONResponse({"jsonrpc": "2.0", "error": {"code": -32600, "message": "batch"}}, status_code=400)
        seen.append(message)
        if "id" not in message:
            return Response(status_code=202)
        base = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
        method = message.get("method")
        if method == "server/discover":
            result = {**base, "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}, "resources": {}}}
        elif method == "tools/list":
            result = {**base, "tools": TOOLS, "nextCursor": "again"}  # a cursor that never ends
        elif method == "resources/list":
            result = {**base, "resources": [{"uri": 7}, "x", {"uri": ""}], "nextCursor": 3}
        else:
            return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32602, "message": "no"}}, status_code=400)
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})

    with serve_app(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), port=0) as port:
        yield f"http://127.0.0.1:{port}/mcp", seen


def test_hostile_declarations_neither_stop_nor_unbound_the_check(hostile):
    url, seen = hostile
    result = run_check(url, generate=True, timeout=5)
    assert result.era["era"] == "modern" and result.rows
    listed = [m for m in seen if m.get("method") == "tools/list" and (m.get("params") or {}).get("cursor") == "again"]
    assert len(listed) <= MAX_PAGES  # the endless cursor is followed MAX_PAGES - 1 times while reading the surface
    called = {(m.get("params") or {}).get("name") for m in seen if m.get("method") == "tools/call"}
    assert "writes" not in called  # never called without --call-tools all
    assert {"dangling-ref", "unknown-dialect", "unsatisfiable"}.isdisjoint(called - {None})
    reasons = {row["case"]: row["reason"] for row in result.rows if not row["applies"]}
    assert "no arguments" in reasons["golden-modern-call.gen-unsatisfiable"]
    sentinel = [m for m in seen if (m.get("params") or {}).get("name") == "ünï cödé "]
    assert sentinel, "the tool whose name needs the sentinel was called"
    assert len(seen) < 120


def test_generated_arguments_are_seeded_and_valid():
    schema = {"type": "object", "properties": {"t": {"type": "string", "maxLength": 5}, "n": {"type": "integer", "minimum": 1, "maximum": 3},
                                              "e": {"enum": ["a", "b"]}, "l": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
              "required": ["t", "n"]}
    first, again = valid_arguments(schema, 3, 7), valid_arguments(schema, 3, 7)
    assert first == again and len(first) == 3
    from jsonschema import Draft202012Validator
    assert all(Draft202012Validator(schema).is_valid(args) for args in first)
    bad, why = invalid_arguments(schema, 7)
    assert not Draft202012Validator(schema).is_valid(bad) and why
    assert valid_arguments(DEEP, 2, 1) is not None  # deep nesting: bounded, no RecursionError
    assert invalid_arguments({"type": "object"}, 1) is None  # nothing to break
