"""Pins of the release gate: policy validation, evidence labels and reasons, stream ratios, the halt reasons.

Each test names the decision input whose handling it pins; the candidate evidence below passes as a whole:
the verdicts of the whole shipped transcript suite (run here, issue 15: evidence covers the suite bound by
its digest) and rollback evidence whose ``acceptanceSha256`` is the digest of its ``acceptanceEvidence``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcplab.errors import EvidenceError
from mcplab.evidence import evidence_digest
from mcplab.release import (
    HealthPolicy,
    ReleaseGate,
    ReleasePolicy,
    evaluate_health,
    rollback_evidence_problems,
    sign_rollback_evidence,
    suite_digest,
)
from mcplab.transcript import load_transcripts, run_transcript

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
#: Real verdicts of the whole shipped suite (every one passes) and the digest that names that suite.
FULL = [run_transcript(t).to_dict() for t in load_transcripts()]
SUITE_KEYS = sorted(f"{v['name']}.{v['variant']}" if v["variant"] else v["name"] for v in FULL)
SUITE = suite_digest(SUITE_KEYS)


def window(n=30, *, latency=100.0, span=120.0, **extra):
    return [{"t": span * i / (n - 1), "latencyMs": latency, "error": False, "saturation": 0.5, **extra} for i in range(n)]


def rollback(**overrides):
    evidence = {
        "version": "1.4.2",
        "acceptanceEvidence": {"transcriptsPassed": 15, "transcriptsTotal": 15, "digest": "cd" * 32},
        "artifactSha256": "01" * 32, "descriptorSha256": "23" * 32,
        "registryState": "active", "health": {"healthy": True, "reasons": []},
        "routeRestoration": ["route 100% of traffic to 1.4.2"],
        "issuedAt": (NOW - timedelta(hours=1)).isoformat(), "expiresAt": (NOW + timedelta(days=1)).isoformat(),
    }
    evidence.update(overrides)
    if "acceptanceSha256" not in overrides:  # tied to the acceptance evidence it names (issue 15)
        evidence["acceptanceSha256"] = evidence_digest(evidence["acceptanceEvidence"])
    return sign_rollback_evidence(evidence, "release-controller", KEY)


def verdicts(*changed):
    """The full suite's verdicts with ``changed`` ({name, variant?, passed, ...}) replacing the same verdict."""
    keyed = {(v["name"], v.get("variant")): v for v in changed}
    return [keyed.get((v["name"], v["variant"]), v) for v in FULL]


def decide(policy=None, **overrides):
    evidence = {"transcripts": FULL, "sdk_evidence": [{"raw": OK_RESULT, "view": OK_RESULT}],
                "proxy_captures": [CAPTURE], "health_samples": window(), "rollback": rollback(), "now": NOW}
    evidence.update(overrides)
    return ReleaseGate(policy or ReleasePolicy(trusted_signers=SIGNERS)).evaluate(**evidence)


def test_good_evidence_promotes():
    result = decide()
    assert (result["action"], result["reasons"], result["candidatePassed"]) == ("promote", [], True)
    assert result["rollbackTarget"] == {"index": 0, "version": "1.4.2"}
    assert result["suiteDigest"] == SUITE and len(SUITE_KEYS) == len(set(SUITE_KEYS)) == len(FULL)


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
    failing = decide(rollback=None, transcripts=verdicts({"name": CASE, "variant": None, "passed": False}))
    assert failing["reasons"] == [f"transcripts failed: {CASE}", "rollback target not proven: halting traffic instead of guessing"]


MALFORMED = "malformed evidence (needs a known case 'name', an optional string 'variant' and a boolean 'passed')"


def test_transcript_reasons():
    suite = (CASE, f"{CASE}.b", "golden-modern-list")
    policy = ReleasePolicy(trusted_signers=SIGNERS, suite=suite)
    transcripts = [{"name": CASE, "passed": False, "label": "mine"}, "junk", {"name": CASE, "passed": True},
                   {"name": CASE, "variant": "b", "passed": False}, {"name": CASE, "variant": "b", "passed": True},
                   {"name": CASE, "variant": ["b"], "passed": True}, {"name": CASE, "variant": "", "passed": True},
                   {"name": "no-such-case", "passed": True}, {"name": CASE, "passed": 1}, {"name": 5, "passed": True},
                   {"name": "golden-modern-call", "passed": True}]
    digest = suite_digest(list(suite))[:12]
    assert decide(policy, transcripts=transcripts)["reasons"] == [
        f"transcripts failed: {CASE}, {CASE}",
        f"transcript #1: {MALFORMED}",
        f"transcript {CASE}: the same verdict appears twice",
        f"transcript {CASE}.b: the same verdict appears twice",
        *(f"transcript #{i}: {MALFORMED}" for i in range(5, 10)),
        f"transcript golden-modern-call: not a verdict of suite {digest}",
        f"transcript evidence covers 2 of 3 verdicts of suite {digest}; missing: golden-modern-list",
    ]


def test_evidence_must_cover_the_whole_shipped_suite():
    """Issue 15: one hand-written verdict is not the suite; the reason counts and names what is missing (5, then a count)."""
    missing = SUITE_KEYS[3:]
    result = decide(transcripts=sorted(FULL, key=lambda v: (v["name"], v["variant"] or ""))[:3])
    assert result["action"] == "rollback" and result["candidatePassed"] is False
    assert result["reasons"] == [f"transcript evidence covers 3 of {len(FULL)} verdicts of suite {SUITE[:12]}; "
                                 f"missing: {', '.join(missing[:5])} and {len(missing) - 5} more"]
    short = ReleasePolicy(trusted_signers=SIGNERS, suite=SUITE_KEYS[:6])
    assert decide(short, transcripts=[v for v in FULL if (f"{v['name']}.{v['variant']}" if v["variant"] else v["name"])
                                      in SUITE_KEYS[:1]])["reasons"] == [
        f"transcript evidence covers 1 of 6 verdicts of suite {suite_digest(SUITE_KEYS[:6])[:12]}; "
        f"missing: {', '.join(SUITE_KEYS[1:6])}"]


def test_a_failed_verdict_of_the_full_suite_is_named():
    result = decide(transcripts=verdicts({"name": CASE, "variant": None, "passed": False}))
    assert (result["action"], result["reasons"]) == ("rollback", [f"transcripts failed: {CASE}"])


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
        "SDK evidence refused: not an observation (no view and no exception recorded)",
        "SDK evidence #3: the SDK refused the result (ValidationError: x)",
        "SDK diff lossy: semantic loss of 'hint' not allowed by policy",
    ]
    assert [d["label"] for d in result["sdkDiffs"]] == ["lossy", "#5"]
    assert result["allowedDrops"] == ["extra", "gone"]
    assert result["unusedAllowedDrops"] == ["unused"]


@pytest.mark.parametrize("item, why", [
    ({"raw": {}, "view": {}}, "the raw result is empty"),
    ({"raw": OK_RESULT, "view": {}}, "the SDK's view must be a non-empty object, or null with the exception it raised"),
    ({"raw": OK_RESULT, "view": [1]}, "the SDK's view must be a non-empty object, or null with the exception it raised"),
    ({"raw": OK_RESULT, "view": None, "exception": "  "}, "no view and no exception recorded"),
    ({"raw": OK_RESULT, "view": None, "exception": 5}, "no view and no exception recorded"),
    ({"raw": OK_RESULT, "view": OK_RESULT, "sdk": 5, "era": None, "method": "tools/list"}, "sdk, era must be strings"),
])
def test_sdk_evidence_must_be_an_observation(item, why):
    """Issue 15: an SDK pair that records nothing (``{"raw": {}, "view": {}}``) is not evidence."""
    result = decide(sdk_evidence=[item])
    assert (result["action"], result["reasons"], result["sdkDiffs"]) == ("rollback", [f"SDK evidence #0: not an observation ({why})"], [])


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
    # issue 15: proxy_findings judges deep captures without recursion (this one is faithful); the SDK diff still cannot
    assert result["reasons"] == ["SDK evidence is nested too deeply to judge"]
    assert (result["sdkDiffs"], result["proxyFindings"]) == ([], [])
    collapsed = {**origin, "status": 500}
    found = decide(proxy_captures=[{**CAPTURE, "origin": origin, "egress": collapsed}])["proxyFindings"]
    assert [f["case"] for f in found] == ["negative-proxy-changed-status"]


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


# --- second batch: policy dict, stream findings, freshness, baseline and sample errors ----------------

def test_policy_to_dict():
    assert HealthPolicy().to_dict() == {
        "minSamples": 20, "maxErrorRate": 0.01, "latencyPercentile": 99.0, "maxLatencyMs": 500.0, "maxSaturation": 0.8,
        "minDurationS": 60.0, "maxRegressionRatio": 1.5, "maxFirstEventRatio": 0.8, "maxFirstEventMs": None,
        "maxStreamDurationMs": None, "minStreamEvents": 1, "minEventRatio": 1.0}
    custom = HealthPolicy(max_first_event_ms=5.0, max_stream_duration_ms=6.0, min_stream_events=2, min_event_ratio=0.5)
    assert (custom.to_dict()["maxFirstEventMs"], custom.to_dict()["maxStreamDurationMs"]) == (5.0, 6.0)
    assert (custom.to_dict()["minStreamEvents"], custom.to_dict()["minEventRatio"]) == (2, 0.5)


def test_stream_findings_in_full():
    policy = HealthPolicy(max_first_event_ms=100.0, max_stream_duration_ms=500.0, min_stream_events=4)
    result = evaluate_health(stream_window(3, 1000.0, 900.0), policy)
    assert result["streamFindings"] == [
        {"case": "negative-sse-buffered", "metric": "firstEventRatio", "value": 0.9, "limit": 0.8,
         "message": "stream p99 first event at 0.90 of the stream's duration, above maximum 0.8: held back and released at once"},
        {"case": "negative-sse-stream-regressed", "metric": "firstEventMs", "value": 900.0, "limit": 100.0,
         "message": "stream p99 first-event latency 900 ms above maximum 100 ms"},
        {"case": "negative-sse-stream-regressed", "metric": "durationMs", "value": 1000.0, "limit": 500.0,
         "message": "stream p99 duration 1000 ms above maximum 500 ms"},
        {"case": "negative-sse-events-lost", "metric": "minEvents", "value": 3, "limit": 4,
         "message": "a stream carried 3 events, fewer than the minimum 4"},
    ]
    assert result["reasons"] == [f["message"] for f in result["streamFindings"]]


def test_stream_ceilings_are_inclusive():
    policy = HealthPolicy(max_first_event_ms=10.0, max_stream_duration_ms=100.0, max_first_event_ratio=0.1, min_stream_events=3)
    assert evaluate_health(stream_window(3, 100.0, 10.0), policy)["streamFindings"] == []


def test_stream_regression_against_a_baseline():
    policy = HealthPolicy(min_event_ratio=0.5)
    base = {"latencyMs": 100.0, "errorRate": 0.0, "stream": {"firstEventMs": 10.0, "durationMs": 100.0, "minEvents": 8}}
    result = evaluate_health(stream_window(3, 151.0, 16.0), policy, base)
    assert result["streamFindings"] == [
        {"case": "negative-sse-stream-regressed", "metric": "firstEventMs", "value": 16.0, "limit": 15.0,
         "message": "stream p99 first-event latency 16 ms regressed above baseline 10 ms x 1.5 = 15 ms"},
        {"case": "negative-sse-stream-regressed", "metric": "durationMs", "value": 151.0, "limit": 150.0,
         "message": "stream p99 duration 151 ms regressed above baseline 100 ms x 1.5 = 150 ms"},
        {"case": "negative-sse-events-lost", "metric": "minEvents", "value": 3, "limit": 4.0,
         "message": "a stream carried 3 events, fewer than baseline 8 x 0.5 = 4"},
    ]
    assert evaluate_health(stream_window(4, 150.0, 15.0), policy, base)["streamFindings"] == []


def test_latency_regression_message():
    result = evaluate_health(window(latency=151.0), HealthPolicy(), {"latencyMs": 100.0, "errorRate": 0.0})
    assert result["reasons"] == ["p99 latency 151 ms regressed above baseline 100 ms x 1.5 = 150 ms"]


def test_window_metrics():
    shifted = [{**s, "t": s["t"] + 10.0} for s in window()]
    assert evaluate_health(shifted)["metrics"]["durationS"] == 120.0
    empty = evaluate_health([])
    assert empty["metrics"]["durationS"] == 0.0
    assert empty["reasons"][0] == "no health samples: a window never observed cannot be healthy"
    ranked = [{"t": float(i), "latencyMs": float(i), "error": False} for i in range(200)]
    assert evaluate_health(ranked, HealthPolicy(latency_percentile=100.0))["metrics"]["latencyMs"] == 199.0


@pytest.mark.parametrize("samples, message", [
    ("abc", "health samples must be a list of objects, got str"),
    ({"t": 0}, "health samples must be a list of objects, got dict"),
    ([5], "health sample 0: must be an object, got int"),
    ([{"t": 0, "latencyMs": -1, "error": False}], "health sample 0: field 'latencyMs' must not be negative"),
    ([{"t": 0, "latencyMs": 1, "error": False, "saturation": "x"}], "health sample 0: field 'saturation' must be a finite number, got 'x'"),
    ([{"t": 0, "latencyMs": 1, "error": False, "streamDurationMs": 5, "firstEventMs": "x", "eventCount": 1}],
     "health sample 0: field 'firstEventMs' must be a finite number, got 'x'"),
])
def test_sample_errors(samples, message):
    with pytest.raises(EvidenceError) as caught:
        evaluate_health(samples)
    assert str(caught.value) == message


def test_sample_boundaries_accepted():
    health = evaluate_health([{"t": 0, "latencyMs": 0, "error": False, "saturation": 0.0},
                              {"t": 1, "latencyMs": 0.5, "error": True, "saturation": 1.0}])
    assert health["metrics"] == {"samples": 2, "errorRate": 0.5, "latencyPercentile": 99.0, "latencyMs": 0.5,
                                 "durationS": 1.0, "maxSaturation": 1.0}


@pytest.mark.parametrize("baseline, message", [
    ([1], "health baseline must be a metrics object, got list"),
    ({"errorRate": 0.0}, "health baseline: field 'latencyMs' must be a finite number, got None"),
    ({"latencyMs": 1.0, "errorRate": 0.0, "stream": [1]}, "health baseline: field 'stream' must be an object, got list"),
])
def test_baseline_errors(baseline, message):
    with pytest.raises(EvidenceError) as caught:
        evaluate_health(window(), HealthPolicy(), baseline)
    assert str(caught.value) == message


def test_freshness():
    at = NOW.isoformat()
    assert "expiresAt: must be later than issuedAt" in problems(rollback(issuedAt=at, expiresAt=at))
    assert problems(rollback(issuedAt=at)) == []
    expired = problems(rollback(issuedAt=(NOW - timedelta(days=1)).isoformat(), expiresAt=at))
    assert expired == [f"expiresAt: the evidence expired at {at}; re-verify the rollback target"]
    naive = problems(rollback(expiresAt="2027-01-01T00:00:00"))
    assert naive == ["expiresAt: must be an ISO 8601 timestamp with a UTC offset, got '2027-01-01T00:00:00'"]


def test_signing_errors_and_copies():
    with pytest.raises(EvidenceError, match=r"^rollback evidence signing key must be non-empty bytes$"):
        sign_rollback_evidence({}, "s", "text key")
    with pytest.raises(EvidenceError, match=r"^rollback evidence signing key must be non-empty bytes$"):
        sign_rollback_evidence({}, "s", b"")
    with pytest.raises(EvidenceError, match=r"^rollback evidence must be an object, got list$"):
        sign_rollback_evidence([], "s", KEY)
    source = {"version": "1", "nested": {"a": [1]}}
    signed = sign_rollback_evidence(source, "s", KEY)
    signed["nested"]["a"].append(2)
    assert source == {"version": "1", "nested": {"a": [1]}}


def test_problem_messages_for_odd_shapes():
    assert problems([1]) == ["rollback evidence: must be an object, got list"]
    assert "health: must be an object, got str" in problems(rollback(health="ok"))
    assert problems(rollback(acceptanceEvidence={"transcriptsPassed": 1, "transcriptsTotal": 0, "digest": "cd" * 32})) == [
        "acceptanceEvidence.transcriptsTotal: must be a positive integer, got 0"]


def test_the_certificate_itself_is_not_scanned_for_secrets():
    evidence = rollback()
    evidence["certificate"] = {**evidence["certificate"], "token": "not part of the signed evidence"}
    assert problems(evidence) == []


def test_release_policy_validation():
    assert ReleasePolicy(allowed_drops=["a", "b"]).allowed_drops == ("a", "b")
    with pytest.raises(ValueError, match=r"^allowed_drops must be field path strings$"):
        ReleasePolicy(allowed_drops=[1])
    with pytest.raises(ValueError, match=r"^trusted_signers maps a signer name to a non-empty bytes key; got '' -> bytes$"):
        ReleasePolicy(trusted_signers={"": b"k"})
    with pytest.raises(ValueError, match=r"^trusted_signers maps a signer name to a non-empty bytes key; got 's' -> str$"):
        ReleasePolicy(trusted_signers={"s": "k"})


def test_nested_too_deeply_names_its_source():
    nested: object = {"x": 1}
    for _ in range(5000):
        nested = {"x": nested}
    target = {**rollback(), "extra": nested}
    assert decide(rollback=[target])["rollbackCandidates"][0]["problems"] == ["rollback evidence is nested too deeply to judge"]


def test_labels_must_be_non_empty_strings():
    bad = {**CAPTURE, "egress": {"status": 500, "headers": JSON, "body": ERROR}, "name": 5}
    assert decide(proxy_captures=[bad])["proxyFindings"][0]["label"] == "#0"


def test_a_target_health_that_is_not_an_object_never_observed_streams():
    result = decide(health_samples=stream_window(3, 1000.0, 990.0), rollback=[rollback(health="x")])
    assert ("health.metrics.stream: the candidate's stream regressed and this target's signed health never observed a stream"
            in result["rollbackCandidates"][0]["problems"])


def test_unhealthy_reasons_are_joined():
    reason = decide(health_samples=window(n=5, latency=900.0))["reasons"][0]
    assert reason == ("health window not healthy: only 5 health samples, fewer than the minimum 20; "
                      "p99 latency 900 ms above maximum 500 ms")


@pytest.mark.parametrize("signer", ["", 5, None])
def test_the_signer_is_a_non_empty_string(signer):
    with pytest.raises(EvidenceError) as caught:
        sign_rollback_evidence({}, signer, KEY)
    assert str(caught.value) == "rollback evidence signer must be a non-empty string"


# --- issue 15: acceptance digest, validity window, versions, the suite claim, a naive now ---------------------

def test_the_acceptance_digest_must_name_the_acceptance_evidence():
    assert problems(rollback(acceptanceSha256="45" * 32)) == [
        "acceptanceSha256: is not the digest of acceptanceEvidence (evidence_digest of it)"]
    other = {"transcriptsPassed": 14, "transcriptsTotal": 14, "digest": "cd" * 32}
    assert problems(rollback(acceptanceSha256=evidence_digest(other))) == [
        "acceptanceSha256: is not the digest of acceptanceEvidence (evidence_digest of it)"]
    unsigned = {**rollback(), "acceptanceEvidence": {"transcriptsPassed": 1, "transcriptsTotal": 1, "digest": "cd" * 32,
                                                     "x": float("nan")}}
    assert problems(unsigned) == ["acceptanceSha256: the acceptance evidence is not JSON, so no digest can name it",
                                  "certificate: cannot verify, evidence is not JSON: $.acceptanceEvidence.x is nan "
                                  "(NaN and infinity are not JSON)"]
    # a malformed acceptanceSha256 is reported once, as a digest, not also as a mismatch
    assert problems(rollback(acceptanceSha256="XY")) == ["acceptanceSha256: must be 64 lowercase hex characters (SHA-256)"]


def test_a_validity_window_has_a_maximum():
    issued = NOW - timedelta(hours=1)
    longest = rollback(issuedAt=issued.isoformat(), expiresAt=(issued + timedelta(days=30)).isoformat())
    assert problems(longest) == []
    longer = rollback(issuedAt=issued.isoformat(), expiresAt=(issued + timedelta(days=30, seconds=1)).isoformat())
    assert problems(longer) == ["expiresAt: a validity window may last at most 30 days (issuedAt to expiresAt is 30 days)"]
    assert rollback_evidence_problems(longer, SIGNERS, NOW, max_validity=timedelta(days=31)) == []
    year = rollback(issuedAt=issued.isoformat(), expiresAt=(issued + timedelta(days=365)).isoformat())
    assert problems(year) == ["expiresAt: a validity window may last at most 30 days (issuedAt to expiresAt is 365 days)"]
    future = rollback(issuedAt=(NOW + timedelta(seconds=1)).isoformat())
    assert problems(future) == [f"issuedAt: {(NOW + timedelta(seconds=1)).isoformat()} is in the future"]
    gate = ReleaseGate(ReleasePolicy(trusted_signers=SIGNERS, max_validity=timedelta(hours=2)))
    target = gate.evaluate(transcripts=FULL, sdk_evidence=[{"raw": OK_RESULT, "view": OK_RESULT}], proxy_captures=[CAPTURE],
                           health_samples=window(), rollback=rollback(), now=NOW)["rollbackCandidates"][0]
    assert target["problems"] == ["expiresAt: a validity window may last at most 0 days (issuedAt to expiresAt is 1 days)"]


@pytest.mark.parametrize("version, message", [
    ("HEAD", "version: 'HEAD' is not a version (expected digits such as 1.4.2, not a branch or commit)"),
    ("main", "version: 'main' is not a version (expected digits such as 1.4.2, not a branch or commit)"),
    ("1" * 65, f"version: {'1' * 65!r} is not a version (expected digits such as 1.4.2, not a branch or commit)"),
    ("latest", "version: 'latest' is a moving alias, not an exact version"),
    (" Current ", "version: ' Current ' is a moving alias, not an exact version"),
    ("^1.4", "version: '^1.4' is a range or wildcard, not an exact version"),
    ("1.4.x", "version: '1.4.x' is a range or wildcard, not an exact version"),
    ("1.X", "version: '1.X' is a range or wildcard, not an exact version"),
    ("1.4 ", "version: '1.4 ' is a range or wildcard, not an exact version"),
    ("", "version: must be a non-empty exact version string, got ''"),
    ("  ", "version: must be a non-empty exact version string, got '  '"),
    (142, "version: must be a non-empty exact version string, got 142"),
])
def test_a_version_must_be_a_version(version, message):
    assert problems(rollback(version=version)) == [message]


@pytest.mark.parametrize("version", ["1.4.2", "v2", "1.0.0-beta.2+build.5", "2.0.0rc1", "2026.12.1", "1" * 64])
def test_real_versions_pass(version):
    assert problems(rollback(version=version)) == []


def test_acceptance_claiming_the_suite_counts_all_of_it():
    claim = {"transcriptsPassed": len(FULL) - 1, "transcriptsTotal": len(FULL) - 1, "digest": SUITE}
    result = decide(rollback=rollback(acceptanceEvidence=claim))
    assert result["rollbackCandidates"][0]["problems"] == [
        f"acceptanceEvidence: claims suite {SUITE[:12]} of {len(FULL)} transcripts but counts {len(FULL) - 1}"]
    whole = {"transcriptsPassed": len(FULL), "transcriptsTotal": len(FULL), "digest": SUITE}
    assert decide(rollback=rollback(acceptanceEvidence=whole))["action"] == "promote"
    assert problems(rollback(acceptanceEvidence=claim)) == []  # without the gate's suite nothing is claimed


@pytest.mark.parametrize("acceptance, expected", [
    ({"transcriptsPassed": "1", "transcriptsTotal": 1, "digest": "cd" * 32},
     ["acceptanceEvidence.transcriptsPassed: must be an integer, got '1'"]),
    ({"transcriptsPassed": 0, "transcriptsTotal": 0, "digest": "cd" * 32},
     ["acceptanceEvidence.transcriptsTotal: must be a positive integer, got 0"]),
    ({"transcriptsPassed": 1, "transcriptsTotal": True, "digest": "cd" * 32},
     ["acceptanceEvidence.transcriptsTotal: must be a positive integer, got True"]),
    ({"transcriptsPassed": 1, "transcriptsTotal": 1, "digest": "CD" * 32},
     ["acceptanceEvidence.digest: must be 64 lowercase hex characters (SHA-256)"]),
])
def test_acceptance_field_messages(acceptance, expected):
    assert problems(rollback(acceptanceEvidence=acceptance)) == expected


@pytest.mark.parametrize("now", [datetime(2026, 12, 1, 12, 0), "2026-12-01T12:00:00Z", 5])
def test_a_naive_or_odd_now_is_an_evidence_error(now):
    with pytest.raises(EvidenceError) as caught:
        decide(now=now)
    assert str(caught.value).startswith("now must be a timezone-aware datetime (e.g. datetime.now(UTC)), got ")
    with pytest.raises(EvidenceError):
        rollback_evidence_problems(rollback(), SIGNERS, now)


@pytest.mark.parametrize("kwargs, message", [
    ({"suite": []}, "suite must be a non-empty list of verdict keys ('name' or 'name.variant')"),
    ({"suite": ["a", ""]}, "suite must be a non-empty list of verdict keys ('name' or 'name.variant')"),
    ({"suite": ["a", 5]}, "suite must be a non-empty list of verdict keys ('name' or 'name.variant')"),
    ({"max_validity": timedelta(0)}, "max_validity must be a positive timedelta"),
    ({"max_validity": 30}, "max_validity must be a positive timedelta"),
])
def test_release_policy_suite_and_validity_errors(kwargs, message):
    with pytest.raises(ValueError) as caught:
        ReleasePolicy(**kwargs)
    assert str(caught.value) == message


def test_the_policy_suite_is_a_tuple_and_names_its_digest():
    policy = ReleasePolicy(suite=["b", "a"])
    assert policy.suite == ("b", "a")
    assert ReleaseGate(policy).suite_digest == suite_digest(["a", "b"]) == evidence_digest(["a", "b"])
    assert ReleaseGate(ReleasePolicy()).suite_digest == SUITE


# --- re-observed SDK views, long exceptions, the missing-list cut-off, value-naming messages -----------------

LISTED = {"resultType": "complete", "tools": [{"name": "t", "description": "d", "inputSchema": {"type": "object"}}],
          "ttlMs": 0, "cacheScope": "private"}


def observed(**changes):
    from mcplab.sdkview import sdk_observe

    return {"raw": LISTED, **sdk_observe(dict(LISTED)), **changes}


def test_a_reobserved_view_must_be_what_the_installed_sdk_produces():
    from mcplab.sdkview import sdk_identity

    who = sdk_identity()
    policy = ReleasePolicy(trusted_signers=SIGNERS, verify_sdk_views=True)
    lossy = {"raw": {**OK_RESULT, "hint": 1}, "view": OK_RESULT, "label": "lossy"}
    items = [observed(label="good"), observed(label="forged", view={**observed()["view"], "tools": []}),
             {"raw": LISTED, "view": LISTED, "label": "bare"}, observed(label="other", sdk="fastmcp", version="0.1"),
             observed(label="era", era="future"), observed(label="typed", method=5), lossy]
    assert decide(policy, sdk_evidence=items)["reasons"] == [
        "SDK evidence forged: the view differs from what the installed SDK produces when re-observed",
        "SDK evidence bare: names no SDK observation (sdk, version, method, era missing): record it with sdk_observe",
        f"SDK evidence other: recorded with 'fastmcp' '0.1'; the installed SDK ({who['sdk']} {who['version']}) cannot re-observe it",
        "SDK evidence era: era 'future' is not modern or legacy",
        "SDK evidence typed: not an observation (method must be strings)",
        "SDK evidence lossy: names no SDK observation (sdk, version, method, era missing): record it with sdk_observe",
    ]
    assert decide(policy, sdk_evidence=[observed()])["reasons"] == []


def test_a_refusal_reason_is_cut_at_200_characters():
    result = decide(sdk_evidence=[{"raw": OK_RESULT, "view": None, "exception": "E" * 300}, {"raw": OK_RESULT, "view": OK_RESULT}])
    assert result["reasons"] == [f"SDK evidence #0: the SDK refused the result ({'E' * 200})"]
    assert [d["label"] for d in result["sdkDiffs"]] == ["#1"]


def test_six_missing_verdicts_show_five_and_one_more():
    keys = SUITE_KEYS[:7]
    policy = ReleasePolicy(trusted_signers=SIGNERS, suite=keys)
    first = [v for v in FULL if (f"{v['name']}.{v['variant']}" if v["variant"] else v["name"]) == keys[0]]
    assert decide(policy, transcripts=first)["reasons"] == [
        f"transcript evidence covers 1 of 7 verdicts of suite {suite_digest(keys)[:12]}; missing: {', '.join(keys[1:6])} and 1 more"]


def test_rollback_evidence_ready_passes_its_limits_on():
    from mcplab.release import rollback_evidence_ready

    issued = NOW - timedelta(hours=1)
    long = rollback(issuedAt=issued.isoformat(), expiresAt=(issued + timedelta(days=40)).isoformat())
    assert rollback_evidence_ready(long, SIGNERS, NOW) is False
    assert rollback_evidence_ready(long, SIGNERS, NOW, max_validity=timedelta(days=41)) is True


def test_a_tzinfo_without_an_offset_is_naive():
    from datetime import tzinfo

    class Floating(tzinfo):
        def utcoffset(self, dt):
            return None

        def __repr__(self):
            return "Floating()"

    floating = datetime(2026, 12, 1, 12, 0, tzinfo=Floating())
    with pytest.raises(EvidenceError) as caught:
        rollback_evidence_problems(rollback(), SIGNERS, floating)
    assert str(caught.value).startswith("now must be a timezone-aware datetime (e.g. datetime.now(UTC)), got datetime.datetime(2026")
    with pytest.raises(EvidenceError) as caught:
        rollback_evidence_problems(rollback(), SIGNERS, 5)
    assert str(caught.value) == "now must be a timezone-aware datetime (e.g. datetime.now(UTC)), got 5"


@pytest.mark.parametrize("samples, baseline, message", [
    ([{"t": 0, "latencyMs": 1, "error": "no"}], None, "health sample 0: field 'error' must be a boolean, got 'no'"),
    ([{"t": 0, "latencyMs": 1, "error": False, "streamDurationMs": 5, "firstEventMs": 1, "eventCount": -2}], None,
     "health sample 0: field 'eventCount' must be a non-negative integer, got -2"),
    ([{"t": 0, "latencyMs": 1, "error": False}], {"latencyMs": "x", "errorRate": 0.0},
     "health baseline: field 'latencyMs' must be a finite number, got 'x'"),
    ([{"t": 0, "latencyMs": 1, "error": False}], {"latencyMs": 1.0, "errorRate": 0.0, "latencyPercentile": 95.0},
     "health baseline: latencyPercentile 95.0 is not comparable with the policy's 99.0"),
])
def test_health_errors_name_the_value(samples, baseline, message):
    with pytest.raises(EvidenceError) as caught:
        evaluate_health(samples, HealthPolicy(), baseline)
    assert str(caught.value) == message


def test_a_legacy_observation_is_reobserved_as_legacy():
    from mcplab.sdkview import sdk_observe

    policy = ReleasePolicy(trusted_signers=SIGNERS, verify_sdk_views=True)
    legacy = {"raw": LISTED, **sdk_observe(dict(LISTED), "tools/list", "legacy"), "label": "legacy"}
    assert decide(policy, sdk_evidence=[legacy])["reasons"] == []
