"""Benchmark: the read_stock SSE stream as the health window sees it, direct and through each streaming proxy.

Starts the stockroom with SSE answers and the live proxy (faithful, buffer-sse) on free loopback
ports, captures ``--samples`` streamed read_stock calls per path, and prints the stream metrics
(p99 first event, duration, first-event ratio, fewest events), the window's stream findings, and
how long ``plot_health`` takes to render the buffered window to PNG.
Usage: ``python benchmarks/stream_health.py [--samples 20]``.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import time
from pathlib import Path

from mcplab import HealthPolicy, evaluate_health, plot_health
from mcplab.live import serve_proxy
from mcplab.stockroom import serve_stockroom, stream_health_window


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20, help="streamed calls per path (default 20)")
    args = parser.parse_args()
    policy = HealthPolicy(min_samples=args.samples, min_duration_s=0.0, max_latency_ms=10_000.0)
    print(f"python {platform.python_version()} on {platform.machine()}; {args.samples} streams per path")
    buffered: list[dict] = []
    with serve_stockroom(json_response=False) as srv:
        for mode in (None, "faithful", "buffer-sse"):
            if mode is None:
                samples = stream_health_window(srv.url, args.samples)
            else:
                with serve_proxy(srv.url, mode) as proxy:
                    samples = stream_health_window(proxy.url, args.samples)
            result = evaluate_health(samples, policy)
            stream = result["metrics"]["stream"]
            cases = sorted({f["case"] for f in result["streamFindings"]}) or ["-"]
            print(f"{mode or 'direct':>10}: p99 first event {stream['firstEventMs']:7.1f} ms, duration "
                  f"{stream['durationMs']:6.1f} ms, ratio {stream['firstEventRatio']:.2f}, fewest events "
                  f"{stream['minEvents']}; findings: {', '.join(cases)}")
            if mode == "buffer-sse":
                buffered = samples
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        plot_health(buffered, policy).savefig(Path(tmp) / "health.png")
    print(f"plot_health + PNG of the buffered window: {time.perf_counter() - started:.2f} s")


if __name__ == "__main__":
    main()
