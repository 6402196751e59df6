"""The six labs: their shape, the committed student release, and that the release fails its own tests."""

from __future__ import annotations

import ast
import shutil

import nbformat
import pytest

from mcplab.cli import main
from mcplab.course import LABS
from mcplab.course.hidden import find_leaks, hidden_line_numbers, secret_lines
from mcplab.course.release import stale_labs

from .conftest import GRADERS, LABS_DIR, source_path


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


def _visible(source: str) -> str:
    hidden = hidden_line_numbers(source)
    return "\n".join(line for n, line in enumerate(source.split("\n"), start=1) if n not in hidden)


@pytest.mark.parametrize("lab", LABS)
def test_each_lab_has_an_introduction_exercises_with_visible_and_hidden_tests_and_one_written_answer(lab):
    nb = nbformat.read(source_path(lab), as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# Lab "), f"{lab}: the first cell is the title"
    answers = [c for c in nb.cells if c.cell_type == "code" and _meta(c).get("solution")]
    tests = [c for c in nb.cells if c.cell_type == "code" and _meta(c).get("grade") and not _meta(c).get("solution")]
    manual = [c for c in nb.cells if c.cell_type == "markdown" and _meta(c).get("grade") and _meta(c).get("solution")]
    assert len(answers) >= 2 and len(tests) >= 2, f"{lab}: at least two autograded exercises"
    assert len(manual) == 1, f"{lab}: exactly one manually graded written answer"
    ids = [_meta(c)["grade_id"] for c in nb.cells if _meta(c)]
    assert len(ids) == len(set(ids)), f"{lab}: grade_ids must be unique"
    for cell in tests:
        assert _meta(cell).get("locked") and _meta(cell).get("points", 0) > 0
        assert hidden_line_numbers(cell.source), f"{lab}/{_meta(cell)['grade_id']}: no hidden tests"
        asserts = [n for n in ast.walk(ast.parse(_visible(cell.source))) if isinstance(n, ast.Assert)]
        assert asserts, f"{lab}/{_meta(cell)['grade_id']}: no visible test"
        assert all(a.msg is not None for a in asserts), f"{lab}/{_meta(cell)['grade_id']}: every visible assert needs a message"
    for cell in answers:
        assert "### BEGIN SOLUTION" in cell.source
    checked = [c for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith("# NBVAL_CHECK_OUTPUT")]
    assert checked and all(c.outputs for c in checked), f"{lab}: nbval needs stored outputs of its NBVAL_CHECK_OUTPUT cells"


def test_the_course_shows_tables_widgets_and_a_plot():
    code = "\n".join(c.source for lab in LABS for c in nbformat.read(source_path(lab), as_version=4).cells if c.cell_type == "code")
    assert "DataFrame" in code or "_frame" in code or "pd." in code
    assert "CircuitPanel" in code
    assert "plot" in code


def test_labs_is_the_release_of_the_sources():
    assert stale_labs(GRADERS, LABS_DIR) == []


def test_nothing_under_labs_shows_a_solution_a_hidden_test_or_a_model_answer():
    files = [p for p in LABS_DIR.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {f"{lab}.ipynb" for lab in LABS} | {"README.md"}
    for lab in LABS:
        # each lab's secrets against every file: a lab's notebook, another lab's, the README
        assert find_leaks(files, secret_lines(source_path(lab))) == [], lab


def test_the_release_command_finds_and_repairs_a_stale_lab(tmp_path, capsys):
    labs = tmp_path / "labs"
    shutil.copytree(LABS_DIR, labs)
    stale = labs / f"{LABS[0]}.ipynb"
    stale.write_text(stale.read_text().replace("# Lab ", "# Edited lab ", 1))
    assert main(["course", "release", "--course", str(GRADERS), "--labs", str(labs), "--check"]) == 1
    assert str(stale) in capsys.readouterr().out
    assert main(["course", "release", "--course", str(GRADERS), "--labs", str(labs)]) == 0
    assert "1 written, 5 already up to date" in capsys.readouterr().out
    assert (labs / stale.name).read_bytes() == (LABS_DIR / stale.name).read_bytes()


def test_the_release_command_rejects_a_folder_that_is_not_a_course(tmp_path, capsys):
    assert main(["course", "release", "--course", str(tmp_path), "--labs", str(tmp_path / "labs")]) == 2
    err = capsys.readouterr().err
    assert "nbgrader_config.py" in err and "Traceback" not in err
    assert not (tmp_path / "labs").exists()


@pytest.mark.parametrize("lab", LABS)
def test_the_student_release_fails_its_tests(lab, tmp_path):
    from nbgrader.validator import Validator

    copy = tmp_path / f"{lab}.ipynb"
    shutil.copy(LABS_DIR / f"{lab}.ipynb", copy)
    assert Validator(invert=True).validate(str(copy)) == {}, f"{lab}: a test cell passes without any answer"
