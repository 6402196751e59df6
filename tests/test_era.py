from __future__ import annotations

import json

import pytest

from mcplab import LEGACY_VERSION, select_era

INIT = {"kind": "initialize_success", "protocolVersion": LEGACY_VERSION}


def test_the_seed_lab_calls():
    silence = select_era({"kind": "timeout"}, "fallback")
    assert silence["era"] is None and silence["case"] == "era-fallback-silence-inconclusive"
    legacy = select_era({"kind": "timeout"}, "fallback", legacy_allowed=True, legacy_evidence=INIT)
    assert legacy["era"] == "legacy" and legacy["case"] == "era-fallback-legacy-proven"
    modern = select_era({"kind": "jsonrpc_error", "code": -32021}, "fallback")
    assert modern["era"] == "modern" and modern["case"] == "era-modern-error-no-downgrade"


def test_record_is_json_and_keeps_everything_together():
    record = select_era([{"kind": "timeout"}, {"kind": "empty_response"}], "fallback", legacy_allowed=True, legacy_evidence=INIT)
    assert json.loads(json.dumps(record)) == record
    assert record["mode"] == "fallback" and record["legacyAllowed"] is True
    assert [o["kind"] for o in record["observations"]] == ["timeout", "empty_response"]
    assert record["legacyEvidence"] == INIT and "initialize" in record["reason"]


@pytest.mark.parametrize("kind", ["timeout", "empty_response", "connection_closed", "unrecognized_response"])
def test_silence_never_proves_legacy(kind):
    assert select_era({"kind": kind}, "fallback")["era"] is None
    assert select_era({"kind": kind}, "strict", legacy_allowed=True, legacy_evidence=INIT)["era"] is None
    # allowed but not yet probed: the record says a bounded legacy probe may run now
    assert select_era({"kind": kind}, "fallback", legacy_allowed=True)["nextStep"] == "legacy_probe"


def test_legacy_evidence_needs_permission_and_a_legacy_version():
    assert select_era({"kind": "timeout"}, "fallback", legacy_evidence=INIT)["era"] is None
    bad = {"kind": "initialize_success", "protocolVersion": "2026-07-28"}
    assert select_era({"kind": "timeout"}, "fallback", legacy_allowed=True, legacy_evidence=bad)["era"] is None
    assert select_era({"kind": "timeout"}, "fallback", legacy_allowed=True, legacy_evidence={"kind": "initialize_failed"})["era"] is None


@pytest.mark.parametrize("code", [-32020, -32021, -32022])
def test_modern_errors_prove_modern_even_with_legacy_evidence(code):
    record = select_era({"kind": "jsonrpc_error", "code": code}, "fallback", legacy_allowed=True, legacy_evidence=INIT)
    assert record["era"] == "modern"


def test_other_errors_are_not_modern_proof():
    assert select_era({"kind": "jsonrpc_error", "code": -32601}, "strict")["era"] is None
    assert select_era({"kind": "jsonrpc_error", "code": -32601}, "fallback", legacy_allowed=True, legacy_evidence=INIT)["era"] == "legacy"


def test_strict_needs_proof():
    assert select_era({"kind": "discover_success", "supportedVersions": ["2026-07-28"]}, "strict")["era"] == "modern"
    assert select_era({"kind": "discover_success", "supportedVersions": ["2025-11-25"]}, "strict")["era"] is None
    assert select_era({"kind": "timeout"}, "strict")["case"] == "era-strict-unproven"


@pytest.mark.parametrize("args", [({"kind": "guess"}, "fallback"), ({"kind": "timeout"}, "lenient"), ({"kind": "jsonrpc_error"}, "strict"), ("timeout", "strict")])
def test_bad_input_is_a_clear_value_error(args):
    with pytest.raises(ValueError):
        select_era(*args)


def test_legacy_is_never_chosen_without_a_modern_probe():
    with pytest.raises(ValueError, match="at least one observation"):
        select_era([], "fallback", legacy_allowed=True, legacy_evidence=INIT)


def test_discover_versions_must_be_a_list_of_strings():
    with pytest.raises(ValueError, match="supportedVersions"):
        select_era({"kind": "discover_success", "supportedVersions": 5}, "strict")
