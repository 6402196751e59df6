"""Which recorded cases run live, and why the others do not (the rule in mcplab.live.cases)."""

from __future__ import annotations

from mcplab import load_transcripts
from mcplab.live import plan_live_cases


def _plan(era="modern", tools=(), capabilities=None):
    return {c.key: c for c in plan_live_cases(load_transcripts(), era, tools, capabilities)}


def test_origin_negatives_apply_everywhere_except_tool_specific_ones():
    plan = _plan()
    for key in ("negative-header-body-mismatch", "negative-name-header-mismatch", "negative-duplicate-header",
                "negative-malformed-envelope.parse", "negative-unsupported-version", "negative-invalid-params"):
        assert plan[key].applies, key
    assert not plan["negative-missing-capability"].applies
    assert "archive_report" in plan["negative-missing-capability"].reason
    assert _plan(tools=["archive_report"])["negative-missing-capability"].applies


def test_response_side_negatives_are_not_replayed():
    plan = _plan()
    for key, case in plan.items():
        if case.boundary in ("client", "serializer", "intermediary"):
            assert not case.applies and "every live response" in case.reason, key


def test_goldens_need_what_the_server_offers():
    plan = _plan()
    assert plan["golden-modern-list"].applies and plan["golden-modern-discover"].applies and plan["golden-notification"].applies
    assert not plan["golden-modern-call"].applies and "get_weather" in plan["golden-modern-call"].reason
    assert _plan(tools=["get_weather"])["golden-modern-call"].applies
    assert not plan["golden-completion"].applies
    assert _plan(capabilities={"completions": {}})["golden-completion"].applies
    assert not plan["golden-input-required"].applies and "requestState" in plan["golden-input-required"].reason
    assert not plan["golden-additive-field"].applies


def test_the_era_decides_legacy_and_modern_cases():
    modern, legacy = _plan(), _plan(era="legacy")
    assert not modern["golden-legacy-list"].applies
    assert legacy["golden-legacy-list"].applies
    assert not legacy["golden-modern-list"].applies and "modern era" in legacy["golden-modern-list"].reason


def test_stockroom_cases_are_built_only_when_read_stock_is_offered():
    assert "golden-sse-stream.read-stock" not in _plan()
    plan = _plan(tools=["read_stock"])
    stream, call = plan["golden-sse-stream.read-stock"], plan["golden-modern-call.read-stock"]
    assert stream.applies and stream.stream and not call.stream
    request = stream.template.exchanges[0].request
    assert request["params"]["name"] == "read_stock" and request["params"]["_meta"]["progressToken"]
    legacy = _plan(era="legacy", tools=["read_stock"])
    assert "golden-modern-call.read-stock" not in legacy  # a 2026-07-28 invariant
    built = legacy["golden-sse-stream.read-stock"]  # the stream invariant holds in both eras
    assert built.applies and built.stream and built.template.era == "legacy"
    assert ("MCP-Protocol-Version", "2025-11-25") in built.template.exchanges[0].request_headers
