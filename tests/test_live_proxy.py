"""The live proxy as a reverse proxy: what it forwards each way, and its limits (real loopback hops)."""

from __future__ import annotations

import gzip
import json
import socket
import threading

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from mcplab.live import capture_client, send, serve_proxy
from mcplab.live import proxy as proxy_module
from mcplab.live.proxy import EXCHANGE_HEADER, RECORD_PREFIX, ProxyError
from mcplab.serving import serve_app

ERROR = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad params"}}


def _raw_response(body: bytes, status: int, pairs: list[tuple[str, str]]) -> Response:
    response = Response(body, status_code=status)
    response.raw_headers = [(k.encode(), v.encode()) for k, v in [*pairs, ("content-length", str(len(body)))]]
    return response


async def _echo(request: Request) -> Response:
    """The request headers as the origin received them; answered with repeated and hop-by-hop headers."""
    body = json.dumps({"headers": [[k.decode(), v.decode()] for k, v in request.headers.raw],
                       "length": len(await request.body())}).encode()
    return _raw_response(body, 200, [("content-type", "application/json"), ("set-cookie", "a=1; Path=/"),
                                     ("set-cookie", "b=2; Path=/"), ("connection", "x-private"), ("x-private", "hop"),
                                     ("keep-alive", "timeout=5"), ("mcp-session-id", "kept")])


async def _big(request: Request) -> Response:
    size = int(request.path_params["size"])
    return _raw_response(b'{"jsonrpc":"2.0","id":1,"result":{"x":"' + b"a" * size + b'"}}', 200,
                         [("content-type", "application/json")])


async def _gzip_error(request: Request) -> Response:
    return _raw_response(gzip.compress(json.dumps(ERROR).encode()), 400,
                         [("content-type", "application/json"), ("content-encoding", "gzip")])


async def _error(request: Request) -> Response:
    return _raw_response(json.dumps(ERROR).encode(), 400, [("content-type", "application/json"), ("keep-alive", "timeout=5")])


async def _broken(request: Request) -> Response:
    """Starts an answer and breaks off mid-body (uvicorn cuts the connection)."""
    async def body():
        yield b'{"jsonrpc":'
        raise RuntimeError("the origin breaks off on purpose")
    return StreamingResponse(body(), media_type="application/json")


ORIGIN_STREAM_CLOSED = threading.Event()


async def _endless(request: Request) -> Response:
    """An event stream that never ends; notes when its consumer (the proxy) goes away."""
    async def body():
        import anyio
        try:
            while True:
                yield b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}\n\n'
                await anyio.sleep(0.02)
        finally:
            ORIGIN_STREAM_CLOSED.set()
    return StreamingResponse(body(), media_type="text/event-stream")


ORIGIN = Starlette(routes=[Route("/endless", _endless, methods=["POST"]), Route("/echo", _echo, methods=["POST"]), Route("/big/{size}", _big, methods=["POST"]),
                           Route("/gzip", _gzip_error, methods=["POST"]), Route("/broken", _broken, methods=["POST"]),
                           Route("/error", _error, methods=["POST"])])


@pytest.fixture(scope="module")
def origin():
    with serve_app(ORIGIN, port=0, name="proxy test origin") as port:
        yield f"http://127.0.0.1:{port}"


def _post(url: str, headers=(), content=b"{}") -> httpx.Response:
    with capture_client() as client:  # sends no Accept/Accept-Encoding of its own
        return client.post(url, headers=list(headers), content=content)


def test_request_headers_reach_the_origin_and_hop_by_hop_ones_stay_on_their_hop(origin):
    sent = [("Mcp-Method", "tools/call"), ("MCP-Protocol-Version", "2026-07-28"), ("Authorization", "Bearer for-origin"),
            ("Proxy-Authorization", "Basic for-the-proxy"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "private"),
            ("TE", "trailers"), ("Content-Type", "application/json")]
    with serve_proxy(origin + "/echo") as proxy:
        answer = _post(proxy.url, sent)
    received = {k.lower(): v for k, v in answer.json()["headers"]}
    assert received["mcp-method"] == "tools/call" and received["mcp-protocol-version"] == "2026-07-28"
    assert received["authorization"] == "Bearer for-origin" and received["content-type"] == "application/json"
    for name in ("proxy-authorization", "x-hop", "te"):
        assert name not in received, name
    # nothing the client did not send: httpx's default Accept / Accept-Encoding / User-Agent are not added
    assert received.get("accept-encoding") is None and received.get("accept") is None
    assert received["user-agent"] == "mcplab-live"


def test_response_headers_keep_repeated_lines_and_drop_hop_by_hop_ones(origin):
    with serve_proxy(origin + "/echo") as proxy:
        answer = _post(proxy.url)
    assert answer.headers.get_list("set-cookie") == ["a=1; Path=/", "b=2; Path=/"]
    assert "x-private" not in answer.headers and "keep-alive" not in answer.headers
    assert answer.headers["mcp-session-id"] == "kept" and answer.headers["content-length"] == str(len(answer.content))
    assert answer.headers[EXCHANGE_HEADER] == "1"


@pytest.mark.parametrize("mode", ["faithful", "buffer-sse", "collapse-errors", "rewrite-body"])
def test_a_compressed_body_passes_every_mode_as_the_origin_encoded_it(origin, mode):
    with serve_proxy(origin + "/gzip", mode) as proxy:
        answer = _post(proxy.url)
    assert answer.headers["content-encoding"] == "gzip" and answer.json() == ERROR


def test_a_large_body_crosses_byte_for_byte_and_is_recorded(origin):
    size = 8 * 1024 * 1024
    with serve_proxy(origin + f"/big/{size}") as proxy, capture_client() as client:
        direct = client.post(origin + f"/big/{size}", content=b"{}")
        answer = client.post(proxy.url, content=b"{}")
        recorded = client.get(proxy.base_url + RECORD_PREFIX + answer.headers[EXCHANGE_HEADER]).json()
    assert len(direct.content) > size and answer.content == direct.content
    assert answer.headers["content-length"] == direct.headers["content-length"]
    assert recorded["origin"]["body"]["text"].encode() == direct.content and recorded["complete"] is True


def test_records_are_bounded_by_body_bytes_keeping_the_newest(origin, monkeypatch):
    monkeypatch.setattr(proxy_module, "_KEEP_BYTES", 3000)
    with serve_proxy(origin + "/big/1000") as proxy, capture_client() as client:
        numbers = [_post(proxy.url).headers[EXCHANGE_HEADER] for _ in range(4)]
        found = [client.get(proxy.base_url + RECORD_PREFIX + n).status_code for n in numbers]
    assert found[-1] == 200 and found[0] == 404 and found.count(200) <= 3


def test_an_upstream_that_is_down_is_a_502_not_a_hang():
    with serve_app(Starlette(), port=0) as port:
        pass  # the port is free again: nothing listens there
    with serve_proxy(f"http://127.0.0.1:{port}/mcp") as proxy:
        answer = _post(proxy.url)
    assert answer.status_code == 502 and answer.text.startswith("upstream unreachable")


def test_an_upstream_that_never_answers_is_a_504_after_the_upstream_timeout():
    # A listening socket nobody accepts from: the connection opens (kernel backlog), no answer ever comes.
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        upstream = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        with serve_proxy(upstream, upstream_timeout=0.3) as proxy:
            answer = _post(proxy.url)
    finally:
        silent.close()
    assert answer.status_code == 504 and answer.text.startswith("upstream timed out")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.org"])
def test_the_proxy_listens_on_loopback_only(host):
    with pytest.raises(ProxyError, match="loopback only"):
        with serve_proxy("http://127.0.0.1:9/mcp", host=host):
            pass


@pytest.mark.parametrize("mode", ["faithful", "buffer-sse"])
def test_an_answer_the_origin_breaks_off_never_looks_complete(origin, mode):
    with serve_proxy(origin + "/broken", mode) as proxy, capture_client() as client:
        cap = send(client, proxy.url, [], b"{}")
        recorded = client.get(proxy.base_url + RECORD_PREFIX + "1").json()
    if mode == "faithful":  # streamed on: the client's connection is cut as the origin's was
        assert cap.status == 200 and cap.failure == "connection_closed" and cap.body == b'{"jsonrpc":'
    else:  # held back: the proxy knows before it answers, so it answers 502
        assert cap.status == 502 and cap.failure is None and b"broke off" in cap.body
    assert recorded["failure"].split(":")[0] in ("RemoteProtocolError", "ReadError") and recorded["complete"] is True


def test_a_client_that_goes_away_closes_the_origins_stream_too(origin):
    ORIGIN_STREAM_CLOSED.clear()
    with serve_proxy(origin + "/endless") as proxy, capture_client() as client:
        with client.stream("POST", proxy.url, content=b"{}") as answer:
            assert next(answer.iter_bytes()).startswith(b"data: ")
        # the client hung up: the proxy must hang up on the origin (bounded wait, no fixed sleep)
        assert ORIGIN_STREAM_CLOSED.wait(timeout=5.0)
        recorded = client.get(proxy.base_url + RECORD_PREFIX + answer.headers[EXCHANGE_HEADER]).json()
    assert recorded["complete"] is True and recorded["origin"]["body"]["text"].startswith("data: ")


def test_rewrite_body_rewrites_only_the_result_event_of_a_stream_whatever_the_chunking():
    from mcplab.live.proxy import REWRITE_FIELD, _EventRewriter
    from mcplab.sse import parse_sse

    stream = (b"id: 1_1\r\ndata: \r\nretry: 500\r\n\r\n: keep-alive\r\n\r\n"
              b'event: message\r\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\r\n\r\n'
              b'id: 2_1\r\nevent: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}\r\n\r\n')
    for size in (1, 7, len(stream)):
        rewriter = _EventRewriter()
        out = b"".join(rewriter.feed(stream[i:i + size]) for i in range(0, len(stream), size)) + rewriter.rest()
        before, after = parse_sse(stream), parse_sse(out)
        assert [e["data"] for e in after[:2]] == [e["data"] for e in before[:2]]  # priming event and notification kept
        assert [e["id"] for e in after] == [e["id"] for e in before]
        assert json.loads(after[2]["data"])["result"] == {"tools": [], REWRITE_FIELD: "mcplab-proxy"}


# --- DNS rebinding, request size ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/echo", RECORD_PREFIX + "1"])
@pytest.mark.parametrize(("headers", "status"), [
    ({"Host": "attacker.example:8766"}, 421),               # a rebound name pointing at 127.0.0.1
    ({"Host": "127.0.0.1.nip.io"}, 421),
    ({"Origin": "https://attacker.example"}, 403),         # a foreign page with the right Host
    ({"Origin": "null"}, 403),
])
def test_a_rebound_host_or_a_foreign_origin_reaches_neither_the_origin_nor_the_records(origin, path, headers, status):
    with serve_proxy(origin + "/echo") as proxy, capture_client() as client:
        first = client.post(proxy.url, content=b"{}")  # exchange 1 exists
        assert first.status_code == 200
        base = proxy.base_url
        request = client.build_request("POST" if path == "/echo" else "GET", base + path, content=b"{}" if path == "/echo" else None)
        for name, value in headers.items():
            request.headers[name] = value
        refused = client.send(request)
        after = client.get(base + RECORD_PREFIX + "2")
    assert refused.status_code == status and EXCHANGE_HEADER not in refused.headers
    assert "headers" not in refused.text  # no record, no echo of the origin
    assert after.status_code == 404  # nothing was forwarded, so no second exchange exists


def test_loopback_names_and_origins_pass(origin):
    with serve_proxy(origin + "/echo") as proxy, capture_client() as client:
        for host, page in [(f"localhost:{proxy.port}", None), (f"127.0.0.1:{proxy.port}", f"http://localhost:{proxy.port}")]:
            request = client.build_request("POST", proxy.url, content=b"{}")
            request.headers["Host"] = host
            if page:
                request.headers["Origin"] = page
            assert client.send(request).status_code == 200, host


def test_a_request_body_over_the_limit_is_413_and_never_forwarded(origin, monkeypatch):
    monkeypatch.setattr(proxy_module, "MAX_REQUEST_BYTES", 1000)
    with serve_proxy(origin + "/echo") as proxy, capture_client() as client:
        declared = client.post(proxy.url, content=b"x" * 1001)

        def chunked():  # no Content-Length: counted while reading
            yield b"x" * 600
            yield b"x" * 600
        streamed = client.post(proxy.url, content=chunked())
        fits = client.post(proxy.url, content=b"x" * 1000)
    assert declared.status_code == 413 and streamed.status_code == 413
    assert EXCHANGE_HEADER not in declared.headers and EXCHANGE_HEADER not in streamed.headers
    assert fits.status_code == 200 and fits.json()["length"] == 1000 and fits.headers[EXCHANGE_HEADER] == "1"


# --- unbounded reads: the origin's answer, an event without end ----------------------------------


def test_a_held_back_origin_answer_over_the_limit_is_502_and_not_held(origin, monkeypatch):
    monkeypatch.setattr(proxy_module, "MAX_RESPONSE_BYTES", 64 * 1024)
    with serve_proxy(origin + "/big/100000", "buffer-sse") as proxy, capture_client() as client:
        answer = client.post(proxy.url, content=b"{}")
        recorded = client.get(proxy.base_url + RECORD_PREFIX + answer.headers[EXCHANGE_HEADER]).json()
    assert answer.status_code == 502 and answer.text.startswith("upstream answer over")
    assert recorded["failure"] == "too_large" and recorded["complete"] is True
    assert len(recorded["origin"]["body"]["text"]) <= 64 * 1024


def test_a_streamed_origin_answer_is_recorded_up_to_the_limit_and_marked_truncated(origin, monkeypatch):
    monkeypatch.setattr(proxy_module, "MAX_RESPONSE_BYTES", 64 * 1024)
    with serve_proxy(origin + "/big/100000") as proxy, capture_client() as client:
        answer = client.post(proxy.url, content=b"{}")
        recorded = client.get(proxy.base_url + RECORD_PREFIX + answer.headers[EXCHANGE_HEADER]).json()
    assert answer.status_code == 200 and len(answer.content) > 100000  # streaming on is not cut
    assert recorded["origin"]["truncated"] is True and len(recorded["origin"]["body"]["text"]) <= 64 * 1024


def test_an_event_without_end_is_passed_on_not_held_by_rewrite_body(monkeypatch):
    from mcplab.live.proxy import _EventRewriter

    monkeypatch.setattr(proxy_module, "MAX_EVENT_BYTES", 1000)
    rewriter = _EventRewriter()
    chunks = [b"data: " + b"x" * 600, b"y" * 600, b'\n\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n']
    out = [rewriter.feed(chunk) for chunk in chunks]
    assert out[0] == b"" and out[1] == chunks[0] + chunks[1]  # held until the limit, then passed on
    assert out[2] == chunks[2] and rewriter.rest() == b""  # the rest of that stream passes unchanged


def test_the_record_endpoint_redacts_credentials_in_headers(origin):
    with serve_proxy(origin + "/echo") as proxy, capture_client() as client:
        client.post(proxy.url, content=b"{}", headers=[("Authorization", "Bearer s3cret-a"), ("Cookie", "sid=s3cret-c"),
                                                        ("Proxy-Authorization", "Basic s3cret-p")])
        recorded = client.get(proxy.base_url + RECORD_PREFIX + "1").json()
    # every header list of the record (the origin's echo BODY stays as sent, see the module docstring)
    headers = json.dumps([recorded["ingress"]["headers"], recorded["origin"]["request"]["headers"], recorded["origin"]["headers"]])
    assert "s3cret" not in headers and "a=1; Path=/" not in headers and headers.count("[REDACTED]") == 8


def _hops(client, proxy, answer):
    from mcplab.live import proxy_record

    capture = send(client, proxy.url, [("content-type", "application/json")], b"{}")
    return capture, proxy_record(client, proxy.url, capture)


def test_an_egress_function_builds_the_answer_from_the_origins_and_is_judged_on_live_hops(origin):
    """The Lab D hook: a repair written as a function runs in the live proxy, hop findings judge it."""
    from mcplab.live import hop_findings

    seen = []

    def collapse(answer):
        seen.append(answer)
        return {"status": 500, "headers": answer["headers"], "body": answer["body"]}

    def repair(answer):
        headers = [*answer["headers"], ("Connection", "close"), ("Via", "1.1 lab-proxy")]
        return {"status": answer["status"], "headers": headers, "body": answer["body"]}

    with serve_proxy(origin + "/error", egress=collapse) as proxy, capture_client() as client:
        capture, record = _hops(client, proxy, None)
        assert capture.status == 500 and record["mode"] == "egress"
        assert [f["case"] for f in hop_findings(record, capture)] == ["negative-proxy-collapsed-error"]
    assert seen[0]["status"] == 400 and json.loads(seen[0]["body"]) == ERROR
    assert ("keep-alive", "timeout=5") in seen[0]["headers"]  # the origin's headers as it sent them
    with serve_proxy(origin + "/error", egress=repair) as proxy, capture_client() as client:
        capture, record = _hops(client, proxy, None)
        assert capture.status == 400 and hop_findings(record, capture) == []
    assert capture.header("via") == "1.1 lab-proxy" and capture.header("connection") is None  # hop-by-hop stays
    assert capture.header("content-length") == str(len(capture.body)) and capture.header(EXCHANGE_HEADER) == "1"


@pytest.mark.parametrize("bad", [lambda a: 1 / 0, lambda a: {"status": 200, "headers": [], "body": "text"},
                                 lambda a: {"status": 99, "headers": [], "body": b""}, lambda a: None,
                                 lambda a: {"status": 200, "headers": [("x", 1)], "body": b""}])
def test_an_egress_function_that_fails_is_a_502_with_the_reason_recorded(origin, bad):
    with serve_proxy(origin + "/echo", egress=bad) as proxy, capture_client() as client:
        capture, _ = _hops(client, proxy, None)
        record = client.get(proxy.base_url + RECORD_PREFIX + "1").json()
    assert capture.status == 502 and capture.media_type == "text/plain"
    assert record["failure"].startswith("egress function failed: ")


def test_an_egress_function_replaces_the_mode_so_it_needs_faithful():
    with pytest.raises(ProxyError):
        proxy_module.build_proxy_app("http://127.0.0.1:9/mcp", "collapse-errors", egress=lambda a: a)
    with pytest.raises(ProxyError):
        proxy_module.build_proxy_app("http://127.0.0.1:9/mcp", egress="not a function")
