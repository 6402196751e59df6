"""Pins of the SDK diff: the observation record, the SDK's exception as evidence, and which diff paths are bookkeeping."""

from __future__ import annotations

from importlib import metadata

from mcplab.sdkview import BOOKKEEPING_FIELDS, compare_sdk_view, sdk_identity, sdk_observe, sdk_view

TOOL = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}


def test_identity():
    assert sdk_identity() == {"sdk": "mcp", "version": metadata.version("mcp"), "typesVersion": metadata.version("mcp-types")}


def test_observe_defaults_and_record_keys():
    raw = {"resultType": "complete", "tools": [TOOL], "ttlMs": 0, "cacheScope": "private"}
    record = sdk_observe(raw)
    assert record == {**sdk_identity(), "method": "tools/list", "era": "modern", "protocolVersion": "2026-07-28",
                      "view": sdk_view(raw), "exception": None}
    assert sdk_view(raw) == sdk_view(raw, "tools/list", "modern")
    assert record["view"]["tools"] == [TOOL]


def test_observe_passes_era_and_version_on():
    raw = {"tools": [TOOL]}
    legacy = sdk_observe(raw, "tools/list", "legacy")
    assert (legacy["era"], legacy["protocolVersion"], legacy["exception"]) == ("legacy", "2025-11-25", None)
    pinned = sdk_observe(raw, "tools/list", "modern", version="2099-01-01")
    assert pinned["protocolVersion"] == "2099-01-01"
    assert pinned["view"] is None
    assert pinned["exception"] == "ValueError: version must be a known protocol version, got '2099-01-01'"
    # the default era is modern: a modern session refuses a result without resultType
    assert sdk_observe(raw)["exception"] is not None
    assert sdk_observe(raw, era="legacy")["exception"] is None


def test_observe_records_the_first_line_of_the_refusal():
    record = sdk_observe({"resultType": "complete", "tools": [{"name": "t"}]})
    assert record["view"] is None
    assert record["exception"].startswith("ValidationError: ")
    assert "\n" not in record["exception"]
    unknown = sdk_observe({}, "no/such")
    assert unknown["exception"] == "KeyError: \"the mcp SDK has no result model for 'no/such'\""


def test_view_drops_nulls_and_does_not_touch_the_input():
    raw = {"resultType": "complete", "completion": {"values": ["a"], "total": None}}
    assert sdk_view(raw, "completion/complete") == {"completion": {"values": ["a"]}, "resultType": "complete"}
    assert raw == {"resultType": "complete", "completion": {"values": ["a"], "total": None}}
    legacy = {"tools": [{**TOOL, "description": None}], "ttlMs": -5}
    view = sdk_view(legacy, "tools/list", "legacy")
    assert view["tools"] == [{"name": "t", "inputSchema": {"type": "object"}}]
    assert legacy["ttlMs"] == -5


def test_compare_top_level_and_nested_paths():
    diff = compare_sdk_view({"a": {"x": 1}, "l": [{"k": 1}, 2]}, {"a": {"y": 2}, "l": [{"k": 2}, 2], "s": 1})
    assert diff["dropped"] == ["a.x"]
    assert diff["synthesised"] == ["a.y", "s"]
    assert diff["changed"] == ["l[0].k"]
    assert diff["semanticLoss"] == ["a.x", "l[0].k"]
    assert diff["ok"] is False


def test_compare_whole_values():
    assert compare_sdk_view(1, 2)["changed"] == ["$"]
    assert compare_sdk_view({"a": 1}, 5)["changed"] == ["$"]
    assert compare_sdk_view(5, {"a": 1})["changed"] == ["$"]
    assert compare_sdk_view([1], [2])["changed"] == ["[0]"]
    assert compare_sdk_view([1], [1, 2])["changed"] == ["$"]
    assert compare_sdk_view(1, 1.0)["changed"] == ["$"]
    assert compare_sdk_view({"a": [1]}, {"a": [1]}) == {"dropped": [], "synthesised": [], "changed": [], "bookkeeping":
                                                        {"dropped": [], "synthesised": []}, "semanticLoss": [], "allowedDrops": [], "ok": True}


def test_bookkeeping_paths():
    assert BOOKKEEPING_FIELDS == {"resultType", "_meta", "ttlMs", "cacheScope"}
    raw = {"resultType": "complete", "ttlMs": 5, "_meta": {"a": {"b": 1}, "l": [[{"k": 1}]]}, "x": {"_meta": 1}}
    view = {"cacheScope": "private", "_meta": {"a": {}, "l": [[{}]]}, "x": {}}
    diff = compare_sdk_view(raw, view)
    assert diff["bookkeeping"] == {"dropped": ["resultType", "ttlMs", "_meta.a.b", "_meta.l[0][0].k"], "synthesised": ["cacheScope"]}
    assert diff["semanticLoss"] == ["x._meta"]


def test_allowed_drops_and_changed_values():
    diff = compare_sdk_view({"a": 1, "b": 2, "ttlMs": 1000}, {"ttlMs": 0}, allowed_drops=["b", "b", "z"])
    assert diff["allowedDrops"] == ["b", "z"]
    assert diff["semanticLoss"] == ["a", "ttlMs"]


def test_observe_keeps_only_the_first_line_of_any_refusal(monkeypatch):
    import mcplab.sdkview as sdkview

    def refuse(message):
        def view(*args, **kwargs):
            raise ValueError(message)
        return view

    monkeypatch.setattr(sdkview, "sdk_view", refuse("first line\nsecond line"))
    assert sdk_observe({})["exception"] == "ValueError: first line"
    monkeypatch.setattr(sdkview, "sdk_view", refuse(""))
    assert sdk_observe({})["exception"] == "ValueError: "


def test_discover_view_drops_nulls():
    raw = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": None}, "instructions": None}
    assert sdk_view(raw, "server/discover") == {"ttlMs": 0, "cacheScope": "private", "supportedVersions": ["2026-07-28"],
                                                "capabilities": {}, "resultType": "complete"}


def test_a_meta_list_is_bookkeeping_at_any_depth():
    diff = compare_sdk_view({"_meta": [[{"k": 1}]]}, {"_meta": [[{}]]})
    assert diff["bookkeeping"]["dropped"] == ["_meta[0][0].k"]
    assert diff["semanticLoss"] == []
