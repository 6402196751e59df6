"""The SQLite ledger and its hash-chained, append-only trace."""

from __future__ import annotations

import json
import sqlite3

import pytest

from mcplab.stockroom import Ledger, LedgerError, Stockroom, default_db_path
from mcplab.stockroom.tables import LedgerTx

RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}


def approved_room(path) -> Stockroom:
    room = Stockroom(path)
    room.draft_reorder()
    room.approve(room.commit_reorder(RESTOCK))
    return room


def raw(path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def sql(path, *statements) -> None:
    """Run statements on the file itself, as someone holding the file (not the stockroom) could.

    A statement is SQL text or ``(sql, parameters)``.
    """
    conn = raw(path)
    for statement in statements:
        conn.execute(*statement) if isinstance(statement, tuple) else conn.execute(statement)
    conn.close()


def test_state_survives_reopening_the_file(tmp_path):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    with Ledger(path) as ledger:
        assert ledger.snapshot()["ledger_version"] == 2
        assert [r.decision for r in ledger.trace()] == ["allowed", "asked", "approved"]
        assert ledger.verify() == []


def test_the_trace_refuses_update_and_delete(tmp_path):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    conn = raw(path)
    for statement in ("UPDATE trace SET decision = 'allowed' WHERE seq = 3", "DELETE FROM trace WHERE seq = 3"):
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            conn.execute(statement)
    conn.close()


@pytest.mark.parametrize("tamper, expected", [
    ("UPDATE trace SET decision = 'allowed' WHERE seq = 3", "record 3: hash does not match"),
    ("UPDATE trace SET detail = '{}' WHERE seq = 3", "record 3: hash does not match"),
    ("DELETE FROM trace WHERE seq = 2", "record 3: expected sequence number 2"),
    ("UPDATE trace SET hash = 'x' WHERE seq = 1", "record 2: prev_hash does not match"),
])
def test_verify_detects_tampering_even_with_the_triggers_dropped(tmp_path, tamper, expected):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    sql(path, "DROP TRIGGER trace_no_update", "DROP TRIGGER trace_no_delete", tamper)
    with Ledger(path) as ledger:
        problems = ledger.verify()
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize("edit, problem", [
    ("UPDATE items SET on_order = 99 WHERE sku = 'SR-104'", "SR-104: on_order is 99 but the trace accounts for 0"),
    ("UPDATE items SET on_hand = 0 WHERE sku = 'SR-104'", "SR-104: on_hand is 0 but no tool changes it (seed 5)"),
])
def test_verify_detects_a_ledger_change_without_a_trace_record(tmp_path, edit, problem):
    path = tmp_path / "stock.sqlite3"
    Stockroom(path).close()
    sql(path, edit)
    with Ledger(path) as ledger:
        assert ledger.verify() == [problem]


def test_a_failure_between_ledger_change_and_trace_record_leaves_neither(tmp_path, monkeypatch):
    path = tmp_path / "stock.sqlite3"
    room = Stockroom(path)
    room.draft_reorder()
    pending = room.commit_reorder(RESTOCK)
    before_trace = len(room.trace())
    original = LedgerTx.append

    def crash(self, **kwargs):
        if kwargs.get("decision") == "approved":
            raise RuntimeError("power cut")
        return original(self, **kwargs)

    monkeypatch.setattr(LedgerTx, "append", crash)
    with pytest.raises(RuntimeError, match="power cut"):
        room.approve(pending)
    monkeypatch.setattr(LedgerTx, "append", original)
    assert room.snapshot()["ledger_version"] == 1
    assert len(room.trace()) == before_trace
    assert room.verify() == []
    assert room.approve(pending).structured["ok"] is True  # the nonce was not spent by the failed attempt
    room.close()


def test_reset_restores_seed_keeps_trace_and_records_itself(tmp_path):
    room = approved_room(tmp_path / "stock.sqlite3")
    trace_before = len(room.trace())
    snapshot = room.reset()
    assert snapshot["ledger_version"] == 1
    assert all(item["on_order"] == 0 for item in snapshot["items"])
    records = room.trace()
    assert len(records) == trace_before + 1 and records[-1]["decision"] == "reset"
    assert room.draft_reorder()["draft_id"] == "DR-0001"
    assert room.verify() == []
    room.close()


def test_trace_records_are_redacted():
    room = Stockroom()
    room.call_tool("delete_item", {"sku": "SR-104", "api_key": "sk-live-123", "password": "hunter2"})
    record = room.trace()[-1]
    assert "sk-live-123" not in str(record) and "hunter2" not in str(record)
    assert record["arguments"]["sku"] == "SR-104"


def test_secret_never_reaches_the_trace():
    room = Stockroom()
    room.draft_reorder()
    room.approve(room.commit_reorder(RESTOCK))
    with room.ledger.transaction() as tx:
        secret = tx.secret().hex()
    assert secret not in str(room.trace())


@pytest.mark.parametrize("content, message", [
    (b"this is not sqlite", "not a usable stockroom database"),
])
def test_a_foreign_file_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "notes.db"
    path.write_bytes(content * 100)
    with pytest.raises(LedgerError, match=message) as info:
        Ledger(path)
    assert str(path) in str(info.value)


def test_a_foreign_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    sql(path, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "INSERT INTO meta VALUES ('schema', '99')")
    with pytest.raises(LedgerError, match="schema version"):
        Ledger(path)


def test_open_without_create_needs_an_existing_file(tmp_path):
    with pytest.raises(LedgerError, match="no stockroom database"):
        Ledger(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()


def test_default_db_path_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPLAB_DATA_DIR", str(tmp_path))
    assert default_db_path() == tmp_path / "stockroom.sqlite3"
    monkeypatch.delenv("MCPLAB_DATA_DIR")
    assert default_db_path().name == "stockroom.sqlite3"


def test_huge_arguments_are_summarised_in_the_trace():
    room = Stockroom()
    room.call_tool("read_stock", {"x": "y" * 200_000})
    stored = room.trace()[-1]["arguments"]
    assert "over the 65536-byte trace limit" in stored["omitted"] and len(stored["sha256"]) == 64
    assert room.verify() == []


def _append_forged(path, **fields):
    """Append a correctly chained record by hand, as someone with the file could."""
    from mcplab.stockroom.trace import chain_hash

    conn = raw(path)
    seq, prev = conn.execute("SELECT seq, hash FROM trace ORDER BY seq DESC LIMIT 1").fetchone()
    body = {"seq": seq + 1, "at": "2026-12-02T00:00:00Z", "era": "modern", "tool": "read_stock", "decision": "allowed",
            "arguments": {}, "detail": {}, "ledger_version": 1, **fields}
    conn.execute("INSERT INTO trace VALUES (?,?,?,?,?,?,?,?,?,?)",
                 (body["seq"], body["at"], body["era"], body["tool"], body["decision"], json.dumps(body["arguments"]),
                  json.dumps(body["detail"]), body["ledger_version"], prev, chain_hash(prev, body)))
    return conn


def test_verify_rejects_records_outside_the_vocabulary(tmp_path):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    _append_forged(path, tool="read_stock", decision="reset").close()  # a "reset" that no reset wrote
    with Ledger(path) as ledger:
        problems = ledger.verify()
    assert any("decision 'reset' is not one modern record of 'read_stock' can carry" in p for p in problems)


def test_a_caller_cannot_name_a_tool_like_an_internal_record():
    room = Stockroom()
    for name in ("reset", "approval"):
        assert room.call_tool(name, {}).error["data"]["error"] == "tool_not_allowed"
    assert room.verify() == []
    assert [r["decision"] for r in room.trace()] == ["denied", "denied"]


def test_verify_reports_unreadable_rows_instead_of_crashing(tmp_path, capsys):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    sql(path, "INSERT INTO trace VALUES (4, 'x', 'modern', 'read_stock', 'allowed', '{not json', '{}', 1, 'p', 'h')")
    _append_forged(path, tool="commit_reorder", decision="approved", detail={"lines": [1]}).close()
    with Ledger(path) as ledger:
        problems = ledger.verify()
    assert any("record 4: a field is not readable" in p for p in problems)
    assert any("record 5: an approved commit without valid lines" in p for p in problems)
    from mcplab.cli import main
    assert main(["stockroom", "trace", "--db", str(path), "--verify"]) == 1
    assert "BROKEN" in capsys.readouterr().out


def test_an_anchored_head_catches_truncation(tmp_path):
    path = tmp_path / "stock.sqlite3"
    room = approved_room(path)
    room.read_stock()
    head = room.ledger.head()
    room.close()
    # the newest record, a read: the chain still links
    sql(path, "DROP TRIGGER trace_no_delete", ("DELETE FROM trace WHERE seq = ?", (head[0],)))
    with Ledger(path) as ledger:
        assert ledger.verify() == []  # without an anchor, dropping the tail is invisible
        assert ledger.verify(head) == [f"anchored record {head[0]}:{head[1][:12]} is missing or changed "
                                       "(history truncated or rewritten)"]


@pytest.mark.parametrize("create", [True, False])
def test_a_foreign_sqlite_file_is_never_adopted(tmp_path, create):
    path = tmp_path / "gradebook.db"
    sql(path, "CREATE TABLE grades (student TEXT, score REAL)")
    before = path.read_bytes()
    with pytest.raises(LedgerError, match=r"not a stockroom database \(grades\)"):
        Ledger(path, create=create)
    assert path.read_bytes() == before
    assert not (tmp_path / "gradebook.db-wal").exists()


def test_reading_never_writes(tmp_path):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    before = path.read_bytes()
    with Ledger(path, create=False) as ledger:
        assert ledger.readonly
        assert ledger.verify() == [] and ledger.snapshot()["ledger_version"] == 2
        with pytest.raises(LedgerError, match="readonly"):
            with ledger.transaction() as tx:
                tx.reset()
    assert path.read_bytes() == before


def test_an_empty_file_becomes_a_stockroom(tmp_path):
    path = tmp_path / "new.sqlite3"
    path.touch()
    with Ledger(path) as ledger:
        assert ledger.snapshot()["ledger_version"] == 1


@pytest.mark.parametrize("tamper", [
    "UPDATE meta SET value = 'abc' WHERE key = 'ledger_version'",
    "INSERT INTO items VALUES (99, X'41', 'x', 1, 1, 1, 1)",
    "UPDATE trace SET at = X'00ff' WHERE seq = 1",
    """UPDATE trace SET arguments = '{"a": NaN}' WHERE seq = 1""",
    """UPDATE trace SET detail = '{"lines": [{"sku": [1], "add_on_order": 1}]}' WHERE seq = 3""",
])
def test_any_tampering_is_reported_never_a_crash(tmp_path, capsys, tamper):
    """verify, the CLI (table and --json) and the panel's audit() report a broken database; none of them raise."""
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    sql(path, "DROP TRIGGER trace_no_update", tamper)
    with Ledger(path, create=False) as ledger:
        records, problems = ledger.audit()
    assert problems
    json.dumps(records, allow_nan=False)  # what GET /stockroom/trace and --json print is valid JSON
    from mcplab.cli import main
    assert main(["stockroom", "trace", "--db", str(path), "--verify"]) == 1
    assert main(["stockroom", "trace", "--db", str(path), "--json", "--verify"]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_table_swapped_for_another_shape_is_reported(tmp_path):
    path = tmp_path / "stock.sqlite3"
    approved_room(path).close()
    sql(path, "DROP TABLE items", "CREATE TABLE items (x)")
    with Ledger(path, create=False) as ledger:
        assert any("does not have the stockroom's shape" in p for p in ledger.verify())


@pytest.mark.parametrize("setup", [
    ["CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "INSERT INTO meta VALUES ('schema', '2')",
     "CREATE TABLE customers (name TEXT)"],
    ["CREATE VIEW v AS SELECT 1"],
    ["PRAGMA application_id = 1234"],
])
@pytest.mark.parametrize("create", [True, False])
def test_foreign_files_that_look_half_right_are_refused(tmp_path, setup, create):
    path = tmp_path / "other.db"
    sql(path, *setup)
    with pytest.raises(LedgerError, match="not a stockroom database"):
        Ledger(path, create=create)


def test_an_older_schema_is_named(tmp_path):
    path = tmp_path / "old.db"
    sql(path, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "INSERT INTO meta VALUES ('schema', '1')")
    with pytest.raises(LedgerError, match="schema version '1', expected '2'"):
        Ledger(path, create=False)


def test_a_legacy_commit_without_a_recorded_approval_is_reported(tmp_path):
    path = tmp_path / "stock.sqlite3"
    room = Stockroom(path, era="legacy")
    room.draft_reorder()
    room.approve(room.commit_reorder(RESTOCK))
    room.close()
    sql(path, "DROP TRIGGER trace_no_delete")
    # rebuild the chain without the person's 'accepted' record, as a writer with the file could
    from mcplab.stockroom.trace import GENESIS_HASH, chain_hash
    conn = raw(path)
    rows = conn.execute("SELECT seq, at, era, tool, decision, arguments, detail, ledger_version FROM trace ORDER BY seq").fetchall()
    conn.execute("DELETE FROM trace")
    prev = GENESIS_HASH
    for seq, row in enumerate((r for r in rows if r[4] != "accepted"), start=1):
        body = {"seq": seq, "at": row[1], "era": row[2], "tool": row[3], "decision": row[4], "arguments": json.loads(row[5]),
                "detail": json.loads(row[6]), "ledger_version": row[7]}
        digest = chain_hash(prev, body)
        conn.execute("INSERT INTO trace VALUES (?,?,?,?,?,?,?,?,?,?)", (seq, *row[1:], prev, digest))
        prev = digest
    conn.close()
    with Ledger(path) as ledger:
        assert any("without a person's recorded approval" in p for p in ledger.verify())
