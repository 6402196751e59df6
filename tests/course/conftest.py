"""The course folders of this checkout, and a summary of the grading figures at the end of the run."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GRADERS = REPO / "graders"
LABS_DIR = REPO / "labs"

#: (lab, seconds of the autograde call, submissions) appended by the rehearsal tests.
REHEARSALS: list[tuple[str, float, int]] = []


def source_path(lab: str) -> Path:
    return GRADERS / "source" / lab / f"{lab}.ipynb"


@pytest.fixture(scope="session")
def graders() -> Path:
    return GRADERS


def pytest_terminal_summary(terminalreporter):  # noqa: ANN001 - pytest hook
    if not REHEARSALS:
        return
    terminalreporter.section("nbgrader rehearsal: seconds per submission (one autograde call per lab)")
    for lab, seconds, count in REHEARSALS:
        terminalreporter.write_line(f"{lab:30s} {seconds:6.1f} s for {count} submissions = {seconds / count:5.2f} s/submission")
    total, count = sum(r[1] for r in REHEARSALS), sum(r[2] for r in REHEARSALS)
    terminalreporter.write_line(f"{'all labs':30s} {total:6.1f} s for {count} submissions = {total / count:5.2f} s/submission")
