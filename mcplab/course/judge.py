"""The trusted judge: a probe's outputs against the expected values, and the answer's syntax tree.

Runs in the grading process, never in the sandbox. :func:`judge` takes the :class:`CheckSet` of
a graded cell (expected values computed here, from the trusted source) and the probe's outputs
(untrusted data read from the sandbox, already decoded) and returns a :class:`Verdict`: passed,
or the first failing invariant in words a student may read (case name, one-line rule, kind of
input), never the input or the expected value. :func:`forbidden_names` finds forbidden function
names in an answer's source with :mod:`ast`, after IPython's own syntax (magics, ``!``) is
turned into Python by IPython's transformer (text only, nothing is executed).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .checks import CheckSet, Forbidden
from .values import same

__all__ = ["Verdict", "defines", "forbidden_names", "judge"]


@dataclass
class Verdict:
    """The trusted outcome of one graded cell."""

    passed: bool
    summary: str
    failures: list[str] = field(default_factory=list)


def _python_text(source: str) -> str:
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - fall back to the raw text; unparsable text is reported below
        return source


def forbidden_names(source: str, names: tuple[str, ...] | list[str]) -> list[str] | None:
    """The forbidden ``names`` that ``source`` mentions, or None if it is not Python.

    A mention is a name, an attribute, an import, or a word in a string handed to a call
    (``getattr(m, "name")``, ``exec("name(...)")``, an IPython magic line). Docstrings and comments
    do not count. Names built at run time (``"sel" + "ect_era"``) are not caught: this rule
    catches the plain form; copying the library's rule some other way is plagiarism.
    """
    try:
        tree = ast.parse(_python_text(source))
    except (SyntaxError, ValueError):
        return None
    wanted, found = set(names), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in wanted:
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in wanted:
            found.add(node.attr)
        elif isinstance(node, ast.alias) and (node.name.rsplit(".", 1)[-1] in wanted or node.name == "*"):
            found.add(node.name.rsplit(".", 1)[-1] if node.name != "*" else "*")
        elif isinstance(node, ast.Call):  # getattr(m, "name"), exec("name(...)"), a magic line's text
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.update(name for name in wanted if re.search(rf"\b{re.escape(name)}\b", arg.value))
    return sorted(found)


def defines(source: str, names: set[str]) -> bool:
    """Whether ``source`` defines (def, class, assignment or import) one of ``names`` at any level."""
    try:
        tree = ast.parse(_python_text(source))
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in names:
            return True
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) in names:
            return True
    return False


def _loaded(node: ast.AST) -> set[str]:
    """The names ``node`` reads and does not bind itself (parameters and locals are not the notebook's)."""
    bound: set[str] = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
            bound.add(inner.id)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(inner.name)
        elif isinstance(inner, ast.alias):
            bound.add(inner.asname or inner.name.split(".")[0])
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def _binds(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` (a statement that is not an import) binds one of ``names`` anywhere inside it."""
    for inner in ast.walk(node):
        if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner.name in names:
            return True
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store) and inner.id in names:
            return True
        if isinstance(inner, ast.alias) and (inner.asname or inner.name.split(".")[0]) in names:
            return True
    return False


def reached_code(cells: list[tuple[str, str]], answers: list[str], functions: set[str]) -> list[tuple[str, str]]:
    """What of ``cells`` (label, source) the ``answers`` reach through names, as (label, code) to check.

    Start from the exercise ``functions`` and every name the answers load; take each top-level
    statement of a cell that binds one of them (a helper ``def``, an assignment, a statement that
    hides a definition inside it), then the names those load, until nothing new is reached. Of an
    import only the reached names count: the lab's own setup cell imports many names, and an
    answer that uses ``json`` does not make its other imports the student's.
    """
    parsed = [(label, tree.body) for label, source in cells if (tree := _tree(source)) is not None]
    names = set(functions).union(*(_loaded(tree) for a in answers if (tree := _tree(a)) is not None))
    taken: dict[tuple[int, int], tuple[str, str]] = {}  # (cell, statement) -> (label, code)
    grew = True
    while grew:
        grew = False
        for position, (label, body) in enumerate(parsed):
            for index, stmt in enumerate(body):
                if (position, index) in taken:
                    continue
                if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    reached = [a for a in stmt.names if (a.asname or a.name.split(".")[0]) in names]
                    if not reached:
                        continue
                    stmt = type(stmt)(**{**{f: getattr(stmt, f) for f in stmt._fields}, "names": reached})
                elif not _binds(stmt, names):
                    continue
                taken[(position, index)] = (label, ast.unparse(stmt))
                grew = grew or bool(_loaded(stmt) - names)
                names |= _loaded(stmt)
    out: dict[str, list[str]] = {}
    for _where, (label, code) in sorted(taken.items()):
        out.setdefault(label, []).append(code)
    return [(label, "\n".join(codes)) for label, codes in out.items()]


def _tree(source: str) -> ast.Module | None:
    try:
        return ast.parse(_python_text(source))
    except (SyntaxError, ValueError):
        return None


def _check_forbidden(rule: Forbidden, sources: list[tuple[str, str]]) -> str | None:
    for label, source in sources:
        found = forbidden_names(source, rule.names)
        if found is None:
            if label == rule.answer_id:
                return f"the answer cell {rule.answer_id} is not valid Python, so the rule '{rule.reason}' cannot be checked"
            continue
        found = [n for n in found if n != "*"] or (["*"] if "*" in found else [])
        if found:
            what = "a star import (which brings in " + ", ".join(rule.names) + ")" if found == ["*"] else ", ".join(found)
            where = f"the answer cell {rule.answer_id}" if label == rule.answer_id else f"a cell you added or edited ({label})"
            return f"{where} uses {what}: {rule.reason}"
    return None


def _fails(expectation: Any, result: dict[str, Any] | None) -> str | None:
    """Why one result does not meet its expectation (None when it does)."""
    if result is None:
        return "your function was not called: the probe did not run (an earlier error, a time-out or a dead kernel)"
    if not result.get("ok"):
        return f"your function raised {str(result.get('error', 'an exception'))[:60]}"
    if expectation.unchanged and result.get("changedArgs"):
        return "your function changed the input it was given"
    got, want = result.get("value"), expectation.want
    try:
        good = bool(want(got)) if callable(want) else same(got, want)
    except Exception:  # noqa: BLE001 - a predicate that cannot read the output means the output is wrong
        good = False
    if good:
        return None
    return "your function returned None (is a return missing?)" if got is None else "your function returned a different answer"


def judge(checks: CheckSet, results: list[dict[str, Any]] | None, answers: list[tuple[str, str]] | None = None) -> Verdict:
    """Judge one graded cell: ``results`` are the probe's outputs (decoded), ``answers`` (label, source) pairs.

    ``answers`` lists the student's answer cells by grade id and any code cell they added or
    edited (labelled ``cell N``); forbidden names are looked for there.
    """
    for rule in checks.forbidden:
        broken = _check_forbidden(rule, answers or [])
        if broken:
            return Verdict(False, f"0 points: {broken}", [broken])
    if results is not None and len(results) != len(checks.calls):
        results = None
    failures: Counter[tuple[str, str, str, str]] = Counter()
    for expectation in checks.expectations:
        result = None if results is None else results[expectation.call]
        why = _fails(expectation, result if isinstance(result, dict) else None)
        if why:
            failures[(expectation.case, expectation.rule, expectation.about, why)] += 1
    total = len(checks.expectations)
    if not failures:
        return Verdict(True, f"sealed checks passed: {total} of {total}")
    lines = []
    for (case, rule, about, why), count in failures.items():
        lines.append(f"{case}: {rule} (input: {about}; {why}{'' if count == 1 else f'; {count} inputs'})")
    failed = sum(failures.values())
    return Verdict(False, f"{failed} of {total} sealed checks failed", lines)
