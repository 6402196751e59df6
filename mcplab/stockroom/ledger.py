"""The stockroom's durable state in SQLite: when units of work run and when they are durable.

Design: one database holds the ledger and its append-only trace (tables and operations:
:mod:`~mcplab.stockroom.tables`; the trace's chain and verification: :mod:`~mcplab.stockroom.trace`),
and every tool call runs as one
``BEGIN IMMEDIATE`` transaction that decides, changes the ledger (if at all) and appends exactly
one trace record, so a crash can never leave a change without its record or the reverse. The
trace is hash-chained (``hash = sha256(prev_hash + canonical record)``) and SQLite triggers refuse
UPDATE and DELETE on it. A reset restores the seed items under a new random *epoch*, which every
approval (sealed requestState or out-of-band approval) is bound to, so none from before a reset applies after it.
Group commit: transactions that queue up behind one another share one ``COMMIT`` (one fsync), each
in its own ``SAVEPOINT``; none returns before that ``COMMIT`` has, so a record is durable before its
answer leaves, and records stay in chain order (see :meth:`Ledger.transaction`).
The server's path, :meth:`Ledger.run`, does the same from an asyncio event loop without a thread
hop per call: a unit runs on the loop; the group's ``COMMIT`` waits two loop passes (so requests
already on the sockets join) and for announced units (:meth:`Ledger.announce`), at most
:data:`MAX_GROUP_WAIT_SECONDS`; it runs on the loop while commits are fast and on one commit thread
when they are slow, and units that arrive during a threaded ``COMMIT`` form the next group.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from ..errors import MCPLabError
from .tables import LedgerTx, check_is_stockroom, explain
from .trace import DECISIONS_BY_TOOL, GENESIS_HASH, LOCAL_DECISIONS, TraceRecord

# TraceRecord, GENESIS_HASH and the decision tables are the trace's (mcplab.stockroom.trace); they
# stay importable from here, where the ledger's users have always found them.
__all__ = ["Ledger", "LedgerError", "LedgerTx", "Announcement", "MAX_GROUP_WAIT_SECONDS", "INLINE_COMMIT_SECONDS",
           "TraceRecord", "GENESIS_HASH", "MEMORY", "DECISIONS_BY_TOOL", "LOCAL_DECISIONS", "default_db_path"]

MEMORY = ":memory:"
#: The most units of work one group commit holds, so a steady queue cannot postpone a COMMIT for long.
MAX_GROUP = 64
#: How long an open group waits for announced units before its COMMIT (see :meth:`Ledger.announce`).
MAX_GROUP_WAIT_SECONDS = 0.002
#: Commits faster than this (a moving average) run on the event loop; slower ones on the commit thread.
INLINE_COMMIT_SECONDS = 0.001
#: The busy timeout (ms) of a thread's BEGIN IMMEDIATE; the event loop's BEGIN never waits (0).
_BUSY_TIMEOUT_MS = 30_000
T = TypeVar("T")
#: Loop passes before a group may commit: the first polls the sockets and hands the requests found
#: to their tasks, the second runs those tasks, which reach their unit of work unless they await
#: something first (then :meth:`Ledger.announce` keeps the group open for them).
_SETTLE_HOPS = 2


class LedgerError(MCPLabError):
    """The database cannot be used (unreadable file, foreign schema); the message names the path."""


def default_db_path() -> Path:
    """The default database file: ``stockroom.sqlite3`` in the user's data directory (``$MCPLAB_DATA_DIR`` wins)."""
    override = os.environ.get("MCPLAB_DATA_DIR")
    if override:
        return Path(override) / "stockroom.sqlite3"
    from platformdirs import user_data_dir

    return Path(user_data_dir("mcplab", appauthor=False)) / "stockroom.sqlite3"


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
        self._closing: asyncio.Future[None] | None = None  # the event loop's COMMIT in flight on the thread, if any
        self._announced = 0  # units announced to run() and not yet run (or withdrawn)
        self._commit_seconds = 0.0  # how long a COMMIT takes (moving average): on the loop, or on the thread
        self._committer: ThreadPoolExecutor | None = None  # the thread that runs the loop's COMMITs
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None  # the event loop whose calls run inline (see run)
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
                self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False,
                                             timeout=_BUSY_TIMEOUT_MS / 1000)
                check_is_stockroom(self._conn, allow_empty=True)
            if not self.readonly:
                if self.path != MEMORY:
                    self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                with self.transaction() as tx:
                    tx.executescript_schema()
        except sqlite3.Error as exc:
            if hasattr(self, "_conn"):
                self._conn.close()
            raise LedgerError(f"{self.path}: not a usable stockroom database ({explain(exc)})") from None

    # -- connection management -------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._group is not None:
                self._commit_group()
            self._closed = True
            self._conn.close()
        if self._committer is not None:
            self._committer.shutdown(wait=False)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[LedgerTx]:
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

    # -- the event loop's path ----------------------------------------------------------------
    def announce(self) -> Announcement:
        """Say that a unit of work is on its way to :meth:`run` (a tool call received, not yet served).

        While announced units are still to come, the open group waits for them before its
        ``COMMIT`` (at most :data:`MAX_GROUP_WAIT_SECONDS`), so under load one fsync serves them all,
        while a lone call commits at once. ``run(work, announced=...)`` or
        :meth:`Announcement.withdraw` (a request that ends without a unit) ends the announcement.
        Call from the event loop's thread; on another loop than the ledger's own (two servers sharing
        one ledger) the announcement counts for nothing, as that loop's calls go to a thread.
        """
        if not self._owns(asyncio.get_running_loop()):
            return Announcement(self, counted=False)
        self._announced += 1
        return Announcement(self)

    def _owns(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether ``loop`` runs this ledger's units itself: the first loop to ask does (or the next, once it closed)."""
        with self._waiting_lock:
            if self._loop is None or self._loop.is_closed():
                self._loop = loop
            return self._loop is loop

    async def run(self, work: Callable[[LedgerTx], T], *, announced: Announcement | None = None) -> T:
        """``work(tx)`` as one unit of work from an asyncio event loop; durable when this returns.

        The server's path, with no thread hop per call: when the connection is free, ``work`` runs
        on the loop in the open group's ``SAVEPOINT`` (beginning the group if none is open). The
        group's ``COMMIT`` starts once no announced unit is still to come; it runs on the loop while
        commits take under :data:`INLINE_COMMIT_SECONDS` (a fast disk: handing the fsync to a
        thread costs more than it saves) and on the commit thread otherwise, while the loop serves
        other requests and units that arrive meanwhile wait to form the next group. Nothing
        returns before its group's ``COMMIT`` has (a failed one raises :class:`LedgerError` in every
        unit of it). When a thread holds the connection, or another process holds the database's
        write lock, the unit runs through :meth:`transaction` on a worker thread instead, so the
        loop never waits on a lock.
        """
        loop = asyncio.get_running_loop()
        if not self._owns(loop):  # another loop has the connection's fast path: this one's calls take a thread
            if announced is not None:
                announced.withdraw()
            return await self._run_on_thread(work)
        try:
            while self._closing is not None:  # a COMMIT in flight: its group is closed, so join the next one
                await asyncio.wait([self._closing])
            if self.readonly or self._closed or not self._lock.acquire(blocking=False):
                group = None
            else:
                try:
                    if self._group is None and not self._begin_nowait():
                        group = None
                    else:
                        with self._unit() as tx:
                            group = self._group
                            result = work(tx)
                finally:
                    self._schedule_commit(loop)
                    self._lock.release()
        finally:
            if announced is not None:
                announced.withdraw()
        if group is None:  # busy elsewhere: wait for it on a thread, never on the loop
            return await self._run_on_thread(work)
        assert group.committed is not None
        await asyncio.shield(group.committed)
        if group.error is not None:
            raise LedgerError(f"{self.path}: {group.error}")
        return result

    async def _run_on_thread(self, work: Callable[[LedgerTx], T]) -> T:
        import anyio.to_thread

        def unit() -> T:
            with self.transaction() as tx:
                return work(tx)
        return await anyio.to_thread.run_sync(unit)

    def _begin_nowait(self) -> bool:
        """BEGIN IMMEDIATE a new group without waiting (the lock is held); False when another process writes."""
        self._conn.execute("PRAGMA busy_timeout = 0")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            raise LedgerError(f"{self.path}: {explain(exc)}") from exc
        finally:
            self._conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        self._group = _Group()
        return True

    def _schedule_commit(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give a newly opened group its COMMIT: once the loop has taken in the requests already
        waiting on its sockets and every announced unit has joined, at most
        :data:`MAX_GROUP_WAIT_SECONDS` after the group opened."""
        group = self._group
        if group is None or group.committed is not None:
            return
        group.committed = loop.create_future()
        group.timer = loop.call_later(MAX_GROUP_WAIT_SECONDS, self._start_commit, group)
        loop.call_soon(self._after_io, group, _SETTLE_HOPS)

    def _after_io(self, group: _Group, hops: int) -> None:
        """One loop pass later (``hops`` times): each pass polls the sockets and starts the requests found."""
        assert group.committed is not None
        if hops:
            group.committed.get_loop().call_soon(self._after_io, group, hops - 1)
            return
        group.settled = True
        if not self._announced:
            self._start_commit(group)

    def _last_announcement_ended(self) -> None:
        group = self._group
        if group is not None and group.settled and group.committed is not None:
            group.committed.get_loop().call_soon(self._start_commit, group)

    def _start_commit(self, group: _Group) -> None:
        """Close ``group`` to newcomers and COMMIT it: here on the loop when commits are fast, else on the commit thread."""
        if group.started:
            return
        group.started = True
        if group.timer is not None:
            group.timer.cancel()
            group.timer = None
        done = group.committed
        assert done is not None
        loop = done.get_loop()
        fast = self.path == MEMORY or self._commit_seconds < INLINE_COMMIT_SECONDS
        if fast and self._lock.acquire(blocking=False):
            try:
                self._commit_if_open(group)
            finally:
                self._lock.release()
                if not done.done():  # the units wait on it whatever happened: a failed COMMIT is in group.error
                    done.set_result(None)
            return
        if self._committer is None:
            self._committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcplab-ledger-commit")
        try:
            inner = loop.run_in_executor(self._committer, self._commit_when_free, group)
        except RuntimeError:  # closed meanwhile: close() committed the group
            done.set_result(None)
            return
        self._closing = done

        def finished(future: asyncio.Future[None]) -> None:
            if self._closing is done:
                self._closing = None
            error = None if future.cancelled() else future.exception()
            if done.done():
                return
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(None)
        inner.add_done_callback(finished)

    def _commit_when_free(self, group: _Group) -> None:
        with self._lock:
            self._commit_if_open(group)

    def _commit_if_open(self, group: _Group) -> None:
        """COMMIT ``group`` unless somebody already has (a thread's unit, or close()); the lock is held."""
        if self._group is group:
            self._commit_group()

    @contextmanager
    def _unit(self) -> Iterator[LedgerTx]:
        """One unit of work: a SAVEPOINT in the open group transaction (begun here if none is open); the lock is held."""
        try:
            if self._group is None:
                self._conn.execute("BEGIN IMMEDIATE")
                self._group = _Group()
            self._conn.execute("SAVEPOINT unit")
            try:
                yield LedgerTx(self._conn, self._clock)
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
                self._lose_group(explain(exc))
            raise LedgerError(f"{self.path}: {explain(exc)}") from exc

    def _commit_group(self) -> None:
        """COMMIT the open group (the lock is held; with synchronous=FULL the WAL is on disk when it
        returns) and wake its units; a failed COMMIT fails them all at once."""
        group, self._group = self._group, None
        try:
            started = time.perf_counter()
            self._conn.execute("COMMIT")
            self._commit_seconds += (time.perf_counter() - started - self._commit_seconds) * 0.2  # a moving average
        except sqlite3.Error as exc:
            group.error = f"{explain(exc)} (nothing of this transaction was kept)"
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
    def _readonly_transaction(self) -> Iterator[LedgerTx]:
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    yield LedgerTx(self._conn, self._clock)
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise LedgerError(f"{self.path}: {explain(exc)}") from exc

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
    """The units of work sharing one open transaction; ``durable`` is set once its COMMIT is on disk, or failed.

    The event loop's fields: ``committed`` resolves after the COMMIT (created when the loop
    schedules it), ``timer`` is the deadline of the wait for announced units, ``started`` says the
    COMMIT has begun (newcomers form the next group).
    """

    __slots__ = ("committed", "durable", "error", "settled", "size", "started", "timer")

    def __init__(self) -> None:
        self.durable = threading.Event()
        self.error: str | None = None
        self.size = 0
        self.committed: asyncio.Future[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.started = False
        self.settled = False


class Announcement:
    """A unit of work said to be on its way to :meth:`Ledger.run` (see :meth:`Ledger.announce`)."""

    __slots__ = ("_ledger", "open")

    def __init__(self, ledger: Ledger, *, counted: bool = True) -> None:
        self._ledger = ledger
        self.open = counted

    def withdraw(self) -> None:
        """End the announcement (again is harmless); the last one to end lets a waiting group commit."""
        if not self.open:
            return
        self.open = False
        self._ledger._announced -= 1
        if self._ledger._announced == 0:
            self._ledger._last_announcement_ended()


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """Open ``path`` for reading only; a WAL database in a directory we cannot write is read as immutable."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False, timeout=30.0)
    try:
        check_is_stockroom(conn, allow_empty=False)
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if "readonly" not in str(exc) and "unable to open" not in str(exc):
            raise
    conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
    check_is_stockroom(conn, allow_empty=False)
    return conn
