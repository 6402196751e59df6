"""Sealed autograding: nbgrader's pipeline with the student's code in a sandbox and a trusted judge.

``graders/nbgrader_config.py`` installs :func:`autograde_preprocessors`, so plain
``nbgrader autograde LAB`` and ``mcplab course autograde LAB`` grade the same way:

1. :class:`SealedExecute` (in place of nbgrader's ``Execute``) builds the sandboxed copy of the
   submission: every hidden region is removed, and after each graded test cell a probe cell
   calls the student's functions on the inputs its sealed checks declare
   (:mod:`mcplab.course.checks`). The copy runs in a sandbox (:mod:`mcplab.course.sandbox`);
   the outputs that come back are untrusted data, merged into the notebook by cell position.
   An execution computed earlier by ``mcplab course autograde --jobs N`` for exactly this
   notebook and these limits is taken from ``cache_dir`` instead of running again.
2. :class:`ScrubOutputs` keeps only output types and mime types that are plain data (text,
   PNG/JPEG, widget references, HTML cleaned by bleach), bounded in size, and removes every line
   of a solution, model answer or hidden check from every output.
3. :class:`JudgeChecks` decides each graded cell: the trusted checks (expected values computed
   here, from the gradebook's copy of the cell) against the probe's outputs, and the forbidden
   names against the answer's syntax tree. The cell's outputs become the visible checks' text
   (never an error, so they decide no points) and the judge's verdict (an error output when it
   failed), which is all nbgrader's ``SaveAutoGrades`` reads.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode
from nbgrader.api import Gradebook
from nbgrader.converters.autograde import Autograde
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Bool, Float, Integer, Unicode

from .checks import CheckError, collect
from .hidden import hidden_line_numbers, secret_lines
from .judge import defines, judge, reached_code
from .probe import MIME
from .release import CourseError
from .sandbox import Execution, Limits, run_notebook
from .values import decode

__all__ = ["JUDGE_FAILED", "KERNEL_DIED", "NOT_RUN", "JudgeChecks", "ScrubOutputs", "SealedExecute",
           "autograde_preprocessors", "pending_marker", "sandbox_notebook", "trusted_cells"]

#: ``ename`` of the judge's error output on a graded cell that failed its sealed checks.
JUDGE_FAILED = "SealedCheckFailed"
#: ``ename`` written where the kernel died and on the cells after it.
KERNEL_DIED = "KernelDied"
#: ``ename`` of a cell that did not run (after a kernel death, an unresponsive time-out or the wall limit).
NOT_RUN = "NotRun"
_PROBE_CELL = "import mcplab.course.probe as _mcplab_probe; _mcplab_probe.run({grade_id!r}, {plan!r})"
_MAX_TEXT = 200_000


def trusted_cells(resources: dict[str, Any]) -> dict[str, Any]:
    """The gradebook's copy of this notebook's cells: {grade_id: (source, cell_type, locked, is_grade, points)}."""
    meta = resources["nbgrader"]
    with Gradebook(meta["db_url"]) as gb:
        notebook = gb.find_notebook(meta["notebook"], meta["assignment"])
        grades = {c.name: c.max_score for c in notebook.grade_cells}
        return {c.name: (c.source, c.cell_type, c.locked, c.name in grades, grades.get(c.name))
                for c in notebook.source_cells}


def _graded_code_cells(nb: NotebookNode, trusted: dict[str, Any]) -> dict[int, str]:
    """Cell index -> grade_id of every autograded test cell (trusted: locked, graded, code, in the gradebook)."""
    out = {}
    for index, cell in enumerate(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        entry = trusted.get(grade_id)
        if cell.cell_type == "code" and entry and entry[1] == "code" and entry[2] and entry[3] and grade_id not in out.values():
            out[index] = grade_id
    return out


def sandbox_notebook(nb: NotebookNode, trusted: dict[str, Any]) -> tuple[NotebookNode, dict[int, Any]]:
    """The copy of ``nb`` that runs in the sandbox, and a map: its cell index -> original index or ("probe", grade_id).

    Graded test cells get their trusted source back, every hidden region is cut out of every cell,
    and each graded cell is followed by its probe cell. No nbgrader metadata goes in.
    """
    graded = _graded_code_cells(nb, trusted)
    cells, where = [], {}
    for index, cell in enumerate(nb.cells):
        source = trusted[graded[index]][0] if index in graded else cell.source
        hidden = hidden_line_numbers(source)
        visible = "\n".join(line for n, line in enumerate(source.split("\n"), start=1) if n not in hidden)
        if cell.cell_type == "code":
            where[len(cells)] = index
            cells.append(nbformat.v4.new_code_cell(visible))
        else:
            cells.append(nbformat.v4.new_markdown_cell(""))
        if index in graded:
            checks = collect(graded[index], source)
            where[len(cells)] = ("probe", graded[index])
            cells.append(nbformat.v4.new_code_cell(_PROBE_CELL.format(grade_id=graded[index], plan=json.dumps(checks.plan()))))
    copy = nbformat.v4.new_notebook(cells=cells)
    copy.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    for number, cell in enumerate(copy.cells):
        cell.id = f"cell-{number}"  # deterministic: the notebook's text is its execution's cache key
    return copy, where


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class SealedExecute(Execute):
    """nbgrader's ``Execute``, run in a sandbox per submission (see the module docstring)."""

    sealed = Bool(True, help="Run each submission in a bubblewrap sandbox; False (--unsealed) runs it as a plain "
                  "child process with no isolation").tag(config=True)
    wall_limit = Float(600.0, help="Seconds one submission may take in all; then its whole process tree is killed").tag(config=True)
    memory_limit = Integer(6 * 1024**3, help="RLIMIT_AS of every process in the sandbox (bytes)").tag(config=True)
    process_limit = Integer(512, help="RLIMIT_NPROC in the sandbox (processes and threads)").tag(config=True)
    cache_dir = Unicode("", help="Folder of executions computed ahead by `mcplab course autograde --jobs N`").tag(config=True)

    def limits(self) -> Limits:
        return Limits(cell_timeout=float(self.timeout or 30), wall=self.wall_limit, memory_bytes=self.memory_limit,
                      processes=self.process_limit)

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        trusted = trusted_cells(resources)
        try:
            copy, where = sandbox_notebook(nb, trusted)
        except CheckError as exc:
            raise CourseError(str(exc)) from None
        text = nbformat.writes(copy)
        execution = _cached(self.cache_dir, execution_key(text, self.limits(), self.sealed), pending_marker(resources),
                            self.wall_limit + 60)
        if execution is None:
            root = CourseDirectory(config=self.config).root
            execution = run_notebook(text, limits=self.limits(), sealed=self.sealed, course_root=Path(root).resolve())
            self.log.info("Executed in a %s in %.1f s (%s)", "sandbox" if self.sealed else "child process (unsealed)",
                          execution.seconds, execution.end or "killed at the wall limit")
        probes: dict[str, Any] = {}
        died_at = None
        for index, mapped in where.items():
            outputs, status = execution.cells.get(index, ([], "not-run"))
            if isinstance(mapped, tuple):
                probes[mapped[1]] = outputs if status in ("ok", "error") else None
                continue
            cell = nb.cells[mapped]
            cell.outputs = [NotebookNode(o) for o in outputs if isinstance(o, dict)]
            cell.execution_count = None
            if status == "died":
                died_at = mapped
                cell.outputs.append(_error(KERNEL_DIED, "the kernel died while running this cell"))
            elif status == "not-run":
                why = (f"not run: the kernel died in cell {died_at + 1}" if died_at is not None else
                       "not run: an earlier cell did not stop after its time limit, or the submission reached its wall limit")
                cell.outputs = [_error(KERNEL_DIED if died_at is not None else NOT_RUN, why)]
        resources.setdefault("mcplab", {})["probes"] = probes
        return nb, resources


def execution_key(text: str, limits: Limits, sealed: bool) -> str:
    """The cache key of one sandbox run: the prepared notebook and everything that changes its outcome."""
    import mcplab

    h = hashlib.sha256()
    for part in (text, repr(limits), str(sealed), mcplab.__version__ if hasattr(mcplab, "__version__") else ""):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def pending_marker(resources: dict[str, Any]) -> str:
    """The file name that says a submission is being run ahead by ``mcplab course autograde``."""
    meta = resources["nbgrader"]
    return hashlib.sha256(f"{meta['student']}\0{meta['assignment']}\0{meta['notebook']}".encode()).hexdigest() + ".pending"


def _cached(cache_dir: str, key: str, marker: str, wait: float) -> Execution | None:
    """The execution ``mcplab course autograde`` ran for ``key``; waits up to ``wait`` s while its run is still going."""
    if not cache_dir:
        return None
    path, pending = Path(cache_dir) / f"{key}.json", Path(cache_dir) / marker
    deadline = time.monotonic() + wait
    while pending.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # polling a file another process of ours writes; the deadline bounds it
    try:
        return Execution.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


_KEEP_MIME = ("text/plain", "image/png", "image/jpeg", "application/vnd.jupyter.widget-view+json", "text/html")
_HTML_TAGS = ["table", "thead", "tbody", "tr", "th", "td", "div", "span", "p", "br", "b", "i", "em", "strong", "code", "pre",
              "ul", "ol", "li", "style", "small", "sub", "sup", "h1", "h2", "h3", "h4"]


def _clean_html(html: str) -> str:
    import bleach

    return bleach.clean(html, tags=_HTML_TAGS, attributes={"*": ["class"], "td": ["colspan", "rowspan"], "th": ["colspan", "rowspan"]},
                        strip=True)


def _text(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "".join(value)
    return value[:_MAX_TEXT] if isinstance(value, str) else None


_SECRETS: dict[tuple[str, int], set[str]] = {}


def _secret_lines(source: Path) -> set[str]:
    """``secret_lines`` of a source notebook, read once per grading process (and again if the file changes)."""
    if not source.is_file():
        return set()
    key = (str(source), source.stat().st_mtime_ns)
    if key not in _SECRETS:
        _SECRETS[key] = secret_lines(source)
    return _SECRETS[key]


class ScrubOutputs(NbGraderPreprocessor):
    """Outputs from the sandbox as plain, bounded data with no secret line in them."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        coursedir = CourseDirectory(config=self.config)
        meta = resources["nbgrader"]
        source = Path(coursedir.format_path(coursedir.source_directory, ".", meta["assignment"])) / f"{meta['notebook']}.ipynb"
        self._secret = _secret_lines(source)
        return super().preprocess(nb, resources)

    def _lines(self, text: str) -> str:
        return "\n".join(line for line in text.split("\n") if line.strip() not in self._secret)

    def _output(self, output: dict[str, Any]) -> NotebookNode | None:
        kind = output.get("output_type")
        if kind == "stream":
            text = _text(output.get("text"))
            name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
            return None if text is None else NotebookNode(output_type="stream", name=name, text=self._lines(text))
        if kind == "error":
            tb = output.get("traceback") if isinstance(output.get("traceback"), list) else []
            lines = [self._lines(t[:_MAX_TEXT]) for t in tb[:200] if isinstance(t, str)]
            return NotebookNode(output_type="error", ename=str(output.get("ename", "Error"))[:200],
                                evalue=self._lines(str(output.get("evalue", ""))[:_MAX_TEXT]), traceback=lines)
        if kind in ("display_data", "execute_result") and isinstance(output.get("data"), dict):
            data = {}
            for mime in _KEEP_MIME:
                value = output["data"].get(mime)
                if mime == "application/vnd.jupyter.widget-view+json":
                    if isinstance(value, dict) and isinstance(value.get("model_id"), str):
                        data[mime] = {"model_id": value["model_id"][:64], "version_major": 2, "version_minor": 0}
                    continue
                text = _text(value)
                if text is None:
                    continue
                if mime == "text/html":
                    text = _clean_html(text)
                data[mime] = text if mime.startswith("image/") else self._lines(text)
            if not data:
                return None
            node = NotebookNode(output_type=kind, data=data, metadata={})
            if kind == "execute_result":
                node.execution_count = None
            return node
        return None

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int) -> tuple[NotebookNode, Any]:
        if cell.cell_type == "code":
            cell.outputs = [o for o in (self._output(dict(out)) for out in cell.get("outputs", [])) if o is not None]
        elif cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            cell.source = _clean_html(cell.source) if "<" in cell.source else cell.source
        return cell, resources


def _results(grade_id: str, outputs: list[Any] | None) -> list[dict[str, Any]] | None:
    """The probe's results, decoded; None when missing or malformed (the judge then fails every check)."""
    for output in outputs or []:
        payload = output.get("data", {}).get(MIME) if isinstance(output, dict) and isinstance(output.get("data"), dict) else None
        if not (isinstance(payload, dict) and payload.get("probe") == grade_id and isinstance(payload.get("results"), list)):
            continue
        out = []
        for result in payload["results"]:
            try:
                out.append({"ok": result.get("ok") is True, "value": decode(result.get("value")),
                            "error": str(result.get("error", ""))[:80], "changedArgs": result.get("changedArgs") is True})
            except (ValueError, AttributeError, RecursionError):
                out.append(None)
        return out
    return None


class JudgeChecks(NbGraderPreprocessor):
    """Each graded cell's outputs become the trusted verdict (see the module docstring)."""

    def preprocess(self, nb: NotebookNode, resources: Any) -> tuple[NotebookNode, Any]:
        trusted = trusted_cells(resources)
        probes = resources.get("mcplab", {}).get("probes", {})
        answers = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell.source for cell in nb.cells
                   if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")}
        graded = _graded_code_cells(nb, trusted)
        for index, grade_id in graded.items():
            cell = nb.cells[index]
            cell.source = trusted[grade_id][0]
            try:
                checks = collect(grade_id, cell.source)
            except CheckError as exc:
                raise CourseError(str(exc)) from None
            rules = [(f.answer_id, answers.get(f.answer_id, "")) for f in checks.forbidden]
            if checks.forbidden:  # and wherever else the student defined the exercise's functions (a copied or unmarked cell)
                functions = {call.fn for call in checks.calls}
                others = [(f"cell {i + 1}", c.source) for i, c in enumerate(nb.cells)
                          if c.cell_type == "code" and i not in graded
                          and c.source != answers.get(c.metadata.get("nbgrader", {}).get("grade_id"))]
                rules += [(label, source) for label, source in others if defines(source, functions)]
                # and the helpers the answers reach through names (a def in another cell that calls the forbidden one)
                rules += reached_code(others, [answers.get(f.answer_id, "") for f in checks.forbidden], functions)
            verdict = judge(checks, _results(grade_id, probes.get(grade_id)), rules)
            shown = []
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    if output.ename in (KERNEL_DIED, NOT_RUN):
                        shown.append(NotebookNode(output_type="stream", name="stdout", text=f"{output.ename}: {output.evalue}\n"))
                    else:
                        shown.append(NotebookNode(output_type="stream", name="stdout",
                                                  text=f"A visible check in this cell failed: {output.ename}: {output.evalue}\n"))
                elif output.output_type == "stream":
                    shown.append(NotebookNode(output_type="stream", name="stdout", text=output.text))
                elif output.output_type in ("display_data", "execute_result"):
                    shown.append(NotebookNode(output_type="display_data", data=output.data, metadata={}))
            if verdict.passed:
                shown.append(NotebookNode(output_type="stream", name="stdout", text=f"{verdict.summary}\n"))
            else:
                lines = verdict.failures[:6] + ([f"... and {len(verdict.failures) - 6} more"] if len(verdict.failures) > 6 else [])
                shown.append(NotebookNode(output_type="error", ename=JUDGE_FAILED, evalue=verdict.summary,
                                          traceback=[f"{JUDGE_FAILED}: {verdict.summary}", *(f"  - {line}" for line in lines)]))
            cell.outputs = shown
        return nb, resources


def autograde_preprocessors() -> list[type]:
    """nbgrader's autograde preprocessors with ``Execute`` replaced by the sealed steps."""
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    out: list[type] = []
    for pp in defaults:
        out.extend([SealedExecute, ScrubOutputs, JudgeChecks] if pp is Execute else [pp])
    return out
