"""Group commit in the ledger: calls that queue up share one COMMIT, and none returns before it.

* Concurrent ``read_stock`` calls on a file database: once a call has returned, a second, read-only
  connection already sees its trace record (committed, so durable under synchronous=FULL); the
  records are one per call, numbered without gaps, and the chain verifies.
* A unit that fails inside a group rolls back alone: the unit before it in the same group is kept.
* A COMMIT that fails fails every unit of its group: none returns normally and none is kept.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing

import pytest

from mcplab.stockroom import Ledger, LedgerError, Stockroom

from .conftest import wait_until

DEADLINE_SECONDS = 30.0


def seen_by_another_connection(path, seq: int) -> bool:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        return conn.execute("SELECT 1 FROM trace WHERE seq = ?", (seq,)).fetchone() is not None


def test_a_returned_call_is_committed_and_records_keep_their_order(tmp_path):
    path = tmp_path / "stock.sqlite3"
    room = Stockroom(path)
    calls_per_thread, threads = 15, 8
    outcomes, problems = [], []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def worker() -> None:
        start.wait(timeout=DEADLINE_SECONDS)
        for _ in range(calls_per_thread):
            outcome = room.call_tool("read_stock", {})
            if not seen_by_another_connection(path, outcome.trace_seq):
                problems.append(f"record {outcome.trace_seq} was answered before it was committed")
            with lock:
                outcomes.append(outcome)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=DEADLINE_SECONDS)
    assert not any(thread.is_alive() for thread in pool)
    assert problems == []
    records = room.trace()
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert sorted(o.trace_seq for o in outcomes) == [r["seq"] for r in records if r["tool"] == "read_stock"]
    assert len(outcomes) == calls_per_thread * threads
    assert room.verify() == []
    room.close()


def grouped(ledger: Ledger, first, second) -> dict[str, BaseException | None]:
    """Run ``first`` and ``second`` as two units of one group: the second queues while the first holds the ledger."""
    errors: dict[str, BaseException | None] = {}
    inside = threading.Event()
    release = threading.Event()

    def run(name, body, hold) -> None:
        try:
            with ledger.transaction() as tx:
                body(tx)
                if hold:
                    inside.set()
                    assert release.wait(DEADLINE_SECONDS)
            errors[name] = None
        except BaseException as exc:  # noqa: BLE001 - recorded for the assertions
            errors[name] = exc

    a = threading.Thread(target=run, args=("first", first, True))
    a.start()
    assert inside.wait(DEADLINE_SECONDS)
    b = threading.Thread(target=run, args=("second", second, False))
    b.start()
    # the second unit is queued behind the first: they will share one group
    wait_until(lambda: ledger._waiting > 0, DEADLINE_SECONDS, "the second unit never queued")
    release.set()
    a.join(DEADLINE_SECONDS)
    b.join(DEADLINE_SECONDS)
    assert not a.is_alive() and not b.is_alive()
    return errors


def append(tool: str):
    return lambda tx: tx.append(era="modern", tool=tool, decision="allowed", arguments={}, detail={})


def test_a_failing_unit_rolls_back_alone_and_its_group_still_commits(tmp_path):
    ledger = Ledger(tmp_path / "stock.sqlite3")

    def fails(tx):
        append("draft_reorder")(tx)
        raise ValueError("the second unit fails after writing")

    errors = grouped(ledger, append("read_stock"), fails)
    assert errors["first"] is None and isinstance(errors["second"], ValueError)
    assert [r.tool for r in ledger.trace()] == ["read_stock"]
    assert ledger.verify() == []
    ledger.close()


class _FailingCommit:
    """The ledger's connection, except that COMMIT fails the way a full disk makes it fail."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args):
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    def close(self) -> None:
        self._conn.close()


def test_a_failed_commit_fails_every_unit_of_its_group(tmp_path):
    ledger = Ledger(tmp_path / "stock.sqlite3")
    real = ledger._conn
    ledger._conn = _FailingCommit(real)
    errors = grouped(ledger, append("read_stock"), append("read_stock"))
    ledger._conn = real
    for name in ("first", "second"):
        assert isinstance(errors[name], LedgerError), errors
        assert "disk is full" in str(errors[name]) and "nothing of this transaction was kept" in str(errors[name])
    assert ledger.trace() == []
    with ledger.transaction() as tx:  # the ledger works on afterwards
        append("read_stock")(tx)
    assert [r.seq for r in ledger.trace()] == [1] and ledger.verify() == []
    ledger.close()


@pytest.mark.parametrize("db", ["memory", "file"])
def test_a_lone_call_commits_at_once(tmp_path, db):
    """Nobody queued behind it: the unit commits its own group and returns."""
    ledger = Ledger(":memory:" if db == "memory" else tmp_path / "stock.sqlite3")
    with ledger.transaction() as tx:
        append("read_stock")(tx)
    assert not ledger._conn.in_transaction
    assert [r.tool for r in ledger.trace()] == ["read_stock"]
    ledger.close()
