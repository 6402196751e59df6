"""Pins of ``select_era``: the whole decision record (era, case, reason, nextStep) for every path, and its input errors."""

from __future__ import annotations

import pytest

from mcplab.era import INCONCLUSIVE_KINDS, MODES, OBSERVATION_KINDS, select_era
from mcplab.versions import LEGACY_VERSION, MODERN_VERSION

INIT = {"kind": "initialize_success", "protocolVersion": LEGACY_VERSION}
SILENCE = "the modern probe was inconclusive ({kinds}), which does not prove legacy"


def record(era, mode, allowed, observations, evidence, reason, case, next_step=None):
    return {"era": era, "mode": mode, "legacyAllowed": allowed, "observations": observations,
            "legacyEvidence": evidence, "reason": reason, "case": case, "nextStep": next_step}


def test_the_documented_tables():
    assert MODES == ("strict", "fallback")
    assert set(OBSERVATION_KINDS) == {"discover_success", "jsonrpc_error", *INCONCLUSIVE_KINDS}
    assert INCONCLUSIVE_KINDS == {"timeout", "empty_response", "connection_closed", "unrecognized_response"}


@pytest.mark.parametrize("mode", ["strict", "fallback"])
def test_discover_success_proves_modern_in_both_modes(mode):
    obs = {"kind": "discover_success", "supportedVersions": [LEGACY_VERSION, MODERN_VERSION]}
    assert select_era(obs, mode) == record("modern", mode, False, [obs], None, "server/discover succeeded", "era-strict-modern-proven")


def test_discover_success_without_versions_proves_modern():
    obs = {"kind": "discover_success"}
    got = select_era(obs, "fallback", legacy_allowed=True, legacy_evidence=INIT)
    assert got == record("modern", "fallback", True, [obs], INIT, "server/discover succeeded", "era-strict-modern-proven")


def test_discover_success_listing_only_legacy_versions_proves_nothing():
    obs = {"kind": "discover_success", "supportedVersions": [LEGACY_VERSION]}
    got = select_era(obs, "strict")
    assert got == record(None, "strict", False, [obs], None,
                         "strict mode requires proof of modern behaviour; observed only discover_success", "era-strict-unproven")
    empty = {"kind": "discover_success", "supportedVersions": []}
    assert select_era(empty, "strict")["era"] is None


@pytest.mark.parametrize("code", [-32020, -32021, -32022])
def test_a_modern_error_proves_modern_with_its_case_per_mode(code):
    obs = {"kind": "jsonrpc_error", "code": code}
    reason = f"the server answered the modern error {code}: a recognised modern error proves modern; never fall back"
    assert select_era(obs, "fallback") == record("modern", "fallback", False, [obs], None, reason, "era-modern-error-no-downgrade")
    assert select_era(obs, "strict") == record("modern", "strict", False, [obs], None, reason, "era-strict-modern-proven")


def test_the_first_proof_wins_and_later_observations_are_kept():
    first = {"kind": "timeout"}
    proof = {"kind": "jsonrpc_error", "code": -32022}
    later = {"kind": "discover_success"}
    got = select_era([first, proof, later], "fallback")
    assert got["case"] == "era-modern-error-no-downgrade"
    assert got["observations"] == [first, proof, later]


def test_strict_unproven_lists_the_sorted_distinct_kinds():
    obs = [{"kind": "timeout"}, {"kind": "empty_response"}, {"kind": "timeout"}, {"kind": "jsonrpc_error", "code": -32601}]
    got = select_era(obs, "strict", legacy_allowed=True, legacy_evidence=INIT)
    assert got == record(None, "strict", True, obs, INIT,
                         "strict mode requires proof of modern behaviour; observed only empty_response, jsonrpc_error, timeout",
                         "era-strict-unproven")


def test_fallback_silence_not_allowed_legacy():
    obs = [{"kind": "connection_closed"}, {"kind": "timeout"}]
    silence = SILENCE.format(kinds="connection_closed, timeout")
    assert select_era(obs, "fallback") == record(None, "fallback", False, obs, None, silence, "era-fallback-silence-inconclusive")
    ignored = silence + "; legacy evidence ignored: this endpoint is not allowed legacy"
    assert select_era(obs, "fallback", legacy_evidence=INIT) == record(None, "fallback", False, obs, INIT, ignored,
                                                                       "era-fallback-silence-inconclusive")
    # empty evidence is no evidence: nothing to ignore
    assert select_era(obs, "fallback", legacy_evidence={})["reason"] == silence


def test_fallback_silence_allowed_without_proof_permits_the_legacy_probe():
    obs = {"kind": "unrecognized_response"}
    reason = SILENCE.format(kinds="unrecognized_response") + "; legacy is allowed but no successful initialize negotiated a legacy version"
    assert select_era(obs, "fallback", legacy_allowed=True) == record(None, "fallback", True, [obs], None, reason,
                                                                      "era-fallback-silence-inconclusive", "legacy_probe")


@pytest.mark.parametrize("evidence", [
    {"kind": "initialize_success", "protocolVersion": MODERN_VERSION},
    {"kind": "initialize_success", "protocolVersion": "2099-01-01"},
    {"kind": "initialize_failed", "protocolVersion": LEGACY_VERSION},
    {"protocolVersion": LEGACY_VERSION},
    [("kind", "initialize_success")],
    "initialize_success",
])
def test_legacy_evidence_that_is_not_a_legacy_initialize_is_no_proof(evidence):
    got = select_era({"kind": "timeout"}, "fallback", legacy_allowed=True, legacy_evidence=evidence)
    assert (got["era"], got["case"], got["nextStep"]) == (None, "era-fallback-silence-inconclusive", "legacy_probe")
    assert got["legacyEvidence"] == evidence


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_fallback_legacy_proven(version):
    evidence = {"kind": "initialize_success", "protocolVersion": version}
    obs = {"kind": "empty_response"}
    reason = SILENCE.format(kinds="empty_response") + f"; the endpoint is allowed legacy and initialize succeeded and negotiated {version}"
    got = select_era(obs, "fallback", legacy_allowed=True, legacy_evidence=evidence)
    assert got == record("legacy", "fallback", True, [obs], evidence, reason, "era-fallback-legacy-proven")


def test_the_record_copies_its_inputs():
    obs = {"kind": "timeout"}
    evidence = dict(INIT)
    got = select_era(obs, "fallback", legacy_allowed=True, legacy_evidence=evidence)
    obs["kind"] = "changed"
    evidence["protocolVersion"] = "changed"
    assert got["observations"] == [{"kind": "timeout"}]
    assert got["legacyEvidence"] == INIT


def test_observations_may_be_a_tuple_or_a_generator():
    assert select_era(({"kind": "timeout"},), "strict")["observations"] == [{"kind": "timeout"}]
    assert select_era((o for o in [{"kind": "discover_success"}]), "strict")["era"] == "modern"


def error_of(*args, **kwargs) -> str:
    with pytest.raises(ValueError) as caught:
        select_era(*args, **kwargs)
    return str(caught.value)


def test_input_errors_name_the_problem():
    assert error_of({"kind": "timeout"}, "lenient") == "unknown mode 'lenient': expected one of strict, fallback"
    assert error_of({"kind": "timeout"}, "fallback", legacy_allowed=1) == "legacy_allowed must be a boolean, got 1"
    assert error_of({"kind": "timeout"}, "fallback", legacy_allowed=None) == "legacy_allowed must be a boolean, got None"
    assert error_of([], "strict") == "select_era needs at least one observation of the modern probe: legacy is never chosen unprobed"
    assert error_of([{"kind": "timeout"}, 5], "strict") == "observation 1 must be an object with a 'kind', got 5"
    assert error_of([{"kind": "guess"}], "strict") == (
        "observation 0 has unknown kind 'guess': expected one of discover_success, jsonrpc_error, timeout, "
        "empty_response, connection_closed, unrecognized_response")
    assert error_of({}, "strict").startswith("observation 0 has unknown kind None")


@pytest.mark.parametrize("code", [None, "-32020", True, 1.0])
def test_a_jsonrpc_error_needs_an_integer_code(code):
    obs = {"kind": "jsonrpc_error"} if code is None else {"kind": "jsonrpc_error", "code": code}
    assert error_of([{"kind": "timeout"}, obs], "strict") == f"observation 1 (jsonrpc_error) needs an integer 'code', got {code!r}"


@pytest.mark.parametrize("versions", [5, "2026-07-28", [MODERN_VERSION, 1], None])
def test_discover_supported_versions_must_be_a_list_of_strings(versions):
    obs = {"kind": "discover_success", "supportedVersions": versions}
    assert error_of([{"kind": "timeout"}, obs], "strict") == (
        f"observation 1 (discover_success) supportedVersions must be a list of strings, got {versions!r}")


def test_supported_versions_on_another_kind_is_not_checked():
    assert select_era({"kind": "timeout", "supportedVersions": 5}, "strict")["era"] is None
