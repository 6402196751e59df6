"""`mcplab course` on bad input: one line naming the option and what was expected, exit 2, nothing run."""

from __future__ import annotations

import pytest

from mcplab.cli import main

from .conftest import GRADERS


@pytest.mark.parametrize(("argv", "expected"), [
    (["course", "rehearse", "lab_z"], "unknown lab 'lab_z': expected one of lab_a_era_boundary"),
    (["course", "rehearse", "--timeout", "0"], "--timeout 0: expected a number of seconds above 0"),
    (["course", "rehearse", "--course", "/nonexistent/course"], "/nonexistent/course: no nbgrader_config.py"),
])
def test_bad_input_is_one_line_and_exit_2(argv, expected, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and err.startswith("mcplab: error: ")


def test_keep_refuses_a_folder_with_content(tmp_path, capsys):
    (tmp_path / "precious.txt").write_text("not mine to overwrite")
    assert main(["course", "rehearse", "--course", str(GRADERS), "--keep", str(tmp_path)]) == 2
    assert "--keep" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]
