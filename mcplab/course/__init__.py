"""The course: six nbgrader labs (``graders/``), their student release (``labs/``) and grading tools."""

from __future__ import annotations

__all__ = ["LABS"]

#: The labs in teaching order: each is an nbgrader assignment ``graders/source/<lab>/<lab>.ipynb``
#: released as ``labs/<lab>.ipynb``.
LABS: tuple[str, ...] = (
    "lab_a_era_boundary",
    "lab_b_additive_fields",
    "lab_c_sdk_diff",
    "lab_d_proxy_repair",
    "lab_e_sse_streams",
    "lab_f_stockroom_flightdeck",
)
