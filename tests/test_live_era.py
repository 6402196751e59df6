"""The era probe of ``mcplab check`` on real HTTP: silence never proves legacy; initialize evidence does, if allowed."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcplab.live import run_check
from mcplab.serving import serve_app


@pytest.fixture(scope="module")
def legacy_only():
    """A 2025-11-25 server behind a filter that swallows the modern probe (an empty 200)."""
    async def mcp(request: Request) -> Response:
        message = await request.json()
        if message.get("method") == "server/discover":
            return Response(b"", status_code=200)
        if message.get("method") == "initialize":
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}})
        if message.get("method") == "tools/list":
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": [
                {"name": "echo", "description": "Echo the text back", "inputSchema": {"type": "object"}}]}})
        return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32601, "message": "no"}}, status_code=404)

    with serve_app(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), port=0) as port:
        yield f"http://127.0.0.1:{port}/mcp"


def test_silence_is_inconclusive_without_the_legacy_allowance(legacy_only):
    result = run_check(legacy_only)
    assert result.era["era"] is None and result.era["case"] == "era-fallback-silence-inconclusive"
    assert result.era["observations"][0]["kind"] == "empty_response" and not result.ok
    assert len(result.probes) == 1  # no legacy probe was even sent


def test_an_allowed_endpoint_is_judged_legacy_after_initialize(legacy_only):
    result = run_check(legacy_only, allow_legacy=True)
    assert result.era["era"] == "legacy" and result.era["case"] == "era-fallback-legacy-proven"
    assert result.era["legacyEvidence"] == {"kind": "initialize_success", "protocolVersion": "2025-11-25"}
    ran = {row["case"]: row["direct"]["status"] for row in result.rows if row["applies"]}
    assert ran == {"golden-legacy-list": "pass"} and result.ok


def test_strict_mode_never_probes_legacy(legacy_only):
    result = run_check(legacy_only, era_mode="strict", allow_legacy=True)
    assert result.era["era"] is None and result.era["case"] == "era-strict-unproven" and len(result.probes) == 1


def test_a_modern_error_proves_modern_and_is_never_downgraded():
    async def mcp(request: Request) -> Response:
        message = await request.json()
        if message.get("method") == "initialize":  # would offer legacy, but must never be asked
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}}})
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": {
            "code": -32022, "message": "unsupported", "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}}, status_code=400)

    with serve_app(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), port=0) as port:
        result = run_check(f"http://127.0.0.1:{port}/mcp", allow_legacy=True)
    assert result.era["era"] == "modern" and result.era["case"] == "era-modern-error-no-downgrade"
    assert len(result.probes) == 1 and result.era["legacyEvidence"] is None


def test_the_probe_waits_no_longer_than_the_timeout_given():
    async def mcp(request: Request) -> Response:  # answers only after 2 s (well past the timeout)
        import anyio
        await anyio.sleep(2.0)
        return Response(b"", status_code=200)

    with serve_app(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), port=0) as port:
        result = run_check(f"http://127.0.0.1:{port}/mcp", timeout=0.3)
    assert result.era["era"] is None and result.era["observations"][0]["kind"] == "timeout"
    assert result.seconds < 1.5  # the probe used to wait a fixed 5 s whatever --timeout said


def test_a_legacy_transcript_recorded_for_another_version_is_not_replayed_on_an_older_session():
    async def mcp(request: Request) -> Response:  # a 2025-06-18 server: knows no later version header
        message = await request.json()
        version = request.headers.get("mcp-protocol-version")
        if version not in (None, "2025-06-18"):
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": f"Unsupported: {version}"}},
                                status_code=400)
        if message.get("method") == "initialize":
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "older", "version": "1"}}})
        if "id" not in message:
            return Response(status_code=202)
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})

    with serve_app(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), port=0) as port:
        result = run_check(f"http://127.0.0.1:{port}/mcp", allow_legacy=True)
    assert result.era["era"] == "legacy" and result.era["legacyEvidence"]["protocolVersion"] == "2025-06-18"
    (row,) = [r for r in result.rows if r["case"] == "golden-legacy-list"]
    # replayed as recorded it would carry MCP-Protocol-Version 2025-11-25 and be refused, blamed on the origin
    assert not row["applies"] and "negotiated 2025-06-18" in row["reason"] and row["direct"] is None
    assert result.issues == []
