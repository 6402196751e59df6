"""Benchmark: what Flight Deck preflight costs against a real stockroom server over loopback.

Starts :func:`mcplab.stockroom.serve_stockroom` in a daemon thread, drafts the seed's Restock, then
times ``--rounds`` of each preflight operation (each one rediscovers the catalog: two requests in
2026-07-28, ``server/discover`` and ``tools/list``; one ``tools/list`` in 2025-11-25 after the
first ``initialize``; plus two admin GETs when the target is read) and one full plan run with an
approving callback. Prints p50/p99 milliseconds per operation and checks that preflight left the
trace as it found it.

Usage: ``python benchmarks/flightdeck.py [--rounds 200] [--era modern|legacy]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from mcplab.flightdeck import FlightDeck
from mcplab.stockroom import serve_stockroom


def percentile(sorted_values: list[float], fraction: float) -> float:
    index = max(0, min(len(sorted_values) - 1, round(fraction * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--era", default="modern", choices=["modern", "legacy"])
    args = parser.parse_args()
    with serve_stockroom() as srv, FlightDeck.connect(srv.url, era=args.era) as deck:
        draft = deck.connection.api.draft_reorder()
        before = len(srv.stockroom.trace())
        operations = {
            "inspect_server": lambda: deck.inspect_server(),
            "inspect_tool": lambda: deck.inspect_tool("commit_reorder"),
            "validate_tool_call": lambda: deck.validate_tool_call("commit_reorder", draft),
            "preview_tool_call": lambda: deck.preview_tool_call("commit_reorder", draft),
            "compile_invocation_plan(3 steps)": lambda: deck.compile_invocation_plan(
                [{"tool": "read_stock", "arguments": {}}, {"tool": "commit_reorder", "arguments": draft},
                 {"tool": "read_stock", "arguments": {}}]),
        }
        print(f"era {args.era}, {args.rounds} rounds each, server in this process (one GIL)")
        for name, operation in operations.items():
            times = []
            for _ in range(args.rounds):
                start = time.perf_counter()
                operation()
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            print(f"  {name:34s} p50 {statistics.median(times):6.2f} ms   p99 {percentile(times, 0.99):6.2f} ms")
        assert len(srv.stockroom.trace()) == before, "preflight wrote to the trace"
        print(f"  trace length unchanged by {args.rounds * len(operations)} preflight operations: {before} records")
        plan = deck.compile_invocation_plan([{"tool": "commit_reorder", "arguments": draft}])
        start = time.perf_counter()
        run = deck.run_plan(plan, approver=lambda question: "accept")
        elapsed = (time.perf_counter() - start) * 1000
        proof = run["steps"][0]["proof"]
        print(f"  run_plan(commit_reorder, approve)  {elapsed:6.2f} ms   proof: ledger v{proof['ledger_version']} on_order {proof['on_order']}")


if __name__ == "__main__":
    main()
