"""A submission that kills its kernel is graded, not dropped: KernelSafeExecute on a real kernel."""

from __future__ import annotations

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from mcplab.course.grading import KERNEL_DIED, KernelSafeExecute, autograde_preprocessors
from mcplab.course.rehearsal import KILL_KERNEL


def test_cells_after_a_killed_kernel_are_marked_not_run_and_earlier_outputs_are_kept(tmp_path):
    nb = new_notebook(cells=[
        new_code_cell("print('before')"),
        new_code_cell(KILL_KERNEL),
        new_markdown_cell("text"),
        new_code_cell("print('after')"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out, _ = KernelSafeExecute(timeout=30).preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    assert out.cells[0].outputs[0].text == "before\n"
    assert [o.ename for o in out.cells[1].outputs if o.output_type == "error"] == [KERNEL_DIED]
    after = out.cells[3].outputs
    assert len(after) == 1 and after[0].ename == KERNEL_DIED and "cell 2" in after[0].evalue


def test_the_autograde_pipeline_uses_it_in_place_of_execute():
    from nbgrader.preprocessors import Execute

    pipeline = autograde_preprocessors()
    assert KernelSafeExecute in pipeline and Execute not in pipeline
    assert pipeline.index(KernelSafeExecute) == 0
