"""Sealed grading under attack: the hostile corpus (tests/course/submissions) through the real pipeline.

Each lab's corpus is graded once, together with the six rehearsal submissions, by
``mcplab course autograde --jobs 2`` (sandboxes) and nbgrader's real gradebook, then feedback is
generated. The tests then read what a student, an instructor and the machine would see.
"""

from __future__ import annotations

import http.server
import json
import os
import sqlite3
import threading
from pathlib import Path

import nbformat
import pytest

from mcplab.course import LABS
from mcplab.course.hidden import find_leaks, secret_lines
from mcplab.course.rehearsal import build_submissions, rehearse
from mcplab.course.release import course_copy, nbgrader
from mcplab.course.sandbox import SANDBOX_UID_BASE, sandbox_problem

from .corpus import build, load

pytestmark = pytest.mark.skipif(sandbox_problem() is not None and not os.environ.get("MCPLAB_REQUIRE_SANDBOX"),
                                reason=f"no sandbox here: {sandbox_problem()}")

CORPUS_LABS = ("lab_a_era_boundary", "lab_b_additive_fields", "lab_f_stockroom_flightdeck")
GRADERS = Path(__file__).resolve().parents[2] / "graders"
SECRET = "instructor-secret-value-6f2b9c"
#: What grading must never change: the lab's cells, their sources, checksums and points (ids are per course copy).
_TRUSTED = {
    "assignment": "SELECT name FROM assignment",
    "notebook": "SELECT name, kernelspec FROM notebook",
    "cells": "SELECT b.name, b.type FROM base_cell b",
    "grade_cells": "SELECT b.name, g.max_score, g.cell_type FROM grade_cells g JOIN base_cell b ON b.id = g.id",
    "source_cell": "SELECT name, cell_type, locked, source, checksum FROM source_cell",
}


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        _Recorder.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"host service")

    def log_message(self, *args: object) -> None:
        pass


def _trusted_rows(db: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(db) as con:
        return {name: sorted(map(tuple, con.execute(query).fetchall())) for name, query in _TRUSTED.items()}


def _sandbox_processes() -> list[str]:
    """Processes left by this process's sandboxes (their uids when the grader is root), or by the corpus's orphans.

    Other test workers may be grading at the same time: only uids this process's slots use, and
    the corpus's own command-line markers, count.
    """
    mine = {SANDBOX_UID_BASE + (os.getpid() * 16 + slot) % 4000 for slot in range(4)} if os.getuid() == 0 else set()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            uid = int(next(line for line in (entry / "status").read_text().splitlines() if line.startswith("Uid:")).split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, StopIteration):
            continue
        if uid in mine or "611.5" in cmdline or "612.5" in cmdline:
            found.append(f"{entry.name} uid={uid} {cmdline[:80]}")
    return found


@pytest.fixture(scope="module")
def host_service():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module", params=CORPUS_LABS)
def graded(request, tmp_path_factory, host_service):
    """One lab's six rehearsal submissions plus its corpus, graded sealed with two jobs, feedback generated."""
    lab = request.param
    root = tmp_path_factory.mktemp(lab)
    source = nbformat.read(str(GRADERS / "source" / lab / f"{lab}.ipynb"), as_version=4)
    course_copy(GRADERS, [lab], root / "probe")
    nbgrader(root / "probe", "generate_assignment", lab, "--force")
    release = nbformat.read(str(root / "probe" / "release" / lab / f"{lab}.ipynb"), as_version=4)
    corpus = load(lab)
    extra = {sub.name: (build(sub, source, release, host_port=host_service), sub.expect) for sub in corpus}
    before = _trusted_rows(root / "probe" / "gradebook.db")
    os.environ["MCPLAB_TEST_SECRET"] = SECRET  # in the grader's environment: no sandbox may see it
    try:
        result = rehearse(GRADERS, lab, timeout=10, workdir=root / "course", jobs=2, extra=extra)
    finally:
        os.environ.pop("MCPLAB_TEST_SECRET", None)
    return {"lab": lab, "result": result, "corpus": corpus, "source": source, "before": before, "root": root / "course"}


def test_every_submission_gets_its_exact_score_and_feedback(graded):
    from .conftest import REHEARSALS
    from .test_rehearsal import check_rehearsal

    result = graded["result"]
    REHEARSALS.append((graded["lab"], result.autograde_seconds, len(result.submissions)))
    check_rehearsal(result)
    for sub in graded["corpus"]:
        got = result.submissions[sub.name]
        assert got.auto_score == sub.expect, f"{graded['lab']}/{sub.name} ({sub.proves}): {got.auto_score} != {sub.expect}"
        assert got.feedback is not None and got.feedback.is_file(), f"{sub.name}: no feedback"


def test_no_hidden_check_or_solution_line_in_any_output(graded):
    root, lab = graded["root"], graded["lab"]
    everything = secret_lines(graded["source"])
    autograded = sorted((root / "autograded").glob(f"*/{lab}/{lab}.ipynb"))
    assert len(autograded) == len(graded["result"].submissions)
    assert find_leaks(autograded, everything, outputs_only=True) == []
    feedback = sorted((root / "feedback").glob(f"*/{lab}/{lab}.html"))
    assert len(feedback) == len(autograded)
    for page in feedback:  # sources too: every hidden or solution line, except the lines this student wrote
        submitted = nbformat.read(str(root / "submitted" / page.parent.parent.name / lab / f"{lab}.ipynb"), as_version=4)
        written = {line.strip() for cell in submitted.cells for line in cell.source.split("\n")}
        assert find_leaks([page], everything - written) == [], page


def test_a_failed_hidden_check_names_the_invariant_not_the_input(graded):
    root, lab = graded["root"], graded["lab"]
    nb = nbformat.read(str(root / "autograded" / "untouched-release" / lab / f"{lab}.ipynb"), as_version=4)
    verdicts = [o for c in nb.cells for o in c.get("outputs", []) if o.get("ename") == "SealedCheckFailed"]
    assert len(verdicts) == 2
    wrong = [sub for sub in graded["corpus"] if sub.name.startswith("wrong-")][0]
    nb = nbformat.read(str(root / "autograded" / wrong.name / lab / f"{lab}.ipynb"), as_version=4)
    lines = [line for c in nb.cells for o in c.get("outputs", []) if o.get("ename") == "SealedCheckFailed" for line in o.traceback]
    assert lines and any("(input: " in line for line in lines)
    cases = {line.split(":", 1)[0].strip(" -") for line in lines[1:] if line.startswith("  - ")}
    from mcplab import CASES

    assert cases & set(CASES), cases


def test_trusted_gradebook_tables_are_untouched(graded):
    after = _trusted_rows(graded["root"] / "gradebook.db")
    assert after == graded["before"]


def test_nothing_a_submission_started_is_left(graded):
    assert _sandbox_processes() == []


def test_grader_secrets_and_host_services_out_of_reach(graded):
    root, lab = graded["root"], graded["lab"]
    for path in (root / "autograded").glob(f"*/{lab}/{lab}.ipynb"):
        assert SECRET not in path.read_text(encoding="utf-8")
    assert _Recorder.hits == []


def test_markup_from_a_submission_is_plain_text(graded):
    if graded["lab"] != "lab_b_additive_fields":
        pytest.skip("the HTML submission is in lab B's corpus")
    html = (graded["root"] / "feedback" / "html-in-output" / graded["lab"] / f"{graded['lab']}.html").read_text(encoding="utf-8")
    autograded = (graded["root"] / "autograded" / "html-in-output" / graded["lab"] / f"{graded['lab']}.ipynb").read_text()
    nb = nbformat.reads(autograded, as_version=4)
    markup = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "<b>bold</b>" in markup and "<script" not in markup and "onerror" not in markup  # inert text may stay
    outputs = json.dumps([o for c in nb.cells for o in c.get("outputs", [])])
    assert "mcplab-xss-marker-3" not in outputs and "application/javascript" not in outputs  # a Javascript output is dropped whole
    for marker in ("mcplab-xss-marker-1", "mcplab-xss-marker-2", "mcplab-xss-marker-3"):
        assert f"<script>alert('{marker}')" not in html and f"onerror=\"alert('{marker}')" not in html


def test_the_six_labs_each_have_sealed_checks_for_every_graded_cell():
    from mcplab.course.checks import collect

    for lab in LABS:
        nb = nbformat.read(str(GRADERS / "source" / lab / f"{lab}.ipynb"), as_version=4)
        graded = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
                  and not c.metadata["nbgrader"].get("solution")]
        assert len(graded) >= 2
        for cell in graded:
            checks = collect(cell.metadata["nbgrader"]["grade_id"], cell.source)
            assert len(checks.expectations) >= 5, cell.metadata["nbgrader"]["grade_id"]


@pytest.mark.parametrize("lab", ["lab_a_era_boundary"])
def test_plain_nbgrader_autograde_is_sealed_the_same_way(lab, tmp_path):
    """nbgrader autograde in the course folder (its config) gives the corpus the same exact scores, without mcplab's CLI."""
    source = nbformat.read(str(GRADERS / "source" / lab / f"{lab}.ipynb"), as_version=4)
    root = course_copy(GRADERS, [lab], tmp_path / "course")
    nbgrader(root, "generate_assignment", lab, "--force")
    release = nbformat.read(str(root / "release" / lab / f"{lab}.ipynb"), as_version=4)
    chosen = {"input-transformer", "forbidden-select-era", "honest-different", "walk-up-to-source", "sigint-ignoring-loop",
              "orphan-processes"}
    corpus = [sub for sub in load(lab) if sub.name in chosen]
    for sub in corpus:
        target = root / "submitted" / sub.name / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(build(sub, source, release), str(target))
    nbgrader(root, "autograde", lab, "--force", "--Execute.timeout=10")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for sub in corpus:
            grades = [g for g in gb.find_submission_notebook(lab, lab, sub.name).grades if g.cell_type == "code"]
            assert sum(g.auto_score for g in grades) == sub.expect, sub.name
    assert _sandbox_processes() == []


def test_rehearsal_submissions_are_built_from_the_release():
    lab = "lab_b_additive_fields"
    source = nbformat.read(str(GRADERS / "source" / lab / f"{lab}.ipynb"), as_version=4)
    subs = build_submissions(source, nbformat.read(str(GRADERS.parent / "labs" / f"{lab}.ipynb"), as_version=4))
    assert set(subs) >= {"full-marks", "untouched-release", "kernel-kill"}
