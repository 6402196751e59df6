"""Benchmark: the stockroom's durable ``read_stock`` against a bare ``mcp`` SDK tool call, same run, under wrk.

    python benchmarks/stockroom_wrk.py [--seconds 8] [--connections 8] [--rounds 2]

Starts three servers as child processes on loopback: ``mcplab serve stockroom`` with a database
file (every call's trace record durable before its answer), the same with ``:memory:``, and
``benchmarks/bare_sdk_server.py`` (an ``mcp`` high-level server with one ``echo`` tool). Then wrk
(Debian: ``apt-get install wrk``) posts the same 2026-07-28 ``tools/call`` to each in turn,
``--rounds`` times, and prints calls/s and p50/p99 latency per target (the median over rounds),
the server's CPU per call, the durable/bare ratio, and whether the durable trace still verifies with one record per answer.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from server_child import Child

from mcplab.requests import build_request
from mcplab.stockroom import StockroomClient

HERE = Path(__file__).resolve().parent
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _lua(tool: str, arguments: dict) -> str:
    body, headers = build_request("tools/call", {"name": tool, "arguments": arguments}, id=1, capabilities={})
    lines = ['wrk.method = "POST"', f"wrk.body = {json.dumps(json.dumps(body))}"]
    lines += [f"wrk.headers[{json.dumps(name)}] = {json.dumps(value)}" for name, value in headers]
    return "\n".join(lines) + "\n"


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(number) * _UNITS[unit]


def wrk(url: str, script: Path, seconds: int, connections: int) -> dict[str, float]:
    """One wrk run: ``{rps, p50, p99, requests, errors}`` (latencies in ms)."""
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "-s", str(script), url],
                         capture_output=True, text=True, check=True).stdout
    found = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
             "p50": _ms(re.search(r"\s50%\s+(\S+)", out).group(1)), "p99": _ms(re.search(r"\s99%\s+(\S+)", out).group(1)),
             "requests": int(re.search(r"(\d+) requests in", out).group(1))}
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sockets = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    found["errors"] = (int(bad.group(1)) if bad else 0) + (sum(map(int, sockets.groups())) if sockets else 0)
    return found


def measure(seconds: int = 8, connections: int = 8, rounds: int = 2) -> dict[str, dict[str, float]]:
    """Median figures per target, the trace check of the durable server, and the durable/bare ratio."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install -y wrk)")
    with tempfile.TemporaryDirectory(prefix="mcplab-wrk-") as tmp:
        tmpdir = Path(tmp)
        read_stock, echo = tmpdir / "read_stock.lua", tmpdir / "echo.lua"
        read_stock.write_text(_lua("read_stock", {}))
        echo.write_text(_lua("echo", {"text": "hello"}))
        serve = [sys.executable, "-m", "mcplab", "serve", "stockroom", "--port", "0", "--db"]
        children = {"stockroom read_stock (durable file)": Child([*serve, str(tmpdir / "stock.sqlite3")], tmpdir / "durable.log"),
                    "stockroom read_stock (in memory)": Child([*serve, ":memory:"], tmpdir / "memory.log"),
                    "bare mcp SDK echo tool": Child([sys.executable, str(HERE / "bare_sdk_server.py")], tmpdir / "bare.log")}
        scripts = {name: echo if name.startswith("bare") else read_stock for name in children}
        with children["stockroom read_stock (durable file)"] as durable, children["stockroom read_stock (in memory)"] as memory, \
                children["bare mcp SDK echo tool"] as bare:
            urls = dict(zip(children, (durable, memory, bare)))
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in children}
            for _ in range(rounds):
                for name, child in children.items():
                    before = child.cpu_seconds()
                    run = wrk(urls[name], scripts[name], seconds, connections)
                    run["cpu_ms"] = (child.cpu_seconds() - before) * 1000 / max(run["requests"], 1)
                    runs[name].append(run)
            with StockroomClient(durable) as admin:
                records, problems = admin.audit()  # one read: the trace and its verification together
    figures = {name: {key: statistics.median(run[key] for run in got) for key in ("rps", "p50", "p99", "cpu_ms")}
               | {"errors": sum(run["errors"] for run in got), "requests": sum(run["requests"] for run in got)}
               for name, got in runs.items()}
    durable_runs = runs["stockroom read_stock (durable file)"]
    answered = sum(run["requests"] for run in durable_runs)
    figures["trace"] = {"records": len(records), "answered": answered, "intact": not problems,
                        "ok": not problems and len(records) >= answered}
    bare_rps = figures["bare mcp SDK echo tool"]["rps"]
    figures["ratio"] = {"durable/bare": figures["stockroom read_stock (durable file)"]["rps"] / bare_rps}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    figures = measure(args.seconds, args.connections, args.rounds)
    print(f"{'target':40s} {'calls/s':>9s} {'p50 ms':>8s} {'p99 ms':>8s} {'CPU ms/call':>12s} {'errors':>7s}")
    for name, row in figures.items():
        if "rps" in row:
            print(f"{name:40s} {row['rps']:9.0f} {row['p50']:8.2f} {row['p99']:8.2f} {row['cpu_ms']:12.3f} {row['errors']:7.0f}")
    trace = figures["trace"]
    print(f"durable/bare calls/s: {figures['ratio']['durable/bare']:.2f}x; trace: {trace['records']} records for "
          f"{trace['answered']} answered calls, {'intact' if trace['intact'] else 'BROKEN'}")
    return 0 if trace["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
