"""The trusted judge: verdicts from a probe's outputs, words a student may read, forbidden names on the syntax tree."""

from __future__ import annotations

import pytest

from mcplab.course.checks import CheckError, collect
from mcplab.course.judge import forbidden_names, judge

REGION = '''### BEGIN HIDDEN TESTS
from mcplab.course.checks import expect, forbid
expect("double", 2, want=4, case="case-two", rule="double the number", about="a small int")
expect("double", 3, want=lambda got: got == 6, case="case-three", rule="double the number", about="another int")
expect("keep", [1], want=[1], case="case-keep", rule="return the list unchanged", about="a list", unchanged=True)
forbid("double_answer", "select_era", reason="write the rule yourself")
### END HIDDEN TESTS'''


@pytest.fixture
def checks():
    return collect("demo_tests", "visible = 1\n" + REGION)


def ok(value, **extra):
    return {"ok": True, "value": value, **extra}


def test_collect_records_inputs_only_and_caches(checks):
    assert [c.plan() for c in checks.calls] == [{"fn": "double", "args": [2]}, {"fn": "double", "args": [3]}, {"fn": "keep", "args": [[1]]}]
    assert collect("demo_tests", "visible = 1\n" + REGION) is checks


def test_all_right_passes(checks):
    verdict = judge(checks, [ok(4), ok(6), ok([1])], [("double_answer", "def double(x):\n    return 2 * x\n")])
    assert verdict.passed and verdict.summary == "sealed checks passed: 3 of 3"


def test_a_wrong_value_names_the_case_rule_and_input_kind_never_the_values(checks):
    verdict = judge(checks, [ok(5), ok(6), ok([1])], [])
    assert not verdict.passed and verdict.summary == "1 of 3 sealed checks failed"
    assert verdict.failures == ["case-two: double the number (input: a small int; your function returned a different answer)"]
    assert "4" not in verdict.failures[0] and "5" not in verdict.failures[0]


@pytest.mark.parametrize("results, why", [
    (None, "the probe did not run"),
    ([ok(4), ok(6)], "the probe did not run"),  # truncated
    ([{"ok": False, "error": "TypeError"}, ok(6), ok([1])], "raised TypeError"),
    ([ok(4), ok(6), ok([1], changedArgs=True)], "changed the input"),
    ([ok(4), ok("six"), ok([1])], "different answer"),  # a predicate that cannot read the value fails it
    ([ok(4), None, ok([1])], "the probe did not run"),  # a result that could not be decoded
])
def test_missing_malformed_raised_or_mutating_outputs_fail(checks, results, why):
    verdict = judge(checks, results, [])
    assert not verdict.passed and any(why in line for line in verdict.failures)


@pytest.mark.parametrize("source, found", [
    ("def f(m, a, o, e):\n    return select_era(o, m, a, e)['era'] == 'legacy'", ["select_era"]),
    ("import mcplab\ndef f():\n    return mcplab.select_era", ["select_era"]),
    ("from mcplab import select_era as s\n", ["select_era"]),
    ("from mcplab import *\n", ["*"]),
    ("f = getattr(__import__('mcplab'), 'select_era')", ["select_era"]),
    ("%time x = select_era(1)\n", ["select_era"]),
    ("!echo hi\nx = 1", []),
    ("def f():\n    return 'select era'", []),
])
def test_forbidden_names_on_the_syntax_tree(source, found):
    assert forbidden_names(source, ["select_era"]) == found


def test_unparsable_answers_cannot_pass_a_forbid_rule(checks):
    assert forbidden_names("def f(:\n", ["x"]) is None
    verdict = judge(checks, [ok(4), ok(6), ok([1])], [("double_answer", "def double(:\n")])
    assert not verdict.passed and "not valid Python" in verdict.summary


def test_forbidden_use_gives_zero_with_the_reason(checks):
    verdict = judge(checks, [ok(4), ok(6), ok([1])], [("double_answer", "from mcplab import select_era\n")])
    assert not verdict.passed and verdict.summary.startswith("0 points") and "write the rule yourself" in verdict.summary


@pytest.mark.parametrize("region, message", [
    ("x = 1", "declares no expect"),
    ("raise RuntimeError('boom')", "raised RuntimeError"),
    ("from mcplab.course.checks import expect\nexpect(len, 1, want=1, case='c', rule='r', about='a')", "name as a string"),
    ("from mcplab.course.checks import expect\nexpect('f', 1, want=1, case='', rule='r', about='a')", "non-empty case"),
])
def test_a_broken_hidden_region_is_an_instructor_error(region, message):
    with pytest.raises(CheckError, match=message):
        collect("broken", f"### BEGIN HIDDEN TESTS\n{region}\n### END HIDDEN TESTS")


def test_outside_the_grader_expect_checks_the_notebook_at_once():
    import __main__
    from mcplab.course.checks import expect

    __main__.triple = lambda x: 3 * x
    try:
        expect("triple", 2, want=6, case="c", rule="triple it", about="an int")
        with pytest.raises(AssertionError, match="c: triple it"):
            expect("triple", 2, want=7, case="c", rule="triple it", about="an int")
    finally:
        del __main__.triple


@pytest.mark.parametrize("source, names, found", [
    ("def may_use_legacy(a):\n    return a", {"may_use_legacy"}, True),
    ("may_use_legacy = lambda a: a", {"may_use_legacy"}, True),
    ("from helpers import rule as may_use_legacy", {"may_use_legacy"}, True),
    ("print(may_use_legacy(1))", {"may_use_legacy"}, False),
    ("def f(:", {"f"}, False),
])
def test_cells_that_define_the_exercise_function_are_found(source, names, found):
    from mcplab.course.judge import defines

    assert defines(source, names) is found


def test_the_code_an_answer_reaches_through_names_is_checked_and_only_that():
    from mcplab.course.judge import reached_code

    cells = [("cell 5", "import json\nfrom mcplab import (CASES, select_era)\n"),
             ("cell 9", "def _decide(*a):\n    return select_era(*a)\n"),
             ("cell 10", "if True:\n    def _other(x):\n        return _decide(x)\n"),
             ("cell 11", "print(select_era)  # reached by nothing")]
    cheat = "def may_use_legacy(m, l, o, e):\n    return _other(o)['era'] == 'legacy'"
    reached = dict(reached_code(cells, [cheat], {"may_use_legacy"}))
    assert set(reached) == {"cell 5", "cell 9", "cell 10"} and "select_era" in reached["cell 9"]
    honest = "def may_use_legacy(m, l, o, e):\n    return json.dumps(CASES) == ''"
    assert reached_code(cells, [honest], {"may_use_legacy"}) == [("cell 5", "import json\nfrom mcplab import CASES")]
    assert reached_code([("cell 1", "def (")], [honest], {"may_use_legacy"}) == []  # not Python: nothing reached
