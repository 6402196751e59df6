"""What students must never see: solution regions, hidden tests and model answers.

nbgrader removes solutions and hidden tests from the release, but its feedback renders the
*autograded* notebook, hidden tests included, and an IPython traceback quotes the lines around the
failing one: a failed visible assert shows the hidden asserts under it. :class:`HideHiddenTests`
(a ``GenerateFeedback`` preprocessor installed by ``graders/nbgrader_config.py``) removes the
hidden region from each cell, drops quoted hidden lines from tracebacks, and replaces an error
raised *inside* the hidden region by a generic one. :func:`secret_lines` and :func:`find_leaks`
are the check the tests run over ``labs/`` and generated feedback.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor

__all__ = [
    "BEGIN_SOLUTION",
    "END_SOLUTION",
    "HIDDEN_FAILURE",
    "HideHiddenTests",
    "Leak",
    "feedback_preprocessors",
    "find_leaks",
    "hidden_line_numbers",
    "secret_lines",
    "visible_text",
]

from .checks import BEGIN_HIDDEN as _BEGIN_HIDDEN
from .checks import END_HIDDEN as _END_HIDDEN
from .checks import hidden_line_numbers  # here too, where the feedback code has always found it

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
#: The text that replaces the message of an error raised by a hidden test.
HIDDEN_FAILURE = "a hidden test in this cell failed (hidden tests are not shown)"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_GUTTER = re.compile(r"^\s*(?:-*>\s*)?\d+\s?")
_CELL_FRAME = re.compile(r"Cell In\[\d+\], line (\d+)")
#: Secret lines shorter than this (``)``, ``else:``) are too common to count as a leak.
MIN_SECRET_CHARS = 8
_WORD = re.compile(r"\w+")
#: An import line names public modules only: never a secret, even inside a hidden region.
_IMPORT = re.compile(r"^(?:import\s+[\w.]+|from\s+[\w.]+\s+import\s)")


def _strip_region(source: str) -> str:
    hidden = hidden_line_numbers(source)
    return "\n".join(line for n, line in enumerate(source.split("\n"), start=1) if n not in hidden)


def _quoted_code(traceback_line: str) -> str:
    """The code an IPython traceback line quotes, without colour codes and the ``---->  3`` gutter."""
    return _GUTTER.sub("", _ANSI.sub("", traceback_line), count=1).strip()


class HideHiddenTests(NbGraderPreprocessor):
    """Remove hidden tests from a notebook about to become feedback, outputs included."""

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int) -> tuple[NotebookNode, Any]:
        hidden = hidden_line_numbers(cell.source)
        if cell.cell_type != "code" or not hidden:
            return cell, resources
        lines = cell.source.split("\n")
        secret = {line.strip() for n, line in enumerate(lines, start=1) if n in hidden and line.strip()}
        outputs = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output = self._error(output, hidden, secret)
            elif output.get("output_type") == "stream":
                output.text = "\n".join(line for line in output.text.split("\n") if line.strip() not in secret)
            outputs.append(output)
        cell.outputs = outputs
        cell.source = _strip_region(cell.source)
        return cell, resources

    @staticmethod
    def _error(output: NotebookNode, hidden: set[int], secret: set[str]) -> NotebookNode:
        text = _ANSI.sub("", "\n".join(output.get("traceback", [])))
        frame = _CELL_FRAME.search(text)
        if frame and int(frame.group(1)) in hidden:
            return NotebookNode(output_type="error", ename=output.get("ename", "Error"), evalue=HIDDEN_FAILURE,
                                traceback=[f"{output.get('ename', 'Error')}: {HIDDEN_FAILURE}"])
        kept = []
        for entry in output.get("traceback", []):
            kept.append("\n".join(line for line in entry.split("\n") if _quoted_code(line) not in secret))
        output.traceback = kept
        return output


def secret_lines(source_notebook: NotebookNode | str | Path, *, solutions: bool = True) -> set[str]:
    """Lines a student must never see: hidden tests, and (``solutions=True``) solution regions and model written answers.

    A line that also appears in the notebook outside those regions (an import, ``return result``)
    is not secret, nor is one too generic to tell anything (shorter than ``MIN_SECRET_CHARS`` or
    fewer than three words: ``continue``, ``return False``; an import line). Feedback on a submission that
    contains the solutions is checked with ``solutions=False``: the student's own answer may show,
    so solution lines then count as public.
    """
    nb = source_notebook if isinstance(source_notebook, NotebookNode) else nbformat.read(str(source_notebook), as_version=4)
    secret, public = set(), set()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution"):
            if solutions:
                secret.update(line.strip() for line in cell.source.split("\n"))
            continue
        hidden = hidden_line_numbers(cell.source)
        solution = hidden_line_numbers(cell.source, BEGIN_SOLUTION, END_SOLUTION)
        for number, line in enumerate(cell.source.split("\n"), start=1):
            if number in hidden or (solutions and number in solution):
                secret.add(line.strip())
            else:
                public.add(line.strip())
    return {line for line in secret - public
            if len(line) >= MIN_SECRET_CHARS and len(_WORD.findall(line)) >= 3 and not _IMPORT.match(line)}


def visible_text(path: Path, *, outputs_only: bool = False) -> str:
    """What a student reads in a notebook or a feedback page: cell sources and outputs (or only outputs), or HTML text."""
    if path.suffix == ".ipynb":
        nb = nbformat.read(str(path), as_version=4)
        parts = []
        for cell in nb.cells:
            if not outputs_only:
                parts.append(cell.source)
            for output in cell.get("outputs", []):
                parts.append(_ANSI.sub("", str(output.get("text", "")) + "\n".join(output.get("traceback", []))))
                parts.extend(str(v) for v in output.get("data", {}).values())
        return "\n".join(parts)
    raw = path.read_text(encoding="utf-8", errors="replace")
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


@dataclass(frozen=True)
class Leak:
    """One secret line (or marker) found in a file a student sees."""

    path: Path
    text: str


def find_leaks(paths: Iterable[Path], secrets: set[str], *, outputs_only: bool = False) -> list[Leak]:
    """Every secret line, and every solution/hidden-test marker, that appears in ``paths`` (notebooks: or their outputs only)."""
    markers = {BEGIN_SOLUTION, END_SOLUTION, _BEGIN_HIDDEN, _END_HIDDEN}
    leaks = []
    for path in paths:
        text = visible_text(path, outputs_only=outputs_only)
        present = {line.strip() for line in text.split("\n")}
        leaks.extend(Leak(path, marker) for marker in sorted(markers) if marker.lstrip("# ") in text)
        leaks.extend(Leak(path, line) for line in sorted(secrets) if line in present)
    return leaks


def feedback_preprocessors() -> list[type]:
    """nbgrader's default feedback preprocessors with :class:`HideHiddenTests` after ``GetGrades``."""
    from nbgrader.converters.generate_feedback import GenerateFeedback

    defaults = GenerateFeedback.class_traits()["preprocessors"].default()
    return [defaults[0], HideHiddenTests, *defaults[1:]]
