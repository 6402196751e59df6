"""``mcplab check`` and ``mcplab proxy`` from the command line, against real loopback servers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from mcplab.cli import main
from mcplab.live import serve_proxy
from mcplab.serving import serve_app
from mcplab.stockroom.server import serve_stockroom

from .conftest import wait_until

SECRET = "cli-secret-token-4242"


@pytest.fixture(scope="module")
def origin():
    with serve_stockroom(":memory:", port=0, json_response=False) as srv:
        yield srv


def test_credentials_in_the_urls_reach_neither_the_terminal_nor_the_report(origin, capsys, tmp_path):
    report = tmp_path / "matrix.html"
    port = origin.url.split(":")[2].split("/")[0]
    url = f"http://ann:{SECRET}@127.0.0.1:{port}/mcp?token={SECRET}"
    with serve_proxy(origin.url) as proxy:
        via = proxy.url.replace("http://", f"http://bob:{SECRET}@") + f"?access_token={SECRET}"
        code = main(["check", "--url", url, "--via", via, "--json", "--report", str(report)])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert code == 0 and data["summary"]["direct"] == data["summary"]["via"]
    assert SECRET not in captured.out + captured.err and SECRET not in report.read_text(encoding="utf-8")
    assert "ann:[REDACTED]@127.0.0.1" in captured.out  # which URL it was stays readable


def test_check_json_through_a_faithful_proxy(origin, capsys, tmp_path):
    report = tmp_path / "matrix.html"
    with serve_proxy(origin.url) as proxy:
        code = main(["check", "--url", origin.url, "--via", proxy.url, "--json", "--report", str(report),
                     "--header", f"Authorization: Bearer {SECRET}"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code == 0 and data["ok"] is True and data["issues"] == []
    assert data["era"]["era"] == "modern" and data["summary"]["direct"] == data["summary"]["via"]
    assert SECRET not in out and SECRET not in report.read_text(encoding="utf-8")
    assert "golden-sse-stream.read-stock" in report.read_text(encoding="utf-8")


def test_check_table_names_the_boundary_and_exits_1_on_a_fault(origin, capsys):
    with serve_proxy(origin.url, "collapse-errors") as proxy:
        code = main(["check", "--url", origin.url, "--via", proxy.url])
    out = capsys.readouterr().out
    assert code == 1
    line = next(li for li in out.splitlines() if li.startswith("negative-header-body-mismatch "))
    assert "PASS" in line and "FAIL negative-proxy-collapsed-error @intermediary" in line and line.rstrip().endswith("intermediary")
    assert "issues: negative-proxy-collapsed-error" in out


def test_check_exits_0_when_every_case_passes(origin, capsys):
    argv = ["check", "--url", origin.url, "--case", "golden-modern-list", "--case", "negative-header-body-mismatch",
            "--case", "golden-sse-stream"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # golden-sse-stream: the recorded case and those generated for the read-only tools
    ran = [line for line in out.splitlines() if line.startswith(("golden-", "negative-"))]
    passed = sum(" PASS " in line for line in ran)
    assert passed >= 3 and all(" PASS " in line or " N/A " in line for line in ran)
    assert f"direct {passed} passed, 0 failed" in out and "issues: none" in out
    assert main(["check", "--url", origin.url, "--case", "no-such-case"]) == 2


def test_unreachable_url_is_one_line_and_exit_2(capsys):
    with serve_app(Starlette(), port=0) as port:
        pass
    assert main(["check", "--url", f"http://127.0.0.1:{port}/mcp"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mcplab: error:") and "nothing answers" in err and "\n" not in err


@pytest.mark.parametrize("argv, needle", [
    (["check", "--url", "ftp://example/mcp"], "expected an http(s) URL"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--header", "no-colon"], "expected 'Name: value'"),
    (["proxy", "--upstream", "not a url", "--port", "0"], "--upstream"),
    (["proxy", "--upstream", "http://127.0.0.1:9/mcp", "--port", "0", "--host", "0.0.0.0"], "loopback only"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--header", "X Bad: v"], "a header name is"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--header", "X-Ok: line\nbreak"], "printable ASCII"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--header", "X-Ok: caf\u00e9"], "printable ASCII"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--timeout", "0"], "--timeout"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--timeout", "-1"], "--timeout"),
    (["check", "--url", "http://127.0.0.1:9/mcp", "--timeout", "nan"], "--timeout"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # refused while parsing (--timeout): argparse exits
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


@pytest.mark.parametrize("header", ["Authorization Bearer sk-live-0123456789", "sk-live-0123456789"])
def test_a_header_without_its_colon_is_refused_without_echoing_it(header, capsys):
    assert main(["check", "--url", "http://127.0.0.1:9/mcp", "--header", header]) == 2
    captured = capsys.readouterr()
    assert "expected 'Name: value'" in captured.err and "sk-live" not in captured.err + captured.out


def test_strict_mode_without_proof_chooses_no_era_and_fails(capsys):
    app = Starlette(routes=[Route("/mcp", lambda r: Response(b"", status_code=200), methods=["POST"])])
    with serve_app(app, port=0) as port:
        code = main(["check", "--url", f"http://127.0.0.1:{port}/mcp", "--era-mode", "strict", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["era"]["era"] is None and data["era"]["case"] == "era-strict-unproven"
    assert data["era"]["observations"] == [{"kind": "empty_response", "status": 200}] and data["rows"] == []


def test_proxy_command_serves_until_sigterm(origin, tmp_path):
    log = tmp_path / "proxy.log"
    with open(log, "w") as out:
        child = subprocess.Popen([sys.executable, "-m", "mcplab", "proxy", "--upstream", origin.url, "--port", "0",
                                  "--mode", "buffer-sse"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "serving" in log.read_text() or child.poll() is not None, 20, "the proxy's start-up line")
        line = log.read_text()
        assert "mcplab proxy (buffer-sse) serving http://127.0.0.1:" in line, line
        url = line.split("serving ", 1)[1].split()[0]
        assert main(["check", "--url", origin.url, "--via", url, "--json"]) == 1
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=10)
    assert child.returncode == 0 and "stopped" in log.read_text()


def test_the_command_line_starts_without_the_live_wire_stack():
    code = ("import sys, mcplab.cli; "
            "print(sorted(m for m in ('httpx', 'httpx_sse', 'starlette', 'uvicorn') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]"


def test_proxy_help_names_every_mode_and_an_unknown_mode_is_exit_2(capsys):
    from mcplab.live.proxy import PROXY_MODES

    assert main(["proxy", "--help"]) == 0  # main returns the exit code, --help included
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(mode in help_text for mode in PROXY_MODES)
    assert main(["proxy", "--upstream", "http://127.0.0.1:9/mcp", "--port", "0", "--mode", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--mode 'bogus'" in err and "buffer-sse" in err and "\n" not in err


def test_an_unwritable_report_is_refused_before_the_run(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    for report, needle in ((blocker / "r.html", "does not exist"), (tmp_path, "is a directory")):
        # the URL answers nothing: the run would fail differently, so the report was checked first
        assert main(["check", "--url", "http://127.0.0.1:9/mcp", "--report", str(report)]) == 2
        err = capsys.readouterr().err.strip()
        assert "--report" in err and needle in err and "\n" not in err
    assert main(["check", "--url", "http://127.0.0.1:9/mcp", "--report", str(tmp_path / "new" / "dir" / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "new").exists()  # never created (issue 15)


@pytest.mark.parametrize("status, body, media, said", [
    (200, b"<html><body>Welcome</body></html>", "text/html", "answered HTTP 200 text/html"),
    (404, b"not found", "text/plain", "answered HTTP 404 text/plain"),
])
def test_a_server_that_is_not_mcp_fails_with_what_it_answered(status, body, media, said, capsys):
    app = Starlette(routes=[Route("/mcp", lambda r: Response(body, status_code=status, media_type=media), methods=["POST"])])
    with serve_app(app, port=0) as port:
        code = main(["check", "--url", f"http://127.0.0.1:{port}/mcp"])
    out = capsys.readouterr().out
    assert code == 1 and "era: none" in out
    assert "no case was run: the server/discover probe was " + said in out and "proves no MCP era" in out


def test_the_proxy_command_does_not_print_the_upstream_credentials(origin, capsys, monkeypatch):
    import mcplab.serving

    def run_once(context, started):  # the real one waits for a signal: start, announce, stop
        with context as running:
            started(running)

    monkeypatch.setattr(mcplab.serving, "run_until_signal", run_once)
    upstream = origin.url.replace("http://", f"http://ann:{SECRET}@") + f"?token={SECRET}"
    assert main(["proxy", "--upstream", upstream, "--port", "0"]) == 0
    captured = capsys.readouterr()
    assert "serving http://127.0.0.1:" in captured.out and "ann:[REDACTED]@127.0.0.1" in captured.out
    assert SECRET not in captured.out + captured.err


def _hostile_via(record: bytes | None, encoding: str | None = None):
    """A --via that answers every POST with an empty JSON object and a proxy exchange number, and
    serves ``record`` as that exchange's record (``None``: a record without end)."""
    from http.server import BaseHTTPRequestHandler

    from .conftest import serve_handler

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, body: bytes, encoding: str | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("X-Mcplab-Exchange", "1")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._answer(b"{}")

        def do_GET(self):
            if record is not None:
                return self._answer(record, encoding)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()  # no length: the body ends when the connection does, i.e. never
            try:
                while True:
                    self.wfile.write(b" " * 65536)
            except OSError:  # the client hung up
                pass

    return serve_handler(Handler)


def test_a_via_record_nested_too_deeply_is_no_record_not_a_traceback(origin, capsys):
    with _hostile_via(b"[" * 200_000 + b"]" * 200_000) as port:
        code = main(["check", "--url", origin.url, "--via", f"http://127.0.0.1:{port}/mcp", "--case", "golden-modern-list",
                     "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and [row["via"]["hopsRecorded"] for row in data["rows"] if row["via"]] == [False]


def test_a_via_record_without_end_is_read_up_to_the_record_limit(origin, capsys, monkeypatch):
    monkeypatch.setattr("mcplab.live.check.MAX_RECORD_BYTES", 1024 * 1024)
    with _hostile_via(None) as port:
        code = main(["check", "--url", origin.url, "--via", f"http://127.0.0.1:{port}/mcp", "--case", "golden-modern-list",
                     "--json", "--timeout", "30"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and [row["via"]["hopsRecorded"] for row in data["rows"] if row["via"]] == [False]


def test_a_via_record_with_stacked_content_codings_is_not_decoded(origin, capsys):
    import gzip
    import tracemalloc

    bomb = gzip.compress(gzip.compress(bytes(128 << 20)))
    with _hostile_via(bomb, "gzip, gzip") as port:
        tracemalloc.start()
        try:
            code = main(["check", "--url", origin.url, "--via", f"http://127.0.0.1:{port}/mcp", "--case", "golden-modern-list",
                         "--json"])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and [row["via"]["hopsRecorded"] for row in data["rows"] if row["via"]] == [False]
    assert peak < 64 * 1024 * 1024
