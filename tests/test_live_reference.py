"""The live harness against the reference server: the known-good origin passes, directly and via a faithful proxy."""

from __future__ import annotations

from mcplab.live.check import run_check
from mcplab.live.proxy import serve_proxy
from mcplab.reference.server import serve_reference


def test_every_live_case_passes_against_the_reference_server_directly_and_via_a_faithful_proxy():
    with serve_reference(port=0) as ref, serve_proxy(ref.url) as proxy:
        result = run_check(ref.url, via=proxy.url)
    verdicts = {row["case"]: row for row in result.to_dict()["rows"]}
    assert result.ok is True and result.issues == []
    ran = {name for name, row in verdicts.items() if row["applies"] and row["direct"]["status"] != "n/a"}
    assert {"golden-modern-discover", "negative-meta-type.version", "negative-header-body-mismatch"} <= ran
    # the recorded completion names a prompt this server does not list (a server may refuse it: not a golden here)
    assert not verdicts["golden-completion"]["applies"] and "travel_plan" in verdicts["golden-completion"]["reason"]
    assert all(verdicts[name]["via"]["status"] == verdicts[name]["direct"]["status"] == "pass" for name in ran)


#: The one issue each proxy mode causes in front of the reference server (faithful causes none).
EXPECTED_ISSUES = {"faithful": [], "collapse-errors": ["negative-proxy-collapsed-error"],
                   "rewrite-body": ["negative-proxy-changed-body"], "buffer-sse": ["negative-sse-buffered"]}


def test_each_proxy_mode_in_front_of_the_reference_server_causes_exactly_its_issue():
    from mcplab.live import PROXY_MODES

    with serve_reference(port=0) as ref:
        for mode in PROXY_MODES:
            with serve_proxy(ref.url, mode) as proxy:
                result = run_check(ref.url, via=proxy.url)
            rows = {row["case"]: row for row in result.rows if row["applies"]}
            # the reference server streams test_tool_with_progress, so a buffering proxy has a stream to hold back
            assert rows["golden-sse-stream.tool-with-progress"]["direct"]["status"] == "pass", mode
            assert result.issues == EXPECTED_ISSUES[mode], mode
            assert all(row["direct"]["status"] != "fail" for row in rows.values()), mode
            changed = {key: row["change"] for key, row in rows.items() if row["change"]}
            assert all(c["boundary"] == "intermediary" and c["cases"] == EXPECTED_ISSUES[mode] for c in changed.values()), mode
            assert bool(changed) == (mode != "faithful"), mode
