"""Benchmark: wall time of a full ``mcplab check`` against the local stockroom, direct and via each proxy mode.

Starts the stockroom (JSON, and ``--sse`` streams) and the live proxy in daemon threads on free
loopback ports, runs :func:`mcplab.live.run_check` ``--repeat`` times direct and once per proxy
mode, and prints the live cases run, passed direct / via, the issues seen and the median wall time.
Usage: ``python benchmarks/live_check.py [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from mcplab.live import PROXY_MODES, run_check, serve_proxy
from mcplab.stockroom.server import serve_stockroom


def _timed(url: str, via: str | None = None):
    started = time.perf_counter()
    result = run_check(url, via=via)
    return result, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="direct runs per server (default 5)")
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


if __name__ == "__main__":
    main()
