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
    # a line public in some lab's source (an import in lab D that lab C's checks also use) is no secret
    public = {line.strip() for lab in LABS for cell in nbformat.read(source_path(lab), as_version=4).cells
              if not _meta(cell).get("solution") for line in _visible(cell.source).split("\n")}
    for lab in LABS:
        # each lab's secrets against every file: a lab's notebook, another lab's, the README
        assert find_leaks(files, secret_lines(source_path(lab)) - public) == [], lab


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


def _execute(path, tmp_path, extra_cell: str | None = None):
    """Run every cell of a copy of ``path`` in a fresh kernel, on past errors (each error stays in its cell's outputs)."""
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    if extra_cell is not None:
        nb.cells.append(nbformat.v4.new_code_cell(extra_cell))
    copy = tmp_path / path.name
    nbformat.write(nb, str(copy))  # the where-am-I cell reads the notebook next to the kernel
    NotebookClient(nb, timeout=180, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def _errors(nb):
    return [(n, out) for n, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.output_type == "error"]


def _is_check(cell) -> bool:
    return bool(_meta(cell).get("grade")) and not _meta(cell).get("solution")


@pytest.mark.parametrize("lab", LABS)
def test_run_all_on_the_untouched_release_stops_first_at_the_check_of_exercise_1(lab, tmp_path):
    probe = (f"from mcplab.course.progress import where_am_i\n_where = where_am_i({lab!r})\n"
             "print('WHERE', [(e.kind, e.status) for e in _where.exercises], _where.points)")
    nb = _execute(LABS_DIR / f"{lab}.ipynb", tmp_path, probe)
    errors = _errors(nb)
    checks = [n for n, cell in enumerate(nb.cells) if cell.cell_type == "code" and _is_check(cell)]
    assert errors, f"{lab}: the untouched release raised nothing"
    first, out = errors[0]
    # Run All stops at the first error: it must be the check of exercise 1, saying the answer is missing
    assert first == checks[0], (f"{lab}: Run All stops first at cell {first} ({nb.cells[first].source[:80]!r}), "
                                f"not at the check of exercise 1 (cell {checks[0]})")
    assert out.ename == "NotImplementedError"
    # and run on past each failure (as a student does), only checks fail: a table that needs an answer says so
    for n, out in errors:
        assert _is_check(nb.cells[n]), f"{lab}: cell {n} is not a check and raised {out.ename}: {nb.cells[n].source[:80]!r}"
    shown = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    where = next(line for line in shown.splitlines() if line.startswith("WHERE"))
    assert "'visible checks pass'" not in where and "(0.0, " in where, where
    assert "('autograded', 'not answered')" in where and "('written', 'not written yet (as last saved)')" in where, where
    if lab == "lab_d_proxy_repair":  # the step table and the lines under it agree: no step 2 without a repair
        assert "2 repaired proxy, 3 futureHint kept: these steps need your answer to Exercise 1" in shown
        assert "2 repaired proxy:" not in shown and "1 broken proxy: rollback, sdk and proxy did not pass" in shown
    # the last cell ran mcplab check against the reference server and showed its verdict table
    assert "$ mcplab check --url http://127.0.0.1:" in shown and "CASE" in shown and "exit code" in shown


def test_where_am_i_counts_the_visible_checks_of_answered_exercises(tmp_path):
    lab = "lab_b_additive_fields"
    probe = (f"from mcplab.course.progress import where_am_i\n_where = where_am_i({lab!r})\n"
             "print('WHERE', [(e.kind, e.status) for e in _where.exercises], _where.points)")
    nb = _execute(source_path(lab), tmp_path, probe)
    assert _errors(nb) == []
    where = next(line for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                 for line in o.get("text", "").splitlines() if line.startswith("WHERE"))
    tests = [c for c in nb.cells if c.cell_type == "code" and _is_check(c)]
    total = float(sum(_meta(c)["points"] for c in tests))
    assert where.count("'visible checks pass'") == len(tests) and f"({total}, {total})" in where, where


def test_needs_answer_says_what_is_missing_and_lets_other_errors_through(capsys):
    import __main__
    from mcplab.course.progress import needs_answer

    def unanswered(x):
        raise NotImplementedError()

    def broken(x):
        return x["missing"]

    __main__.unanswered, __main__.broken = unanswered, broken
    try:
        with needs_answer("Exercise 1", "unanswered") as guard:
            [unanswered(n) for n in range(3)]
        assert "Exercise 1" in guard.missing and "`unanswered` is not answered yet" in capsys.readouterr().out
        with needs_answer("Exercise 2", "broken") as guard:
            broken({})
        assert "raised KeyError: 'missing'" in guard.missing and "check of Exercise 2" in guard.missing
        with pytest.raises(KeyError), needs_answer("Exercise 2", "broken"):
            {}["not the student's"]  # an error of the cell itself is not hidden
        with needs_answer("Exercise 3", "undefined_answer") as guard:
            undefined_answer(1)  # noqa: F821 - the exercise cell was not run
        assert "not defined yet" in guard.missing
        with needs_answer("Exercise 1", "unanswered") as guard:
            pass
        assert guard.missing is None
    finally:
        del __main__.unanswered, __main__.broken
