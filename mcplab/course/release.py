"""The student release: ``graders/source/<lab>/<lab>.ipynb`` -> ``labs/<lab>.ipynb`` through nbgrader.

Design: the release is always generated in a temporary copy of the course (the config and the
lab sources only), so regenerating ``labs/`` never touches an instructor's gradebook or
``release/`` folder, and the output depends on nothing but the sources. nbgrader's output is
deterministic, so ``labs/`` is compared byte for byte (:func:`stale_labs`); a release that would
show a solution line, a hidden test or a model answer is refused before anything is written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MCPLabError
from . import LABS
from .hidden import find_leaks, secret_lines

__all__ = ["CONFIG_NAME", "CourseError", "ReleaseResult", "course_copy", "nbgrader", "release_labs", "stale_labs"]

CONFIG_NAME = "nbgrader_config.py"


class CourseError(MCPLabError):
    """A course folder that cannot be used, or an nbgrader step that failed (the message says which)."""


def _check_course(course_dir: Path, labs: Sequence[str]) -> None:
    if not (course_dir / CONFIG_NAME).is_file():
        raise CourseError(f"{course_dir}: no {CONFIG_NAME}: expected an nbgrader course folder such as graders/ "
                          "(run from a checkout of mcplab, or pass --course DIR)")
    for lab in labs:
        if not (course_dir / "source" / lab / f"{lab}.ipynb").is_file():
            raise CourseError(f"{course_dir / 'source' / lab / (lab + '.ipynb')}: missing: every lab needs its source notebook")


def course_copy(course_dir: Path, labs: Sequence[str], into: Path) -> Path:
    """Copy the course's config and the named labs' sources into ``into`` (a fresh course root)."""
    _check_course(course_dir, labs)
    into.mkdir(parents=True, exist_ok=True)
    shutil.copy2(course_dir / CONFIG_NAME, into / CONFIG_NAME)
    for lab in labs:
        shutil.copytree(course_dir / "source" / lab, into / "source" / lab,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return into


def nbgrader(course_root: Path, *args: str, log: Path | None = None) -> None:
    """Run ``python -m nbgrader ARGS`` in ``course_root``; a failure raises :class:`CourseError` with the log's tail."""
    log = log or course_root / "nbgrader.log"
    # nbgrader runs `alembic` (the gradebook's migrations) from PATH: put this interpreter's scripts first
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    with open(log, "ab") as out:
        rc = subprocess.call([sys.executable, "-m", "nbgrader", *args], cwd=course_root, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=env)
    if rc != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-15:]
        raise CourseError(f"nbgrader {args[0]} failed (exit {rc}) in {course_root}:\n" + "\n".join(tail))


@dataclass
class ReleaseResult:
    """What :func:`release_labs` did: the student notebooks written (changed) and those already up to date."""

    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)


def _generate(course_dir: Path, labs: Sequence[str], work: Path) -> dict[str, bytes]:
    root = course_copy(course_dir, labs, work / "course")
    nbgrader(root, "generate_assignment", "*", "--force")
    released: dict[str, bytes] = {}
    for lab in labs:
        path = root / "release" / lab / f"{lab}.ipynb"
        leaks = find_leaks([path], secret_lines(course_dir / "source" / lab / f"{lab}.ipynb"))
        if leaks:
            raise CourseError(f"{course_dir / 'source' / lab}: the release would show {len(leaks)} secret line(s), e.g. "
                              f"{leaks[0].text[:60]!r}: keep solutions inside ### BEGIN/END SOLUTION and hidden tests inside "
                              "### BEGIN/END HIDDEN TESTS")
        released[lab] = path.read_bytes()
    return released


def release_labs(course_dir: Path, labs_dir: Path, labs: Sequence[str] = LABS,
                 progress: Callable[[str], None] | None = None) -> ReleaseResult:
    """Regenerate the student notebooks ``labs_dir/<lab>.ipynb`` from the course's sources."""
    course_dir, labs_dir = Path(course_dir), Path(labs_dir)
    _check_course(course_dir, labs)
    if progress:
        progress(f"generating the release of {len(labs)} lab(s) with nbgrader ...")
    with tempfile.TemporaryDirectory(prefix="mcplab-release-") as work:
        released = _generate(course_dir, labs, Path(work))
    labs_dir.mkdir(parents=True, exist_ok=True)
    result = ReleaseResult()
    for lab, content in released.items():
        target = labs_dir / f"{lab}.ipynb"
        if target.is_file() and target.read_bytes() == content:
            result.unchanged.append(target)
        else:
            target.write_bytes(content)
            result.written.append(target)
    return result


def stale_labs(course_dir: Path, labs_dir: Path, labs: Sequence[str] = LABS) -> list[str]:
    """Why ``labs_dir`` is not exactly the release of the sources (empty when it is)."""
    course_dir, labs_dir = Path(course_dir), Path(labs_dir)
    with tempfile.TemporaryDirectory(prefix="mcplab-release-") as work:
        released = _generate(course_dir, labs, Path(work))
    problems = []
    for lab, content in released.items():
        target = labs_dir / f"{lab}.ipynb"
        if not target.is_file():
            problems.append(f"{target}: missing")
        elif target.read_bytes() != content:
            problems.append(f"{target}: differs from the release of {course_dir / 'source' / lab}")
    extra = sorted(p.name for p in labs_dir.glob("*.ipynb") if p.stem not in released)
    problems.extend(f"{labs_dir / name}: not a lab of the course" for name in extra)
    return problems
