"""nbgrader configuration of the mcplab course (run nbgrader commands from this directory).

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
# machine; an infinite loop is interrupted after this many seconds, scores 0, and the batch goes on.
c.Execute.timeout = 30

# A submission that kills its kernel is graded (the rest of its cells score 0), not dropped.
c.Autograde.autograde_preprocessors = autograde_preprocessors()

# A submission that deleted a test cell gets it back and is graded on it.
c.OverwriteCells.add_missing_cells = True

# Feedback never shows hidden tests: nbgrader renders the autograded notebook, hidden tests and
# the tracebacks that quote them included, unless HideHiddenTests removes them first.
c.GenerateFeedback.preprocessors = feedback_preprocessors()
