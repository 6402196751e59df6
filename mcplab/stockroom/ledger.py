"""The stockroom's durable state in SQLite: items, ledger version, drafts, used approvals, and the trace.

Design: one database holds the ledger and its append-only trace, and every tool call runs as one
``BEGIN IMMEDIATE`` transaction that decides, changes the ledger (if at all) and appends exactly
one trace record, so a crash can never leave a change without its record or the reverse. The
trace is hash-chained (``hash = sha256(prev_hash + canonical record)``) and SQLite triggers refuse
UPDATE and DELETE on it. A reset restores the seed items under a new random *epoch*, which every
approval (sealed requestState or out-of-band approval) is bound to, so none from before a reset applies after it.
Group commit: transactions that queue up behind one another share one ``COMMIT`` (one fsync), each
in its own ``SAVEPOINT``; none returns before that ``COMMIT`` has, so a record is durable before its
answer leaves, and records stay in chain order (see :meth:`Ledger.transaction`).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import MCPLabError
from ..evidence import canonical_json
from ..redaction import redact
from .catalog import SEED_ITEMS, SEED_LEDGER_VERSION

__all__ = ["Ledger", "LedgerError", "TraceRecord", "GENESIS_HASH", "MEMORY", "DECISIONS_BY_TOOL", "LOCAL_DECISIONS",
           "default_db_path"]

MEMORY = ":memory:"
#: The most units of work one group commit holds, so a steady queue cannot postpone a COMMIT for long.
MAX_GROUP = 64
#: ``prev_hash`` of the first trace record.
GENESIS_HASH = "0" * 64
_SCHEMA_VERSION = "2"
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


class LedgerError(MCPLabError):
    """The database cannot be used (unreadable file, foreign schema); the message names the path."""


def default_db_path() -> Path:
    """The default database file: ``stockroom.sqlite3`` in the user's data directory (``$MCPLAB_DATA_DIR`` wins)."""
    override = os.environ.get("MCPLAB_DATA_DIR")
    if override:
        return Path(override) / "stockroom.sqlite3"
    from platformdirs import user_data_dir

    return Path(user_data_dir("mcplab", appauthor=False)) / "stockroom.sqlite3"


@dataclass(frozen=True)
class TraceRecord:
    """One line of the trace: who called what, what was decided, and the chain hashes."""

    seq: int
    at: str
    era: str
    tool: str
    decision: str
    arguments: Any
    detail: Any
    ledger_version: int
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """The hashed fields (everything but ``prev_hash`` and ``hash``)."""
        return {"seq": self.seq, "at": self.at, "era": self.era, "tool": self.tool, "decision": self.decision,
                "arguments": self.arguments, "detail": self.detail, "ledger_version": self.ledger_version}

    def to_dict(self) -> dict[str, Any]:
        return {**self.body(), "prev_hash": self.prev_hash, "hash": self.hash}


def _chain_hash(prev_hash: str, body: dict[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_json(body)).hexdigest()


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class Ledger:
    """SQLite-backed ledger and trace. ``path`` is a file path or ``":memory:"`` (tests).

    All access goes through :meth:`transaction`, which serialises callers in this process with a
    lock and across processes with ``BEGIN IMMEDIATE`` (a busy timeout waits for the other writer).
    A new database is seeded and its HMAC secret generated on first open.
    """

    def __init__(self, path: str | os.PathLike[str] = MEMORY, *, create: bool = True,
                 clock: Callable[[], str] = _utc_now) -> None:
        self.path = str(path) if str(path) == MEMORY else str(Path(path).expanduser())
        self._clock = clock
        self._lock = threading.RLock()
        self._group: _Group | None = None  # the open transaction units are joining, if any
        self._waiting = 0  # threads asking for the connection: while any wait, the group stays open for them
        self._waiting_lock = threading.Lock()
        if self.path != MEMORY:
            if Path(self.path).is_dir():
                raise LedgerError(f"{self.path}: is a directory, expected a database file")
            if not create and not Path(self.path).exists():
                raise LedgerError(f"{self.path}: no stockroom database here (start 'mcplab serve stockroom --db {self.path}' "
                                  "or run 'mcplab stockroom reset --db PATH' to create one)")
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"{self.path}: cannot create its directory ({exc.strerror or exc})") from None
        #: ``create=False`` opens read-only: inspecting a file never changes it (no pragma, no tables).
        self.readonly = not create and self.path != MEMORY
        try:
            if self.readonly:
                self._conn = _connect_readonly(Path(self.path))
            else:
                self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30.0)
                _check_is_stockroom(self._conn, allow_empty=True)
            if not self.readonly:
                if self.path != MEMORY:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                with self.transaction() as tx:
                    tx.executescript_schema()
        except sqlite3.Error as exc:
            if hasattr(self, "_conn"):
                self._conn.close()
            raise LedgerError(f"{self.path}: not a usable stockroom database ({_explain(exc)})") from None

    # -- connection management -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._group is not None:
                self._commit_group()
            self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[_Tx]:
        """One atomic unit of work, rolled back whole on any exception, and durable when the block ends.

        Callers in this process take turns on the connection (a lock); other processes wait at
        ``BEGIN IMMEDIATE`` (a busy timeout). A unit that finds the group transaction open joins it
        in a ``SAVEPOINT`` (so a failing unit rolls back alone); the unit that ends with nobody
        waiting behind it (or with :data:`MAX_GROUP` units in) commits the group, and every unit's
        block returns only after that ``COMMIT`` returned (``synchronous=FULL``: the WAL is on disk).
        If the ``COMMIT`` fails, every unit of the group raises :class:`LedgerError`: nothing of it
        was kept, and nothing of it was answered.
        """
        if self.readonly:
            with self._readonly_transaction() as tx:
                yield tx
            return
        with self._waiting_lock:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._waiting_lock:
                self._waiting -= 1
        try:
            with self._unit() as tx:
                group = self._group
                yield tx
        finally:
            try:
                with self._waiting_lock:
                    last = self._waiting == 0
                if self._group is not None and (last or self._group.size >= MAX_GROUP):
                    self._commit_group()
            finally:
                self._lock.release()
        group.durable.wait()
        if group.error is not None:
            raise LedgerError(f"{self.path}: {group.error}")

    @contextmanager
    def _unit(self) -> Iterator[_Tx]:
        """One unit of work: a SAVEPOINT in the open group transaction (begun here if none is open); the lock is held."""
        try:
            if self._group is None:
                self._conn.execute("BEGIN IMMEDIATE")
                self._group = _Group()
            self._conn.execute("SAVEPOINT unit")
            try:
                yield _Tx(self._conn, self._clock)
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK TO unit")
                    self._conn.execute("RELEASE unit")
                else:  # SQLite rolled the whole transaction back (I/O error, full disk): the group is lost
                    self._lose_group("the transaction was rolled back")
                raise
            self._conn.execute("RELEASE unit")
            self._group.size += 1
        except sqlite3.Error as exc:  # a database problem, not a bug of the caller: name the file
            if self._group is not None and not self._conn.in_transaction:
                self._lose_group(_explain(exc))
            raise LedgerError(f"{self.path}: {_explain(exc)}") from exc

    def _commit_group(self) -> None:
        """COMMIT the open group (the lock is held; with synchronous=FULL the WAL is on disk when it
        returns) and wake its units; a failed COMMIT fails them all at once."""
        group, self._group = self._group, None
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            group.error = f"{_explain(exc)} (nothing of this transaction was kept)"
            if self._conn.in_transaction:
                try:
                    self._conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the group is already reported lost; the next BEGIN starts clean or says why
        finally:
            group.durable.set()

    def _lose_group(self, why: str) -> None:
        group, self._group = self._group, None
        if group is not None:
            group.error = f"{why} (nothing of this transaction was kept)"
            group.durable.set()

    @contextmanager
    def _readonly_transaction(self) -> Iterator[_Tx]:
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    yield _Tx(self._conn, self._clock)
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise LedgerError(f"{self.path}: {_explain(exc)}") from exc

    # -- read-only conveniences ------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """``{ledger_version, items}`` as one consistent read."""
        with self.transaction() as tx:
            return {"ledger_version": tx.ledger_version(), "items": tx.items()}

    def drafts(self) -> list[dict[str, Any]]:
        """The drafts since the last reset (``draft_id``, ``ledger_version``, ``lines``, ``status``), oldest first."""
        with self.transaction() as tx:
            return tx.drafts()

    def trace(self) -> list[TraceRecord]:
        with self.transaction() as tx:
            return tx.trace()

    def verify(self, head: tuple[int, str] | None = None) -> list[str]:
        """Problems with the trace and the ledger's agreement with it; empty when all is well.

        Checks each record's ``prev_hash`` link, recomputed hash and vocabulary (which tool may
        record which decision), then replays the trace from the last reset: the ledger version must
        be the seed version plus the approved commits, every item's ``on_order`` the seed plus the
        approved lines, and the fields no tool changes (name, on_hand, reorder point, par) the seed.
        ``head=(seq, hash)`` is a record remembered earlier (see :meth:`head`): it must still be
        there, unchanged, which catches truncation and rewritten history.

        What this proves: the chain has no key, so a writer with the database file could rebuild
        it; anchoring the head outside the file (a log, a notebook, a commit) is what makes earlier
        history tamper-evident against that writer.
        """
        with self.transaction() as tx:
            return tx.verify(head)

    def audit(self, head: tuple[int, str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
        """Every record (as dicts) and :meth:`verify`'s problems, from one consistent read."""
        with self.transaction() as tx:
            return [record.to_dict() for record in tx.trace()], tx.verify(head)

    def head(self) -> tuple[int, str] | None:
        """``(seq, hash)`` of the newest record: remember it to anchor a later :meth:`verify`."""
        with self.transaction() as tx:
            return tx.last()


class _Group:
    """The units of work sharing one open transaction; ``durable`` is set once its COMMIT is on disk, or failed."""

    __slots__ = ("durable", "error", "size")

    def __init__(self) -> None:
        self.durable = threading.Event()
        self.error: str | None = None
        self.size = 0


class _Tx:
    """The operations available inside one transaction."""

    def __init__(self, conn: sqlite3.Connection, clock: Callable[[], str]) -> None:
        self._conn = conn
        self._clock = clock

    def executescript_schema(self) -> None:
        for statement in _SCHEMA.split(";\n"):
            if statement.strip():
                self._conn.execute(statement)
        existing = self._meta("schema")
        if existing is None:
            self._set_meta("schema", _SCHEMA_VERSION)
            self._set_meta("secret", secrets.token_hex(32))
            self._restore_seed()
        elif existing != _SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"schema version {existing!r}, expected {_SCHEMA_VERSION!r}")

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
        digest = _chain_hash(prev_hash, record.body())
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
        return [TraceRecord(seq=_int(r[0]), at=_text(r[1]), era=_text(r[2]), tool=_text(r[3]), decision=_text(r[4]),
                            arguments=_loads(r[5]), detail=_loads(r[6]), ledger_version=_int(r[7]),
                            prev_hash=_text(r[8]), hash=_text(r[9])) for r in rows]

    def verify(self, head: tuple[int, str] | None = None) -> list[str]:
        try:
            return self._verify(head)
        except (sqlite3.Error, TypeError, ValueError, KeyError, AttributeError) as exc:
            return [f"the database does not have the stockroom's shape: {_explain(exc)}"]

    def _verify(self, head: tuple[int, str] | None) -> list[str]:
        problems: list[str] = []
        prev = GENESIS_HASH
        accepted: set[Any] = set()
        records = self.trace()
        for index, record in enumerate(records, start=1):
            if record.seq != index:
                problems.append(f"record {record.seq}: expected sequence number {index} (a record is missing)")
            if record.prev_hash != prev:
                problems.append(f"record {record.seq}: prev_hash does not match the hash of the record before it")
            if any(isinstance(value, _Unreadable) for value in (*record.body().values(), record.prev_hash, record.hash)):
                problems.append(f"record {record.seq}: a field is not readable (not JSON, not text or not a number)")
            else:
                try:
                    intact = _chain_hash(str(record.prev_hash), record.body()) == record.hash
                except (ValueError, TypeError):
                    intact = False
                if not intact:
                    problems.append(f"record {record.seq}: hash does not match its contents (the record was changed)")
            problems.extend(f"record {record.seq}: {p}" for p in _vocabulary_problems(record))
            if record.era == "local" and record.decision == "accepted" and isinstance(record.arguments, dict):
                accepted.add(record.arguments.get("approval_id"))
            approval_id = record.detail.get("approval_id") if isinstance(record.detail, dict) else None
            if record.decision == "approved" and record.era == "legacy" and approval_id not in accepted:
                problems.append(f"record {record.seq}: a 2025-11-25 commit applied without a person's recorded approval")
            prev = record.hash
        if head is not None:
            seq, digest = head
            if not any(record.seq == seq and record.hash == digest for record in records):
                problems.append(f"anchored record {seq}:{digest[:12]} is missing or changed (history truncated or rewritten)")
        problems.extend(self._replay_problems(records))
        return problems

    def _replay_problems(self, records: list[TraceRecord]) -> list[str]:
        """Compare the ledger with the seed plus the approved commits since the last reset."""
        since_reset = records
        for index in range(len(records) - 1, -1, -1):
            if records[index].era == "local" and records[index].decision == "reset":
                since_reset = records[index + 1:]
                break
        seed = {item["sku"]: item for item in SEED_ITEMS}
        expected = {sku: item["on_order"] for sku, item in seed.items()}
        version = SEED_LEDGER_VERSION
        problems = []
        for record in since_reset:
            if record.decision != "approved":
                continue
            version += 1
            lines = record.detail.get("lines") if isinstance(record.detail, dict) else None
            if not _valid_lines(lines, seed):
                problems.append(f"record {record.seq}: an approved commit without valid lines")
                continue
            for line in lines:
                expected[line["sku"]] += line["add_on_order"]
        if self.ledger_version() != version:
            problems.append(f"ledger version is {self.ledger_version()} but the trace accounts for {version}")
        actual = {item["sku"]: item for item in self.items()}
        for sku in sorted(set(expected) | set(actual), key=str):
            item = actual.get(sku)
            if item is None or sku not in seed:
                problems.append(f"{sku}: {'missing from' if item is None else 'not in'} the seed stock the trace accounts for")
                continue
            if item["on_order"] != expected[sku]:
                problems.append(f"{sku}: on_order is {item['on_order']} but the trace accounts for {expected[sku]}")
            for field in ("name", "on_hand", "reorder_point", "par"):
                if item[field] != seed[sku][field]:
                    problems.append(f"{sku}: {field} is {item[field]!r} but no tool changes it (seed {seed[sku][field]!r})")
        return problems


class _Unreadable(str):
    """A stored JSON column that does not parse (kept as text so verify can report it)."""


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return _Unreadable(repr(text)[:200])
    try:
        return json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return _Unreadable(text[:200])


def _text(value: Any) -> Any:
    return value if isinstance(value, str) else _Unreadable(repr(value)[:200])


def _int(value: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else _Unreadable(repr(value)[:200])


def _explain(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if "locked" in text:
        return f"{text} (another process is writing to it; try again)"
    return text


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """Open ``path`` for reading only; a WAL database in a directory we cannot write is read as immutable."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        _check_is_stockroom(conn, allow_empty=False)
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if "readonly" not in str(exc) and "unable to open" not in str(exc):
            raise
    conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
    _check_is_stockroom(conn, allow_empty=False)
    return conn


#: Which decision each record may carry. Records the stockroom writes itself (era ``local``: resets
#: and out-of-band approval answers) have their own names; a caller's tool name can never be one.
LOCAL_DECISIONS: dict[str, frozenset[str]] = {
    "reset": frozenset({"reset"}),
    "approval": frozenset({"accepted", "declined"}),
}
DECISIONS_BY_TOOL: dict[str, frozenset[str]] = {
    "commit_reorder": frozenset({"asked", "approved", "rejected", "refused"}),
}
_OTHER_TOOL_DECISIONS = frozenset({"allowed", "refused", "denied"})


def _vocabulary_problems(record: TraceRecord) -> list[str]:
    if record.era == "local":
        allowed = LOCAL_DECISIONS.get(record.tool, frozenset())
    elif record.era in ("modern", "legacy"):
        allowed = DECISIONS_BY_TOOL.get(record.tool, _OTHER_TOOL_DECISIONS)
    else:
        return [f"era {record.era!r} is not one the stockroom records"]
    if record.decision not in allowed:
        return [f"decision {record.decision!r} is not one {record.era} record of {record.tool!r} can carry"]
    return []


def _valid_lines(lines: Any, seed: dict[str, Any]) -> bool:
    return isinstance(lines, list) and bool(lines) and all(
        isinstance(line, dict) and isinstance(line.get("sku"), str) and line["sku"] in seed and isinstance(line.get("add_on_order"), int)
        and not isinstance(line.get("add_on_order"), bool) and line["add_on_order"] > 0 for line in lines)


def _check_is_stockroom(conn: sqlite3.Connection, *, allow_empty: bool) -> None:
    """Refuse a SQLite file that is not a stockroom database before anything is written to it."""
    objects = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    if not objects and allow_empty and conn.execute("PRAGMA application_id").fetchone()[0] == 0:
        return
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    schema = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() if "meta" in tables else None
    if schema is not None and schema[0] != _SCHEMA_VERSION:
        raise sqlite3.DatabaseError(f"schema version {schema[0]!r}, expected {_SCHEMA_VERSION!r} "
                                    "(made by another mcplab version; use a new --db path)")
    if schema is None or not _TABLES <= tables or tables - _TABLES:
        found = ", ".join(sorted(objects)[:5]) or "no tables"
        raise sqlite3.DatabaseError(f"not a stockroom database ({found})")
