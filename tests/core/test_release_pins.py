"""Pins of the release gate: policy validation, evidence labels and reasons, stream ratios, the halt reasons.

Each test names the decision input whose handling it pins; the candidate evidence below passes as a whole.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcplab.release import (
    HealthPolicy,
    ReleaseGate,
    ReleasePolicy,
    evaluate_health,
    rollback_evidence_problems,
    sign_rollback_evidence,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KEY = b"release-controller-key"
SIGNERS = {"release-controller": KEY}
OK_RESULT = {"resultType": "complete", "tools": []}
CASE = "negative-header-body-mismatch"
JSON = [("Content-Type", "application/json")]
ERROR = {"jsonrpc": "2.0", "id": 7, "error": {"code": -32020, "message": "Header mismatch"}}
CAPTURE = {"ingress": {"headers": [], "body": {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}},
           "origin": {"status": 400, "headers": JSON, "body": ERROR},
           "egress": {"status": 400, "headers": JSON, "body": ERROR}}


def window(n=30, *, latency=100.0, span=120.0, **extra):
    return [{"t": span * i / (n - 1), "latencyMs": latency, "error": False, "saturation": 0.5, **extra} for i in range(n)]


def rollback(**overrides):
    evidence = {
        "version": "1.4.2",
        "acceptanceEvidence": {"transcriptsPassed": 15, "transcriptsTotal": 15, "digest": "cd" * 32},
        "artifactSha256": "01" * 32, "descriptorSha256": "23" * 32, "acceptanceSha256": "45" * 32,
        "registryState": "active", "health": {"healthy": True, "reasons": []},
        "routeRestoration": ["route 100% of traffic to 1.4.2"],
        "issuedAt": (NOW - timedelta(hours=1)).isoformat(), "expiresAt": (NOW + timedelta(days=1)).isoformat(),
    }
    evidence.update(overrides)
    return sign_rollback_evidence(evidence, "release-controller", KEY)


def decide(policy=None, **overrides):
    evidence = {"transcripts": [{"name": CASE, "passed": True}], "sdk_evidence": [{"raw": OK_RESULT, "view": OK_RESULT}],
                "proxy_captures": [CAPTURE], "health_samples": window(), "rollback": rollback(), "now": NOW}
    evidence.update(overrides)
    return ReleaseGate(policy or ReleasePolicy(trusted_signers=SIGNERS)).evaluate(**evidence)


def test_good_evidence_promotes():
    result = decide()
    assert (result["action"], result["reasons"], result["candidatePassed"]) == ("promote", [], True)
    assert result["rollbackTarget"] == {"index": 0, "version": "1.4.2"}


# --- HealthPolicy validation -------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"max_error_rate": float("nan")}, "max_error_rate must be a number, not NaN"),
    ({"latency_percentile": 0.0}, "latency_percentile must be in (0, 100]"),
    ({"latency_percentile": 100.5}, "latency_percentile must be in (0, 100]"),
    ({"min_samples": -1}, "min_samples must not be negative"),
    ({"min_event_ratio": -0.1}, "min_event_ratio must not be negative"),
    ({"max_first_event_ms": -1.0}, "max_first_event_ms must be None or not negative"),
    ({"max_stream_duration_ms": -0.5}, "max_stream_duration_ms must be None or not negative"),
    ({"max_first_event_ratio": 1.01}, "max_first_event_ratio must be within 0..1"),
    ({"max_first_event_ratio": -0.01}, "max_first_event_ratio must be within 0..1"),
])
def test_policy_errors(kwargs, message):
    with pytest.raises(ValueError) as caught:
        HealthPolicy(**kwargs)
    assert str(caught.value) == message


@pytest.mark.parametrize("kwargs", [{"latency_percentile": 0.5}, {"latency_percentile": 100.0}, {"max_first_event_ms": 0.0},
                                    {"max_stream_duration_ms": 0.5}, {"max_first_event_ratio": 0.0},
                                    {"max_first_event_ratio": 1.0}, {"min_samples": 0}])
def test_policy_boundaries_accepted(kwargs):
    HealthPolicy(**kwargs)


# --- stream ratios -------------------------------------------------------------------------------------

def stream_window(count, duration, first):
    return window(streamDurationMs=duration, firstEventMs=first, eventCount=count)


def test_the_first_event_ratio_counts_streams_of_two_events_or_more():
    assert evaluate_health(stream_window(2, 100.0, 50.0))["metrics"]["stream"]["firstEventRatio"] == 0.5
    assert evaluate_health(stream_window(1, 100.0, 50.0))["metrics"]["stream"]["firstEventRatio"] is None
    assert evaluate_health(stream_window(3, 100.0, 25.0))["metrics"]["stream"]["firstEventRatio"] == 0.25


def test_a_zero_length_stream_has_ratio_one():
    assert evaluate_health(stream_window(2, 0.0, 0.0))["metrics"]["stream"]["firstEventRatio"] == 1.0


# --- rollback evidence messages ---------------------------------------------------------------------------

def problems(evidence):
    return rollback_evidence_problems(evidence, SIGNERS, NOW)


@pytest.mark.parametrize("acceptance, expected", [
    ("all good", "acceptanceEvidence: must be an object, got str"),
    ({"transcriptsPassed": 0, "transcriptsTotal": 1, "digest": "cd" * 32}, "acceptanceEvidence: only 0 of 1 transcripts passed"),
    ({"transcriptsPassed": 2, "transcriptsTotal": 1, "digest": "cd" * 32}, "acceptanceEvidence: only 2 of 1 transcripts passed"),
])
def test_acceptance_problems(acceptance, expected):
    assert expected in problems(rollback(acceptanceEvidence=acceptance))


def test_one_of_one_transcripts_passed_is_accepted():
    assert problems(rollback(acceptanceEvidence={"transcriptsPassed": 1, "transcriptsTotal": 1, "digest": "cd" * 32})) == []


def test_certificate_problems():
    evidence = rollback()
    assert problems({**evidence, "certificate": "signed"}) == ["certificate: must be an object, got str"]
    cert = {**evidence["certificate"], "algorithm": "MD5", "signature": "XYZ"}
    found = problems({**evidence, "certificate": cert})
    assert "certificate.algorithm: must be 'HMAC-SHA-256', got 'MD5'" in found
    assert "certificate.signature: must be 64 lowercase hex characters (HMAC-SHA-256)" in found


# --- the gate's reasons ------------------------------------------------------------------------------------

def test_halt_reasons_name_what_is_missing():
    assert decide(rollback=None)["reasons"] == ["rollback target not proven: verify rollback evidence before promotion"]
    failing = decide(rollback=None, transcripts=[{"name": CASE, "passed": False}])
    assert failing["reasons"] == [f"transcripts failed: {CASE}", "rollback target not proven: halting traffic instead of guessing"]


def test_transcript_reasons():
    transcripts = [{"name": CASE, "passed": False, "label": "mine"}, "junk", {"name": CASE, "passed": True},
                   {"name": CASE, "variant": "b", "passed": False}, {"name": CASE, "variant": "b", "passed": True}]
    assert decide(transcripts=transcripts)["reasons"] == [
        f"transcripts failed: {CASE}, {CASE}",
        "transcript #1: malformed evidence (needs a known case 'name' and a boolean 'passed')",
        f"transcript {CASE}: the same verdict appears twice",
        f"transcript {CASE}: the same verdict appears twice",
    ]


@pytest.mark.parametrize("evidence", ["abc", b"abc", [], None, 5])
def test_missing_evidence_lists(evidence):
    reasons = decide(transcripts=evidence, sdk_evidence=evidence, proxy_captures=evidence)["reasons"]
    assert reasons[:3] == ["no transcript evidence", "no SDK-diff evidence", "no proxy evidence"]


def test_sdk_reasons_and_diffs():
    items = [{"raw": OK_RESULT}, "junk", {"raw": OK_RESULT, "view": None, "name": "refused"},
             {"raw": OK_RESULT, "view": None, "exception": "ValidationError: x"},
             {"raw": {**OK_RESULT, "hint": 1, "gone": 2}, "view": OK_RESULT, "label": "lossy"},
             {"raw": {**OK_RESULT, "extra": 1}, "view": OK_RESULT}]
    policy = ReleasePolicy(trusted_signers=SIGNERS, allowed_drops=("gone", "extra", "unused"))
    result = decide(policy, sdk_evidence=items)
    assert result["reasons"] == [
        "SDK evidence #0: malformed (needs the raw result and the SDK's view)",
        "SDK evidence #1: malformed (needs the raw result and the SDK's view)",
        "SDK evidence refused: the SDK refused the result (no reason recorded)",
        "SDK evidence #3: the SDK refused the result (ValidationError: x)",
        "SDK diff lossy: semantic loss of 'hint' not allowed by policy",
    ]
    assert [d["label"] for d in result["sdkDiffs"]] == ["lossy", "#5"]
    assert result["allowedDrops"] == ["extra", "gone"]
    assert result["unusedAllowedDrops"] == ["unused"]


def test_proxy_reasons_and_findings():
    bad = {**CAPTURE, "egress": {"status": 500, "headers": JSON, "body": ERROR}, "name": "edge"}
    hollow = {**CAPTURE, "origin": {}, "label": "hollow"}
    result = decide(proxy_captures=["junk", hollow, {**CAPTURE, "origin": {}}, bad, dict(bad, name="")])
    assert result["reasons"] == [
        "proxy capture #0: malformed (needs ingress, origin and egress)",
        "proxy capture hollow: malformed evidence: origin.status must be an HTTP status code, got None",
        "proxy capture #2: malformed evidence: origin.status must be an HTTP status code, got None",
        "proxy issue: proxy collapsed a protocol error into HTTP 500",
        "proxy issue: proxy collapsed a protocol error into HTTP 500",
    ]
    assert [(f["label"], f["case"]) for f in result["proxyFindings"]] == [
        ("edge", "negative-proxy-collapsed-error"), ("#4", "negative-proxy-collapsed-error")]


def test_health_reasons():
    result = decide(health_samples=window(n=5, latency=900.0))
    assert result["reasons"][0].startswith("health window not healthy: ")
    assert "; " in result["reasons"][0]
    assert decide(health_samples=None)["reasons"][0] == "no health evidence"
    assert decide(health_samples=[{"t": 0}])["reasons"][0].startswith("health window: malformed evidence: health sample 0: ")


def test_deep_evidence_is_a_reason_not_a_crash():
    deep: object = {"x": 1}
    for _ in range(5000):
        deep = {"x": deep}
    origin = {**CAPTURE["origin"], "body": deep}
    result = decide(sdk_evidence=[{"raw": deep, "view": deep}], proxy_captures=[{**CAPTURE, "origin": origin, "egress": origin}])
    assert result["reasons"][:2] == ["SDK evidence is nested too deeply to judge", "proxy evidence is nested too deeply to judge"]
    assert (result["sdkDiffs"], result["proxyFindings"]) == ([], [])


def test_a_target_without_a_version_string():
    result = decide(rollback=[rollback(version=5)])
    assert result["rollbackCandidates"][0]["version"] is None


def test_stream_regression_needs_a_target_that_saw_streams():
    slow = stream_window(3, 1000.0, 990.0)
    streamed = {"healthy": True, "reasons": [], "metrics": {"stream": {"samples": 1}}}
    never = {"healthy": True, "reasons": [], "metrics": {"stream": {"samples": 0}}}
    result = decide(health_samples=slow, rollback=[rollback(health=never), rollback(health=streamed)])
    assert result["action"] == "rollback"
    assert result["rollbackTarget"]["index"] == 1
    assert result["rollbackCandidates"][0]["problems"] == [
        "health.metrics.stream: the candidate's stream regressed and this target's signed health never observed a stream"]
