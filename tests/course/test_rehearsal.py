"""Every lab through sealed nbgrader grading with a full-marks and five hostile submissions (see mcplab.course.rehearsal).

Labs A, B and F are rehearsed in tests/course/test_sealed.py together with their hostile corpus
(one grading run per lab); :func:`check_rehearsal` is the expectation both modules assert.
"""

from __future__ import annotations

import pytest

from mcplab.course import LABS
from mcplab.course.grading import KERNEL_DIED
from mcplab.course.rehearsal import SUBMISSIONS, rehearse

from .conftest import GRADERS, REHEARSALS

#: Per-cell limit for the rehearsal: every lab cell runs in a few seconds; the loop is cut after this.
TIMEOUT = 10


#: Labs rehearsed here; the others are rehearsed with their hostile corpus in test_sealed.py.
ALONE = tuple(lab for lab in LABS if lab not in ("lab_a_era_boundary", "lab_b_additive_fields", "lab_f_stockroom_flightdeck"))


@pytest.mark.parametrize("lab", ALONE)
def test_autograde_round_trip(lab, tmp_path):
    result = rehearse(GRADERS, lab, timeout=TIMEOUT, workdir=tmp_path, jobs=2)
    REHEARSALS.append((lab, result.autograde_seconds, len(result.submissions)))
    check_rehearsal(result)


def check_rehearsal(result) -> None:
    """The six rehearsal submissions scored and reported as designed."""
    assert result.problems == []
    subs = result.submissions
    assert set(subs) >= set(SUBMISSIONS)
    full = subs["full-marks"]
    assert full.auto_score == full.auto_max > 0 and full.errors == {}
    # the untouched release and the edited tests fail on the restored test cells, not on anything else
    assert subs["untouched-release"].auto_score == 0 and subs["untouched-release"].errors
    edited = subs["edited-test-cell"]
    assert edited.auto_score == 0 and set(edited.cells) == set(full.cells)
    assert all(grade_id in edited.errors for grade_id in edited.cells), "every restored test cell must run (and fail)"
    assert subs["deleted-test-cell"].auto_score == full.auto_max and set(subs["deleted-test-cell"].cells) == set(full.cells)
    assert "CellTimeoutError" in subs["infinite-loop"].errors.values()
    kill = subs["kernel-kill"]
    assert KERNEL_DIED in kill.errors.values() and 0 < kill.auto_score < full.auto_max
    # one grades.csv row per submission, all on the same scale
    assert sorted(row["student_id"] for row in result.grades_csv) == sorted(subs)
    assert len({row["max_score"] for row in result.grades_csv}) == 1
