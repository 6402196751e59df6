"""Sealed checks: what an exercise's hidden tests are, written for the trusted judge.

The hidden region of a graded test cell (between ``### BEGIN HIDDEN TESTS`` and ``### END
HIDDEN TESTS`` in ``graders/source``) is not run in the student's kernel any more. The trusted
grader runs it, alone, in a fresh namespace with these names, and it *declares* checks::

    ### BEGIN HIDDEN TESTS
    from mcplab import select_era
    for obs in [{"kind": "timeout"}, {"kind": "jsonrpc_error", "code": -32021}]:
        decision = select_era(obs, "strict")
        expect("classify_probe", obs, want="modern" if decision["era"] == "modern" else "no-evidence",
               case=decision["case"], rule="only a recognised modern error or discover proves modern",
               about=f"a {obs['kind']} observation")
    forbid("may_use_legacy", "select_era", reason="the exercise asks for the rule, not a call of the library's")
    ### END HIDDEN TESTS

``expect(fn, *args, want=..., case=, rule=, about=, unchanged=False, **kwargs)`` records one call
of the student's function ``fn`` (by name) on JSON-able inputs, and what its output must be:
a value (compared by :func:`mcplab.course.values.same`) or a predicate ``want=lambda got: ...``.
``case`` is the invariant's case name, ``rule`` one line a student may read, ``about`` the kind
of input (never the input itself). ``unchanged=True`` also fails a function that changed its
arguments. ``forbid(answer_id, *names, reason=)`` gives 0 for the exercise when the answer cell
``answer_id`` (or a cell the student added or edited) names a forbidden function.

Only the inputs travel into the sandbox; expected values and predicates stay here.
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .values import encode, same

__all__ = ["Call", "CheckError", "CheckSet", "Expectation", "Forbidden", "collect", "expect", "forbid", "hidden_region",
           "hidden_line_numbers"]

BEGIN_HIDDEN, END_HIDDEN = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


class CheckError(Exception):
    """A hidden region that does not declare usable checks (an instructor's mistake, named)."""


@dataclass(frozen=True)
class Call:
    """One call of a student's function, as it travels into the sandbox."""

    fn: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...]

    def plan(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fn": self.fn, "args": [encode(a) for a in self.args]}
        if self.kwargs:
            out["kwargs"] = {k: encode(v) for k, v in self.kwargs}
        return out


@dataclass
class Expectation:
    """What one call must return (a value or a predicate), and the words a failure shows."""

    call: int
    want: Any
    case: str
    rule: str
    about: str
    unchanged: bool = False


@dataclass(frozen=True)
class Forbidden:
    """Names an answer cell must not use."""

    answer_id: str
    names: tuple[str, ...]
    reason: str


@dataclass
class CheckSet:
    """The checks of one graded cell: distinct calls, expectations on them, forbidden names."""

    grade_id: str
    calls: list[Call] = field(default_factory=list)
    expectations: list[Expectation] = field(default_factory=list)
    forbidden: list[Forbidden] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def expect(self, fn: str, *args: Any, want: Any, case: str, rule: str, about: str, unchanged: bool = False,
               **kwargs: Any) -> None:
        if not isinstance(fn, str) or not fn.isidentifier():
            raise CheckError(f"{self.grade_id}: expect() needs the function's name as a string, got {fn!r}")
        for label, text in (("case", case), ("rule", rule), ("about", about)):
            if not isinstance(text, str) or not text.strip():
                raise CheckError(f"{self.grade_id}: expect({fn!r}, ...) needs a non-empty {label}")
        call = Call(fn, tuple(args), tuple(sorted(kwargs.items())))
        key = repr(call.plan())
        if key not in self._index:
            self._index[key] = len(self.calls)
            self.calls.append(call)
        self.expectations.append(Expectation(self._index[key], want, case, rule, about, unchanged))

    def forbid(self, answer_id: str, *names: str, reason: str) -> None:
        if not names or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise CheckError(f"{self.grade_id}: forbid({answer_id!r}, ...) needs function names")
        self.forbidden.append(Forbidden(answer_id, tuple(names), reason))

    def plan(self) -> list[dict[str, Any]]:
        """The calls as the probe receives them (inputs only)."""
        return [call.plan() for call in self.calls]


def hidden_region(source: str) -> str:
    """The lines between the hidden-test markers of a cell (empty when it has none)."""
    lines, inside, out = source.split("\n"), False, []
    for line in lines:
        if END_HIDDEN in line:
            inside = False
            continue
        if inside:
            out.append(line)
        if BEGIN_HIDDEN in line:
            inside = True
    return "\n".join(out)


def hidden_line_numbers(source: str, begin: str = BEGIN_HIDDEN, end: str = END_HIDDEN) -> set[int]:
    """1-based numbers of the lines of ``source`` inside a ``begin``/``end`` region, markers included."""
    inside, numbers = False, set()
    for number, line in enumerate(source.split("\n"), start=1):
        if begin in line:
            inside = True
        if inside:
            numbers.add(number)
        if end in line:
            inside = False
    return numbers


_CACHE: dict[tuple[str, str], CheckSet] = {}
_ACTIVE: contextvars.ContextVar[CheckSet | None] = contextvars.ContextVar("mcplab_sealed_checks", default=None)


def _student_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover
        shell = None
    return shell.user_ns if shell is not None else vars(sys.modules["__main__"])


def expect(fn: str, *args: Any, want: Any, case: str, rule: str, about: str, unchanged: bool = False, **kwargs: Any) -> None:
    """Declare one check (in the trusted grader), or run it at once (in the instructor's own notebook).

    Under :func:`collect` the call is recorded for the sealed judge. Anywhere else (the source
    notebook run top to bottom by the instructor or by nbval) the function ``fn`` of the
    notebook is called on a copy of the inputs and a mismatch raises ``AssertionError`` with
    the words a student would read: the solution is checked against its own sealed checks.
    """
    active = _ACTIVE.get()
    if active is not None:
        active.expect(fn, *args, want=want, case=case, rule=rule, about=about, unchanged=unchanged, **kwargs)
        return
    given = copy.deepcopy((args, kwargs))
    got = _student_namespace()[fn](*given[0], **given[1])
    good = bool(want(got)) if callable(want) else same(got, want)
    assert good, f"{case}: {rule} (input: {about}; got {got!r})"
    if unchanged:
        assert given == (args, kwargs), f"{case}: {fn} changed the input it was given ({about})"


def forbid(answer_id: str, *names: str, reason: str) -> None:
    """Declare forbidden names for an answer cell (checked by the sealed judge only)."""
    active = _ACTIVE.get()
    if active is not None:
        active.forbid(answer_id, *names, reason=reason)


def collect(grade_id: str, source: str, *, extra: dict[str, Callable[..., Any]] | None = None) -> CheckSet:
    """Run the hidden region of a trusted test cell ``source`` and return the checks it declares.

    The result is cached per process by the region's text: every submission of a lab shares the
    same inputs and expected values, so they are computed once per grading run.
    """
    region = hidden_region(source)
    key = (grade_id, hashlib.sha256(region.encode("utf-8", "surrogatepass")).hexdigest())
    if key in _CACHE:
        return _CACHE[key]
    checks = CheckSet(grade_id)
    namespace: dict[str, Any] = {"__name__": "mcplab_sealed_checks", "expect": expect, "forbid": forbid, **(extra or {})}
    token = _ACTIVE.set(checks)
    try:
        exec(compile(region, f"<hidden checks of {grade_id}>", "exec"), namespace)  # noqa: S102 - trusted course source
    except CheckError:
        raise
    except Exception as exc:
        raise CheckError(f"{grade_id}: its hidden checks raised {type(exc).__name__}: {exc}") from exc
    finally:
        _ACTIVE.reset(token)
    if not checks.expectations:
        raise CheckError(f"{grade_id}: its hidden region declares no expect(...) check, so its points cannot be "
                         "given by the trusted judge (see mcplab.course.checks)")
    _CACHE[key] = checks
    return checks
