"""The sealed autograde pipeline: what enters the sandbox, what comes back, and what nbgrader then reads."""

from __future__ import annotations

import nbformat
from nbformat import NotebookNode

from mcplab.course.grading import JudgeChecks, ScrubOutputs, SealedExecute, autograde_preprocessors, sandbox_notebook

from .conftest import source_path


def _trusted(nb: NotebookNode) -> dict:
    """The gradebook's view of a source notebook (what trusted_cells reads from nbgrader's database)."""
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id") and (meta.get("grade") or meta.get("solution") or meta.get("locked")):
            out[meta["grade_id"]] = (cell.source, cell.cell_type, bool(meta.get("locked")), bool(meta.get("grade")), meta.get("points"))
    return out


def test_the_sandbox_copy_holds_no_hidden_check_and_a_probe_after_each_graded_cell():
    source = nbformat.read(str(source_path("lab_a_era_boundary")), as_version=4)
    copy, where = sandbox_notebook(source, _trusted(source))
    text = nbformat.writes(copy)
    assert "HIDDEN TESTS" not in text and "_sealed_checks" not in text and "want=" not in text
    probes = [i for i, m in where.items() if isinstance(m, tuple)]
    assert [where[i][1] for i in probes] == ["classify_probe_tests", "may_use_legacy_tests"]
    for i in probes:
        assert copy.cells[i].source.startswith("import mcplab.course.probe as _mcplab_probe; _mcplab_probe.run(")
        assert where[i - 1] == next(n for n, c in enumerate(source.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == where[i][1])
    assert all("nbgrader" not in c.metadata for c in copy.cells)
    again, _ = sandbox_notebook(source, _trusted(source))
    assert nbformat.writes(again) == text  # deterministic: the text is the cache key of its execution


def test_the_pipeline_replaces_execute_with_the_sealed_steps_in_order():
    from nbgrader.preprocessors import Execute, SaveAutoGrades

    pipeline = autograde_preprocessors()
    assert Execute not in pipeline
    i = pipeline.index(SealedExecute)
    assert pipeline[i:i + 3] == [SealedExecute, ScrubOutputs, JudgeChecks] and pipeline.index(SaveAutoGrades) > i + 2


def test_scrubbed_outputs_are_plain_bounded_data():
    scrub = ScrubOutputs()
    scrub._secret = {"a secret hidden check line"}
    cases = [
        ({"output_type": "stream", "name": "stdout", "text": "ok\na secret hidden check line\n"}, "stream"),
        ({"output_type": "display_data", "data": {"application/javascript": "alert(1)"}, "metadata": {}}, None),
        ({"output_type": "display_data", "data": {"text/html": "<i>x</i><script>alert(1)</script>", "text/plain": "x"}}, "display_data"),
        ({"output_type": "display_data", "data": {"application/vnd.mcplab.probe+json": {"probe": "x", "results": []}}}, None),
        ({"output_type": "weird"}, None),
        ({"output_type": "error", "ename": "E", "evalue": "a secret hidden check line", "traceback": ["t" * 10**6]}, "error"),
        ({"output_type": "execute_result", "data": {"text/plain": ["1", "2"]}, "execution_count": 5}, "execute_result"),
    ]
    for output, kind in cases:
        got = scrub._output(output)
        assert (got.output_type if got is not None else None) == kind, output
        if kind == "stream":
            assert got.text == "ok\n"
        if kind == "display_data":
            assert "<script" not in got.data["text/html"] and got.data["text/plain"] == "x"
        if kind == "error":
            assert got.evalue == "" and len(got.traceback[0]) <= 200_000
        if kind == "execute_result":
            assert got.data == {"text/plain": "12"} and got.execution_count is None
