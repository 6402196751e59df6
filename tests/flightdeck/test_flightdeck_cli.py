"""``mcplab preflight``: JSON on stdout, exit 0/1 by blockers, one line and exit 2 for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

import pytest

from mcplab.cli import main
from mcplab.stockroom import StockroomClient, serve_stockroom

from ..conftest import free_port, serve_handler
from .support import RESTOCK


@pytest.fixture(scope="module")
def server():
    with serve_stockroom() as srv:
        with StockroomClient(srv.url) as client:
            client.draft_reorder()
        yield srv


def run(capsys, *argv):
    code = main(["preflight", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_inspect_server_and_tool_print_json(server, capsys, era):
    before = len(server.stockroom.trace())
    code, out, err = run(capsys, "--url", server.url, "--era", era, "inspect-server")
    report = json.loads(out)
    assert code == 0 and report["era"] == era and report["catalog_identity"].startswith("sha256:")
    code, out, _ = run(capsys, "--url", server.url, "--era", era, "inspect-tool", "commit_reorder")
    info = json.loads(out)
    assert code == 0 and info["execution_policy"]["effect_class"] == "write" and info["execution_policy"]["approval_required"]
    code, out, _ = run(capsys, "--url", server.url, "--era", era, "inspect-tool", "delete_item")
    assert code == 1 and json.loads(out)["in_effective_catalog"] is False
    assert len(server.stockroom.trace()) == before


def test_validate_and_preview(server, capsys):
    identity = json.loads(run(capsys, "--url", server.url, "inspect-server")[1])["catalog_identity"]
    code, out, _ = run(capsys, "--url", server.url, "validate", "commit_reorder", "--args", json.dumps(RESTOCK),
                       "--catalog-identity", identity)
    verdict = json.loads(out)
    assert code == 0 and verdict["static_request_blocked"] is False and verdict["approval_required"] is True
    code, out, _ = run(capsys, "--url", server.url, "validate", "commit_reorder", "--args", json.dumps({**RESTOCK, "ledger_version": 5}))
    assert code == 1 and "stale_ledger_version" in [b["code"] for b in json.loads(out)["blockers"]]
    code, out, _ = run(capsys, "--url", server.url, "preview", "commit_reorder", "--args", json.dumps(RESTOCK))
    preview = json.loads(out)["preview"]
    assert code == 0 and preview["prediction"] and [d["on_order_after"] for d in preview["effects"]["ledger_change"]["on_order_diff"]] == [6, 13, 3, 6]


def test_search_limits_and_authority(server, capsys):
    code, out, _ = run(capsys, "--url", server.url, "search", "draft")
    assert code == 0 and {hit["name"] for hit in json.loads(out)["matches"]} >= {"draft_reorder"}
    code, out, _ = run(capsys, "--url", server.url, "limits")
    assert code == 0 and json.loads(out)["reserves_capacity"] is False
    code, out, _ = run(capsys, "--url", server.url, "authority", "commit_reorder", "--args", json.dumps(RESTOCK))
    assert code == 0 and json.loads(out)["target_readiness"]["status"] == "ready"
    code, out, _ = run(capsys, "--url", server.url, "authority", "commit_reorder", "--args", '{"draft_id": 1}')
    readiness = json.loads(out)["target_readiness"]
    assert readiness["status"] == "unproven" and readiness["why"].startswith("the arguments do not pass validation")


def test_plan_file(server, capsys, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps([{"tool": "read_stock", "arguments": {}}, {"tool": "commit_reorder", "arguments": RESTOCK}]))
    code, out, _ = run(capsys, "--url", server.url, "plan", str(path))
    plan = json.loads(out)
    assert code == 0 and plan["execution_authorized"] is False and plan["execution_started"] is False
    assert [s["tool"] for s in plan["steps"]] == ["read_stock", "commit_reorder"]
    path.write_text(json.dumps({"calls": [{"tool": "delete_item", "arguments": {}}]}))
    code, out, _ = run(capsys, "--url", server.url, "plan", str(path))
    assert code == 1 and json.loads(out)["blocked_steps"] == [0]


@pytest.mark.parametrize(("argv", "message"), [
    (["validate", "commit_reorder", "--args", "{not json"], "--args: not JSON"),
    (["validate", "commit_reorder", "--args", "[1, 2]"], "--args: expected a JSON object"),
    (["validate", "commit_reorder", "--args", "[" * 100_000], "--args: nested too deeply"),
    (["plan", "/nonexistent/plan.json"], "cannot read the plan file"),
])
def test_bad_input_is_one_line_and_exit_2(server, capsys, argv, message):
    code, out, err = run(capsys, "--url", server.url, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err and "Traceback" not in err


def test_bad_plan_content_and_unreachable_url_are_exit_2(server, capsys, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text("[{\"tool\": ")
    code, _, err = run(capsys, "--url", server.url, "plan", str(path))
    assert code == 2 and str(path) in err and err.count("\n") == 1
    path.write_text(json.dumps([{"arguments": {}}]))
    code, _, err = run(capsys, "--url", server.url, "plan", str(path))
    assert code == 2 and f"{path}: calls[0]" in err
    path.write_text(json.dumps([{"tool": "read_stock"}] * 21))  # named before any connection is tried
    code, _, err = run(capsys, "--url", f"http://127.0.0.1:{free_port()}/mcp", "plan", str(path))
    assert code == 2 and err.count("\n") == 1 and f"{path}: calls: 21 calls" in err
    code, _, err = run(capsys, "--url", f"http://127.0.0.1:{free_port()}/mcp", "inspect-server")
    assert code == 2 and err.count("\n") == 1 and "Connect" in err
    code, _, err = run(capsys, "--url", "ftp://example", "inspect-server")
    assert code == 2 and "http(s) URL" in err


def test_python_dash_m_runs_the_command(server):
    done = subprocess.run([sys.executable, "-m", "mcplab", "preflight", "--url", server.url, "inspect-tool", "read_stock"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["execution_policy"]["effect_class"] == "read"


# -- review: endpoints that are not MCP, malformed URLs, secrets in the URL ------------------------------------
@contextmanager
def serve_not_mcp(status: int, content_type: str, body: bytes):
    """A plain HTTP server on loopback that answers every POST with ``status`` and ``body`` (not an MCP server)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the stdlib's name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    with serve_handler(Handler) as port:
        yield f"http://ann:hunter2@127.0.0.1:{port}/mcp?token=abc"


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize(("status", "content_type", "body", "message"), [
    (200, "text/html", b"<html>hello</html>", "not JSON-RPC"),
    (404, "text/plain", b"not found", "HTTP 404"),
])
def test_an_endpoint_that_is_not_mcp_is_one_line_without_the_urls_secrets(capsys, era, status, content_type, body, message):
    with serve_not_mcp(status, content_type, body) as url:
        code, out, err = run(capsys, "--url", url, "--era", era, "inspect-server")
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    assert "hunter2" not in err and "token=abc" not in err and "[REDACTED]" in err


def test_a_tools_list_result_that_is_not_an_object_is_one_line(capsys, monkeypatch):
    from mcplab.stockroom.client import StockroomClient as Client

    answers = {"tools/list": {"jsonrpc": "2.0", "id": 1, "result": ["not", "an", "object"]},
               "server/discover": {"jsonrpc": "2.0", "id": 1, "result": "odd"}}
    monkeypatch.setattr(Client, "request", lambda self, method, params=None: answers[method])
    code, out, err = run(capsys, "--url", "http://127.0.0.1:9/mcp", "inspect-server")
    assert code == 2 and err.count("\n") == 1 and "tools/list answered a result that is not" in err


def test_a_malformed_url_is_one_line(capsys):
    code, _, err = run(capsys, "--url", "http://[::1", "inspect-server")
    assert code == 2 and err.count("\n") == 1 and "expected an http(s) URL" in err
