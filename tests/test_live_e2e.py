"""End to end: the stockroom (SSE) and the live proxy on free loopback ports, every proxy mode.

faithful: no proxy issue and the same verdicts as direct; every other mode: exactly the issue it
causes, under its stable case name; the SSE case passes direct and through faithful, fails
through buffer-sse, and the report names the boundary.
"""

from __future__ import annotations

import pytest

from mcplab.live import PROXY_MODES, run_check, serve_proxy
from mcplab.live.report import render_report
from mcplab.stockroom.server import serve_stockroom

SSE_CASE = "golden-sse-stream.read-stock"
#: The one issue each faulty mode causes (faithful causes none).
EXPECTED_ISSUES = {
    "faithful": [],
    "collapse-errors": ["negative-proxy-collapsed-error"],
    "rewrite-body": ["negative-proxy-changed-body"],
    "buffer-sse": ["negative-sse-buffered"],
}


@pytest.fixture(scope="module")
def origin():
    with serve_stockroom(":memory:", port=0, json_response=False) as srv:
        yield srv


@pytest.fixture(scope="module")
def checks(origin):
    """One direct+via check per proxy mode (the slow part, shared by the tests below)."""
    results = {}
    for mode in PROXY_MODES:
        with serve_proxy(origin.url, mode) as proxy:
            results[mode] = run_check(origin.url, via=proxy.url)
    return results


def _rows(result):
    """The rows that were sent (applicable, and not refused by the HTTP client itself)."""
    return {row["case"]: row for row in result.rows if row["applies"] and row["direct"]["status"] != "n/a"}


def _verdicts(result, column):
    return {key: row[column]["status"] for key, row in _rows(result).items()}


def test_the_era_is_proven_modern_both_ways(checks):
    for result in checks.values():
        assert result.era["era"] == "modern" and result.era["observations"][0]["kind"] == "discover_success"
        assert result.via_era["era"] == "modern"


def test_live_cases_run_and_pass_directly(checks):
    result = checks["faithful"]
    rows = _rows(result)
    assert {"golden-modern-discover", "golden-modern-list", "golden-notification", "negative-header-body-mismatch",
            "negative-unsupported-version", "golden-modern-call.read-stock", SSE_CASE} <= set(rows)
    direct = _verdicts(result, "direct")
    # mcp 2.3.0 alone would answer -32020 here; the stockroom's request-order guard answers -32602.
    assert {k for k, v in direct.items() if v == "fail"} == set()
    assert direct["negative-meta-type.version"] == "pass"


def test_faithful_proxy_reports_no_issue_and_the_same_verdicts(checks):
    result = checks["faithful"]
    assert result.issues == []
    assert _verdicts(result, "via") == _verdicts(result, "direct")
    for row in _rows(result).values():
        assert row["via"]["findings"] == [] and row["via"]["hopsRecorded"] and row["change"] is None


@pytest.mark.parametrize("mode", [m for m in PROXY_MODES if m != "faithful"])
def test_each_faulty_mode_causes_exactly_its_issue(checks, mode):
    result = checks[mode]
    proxy_issues = sorted({f["case"] for row in _rows(result).values() for f in row["via"]["findings"]})
    assert proxy_issues == EXPECTED_ISSUES[mode]
    changed = {key: row["change"] for key, row in _rows(result).items() if row["change"]}
    assert changed, "the fault must change at least one verdict"
    for change in changed.values():
        assert change["boundary"] == "intermediary" and change["cases"] == EXPECTED_ISSUES[mode]
    # The direct column is untouched by the proxy.
    assert _verdicts(result, "direct") == _verdicts(checks["faithful"], "direct")


def test_collapse_fails_every_origin_rejection_through_the_proxy(checks):
    rows = _rows(checks["collapse-errors"])
    row = rows["negative-header-body-mismatch"]
    assert row["direct"]["status"] == "pass"
    assert row["via"]["status"] == "fail" and row["via"]["httpStatus"] == 500
    assert row["via"]["observed"] == "negative-proxy-collapsed-error" and row["via"]["boundary"] == "intermediary"
    assert rows["golden-modern-list"]["via"]["status"] == "pass"  # successes are not touched


def test_the_sse_case_passes_direct_and_faithful_and_fails_buffered(checks):
    faithful, buffered = _rows(checks["faithful"])[SSE_CASE], _rows(checks["buffer-sse"])[SSE_CASE]
    assert faithful["direct"]["status"] == faithful["via"]["status"] == "pass"
    assert faithful["direct"]["contentType"] == "text/event-stream"
    direct_timing = faithful["direct"]["timing"]
    assert direct_timing["eventCount"] >= 2 and direct_timing["firstEventMs"] < direct_timing["durationMs"] / 2
    assert buffered["direct"]["status"] == "pass"
    assert buffered["via"]["status"] == "fail" and buffered["via"]["observed"] == "negative-sse-buffered"
    via_timing = buffered["via"]["timing"]
    assert via_timing["firstEventMs"] >= 0.9 * via_timing["durationMs"]
    assert buffered["change"]["boundary"] == "intermediary"
    page = render_report(checks["buffer-sse"])
    assert SSE_CASE in page and "boundary: <b>intermediary</b>" in page and "negative-sse-buffered" in page


def test_json_answers_are_not_flagged_as_buffered(checks):
    rows = _rows(checks["buffer-sse"])
    assert rows["golden-modern-list"]["via"]["status"] == "pass"
    assert rows["negative-header-body-mismatch"]["via"]["status"] == "pass"
