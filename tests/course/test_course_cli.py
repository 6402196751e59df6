"""`mcplab course` on bad input: one line naming the option and what was expected, exit 2, nothing run."""

from __future__ import annotations

import pytest

from mcplab.cli import main

from .conftest import GRADERS


@pytest.mark.parametrize(("argv", "expected"), [
    (["course", "rehearse", "lab_z"], "unknown lab 'lab_z': expected one of lab_a_era_boundary"),
    (["course", "rehearse", "--timeout", "0"], "--timeout 0: expected a number of seconds above 0"),
    (["course", "rehearse", "--course", "/nonexistent/course"], "/nonexistent/course: no nbgrader_config.py"),
    (["course", "rehearse", "--jobs", "0"], "--jobs 0: expected a whole number of sandboxes above 0"),
    (["course", "autograde", "lab_z"], "unknown lab 'lab_z'"),
    (["course", "autograde", ""], "unknown lab ''"),
    (["course", "autograde", "."], "unknown lab '.'"),
    (["course", "autograde", ".."], "unknown lab '..'"),
    (["course", "autograde", "lab_a_era_boundary", "--jobs", "0"], "--jobs 0: expected a whole number"),
    (["course", "autograde", "lab_a_era_boundary", "--timeout", "nan"], "'nan': expected a number of seconds above 0"),
    (["course", "autograde", "lab_a_era_boundary", "--timeout", "-1"], "--timeout -1: expected seconds per cell above 0"),
    (["course", "autograde", "lab_a_era_boundary", "--course", "/nonexistent/course"], "/nonexistent/course: no nbgrader_config.py"),
    (["course", "autograde", "lab_a_era_boundary", "--course", "/dev/null"], "/dev/null: no nbgrader_config.py"),
])
def test_bad_input_is_one_line_and_exit_2(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and err.count("\n") == 1
    assert err.startswith("mcplab: error: ") or err.startswith(f"mcplab course {argv[1]}: error: ")


def test_keep_refuses_a_folder_with_content(tmp_path, capsys):
    (tmp_path / "precious.txt").write_text("not mine to overwrite")
    assert main(["course", "rehearse", "--course", str(GRADERS), "--keep", str(tmp_path)]) == 2
    assert "--keep" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]


def test_autograde_with_no_submissions_says_where_it_looked(tmp_path, capsys):
    course = tmp_path / "course"
    (course / "release" / "lab_a_era_boundary").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    (course / "gradebook.db").write_bytes(b"")
    assert main(["course", "autograde", "lab_a_era_boundary", "--course", str(course), "--unsealed"]) == 2
    err = capsys.readouterr().err
    assert "no submissions of lab_a_era_boundary (expected submitted/<student>/lab_a_era_boundary/lab_a_era_boundary.ipynb)" in err
    assert "--unsealed: submissions run without a sandbox" in err  # the explicit choice is said out loud


def test_autograde_before_the_release_says_what_to_run(tmp_path, capsys):
    from mcplab.course.release import course_copy

    course = course_copy(GRADERS, ["lab_a_era_boundary"], tmp_path / "course")
    assert main(["course", "autograde", "lab_a_era_boundary", "--course", str(course)]) == 2
    assert "lab_a_era_boundary was not released here: run 'nbgrader generate_assignment lab_a_era_boundary'" in capsys.readouterr().err


@pytest.mark.parametrize("student", ["../../etc", "*", "alice\nbob", "\ud800"])
def test_autograde_student_is_a_name_never_a_path_or_pattern(student, tmp_path, capsys):
    course = tmp_path / "course"
    (course / "release" / "lab_a_era_boundary").mkdir(parents=True)
    (course / "submitted" / "alice" / "lab_a_era_boundary").mkdir(parents=True)
    (course / "submitted" / "alice" / "lab_a_era_boundary" / "lab_a_era_boundary.ipynb").write_text("{}")
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    (course / "gradebook.db").write_bytes(b"")
    assert main(["course", "autograde", "lab_a_era_boundary", "--course", str(course), "--unsealed", "--student", student]) == 2
    err = capsys.readouterr().err
    assert "no submissions of lab_a_era_boundary" in err and "Traceback" not in err


def test_autograde_refuses_an_empty_student(capsys):
    assert main(["course", "autograde", "lab_a_era_boundary", "--student", " "]) == 2
    assert "--student '': expected a student id" in capsys.readouterr().err


def test_autograde_grades_one_named_student_or_all(tmp_path):
    from mcplab.course.autograde import autograde
    from mcplab.course.release import CourseError

    for students in (["alice", "bob"], []):  # nbgrader --force would regrade every other student too
        with pytest.raises(CourseError, match="one student or all of them"):
            autograde(tmp_path, "lab_a_era_boundary", students=students)
