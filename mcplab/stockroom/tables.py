"""The stockroom's tables and the operations a unit of work may run on them.

Design: one SQLite database holds the items, the ledger version and epoch (``meta``), drafts,
approvals and the append-only trace (triggers refuse UPDATE and DELETE on it). :class:`LedgerTx`
is all a unit of work sees; :class:`~mcplab.stockroom.ledger.Ledger` decides when it commits.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable
from typing import Any

from ..evidence import canonical_json
from ..redaction import redact
from .catalog import SEED_ITEMS, SEED_LEDGER_VERSION
from .trace import GENESIS_HASH, TraceRecord, chain_hash, read_int, read_json, read_text, trace_problems

__all__ = ["LedgerTx", "check_is_stockroom", "explain", "SCHEMA_VERSION"]

SCHEMA_VERSION = "2"
#: Every table a stockroom database has; a file missing one is not (or no longer) a stockroom.
_TABLES = frozenset({"meta", "items", "drafts", "used_approvals", "approvals", "trace"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    position INTEGER NOT NULL, sku TEXT PRIMARY KEY, name TEXT NOT NULL,
    on_hand INTEGER NOT NULL, on_order INTEGER NOT NULL, reorder_point INTEGER NOT NULL, par INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS drafts (
    draft_id TEXT PRIMARY KEY, epoch TEXT NOT NULL, ledger_version INTEGER NOT NULL,
    lines TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS used_approvals (nonce TEXT PRIMARY KEY, trace_seq INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS approvals (
    approval_id TEXT PRIMARY KEY, epoch TEXT NOT NULL, draft_id TEXT NOT NULL, digest TEXT NOT NULL,
    ledger_version INTEGER NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL, expires INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS trace (
    seq INTEGER PRIMARY KEY, at TEXT NOT NULL, era TEXT NOT NULL, tool TEXT NOT NULL,
    decision TEXT NOT NULL, arguments TEXT NOT NULL, detail TEXT NOT NULL,
    ledger_version INTEGER NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS trace_no_update BEFORE UPDATE ON trace
    BEGIN SELECT RAISE(ABORT, 'the trace is append-only'); END;
CREATE TRIGGER IF NOT EXISTS trace_no_delete BEFORE DELETE ON trace
    BEGIN SELECT RAISE(ABORT, 'the trace is append-only'); END;
"""


class LedgerTx:
    """The operations available inside one transaction (what a unit of work is handed)."""

    def __init__(self, conn: sqlite3.Connection, clock: Callable[[], str]) -> None:
        self._conn = conn
        self._clock = clock

    def executescript_schema(self) -> None:
        for statement in _SCHEMA.split(";\n"):
            if statement.strip():
                self._conn.execute(statement)
        existing = self._meta("schema")
        if existing is None:
            self._set_meta("schema", SCHEMA_VERSION)
            self._set_meta("secret", secrets.token_hex(32))
            self._restore_seed()
        elif existing != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {existing!r}, expected {SCHEMA_VERSION!r}")

    # meta
    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           (key, value))

    def secret(self) -> bytes:
        return bytes.fromhex(self._meta("secret") or "")

    def epoch(self) -> str:
        return self._meta("epoch") or ""

    def ledger_version(self) -> int:
        value = self._meta("ledger_version")
        try:
            return int(value) if value is not None else SEED_LEDGER_VERSION
        except ValueError:
            raise sqlite3.DatabaseError(f"meta.ledger_version is {str(value)[:40]!r}, not a number") from None

    def now(self) -> str:
        return self._clock()

    # items
    def items(self) -> list[dict[str, Any]]:
        rows = self._conn.execute(
            "SELECT sku, name, on_hand, on_order, reorder_point, par FROM items ORDER BY position").fetchall()
        keys = ("sku", "name", "on_hand", "on_order", "reorder_point", "par")
        return [dict(zip(keys, row)) for row in rows]

    def add_on_order(self, lines: list[dict[str, Any]]) -> int:
        """Apply commit lines and bump the ledger version; return the new version."""
        for line in lines:
            self._conn.execute("UPDATE items SET on_order = on_order + ? WHERE sku = ?", (line["add_on_order"], line["sku"]))
        version = self.ledger_version() + 1
        self._set_meta("ledger_version", str(version))
        return version

    def _restore_seed(self) -> None:
        self._conn.execute("DELETE FROM items")
        self._conn.execute("DELETE FROM drafts")
        self._conn.executemany(
            "INSERT INTO items(position, sku, name, on_hand, on_order, reorder_point, par) VALUES(?,?,?,?,?,?,?)",
            [(i, it["sku"], it["name"], it["on_hand"], it["on_order"], it["reorder_point"], it["par"])
             for i, it in enumerate(SEED_ITEMS)])
        self._set_meta("ledger_version", str(SEED_LEDGER_VERSION))
        self._set_meta("next_draft", "1")
        self._set_meta("epoch", secrets.token_hex(8))

    def reset(self) -> None:
        """Restore the seed items, version and draft numbering under a new epoch (the trace stays)."""
        self._restore_seed()

    # drafts
    def find_draft(self, draft_id: str) -> dict[str, Any] | None:
        row = self._conn.execute("SELECT draft_id, epoch, ledger_version, lines, status FROM drafts WHERE draft_id = ?",
                                 (draft_id,)).fetchone()
        if row is None or row[1] != self.epoch():
            return None
        return {"draft_id": row[0], "ledger_version": row[2], "lines": json.loads(row[3]), "status": row[4]}

    def drafts(self) -> list[dict[str, Any]]:
        rows = self._conn.execute("SELECT draft_id, ledger_version, lines, status FROM drafts WHERE epoch = ? ORDER BY draft_id",
                                  (self.epoch(),)).fetchall()
        return [{"draft_id": row[0], "ledger_version": row[1], "lines": json.loads(row[2]), "status": row[3]} for row in rows]

    def open_draft_like(self, ledger_version: int, lines: list[dict[str, Any]]) -> dict[str, Any] | None:
        text = canonical_json(lines).decode()
        row = self._conn.execute(
            "SELECT draft_id FROM drafts WHERE epoch = ? AND ledger_version = ? AND lines = ? AND status = 'open' "
            "ORDER BY draft_id LIMIT 1", (self.epoch(), ledger_version, text)).fetchone()
        return None if row is None else self.find_draft(row[0])

    def create_draft(self, ledger_version: int, lines: list[dict[str, Any]]) -> dict[str, Any]:
        number = int(self._meta("next_draft") or "1")
        draft_id = f"DR-{number:04d}"
        self._conn.execute("INSERT INTO drafts(draft_id, epoch, ledger_version, lines, status) VALUES(?,?,?,?, 'open')",
                           (draft_id, self.epoch(), ledger_version, canonical_json(lines).decode()))
        self._set_meta("next_draft", str(number + 1))
        return {"draft_id": draft_id, "ledger_version": ledger_version, "lines": lines, "status": "open"}

    def mark_draft(self, draft_id: str, status: str) -> None:
        self._conn.execute("UPDATE drafts SET status = ? WHERE draft_id = ?", (status, draft_id))

    # approvals
    def approval_used(self, nonce: str) -> bool:
        return self._conn.execute("SELECT 1 FROM used_approvals WHERE nonce = ?", (nonce,)).fetchone() is not None

    def use_approval(self, nonce: str, trace_seq: int) -> None:
        self._conn.execute("INSERT INTO used_approvals(nonce, trace_seq) VALUES(?, ?)", (nonce, trace_seq))

    # out-of-band approvals (the 2025-11-25 path): pending -> accepted | declined -> closed
    def create_approval(self, *, draft_id: str, digest: str, ledger_version: int, payload: dict[str, Any],
                        expires: int) -> str:
        approval_id = f"AP-{secrets.token_hex(6)}"
        self._conn.execute(
            "INSERT INTO approvals(approval_id, epoch, draft_id, digest, ledger_version, payload, status, expires) "
            "VALUES(?,?,?,?,?,?, 'pending', ?)",
            (approval_id, self.epoch(), draft_id, digest, ledger_version, canonical_json(payload).decode(), expires))
        return approval_id

    def _approvals(self, where: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        keys = ("approval_id", "epoch", "draft_id", "digest", "ledger_version", "payload", "status", "expires")
        rows = self._conn.execute(f"SELECT {', '.join(keys)} FROM approvals WHERE {where} ORDER BY rowid", params).fetchall()
        return [{**dict(zip(keys, row)), "payload": json.loads(row[5])} for row in rows]

    def find_approval(self, approval_id: str) -> dict[str, Any] | None:
        found = self._approvals("approval_id = ?", (approval_id,))
        return found[0] if found else None

    def pending_approval_for(self, digest: str, now: float) -> str | None:
        row = self._conn.execute(
            "SELECT approval_id FROM approvals WHERE epoch = ? AND digest = ? AND status = 'pending' AND expires >= ? "
            "ORDER BY rowid DESC LIMIT 1", (self.epoch(), digest, int(now))).fetchone()
        return None if row is None else row[0]

    def pending_approvals(self, now: float) -> list[dict[str, Any]]:
        return self._approvals("epoch = ? AND status = 'pending' AND expires >= ?", (self.epoch(), int(now)))

    def set_approval_status(self, approval_id: str, status: str) -> None:
        self._conn.execute("UPDATE approvals SET status = ? WHERE approval_id = ?", (status, approval_id))

    # trace
    def append(self, *, era: str, tool: str, decision: str, arguments: Any, detail: Any) -> TraceRecord:
        """Append one record (arguments and detail redacted first) chained to the last one."""
        last = self.last()
        seq, prev_hash = (1, GENESIS_HASH) if last is None else (last[0] + 1, last[1])
        record = TraceRecord(seq=seq, at=self.now(), era=era, tool=tool, decision=decision,
                             arguments=redact(arguments), detail=redact(detail),
                             ledger_version=self.ledger_version(), prev_hash=prev_hash, hash="")
        digest = chain_hash(prev_hash, record.body())
        self._conn.execute(
            "INSERT INTO trace(seq, at, era, tool, decision, arguments, detail, ledger_version, prev_hash, hash) "
            "VALUES(?,?,?,?,?,?,?,?,?,?)",
            (seq, record.at, era, tool, decision, canonical_json(record.arguments).decode(),
             canonical_json(record.detail).decode(), record.ledger_version, prev_hash, digest))
        return TraceRecord(**{**record.to_dict(), "hash": digest})

    def last(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the newest record, or None for an empty trace."""
        row = self._conn.execute("SELECT seq, hash FROM trace ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else (row[0], row[1])

    def trace(self) -> list[TraceRecord]:
        rows = self._conn.execute(
            "SELECT seq, at, era, tool, decision, arguments, detail, ledger_version, prev_hash, hash FROM trace ORDER BY seq"
        ).fetchall()
        return [TraceRecord(seq=read_int(r[0]), at=read_text(r[1]), era=read_text(r[2]), tool=read_text(r[3]), decision=read_text(r[4]),
                            arguments=read_json(r[5]), detail=read_json(r[6]), ledger_version=read_int(r[7]),
                            prev_hash=read_text(r[8]), hash=read_text(r[9])) for r in rows]

    def verify(self, head: tuple[int, str] | None = None) -> list[str]:
        try:
            return trace_problems(self.trace(), head, self.ledger_version(), self.items())
        except (sqlite3.Error, TypeError, ValueError, KeyError, AttributeError) as exc:
            return [f"the database does not have the stockroom's shape: {explain(exc)}"]


def explain(exc: BaseException) -> str:
    """One line for a SQLite error (a lock names its likely cause)."""
    text = str(exc) or type(exc).__name__
    if "locked" in text:
        return f"{text} (another process is writing to it; try again)"
    return text


def check_is_stockroom(conn: sqlite3.Connection, *, allow_empty: bool) -> None:
    """Refuse a SQLite file that is not a stockroom database before anything is written to it."""
    objects = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if not objects and allow_empty and conn.execute("PRAGMA application_id").fetchone()[0] == 0:
        return
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    schema = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() if "meta" in tables else None
    if schema is not None and schema[0] != SCHEMA_VERSION:
        raise sqlite3.DatabaseError(f"schema version {schema[0]!r}, expected {SCHEMA_VERSION!r} "
                                    "(made by another mcplab version; use a new --db path)")
    if schema is None or not _TABLES <= tables or tables - _TABLES:
        found = ", ".join(sorted(objects)[:5]) or "no tables"
        raise sqlite3.DatabaseError(f"not a stockroom database ({found})")
