"""A grading rehearsal: one lab through nbgrader with a full-marks and five hostile submissions.

Each submission is named after what it proves (nbgrader's own test notebooks do the same):

=====================  ==================================================  =========================
submission             what the student did                                expected autograded score
=====================  ==================================================  =========================
``full-marks``         pasted the source solutions into the release        every autograded point
``untouched-release``  nothing                                             0
``edited-test-cell``   replaced every test cell by ``assert True``          0 (cells restored by checksum)
``deleted-test-cell``  full marks, but deleted the first test cell          every point (cell restored)
``infinite-loop``      the first answer cell loops forever                 0 (cell interrupted)
``kernel-kill``        full marks, but the second answer kills the kernel  the first exercise's points only
=====================  ==================================================  =========================

:func:`rehearse` runs generate_assignment, the sealed autograde of the batch
(:func:`mcplab.course.autograde.autograde`, ``jobs`` sandboxes at once), generate_feedback and
``export --to grades.csv`` in a temporary copy of the course and reports the scores per cell, the
seconds per submission, any expectation that failed and any hidden-test or solution line found in
the feedback. ``extra`` adds submissions with their expected scores (the tests' hostile corpus).
The tests and ``mcplab course rehearse`` both call it.
"""

from __future__ import annotations

import copy
import csv
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .hidden import BEGIN_SOLUTION, END_SOLUTION, Leak, find_leaks, secret_lines
from .release import course_copy, nbgrader

__all__ = ["SUBMISSIONS", "GradedSubmission", "Rehearsal", "build_submissions", "rehearse"]

SUBMISSIONS = ("full-marks", "untouched-release", "edited-test-cell", "deleted-test-cell", "infinite-loop", "kernel-kill")
_STUDENT_ANSWER = "(A written answer: graded by hand.)"
KILL_KERNEL = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"
INFINITE_LOOP = "while True:\n    pass"


def _meta(cell: NotebookNode) -> dict:
    return cell.metadata.get("nbgrader", {})


def _is_answer(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and bool(_meta(cell).get("solution"))


def _is_test(cell: NotebookNode) -> bool:
    return cell.cell_type == "code" and bool(_meta(cell).get("grade")) and not _meta(cell).get("solution")


def build_submissions(source: NotebookNode, release: NotebookNode) -> dict[str, NotebookNode]:
    """The six rehearsal submissions of one lab, from its source (solutions) and its release."""
    solutions = {_meta(c)["grade_id"]: c.source for c in source.cells if _is_answer(c)}

    def full() -> NotebookNode:
        nb = copy.deepcopy(release)
        for cell in nb.cells:
            if _is_answer(cell):
                cell.source = "\n".join(line for line in solutions[_meta(cell)["grade_id"]].split("\n")
                                        if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION))
            elif cell.cell_type == "markdown" and _meta(cell).get("solution"):
                cell.source = _STUDENT_ANSWER
        return nb

    answers = [i for i, c in enumerate(release.cells) if _is_answer(c)]
    tests = [i for i, c in enumerate(release.cells) if _is_test(c)]
    if len(answers) < 2 or not tests:
        raise ValueError(f"a lab needs at least two answer cells and a test cell (found {len(answers)} and {len(tests)})")
    subs = {"full-marks": full(), "untouched-release": copy.deepcopy(release)}
    edited = copy.deepcopy(release)
    for i in tests:
        edited.cells[i].source = "assert True  # the student edited this test cell"
    subs["edited-test-cell"] = edited
    deleted = full()
    del deleted.cells[tests[0]]
    subs["deleted-test-cell"] = deleted
    loop = copy.deepcopy(release)
    loop.cells[answers[0]].source = INFINITE_LOOP
    subs["infinite-loop"] = loop
    kill = full()
    kill.cells[answers[1]].source = KILL_KERNEL + kill.cells[answers[1]].source
    subs["kernel-kill"] = kill
    return subs


def _expected(source: NotebookNode) -> dict[str, float]:
    """Expected autograded score per submission, from the source's points and cell order."""
    cells = source.cells
    points = {_meta(c)["grade_id"]: float(_meta(c).get("points", 0)) for c in cells if _is_test(c)}
    second_answer = [i for i, c in enumerate(cells) if _is_answer(c)][1]
    before_kill = sum(float(_meta(c).get("points", 0)) for c in cells[:second_answer] if _is_test(c))
    full = sum(points.values())
    return {"full-marks": full, "untouched-release": 0.0, "edited-test-cell": 0.0, "deleted-test-cell": full,
            "infinite-loop": 0.0, "kernel-kill": before_kill}


@dataclass
class GradedSubmission:
    """One graded submission: autograded points, per-cell scores and the errors its cells raised."""

    name: str
    auto_score: float
    auto_max: float
    expected: float
    cells: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    feedback: Path | None = None


@dataclass
class Rehearsal:
    """The outcome of :func:`rehearse` for one lab."""

    lab: str
    root: Path | None
    autograde_seconds: float
    submissions: dict[str, GradedSubmission]
    grades_csv: list[dict[str, str]]
    leaks: list[Leak]

    @property
    def seconds_per_submission(self) -> float:
        return self.autograde_seconds / max(1, len(self.submissions))

    @property
    def problems(self) -> list[str]:
        """Every expectation that did not hold (empty when the rehearsal passed)."""
        out = []
        for sub in self.submissions.values():
            if abs(sub.auto_score - sub.expected) > 1e-9:
                out.append(f"{self.lab}/{sub.name}: autograded score {sub.auto_score:g}, expected {sub.expected:g} of {sub.auto_max:g}")
            if sub.feedback is None:
                out.append(f"{self.lab}/{sub.name}: no feedback was generated")
        missing = set(self.submissions) - {row["student_id"] for row in self.grades_csv}
        out.extend(f"{self.lab}/{name}: not in grades.csv" for name in sorted(missing))
        out.extend(f"{self.lab}: feedback {leak.path.name} of {leak.path.parent.parent.name} shows {leak.text[:60]!r}" for leak in self.leaks)
        return out


def _autograded_errors(path: Path) -> dict[str, str]:
    nb = nbformat.read(str(path), as_version=4)
    errors = {}
    for cell in nb.cells:
        grade_id = _meta(cell).get("grade_id")
        for output in cell.get("outputs", []):
            if grade_id and output.get("output_type") == "error":
                errors[grade_id] = output.get("ename", "")
    return errors


def rehearse(course_dir: Path, lab: str, *, timeout: float | None = None, workdir: Path | None = None,
             progress: Callable[[str], None] | None = None, jobs: int = 1, sealed: bool = True,
             extra: dict[str, tuple[NotebookNode, float]] | None = None) -> Rehearsal:
    """Grade the six rehearsal submissions of ``lab`` in a copy of ``course_dir``.

    The copy (submitted/, autograded/, feedback/, gradebook.db, grades.csv) is kept in ``workdir``
    when given; otherwise it is a temporary folder removed before returning (``root`` is then None).
    """
    options = {"timeout": timeout, "say": progress or (lambda _msg: None), "jobs": jobs, "sealed": sealed, "extra": extra or {}}
    if workdir is not None:
        return _rehearse_in(Path(course_dir), lab, Path(workdir), **options)
    with tempfile.TemporaryDirectory(prefix=f"mcplab-rehearse-{lab}-") as tmp:
        result = _rehearse_in(Path(course_dir), lab, Path(tmp), **options)
    result.root = None
    return result


def _rehearse_in(course_dir: Path, lab: str, root: Path, *, timeout: float | None, say: Callable[[str], None], jobs: int,
                 sealed: bool, extra: dict[str, tuple[NotebookNode, float]]) -> Rehearsal:
    from nbgrader.api import Gradebook

    from .autograde import autograde

    course_copy(course_dir, [lab], root)
    say(f"{lab}: generating the release")
    nbgrader(root, "generate_assignment", lab, "--force")
    source = nbformat.read(str(root / "source" / lab / f"{lab}.ipynb"), as_version=4)
    release = nbformat.read(str(root / "release" / lab / f"{lab}.ipynb"), as_version=4)
    submissions = {**build_submissions(source, release), **{name: nb for name, (nb, _) in extra.items()}}
    for name, nb in submissions.items():
        target = root / "submitted" / name / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
    started = time.monotonic()
    autograde(root, lab, jobs=jobs, sealed=sealed, timeout=timeout, progress=say)
    seconds = time.monotonic() - started
    say(f"{lab}: feedback and grades.csv")
    nbgrader(root, "generate_feedback", lab, "--force")
    nbgrader(root, "export", "--to", str(root / "grades.csv"))
    with open(root / "grades.csv", newline="", encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if row["assignment"] == lab]

    expected = {**_expected(source), **{name: points for name, (_, points) in extra.items()}}
    graded: dict[str, GradedSubmission] = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for name in submissions:
            nb = gb.find_submission_notebook(lab, lab, name)
            auto = [g for g in nb.grades if g.cell_type == "code"]
            feedback = root / "feedback" / name / lab / f"{lab}.html"
            graded[name] = GradedSubmission(
                name=name, auto_score=sum(g.score for g in auto), auto_max=sum(g.max_score for g in auto),
                expected=expected[name], cells={g.name: g.score for g in auto},
                errors=_autograded_errors(root / "autograded" / name / lab / f"{lab}.ipynb"),
                feedback=feedback if feedback.is_file() else None)

    everything = secret_lines(source)
    leaks = []
    for name, sub in graded.items():
        written = {line.strip() for cell in submissions[name].cells for line in cell.source.split("\n")}
        if sub.feedback:  # a line the student wrote themselves (a pasted solution) is theirs to see
            leaks += find_leaks([sub.feedback], everything - written)
        autograded = root / "autograded" / name / lab / f"{lab}.ipynb"
        if autograded.is_file():  # what any output shows, the student's own prints included
            leaks += find_leaks([autograded], everything, outputs_only=True)
    return Rehearsal(lab=lab, root=root, autograde_seconds=seconds, submissions=graded, grades_csv=rows, leaks=leaks)
