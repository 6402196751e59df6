"""``StockroomClient`` against a hostile server: bounded reads and one-line errors, never a traceback.

The hostile server is ``http.server`` on a free loopback port in a thread, stopped after each test;
each path answers one canned reply (a body, a declared length, or chunks without a length).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from mcplab.cli import main
from mcplab.stockroom import ApprovalError, StockroomClient, StockroomConnectionError
from mcplab.stockroom.client import MAX_RESPONSE_BYTES

from .conftest import serve_handler

DEEP = 100_000


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


#: path -> (status, content type, body); a body that is a list of bytes is sent chunked, without Content-Length.
REPLIES: dict[str, tuple[int, str, bytes | list[bytes]]] = {
    "/deep/mcp": (200, "application/json", b'{"jsonrpc":"2.0","id":1,"result":' + _deep(DEEP) + b"}"),
    "/garbage/mcp": (200, "application/json", b"\x00\xff not json at all"),
    "/huge/mcp": (200, "application/json", [b" " * (1 << 20)] * 17),
    "/stockroom/ledger": (200, "application/json", _deep(DEEP)),
    "/stockroom/drafts": (200, "application/json", [b"[" + b"0," * (1 << 19)] * 17),
    "/stockroom/approvals/AP-0123456789ab": (409, "text/plain", b"no"),
    "/stockroom/approvals": (409, "application/json", b'{"error": ' + _deep(DEEP) + b"}"),
    "/stockroom/trace": (200, "application/json", b'{"records": "nope"}'),
}


class _Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: what the limit is for
            pass

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        status, media, body = REPLIES.get(self.path, (404, "text/plain", b"no such path"))
        self.send_response(status)
        self.send_header("Content-Type", media)
        if isinstance(body, list):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in body:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_GET = do_POST = _answer


@pytest.fixture
def hostile() -> Iterator[str]:
    with serve_handler(_Hostile) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("path, message", [
    ("/deep/mcp", "nested too deeply"),
    ("/garbage/mcp", "not JSON-RPC"),
    ("/huge/mcp", f"larger than {MAX_RESPONSE_BYTES} bytes"),
])
def test_mcp_answers_from_a_hostile_server_are_one_line_errors(hostile, path, message):
    with StockroomClient(hostile + path) as client, pytest.raises(StockroomConnectionError) as caught:
        client.list_tools()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_declared_length_over_the_limit_is_refused_before_reading(hostile, monkeypatch):
    monkeypatch.setattr("mcplab.stockroom.client.MAX_RESPONSE_BYTES", 10)
    with StockroomClient(hostile + "/garbage/mcp") as client, pytest.raises(StockroomConnectionError, match="larger than 10 bytes"):
        client.list_tools()


@pytest.mark.parametrize("call, message", [
    (lambda c: c.snapshot(), "nested too deeply"),
    (lambda c: c.drafts(), f"larger than {MAX_RESPONSE_BYTES} bytes"),
    (lambda c: c.decide_approval("AP-0123456789ab", "accept"), "not JSON"),
    (lambda c: c.pending_approvals(), "nested too deeply"),
    (lambda c: c.audit(), "not a stockroom trace"),
])
def test_admin_answers_from_a_hostile_server_are_one_line_errors(hostile, call, message):
    with StockroomClient(hostile + "/mcp") as client, pytest.raises(StockroomConnectionError) as caught:
        call(client)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_refusal_without_a_text_error_is_still_an_approval_error(hostile, monkeypatch):
    REPLIES_409 = {**REPLIES, "/stockroom/approvals/AP-0123456789ab": (409, "application/json", b'{"error": [1]}')}
    monkeypatch.setattr(f"{__name__}.REPLIES", REPLIES_409)
    with StockroomClient(hostile + "/mcp") as client, pytest.raises(ApprovalError, match="approval refused"):
        client.decide_approval("AP-0123456789ab", "accept")


def test_the_command_line_reports_a_hostile_server_in_one_line(hostile, capsys):
    assert main(["preflight", "--url", hostile + "/deep/mcp", "inspect-server"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "nested too deeply" in err


def test_an_honest_answer_is_read_whole():
    from mcplab.stockroom import serve_stockroom

    with serve_stockroom() as srv, StockroomClient(srv.url) as client:
        assert [tool["name"] for tool in client.list_tools()] and json.dumps(client.snapshot())


def test_stacked_content_codings_are_refused_before_they_decode_past_the_limit():
    """``gzip, gzip`` of 128 MiB of zeros is a few hundred bytes on the wire, and httpx decodes each
    chunk whole: read, it would take far more memory than MAX_RESPONSE_BYTES before any check."""
    import gzip
    import tracemalloc

    body = gzip.compress(gzip.compress(bytes(128 << 20)))

    class Bomb(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip, gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_handler(Bomb) as port, StockroomClient(f"http://127.0.0.1:{port}/mcp") as client:
        tracemalloc.start()
        try:
            with pytest.raises(StockroomConnectionError, match="content codings") as caught:
                client.list_tools()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < MAX_RESPONSE_BYTES and "\n" not in str(caught.value)
