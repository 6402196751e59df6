"""Group commit from the event loop (``Ledger.run``, the server's path): no thread hop per call.

* Units run on the loop and return only once their group's COMMIT has: another connection sees
  the record by then, records keep their order, and concurrent units share COMMITs.
* A group waits for announced units (``Ledger.announce``): for them to join, for a withdrawal,
  or at most ``MAX_GROUP_WAIT_SECONDS``.
* The loop never waits on a lock: a thread holding the connection, or another process holding
  the write lock, sends the unit to a worker thread while the loop goes on.
* Slow commits go to the commit thread; a failing unit rolls back alone; a failed COMMIT fails
  every unit of its group, on either path.
* Through the server: 8 clients at once, and no answer is seen before its record is durable.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from contextlib import closing

import httpx
import pytest

from mcplab.requests import build_request
from mcplab.stockroom import Ledger, LedgerError, serve_stockroom
from mcplab.stockroom import ledger as ledger_module

from .test_stockroom_group_commit import _FailingCommit, append, seen_by_another_connection

DEADLINE_SECONDS = 30.0


class Commits:
    """Counts the COMMITs the ledger's connection runs, and the threads they ran on."""

    def __init__(self, ledger: Ledger) -> None:
        self.threads: list[str] = []
        ledger._conn.set_trace_callback(self._seen)

    def _seen(self, sql: str) -> None:
        if sql == "COMMIT":
            self.threads.append(threading.current_thread().name)


def checked_unit(ledger: Ledger, path, problems: list[str]):
    """``one(index)``: run a unit on the loop; when it returns, its record must be committed (else a problem)."""
    async def one(index: int) -> int:
        record = await ledger.run(append(f"tool-{index}"))
        if not seen_by_another_connection(path, record.seq):
            problems.append(f"record {record.seq} returned before it was committed")
        return record.seq
    return one


def run_async(scenario):
    return asyncio.run(asyncio.wait_for(scenario(), DEADLINE_SECONDS))


def test_units_are_durable_when_they_return_keep_their_order_and_share_commits(tmp_path):
    path = tmp_path / "stock.sqlite3"
    ledger = Ledger(path)
    commits = Commits(ledger)
    problems: list[str] = []
    one = checked_unit(ledger, path, problems)

    async def scenario() -> list[int]:
        return await asyncio.gather(*(one(index) for index in range(32)))

    seqs = run_async(scenario)
    assert problems == []
    assert sorted(seqs) == list(range(1, 33))
    assert [r.seq for r in ledger.trace()] == list(range(1, 33)) and ledger.verify() == []
    assert 1 <= len(commits.threads) < 32, "32 units at once should share COMMITs"
    ledger.close()


def test_a_group_waits_for_an_announced_unit_and_shares_its_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_module, "MAX_GROUP_WAIT_SECONDS", DEADLINE_SECONDS)
    ledger = Ledger(tmp_path / "stock.sqlite3")
    commits = Commits(ledger)

    async def scenario() -> None:
        coming = ledger.announce()
        first = asyncio.create_task(ledger.run(append("read_stock")))
        for _ in range(20):  # many loop passes: the group stays open for the unit announced
            await asyncio.sleep(0)
        assert not first.done() and commits.threads == []
        second = await ledger.run(append("draft_reorder"), announced=coming)
        assert (await first).seq == 1 and second.seq == 2

    run_async(scenario)
    assert len(commits.threads) == 1
    ledger.close()


def test_a_withdrawn_announcement_lets_the_group_commit(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_module, "MAX_GROUP_WAIT_SECONDS", DEADLINE_SECONDS)
    ledger = Ledger(tmp_path / "stock.sqlite3")

    async def scenario() -> None:
        coming = ledger.announce()
        first = asyncio.create_task(ledger.run(append("read_stock")))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not first.done()
        coming.withdraw()
        coming.withdraw()  # again is harmless
        assert (await first).seq == 1

    run_async(scenario)
    assert ledger._announced == 0
    ledger.close()


def test_an_announced_unit_that_never_comes_delays_the_group_only_briefly(tmp_path):
    ledger = Ledger(tmp_path / "stock.sqlite3")

    async def scenario() -> None:
        coming = ledger.announce()
        record = await ledger.run(append("read_stock"))  # the wait's deadline commits without it
        assert record.seq == 1 and coming.open
        coming.withdraw()

    run_async(scenario)
    assert [r.seq for r in ledger.trace()] == [1]
    ledger.close()


def test_a_thread_holding_the_connection_never_blocks_the_loop(tmp_path):
    ledger = Ledger(tmp_path / "stock.sqlite3")
    inside, release = threading.Event(), threading.Event()

    def holder() -> None:
        with ledger.transaction() as tx:
            append("thread")(tx)
            inside.set()
            assert release.wait(DEADLINE_SECONDS), "the loop never got to release the thread"

    thread = threading.Thread(target=holder)
    thread.start()
    assert inside.wait(DEADLINE_SECONDS)

    async def scenario() -> int:
        unit = asyncio.create_task(ledger.run(append("loop")))
        for _ in range(5):
            await asyncio.sleep(0)  # the loop is free while the unit waits for the thread
        release.set()
        return (await unit).seq

    assert run_async(scenario) == 2
    thread.join(DEADLINE_SECONDS)
    assert [r.tool for r in ledger.trace()] == ["thread", "loop"] and ledger.verify() == []
    ledger.close()


def test_another_process_writing_never_blocks_the_loop(tmp_path):
    path = tmp_path / "stock.sqlite3"
    ledger = Ledger(path)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # the write lock, as another process holds it
    progressed = threading.Event()
    blocked: list[str] = []

    def watchdog() -> None:  # releases the lock in any case, so a blocked loop fails the test instead of hanging it
        if not progressed.wait(5.0):
            blocked.append("the event loop stopped while another connection held the write lock")
        other.execute("COMMIT")

    async def scenario() -> int:
        unit = asyncio.create_task(ledger.run(append("loop")))
        for _ in range(5):
            await asyncio.sleep(0)
        progressed.set()
        return (await unit).seq

    thread = threading.Thread(target=watchdog)
    thread.start()
    try:
        assert run_async(scenario) == 1
    finally:
        thread.join(DEADLINE_SECONDS)
        other.close()
    assert blocked == []
    assert ledger.verify() == []
    ledger.close()


def test_slow_commits_run_on_the_commit_thread_and_newcomers_form_the_next_group(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_module, "INLINE_COMMIT_SECONDS", 0.0)  # every commit counts as slow
    path = tmp_path / "stock.sqlite3"
    ledger = Ledger(path)
    commits = Commits(ledger)
    problems: list[str] = []
    one = checked_unit(ledger, path, problems)

    async def scenario() -> list[int]:
        first = asyncio.gather(*(one(index) for index in range(8)))
        while ledger._closing is None and not first.done():  # until the first group's COMMIT is on the thread
            await asyncio.sleep(0)
        second = asyncio.gather(*(one(index) for index in range(8, 16)))  # these wait, then form the next group
        return [*await first, *await second]

    assert sorted(run_async(scenario)) == list(range(1, 17))
    assert problems == []
    assert len(commits.threads) >= 2 and all(name.startswith("mcplab-ledger-commit") for name in commits.threads)
    assert ledger.verify() == []
    ledger.close()


def test_a_failing_unit_rolls_back_alone_in_a_loop_group(tmp_path):
    ledger = Ledger(tmp_path / "stock.sqlite3")

    def fails(tx):
        append("draft_reorder")(tx)
        raise ValueError("this unit fails after writing")

    async def scenario() -> list[object]:
        return await asyncio.gather(ledger.run(append("read_stock")), ledger.run(fails), ledger.run(append("read_stock")),
                                    return_exceptions=True)

    first, second, third = run_async(scenario)
    assert isinstance(second, ValueError)
    assert [r.tool for r in ledger.trace()] == ["read_stock", "read_stock"] and ledger.verify() == []
    assert {first.seq, third.seq} == {1, 2}
    ledger.close()


@pytest.mark.parametrize("where", ["loop", "thread"])
def test_a_failed_commit_fails_every_loop_unit_of_its_group(tmp_path, monkeypatch, where):
    if where == "thread":
        monkeypatch.setattr(ledger_module, "INLINE_COMMIT_SECONDS", 0.0)
    ledger = Ledger(tmp_path / "stock.sqlite3")
    real = ledger._conn
    ledger._conn = _FailingCommit(real)

    async def scenario() -> list[object]:
        return await asyncio.gather(*(ledger.run(append("read_stock")) for _ in range(4)), return_exceptions=True)

    errors = run_async(scenario)
    ledger._conn = real
    assert all(isinstance(error, LedgerError) and "disk is full" in str(error) for error in errors), errors
    assert ledger.trace() == []

    async def afterwards() -> int:
        return (await ledger.run(append("read_stock"))).seq

    assert run_async(afterwards) == 1 and ledger.verify() == []
    ledger.close()


def test_through_the_server_no_answer_leaves_before_its_record_is_durable(tmp_path):
    """8 clients at once on a file database: at every answer, the records a second connection sees cover it."""
    path = tmp_path / "stock.sqlite3"
    body, headers = build_request("tools/call", {"name": "read_stock", "arguments": {}}, id=1, capabilities={})
    answered = 0
    problems: list[str] = []
    lock = threading.Lock()

    def visible() -> int:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT count(*) FROM trace WHERE tool = 'read_stock'").fetchone()[0]

    with serve_stockroom(path) as running:
        def client() -> None:
            nonlocal answered
            with httpx.Client(timeout=DEADLINE_SECONDS) as http:
                for _ in range(25):
                    response = http.post(running.url, json=body, headers=dict(headers))
                    if response.status_code != 200 or "error" in response.json():
                        problems.append(f"{response.status_code}: {response.text[:200]}")
                    with lock:
                        answered += 1
                        seen = visible()
                        if seen < answered:
                            problems.append(f"{answered} answers but only {seen} durable records")

        threads = [threading.Thread(target=client) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_SECONDS * 4)
        assert not any(thread.is_alive() for thread in threads)
        assert running.stockroom.verify() == []
    assert problems == []
    assert answered == 200


def test_two_servers_sharing_one_stockroom_answer_every_call(tmp_path):
    """Two event loops on one ledger: the second loop's calls take a thread; none fails, none is lost."""
    from mcplab.stockroom import Stockroom

    room = Stockroom(tmp_path / "stock.sqlite3")
    body, headers = build_request("tools/call", {"name": "read_stock", "arguments": {}}, id=1, capabilities={})
    problems: list[str] = []
    with serve_stockroom(room) as first, serve_stockroom(room) as second:
        def client(url: str) -> None:
            with httpx.Client(timeout=DEADLINE_SECONDS) as http:
                for _ in range(40):
                    answer = http.post(url, json=body, headers=dict(headers))
                    if answer.status_code != 200 or "error" in answer.json():
                        problems.append(f"{answer.status_code}: {answer.text[:200]}")

        threads = [threading.Thread(target=client, args=(url,)) for url in (first.url, second.url) * 4]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_SECONDS * 4)
        assert not any(thread.is_alive() for thread in threads)
    assert problems == []
    assert len(room.trace()) == 320 and room.verify() == []
    assert room.ledger._announced == 0
    room.close()
