"""Concurrent commits of one draft, and crashes mid-write: the ledger changes at most once, never untraced.

* N real threads, each with its own ``StockroomClient`` and its own ``input_required`` answer,
  line up on a ``threading.Barrier`` and send their accepted retries together through the real
  server: exactly one applies, the rest get -32602 ``stale_ledger_version``/``draft_closed``.
* The same with two in-process ``Stockroom`` objects on one SQLite file (two connections), and
  with two spawned processes, each committing through its own ``Stockroom(path)``.
* A child process loops commit/approve/reset on a file database and is killed with SIGKILL at
  a random point (five times): afterwards the trace chain and the ledger still agree.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from mcplab.errors import INVALID_PARAMS
from mcplab.stockroom import (
    SEED_ITEMS,
    Stockroom,
    StockroomClient,
    ToolOutcome,
    serve_stockroom,
)

RESTOCKED = ("SR-101", "SR-103", "SR-105", "SR-106")
RESTOCK_ON_ORDER = [6, 13, 3, 6]
LOSING_ERRORS = {"stale_ledger_version", "draft_closed"}
BARRIER_SECONDS = 60.0


def on_order(snapshot: dict[str, Any]) -> dict[str, int]:
    return {item["sku"]: item["on_order"] for item in snapshot["items"]}


def payload_of(draft: dict[str, Any]) -> dict[str, Any]:
    return {key: draft[key] for key in ("draft_id", "ledger_version", "lines")}


def check_one_winner(outcomes: list[ToolOutcome], snapshot: dict[str, Any], records: list[dict[str, Any]],
                     problems: list[str], calls: int) -> None:
    """Exactly one approved commit in the outcomes, the ledger and the trace; one record per call."""
    winners = [o for o in outcomes if o.kind == "complete" and (o.structured or {}).get("ok") is True]
    losers = [o for o in outcomes if o not in winners]
    assert len(winners) == 1, [o.to_dict() for o in outcomes]
    assert winners[0].structured["ledger_version"] == 2
    for loser in losers:
        assert loser.kind == "error", loser.to_dict()
        assert loser.error["code"] == INVALID_PARAMS
        assert loser.error["data"]["error"] in LOSING_ERRORS, loser.error
    assert snapshot["ledger_version"] == 2
    seed = {item["sku"]: item["on_order"] for item in SEED_ITEMS}
    expected = {sku: seed[sku] + (dict(zip(RESTOCKED, RESTOCK_ON_ORDER)).get(sku, 0)) for sku in seed}
    assert on_order(snapshot) == expected
    assert [on_order(snapshot)[sku] for sku in RESTOCKED] == RESTOCK_ON_ORDER
    assert problems == []
    assert len(records) == calls
    decisions = [r["decision"] for r in records if r["tool"] == "commit_reorder"]
    assert decisions.count("approved") == 1
    assert decisions.count("asked") == len(outcomes)
    assert decisions.count("refused") == len(outcomes) - 1


def race(parties: list[Any], payload: dict[str, Any]) -> list[ToolOutcome]:
    """Each party (anything with commit_reorder/approve) asks, waits at the barrier, then accepts."""
    barrier = threading.Barrier(len(parties), timeout=BARRIER_SECONDS)
    outcomes: list[ToolOutcome | None] = [None] * len(parties)
    failures: list[BaseException] = []

    def run(index: int) -> None:
        try:
            pending = parties[index].commit_reorder(payload)
            assert pending.kind == "input_required", pending.to_dict()
            barrier.wait()
            outcomes[index] = parties[index].approve(pending)
        except Exception as exc:  # noqa: BLE001 - re-raised in the main thread below
            failures.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), name=f"committer-{i}") for i in range(len(parties))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(BARRIER_SECONDS * 2)
        assert not thread.is_alive(), f"{thread.name} is stuck"
    if failures:
        raise failures[0]
    return [o for o in outcomes if o is not None]


# --------------------------------------------------------------------------------------------
# through the real server
@pytest.mark.parametrize("parties", [2, 8])
def test_concurrent_commits_over_http_apply_once(parties: int) -> None:
    with serve_stockroom(":memory:") as srv:
        clients = [StockroomClient(srv.url) for _ in range(parties)]
        try:
            draft = clients[0].draft_reorder()
            outcomes = race(clients, payload_of(draft))
        finally:
            for client in clients:
                client.close()
        room = srv.stockroom
        check_one_winner(outcomes, room.snapshot(), room.trace(), room.verify(), calls=1 + 2 * parties)


# --------------------------------------------------------------------------------------------
# in process: two Stockroom objects (two SQLite connections) on one file
def test_concurrent_commits_on_two_connections_apply_once(tmp_path: Path) -> None:
    path = tmp_path / "stock.sqlite3"
    rooms = [Stockroom(path), Stockroom(path)]
    try:
        draft = rooms[0].draft_reorder()
        outcomes = race(rooms, payload_of(draft))
        check_one_winner(outcomes, rooms[1].snapshot(), rooms[1].trace(), rooms[0].verify(), calls=1 + 2 * len(rooms))
    finally:
        for room in rooms:
            room.close()


# --------------------------------------------------------------------------------------------
# two processes, each with its own Stockroom(path)
def _commit_in_process(path: str, payload: dict[str, Any], barrier: Any, results: Any) -> None:
    room = Stockroom(path)
    try:
        pending = room.commit_reorder(payload)
        barrier.wait()
        outcome = room.approve(pending) if pending.kind == "input_required" else pending
        results.put({"kind": outcome.kind, "structured": outcome.structured, "error": outcome.error,
                     "pending": pending.kind})
    except BaseException as exc:
        results.put({"kind": "crash", "error": repr(exc)})
        raise
    finally:
        room.close()


def test_concurrent_commits_from_two_processes_apply_once(tmp_path: Path) -> None:
    path = str(tmp_path / "stock.sqlite3")
    with closing(Stockroom(path)) as room:
        payload = payload_of(room.draft_reorder())
    spawn = multiprocessing.get_context("spawn")
    barrier, results = spawn.Barrier(2, timeout=BARRIER_SECONDS), spawn.Queue()
    workers = [spawn.Process(target=_commit_in_process, args=(path, payload, barrier, results), name=f"committer-{i}")
               for i in range(2)]
    for worker in workers:
        worker.start()
    try:
        answers = [results.get(timeout=BARRIER_SECONDS * 2) for _ in workers]
    finally:
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
    assert [w.exitcode for w in workers] == [0, 0], answers
    assert all(a["pending"] == "input_required" for a in answers), answers
    outcomes = [ToolOutcome(tool="commit_reorder", arguments=payload, kind=a["kind"], structured=a["structured"],
                            error=a["error"]) for a in answers]
    with closing(Stockroom(path)) as room:
        check_one_winner(outcomes, room.snapshot(), room.trace(), room.verify(), calls=1 + 2 * len(workers))


# --------------------------------------------------------------------------------------------
# SIGKILL in the middle of commit/approve/reset
def _churn(path: str) -> None:
    """Commit, approve (mostly) or decline, reset: forever, until the parent kills this process."""
    room = Stockroom(path)
    rng = random.Random(os.getpid())
    while True:
        draft = room.draft_reorder()
        if draft["draft_id"] is None:
            room.reset()
            continue
        pending = room.commit_reorder(payload_of(draft))
        room.answer(pending, "accept" if rng.random() < 0.8 else "decline")
        if rng.random() < 0.5:
            room.reset()


def _trace_length(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM trace").fetchone()[0]


def test_sigkill_mid_write_never_splits_ledger_and_trace(tmp_path: Path) -> None:
    path = tmp_path / "churn.sqlite3"
    Stockroom(path).close()  # create and seed the file before any child touches it
    rng = random.Random(20261202)
    spawn = multiprocessing.get_context("spawn")
    watcher = sqlite3.connect(path, isolation_level=None, timeout=30.0)  # read-only polling (WAL: never blocks the writer)
    kills = []
    try:
        for _ in range(5):
            start = _trace_length(watcher)
            target = start + rng.randint(5, 120)
            child = spawn.Process(target=_churn, args=(str(path),), name="churn", daemon=True)
            child.start()
            try:
                deadline = time.monotonic() + 60.0
                while _trace_length(watcher) < target:  # busy: it is writing records right now
                    assert child.is_alive(), f"the churn process died on its own (exit code {child.exitcode})"
                    assert time.monotonic() < deadline, "the churn process never got busy"
                for _ in range(rng.randint(0, 200)):  # land somewhere random inside the next operation
                    _trace_length(watcher)
                os.kill(child.pid, signal.SIGKILL)
            finally:
                child.join(30)
                if child.is_alive():
                    child.kill()
                    child.join(30)
            assert child.exitcode == -signal.SIGKILL
            with closing(Stockroom(path)) as room:
                problems = room.verify()
                records = room.trace()
                length, version = len(records), room.snapshot()["ledger_version"]
            kills.append((length, version, [(r["tool"], r["decision"]) for r in records[-2:]]))
            assert problems == [], problems
            assert length > start
    finally:
        watcher.close()
    print(f"\nSIGKILL after trace lengths / ledger versions: {kills}")
