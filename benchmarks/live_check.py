"""Benchmark: wall time of a full ``mcplab check``, and beside it the official runner's on the same server.

Part 1 starts the stockroom (JSON, and SSE streams) and the live proxy in daemon threads on free
loopback ports, runs :func:`mcplab.live.run_check` ``--repeat`` times direct and once per proxy
mode, and prints the live cases run, passed direct / via, the issues seen and the median wall time.
Part 2 (``--foreign``, the default) runs a full ``check`` (generated checks included) and the
official runner (``mcplab.conformance.run_official``, 2026-07-28 requirements, nothing excused) on
the same servers: the ``mcp`` SDK's ``MCPServer`` fixture, the TypeScript SDK v2 fixture (npm) and
the stockroom; it prints the checks judged, failed and warned, and the runner's scored scenarios,
each with its median wall time. A runner or SDK that cannot be installed is reported and skipped.
Usage: ``python benchmarks/live_check.py [--repeat 5] [--no-foreign]``.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import sys
import time
from pathlib import Path

from mcplab.live import PROXY_MODES, run_check, serve_proxy
from mcplab.stockroom.server import serve_stockroom


def _timed(url: str, via: str | None = None):
    started = time.perf_counter()
    result = run_check(url, via=via, generate=True)
    return result, time.perf_counter() - started


def _foreign(repeat: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from mcplab.conformance import ConformanceRunnerError, ensure_runner, run_official
    from tests.foreign.py_server import serve_python_sdk
    from tests.foreign.support import NpmUnavailable, serve_typescript_sdk

    try:
        runner = ensure_runner()
    except ConformanceRunnerError as exc:
        runner = None
        print(f"official runner unavailable: {exc}")
    servers = {"mcp SDK MCPServer": serve_python_sdk, "TypeScript SDK v2": serve_typescript_sdk,
               "stockroom": lambda: contextlib.closing(_Url(serve_stockroom(":memory:", port=0)))}
    for name, serve in servers.items():
        try:
            with serve() as url:
                url = url.url if isinstance(url, _Url) else url
                runs = [_timed(url) for _ in range(repeat)]
                summary = runs[-1][0].summary()
                line = (f"{name}: check {summary['judged']} judged, {summary['direct']['failed']} failed, "
                        f"{summary['direct']['withWarnings']} with warnings, median {statistics.median(w for _, w in runs):.3f} s")
                if runner is not None:
                    times, run = [], None
                    for _ in range(repeat):
                        started = time.perf_counter()
                        run = run_official(url, "2026-07-28", runner=runner)
                        times.append(time.perf_counter() - started)
                    line += (f" | official runner {run.passed_scenarios}/{run.total_scenarios} scenarios passed, "
                             f"{run.total_checks} checks, median {statistics.median(times):.3f} s")
                print(line)
        except (NpmUnavailable, RuntimeError) as exc:
            print(f"{name}: not run ({exc})")


class _Url:
    """Adapts ``serve_stockroom`` (a context manager of a server) to yield its URL."""

    def __init__(self, manager):
        self.manager = manager
        self.url = manager.__enter__().url

    def close(self) -> None:
        self.manager.__exit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="direct runs per server (default 5)")
    parser.add_argument("--no-foreign", action="store_true", help="skip part 2 (foreign servers beside the official runner)")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}")
    for sse in (False, True):
        with serve_stockroom(":memory:", port=0, json_response=not sse) as srv:
            runs = [_timed(srv.url) for _ in range(args.repeat)]
            result = runs[-1][0]
            summary = result.summary()
            print(f"stockroom ({'SSE' if sse else 'JSON'}): {summary['applicable']} live cases, direct {summary['direct']['passed']} "
                  f"passed / {summary['direct']['failed']} failed, median {statistics.median(w for _, w in runs):.3f} s; "
                  f"issues {result.issues}")
            for mode in PROXY_MODES:
                with serve_proxy(srv.url, mode) as proxy:
                    result, wall = _timed(srv.url, proxy.url)
                via = result.summary()["via"]
                print(f"  via {mode:<16} {via['passed']:>2} passed / {via['failed']:>2} failed  {wall:.3f} s  issues {result.issues}")
    if not args.no_foreign:
        _foreign(min(args.repeat, 3))


if __name__ == "__main__":
    main()
