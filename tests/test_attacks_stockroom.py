"""Issue 15, items 1 and 2: the stockroom under a hostile client.

1. Client text (a lone surrogate in an approval note, in a tool name or an argument key) never costs
   a trace record its facts, and never makes ``mcplab stockroom trace --verify`` cry tamper.
2. A 2025-11-25 agent cannot approve its own commit: the HTTP approval route needs the approver
   token (kept beside the database, mode 0600), the message to the agent names no route, and the
   trace records which channel approved.
"""

from __future__ import annotations

import os
import stat

import httpx
import pytest

from mcplab.cli import main
from mcplab.stockroom import ApprovalError, Stockroom, StockroomClient, serve_stockroom
from mcplab.stockroom.approver import approver_token_path

RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}
LONE_SURROGATES = ["\ud800", "ok \udfff end", "\udc80" * 300]


# -- 1. client text never costs a record its facts -------------------------------------------------
@pytest.mark.parametrize("note", LONE_SURROGATES)
def test_an_approved_commit_keeps_its_facts_whatever_the_note(tmp_path, capsys, note):
    path = tmp_path / "stock.sqlite3"
    room = Stockroom(path)
    room.draft_reorder()
    done = room.approve(room.commit_reorder(RESTOCK), note=note)
    assert done.structured["ok"] is True
    approved = [r for r in room.trace() if r["decision"] == "approved"]
    assert len(approved) == 1
    detail = approved[0]["detail"]
    assert detail["lines"] == RESTOCK["lines"]
    assert (detail["ledger_version_before"], detail["ledger_version_after"]) == (1, 2)
    assert "\ufffd" in detail["note"] and len(detail["note"]) <= 200
    assert room.verify() == []
    room.close()
    assert main(["stockroom", "trace", "--verify", "--db", str(path)]) == 0
    assert "intact" in capsys.readouterr().out.lower()


@pytest.mark.parametrize("call", [
    ("read\ud800stock", {}),
    ("read_stock", {"\ud800": 1}),
    ("commit_reorder", {**RESTOCK, "lines": [{"sku": "SR-1\udfff", "add_on_order": 1}]}),
])
def test_surrogates_anywhere_in_a_call_are_recorded_not_raised(call):
    room = Stockroom()
    name, arguments = call
    outcome = room.call_tool(name, arguments)
    assert outcome.kind == "error" and outcome.trace_seq == 1
    record = room.trace()[-1]
    assert "omitted" not in str(record["arguments"])  # the call is still readable, with U+FFFD in place
    assert room.verify() == []


# -- 2. a person's approval needs a credential the agent never sees --------------------------------
def _legacy_pending(agent: StockroomClient) -> str:
    agent.reset()
    agent.draft_reorder()
    pending = agent.commit_reorder(RESTOCK)
    assert pending.structured["error"] == "approval_required"
    return pending.structured["approval_id"]


def test_the_agent_cannot_approve_itself_over_http():
    with serve_stockroom() as server, StockroomClient(server.url, era="legacy") as agent:
        approval_id = _legacy_pending(agent)
        message = agent.commit_reorder(RESTOCK).structured.get("message", "")
        assert "/stockroom/approvals" not in message and "POST" not in message
        with httpx.Client() as http:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "nope"}):
                reply = http.post(f"{server.base_url}/stockroom/approvals/{approval_id}", json={"action": "accept"},
                                  headers=headers)
                assert reply.status_code == 403, reply.text
        with pytest.raises(ApprovalError, match="approver token"):
            agent.decide_approval(approval_id, "accept")  # a client without the token is refused
        retry = agent.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
        assert retry.structured["error"] == "approval_pending"
        assert server.stockroom.snapshot()["ledger_version"] == 1
        assert not [r for r in server.stockroom.trace() if r["tool"] == "approval"]


def test_a_person_with_the_token_approves_over_http_and_the_trace_names_the_channel():
    with serve_stockroom() as server, StockroomClient(server.url, era="legacy") as agent, \
            StockroomClient(server.url, approver_token=server.approver_token) as person:
        approval_id = _legacy_pending(agent)
        person.decide_approval(approval_id, "accept")
        done = agent.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
        assert done.structured["ok"] is True
        accepted = [r for r in server.stockroom.trace() if r["tool"] == "approval"]
        assert [r["arguments"]["channel"] for r in accepted] == ["http"]
        assert server.approver_token not in str(server.stockroom.trace())


def test_the_token_lives_beside_the_database_mode_0600_and_the_cli_records_its_channel(tmp_path, capsys):
    path = tmp_path / "stock.sqlite3"
    agent = Stockroom(path, era="legacy")
    agent.draft_reorder()
    pending = agent.commit_reorder(RESTOCK)
    message = pending.structured["message"]
    assert "POST" not in message and "/stockroom/approvals" not in message
    token_file = approver_token_path(path)
    assert token_file.parent == path.parent and token_file.is_file()
    assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
    assert len(token_file.read_text().strip()) >= 32
    approval_id = pending.structured["approval_id"]
    assert main(["stockroom", "approve", approval_id, "--db", str(path)]) == 0
    capsys.readouterr()
    agent.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    channels = [r["arguments"].get("channel") for r in agent.trace() if r["tool"] == "approval"]
    assert channels == ["cli"]
    assert agent.verify() == []
    agent.close()


def test_a_file_server_shares_the_token_file(tmp_path):
    path = tmp_path / "stock.sqlite3"
    with serve_stockroom(path) as server:
        assert server.approver_token == approver_token_path(path).read_text().strip()


def test_the_panel_records_its_channel():
    from mcplab.ui import CircuitPanel

    room = Stockroom(era="legacy")
    panel = CircuitPanel(room)
    panel.restock_button.click()
    panel.approve_button.click()
    assert room.snapshot()["ledger_version"] == 2
    assert [r["arguments"]["channel"] for r in room.trace() if r["tool"] == "approval"] == ["panel"]


def test_the_panel_over_http_approves_with_the_token():
    from mcplab.ui import CircuitPanel

    with serve_stockroom() as server, \
            StockroomClient(server.url, era="legacy", approver_token=server.approver_token) as client:
        client.reset()
        panel = CircuitPanel(client)
        panel.restock_button.click()
        panel.approve_button.click()
        assert server.stockroom.snapshot()["ledger_version"] == 2, panel.result
        assert [r["arguments"]["channel"] for r in server.stockroom.trace() if r["tool"] == "approval"] == ["panel/http"]


def test_serve_stockroom_prints_where_the_token_is_and_it_is_there(tmp_path):
    import subprocess
    import sys

    from .conftest import stop_process, wait_until

    db = tmp_path / "s.sqlite3"
    log = tmp_path / "serve.log"
    with log.open("wb") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "mcplab", "serve", "stockroom", "--port", "0", "--db", str(db)],
                                stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_until(lambda: "approver token" in log.read_text() or proc.poll() is not None, 30, "the serve banner")
    finally:
        stop_process(proc)
    line = next(line for line in log.read_text().splitlines() if "approver token" in line)
    path = approver_token_path(db)
    assert line.endswith(str(path)) and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_text().strip() not in log.read_text()  # where it is, never what it is


# -- a client that goes away mid-body ----------------------------------------------------------------
def test_a_client_that_disconnects_mid_body_leaves_one_line_and_nothing_decided(tmp_path):
    import logging
    import socket

    from .conftest import wait_until

    class Lines(logging.Handler):
        def __init__(self) -> None:
            super().__init__()
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    lines = Lines()
    uvicorn_log = logging.getLogger("uvicorn.error")
    try:
        with serve_stockroom(tmp_path / "stock.sqlite3") as running:
            uvicorn_log.addHandler(lines)  # after start-up: uvicorn configures its loggers as it starts
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", running.port)) as sock:
                    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\n".encode()
                                 + b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                                 + b"Content-Length: 100000\r\n\r\n" + b'{"jsonrpc": "2.0", "method": "tools/call", ' * 10)
            wait_until(lambda: sum("disconnected" in r.getMessage() for r in lines.records) >= 3, 15,
                       "three disconnect lines in the server log")
            with StockroomClient(running.url) as client:  # the server still serves, and decided nothing
                assert client.call_tool("read_stock").structured["ledger_version"] == 1
                assert [r["tool"] for r in client.trace()] == ["read_stock"]
            assert running.stockroom.ledger._announced == 0
    finally:
        uvicorn_log.removeHandler(lines)
    assert not any(r.exc_info for r in lines.records), [r.getMessage() for r in lines.records]
    said = [r.getMessage() for r in lines.records if "disconnected" in r.getMessage()]
    assert len(said) == 3 and all("POST /mcp" in line and "nothing was decided or answered" in line for line in said), said


def test_an_unusable_token_file_is_a_one_line_503_not_a_traceback(tmp_path):
    db = tmp_path / "stock.sqlite3"
    token = approver_token_path(db)
    token.write_text("x" * 64)
    token.chmod(0o644)  # readable by others: never trusted
    with serve_stockroom(db) as running:
        route = f"{running.base_url}/stockroom/approvals/AP-1"
        assert httpx.post(route, json={"action": "accept"}).status_code == 403  # no token presented: nothing to compare
        answer = httpx.post(route, json={"action": "accept"}, headers={"Authorization": "Bearer " + "x" * 64})
        assert answer.status_code == 503, answer.text
        assert "readable by others" in answer.json()["error"] and str(token) in answer.json()["error"]


def test_a_large_body_cut_off_mid_way_leaves_one_line_too():
    """Over the guard's 1 MiB the SDK reads the body itself; the cut still ends in one line, not a traceback."""
    import logging
    import socket

    from .conftest import wait_until

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    uvicorn_log = logging.getLogger("uvicorn.error")
    try:
        with serve_stockroom() as running:
            uvicorn_log.addHandler(handler)
            with socket.create_connection(("127.0.0.1", running.port)) as sock:
                sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{running.port}\r\nContent-Type: application/json\r\n".encode()
                             + b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                             + b'Content-Length: 3000000\r\n\r\n{"jsonrpc": "2.0", "method": "tools/call", "x": "' + b"a" * 1_200_000)
            wait_until(lambda: any("disconnected" in r.getMessage() for r in records), 15, "the disconnect line")
    finally:
        uvicorn_log.removeHandler(handler)
    assert not any(r.exc_info for r in records), [r.getMessage() for r in records]
