"""Course figures: each lab's source notebook run top to bottom, and grading: sealed vs unsealed, one job vs two.

    python benchmarks/course.py [--runs 3] [--no-runs] [--no-grading] [LAB ...]

Prints, per lab, the median wall time of a top-to-bottom run (nbclient, a fresh kernel each run,
kernel start-up included) and the slowest cell. Then, over the six rehearsal submissions of each
lab (mcplab.course.rehearsal; per-cell limit 10 s), the whole `mcplab course autograde` time
(executions and the nbgrader pass) in three set-ups: sealed with one job, unsealed with one job,
sealed with two jobs; and the two ratios the sealed-grading issue sets targets for (sealed at most
1.2x unsealed per submission; two jobs at least 1.6x the throughput of one).
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
from mcplab.course.autograde import autograde
from mcplab.course.rehearsal import build_submissions
from mcplab.course.release import course_copy, nbgrader

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


def grading_course(lab: str, root: Path) -> Path:
    """A course copy with ``lab`` released and its six rehearsal submissions in submitted/."""
    course = course_copy(GRADERS, [lab], root / lab)
    nbgrader(course, "generate_assignment", lab, "--force")
    source = nbformat.read(str(course / "source" / lab / f"{lab}.ipynb"), as_version=4)
    release = nbformat.read(str(course / "release" / lab / f"{lab}.ipynb"), as_version=4)
    for name, nb in build_submissions(source, release).items():
        target = course / "submitted" / name / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(nb, str(target))
    return course


SETUPS = (("sealed, 1 job", True, 1), ("unsealed, 1 job", False, 1), ("sealed, 2 jobs", True, 2))


def grading_figures(labs: list[str]) -> None:
    totals = {name: [0.0, 0] for name, _, _ in SETUPS}
    print(f"\n{'lab':30s} " + " ".join(f"{name:>22s}" for name, _, _ in SETUPS))
    with tempfile.TemporaryDirectory(prefix="mcplab-bench-grading-") as tmp:
        for lab in labs:
            course = grading_course(lab, Path(tmp))
            cells = []
            for name, sealed, jobs in SETUPS:
                started = time.monotonic()
                result = autograde(course, lab, jobs=jobs, sealed=sealed, timeout=10)
                seconds = time.monotonic() - started
                totals[name][0] += seconds
                totals[name][1] += len(result.rows)
                cells.append(f"{seconds / len(result.rows):6.2f} s/sub {len(result.rows) * 60 / seconds:5.1f}/min")
            print(f"{lab:30s} " + " ".join(f"{c:>22s}" for c in cells))
    per = {name: seconds / max(1, count) for name, (seconds, count) in totals.items()}
    print(f"{'all':30s} " + " ".join(f"{per[name]:6.2f} s/sub {60 / per[name]:5.1f}/min" for name, _, _ in SETUPS))
    print(f"sealed / unsealed per submission: {per['sealed, 1 job'] / per['unsealed, 1 job']:.2f}x (target at most 1.2x)")
    print(f"throughput, 2 jobs / 1 job: {per['sealed, 1 job'] / per['sealed, 2 jobs']:.2f}x (target at least 1.6x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lab", nargs="*", default=list(LABS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-runs", action="store_true", help="skip the top-to-bottom runs")
    parser.add_argument("--no-grading", action="store_true", help="skip the grading figures")
    args = parser.parse_args()
    if not args.no_runs:
        print(f"{'lab':30s} {'median run':>10s} {'slowest cell':>12s}")
        for lab in args.lab:
            runs = [run_once(lab) for _ in range(args.runs)]
            print(f"{lab:30s} {statistics.median(r[0] for r in runs):9.1f}s {max(r[1] for r in runs):11.1f}s")
    if not args.no_grading:
        grading_figures(args.lab)


if __name__ == "__main__":
    main()
