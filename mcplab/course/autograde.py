"""``mcplab course autograde LAB``: every submission of a lab, graded sealed, in parallel.

Design: the expensive part of grading, running each submission, happens in parallel (``jobs``
sandboxes at once) while one ``nbgrader autograde`` process grades the batch beside them, taking
each execution from a cache as soon as it is there instead of running it again
(:class:`~mcplab.course.grading.SealedExecute` looks it up by the hash of the exact notebook it
would run, and waits while the submission's ``.pending`` marker says it is being prepared or run). That process is the only
writer of the gradebook, so SQLite is never raced. An execution whose notebook nbgrader prepares
differently is simply run again by nbgrader: the cache can make grading faster, never different.
The cache is a folder inside the course (never visible to a sandbox) and is removed afterwards.
"""

from __future__ import annotations

import json
import queue
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .release import CONFIG_NAME, CourseError, nbgrader
from .sandbox import Execution, SandboxUnavailable, run_notebook, sandbox_problem

__all__ = ["AutogradeResult", "GradedRow", "autograde", "prepare_submission", "submissions_of"]


@dataclass
class GradedRow:
    """One student's autograded score and how their run ended."""

    student: str
    score: float
    max_score: float
    seconds: float | None = None
    note: str = ""


@dataclass
class AutogradeResult:
    """What :func:`autograde` did for one lab."""

    lab: str
    rows: list[GradedRow] = field(default_factory=list)
    execute_seconds: float = 0.0
    grade_seconds: float = 0.0
    sealed: bool = True
    jobs: int = 1


def submissions_of(course_dir: Path, lab: str, students: Sequence[str] | None = None) -> dict[str, Path]:
    """``{student: path}`` of every ``submitted/<student>/<lab>/<lab>.ipynb`` in the course."""
    found = {}
    for path in sorted((course_dir / "submitted").glob(f"*/{lab}/{lab}.ipynb")):
        student = path.parent.parent.name
        if students is None or student in students:
            found[student] = path
    return found


def _config(course_dir: Path):
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader(CONFIG_NAME, path=str(course_dir)).load_config()


def prepare_submission(course_dir: Path, lab: str, student: str, path: Path, config=None) -> str:
    """The exact notebook (JSON text) that grading ``path`` will run in its sandbox."""
    from nbgrader.converters.autograde import Autograde

    from .grading import sandbox_notebook, trusted_cells

    config = config if config is not None else _config(course_dir)
    resources = {"nbgrader": {"notebook": lab, "assignment": lab, "student": student,
                              "db_url": f"sqlite:///{course_dir / 'gradebook.db'}"}}
    nb = nbformat.read(str(path), as_version=4)
    pipeline = config.Autograde.get("sanitize_preprocessors") or Autograde.class_traits()["sanitize_preprocessors"].default()
    for cls in pipeline:
        nb, resources = cls(config=config)(nb, resources)
    copy, _ = sandbox_notebook(nb, trusted_cells(resources))
    return nbformat.writes(copy)


def _scores(course_dir: Path, lab: str, students: Sequence[str]) -> dict[str, tuple[float, float]]:
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gb:
        for student in students:
            try:
                nb = gb.find_submission_notebook(lab, lab, student)
            except MissingEntry:
                continue
            auto = [g for g in nb.grades if g.cell_type == "code"]
            out[student] = (sum(g.auto_score or 0.0 for g in auto), sum(g.max_score for g in auto))
    return out


def autograde(course_dir: Path, lab: str, *, jobs: int = 1, sealed: bool = True, timeout: float | None = None,
              students: Sequence[str] | None = None, progress: Callable[[str], None] | None = None) -> AutogradeResult:
    """Grade every submission of ``lab`` in ``course_dir`` (see the module docstring)."""
    from .grading import SealedExecute, execution_key, pending_marker

    say = progress or (lambda _msg: None)
    if students is not None and len(students) != 1:  # nbgrader --force would regrade everyone else too
        raise CourseError(f"autograde grades one student or all of them, not {len(students)} named ones")
    course_dir = Path(course_dir).resolve()
    if not (course_dir / CONFIG_NAME).is_file():
        raise CourseError(f"{course_dir}: no {CONFIG_NAME}: expected an nbgrader course folder such as graders/ (or pass --course DIR)")
    if not (course_dir / "gradebook.db").is_file() or not (course_dir / "release" / lab).is_dir():
        raise CourseError(f"{course_dir}: {lab} was not released here: run 'nbgrader generate_assignment {lab}' in the course folder first")
    if sealed:
        problem = sandbox_problem()
        if problem:
            raise SandboxUnavailable(problem)
    found = submissions_of(course_dir, lab, students)
    if not found:
        raise CourseError(f"{course_dir / 'submitted'}: no submissions of {lab} (expected submitted/<student>/{lab}/{lab}.ipynb)")
    config = _config(course_dir)
    execute = SealedExecute(config=config)
    if timeout:
        execute.timeout = max(1, round(timeout))  # whole seconds, the same for these runs and for nbgrader's
    limits = execute.limits()
    result = AutogradeResult(lab, sealed=sealed, jobs=jobs)
    cache_root = course_dir / ".mcplab-cache"
    cache_root.mkdir(mode=0o700, exist_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="autograde-", dir=cache_root))
    executions: dict[str, Execution] = {}
    try:
        markers = {student: cache / pending_marker({"nbgrader": {"student": student, "assignment": lab, "notebook": lab}})
                   for student in found}
        for marker in markers.values():  # nbgrader waits for these runs instead of running them again
            marker.touch()
        args = ["autograde", lab, "--force", f"--SealedExecute.cache_dir={cache}", f"--SealedExecute.sealed={sealed}"]
        if timeout:
            args.append(f"--Execute.timeout={execute.timeout}")
        if students is not None:
            args += ["--student", students[0]]
        free_slots: queue.SimpleQueue[int] = queue.SimpleQueue()  # a slot (and its sandbox uid) is never shared by two runs
        for slot in range(max(1, jobs)):
            free_slots.put(slot)

        def run(student: str) -> Execution | None:
            """Prepare and run one submission; its result lands in the cache, then its marker goes."""
            slot = free_slots.get()
            try:
                try:
                    text = prepare_submission(course_dir, lab, student, found[student], config)
                except Exception as exc:  # noqa: BLE001 - nbgrader grades (or reports) this one itself
                    say(f"{lab}/{student}: could not be prepared ahead ({type(exc).__name__}: {exc}); nbgrader will run it")
                    return None
                execution = run_notebook(text, limits=limits, sealed=sealed, slot=slot, course_root=course_dir)
                ready = cache / f"{execution_key(text, limits, sealed)}.json"
                partial = ready.with_suffix(f".{slot}.tmp")  # two runs of the same notebook never share a temporary file
                partial.write_text(json.dumps(execution.to_json()), encoding="utf-8")
                partial.replace(ready)
                return execution
            finally:
                free_slots.put(slot)
                markers[student].unlink(missing_ok=True)

        started = time.monotonic()
        say(f"{lab}: running {len(found)} submission(s), {jobs} at a time, {'sealed' if sealed else 'UNSEALED (no isolation)'}; "
            "nbgrader grades each as soon as it has run")
        grading = ThreadPoolExecutor(max_workers=1)
        graded = grading.submit(nbgrader, course_dir, *args)
        try:
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                futures = {pool.submit(run, student): student for student in sorted(found)}
                for done, future in enumerate(as_completed(futures), start=1):
                    student = futures[future]
                    execution = future.result()
                    if execution is None:
                        continue
                    executions[student] = execution
                    say(f"{lab}: {done}/{len(futures)} ran ({student}: {execution.seconds:.1f} s"
                        f"{', stopped at the wall limit' if execution.wall_exceeded else ''})")
        finally:
            for marker in markers.values():  # a run that failed: nbgrader stops waiting and runs it itself
                marker.unlink(missing_ok=True)
            result.execute_seconds = time.monotonic() - started
            try:
                graded.result()
            finally:
                grading.shutdown()
                result.grade_seconds = time.monotonic() - started
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    scores = _scores(course_dir, lab, list(found))
    for student in found:
        score, max_score = scores.get(student, (0.0, 0.0))
        execution = executions.get(student)
        note = "" if execution is None or execution.end == "complete" else (
            "stopped at the wall limit" if execution.wall_exceeded else f"run ended: {execution.end or 'killed'}")
        result.rows.append(GradedRow(student, score, max_score, execution.seconds if execution else None, note))
    return result
