"""SDK views come from the installed mcp SDK; these tests pin what mcp 2.3.x really does."""

from __future__ import annotations

from mcplab import compare_sdk_view, sdk_observe, sdk_view

RAW = {"resultType": "complete", "tools": [], "futureHint": {"mode": "new"}, "ttlMs": 1000, "cacheScope": "private",
       "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}}


def test_the_seed_lab_call_reports_futurehint_as_semantic_loss():
    diff = compare_sdk_view({"resultType": "complete", "tools": [], "futureHint": {"mode": "new"}}, {"tools": []})
    assert diff["semanticLoss"] == ["futureHint"]
    assert diff["bookkeeping"]["dropped"] == ["resultType"]
    assert diff["dropped"] == ["resultType", "futureHint"]
    assert diff["ok"] is False


def test_real_sdk_drops_only_futurehint_from_a_modern_list():
    view = sdk_view(RAW, "tools/list", "modern")
    diff = compare_sdk_view(RAW, view)
    assert diff["dropped"] == ["futureHint"]
    assert diff["semanticLoss"] == ["futureHint"]
    assert view["ttlMs"] == 1000 and view["resultType"] == "complete"


def test_real_sdk_synthesises_bookkeeping_for_a_legacy_list():
    raw = {"tools": []}
    diff = compare_sdk_view(raw, sdk_view(raw, "tools/list", "legacy"))
    assert sorted(diff["synthesised"]) == ["cacheScope", "resultType", "ttlMs"]
    assert diff["bookkeeping"]["synthesised"] == diff["synthesised"]
    assert diff["ok"] is True


def test_real_sdk_accepts_an_unknown_result_type_on_tools_call():
    # The spec says an unrecognised resultType MUST be invalid; mcp 2.3.0 accepts it (lab C's finding).
    raw = {"resultType": "futureKind", "content": []}
    observed = sdk_observe(raw, "tools/call", "modern")
    assert observed["exception"] is None
    assert observed["view"]["resultType"] == "futureKind"
    assert compare_sdk_view(raw, observed["view"])["synthesised"] == ["isError"]


def test_sdk_refusal_is_recorded_not_raised():
    observed = sdk_observe({"tools": []}, "tools/list", "modern")
    assert observed["view"] is None and observed["exception"].startswith("ValidationError")
    assert observed["sdk"] == "mcp" and observed["version"].startswith("2.3.")


def test_allowed_drops_and_nested_paths():
    raw = {"resultType": "complete", "tools": [{"name": "a", "x-extra": 1}], "futureHint": 1}
    view = {"resultType": "complete", "tools": [{"name": "a"}]}
    diff = compare_sdk_view(raw, view, allowed_drops=["futureHint"])
    assert diff["dropped"] == ["tools[0].x-extra", "futureHint"]
    assert diff["semanticLoss"] == ["tools[0].x-extra"]
    diff = compare_sdk_view(raw, view, allowed_drops=["futureHint", "tools[0].x-extra"])
    assert diff["ok"] is True and diff["allowedDrops"] == ["futureHint", "tools[0].x-extra"]


def test_changed_values_and_types():
    diff = compare_sdk_view({"resultType": "complete", "n": 1, "meta": {"a": True}}, {"resultType": "complete", "n": 1.0, "meta": {"a": 1}})
    assert diff["changed"] == ["n", "meta.a"]
    assert diff["semanticLoss"] == ["n", "meta.a"]


def test_a_changed_bookkeeping_value_is_semantic():
    for field, before, after in (("ttlMs", 1000, 0), ("cacheScope", "private", "public"), ("resultType", "input_required", "complete")):
        diff = compare_sdk_view({"resultType": "complete", field: before}, {"resultType": "complete", field: after})
        assert diff["semanticLoss"] == [field] and diff["ok"] is False


def test_modern_body_read_on_a_legacy_session_loses_its_ttl():
    # The session drops a later revision's fields (ttlMs, cacheScope) and the model refills defaults.
    view = sdk_view(RAW, "tools/list", "legacy")
    diff = compare_sdk_view(RAW, view)
    assert view["ttlMs"] == 0 and diff["changed"] == ["ttlMs"]
    assert diff["semanticLoss"] == ["futureHint", "ttlMs"]


def test_negative_ttl_is_floored_by_the_client():
    raw = {**RAW, "ttlMs": -5}
    assert sdk_view(raw, "tools/list", "modern")["ttlMs"] == 0
    assert raw["ttlMs"] == -5  # the evidence itself is never modified


def test_unknown_method_is_a_key_error():
    import pytest

    with pytest.raises(KeyError, match="no result model"):
        sdk_view({"resultType": "complete"}, "stockroom/custom", "modern")


def test_modern_list_tools_drops_tools_with_an_invalid_x_mcp_header():
    bad = {"name": "a", "description": "d",
           "inputSchema": {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "bad header!"}}}}
    raw = {"resultType": "complete", "tools": [bad], "ttlMs": 0, "cacheScope": "private"}
    diff = compare_sdk_view(raw, sdk_view(raw, "tools/list", "modern"))
    assert diff["semanticLoss"] == ["tools"]  # the listing lost a tool


def test_discover_is_validated_like_client_discover():
    view = sdk_view({"supportedVersions": ["2026-07-28"], "capabilities": {}}, "server/discover", "modern")
    assert view["resultType"] == "complete" and view["ttlMs"] == 0


def test_allowed_drops_never_excuse_a_changed_value():
    assert compare_sdk_view({"ttlMs": 1000}, {"ttlMs": 0}, allowed_drops=["ttlMs"])["ok"] is False
    assert compare_sdk_view({"tools": [{"x": 1}]}, {"tools": []}, allowed_drops=["tools"])["ok"] is False
