"""Live SSE faults from a real (deliberately broken) origin, and redaction of everything written."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from mcplab.live import CheckResult, built_cases, capture_client, judge_capture, send
from mcplab.live.report import redacted_result, write_report
from mcplab.serving import serve_app

SECRET = "s3cr3t-value-that-must-not-leak"


def _stream_app(answer_id):
    """An origin that streams one related progress event, then a result with ``answer_id`` and a secret key."""
    async def mcp(request: Request) -> StreamingResponse:
        message = await request.json()
        token = message["params"]["_meta"]["progressToken"]

        async def events():
            progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}}
            yield f"event: message\ndata: {json.dumps(progress)}\n\n".encode()
            result = {"jsonrpc": "2.0", "id": answer_id(message["id"]),
                      "result": {"resultType": "complete", "content": [{"type": "text", "text": "ok"}], "clientSecret": SECRET}}
            yield f"event: message\ndata: {json.dumps(result)}\n\n".encode()
        return StreamingResponse(events(), media_type="text/event-stream")
    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


@pytest.fixture
def stream_case():
    (case,) = [c for c in built_cases("modern", ["read_stock"]) if c.stream]
    return case


def _capture(app, case, extra=()):
    ex = case.template.exchanges[0]
    with serve_app(app, port=0) as port, capture_client() as client:
        return send(client, f"http://127.0.0.1:{port}/mcp", [*ex.request_headers, *extra], ex.request)


def test_an_event_with_another_id_fails_as_negative_sse_id_mismatch(stream_case):
    cell = judge_capture(stream_case, _capture(_stream_app(lambda i: f"{i}"), stream_case))  # "1" instead of 1
    assert cell["status"] == "fail"
    assert cell["observed"] == "negative-sse-id-mismatch" and cell["boundary"] == "client"


def test_the_same_origin_with_the_right_id_passes(stream_case):
    assert judge_capture(stream_case, _capture(_stream_app(lambda i: i), stream_case))["status"] == "pass"


def test_secrets_in_headers_bodies_and_sse_events_never_reach_the_report(tmp_path, stream_case):
    cap = _capture(_stream_app(lambda i: i), stream_case, extra=[("Authorization", f"Bearer {SECRET}"), ("Cookie", f"sid={SECRET}")])
    assert SECRET.encode() in cap.body  # the raw capture has it ...
    row = {"case": stream_case.key, "name": stream_case.name, "class": "golden", "boundary": None, "applies": True, "reason": "",
           "description": "", "direct": judge_capture(stream_case, cap), "via": None, "change": None,
           "evidence": {"direct": cap.to_evidence()}}
    result = CheckResult(url="http://127.0.0.1/mcp", via=None, era={"era": "modern", "case": "era-strict-modern-proven"}, rows=[row])
    page = write_report(tmp_path / "report.html", result).read_text(encoding="utf-8")
    as_json = json.dumps(redacted_result(result))
    for text in (page, as_json):  # ... the written report and the JSON output do not
        assert SECRET not in text
        assert "[REDACTED]" in text
    events = redacted_result(result)["rows"][0]["evidence"]["direct"]["response"]["events"]
    assert events[-1]["data"]["result"]["clientSecret"] == "[REDACTED]"


def _error_app():
    """An origin that answers every request with a JSON-RPC error carrying secrets in ``data``."""
    async def mcp(request: Request) -> StreamingResponse:
        message = await request.json()
        error = {"jsonrpc": "2.0", "id": message["id"],
                 "error": {"code": -32603, "message": "boom", "data": {"apiKey": SECRET, "session": {"password": [SECRET, 7]},
                                                                       "token": None, "clientSecret": False}}}
        return StreamingResponse(iter([f"event: message\ndata: {json.dumps(error)}\n\n".encode()]), media_type="text/event-stream")
    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


def test_a_verdict_that_quotes_the_judged_body_never_carries_its_secrets(tmp_path, stream_case):
    cap = _capture(_error_app(), stream_case)
    cell = judge_capture(stream_case, cap)
    assert cell["status"] == "fail" and SECRET in cell["detail"]  # the runner quotes the error it saw ...
    row = {"case": stream_case.key, "name": stream_case.name, "class": "golden", "boundary": None, "applies": True, "reason": "",
           "description": "", "direct": cell, "via": None, "change": None, "evidence": {"direct": cap.to_evidence()}}
    result = CheckResult(url=f"http://127.0.0.1/mcp?access_token={SECRET}x", via=f"http://user:{SECRET}@127.0.0.1:9/mcp",
                         era={"era": "modern", "case": "era-strict-modern-proven", "reason": f"probe of http://127.0.0.1/mcp?access_token={SECRET}x"},
                         rows=[row])
    data = redacted_result(result)
    page = write_report(tmp_path / "report.html", result).read_text(encoding="utf-8")
    for text in (page, json.dumps(data)):  # ... and neither the report nor the JSON does
        assert SECRET not in text
    detail = data["rows"][0]["direct"]["detail"]
    assert "[REDACTED]" in detail and "boom" in detail
    assert "None" in detail and "False" in detail  # a null or a boolean under a secret key hides nothing: prose stays
    assert data["era"]["reason"] == "probe of http://127.0.0.1/mcp?access_token=%5BREDACTED%5D"
    assert data["via"] == "http://user:[REDACTED]@127.0.0.1:9/mcp"  # a userinfo password too


def test_a_proxy_whose_records_cannot_be_read_leaves_the_hop_unobserved():
    """A "proxy" that numbers its exchanges but serves unreadable records: the check still runs."""
    import itertools

    from starlette.responses import JSONResponse, Response

    from mcplab.live import run_check

    numbers = itertools.count(1)
    garbage = [{"origin": {}, "ingress": 5}, {"origin": {"request": {"body": {"base64": "!!!"}}}, "ingress": {}},
               {"origin": {"status": "x", "headers": 5, "request": {}}, "ingress": {"headers": 3}}]

    async def mcp(request: Request) -> Response:
        message = await request.json()
        header = {"x-mcplab-exchange": str(next(numbers))}
        if message.get("method") == "server/discover":
            result = {"supportedVersions": ["2026-07-28"], "capabilities": {}, "resultType": "complete", "ttlMs": 0,
                      "cacheScope": "private"}
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result}, headers=header)
        return JSONResponse({"jsonrpc": "2.0", "id": message.get("id"), "error": {"code": -32602, "message": "no"}},
                            status_code=400, headers=header)

    async def record(request: Request) -> Response:
        number = int(request.path_params["number"])
        if number % 4 == 3:
            return Response(b"not json", media_type="application/json")
        return JSONResponse(garbage[number % 4 % 3])

    app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"]), Route("/.mcplab/exchanges/{number}", record)])
    with serve_app(app, port=0) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        result = run_check(url, via=url, only=["negative-invalid-params", "negative-missing-meta-key", "golden-modern-list",
                                               "negative-header-body-mismatch"])
    cells = [row["via"] for row in result.rows if row["applies"]]
    assert len(cells) == 4 and all(cell["hopsRecorded"] is False for cell in cells)


def test_a_case_name_written_by_the_server_is_not_taken_as_the_observed_fault():
    async def mcp(request: Request) -> StreamingResponse:
        from starlette.responses import JSONResponse

        message = await request.json()
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "error": {
            "code": -32603, "message": "rejected (negative-proxy-collapsed-error, -32603): blame the proxy"}})

    (case,) = [c for c in built_cases("modern", ["read_stock"]) if not c.stream]
    cell = judge_capture(case, _capture(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), case))
    assert cell["status"] == "fail" and "blame the proxy" in cell["detail"]
    assert cell["observed"] is None and cell["boundary"] == "origin"  # not the intermediary the message names
