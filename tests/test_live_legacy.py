"""``mcplab check`` on servers that speak only 2025-11-25: the real reference server (stateful
sessions, resumable SSE) and the stockroom (stateless), each behind a filter that answers every
2026-07-28 request the way a 2025-11-25 server does (400, -32000, no modern error code)."""

from __future__ import annotations

import json
import re
import time

import httpx
import pytest
from starlette.responses import JSONResponse

from mcplab.live import run_check, serve_proxy
from mcplab.reference.server import build_app as reference_app
from mcplab.serving import serve_app
from mcplab.stockroom.ledger import MEMORY, Ledger
from mcplab.stockroom.rules import Stockroom
from mcplab.stockroom.server import build_app as stockroom_app


class LegacyOnly:
    """ASGI filter: a request naming a 2026 protocol version is refused as a 2025-11-25 server refuses it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        version = dict(scope.get("headers", ())).get(b"mcp-protocol-version", b"") if scope["type"] == "http" else b""
        if version.startswith(b"2026"):
            refusal = JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
                "code": -32000, "message": f"Bad Request: Unsupported protocol version: {version.decode()}"}}, status_code=400)
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def reference_legacy():
    with serve_app(LegacyOnly(reference_app()), port=0, name="legacy-only reference") as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def stockroom_legacy():
    with serve_app(LegacyOnly(stockroom_app(Stockroom(Ledger(MEMORY)), json_response=False)), port=0, name="legacy-only stockroom") as port:
        yield f"http://127.0.0.1:{port}/mcp"


def _sent(evidence, name):
    return [v for k, v in evidence["request"]["headers"] if k.lower() == name]


@pytest.mark.parametrize("server", ["reference_legacy", "stockroom_legacy"])
def test_legacy_is_chosen_only_when_allowed_and_never_in_strict_mode(request, server):
    url = request.getfixturevalue(server)
    refused = run_check(url)
    assert refused.era["era"] is None and refused.era["observations"][0] == {"kind": "jsonrpc_error", "code": -32000, "status": 400}
    assert len(refused.probes) == 1 and not refused.ok  # no initialize was even sent
    strict = run_check(url, era_mode="strict", allow_legacy=True)
    assert strict.era["era"] is None and strict.era["case"] == "era-strict-unproven" and len(strict.probes) == 1


def test_a_stateful_legacy_server_is_checked_inside_its_session_and_the_session_is_closed(reference_legacy):
    with serve_proxy(reference_legacy) as proxy:
        result = run_check(reference_legacy, via=proxy.url, allow_legacy=True)
    assert result.era["era"] == result.via_era["era"] == "legacy" and result.era["case"] == "era-fallback-legacy-proven"
    row = next(r for r in result.rows if r["applies"])
    assert [r["case"] for r in result.rows if r["applies"]] == ["golden-legacy-list", "golden-sse-stream.tool-with-progress"]
    # without the session id the server answered 400 "Missing session ID", judged negative-id-mismatch
    assert row["case"] == "golden-legacy-list" and row["direct"]["status"] == row["via"]["status"] == "pass", row
    assert result.ok and result.issues == [] and row["change"] is None and row["via"]["hopsRecorded"]
    for column in ("direct", "via"):  # each resumable stream opened with a priming event (an id, no data): no message
        priming, answer = row["evidence"][column]["response"]["events"]
        assert priming["id"] and priming["data"] is None and answer["data"]["id"] == 1
    direct_session = _sent(row["evidence"]["direct"], "mcp-session-id")
    via_session = _sent(row["evidence"]["via"], "mcp-session-id")
    assert len(direct_session) == len(via_session) == 1 and direct_session != via_session  # one session per target
    initialized = [p for p in result.probes if (p["request"]["body"] or {}).get("method") == "notifications/initialized"]
    assert [p["response"]["status"] for p in initialized] == [202, 202]
    # the sessions were ended: the server no longer knows them
    body = {"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}
    for session in (direct_session[0], via_session[0]):
        answer = httpx.post(reference_legacy, json=body, headers={"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25",
                                                                  "Accept": "application/json, text/event-stream"})
        assert answer.status_code == 404


def test_a_stateless_legacy_server_is_checked_without_a_session(stockroom_legacy):
    result = run_check(stockroom_legacy, allow_legacy=True)
    assert result.era["era"] == "legacy" and result.ok
    row = next(r for r in result.rows if r["applies"])
    assert row["case"] == "golden-legacy-list" and row["direct"]["status"] == "pass"
    assert _sent(row["evidence"]["direct"], "mcp-session-id") == []


def test_the_command_line_json_and_report_name_the_legacy_era_and_how_it_was_proven(reference_legacy, tmp_path, capsys):
    from mcplab.cli import main

    page = tmp_path / "legacy.html"
    with serve_proxy(reference_legacy) as proxy:
        assert main(["check", "--url", reference_legacy, "--allow-legacy", "--via", proxy.url, "--report", str(page), "--recorded-only"]) == 0
        out = capsys.readouterr().out
        assert main(["check", "--url", reference_legacy, "--allow-legacy", "--via", proxy.url, "--json", "--recorded-only"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert out.startswith("era: legacy (era-fallback-legacy-proven)") and re.search(r"golden-legacy-list +MUST +PASS +- +PASS +-", out)
    assert data["era"]["legacyEvidence"] == data["viaEra"]["legacyEvidence"] == {"kind": "initialize_success", "protocolVersion": "2025-11-25"}
    assert [(r["case"], r["change"]) for r in data["rows"] if r["applies"]] == [
        ("golden-legacy-list", None), ("golden-sse-stream.tool-with-progress", None)]
    html = page.read_text()
    assert "era: <b>legacy</b> (<code>era-fallback-legacy-proven</code>" in html and "(era legacy)" in html
    assert "behaviour change in the era decision" not in html


def test_without_the_allowance_the_command_line_says_how_to_allow_legacy(reference_legacy, capsys):
    from mcplab.cli import main

    assert main(["check", "--url", reference_legacy]) == 1
    assert "pass --allow-legacy" in capsys.readouterr().out
    assert main(["check", "--url", reference_legacy, "--era-mode", "strict", "--allow-legacy"]) == 1
    assert "--allow-legacy" not in capsys.readouterr().out  # strict mode never chooses legacy: no such advice


def test_an_era_decision_that_differs_through_the_proxy_is_a_named_behaviour_change(reference_legacy):
    from mcplab.live.report import render_report
    from mcplab.reference.server import serve_reference

    with serve_reference(port=0) as modern:  # "via" answers server/discover: the era flips to modern
        result = run_check(reference_legacy, via=modern.url, allow_legacy=True)
    assert result.era["era"] == "legacy" and result.via_era["era"] == "modern" and not result.ok
    page = render_report(result)
    assert "behaviour change in the era decision, boundary: <b>intermediary</b>" in page
    assert "<code>era-fallback-legacy-proven</code>, through the proxy <code>era-strict-modern-proven</code>" in page


def test_a_buffering_proxy_is_caught_on_a_legacy_stream_that_opens_with_a_priming_event(reference_legacy):
    with serve_proxy(reference_legacy, "buffer-sse") as proxy:
        result = run_check(reference_legacy, via=proxy.url, allow_legacy=True)
    row = next(r for r in result.rows if r["case"] == "golden-sse-stream.tool-with-progress")
    assert row["direct"]["status"] == "pass" and row["direct"]["timing"]["eventCount"] >= 4  # priming, 3 progress, result
    assert row["evidence"]["direct"]["response"]["events"][0]["data"] is None
    assert row["via"]["observed"] == "negative-sse-buffered" and row["change"]["boundary"] == "intermediary"
    assert result.issues == ["negative-sse-buffered"]


#: In front of a 2025-11-25 server (every answer a stream, no legacy negative to provoke a 4xx):
#: what each mode can show. collapse-errors has no protocol error to collapse there.
LEGACY_ISSUES = {"faithful": [], "collapse-errors": [], "rewrite-body": ["negative-proxy-changed-body"],
                 "buffer-sse": ["negative-sse-buffered"]}


def test_each_proxy_mode_in_front_of_a_legacy_server_shows_only_its_own_issue(reference_legacy):
    from mcplab.live import PROXY_MODES

    for mode in PROXY_MODES:
        with serve_proxy(reference_legacy, mode) as proxy:
            result = run_check(reference_legacy, via=proxy.url, allow_legacy=True)
        assert result.era["era"] == "legacy" and result.issues == LEGACY_ISSUES[mode], mode
        assert all(row["direct"]["status"] == "pass" for row in result.rows if row["applies"]), mode


class EndlessDelete:
    """ASGI filter: a ``DELETE`` (the end of a session) is answered by a body that never ends (until 30 s)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "DELETE":
            await self.app(scope, receive, send)
            return
        import anyio

        async def until_disconnect(scope: anyio.CancelScope) -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            scope.cancel()

        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        async with anyio.create_task_group() as group:
            group.start_soon(until_disconnect, group.cancel_scope)
            with anyio.move_on_after(30):
                while True:
                    await send({"type": "http.response.body", "body": b" " * 65536, "more_body": True})
                    await anyio.sleep(0)
            await send({"type": "http.response.body", "body": b""})
            group.cancel_scope.cancel()


def test_a_session_end_answered_without_end_is_not_read():
    with serve_app(EndlessDelete(LegacyOnly(reference_app())), port=0, name="endless DELETE") as port:
        started = time.monotonic()
        result = run_check(f"http://127.0.0.1:{port}/mcp", allow_legacy=True, only=["golden-legacy-list"])
        seconds = time.monotonic() - started
    assert result.era["era"] == "legacy" and result.ok
    assert seconds < 20  # the DELETE answer was not read (reading it took the server's 30 s)
