"""The notebook runner that executes one submission inside the sandbox.

``python -m mcplab.course.runner --timeout S [--uid N]`` reads a notebook (JSON) on standard
input, runs its code cells one by one in a fresh IPython kernel (nbclient) and writes one JSON
line per cell to file descriptor 3: ``{"index": i, "outputs": [...], "status": "ok" | "error" |
"timeout" | "died" | "not-run"}``. Lines are written as cells finish, so whatever ran before a
time-out or a kill still counts. A cell that outlives ``S`` seconds is interrupted; a kernel that
ignores the interrupt (or dies) is killed and the cells after it are ``not-run``.

Started as root (a sandbox on a machine where graders run as root), it first drops to ``--uid``
so that the process limit applies and nothing of root's remains. Everything this process writes
is untrusted to the grader: the student's code runs in its child kernel under the same user.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

__all__ = ["MAX_CELL_OUTPUT", "main"]

#: Characters of output kept per cell; the rest is cut with a note.
MAX_CELL_OUTPUT = 2 * 1024 * 1024


def _drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:  # pragma: no cover - the kernel refused
        raise SystemExit("could not drop privileges")


def _bounded(outputs: list[Any]) -> list[Any]:
    kept, used = [], 0
    for output in outputs:
        size = len(json.dumps(output, default=str))
        if used + size > MAX_CELL_OUTPUT:
            kept.append({"output_type": "stream", "name": "stdout",
                         "text": f"[output cut: more than {MAX_CELL_OUTPUT} characters]\n"})
            break
        kept.append(output)
        used += size
    return kept


async def _responsive(client: Any, seconds: float) -> bool:
    """Whether the kernel answers a kernel_info request within ``seconds`` (a busy loop does not)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    try:
        msg_id = client.kc.kernel_info()
        while loop.time() < deadline:
            reply = await client.kc.get_shell_msg(timeout=max(0.05, deadline - loop.time()))
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return True
    except Exception:  # noqa: BLE001 - any failure means the kernel is not usable
        return False
    return False


async def _run(nb: Any, timeout: float, out: Any) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    def emit(index: int, outputs: list[Any], status: str) -> None:
        out.write(json.dumps({"index": index, "outputs": _bounded(outputs), "status": status}, default=str) + "\n")
        out.flush()

    client = NotebookClient(nb, timeout=timeout, interrupt_on_timeout=True, allow_errors=True, kernel_name="python3",
                            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout:g} s",
                                              "traceback": [f"CellTimeoutError: the cell ran longer than {timeout:g} s"]},
                            extra_arguments=["--HistoryManager.hist_file=:memory:"], record_timing=False, shutdown_kernel="immediate",
                            resources={"metadata": {"path": os.getcwd()}})
    replies: dict[int, dict[str, Any]] = {}

    def executed(cell: Any, cell_index: int, execute_reply: Any) -> None:
        replies[cell_index] = (execute_reply or {}).get("content", {})

    client.on_cell_executed = executed
    stopped: str | None = None
    async with client.async_setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if stopped:
                emit(index, [], "not-run")
                continue
            try:
                await client.async_execute_cell(cell, index)
            except DeadKernelError:
                emit(index, cell.get("outputs", []), "died")
                stopped = "died"
                continue
            outputs = list(cell.get("outputs", []))
            timed_out = replies.get(index, {}).get("ename") == "CellTimeoutError"
            if timed_out:
                outputs.append({"output_type": "error", "ename": "CellTimeoutError", "evalue": f"the cell ran longer than {timeout:g} s",
                                "traceback": [f"CellTimeoutError: the cell ran longer than {timeout:g} s (it was interrupted)"]})
            if timed_out and not await _responsive(client, 5.0):
                emit(index, outputs, "timeout")
                stopped = "timeout"
                await client.km.shutdown_kernel(now=True)
                continue
            status = "timeout" if timed_out else ("error" if any(o.get("output_type") == "error" for o in outputs) else "ok")
            emit(index, outputs, status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcplab.course.runner")
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--uid", type=int)
    args = parser.parse_args(argv)
    if args.uid is not None and os.getuid() == 0:
        _drop_privileges(args.uid)
    from .._schema import jsonschema

    jsonschema()  # nbformat and nbclient import jsonschema: this way without the IRI grammar (0.75 s a submission)
    import nbformat

    nb = nbformat.reads(sys.stdin.read(), as_version=4)
    with os.fdopen(3, "w", encoding="utf-8") as out:
        try:
            asyncio.run(_run(nb, args.timeout, out))
        except Exception as exc:  # noqa: BLE001 - reported to the grader as the end of the run
            out.write(json.dumps({"end": f"runner stopped: {type(exc).__name__}: {exc}"[:500]}) + "\n")
            return 1
        out.write(json.dumps({"end": "complete"}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
