"""Autograding that survives a submission which kills its own kernel.

nbgrader 0.9's ``Execute`` raises ``DeadKernelError`` when a submission kills the kernel (for
example ``os.kill(os.getpid(), 9)``); autograde then drops that submission with a traceback and
the student gets no feedback. :class:`KernelSafeExecute` turns the death into an error output on
the cell that caused it and on every later code cell (not run), so grading continues: the cells
that passed before keep their points, the rest score 0, and feedback says why.
``graders/nbgrader_config.py`` installs it with :func:`autograde_preprocessors`.
"""

from __future__ import annotations

from typing import Any

from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbgrader.converters.autograde import Autograde
from nbgrader.preprocessors import Execute

__all__ = ["KERNEL_DIED", "KernelSafeExecute", "autograde_preprocessors"]

#: The ``ename`` of the error output written where the kernel died and on every cell after it.
KERNEL_DIED = "KernelDied"


def _died(message: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=KERNEL_DIED, evalue=message, traceback=[f"{KERNEL_DIED}: {message}"])


class KernelSafeExecute(Execute):
    """nbgrader's ``Execute``, except that a dead kernel fails the remaining cells instead of the whole submission."""

    def preprocess(self, nb: NotebookNode, resources: Any = None, km: Any = None) -> tuple[NotebookNode, dict[str, Any]]:
        self._dead_at: int | None = None
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell: NotebookNode, resources: Any, index: int) -> tuple[NotebookNode, dict[str, Any]]:
        if cell.cell_type != "code":
            return super().preprocess_cell(cell, resources, index)
        if self._dead_at is not None:
            cell.outputs = [_died(f"not run: the kernel died in cell {self._dead_at + 1}")]
            return cell, self.resources
        try:
            return super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._dead_at = index
            cell.outputs.append(_died("the kernel died while running this cell"))
            self.log.warning("Kernel died in cell %d; the remaining code cells are marked as not run", index + 1)
            return cell, self.resources


def autograde_preprocessors() -> list[type]:
    """nbgrader's default autograde preprocessors with ``Execute`` replaced by :class:`KernelSafeExecute`."""
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    return [KernelSafeExecute if pp is Execute else pp for pp in defaults]
