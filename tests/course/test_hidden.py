"""Hidden tests, solutions and model answers never reach a student: the feedback preprocessor and the leak scan."""

from __future__ import annotations

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from mcplab.course.hidden import HIDDEN_FAILURE, HideHiddenTests, find_leaks, hidden_line_numbers, secret_lines

TEST_CELL = "\n".join([
    'assert double(2) == 4, "double(2) should be 4"',
    "### BEGIN HIDDEN TESTS",
    'assert double(5) == 10, "hidden check of double(5)"',
    "### END HIDDEN TESTS",
])


def _traceback(line: int, quoted: list[tuple[int, str]], final: str) -> list[str]:
    """An IPython-style traceback (with colour codes) of a failure at ``line`` of the cell, quoting ``quoted``."""
    body = "".join(f"\x1b[32m{'----> ' if n == line else '      '}\x1b[39m\x1b[32m{n}\x1b[39m {code}\n" for n, code in quoted)
    return ["\x1b[31m-----\x1b[39m", f"\x1b[36mCell\x1b[39m \x1b[32mIn[3]\x1b[39m\x1b[32m, line {line}\x1b[39m\n{body}", final]


def _cell(outputs: list[NotebookNode]) -> NotebookNode:
    cell = new_code_cell(TEST_CELL, metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 2, "locked": True,
                                                           "solution": False, "schema_version": 3}})
    cell.outputs = outputs
    return cell


def _run(cell: NotebookNode) -> NotebookNode:
    out, _ = HideHiddenTests().preprocess_cell(cell, {}, 0)
    return out


def test_hidden_line_numbers_include_the_markers():
    assert hidden_line_numbers(TEST_CELL) == {2, 3, 4}
    assert hidden_line_numbers("a = 1") == set()


def test_a_visible_failure_keeps_its_message_but_not_the_quoted_hidden_lines():
    quoted = [(n, line) for n, line in enumerate(TEST_CELL.split("\n"), start=1)]
    error = new_output("error", ename="AssertionError", evalue="double(2) should be 4",
                       traceback=_traceback(1, quoted, "AssertionError: double(2) should be 4"))
    cell = _run(_cell([error]))
    text = "\n".join(cell.outputs[0].traceback)
    assert "double(2) should be 4" in text
    assert "double(5)" not in text and "HIDDEN TESTS" not in text
    assert cell.source == TEST_CELL.split("\n")[0]


def test_a_hidden_failure_is_replaced_by_a_generic_error():
    error = new_output("error", ename="AssertionError", evalue="hidden check of double(5)",
                       traceback=_traceback(3, [(3, 'assert double(5) == 10, "hidden check of double(5)"')],
                                            "AssertionError: hidden check of double(5)"))
    cell = _run(_cell([error]))
    out = cell.outputs[0]
    assert out.ename == "AssertionError" and out.evalue == HIDDEN_FAILURE
    assert "double(5)" not in "\n".join(out.traceback)


def test_stream_lines_that_quote_hidden_code_are_dropped():
    stream = new_output("stream", name="stdout", text='ok\nassert double(5) == 10, "hidden check of double(5)"\n')
    assert _run(_cell([stream])).outputs[0].text == "ok\n"


def test_cells_without_hidden_tests_are_untouched():
    cell = new_code_cell("x = 1")
    cell.outputs = [new_output("stream", name="stdout", text="1\n")]
    assert _run(cell) == cell


def _source_notebook() -> NotebookNode:
    nb = new_notebook()
    nb.cells = [
        new_code_cell("import math\n\ndef area(r):\n    ### BEGIN SOLUTION\n    return math.pi * r ** 2\n    ### END SOLUTION",
                      metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "a", "schema_version": 3}}),
        _cell([]),
        new_markdown_cell("Because the ledger version is the authoritative postcondition.",
                          metadata={"nbgrader": {"solution": True, "grade": True, "grade_id": "w", "points": 2, "schema_version": 3}}),
        new_code_cell("print(math.pi * r ** 2)"),  # the same text outside a region is public
    ]
    return nb


def test_secret_lines_are_solutions_hidden_tests_and_model_answers_but_not_public_or_short_lines():
    secrets = secret_lines(_source_notebook())
    assert 'assert double(5) == 10, "hidden check of double(5)"' in secrets
    assert "Because the ledger version is the authoritative postcondition." in secrets
    assert "return math.pi * r ** 2" in secrets
    assert "### BEGIN HIDDEN TESTS" in secrets
    assert "import math" not in secrets  # outside every region
    without_solutions = secret_lines(_source_notebook(), solutions=False)
    assert "return math.pi * r ** 2" not in without_solutions
    assert "Because the ledger version is the authoritative postcondition." not in without_solutions
    assert 'assert double(5) == 10, "hidden check of double(5)"' in without_solutions


def test_find_leaks_reads_notebooks_and_html(tmp_path):
    secrets = secret_lines(_source_notebook())
    clean = new_notebook(cells=[new_code_cell("def area(r):\n    # YOUR CODE HERE\n    raise NotImplementedError()")])
    nbformat.write(clean, tmp_path / "clean.ipynb")
    leaky = new_notebook(cells=[new_code_cell("def area(r):\n    return math.pi * r ** 2")])
    nbformat.write(leaky, tmp_path / "leaky.ipynb")
    (tmp_path / "feedback.html").write_text('<pre><span class="k">assert</span> double(5) == 10, '
                                            '<span>&quot;hidden check of double(5)&quot;</span></pre>')
    assert find_leaks([tmp_path / "clean.ipynb"], secrets) == []
    assert [leak.text for leak in find_leaks([tmp_path / "leaky.ipynb"], secrets)] == ["return math.pi * r ** 2"]
    assert [leak.text for leak in find_leaks([tmp_path / "feedback.html"], secrets)] == ['assert double(5) == 10, "hidden check of double(5)"']


def test_generic_lines_are_not_secrets_and_solution_lines_are_public_in_feedback_mode():
    cell = new_code_cell("def f(x):\n    ### BEGIN SOLUTION\n    if x:\n        return False\n    return sorted(x, key=len)\n    ### END SOLUTION\n"
                         "### BEGIN HIDDEN TESTS\nfor y in []:\n    continue\nassert f([]) == sorted([], key=len)\n### END HIDDEN TESTS",
                         metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "f", "schema_version": 3}})
    nb = new_notebook(cells=[cell])
    hidden = {"### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS", "for y in []:", "assert f([]) == sorted([], key=len)"}
    assert secret_lines(nb) == hidden | {"return sorted(x, key=len)"}  # not "return False", not "continue"
    assert secret_lines(nb, solutions=False) == hidden
