"""Benchmark: concurrent ``read_stock`` tool calls against a real stockroom server over loopback.

Starts the server (``--server process``: ``mcplab serve stockroom`` as a child process, the way an
engineer runs it; ``--server thread``: :func:`mcplab.stockroom.serve_stockroom` in a daemon
thread of this process, the way a notebook runs it, sharing one GIL with the clients), then
``--clients`` threads, each with its own ``httpx.Client``, share ``--calls`` 2026-07-28
``tools/call read_stock`` requests. Prints calls/second and p50/p99 latency in milliseconds, then
checks through ``GET /stockroom/trace`` that the trace holds exactly one ``read_stock`` record per
call and still verifies.

Usage: ``python benchmarks/stockroom.py [--clients 8] [--calls 2000] [--db memory|file] [--server process|thread]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from server_child import Child

from mcplab.requests import build_request
from mcplab.stockroom import StockroomClient, serve_stockroom


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    index = max(0, min(len(sorted_values) - 1, round(fraction * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def run(url: str, clients: int, calls: int) -> tuple[float, list[float], list[str]]:
    """Send ``calls`` read_stock calls from ``clients`` threads; return wall seconds, latencies, failures."""
    ids = itertools.count(1)
    next_lock = threading.Lock()
    remaining = [calls]
    latencies: list[float] = []
    failures: list[str] = []
    start = threading.Barrier(clients + 1)

    def worker() -> None:
        mine: list[float] = []
        with httpx.Client(timeout=30.0) as http:
            start.wait()
            while True:
                with next_lock:
                    if remaining[0] == 0:
                        break
                    remaining[0] -= 1
                    call_id = next(ids)
                body, headers = build_request("tools/call", {"name": "read_stock", "arguments": {}}, id=call_id,
                                              capabilities={})
                began = time.perf_counter()
                try:
                    reply = http.post(url, content=json.dumps(body), headers=headers)
                    answer = reply.json()
                    if reply.status_code != 200 or answer.get("id") != call_id or "ledger_version" not in \
                            answer["result"]["structuredContent"]:
                        failures.append(f"call {call_id}: HTTP {reply.status_code} {reply.text[:200]}")
                except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                    failures.append(f"call {call_id}: {exc!r}")
                mine.append(time.perf_counter() - began)
        with next_lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, name=f"bench-client-{i}") for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began, latencies, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads (default 8)")
    parser.add_argument("--calls", type=int, default=2000, help="total read_stock calls (default 2000)")
    parser.add_argument("--db", choices=("memory", "file"), default="memory", help="SQLite in memory or in a temporary file")
    parser.add_argument("--server", choices=("process", "thread"), default="process",
                        help="server in a child process (default) or in a thread of this process")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.calls < 1:
        parser.error("--clients and --calls must be at least 1")

    with tempfile.TemporaryDirectory(prefix="mcplab-bench-") as tmp:
        db = ":memory:" if args.db == "memory" else str(Path(tmp) / "stock.sqlite3")
        served = (Child([sys.executable, "-m", "mcplab", "serve", "stockroom", "--port", "0", "--db", db], Path(tmp) / "server.log")
                  if args.server == "process" else serve_stockroom(db))
        with served as srv:
            url = srv if isinstance(srv, str) else srv.url
            seconds, latencies, failures = run(url, args.clients, args.calls)
            with StockroomClient(url) as admin:
                records, problems = admin.audit()  # one read: the trace and its verification together
    latencies_ms = sorted(x * 1000 for x in latencies)
    read_records = sum(1 for record in records if record["tool"] == "read_stock")
    print(f"stockroom read_stock: {args.calls} calls, {args.clients} clients, db={args.db}, server={args.server} "
          f"(Python {platform.python_version()}, {platform.machine()})")
    print(f"  throughput {args.calls / seconds:,.0f} calls/s over {seconds:.2f} s")
    print(f"  latency ms: p50 {percentile(latencies_ms, 0.50):.2f}  p99 {percentile(latencies_ms, 0.99):.2f}  "
          f"mean {statistics.fmean(latencies_ms):.2f}  max {latencies_ms[-1]:.2f}")
    print(f"  trace: {read_records} read_stock records of {len(records)} (expected {args.calls}); "
          f"verify: {'intact' if not problems else problems[:3]}")
    ok = not failures and read_records == args.calls == len(records) and not problems
    if failures:
        print(f"  {len(failures)} failed calls, first: {failures[0]}")
    print("  OK" if ok else "  FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
