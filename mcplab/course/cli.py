"""``mcplab course``: regenerate the student release, autograde sealed, rehearse grading. Registered by ``mcplab.cli``.

The commands work on a course folder (default ``graders/`` under the current directory, i.e. a
checkout of mcplab) and need the course tools (``pip install 'mcplab[course]'``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

from ..clitools import QuietWait, whole_seconds
from ..errors import MCPLabError
from . import LABS

__all__ = ["add_course_command"]


class _MissingTools(MCPLabError):
    """nbgrader is not installed."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _load(module: str) -> ModuleType:
    """``mcplab.course.<module>``, which needs nbgrader: a missing tool is one line, not a traceback."""
    try:
        return importlib.import_module(f"{__package__}.{module}")
    except ImportError as exc:
        raise _MissingTools(f"mcplab course needs the course tools ({exc.name} is missing): pip install 'mcplab[course]'") from None


def _labs(names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in LABS]
    if unknown:
        raise MCPLabError(f"unknown lab {unknown[0]!r}: expected one of {', '.join(LABS)}")
    return names or list(LABS)


def _cmd_release(args: argparse.Namespace) -> int:
    course, labs_dir = Path(args.course), Path(args.labs)
    for flag, folder in (("--course", course), ("--labs", labs_dir)):
        if args.check or flag == "--course":  # a release writes --labs, creating it
            if not folder.is_dir():
                raise MCPLabError(f"{flag} {folder}: {'not a folder' if folder.exists() else 'does not exist'}"
                                  f"{' (run from the repository root, or give --course DIR)' if flag == '--course' else ''}")
    release = _load("release")
    if args.check:
        with QuietWait(f"checking {labs_dir} against {course}/source with nbgrader ({len(LABS)} labs, about 10 s)"):
            problems = release.stale_labs(course, labs_dir)
        for problem in problems:
            print(problem)
        if problems:
            print(f"{labs_dir} is out of date: run 'mcplab course release' and commit the result", file=sys.stderr)
            return 1
        print(f"{labs_dir} is the release of {course}/source ({len(LABS)} labs)")
        return 0
    result = release.release_labs(course, labs_dir, progress=_say)
    for path in result.written:
        print(f"wrote {path}")
    print(f"{len(result.written)} written, {len(result.unchanged)} already up to date")
    return 0


def _cmd_rehearse(args: argparse.Namespace) -> int:
    from ..clitools import table

    rehearsal = _load("rehearsal")
    if args.timeout is not None and args.timeout <= 0:
        raise MCPLabError(f"--timeout {args.timeout}: expected a number of seconds above 0")
    if args.jobs < 1:
        raise MCPLabError(f"--jobs {args.jobs}: expected a whole number of sandboxes above 0")
    labs = _labs(args.lab)
    if args.keep:
        keep = Path(args.keep)
        if keep.exists() and any(keep.iterdir()):
            raise MCPLabError(f"--keep {keep}: not empty: expected a new or empty folder")
    rows, problems, total_seconds, total_subs = [], [], 0.0, 0
    for lab in labs:
        workdir = Path(args.keep) / lab if args.keep else None
        result = rehearsal.rehearse(Path(args.course), lab, timeout=args.timeout, workdir=workdir, progress=_say, jobs=args.jobs,
                                    sealed=not args.unsealed)
        for sub in result.submissions.values():
            rows.append([lab, sub.name, f"{sub.auto_score:g}/{sub.auto_max:g}", f"{sub.expected:g}",
                         "yes" if abs(sub.auto_score - sub.expected) < 1e-9 else "NO"])
        total_seconds += result.autograde_seconds
        total_subs += len(result.submissions)
        problems += result.problems
        _say(f"{lab}: autograde {result.autograde_seconds:.1f} s for {len(result.submissions)} submissions "
             f"({result.seconds_per_submission:.2f} s per submission)")
    print(table(rows, ["LAB", "SUBMISSION", "AUTOGRADED", "EXPECTED", "OK"]))
    print(f"{total_subs} submissions autograded in {total_seconds:.1f} s ({total_seconds / max(1, total_subs):.2f} s per submission)")
    for problem in problems:
        print(f"problem: {problem}")
    return 1 if problems else 0


def _cmd_autograde(args: argparse.Namespace) -> int:
    from ..clitools import table

    autograde = _load("autograde")
    if args.lab not in LABS and not (Path(args.course) / "source" / args.lab / f"{args.lab}.ipynb").is_file():
        raise MCPLabError(f"unknown lab {args.lab!r}: expected one of {', '.join(LABS)} (or a lab in {args.course}/source)")
    if args.jobs < 1:
        raise MCPLabError(f"--jobs {args.jobs}: expected a whole number of sandboxes above 0")
    if args.timeout is not None and not (0 < args.timeout < 3600):
        raise MCPLabError(f"--timeout {args.timeout}: expected seconds per cell above 0 and below 3600")
    if args.student is not None and not args.student.strip():
        raise MCPLabError("--student '': expected a student id (a folder name under submitted/)")
    if args.unsealed:
        _say("warning: --unsealed: submissions run without a sandbox; a hostile submission can read and change this course")
    result = autograde.autograde(Path(args.course), args.lab, jobs=args.jobs, sealed=not args.unsealed, timeout=args.timeout,
                                 students=None if args.student is None else [args.student], progress=_say)
    rows = [[r.student, f"{r.score:g}/{r.max_score:g}", "-" if r.seconds is None else f"{r.seconds:.1f}", r.note] for r in result.rows]
    print(table(rows, ["STUDENT", "AUTOGRADED", "SECONDS", "NOTE"]))
    runs = len([r for r in result.rows if r.seconds is not None])
    print(f"{len(result.rows)} submission(s) of {args.lab} graded {'sealed' if result.sealed else 'UNSEALED'}: all ran after "
          f"{result.execute_seconds:.1f} s with {result.jobs} job(s), all graded after {result.grade_seconds:.1f} s"
          + (f" ({result.grade_seconds / max(1, runs):.2f} s per submission)" if runs else ""))
    return 0


def add_course_command(sub: argparse._SubParsersAction) -> None:
    """Register ``mcplab course release|rehearse``."""
    course = sub.add_parser("course", help="the nbgrader course: regenerate the student labs, rehearse grading")
    csub = course.add_subparsers(dest="action", required=True, metavar="ACTION")
    rel = csub.add_parser("release", help="regenerate labs/<lab>.ipynb from graders/source with nbgrader (--check: exit 1 if stale)")
    rel.add_argument("--course", default="graders", metavar="DIR", help="the nbgrader course folder (default graders)")
    rel.add_argument("--labs", default="labs", metavar="DIR", help="where the student notebooks go (default labs)")
    rel.add_argument("--check", action="store_true", help="write nothing; exit 1 if the student notebooks are not the release")
    rel.set_defaults(func=_cmd_release)
    auto = csub.add_parser("autograde", help="grade every submitted notebook of LAB, each in its own sandbox, and write the "
                           "grades to the gradebook (as 'nbgrader autograde LAB' does with the course config, but in parallel)")
    auto.add_argument("lab", metavar="LAB", help="the lab (assignment) to grade")
    auto.add_argument("--course", default="graders", metavar="DIR", help="the nbgrader course folder (default graders)")
    auto.add_argument("--jobs", type=int, default=1, metavar="N", help="submissions run at once, each in its own sandbox (default 1)")
    auto.add_argument("--timeout", type=whole_seconds, metavar="SECONDS", help="per-cell limit, above 0; decimals round up to whole "
                      "seconds, as nbgrader takes them (default: the course config's Execute.timeout)")
    auto.add_argument("--student", metavar="ID", help="grade only this student's submission")
    auto.add_argument("--unsealed", action="store_true", help="run submissions without a sandbox (no isolation: only for "
                      "machines where bubblewrap cannot run, and only for trusted submissions)")
    auto.set_defaults(func=_cmd_autograde)
    reh = csub.add_parser("rehearse", help="autograde a full-marks and five hostile submissions per lab (exit 1 if any "
                          "score, feedback or grades.csv row is not as expected)")
    reh.add_argument("lab", nargs="*", metavar="LAB", help=f"labs to rehearse (default all: {', '.join(LABS)})")
    reh.add_argument("--course", default="graders", metavar="DIR", help="the nbgrader course folder (default graders)")
    reh.add_argument("--timeout", type=whole_seconds, metavar="SECONDS", help="per-cell limit while autograding, above 0; "
                     "decimals round up to whole seconds, as nbgrader takes them (default: the course config's)")
    reh.add_argument("--jobs", type=int, default=1, metavar="N", help="submissions run at once, each in its own sandbox (default 1)")
    reh.add_argument("--unsealed", action="store_true", help="run the submissions without a sandbox (no isolation)")
    reh.add_argument("--keep", metavar="DIR", help="keep each lab's course copy (submitted/, autograded/, feedback/, "
                     "gradebook.db, grades.csv) under DIR/<lab>")
    reh.set_defaults(func=_cmd_rehearse)
