"""The hostile, honest and wrong submissions of tests/course/submissions/, built into real notebooks."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from mcplab.course.checks import hidden_region
from mcplab.course.hidden import BEGIN_SOLUTION, END_SOLUTION

CORPUS = Path(__file__).parent / "submissions"
_CELL = re.compile(r"^# %% (answer|before) (\S+)\s*$")
_TOKEN = re.compile(r"\{\{(solution|hidden) (\S+)\}\}")


@dataclass
class Submission:
    """One corpus file: what it proves, its cells and its exact expected score."""

    lab: str
    name: str
    proves: str
    expect: float
    cells: list[tuple[str, str, str]]  # (kind, grade_id, source)


def load(lab: str) -> list[Submission]:
    out = []
    for path in sorted((CORPUS / lab).glob("*.py")):
        expect, proves, cells, current = None, "", [], None
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.startswith("# expect:") and current is None:
                expect = float(line.split(":", 1)[1])
            elif line.startswith("# proves:") and current is None:
                proves = line.split(":", 1)[1].strip()
            elif match := _CELL.match(line):
                current = [match.group(1), match.group(2), []]
                cells.append(current)
            elif current is not None:
                current[2].append(line)
        assert expect is not None, f"{path}: no '# expect:' line"
        out.append(Submission(lab, path.stem, proves, expect, [(k, g, "\n".join(src).strip("\n")) for k, g, src in cells]))
    return out


def _solution(source_nb: NotebookNode, grade_id: str) -> str:
    cell = next(c for c in source_nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "\n".join(line for line in cell.source.split("\n") if line.strip() not in (BEGIN_SOLUTION, END_SOLUTION))


def build(sub: Submission, source_nb: NotebookNode, release_nb: NotebookNode, *, host_port: int = 0) -> NotebookNode:
    """The submission as a student would hand it in: the release with the corpus file's cells applied."""
    def fill(text: str) -> str:
        text = text.replace("{{host_port}}", str(host_port))

        def token(match: re.Match) -> str:
            kind, grade_id = match.group(1), match.group(2)
            if kind == "solution":
                return _solution(source_nb, grade_id)
            cell = next(c for c in source_nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
            return hidden_region(cell.source).replace('"""', "'''")
        return _TOKEN.sub(token, text)

    nb = copy.deepcopy(release_nb)
    for kind, grade_id, source in sub.cells:
        index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        if kind == "answer":
            nb.cells[index].source = fill(source)
        else:
            nb.cells.insert(index, nbformat.v4.new_code_cell(fill(source)))
    nbformat.validator.normalize(nb)
    return nb
