"""The student's seat: where am I in this lab, tables that wait for an answer, and a real server.

Design: the kernel knows what the student's functions do, the notebook file knows which cells are
checks and what they are worth, so :func:`where_am_i` joins the two on demand (a Refresh button):
it runs each check cell's *visible* code on a copy of the kernel's namespace, never a hidden check,
and counts visible checks only. :func:`needs_answer` lets a display cell that calls an exercise say
"this table needs your answer" instead of raising, so the first failure of Run All is always the
check of an exercise. :func:`on_reference_server` runs ``mcplab check`` against the reference server.
"""

from __future__ import annotations

import contextlib
import html
import io
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["Exercise", "WhereAmI", "needs_answer", "on_reference_server", "where_am_i"]

#: What nbgrader leaves in a written-answer cell of the release.
UNANSWERED_TEXT = "YOUR ANSWER HERE"
_DEF = re.compile(r"^def\s+(\w+)\s*\(", re.MULTILINE)


def _namespace() -> dict[str, Any]:
    """The student's namespace: the IPython kernel's user namespace, else ``__main__``'s."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:  # pragma: no cover - IPython is a dependency of the course
        shell = None
    return shell.user_ns if shell is not None else vars(sys.modules["__main__"])


def _raised_in(tb: TracebackType | None, names: Sequence[str], namespace: dict[str, Any]) -> str | None:
    """The name of the student's function (one of ``names``) that a traceback passes through, if any."""
    codes = {getattr(namespace.get(n), "__code__", None): n for n in names}
    codes.pop(None, None)
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return codes[tb.tb_frame.f_code]
        tb = tb.tb_next
    return None


class needs_answer(contextlib.AbstractContextManager):  # noqa: N801 - used as a statement: ``with needs_answer(...)``
    """``with needs_answer("Exercise 1", "classify_sdk_observation"): ...`` around a display cell's code.

    When the named function is not answered yet (it raises ``NotImplementedError``) the block stops
    and one line says the table needs that answer; when the student's function raises anything
    else, one line names the error and points to the exercise's check, which shows what was
    expected. An error that does not come from the named functions is raised as usual. Either way
    the first *failure* a student meets is the check of the exercise, with its message.
    """

    def __init__(self, exercise: str, *functions: str) -> None:
        if not functions:
            raise TypeError("needs_answer(exercise, 'function_name', ...) needs at least one function name")
        self.exercise, self.functions = exercise, functions
        #: The line shown when the block stopped (``None`` when it ran to the end).
        self.missing: str | None = None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        name = _raised_in(tb, self.functions, _namespace())
        if name is None and isinstance(exc, NameError) and getattr(exc, "name", None) in self.functions:
            self.missing = (f"This cell needs your answer to {self.exercise}: `{exc.name}` is not defined yet. "
                            f"Run the cell of {self.exercise}, then this one again.")
        elif name is None:
            return False
        elif isinstance(exc, NotImplementedError):
            self.missing = (f"This cell needs your answer to {self.exercise}: `{name}` is not answered yet. "
                            "Run this cell again once it is.")
        else:
            first = str(exc).splitlines()[0] if str(exc) else ""
            self.missing = (f"This cell needs a working answer to {self.exercise}: your `{name}` raised "
                            f"{type(exc).__name__}{': ' + first if first else ''}. The check of {self.exercise} "
                            "says what was expected; run this cell again after you fix it.")
        print(self.missing)
        return True


# --------------------------------------------------------------------------------------------
# where am I
# --------------------------------------------------------------------------------------------
@dataclass
class Exercise:
    """One graded part of a lab as the notebook file declares it, and its state in the kernel."""

    title: str
    kind: str  # "autograded" or "written"
    points: float
    function: str | None = None
    checks: list[str] = field(default_factory=list)  # the visible code of its check cells
    status: str = "not run yet"
    detail: str = ""
    passed: bool = False


def _title(markdown: str, fallback: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("#"):
            return re.sub(r"\s*\(\d+ points?\)\s*$", "", line.lstrip("#").strip())
    return fallback


def _visible(source: str) -> str:
    from .checks import hidden_line_numbers  # not .hidden: that one loads nbgrader

    hidden = hidden_line_numbers(source)
    return "\n".join(line for n, line in enumerate(source.split("\n"), start=1) if n not in hidden)


def read_exercises(notebook: Path) -> list[Exercise]:
    """The lab's exercises and written answers, in order, from the nbgrader metadata of its cells."""
    from .._schema import jsonschema

    jsonschema()  # nbformat imports jsonschema: this way without the second-long IRI grammar compile
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    heading, out = "", []
    current: Exercise | None = None
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and not meta.get("solution"):
            heading = _title(cell.source, heading)
        elif cell.cell_type == "markdown" and meta.get("grade"):
            answered = cell.source.strip() not in ("", UNANSWERED_TEXT)
            out.append(Exercise(heading or "Written answer", "written", float(meta.get("points", 0)),
                                status="written (as last saved)" if answered else "not written yet (as last saved)",
                                detail="graded by hand"))
        elif cell.cell_type == "code" and meta.get("solution"):
            found = _DEF.search(cell.source)
            current = Exercise(heading or meta.get("grade_id", "exercise"), "autograded", 0.0,
                               function=found.group(1) if found else None)
            out.append(current)
        elif cell.cell_type == "code" and meta.get("grade") and current is not None:
            current.points += float(meta.get("points", 0))
            current.checks.append(_visible(cell.source))
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _judge(exercise: Exercise, namespace: dict[str, Any]) -> None:
    """Run the visible checks of one exercise on a copy of the namespace and record what they said."""
    exercise.passed = False
    if exercise.function and exercise.function not in namespace:
        exercise.status, exercise.detail = "not run yet", f"run the cells above it, then the cell that defines {exercise.function}"
        return
    for code in exercise.checks:
        scratch = dict(namespace)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(code, f"<visible checks of {exercise.function}>", "exec"), scratch)  # noqa: S102 - the lab's own check cell
        except NotImplementedError:
            exercise.status, exercise.detail = "not answered", "replace `raise NotImplementedError()` with your code"
            return
        except NameError as exc:
            exercise.status, exercise.detail = "not run yet", f"run the cells above its check first ({_first_line(exc)})"
            return
        except AssertionError as exc:
            exercise.status, exercise.detail = "visible check fails", _first_line(exc).removeprefix("AssertionError: ")
            return
        except Exception as exc:  # noqa: BLE001 - whatever the student's code raises is the answer to show
            exercise.status, exercise.detail = "visible check raises", _first_line(exc)
            return
    exercise.status, exercise.detail, exercise.passed = "visible checks pass", "hidden checks run when it is graded", True


def _find_notebook(lab: str | os.PathLike[str]) -> Path | None:
    given = Path(lab)
    if given.suffix == ".ipynb" and given.is_file():
        return given
    session = os.environ.get("JPY_SESSION_NAME", "")
    if session.endswith(".ipynb") and Path(session).is_file():
        return Path(session)
    named = Path.cwd() / f"{given.stem}.ipynb"
    return named if named.is_file() else None


class WhereAmI:
    """Where a student stands in a lab: exercises answered, visible checks passing, points so far.

    ``where_am_i("lab_c_sdk_diff")`` at the top of a lab shows it with a Refresh button; the
    numbers are computed again on each click (or :meth:`refresh`). Points count visible checks
    only: the grade comes from the hidden checks as well, and the written answers are graded by hand.
    """

    def __init__(self, lab: str | os.PathLike[str]) -> None:
        self.lab = str(lab)
        self.notebook = _find_notebook(lab)
        self.exercises: list[Exercise] = []
        self.problem: str | None = None
        self._widget: Any = None
        self.refresh()

    def refresh(self) -> WhereAmI:
        """Read the notebook file again and run every exercise's visible checks in the kernel."""
        self.notebook = _find_notebook(self.lab) if self.notebook is None else self.notebook
        if self.notebook is None:
            name = f"{Path(self.lab).stem}.ipynb"
            self.problem = (f"Where am I reads the saved notebook {name}, and the kernel does not see it in {Path.cwd()}: "
                            f"open the lab in JupyterLab from its own folder, or pass its path: where_am_i('path/to/{name}')")
            self.exercises = []
        else:
            self.problem = None
            self.exercises = read_exercises(self.notebook)
            namespace = _namespace()
            for exercise in self.exercises:
                if exercise.kind == "autograded":
                    _judge(exercise, namespace)
        if self._widget is not None:
            self._widget.children[1].value = self.to_html()
        return self

    @property
    def points(self) -> tuple[float, float]:
        """(points of the exercises whose visible checks pass, points of all autograded exercises)."""
        auto = [e for e in self.exercises if e.kind == "autograded"]
        return float(sum(e.points for e in auto if e.passed)), float(sum(e.points for e in auto))

    def summary(self) -> str:
        if self.problem:
            return self.problem
        got, total = self.points
        written = sum(e.points for e in self.exercises if e.kind == "written")
        return (f"{got:g} of {total:g} autograded points from visible checks only (the grader adds hidden checks); "
                f"{written:g} more for written answers, graded by hand")

    def rows(self) -> list[dict[str, str]]:
        return [{"part": e.title + (f" ({e.function})" if e.function else ""), "points": f"{e.points:g}",
                 "state": e.status, "detail": e.detail} for e in self.exercises]

    def __str__(self) -> str:
        lines = [f"Where am I in {Path(self.lab).stem}"]
        lines += [f"- {r['part']} [{r['points']} pts]: {r['state']}" + (f" ({r['detail']})" if r["detail"] else "")
                  for r in self.rows()]
        return "\n".join([*lines, self.summary()])

    def to_html(self) -> str:
        cells = "".join(
            "<tr>" + "".join(f'<td style="text-align:left; vertical-align:top">{html.escape(r[k])}</td>'
                             for k in ("part", "points", "state", "detail")) + "</tr>" for r in self.rows())
        head = "".join(f'<th style="text-align:left">{k}</th>' for k in ("part", "points", "state", "detail"))
        table = f'<table class="mcplab-progress-table"><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>' if cells else ""
        return f"<b>Where am I</b>{table}<p>{html.escape(self.summary())}</p>"

    @property
    def widget(self) -> Any:
        """A Refresh button over the table (ipywidgets)."""
        if self._widget is None:
            import ipywidgets as widgets

            button = widgets.Button(description="Refresh", icon="refresh", tooltip="run the visible checks again",
                                    layout=widgets.Layout(width="auto", align_self="flex-start"))
            button.add_class("mcplab-progress-refresh")
            view = widgets.HTML(self.to_html())
            self._widget = widgets.VBox([button, view])
            self._widget.add_class("mcplab-progress")

            def clicked(_button: Any) -> None:
                view.value = "<b>Where am I</b><p>running the visible checks ...</p>"
                try:
                    self.refresh()
                except Exception as exc:  # noqa: BLE001 - a button never raises: say what went wrong
                    view.value = f"<b>Where am I</b><p>could not refresh: {html.escape(_first_line(exc))}</p>"

            button.on_click(clicked)
        return self._widget

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        return {**bundle, "text/plain": str(self)}


def where_am_i(lab: str | os.PathLike[str]) -> WhereAmI:
    """Where the student stands in ``lab`` (its name, or the notebook's path): see :class:`WhereAmI`."""
    return WhereAmI(lab)


# --------------------------------------------------------------------------------------------
# try it on a real server
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _served(egress: Any) -> Iterator[tuple[str, str | None]]:
    from ..live import serve_proxy
    from ..reference import serve_reference

    with serve_reference() as reference:
        if egress is None:
            yield reference.url, None
        else:
            with serve_proxy(reference.url, egress=egress) as proxy:
                yield reference.url, proxy.url


def on_reference_server(*cases: str, egress: Any = None) -> None:
    """Start the reference server on loopback, run ``mcplab check --url URL --case ...`` on it, print it all.

    ``egress`` (a lab D ``repair_egress``-style function) also puts the recording proxy with that
    egress in front and adds ``--via``. The last line explains the exit code (0: every case passed).
    """
    from ..cli import main

    if os.environ.get("NBGRADER_EXECUTION") == "autograde":  # ungraded, and a server per submission would cost seconds
        print("(skipped while grading: this cell is for you to run in JupyterLab)")
        return
    with _served(egress) as (url, via):
        argv = ["check", "--url", url, *(["--via", via] if via else [])]
        for case in cases:
            argv += ["--case", case]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    print("$ mcplab " + " ".join(argv))
    print(out.getvalue().rstrip())
    if err.getvalue().strip():
        print(err.getvalue().rstrip())
    print(f"exit code {code}: " + {0: "every case passed", 1: "a case failed (see the table)"}.get(code, "the check could not run"))
