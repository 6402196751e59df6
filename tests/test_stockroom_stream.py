"""read_stock as an SSE stream: one progress event per item, paced, then the result, in both eras.

The server runs with ``json_response=False`` under uvicorn on loopback; the raw bytes are read
with httpx as they arrive and judged by the core's ``validate_response``. The stream is read-only:
the ledger is unchanged and the trace gains the same single record as a plain read_stock.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from mcp.client import Client

from mcplab import build_request, parse_sse, validate_response
from mcplab.stockroom import SEED_ITEMS, STREAM_TOOL, StockroomClient, serve_stockroom

ERAS = ["modern", "legacy"]
ITEMS = len(SEED_ITEMS)
#: Wider than the default so the timing assertions keep a margin on a loaded 2-core machine.
INTERVAL = 0.1
TRACE_FIELDS = ("era", "tool", "decision", "arguments", "detail")


@pytest.fixture(scope="module")
def sse_server():
    with serve_stockroom(json_response=False, progress_interval=INTERVAL) as srv:
        yield srv


def streamed_read(url: str, era: str, *, token: str | int | None = "stock-1", id: int = 7) -> dict:
    """POST read_stock and record status, headers, each chunk's arrival time and the whole body."""
    params: dict = {"name": STREAM_TOOL, "arguments": {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    body, headers = build_request("tools/call", params, era=era, id=id)
    arrivals: list[float] = []
    raw = b""
    with httpx.Client(timeout=30) as http:
        start = time.monotonic()
        with http.stream("POST", url, json=body, headers=headers) as reply:
            for chunk in reply.iter_bytes():
                arrivals.append(time.monotonic() - start)
                raw += chunk
        total = time.monotonic() - start
    return {"request": body, "status": reply.status_code, "headers": list(reply.headers.items()),
            "content_type": reply.headers.get("content-type", ""), "raw": raw, "arrivals": arrivals, "total": total}


def trace_tail(url: str) -> dict:
    with StockroomClient(url) as client:
        record = client.trace()[-1]
    return {field: record[field] for field in TRACE_FIELDS}


@pytest.mark.parametrize("era", ERAS)
def test_read_stock_streams_progress_then_the_result(sse_server, era):
    with StockroomClient(sse_server.url) as client:
        client.reset()
        ledger = client.snapshot()
    seen = streamed_read(sse_server.url, era, token="stock-1", id=7)

    assert seen["status"] == 200 and seen["content_type"].startswith("text/event-stream")
    assert dict((k.lower(), v) for k, v in seen["headers"])["x-accel-buffering"] == "no"
    events = [json.loads(event["data"]) for event in parse_sse(seen["raw"])]
    progress, final = events[:-1], events[-1]
    assert [e["method"] for e in progress] == ["notifications/progress"] * ITEMS
    assert [e["params"]["progressToken"] for e in progress] == ["stock-1"] * ITEMS
    assert [e["params"]["progress"] for e in progress] == list(range(1, ITEMS + 1))
    assert {e["params"]["total"] for e in progress} == {ITEMS}
    assert [e["params"]["message"].split(":")[0] for e in progress] == [item["sku"] for item in SEED_ITEMS]
    assert final["id"] == 7 and "error" not in final
    assert final["result"]["structuredContent"] == ledger
    # the whole stream passes the core's SSE rules (related progress, then the one response, right id)
    assert validate_response(seen["raw"], seen["request"], status=200, headers=seen["headers"], era=era) == final


@pytest.mark.parametrize("era", ERAS)
def test_the_stream_is_paced_so_buffering_would_show(sse_server, era):
    seen = streamed_read(sse_server.url, era)
    # ITEMS events plus the result, INTERVAL apart after the first: a lower bound, not a race
    assert seen["total"] >= ITEMS * INTERVAL
    # directly, the first event arrives long before the end (a buffering proxy would deliver both together)
    assert len(seen["arrivals"]) > 1
    assert seen["arrivals"][0] < seen["total"] / 2


@pytest.mark.parametrize("era", ERAS)
def test_the_stream_is_read_only_and_adds_no_trace(sse_server, era):
    with StockroomClient(sse_server.url, era=era) as client:
        client.reset()
        before, trace_before = client.snapshot(), len(client.trace())
        plain = client.read_stock()
        plain_record = trace_tail(sse_server.url)
        seen = streamed_read(sse_server.url, era, token=42)
        assert parse_sse(seen["raw"])
        assert client.snapshot() == before == plain
        assert len(client.trace()) == trace_before + 2  # one record per read, streamed or not
        assert trace_tail(sse_server.url) == plain_record
        assert client.verify() == []


def test_without_a_token_the_modern_answer_is_json_at_once(sse_server):
    seen = streamed_read(sse_server.url, "modern", token=None)
    assert seen["status"] == 200 and seen["content_type"].startswith("application/json")
    assert seen["total"] < ITEMS * INTERVAL
    assert validate_response(seen["raw"], seen["request"], status=200, headers=seen["headers"])["id"] == 7


def test_without_a_token_the_legacy_answer_is_one_event(sse_server):
    seen = streamed_read(sse_server.url, "legacy", token=None)
    events = parse_sse(seen["raw"])
    assert seen["content_type"].startswith("text/event-stream") and len(events) == 1
    assert seen["total"] < ITEMS * INTERVAL
    assert validate_response(seen["raw"], seen["request"], status=200, headers=seen["headers"], era="legacy")["id"] == 7


@pytest.mark.parametrize("era", ERAS)
def test_other_tools_and_refusals_do_not_stream(sse_server, era):
    for name, arguments in (("draft_reorder", {}), (STREAM_TOOL, {"unexpected": 1})):
        body, headers = build_request("tools/call", {"name": name, "arguments": arguments,
                                                     "_meta": {"progressToken": "t"}}, era=era, id=3)
        reply = httpx.post(sse_server.url, json=body, headers=headers, timeout=30)
        methods = ([json.loads(e["data"]).get("method") for e in parse_sse(reply.content)]
                   if reply.headers["content-type"].startswith("text/event-stream") else [])
        assert "notifications/progress" not in methods
        validate_response(reply.content, body, status=reply.status_code, headers=list(reply.headers.items()), era=era)


def test_json_mode_ignores_the_token_and_does_not_wait():
    with serve_stockroom() as srv:  # the default: JSON answers, as before
        seen = streamed_read(srv.url, "modern")
    assert seen["content_type"].startswith("application/json")
    assert seen["total"] < ITEMS * INTERVAL
    assert validate_response(seen["raw"], seen["request"], status=200, headers=seen["headers"])["result"]


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_real_sdk_client_receives_the_progress(sse_server, mode):
    """mcp.client.Client sets the progress token itself when given a progress callback."""
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    async def scenario():
        async with Client(sse_server.url, mode=mode) as sdk:
            return await sdk.call_tool(STREAM_TOOL, {}, progress_callback=on_progress)

    result = anyio.run(scenario)
    assert result.structured_content["items"] == list(SEED_ITEMS)
    assert [r[0] for r in reports] == list(range(1, ITEMS + 1))
    assert {r[1] for r in reports} == {ITEMS}
    assert reports[0][2].startswith(SEED_ITEMS[0]["sku"])


def test_serve_with_sse_streams(tmp_path):
    env = {**os.environ, "MCPLAB_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "mcplab", "serve", "stockroom", "--port", "0", "--db", ":memory:",
                             "--sse"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert "serving http://127.0.0.1:" in line, line + proc.stderr.read()
        seen = streamed_read(line.split()[3], "modern")
        assert seen["content_type"].startswith("text/event-stream")
        assert len(parse_sse(seen["raw"])) == ITEMS + 1
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        assert proc.returncode == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.parametrize("era", ERAS)
def test_closing_the_stream_early_keeps_the_one_recorded_read(sse_server, era):
    with StockroomClient(sse_server.url) as client:
        client.reset()
        before = len(client.trace())
        body, headers = build_request("tools/call", {"name": STREAM_TOOL, "arguments": {},
                                                     "_meta": {"progressToken": "gone"}}, era=era, id=9)
        with httpx.Client(timeout=30) as http, http.stream("POST", sse_server.url, json=body, headers=headers) as reply:
            first = next(reply.iter_bytes())
        assert b"notifications/progress" in first
        assert len(client.trace()) == before + 1 and client.verify() == []
        assert client.read_stock()["ledger_version"] == 1  # the server carries on
