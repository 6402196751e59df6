"""nbgrader configuration of the mcplab course (run nbgrader commands from this directory).

Grading is sealed (see mcplab/course/grading.py and docs/instructor.md): every submission runs in
its own bubblewrap sandbox, the points come from a trusted judge that compares what the
student's functions returned with expected values computed here, and feedback never shows a
hidden check or a solution line. `nbgrader autograde LAB` and `mcplab course autograde LAB`
grade the same way; the latter runs submissions in parallel (--jobs N).

Collection: this course does not use nbgrader's exchange. Students download their notebook
(from Binder, JupyterLab or an LMS) and the instructor puts each one at
``submitted/<student>/<lab>/<lab>.ipynb`` (by hand, a script, or ``nbgrader zip_collect`` for an
LMS download). A JupyterHub course that uses the exchange sets ``c.Exchange.root`` here.
"""

from mcplab.course.grading import autograde_preprocessors
from mcplab.course.hidden import feedback_preprocessors

c = get_config()  # noqa: F821  (nbgrader injects get_config)

c.CourseDirectory.course_id = "mcplab"
c.CourseDirectory.root = __import__("os").path.dirname(__import__("os").path.abspath(__file__))

# Per-cell limit while autograding. Every lab cell finishes in a few seconds on a 2-core
# machine; a cell that runs longer is interrupted (or its kernel killed), scores 0, and the batch goes on.
c.Execute.timeout = 30

# The sandbox of one submission: wall-clock limit for the whole notebook (then every process it
# started is killed), memory per process (RLIMIT_AS) and processes/threads (RLIMIT_NPROC).
# `--SealedExecute.sealed=False` (or `mcplab course autograde --unsealed`) grades without a sandbox.
c.SealedExecute.wall_limit = 600
c.SealedExecute.memory_limit = 6 * 1024**3
c.SealedExecute.process_limit = 512

# Execution in a sandbox, the trusted judge, outputs scrubbed of secrets (replaces nbgrader's Execute).
c.Autograde.autograde_preprocessors = autograde_preprocessors()

# A submission that deleted a test cell gets it back and is graded on it.
c.OverwriteCells.add_missing_cells = True

# Feedback never shows hidden tests: nbgrader renders the autograded notebook, hidden tests included,
# unless HideHiddenTests removes them first.
c.GenerateFeedback.preprocessors = feedback_preprocessors()
