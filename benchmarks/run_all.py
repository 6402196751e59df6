"""Every benchmark in one run, one table: each figure, its target (issue 18) where it has one, and the verdict.

    python benchmarks/run_all.py [--quick] [--skip NAME ...] [--with-conformance]

Figures with targets come from the benchmark modules themselves: ``startup`` (each lab's setup-cell
imports <= 1.0 s, ``mcplab check`` of an unreachable URL <= 0.3 s), ``course`` (each lab top to
bottom, kernel start included, <= 5 s) and ``stockroom_wrk`` (durable ``read_stock`` >= 0.9x the
bare SDK's tool calls/s in the same run, p99 no worse). The other scripts run as they are, each one
row: wall time, exit status and the last line it printed. ``reference_conformance`` needs the
official runner from npm, so it runs only with ``--with-conformance``. ``--quick`` means fewer runs
and shorter load; the exit status is 1 when a figure misses its target or a script fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

COURSE_TARGET = 5.0
RATIO_TARGET = 0.9
#: The scripts without targets: arguments (full, quick) and the words of the output line shown.
SCRIPTS = {
    "validate": (["--messages", "20000"], ["--messages", "5000", "--repeat", "3"], "ratio"),
    "live_check": (["--repeat", "5"], ["--repeat", "2"], "direct"),
    "flightdeck": (["--rounds", "200"], ["--rounds", "50"], "run_plan"),
    "stream_health": (["--samples", "20"], ["--samples", "8"], "buffer-sse"),
    "stockroom": (["--calls", "2000", "--db", "file"], ["--calls", "500", "--db", "file"], "throughput"),
}


@dataclass
class Row:
    benchmark: str
    figure: str
    value: str
    target: str = "-"
    ok: bool | None = None


def startup_rows(quick: bool) -> list[Row]:
    import startup

    return [Row("startup", f.name, f"{f.wall:.2f} s (CPU {f.cpu:.2f})", f"<= {f.target:.1f} s" if f.target else "-", f.ok)
            for f in startup.measure(runs=3 if quick else 5)]


def course_rows(quick: bool) -> list[Row]:
    import course

    rows = []
    for lab in course.LABS:
        runs = [course.run_once(lab) for _ in range(1 if quick else 3)]
        median = statistics.median(r[0] for r in runs)
        rows.append(Row("course", f"{lab} top to bottom", f"{median:.1f} s (slowest cell {max(r[1] for r in runs):.1f})",
                        f"<= {COURSE_TARGET:.0f} s", median <= COURSE_TARGET))
    return rows


def stockroom_rows(quick: bool) -> list[Row]:
    import stockroom_wrk

    figures = stockroom_wrk.measure(seconds=4 if quick else 8, rounds=2 if quick else 3)
    rows = [Row("stockroom_wrk", name, f"{f['rps']:.0f} calls/s, p50 {f['p50']:.1f} ms, p99 {f['p99']:.1f} ms, "
                f"CPU {f['cpu_ms']:.2f} ms/call")
            for name, f in figures.items() if "rps" in f]
    durable, bare = figures["stockroom read_stock (durable file)"], figures["bare mcp SDK echo tool"]
    ratio = figures["ratio"]["durable/bare"]
    rows.append(Row("stockroom_wrk", "durable / bare calls/s", f"{ratio:.2f}x", f">= {RATIO_TARGET}x", ratio >= RATIO_TARGET))
    rows.append(Row("stockroom_wrk", "durable p99 vs bare p99", f"{durable['p99']:.1f} vs {bare['p99']:.1f} ms", "no worse",
                    durable["p99"] <= bare["p99"]))
    trace = figures["trace"]
    rows.append(Row("stockroom_wrk", "durable trace after the load", f"{trace['records']} records for {trace['answered']} answers, "
                    f"{'intact' if trace['intact'] else 'BROKEN'}", "one per answer, verifies", trace["ok"]))
    return rows


def script_row(name: str, args: list[str], pick: str) -> Row:
    """One script as it is: its exit status, wall time and the last output line with ``pick`` in it."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *args], capture_output=True, text=True)
    lines = [" ".join(line.split()) for line in (done.stdout or done.stderr).splitlines() if line.strip()]
    shown = next((line for line in reversed(lines) if pick in line), lines[-1] if lines else "(no output)")
    return Row(name, f"exit {done.returncode} in {time.perf_counter() - started:.1f} s", shown[:110], "exit 0", done.returncode == 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, shorter load")
    parser.add_argument("--skip", nargs="*", default=[], help="benchmarks to leave out (e.g. course stockroom_wrk)")
    parser.add_argument("--with-conformance", action="store_true", help="also run reference_conformance (npm runner)")
    args = parser.parse_args(argv)
    rows: list[Row] = []
    for name, collect in (("startup", startup_rows), ("course", course_rows), ("stockroom_wrk", stockroom_rows)):
        if name not in args.skip:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows += collect(args.quick)
    scripts = dict(SCRIPTS)
    if args.with_conformance:
        scripts["reference_conformance"] = (["--repeat", "3"], ["--repeat", "1"], "2026-07-28")
    for name, (full, quick, pick) in scripts.items():
        if name not in args.skip:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows.append(script_row(name, quick if args.quick else full, pick))
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average (1/5/15 min) {load} on {os.cpu_count()} CPUs: wall times stretch with load; the CPU seconds do not")
    widths = [max(len(getattr(r, f)) for r in rows) for f in ("benchmark", "figure", "value", "target")] if rows else [0] * 4
    header = ("benchmark", "figure", "value", "target")
    widths = [max(w, len(h)) for w, h in zip(widths, header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)) + "  verdict")
    print("  ".join("-" * w for w in widths) + "  -------")
    for r in rows:
        verdict = "-" if r.ok is None else ("ok" if r.ok else "MISSED")
        print("  ".join(str(getattr(r, f)).ljust(w) for f, w in zip(("benchmark", "figure", "value", "target"), widths)) + f"  {verdict}")
    return 1 if any(r.ok is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
