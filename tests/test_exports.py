from __future__ import annotations

import importlib

import mcplab

MODULES = ["versions", "errors", "cases", "jsonvalue", "headers", "requests", "results", "responses", "era", "sdkview", "sse",
           "proxy_evidence", "redaction", "evidence", "release", "transcript", "conformance"]


def test_all_is_the_union_of_module_exports_without_duplicates():
    expected = [name for m in MODULES for name in importlib.import_module(f"mcplab.{m}").__all__]
    assert mcplab.__all__ == expected
    assert len(set(expected)) == len(expected)


def test_every_exported_name_exists():
    for name in mcplab.__all__:
        assert hasattr(mcplab, name), name


def test_star_import_gives_the_lab_calls():
    namespace: dict = {}
    exec("from mcplab import *", namespace)
    for name in ["validate_result", "validate_request", "validate_response", "select_era", "compare_sdk_view", "inspect_proxy",
                 "redact", "load_transcripts", "run_transcript", "ReleaseGate", "rollback_evidence_ready", "ProtocolViolation",
                 "MODERN_VERSION", "LEGACY_VERSION"]:
        assert name in namespace, name
    assert namespace["MODERN_VERSION"] == "2026-07-28" and namespace["LEGACY_VERSION"] == "2025-11-25"


def test_the_issue_lab_calls_verbatim():
    ns: dict = {}
    exec("from mcplab import *", ns)
    ProtocolViolation = ns["ProtocolViolation"]
    assert ns["validate_result"]({"tools": []}, "legacy") == "complete"
    try:
        ns["validate_result"]({"tools": []}, "modern")
    except ProtocolViolation as v:
        assert v.case == "negative-modern-missing-result-type"
    else:
        raise AssertionError("modern result without resultType was accepted")
    assert ns["select_era"]({"kind": "timeout"}, "fallback")["era"] is None
    assert ns["select_era"]({"kind": "timeout"}, "fallback", legacy_allowed=True,
                            legacy_evidence={"kind": "initialize_success", "protocolVersion": ns["LEGACY_VERSION"]})["era"] == "legacy"
    assert ns["select_era"]({"kind": "jsonrpc_error", "code": -32021}, "fallback")["era"] == "modern"
    assert ns["validate_result"]({"resultType": "complete", "tools": [], "futureHint": True}, "modern") == "complete"
    try:
        ns["validate_result"]({"resultType": "future_mode", "tools": []}, "modern")
    except ProtocolViolation as v:
        assert v.case == "negative-unknown-result-type"
    else:
        raise AssertionError("unknown resultType was accepted")
    diff = ns["compare_sdk_view"]({"resultType": "complete", "tools": [], "futureHint": {"mode": "new"}}, {"tools": []})
    assert diff["semanticLoss"] == ["futureHint"]


def test_subpackages_export_what_they_list():
    import mcplab.stockroom
    import mcplab.ui

    for package in (mcplab.stockroom, mcplab.ui):
        assert len(set(package.__all__)) == len(package.__all__), package.__name__
        for name in package.__all__:
            assert hasattr(package, name), f"{package.__name__}.{name}"
    assert {"Stockroom", "StockroomClient", "serve_stockroom", "Ledger"} <= set(mcplab.stockroom.__all__)
    assert "CircuitPanel" in mcplab.ui.__all__
