"""Live capture over real loopback HTTP: exact request, status, headers, raw body, SSE timing."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcplab import parse_sse
from mcplab.live import Unreachable, built_cases, capture_client, judge_capture, send
from mcplab.live.capture import body_evidence
from mcplab.requests import build_request
from mcplab.serving import serve_app
from mcplab.stockroom.server import serve_stockroom


@pytest.fixture(scope="module")
def sse_origin():
    with serve_stockroom(":memory:", port=0, json_response=False) as srv:
        yield srv


def test_json_answer_is_captured_byte_for_byte(sse_origin):
    body, headers = build_request("tools/list")
    with capture_client() as client:
        cap = send(client, sse_origin.url, headers, body)
    assert cap.status == 200 and cap.media_type == "application/json" and cap.ended and cap.failure is None
    assert json.loads(cap.body)["result"]["tools"]
    assert cap.events == [] and cap.first_event_latency is None
    sent = [name.lower() for name, _ in cap.request_headers]
    assert "accept-encoding" not in sent and sent.count("accept") == 1  # nothing added that the case did not send


def test_duplicate_request_headers_really_cross_the_wire(sse_origin):
    body, headers = build_request("tools/list")
    with capture_client() as client:
        cap = send(client, sse_origin.url, [*headers, ("Mcp-Method", "tools/call")], body)
    assert [v for k, v in cap.request_headers if k.lower() == "mcp-method"] == ["tools/list", "tools/call"]
    assert cap.status == 400 and json.loads(cap.body)["error"]["code"] == -32020


def test_sse_events_arrive_in_order_with_times_and_end_of_stream(sse_origin):
    (case,) = [c for c in built_cases("modern", ["read_stock"]) if c.stream]
    ex = case.template.exchanges[0]
    with capture_client() as client:
        cap = send(client, sse_origin.url, ex.request_headers, ex.request)
    assert cap.is_stream and cap.ended and cap.status == 200
    times = [e["at"] for e in cap.events]
    assert len(cap.events) >= 3 and times == sorted(times)
    assert cap.first_event_latency < cap.elapsed / 2  # the origin really streams
    # The raw bytes say the same as the events parsed while they arrived.
    assert [e["data"] for e in parse_sse(cap.body)] == [e["data"] for e in cap.events]
    assert judge_capture(case, cap)["status"] == "pass"
    timing = cap.timing()
    assert timing["eventCount"] == len(cap.events) and timing["firstEventMs"] < timing["durationMs"]


def test_unreachable_url_raises_one_line():
    with serve_app(Starlette(), port=0) as port:
        pass  # the port is free again once the server stopped
    with capture_client() as client, pytest.raises(Unreachable) as info:
        send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}")
    assert "\n" not in str(info.value)


def test_a_timeout_is_recorded_not_raised():
    async def never_finishes(request):
        async def body():
            yield b""
            import anyio
            await anyio.sleep_forever()
        return StreamingResponse(body(), media_type="application/json")

    app = Starlette(routes=[Route("/mcp", never_finishes, methods=["POST"])])
    with serve_app(app, port=0) as port, capture_client() as client:
        cap = send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}", timeout=0.3)
    assert cap.failure == "timeout" and cap.status == 200 and not cap.ended


def test_a_stream_that_trickles_forever_ends_at_the_request_timeout():
    async def keep_alive_forever(request):
        async def body():
            import anyio
            while True:  # a keep-alive comment well within every read timeout, and never an end
                yield b": keep-alive\n\n"
                await anyio.sleep(0.02)
        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/mcp", keep_alive_forever, methods=["POST"])])
    with serve_app(app, port=0) as port, capture_client() as client:
        cap = send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}", timeout=0.4)
    assert cap.failure == "timeout" and not cap.ended and cap.events == []
    assert 0.4 <= cap.elapsed < 2.0 and cap.body.startswith(b": keep-alive\n\n")


def test_body_evidence_keeps_json_parsed_and_non_utf8_as_base64():
    assert body_evidence(b'{"a": 1}') == {"a": 1}
    assert body_evidence(b"not json") == "not json"
    assert body_evidence(b"\xff\xfe") == {"base64": "//4="}
    assert body_evidence(b"") is None


def test_a_plain_text_answer_is_kept_raw():
    app = Starlette(routes=[Route("/mcp", lambda r: Response("oops", status_code=502), methods=["POST"])])
    with serve_app(app, port=0) as port, capture_client() as client:
        cap = send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}")
    assert cap.status == 502 and cap.body == b"oops" and cap.response_body() == "oops"


def test_a_connection_that_never_opens_is_unreachable_not_a_recorded_timeout():
    import httpx

    def blackhole(request):  # what a dropped SYN looks like to httpx (an in-memory transport: no traffic)
        raise httpx.ConnectTimeout("timed out", request=request)

    with httpx.Client(transport=httpx.MockTransport(blackhole)) as client, pytest.raises(Unreachable) as info:
        send(client, "http://127.0.0.1:9/mcp", [], b"{}", timeout=0.5)
    assert "no connection within 0.5 s" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("media", ["application/json", "text/event-stream"])
def test_an_answer_without_end_stops_at_the_capture_limit_as_too_large(monkeypatch, media):
    from mcplab.live import capture as capture_module
    from mcplab.live.check import observe
    from mcplab.live.judge import judge_capture as judge

    monkeypatch.setattr(capture_module, "MAX_CAPTURE_BYTES", 64 * 1024)

    async def flood(request):
        async def body():
            import anyio
            chunk = b"data: " + b"x" * 4096 + b"\n\n" if media == "text/event-stream" else b"x" * 4096
            while True:  # fast, never an end: only the size limit stops the capture
                yield chunk
                await anyio.sleep(0)  # lets the server see the client hang up
        return StreamingResponse(body(), media_type=media)

    app = Starlette(routes=[Route("/mcp", flood, methods=["POST"])])
    with serve_app(app, port=0) as port, capture_client() as client:
        cap = send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}", timeout=30)
    assert cap.failure == "too_large" and not cap.ended and 0 < len(cap.body) <= 64 * 1024
    assert cap.elapsed < 30  # the limit ended it, not the timeout
    assert observe(cap) == {"kind": "unrecognized_response", "status": 200}  # proves no era
    (case,) = [c for c in built_cases("modern", ["read_stock"]) if c.stream]
    verdict = judge(case, cap)
    assert verdict["status"] == "fail" and verdict["detail"] == "no complete response: too large"


def test_stacked_content_codings_end_the_capture_as_too_large_unread():
    """``gzip, gzip`` of 128 MiB of zeros is a few hundred bytes, and httpx decodes each chunk whole:
    read, it would take far more memory than MAX_CAPTURE_BYTES before the count."""
    import gzip
    import tracemalloc

    body = gzip.compress(gzip.compress(bytes(128 << 20)))

    async def bomb(request):
        return Response(body, media_type="application/json", headers={"Content-Encoding": "gzip, gzip"})

    app = Starlette(routes=[Route("/mcp", bomb, methods=["POST"])])
    with serve_app(app, port=0) as port, capture_client() as client:
        tracemalloc.start()
        try:
            cap = send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert cap.failure == "too_large" and cap.status == 200 and not cap.ended and cap.body == b""
    assert peak < 32 * 1024 * 1024


def test_a_stream_of_tiny_events_stops_at_the_event_limit_as_too_large(monkeypatch):
    from mcplab.live import capture as capture_module

    monkeypatch.setattr(capture_module, "MAX_CAPTURE_EVENTS", 1000)

    async def flood(request):
        return Response(b"data:\n\n" * 200_000, media_type="text/event-stream")  # 1.4 MB, 200 000 events

    app = Starlette(routes=[Route("/mcp", flood, methods=["POST"])])
    with serve_app(app, port=0) as port, capture_client() as client:
        cap = send(client, f"http://127.0.0.1:{port}/mcp", [], b"{}", timeout=30)
    assert cap.failure == "too_large" and not cap.ended and len(cap.events) == 1000


def test_ending_a_session_does_not_read_the_answer_body():
    import httpx

    from mcplab.live.check import _close_session

    read = []

    class Endless(httpx.SyncByteStream):
        def __iter__(self):
            for _ in range(1000):
                read.append(1)
                yield b"x" * 1024

    def answer(request):  # in memory: no traffic
        return httpx.Response(200, stream=Endless())

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        _close_session(client, "http://127.0.0.1:9/mcp", [("Mcp-Session-Id", "s")], [])
    assert len(read) <= 1


def test_a_proxy_record_over_the_limit_is_not_read(monkeypatch):
    import httpx

    from mcplab.live import check as check_module
    from mcplab.live.capture import Capture
    from mcplab.live.proxy import EXCHANGE_HEADER

    monkeypatch.setattr(check_module, "MAX_RECORD_BYTES", 64 * 1024)
    hop = {"headers": [], "body": {"text": "x" * 100_000}}
    record = json.dumps({"ingress": hop, "origin": {"status": 200, "headers": [], "body": hop["body"], "request": hop}})

    def serve(request):  # in memory: a "proxy" whose record is larger than any the mcplab proxy keeps
        return httpx.Response(200, content=record.encode(), headers={"content-type": "application/json"})

    proxied = Capture(url="http://127.0.0.1:9/mcp", request_headers=[], request_body=b"{}", status=200,
                      headers=[(EXCHANGE_HEADER, "1")])
    with httpx.Client(transport=httpx.MockTransport(serve)) as client:
        assert check_module.proxy_record(client, "http://127.0.0.1:9/mcp", proxied) is None
        monkeypatch.setattr(check_module, "MAX_RECORD_BYTES", 1024 * 1024)
        assert check_module.proxy_record(client, "http://127.0.0.1:9/mcp", proxied) is not None  # under it: read


def test_a_truncated_proxy_record_is_no_hop_evidence():
    import httpx

    from mcplab.live import check as check_module
    from mcplab.live.capture import Capture
    from mcplab.live.proxy import EXCHANGE_HEADER

    hop = {"headers": [], "body": {"text": "x"}}
    record = {"ingress": hop, "origin": {"status": 200, "headers": [], "body": hop["body"], "request": hop, "truncated": True}}

    proxied = Capture(url="http://127.0.0.1:9/mcp", request_headers=[], request_body=b"{}", status=200,
                      headers=[(EXCHANGE_HEADER, "1")])
    with httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=record))) as client:
        assert check_module.proxy_record(client, "http://127.0.0.1:9/mcp", proxied) is None


def test_a_too_large_capture_is_a_clear_failure_in_the_json_and_the_report():
    from mcplab.live.capture import Capture
    from mcplab.live.check import CheckResult
    from mcplab.live.report import redacted_result, render_report

    (case,) = [c for c in built_cases("modern", ["read_stock"]) if c.stream]
    cut = Capture(url="http://127.0.0.1:9/mcp", request_headers=[], request_body=b"{}", status=200,
                  headers=[("content-type", "application/json")], body=b'{"jsonrpc":"2.0","result":"\xe2\x82', failure="too_large")
    row = {"case": case.key, "name": case.name, "class": "golden", "boundary": None, "applies": True, "reason": None,
           "description": "", "direct": judge_capture(case, cut), "via": None, "change": None,
           "evidence": {"direct": cut.to_evidence()}}
    result = CheckResult(url=cut.url, via=None, era={"era": "modern", "case": "x", "reason": "x"}, rows=[row])
    data = redacted_result(result)
    assert data["ok"] is False and data["rows"][0]["direct"]["status"] == "fail"
    assert data["rows"][0]["evidence"]["direct"]["failure"] == "too_large"
    page = render_report(result)
    assert "<b>FAIL</b>" in page and "no complete response: too large" in page and "too_large" in page


def test_proxy_record_gives_the_real_hops_with_bodies_as_bytes(sse_origin):
    """The public reader of the proxy's record: ingress, origin request and origin answer, bodies
    decoded to the bytes that crossed, ready for ``hop_findings`` (what the Lab D notebook uses)."""
    from mcplab.live import hop_findings, proxy_record, serve_proxy

    body, headers = build_request("tools/list")
    with serve_proxy(sse_origin.url, "rewrite-body") as proxy, capture_client() as client:
        proxied = send(client, proxy.url, headers, body)
        record = proxy_record(client, proxy.url, proxied)
        direct = send(client, sse_origin.url, headers, body)
        assert proxy_record(client, proxy.url, direct) is None  # not through the proxy: no record to read
    assert record is not None and record["mode"] == "rewrite-body"
    for hop in (record["ingress"], record["origin"], record["origin"]["request"]):
        assert isinstance(hop["body"], bytes)
    assert json.loads(record["ingress"]["body"]) == body and record["origin"]["status"] == 200
    assert [f["case"] for f in hop_findings(record, proxied)] == ["negative-proxy-changed-body"]
