"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) for the reference fixtures.

Design: a :class:`TaskStore` of in-memory task records under one lock; each task's work is a job
(an async function of a :class:`TaskHandle`) run in a task group the server's lifespan owns, so
shutdown cancels it. A task that needs the client parks in ``input_required`` with its pending
``inputRequests``; ``tasks/update`` answers some or all of them. Tool errors end ``completed``
with ``result.isError``; exceptions end ``failed`` with an inlined JSON-RPC ``error`` (an
unexpected exception says only :data:`INTERNAL_FAILURE`: its text stays in the server log); a
cancelled job ends ``cancelled``. Records live ``ttlMs`` after their last update, and the store
holds at most ``max_tasks`` of them (the oldest finished ones make room; with every slot running,
a new task is refused), so a client cannot grow it without limit.
"""

from __future__ import annotations

import datetime
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from .mrtr import answer_problem

__all__ = ["TASKS_EXTENSION", "TERMINAL", "INTERNAL_FAILURE", "Job", "TaskHandle", "TaskRecord", "TaskStore", "tasks_declared", "extension_required"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = frozenset({"completed", "failed", "cancelled"})
TASK_TTL_MS = 5 * 60 * 1000
POLL_INTERVAL_MS = 250
#: The most task records a store holds (running or kept for ``tasks/get``).
MAX_TASKS = 256
#: The message of a task that failed with an unexpected exception (the detail goes to the log only).
INTERNAL_FAILURE = "the task failed with an internal error (details are in the server log)"

_log = logging.getLogger(__name__)


def _iso(moment: float) -> str:
    return datetime.datetime.fromtimestamp(moment, datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def tasks_declared(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether the request's client capabilities declare the tasks extension."""
    extensions = (capabilities or {}).get("extensions")
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def extension_required(what: str) -> MCPError:
    """-32021 naming the tasks extension (``requiredCapabilities.extensions``)."""
    return MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY, message=f"{what} needs the {TASKS_EXTENSION} extension",
                    data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


@dataclass
class TaskRecord:
    task_id: str
    status: str = "working"
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    cancel_scope: anyio.CancelScope | None = None
    wake: anyio.Event = field(default_factory=anyio.Event)

    def envelope(self) -> dict[str, Any]:
        """The flat ``Task`` fields (no ``requestState``: SEP-2663 has none)."""
        task = {"taskId": self.task_id, "status": self.status, "createdAt": _iso(self.created),
                "lastUpdatedAt": _iso(self.updated), "ttlMs": TASK_TTL_MS, "pollIntervalMs": POLL_INTERVAL_MS}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task

    def detailed(self) -> dict[str, Any]:
        """``tasks/get``: the envelope plus the inlined ``result``, ``error`` or pending ``inputRequests``."""
        task = self.envelope()
        if self.status == "completed" and self.result is not None:
            task["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            task["error"] = self.error
        elif self.status == "input_required":
            task["inputRequests"] = dict(self.pending)
        return task


class TaskHandle:
    """What a job sees: ask the client (parks the task until every request is answered)."""

    def __init__(self, store: TaskStore, record: TaskRecord) -> None:
        self._store = store
        self._record = record

    async def ask(self, requests: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
        keys = {f"{key}-{secrets.token_hex(4)}": (key, request) for key, request in requests.items()}
        self._store.park(self._record, {minted: request for minted, (_, request) in keys.items()})
        while True:
            with self._store.lock:
                wake = self._record.wake
                if not self._record.pending:
                    return {key: self._record.answers.pop(minted) for minted, (key, _) in keys.items()}
            await wake.wait()


Job = Callable[[TaskHandle], Awaitable[dict[str, Any]]]


class TaskStore:
    """Task records and the task group their jobs run in (set by the server's lifespan)."""

    def __init__(self, now: Callable[[], float] = time.time, max_tasks: int = MAX_TASKS) -> None:
        self.lock = threading.Lock()
        self._now = now
        self._max_tasks = max_tasks
        self._records: dict[str, TaskRecord] = {}
        self._group: anyio.abc.TaskGroup | None = None

    def attach(self, group: anyio.abc.TaskGroup | None) -> None:
        self._group = group

    def create(self, job: Job) -> TaskRecord:
        """Record a working task (durably: ``tasks/get`` finds it at once), then start its job."""
        if self._group is None:
            raise MCPError(code=INTERNAL_ERROR, message="the task runner is not running")
        record = TaskRecord(task_id=f"task-{secrets.token_hex(12)}", created=self._now(), updated=self._now())
        with self.lock:
            self._purge()
            if len(self._records) >= self._max_tasks:
                finished = sorted((r for r in self._records.values() if r.status in TERMINAL), key=lambda r: r.updated)
                if not finished:
                    raise MCPError(code=INTERNAL_ERROR, message=f"the server is already running {self._max_tasks} tasks; "
                                                                "try again when one has finished", data={"limit": self._max_tasks})
                del self._records[finished[0].task_id]
            self._records[record.task_id] = record
        self._group.start_soon(self._run, record, job)
        return record

    def get(self, task_id: Any) -> TaskRecord:
        with self.lock:
            self._purge()
            record = self._records.get(task_id) if isinstance(task_id, str) else None
        if record is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown taskId: {task_id}", data={"taskId": task_id})
        return record

    def update(self, task_id: Any, input_responses: Any) -> None:
        """Deliver answers to pending input requests; unknown keys are ignored, malformed answers are -32602."""
        record = self.get(task_id)
        if not isinstance(input_responses, Mapping):
            raise MCPError(code=INVALID_PARAMS, message="tasks/update needs an inputResponses object")
        with self.lock:
            for key, answer in input_responses.items():
                request = record.pending.get(key)
                if request is None:
                    continue
                problem = answer_problem(request["method"], answer)
                if problem is not None:
                    raise MCPError(code=INVALID_PARAMS, message=f"inputResponses.{key}: {problem}", data={"key": key})
            for key, answer in input_responses.items():
                if record.pending.pop(key, None) is not None:
                    record.answers[key] = answer
            if not record.pending and record.status == "input_required":
                self._set(record, "working")
            record.wake.set()
            record.wake = anyio.Event()

    def cancel(self, task_id: Any) -> None:
        """Cancel a running task (a terminal task is left as it is: the ack is idempotent)."""
        record = self.get(task_id)
        with self.lock:
            if record.status in TERMINAL:
                return
            self._set(record, "cancelled")
            scope = record.cancel_scope
        if scope is not None:
            scope.cancel()

    def park(self, record: TaskRecord, requests: dict[str, dict[str, Any]]) -> None:
        with self.lock:
            record.pending.update(requests)
            self._set(record, "input_required")

    def _set(self, record: TaskRecord, status: str, **fields: Any) -> None:
        record.status = status
        record.updated = self._now()
        for name, value in fields.items():
            setattr(record, name, value)

    async def _run(self, record: TaskRecord, job: Job) -> None:
        with anyio.CancelScope() as scope:
            with self.lock:
                if record.status in TERMINAL:  # cancelled before the job started
                    return
                record.cancel_scope = scope
            try:
                result = await job(TaskHandle(self, record))
            except MCPError as exc:
                outcome: tuple[str, dict[str, Any]] = ("failed", {"error": {"code": exc.error.code, "message": exc.error.message}})
            except Exception:  # a protocol-level failure of the job: reported on the task, explained in the log
                _log.exception("task %s failed", record.task_id)
                outcome = ("failed", {"error": {"code": INTERNAL_ERROR, "message": INTERNAL_FAILURE}})
            else:
                outcome = ("completed", {"result": {"resultType": "complete", **result}})
            with self.lock:
                if record.status not in TERMINAL:
                    self._set(record, outcome[0], **outcome[1])
        with self.lock:
            if scope.cancel_called and record.status not in TERMINAL:
                self._set(record, "cancelled")

    def _purge(self) -> None:
        """Forget tasks idle for longer than their TTL; one still waiting (for input) is cancelled first."""
        cutoff = self._now() - TASK_TTL_MS / 1000
        for task_id in [i for i, r in self._records.items() if r.updated < cutoff]:
            record = self._records.pop(task_id)
            if record.status not in TERMINAL and record.cancel_scope is not None:
                record.cancel_scope.cancel()
