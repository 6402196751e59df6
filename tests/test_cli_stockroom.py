"""``mcplab serve stockroom`` and ``mcplab stockroom trace|reset`` as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from mcplab.cli import main
from mcplab.errors import MCPLabError
from mcplab.stockroom import Stockroom, StockroomClient

RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "stock.sqlite3"
    room = Stockroom(path)
    room.draft_reorder()
    room.approve(room.commit_reorder(RESTOCK))
    room.call_tool("delete_item", {"sku": "SR-104", "reason": "clear old stock"})
    room.close()
    return path


def test_trace_prints_every_record(db, capsys):
    assert main(["stockroom", "trace", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    for word in ("draft_reorder", "asked", "approved", "denied", "4 trace records"):
        assert word in out


def test_trace_json_and_verify(db, capsys):
    assert main(["stockroom", "trace", "--db", str(db), "--json", "--verify"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["decision"] for r in report["records"]] == ["allowed", "asked", "approved", "denied"]
    assert report["problems"] == []
    assert report["records"][1]["prev_hash"] == report["records"][0]["hash"]


def test_verify_exits_non_zero_on_a_broken_chain(db, capsys):
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER trace_no_update")
    conn.execute("UPDATE trace SET decision = 'rejected' WHERE seq = 3")
    conn.close()
    assert main(["stockroom", "trace", "--db", str(db), "--verify"]) == 1
    out = capsys.readouterr().out
    assert "BROKEN: record 3" in out and "trace broken" in out


def test_reset_restores_the_seed_and_records_it(db, capsys):
    assert main(["stockroom", "reset", "--db", str(db)]) == 0
    assert "reset" in capsys.readouterr().out
    room = Stockroom(db)
    assert room.read_stock()["ledger_version"] == 1
    assert [r["decision"] for r in room.trace()][-2] == "reset"
    assert room.verify() == []


@pytest.mark.parametrize("argv, message", [
    (["stockroom", "trace", "--db", "{tmp}/missing.db"], "no stockroom database"),
    (["stockroom", "trace", "--db", "{tmp}"], "is a directory"),
    (["stockroom", "trace", "--db", "{tmp}/junk.db"], "not a usable stockroom database"),
    (["serve", "stockroom", "--port", "70000"], "--port must be 0..65535"),
    (["stockroom", "trace", "--db", ""], "--db needs a path"),
    (["stockroom", "trace", "--db", "{tmp}/junk.db", "--head", "3:abc"], "expected SEQ:SHA256"),
    (["stockroom", "trace", "--db", "{tmp}/junk.db", "--head", "\u00b2:" + "a" * 64], "expected SEQ:SHA256"),
    (["stockroom", "approve", "AP-0123456789ab", "--db", "{tmp}/missing.db"], "no stockroom database"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "junk.db").write_text("not a database" * 100)
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


def test_default_database_lives_in_the_data_dir(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MCPLAB_DATA_DIR", str(tmp_path))
    assert main(["stockroom", "reset"]) == 0
    assert (tmp_path / "stockroom.sqlite3").exists()
    assert "created" in capsys.readouterr().out


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_the_url_serves_and_stops_cleanly(tmp_path, stop):
    env = {**os.environ, "MCPLAB_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "mcplab", "serve", "stockroom", "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert "serving http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split()[3]
        with StockroomClient(url) as client:
            assert client.read_stock()["ledger_version"] == 1
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "stopped" in err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert Stockroom(tmp_path / "stockroom.sqlite3").trace()[-1]["tool"] == "read_stock"


def test_serve_reports_a_port_in_use(tmp_path, capsys):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "stockroom", "--port", str(port), "--db", ":memory:"]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_verify_prints_a_head_that_later_anchors_the_trace(db, capsys):
    assert main(["stockroom", "trace", "--db", str(db), "--verify"]) == 0
    head = next(line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("head "))
    assert main(["stockroom", "trace", "--db", str(db), "--head", head]) == 0
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER trace_no_delete")
    conn.execute("DELETE FROM trace WHERE seq = ?", (int(head.split(":")[0]),))
    conn.close()
    capsys.readouterr()
    assert main(["stockroom", "trace", "--db", str(db), "--head", head]) == 1
    assert "history truncated or rewritten" in capsys.readouterr().out


def test_out_of_band_approval_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "stock.sqlite3"
    agent = Stockroom(path, era="legacy")
    agent.draft_reorder()
    approval_id = agent.commit_reorder(RESTOCK).structured["approval_id"]
    assert main(["stockroom", "approvals", "--db", str(path)]) == 0
    listing = capsys.readouterr().out
    assert approval_id in listing and "SR-103 +13" in listing
    assert main(["stockroom", "approve", approval_id, "--db", str(path)]) == 0
    assert "accepted" in capsys.readouterr().out
    assert main(["stockroom", "reject", approval_id, "--db", str(path)]) == 2
    assert "already answered" in capsys.readouterr().err
    done = agent.call_tool("commit_reorder", {**RESTOCK, "approval_id": approval_id})
    assert done.structured["ok"] is True and done.structured["ledger_version"] == 2


def test_ctrl_c_while_starting_is_a_clean_stop(tmp_path):
    """SIGINT while the server command is still importing the SDK: no traceback, a clean exit.

    ``-X importtime`` reports each import on stderr as it happens, so the signal is sent exactly
    when the command starts importing the stockroom server (the slow part of start-up).
    """
    env = {**os.environ, "MCPLAB_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "mcplab", "serve", "stockroom", "--port", "0"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stderr:
            if "mcplab.stockroom" in line:
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "Traceback" not in err
    assert proc.returncode in (0, 130) and ("stopped" in err or "interrupted" in err)


class _NotListening(MCPLabError):
    """What the stand-in servers raise instead of listening."""


@pytest.fixture
def served(monkeypatch):
    """Both servers replaced by stand-ins that record the host asked for and stop with an error: nothing listens."""
    import mcplab.reference.server
    import mcplab.stockroom.server

    hosts: list[str] = []

    def stand_in(*args, host, **kwargs):
        hosts.append(host)
        raise _NotListening("stand-in: not listening")

    monkeypatch.setattr(mcplab.stockroom.server, "serve_stockroom", stand_in)
    monkeypatch.setattr(mcplab.reference.server, "serve_reference", stand_in)
    return hosts


SERVE = {"stockroom": ["serve", "stockroom", "--db", ":memory:"], "reference": ["serve", "reference"]}


@pytest.mark.parametrize("command", sorted(SERVE))
@pytest.mark.parametrize("host", ["", "   "])
def test_serve_refuses_an_empty_host_for_both_servers(served, capsys, command, host):
    assert main([*SERVE[command], "--host", host, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--host needs an interface" in err and err.count("\n") == 1 and served == []


@pytest.mark.parametrize("command", sorted(SERVE))
def test_serve_warns_on_a_non_loopback_host_without_allow_host(served, capsys, command):
    main([*SERVE[command], "--host", "192.0.2.10", "--port", "0"])
    assert "warning: --host 192.0.2.10 is not loopback" in capsys.readouterr().err
    main([*SERVE[command], "--host", "192.0.2.10", "--port", "0", "--allow-host", "hub.example:*"])
    main([*SERVE[command], "--host", "::1", "--port", "0"])
    assert "warning" not in capsys.readouterr().err
    assert served == ["192.0.2.10", "192.0.2.10", "::1"]


@pytest.mark.parametrize("command", sorted(SERVE))
def test_serve_refuses_a_port_out_of_range_for_both_servers(served, capsys, command):
    assert main([*SERVE[command], "--port", "70000"]) == 2
    assert "--port must be 0..65535" in capsys.readouterr().err and served == []
