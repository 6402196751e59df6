"""Course figures: each lab's source notebook run top to bottom, and the nbgrader rehearsal per lab.

    python benchmarks/course.py [--runs 3] [--no-rehearse] [LAB ...]

Prints, per lab, the median wall time of a top-to-bottom run (nbclient, a fresh kernel each run,
kernel start-up included) and the slowest cell, then the seconds per submission of one autograde
call over the six rehearsal submissions (mcplab.course.rehearsal; per-cell limit 10 s).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from mcplab.course import LABS
from mcplab.course.rehearsal import rehearse

GRADERS = Path(__file__).resolve().parents[1] / "graders"


def run_once(lab: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{lab}.ipynb"
        shutil.copy(GRADERS / "source" / lab / f"{lab}.ipynb", path)
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": tmp}})
        slowest = 0.0
        started = time.monotonic()
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                t = time.monotonic()
                client.execute_cell(cell, index)
                slowest = max(slowest, time.monotonic() - t)
        return time.monotonic() - started, slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", nargs="*", default=list(LABS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-rehearse", action="store_true")
    args = parser.parse_args()
    print(f"{'lab':30s} {'median run':>10s} {'slowest cell':>12s}")
    for lab in args.lab:
        runs = [run_once(lab) for _ in range(args.runs)]
        print(f"{lab:30s} {statistics.median(r[0] for r in runs):9.1f}s {max(r[1] for r in runs):11.1f}s")
    if args.no_rehearse:
        return
    total, count = 0.0, 0
    for lab in args.lab:
        result = rehearse(GRADERS, lab, timeout=10)
        total, count = total + result.autograde_seconds, count + len(result.submissions)
        verdict = "as expected" if not result.problems else f"{len(result.problems)} problem(s)"
        print(f"{lab:30s} autograde {result.autograde_seconds:5.1f}s / {len(result.submissions)} = "
              f"{result.seconds_per_submission:.2f} s/submission ({verdict})")
    print(f"{'all':30s} autograde {total:5.1f}s / {count} = {total / count:.2f} s/submission")


if __name__ == "__main__":
    main()
