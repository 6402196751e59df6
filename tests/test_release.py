"""Release gate: health window, rollback evidence, and the promote/rollback/halt decision."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from mcplab.errors import EvidenceError
from mcplab.evidence import evidence_digest
from mcplab.release import (
    ROLLBACK_PIN_FIELDS,
    HealthPolicy,
    ReleaseGate,
    ReleasePolicy,
    evaluate_health,
    rollback_evidence_problems,
    rollback_evidence_ready,
    sign_rollback_evidence,
    stream_health_sample,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KEY = b"release-controller-key"
SIGNERS = {"release-controller": KEY}
HEX = "ab" * 32


def window(n=30, *, latency=100.0, errors=0, saturation=0.5, span=120.0):
    """A health window of ``n`` samples spread evenly over ``span`` seconds."""
    return [
        {"t": span * i / (n - 1) if n > 1 else 0.0, "latencyMs": latency, "error": i < errors,
         "saturation": saturation}
        for i in range(n)
    ]


def healthy_result():
    return evaluate_health(window())


def rollback_evidence(**overrides):
    evidence = {
        "version": "1.4.2",
        "acceptanceEvidence": {"transcriptsPassed": 15, "transcriptsTotal": 15, "digest": "cd" * 32},
        "artifactSha256": "01" * 32,
        "descriptorSha256": "23" * 32,
        "registryState": "active",
        "health": {"healthy": True, "reasons": []},
        "routeRestoration": ["route 100% of traffic to 1.4.2", "confirm health window"],
        "issuedAt": (NOW - timedelta(hours=1)).isoformat(),
        "expiresAt": (NOW + timedelta(days=1)).isoformat(),
    }
    evidence.update(overrides)
    if "acceptanceSha256" not in overrides:  # tied to the acceptance evidence (issue 15)
        evidence["acceptanceSha256"] = evidence_digest(evidence["acceptanceEvidence"])
    return sign_rollback_evidence(evidence, "release-controller", KEY)


# ------------------------------------------------------------------ health window


def test_healthy_window():
    result = healthy_result()
    assert result["healthy"] is True
    assert result["reasons"] == []
    assert result["metrics"] == {"samples": 30, "errorRate": 0.0, "latencyPercentile": 99.0,
                                 "latencyMs": 100.0, "durationS": 120.0, "maxSaturation": 0.5}
    assert result["policy"]["maxLatencyMs"] == 500.0
    json.dumps(result, allow_nan=False)


@pytest.mark.parametrize(
    ("samples", "words"),
    [
        (window(n=19), "fewer than the minimum 20"),
        (window(n=100, errors=2), "error rate 0.02 above maximum 0.01"),
        (window(latency=501.0), "p99 latency 501 ms above maximum 500 ms"),
        (window(saturation=0.81), "saturation 0.81 above maximum 0.8"),
        (window(span=59.0), "observed duration 59 s below minimum 60 s"),
    ],
    ids=["min-samples", "error-rate", "latency", "saturation", "duration"],
)
def test_each_threshold_trips_alone(samples, words):
    result = evaluate_health(samples)
    assert result["healthy"] is False
    assert len(result["reasons"]) == 1
    assert words in result["reasons"][0]


def test_thresholds_are_inclusive_at_the_limit():
    assert evaluate_health(window(n=20, latency=500.0, saturation=0.8, span=60.0))["healthy"] is True
    assert evaluate_health(window(n=100, errors=1))["healthy"] is True


def test_nearest_rank_percentile_on_a_known_list():
    latencies = [15, 20, 35, 40, 50]
    samples = [{"t": float(i), "latencyMs": v, "error": False} for i, v in enumerate(latencies)]
    for percentile, expected in [(5, 15), (30, 20), (40, 20), (50, 35), (99, 50), (100, 50)]:
        policy = HealthPolicy(min_samples=1, min_duration_s=0.0, latency_percentile=percentile)
        assert evaluate_health(samples, policy)["metrics"]["latencyMs"] == expected


def test_no_samples_is_never_healthy():
    result = evaluate_health([], HealthPolicy(min_samples=0, min_duration_s=0.0))
    assert result["healthy"] is False
    assert "no health samples" in result["reasons"][0]


def test_saturation_is_optional():
    samples = [{k: v for k, v in s.items() if k != "saturation"} for s in window()]
    result = evaluate_health(samples)
    assert result["healthy"] is True
    assert result["metrics"]["maxSaturation"] is None


def test_baseline_latency_regression():
    baseline = evaluate_health(window(latency=100.0))["metrics"]
    assert evaluate_health(window(latency=150.0), baseline=baseline)["healthy"] is True
    result = evaluate_health(window(latency=151.0), baseline=baseline)
    assert result["healthy"] is False
    assert "regressed above baseline 100 ms x 1.5 = 150 ms" in result["reasons"][0]


def test_baseline_error_rate_regression():
    baseline = {"latencyMs": 100.0, "errorRate": 0.0}
    policy = HealthPolicy(max_error_rate=0.05)
    assert evaluate_health(window(n=100, errors=5), policy, baseline)["healthy"] is True
    result = evaluate_health(window(n=100, errors=6), policy, baseline)
    assert result["healthy"] is False
    assert any("error rate 0.06 regressed above baseline 0 + 0.05" in r for r in result["reasons"])


def test_baseline_may_be_a_whole_result():
    result = evaluate_health(window(latency=200.0), baseline=healthy_result())
    assert result["healthy"] is False


def test_baseline_with_another_percentile_is_not_comparable():
    baseline = {"latencyMs": 100.0, "errorRate": 0.0, "latencyPercentile": 95.0}
    with pytest.raises(EvidenceError, match="latencyPercentile"):
        evaluate_health(window(), baseline=baseline)


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda s: s.pop("t"), "sample 3: field 't' is missing"),
        (lambda s: s.pop("latencyMs"), "sample 3: field 'latencyMs' is missing"),
        (lambda s: s.pop("error"), "sample 3: field 'error' is missing"),
        (lambda s: s.update(error="no"), "sample 3: field 'error' must be a boolean"),
        (lambda s: s.update(error=0), "sample 3: field 'error' must be a boolean"),
        (lambda s: s.update(latencyMs="5"), "sample 3: field 'latencyMs' must be a finite number"),
        (lambda s: s.update(latencyMs=True), "sample 3: field 'latencyMs' must be a finite number"),
        (lambda s: s.update(t=float("nan")), "sample 3: field 't' must be a finite number"),
        (lambda s: s.update(saturation=1.5), "sample 3: field 'saturation' must be within 0..1"),
    ],
)
def test_malformed_samples_raise_naming_index_and_field(mutate, words):
    samples = window()
    mutate(samples[3])
    with pytest.raises(EvidenceError, match=words.replace(".", r"\.")):
        evaluate_health(samples)


def test_samples_must_be_a_list_of_objects():
    with pytest.raises(EvidenceError):
        evaluate_health({"t": 0})
    with pytest.raises(EvidenceError, match="sample 0"):
        evaluate_health(["x"])


def test_bad_policy_is_rejected():
    with pytest.raises(ValueError):
        HealthPolicy(latency_percentile=0)


# ------------------------------------------------------------------ rollback evidence


def test_signed_evidence_is_ready():
    evidence = rollback_evidence()
    assert rollback_evidence_problems(evidence, SIGNERS, NOW) == []
    assert rollback_evidence_ready(evidence, SIGNERS, NOW) is True
    assert evidence["certificate"]["algorithm"] == "HMAC-SHA-256"
    assert len(evidence["certificate"]["signature"]) == 64


def test_signing_does_not_mutate_and_replaces_an_old_certificate():
    evidence = rollback_evidence()
    before = copy.deepcopy(evidence)
    again = sign_rollback_evidence(evidence, "release-controller", KEY)
    assert evidence == before
    assert again == evidence


@pytest.mark.parametrize("field", ROLLBACK_PIN_FIELDS)
def test_missing_pin_field_fails(field):
    evidence = rollback_evidence()
    del evidence[field]
    evidence = sign_rollback_evidence(evidence, "release-controller", KEY)
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert f"{field}: missing" in problems


def test_missing_certificate_fails():
    evidence = rollback_evidence()
    del evidence["certificate"]
    assert rollback_evidence_problems(evidence, SIGNERS, NOW) == ["certificate: missing"]


@pytest.mark.parametrize("healthy", ["yes", 1, "true", None, False])
def test_truthy_health_is_not_readiness(healthy):
    evidence = rollback_evidence(health={"healthy": healthy})
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert problems == [f"health.healthy: must be the boolean true, got {healthy!r}"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", "1.4.3"),
        ("artifactSha256", "ff" * 32),
        ("registryState", "active "),
        ("routeRestoration", ["route 100% of traffic to 1.4.3"]),
        ("acceptanceEvidence", {"transcriptsPassed": 16, "transcriptsTotal": 16, "digest": "cd" * 32}),
    ],
)
def test_tampering_after_signing_fails(field, value):
    evidence = rollback_evidence()
    evidence[field] = value
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert any(p.startswith("certificate.signature: does not match") for p in problems)


def test_wrong_key_fails():
    evidence = sign_rollback_evidence(
        {k: v for k, v in rollback_evidence().items() if k != "certificate"}, "release-controller", b"wrong"
    )
    assert rollback_evidence_problems(evidence, SIGNERS, NOW) == [
        "certificate.signature: does not match the evidence under 'release-controller''s key"
    ]


def test_untrusted_signer_fails():
    evidence = sign_rollback_evidence(rollback_evidence(), "mallory", KEY)
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert problems == ["certificate.signer: 'mallory' is not a trusted release-controller identity"]
    assert not rollback_evidence_ready(rollback_evidence(), {})


@pytest.mark.parametrize(
    "certificate",
    [
        "signed",
        {"signer": "release-controller", "algorithm": "HMAC-SHA-1", "signature": HEX},
        {"signer": "release-controller", "algorithm": "HMAC-SHA-256", "signature": "AB" * 32},
        {"signer": "release-controller", "algorithm": "HMAC-SHA-256"},
    ],
)
def test_malformed_certificate_fails(certificate):
    evidence = rollback_evidence()
    evidence["certificate"] = certificate
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert problems and all(p.startswith("certificate") for p in problems)


@pytest.mark.parametrize(
    "version",
    ["", "  ", "^1.4.2", "~1.4", "1.*", ">=1.4", "<2", "=1.4.2", "1.x", "1.4.X", "1.4 || 1.5",
     "latest", "Current", "previous", None, 142],
)
def test_inexact_versions_fail(version):
    problems = rollback_evidence_problems(rollback_evidence(version=version), SIGNERS, NOW)
    assert len(problems) == 1 and problems[0].startswith("version:")


@pytest.mark.parametrize("version", ["1.4.2", "v2.0.0-rc.1", "2026.07.28+build.7", "2.0.0rc1"])
def test_exact_versions_pass(version):
    assert rollback_evidence_ready(rollback_evidence(version=version), SIGNERS, NOW)


@pytest.mark.parametrize(
    ("field", "value", "prefix"),
    [
        ("artifactSha256", "AB" * 32, "artifactSha256:"),
        ("descriptorSha256", "ab" * 31, "descriptorSha256:"),
        ("acceptanceSha256", "zz" * 32, "acceptanceSha256:"),
        ("registryState", "deprecated", "registryState:"),
        ("health", "healthy", "health:"),
        ("routeRestoration", [], "routeRestoration:"),
        ("routeRestoration", ["ok", " "], "routeRestoration:"),
        ("routeRestoration", "switch back", "routeRestoration:"),
        ("acceptanceEvidence", {"transcriptsPassed": 14, "transcriptsTotal": 15, "digest": HEX},
         "acceptanceEvidence: only 14 of 15"),
        ("acceptanceEvidence", {"transcriptsPassed": 0, "transcriptsTotal": 0, "digest": HEX},
         "acceptanceEvidence.transcriptsTotal:"),
        ("acceptanceEvidence", {"transcriptsPassed": True, "transcriptsTotal": 1, "digest": HEX},
         "acceptanceEvidence.transcriptsPassed:"),
        ("acceptanceEvidence", {"transcriptsPassed": 1, "transcriptsTotal": 1, "digest": "x"},
         "acceptanceEvidence.digest:"),
        ("acceptanceEvidence", [], "acceptanceEvidence:"),
    ],
)
def test_each_bad_field_is_named(field, value, prefix):
    problems = rollback_evidence_problems(rollback_evidence(**{field: value}), SIGNERS, NOW)
    assert len(problems) == 1 and problems[0].startswith(prefix), problems


@pytest.mark.parametrize("evidence", [None, "ready", ["version"], 1])
def test_non_dict_evidence_is_a_problem_not_a_crash(evidence):
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert len(problems) == 1 and problems[0].startswith("rollback evidence:")
    assert rollback_evidence_ready(evidence, SIGNERS, NOW) is False


def test_every_problem_is_listed():
    problems = rollback_evidence_problems({"registryState": "gone"}, SIGNERS, NOW)
    # seven pin fields missing, the certificate missing, and the wrong registry state
    assert len(problems) == len(ROLLBACK_PIN_FIELDS) + 1
    assert "registryState: must be 'active', got 'gone'" in problems
    assert "certificate: missing" in problems


# ------------------------------------------------------------------ the gate

TRANSCRIPTS = [{"name": "golden-modern-discover", "passed": True},
               {"name": "negative-header-body-mismatch", "passed": True}]
SUITE = ("golden-modern-discover", "negative-header-body-mismatch")
LIST = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "private"}
CLEAN_SDK = {"label": "golden-modern-list", "raw": LIST, "view": dict(LIST)}
LOSSY_SDK = {"label": "golden-additive-field", "raw": {**LIST, "futureHint": {"mode": "new"}}, "view": dict(LIST)}
JSON = [["Content-Type", "application/json"]]
REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
ERROR = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "mismatch"}}
ORIGIN = {"status": 400, "headers": JSON, "body": ERROR}
CLEAN_PROXY = {"label": "faithful", "ingress": {"headers": [], "body": REQUEST}, "origin": ORIGIN, "egress": dict(ORIGIN)}
BAD_PROXY = {**CLEAN_PROXY, "label": "collapsing", "egress": {"status": 500, "headers": JSON, "body": ERROR}}


def gate(**policy):
    """A gate whose suite is the two verdicts below (the shipped suite is the default; issue 15)."""
    return ReleaseGate(ReleasePolicy(trusted_signers=SIGNERS, **{"suite": SUITE, **policy}))


def decide(g=None, **overrides):
    evidence = {
        "transcripts": TRANSCRIPTS,
        "sdk_evidence": [CLEAN_SDK],
        "proxy_captures": [CLEAN_PROXY],
        "health_samples": window(),
        "rollback": rollback_evidence(),
        "now": NOW,
    }
    evidence.update(overrides)
    result = (g or gate()).evaluate(**evidence)
    assert json.loads(json.dumps(result, allow_nan=False)) == result
    return result


def test_promote_when_candidate_passes_and_rollback_proven():
    result = decide()
    assert result["action"] == "promote"
    assert result["reasons"] == []
    assert result["candidatePassed"] is True and result["rollbackReady"] is True
    assert result["rollbackProblems"] == []


def test_halt_when_candidate_passes_but_rollback_unproven():
    result = decide(rollback=None)
    assert result["action"] == "halt"
    assert result["candidatePassed"] is True and result["rollbackReady"] is False
    assert result["rollbackProblems"] == ["rollback evidence: missing"]
    assert "verify rollback evidence before promotion" in result["reasons"][-1]


def test_rollback_when_candidate_fails_and_rollback_proven():
    result = decide(proxy_captures=[BAD_PROXY])
    assert result["action"] == "rollback"
    assert result["reasons"] == ["proxy issue: proxy collapsed a protocol error into HTTP 500"]
    assert [f["case"] for f in result["proxyFindings"]] == ["negative-proxy-collapsed-error"]


def test_halt_when_candidate_fails_and_rollback_unproven():
    result = decide(proxy_captures=[BAD_PROXY], rollback=rollback_evidence(health={"healthy": "yes"}))
    assert result["action"] == "halt"
    assert result["candidatePassed"] is False and result["rollbackReady"] is False
    assert "halting traffic" in result["reasons"][-1]


@pytest.mark.parametrize(
    ("source", "reason"),
    [("transcripts", "no transcript evidence"), ("sdk_evidence", "no SDK-diff evidence"),
     ("proxy_captures", "no proxy evidence")],
)
def test_empty_evidence_source_blocks(source, reason):
    result = decide(**{source: []})
    assert result["action"] == "rollback"
    assert result["reasons"] == [reason]


def test_missing_health_blocks():
    assert decide(health_samples=None)["reasons"] == ["no health evidence"]


def test_failed_transcripts_are_named():
    transcripts = [*TRANSCRIPTS, {"name": "negative-unknown-result-type", "passed": False},
                   {"name": "negative-jsonrpc-version", "passed": False}]
    result = decide(gate(suite=[t["name"] for t in transcripts]), transcripts=transcripts)
    assert result["reasons"] == ["transcripts failed: negative-unknown-result-type, negative-jsonrpc-version"]


@pytest.mark.parametrize("verdict", [{"name": "x", "passed": "yes"}, {"passed": True}, {"name": "", "passed": True}])
def test_hollow_or_truthy_transcript_verdicts_are_malformed(verdict):
    result = decide(transcripts=[verdict])
    assert result["candidatePassed"] is False and "malformed" in result["reasons"][0]


def test_semantic_loss_is_recomputed_from_raw_and_view():
    result = decide(sdk_evidence=[CLEAN_SDK, LOSSY_SDK])
    assert result["action"] == "rollback"
    assert result["reasons"] == ["SDK diff golden-additive-field: semantic loss of 'futureHint' not allowed by policy"]
    assert result["sdkDiffs"][1]["dropped"] == ["futureHint"]


def test_a_changed_bookkeeping_value_blocks():
    changed = {"label": "ttl", "raw": {**LIST, "ttlMs": 1000}, "view": LIST}
    assert decide(sdk_evidence=[changed])["reasons"] == ["SDK diff ttl: semantic loss of 'ttlMs' not allowed by policy"]


def test_sdk_refusal_blocks():
    refused = {"label": "legacy-read", "raw": LIST, "view": None, "exception": "ValidationError: boom"}
    assert "the SDK refused the result (ValidationError: boom)" in decide(sdk_evidence=[refused])["reasons"][0]


def test_allowed_drop_turns_future_hint_loss_into_promote():
    result = decide(gate(allowed_drops=("futureHint",)), sdk_evidence=[CLEAN_SDK, LOSSY_SDK])
    assert result["action"] == "promote"
    assert result["allowedDrops"] == ["futureHint"]
    assert result["unusedAllowedDrops"] == []


def test_unused_allowed_drop_is_reported():
    result = decide(gate(allowed_drops=["futureHint"]))
    assert result["action"] == "promote"
    assert result["allowedDrops"] == []
    assert result["unusedAllowedDrops"] == ["futureHint"]


def test_the_gate_judges_the_raw_window_with_its_own_policy():
    strict = gate(health=HealthPolicy(min_samples=100))
    result = decide(strict)
    assert result["action"] == "rollback" and result["health"]["healthy"] is False
    assert result["reasons"] == ["health window not healthy: only 30 health samples, fewer than the minimum 100"]


def test_unhealthy_window_reasons_are_carried():
    result = decide(health_samples=window(n=5))
    assert result["reasons"] == ["health window not healthy: only 5 health samples, fewer than the minimum 20"]


def test_malformed_health_samples_block_without_crashing():
    result = decide(health_samples=[{"t": 0, "latencyMs": "fast", "error": False}])
    assert result["candidatePassed"] is False and "health window: malformed evidence" in result["reasons"][0]


def test_a_baseline_regression_blocks():
    result = decide(health_samples=window(latency=400.0), health_baseline=evaluate_health(window(latency=100.0)))
    assert result["candidatePassed"] is False and "baseline" in result["reasons"][0]


def test_green_health_cannot_fill_missing_boundaries():
    result = decide(transcripts=[], sdk_evidence=[], proxy_captures=[])
    assert result["reasons"] == ["no transcript evidence", "no SDK-diff evidence", "no proxy evidence"]
    assert result["action"] == "rollback"


@pytest.mark.parametrize("capture", ["oops", {}, {"ingress": {"body": None}, "origin": {}, "egress": {}},
                                     {**CLEAN_PROXY, "egress": {"status": "200", "body": ERROR}}])
def test_hollow_proxy_evidence_blocks(capture):
    result = decide(proxy_captures=[capture])
    assert result["candidatePassed"] is False and "malformed" in result["reasons"][0]


def test_malformed_sdk_evidence_blocks_without_crashing():
    result = decide(sdk_evidence=[{"semanticLoss": []}, "oops"])
    assert result["candidatePassed"] is False
    assert len(result["reasons"]) == 2


def test_untrusted_rollback_signer_halts():
    policy_without_signer = ReleaseGate(ReleasePolicy())
    result = decide(policy_without_signer, proxy_captures=[BAD_PROXY])
    assert result["action"] == "halt"
    assert any("certificate.signer" in p for p in result["rollbackProblems"])


def test_secret_named_fields_in_rollback_evidence_are_refused():
    evidence = sign_rollback_evidence({**rollback_evidence(), "gatewayToken": "abc"}, "release-controller", KEY)
    problems = rollback_evidence_problems(evidence, SIGNERS, NOW)
    assert problems == ["gatewayToken: rollback evidence must not carry secrets"]


@pytest.mark.parametrize("verdicts", [[{"name": "whatever", "passed": True}], [TRANSCRIPTS[0], TRANSCRIPTS[0]]])
def test_unknown_or_repeated_transcript_verdicts_block(verdicts):
    assert decide(transcripts=verdicts)["candidatePassed"] is False


def test_captures_without_bodies_are_not_evidence():
    hollow = {"ingress": {"body": None}, "origin": {"status": 200}, "egress": {"status": 200}}
    assert "malformed evidence" in decide(proxy_captures=[hollow])["reasons"][0]


def test_deeply_nested_evidence_blocks_instead_of_crashing():
    deep: dict = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    result = decide(sdk_evidence=[{"raw": deep, "view": deep}], rollback={**rollback_evidence(), "deep": deep})
    assert result["action"] == "halt"
    assert "nested too deeply" in result["reasons"][0] and "nested too deeply" in result["rollbackProblems"][0]


@pytest.mark.parametrize("moment, needle", [(NOW + timedelta(days=2), "expired"), (NOW - timedelta(days=1), "in the future")])
def test_rollback_evidence_has_a_validity_window(moment, needle):
    problems = rollback_evidence_problems(rollback_evidence(), SIGNERS, moment)
    assert len(problems) == 1 and needle in problems[0]


def test_naive_timestamps_are_refused():
    problems = rollback_evidence_problems(rollback_evidence(issuedAt="2026-12-01T11:00:00"), SIGNERS, NOW)
    assert problems == ["issuedAt: must be an ISO 8601 timestamp with a UTC offset, got '2026-12-01T11:00:00'"]


def test_signer_keys_must_be_bytes():
    with pytest.raises(ValueError, match="bytes key"):
        ReleasePolicy(trusted_signers={"release-controller": "not-bytes"})


# ------------------------------------------------------------------ stream metrics (SSE) in the health window


def stream_window(n=30, *, first=30.0, duration=330.0, events=7, **kwargs):
    """``window()`` whose samples were streamed: first event at ``first`` ms of a ``duration`` ms stream."""
    return [{**s, "firstEventMs": first, "streamDurationMs": duration, "eventCount": events} for s in window(n, **kwargs)]


def cases_of(result):
    return [f["case"] for f in result["streamFindings"]]


def test_a_healthy_stream_window_reports_stream_metrics():
    result = evaluate_health(stream_window())
    assert result["healthy"] is True and result["streamFindings"] == []
    assert result["metrics"]["stream"] == {"samples": 30, "firstEventMs": 30.0, "durationMs": 330.0,
                                           "firstEventRatio": 30.0 / 330.0, "minEvents": 7}
    assert result["policy"]["maxFirstEventRatio"] == 0.8 and result["policy"]["minStreamEvents"] == 1
    json.dumps(result, allow_nan=False)


def test_a_plain_window_has_no_stream_metrics():
    result = healthy_result()
    assert "stream" not in result["metrics"] and result["streamFindings"] == []


def test_stream_percentiles_use_nearest_rank_and_mixed_windows_count_only_streams():
    samples = window(n=10)
    for i, first in enumerate([10, 20, 30, 40, 300]):
        samples[i].update(firstEventMs=float(first), streamDurationMs=400.0, eventCount=5 + i)
    stream = evaluate_health(samples, HealthPolicy(min_samples=1, latency_percentile=50))["metrics"]["stream"]
    assert stream == {"samples": 5, "firstEventMs": 30.0, "durationMs": 400.0, "firstEventRatio": 30.0 / 400.0,
                      "minEvents": 5}


def test_a_buffered_stream_is_named():
    result = evaluate_health(stream_window(first=329.0))
    assert result["healthy"] is False and cases_of(result) == ["negative-sse-buffered"]
    assert result["reasons"] == [result["streamFindings"][0]["message"]]
    assert "first event at 1.00 of the stream's duration, above maximum 0.8" in result["reasons"][0]
    assert evaluate_health(stream_window(first=264.0))["healthy"] is True  # 0.8 exactly: inclusive


def test_one_event_streams_say_nothing_about_buffering():
    result = evaluate_health(stream_window(first=5.0, duration=5.0, events=1))
    assert result["healthy"] is True and result["metrics"]["stream"]["firstEventRatio"] is None


def test_stream_ceilings_are_optional_and_named():
    assert evaluate_health(stream_window(), HealthPolicy(max_first_event_ms=None))["healthy"] is True
    result = evaluate_health(stream_window(), HealthPolicy(max_first_event_ms=20.0, max_stream_duration_ms=300.0))
    assert cases_of(result) == ["negative-sse-stream-regressed"] * 2
    assert [f["metric"] for f in result["streamFindings"]] == ["firstEventMs", "durationMs"]
    assert "stream p99 first-event latency 30 ms above maximum 20 ms" in result["reasons"]


def test_stream_regression_against_the_baseline():
    baseline = evaluate_health(stream_window())
    assert evaluate_health(stream_window(first=45.0, duration=495.0), baseline=baseline)["healthy"] is True
    result = evaluate_health(stream_window(first=46.0, duration=496.0), baseline=baseline)
    assert cases_of(result) == ["negative-sse-stream-regressed"] * 2
    assert "stream p99 duration 496 ms regressed above baseline 330 ms x 1.5 = 495 ms" in result["reasons"]
    assert result["baseline"]["stream"] == {"firstEventMs": 30.0, "durationMs": 330.0, "minEvents": 7.0}


def test_lost_events_against_the_minimum_and_the_baseline():
    baseline = evaluate_health(stream_window(events=7))["metrics"]
    result = evaluate_health(stream_window(events=6), baseline=baseline)
    assert cases_of(result) == ["negative-sse-events-lost"]
    assert "a stream carried 6 events, fewer than baseline 7 x 1 = 7" in result["reasons"][0]
    empty = evaluate_health(stream_window(first=0.0, duration=0.0, events=0))
    assert cases_of(empty) == ["negative-sse-events-lost"] and "fewer than the minimum 1" in empty["reasons"][0]


def test_a_baseline_without_streams_compares_only_latency_and_errors():
    result = evaluate_health(stream_window(first=400.0, duration=450.0), HealthPolicy(max_first_event_ratio=1.0),
                             baseline=healthy_result())
    assert result["healthy"] is True and result["baseline"] == {"latencyMs": 100.0, "errorRate": 0.0}


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda s: s.pop("eventCount"), "sample 3: field 'eventCount' is missing (stream fields come together)"),
        (lambda s: s.update(firstEventMs=None), "sample 3: field 'firstEventMs' is missing"),
        (lambda s: s.update(firstEventMs=400.0), "sample 3: field 'firstEventMs' must not exceed 'streamDurationMs'"),
        (lambda s: s.update(streamDurationMs="1"), "sample 3: field 'streamDurationMs' must be a finite number"),
        (lambda s: s.update(firstEventMs=-1.0), "sample 3: stream times must not be negative"),
        (lambda s: s.update(eventCount=2.5), "sample 3: field 'eventCount' must be a non-negative integer"),
        (lambda s: s.update(eventCount=True), "sample 3: field 'eventCount' must be a non-negative integer"),
        (lambda s: s.update(eventCount=-1), "sample 3: field 'eventCount' must be a non-negative integer"),
    ],
)
def test_malformed_stream_fields_raise_naming_index_and_field(mutate, words):
    samples = stream_window()
    mutate(samples[3])
    with pytest.raises(EvidenceError, match=re.escape(words)):
        evaluate_health(samples)


def test_a_malformed_stream_baseline_raises():
    with pytest.raises(EvidenceError, match="stream.'minEvents'"):
        evaluate_health(stream_window(), baseline={"latencyMs": 1.0, "errorRate": 0.0, "stream": {"firstEventMs": 1.0,
                                                                                                   "durationMs": 2.0}})


@pytest.mark.parametrize("policy", [{"max_first_event_ratio": 1.5}, {"max_first_event_ms": -1.0}, {"min_event_ratio": -1}])
def test_bad_stream_policy_is_rejected(policy):
    with pytest.raises(ValueError):
        HealthPolicy(**policy)


# ------------------------------------------------------------------ choosing a rollback target

STREAM_HEALTH = {"healthy": True, "metrics": evaluate_health(stream_window())["metrics"]}


def test_a_single_target_is_reported_as_the_choice():
    result = decide()
    assert result["rollbackTarget"] == {"index": 0, "version": "1.4.2"}
    assert result["rollbackCandidates"] == [{"index": 0, "version": "1.4.2", "ready": True, "problems": []}]


def test_the_first_proven_target_is_chosen_and_the_others_say_why_not():
    expired = rollback_evidence(version="1.4.1", expiresAt=(NOW - timedelta(minutes=1)).isoformat())
    result = decide(proxy_captures=[BAD_PROXY], rollback=[expired, rollback_evidence(), rollback_evidence(version="1.4.0")])
    assert result["action"] == "rollback"
    assert result["rollbackTarget"] == {"index": 1, "version": "1.4.2"}
    assert result["rollbackProblems"] == []
    first = result["rollbackCandidates"][0]
    assert first["ready"] is False and any("expired" in p for p in first["problems"])
    assert [c["ready"] for c in result["rollbackCandidates"]] == [False, True, True]


def test_no_proven_target_among_several_halts_and_lists_each():
    result = decide(rollback=[None, rollback_evidence(registryState="retired")])
    assert result["action"] == "halt" and result["rollbackTarget"] is None
    assert result["rollbackProblems"] == ["target #0: rollback evidence: missing",
                                          "target #1: registryState: must be 'active', got 'retired'"]


def test_an_empty_target_list_is_missing_evidence():
    result = decide(rollback=[])
    assert result["action"] == "halt" and result["rollbackProblems"] == ["rollback evidence: missing"]


def test_a_regressed_stream_rolls_back_only_to_a_target_that_observed_streams():
    blind = rollback_evidence(version="1.4.1")  # healthy, signed, but its window never saw a stream
    streaming = rollback_evidence(version="1.4.0", health=STREAM_HEALTH)
    result = decide(health_samples=stream_window(first=329.0), rollback=[blind, streaming])
    assert result["action"] == "rollback" and result["candidatePassed"] is False
    assert [f["case"] for f in result["health"]["streamFindings"]] == ["negative-sse-buffered"]
    assert result["rollbackTarget"] == {"index": 1, "version": "1.4.0"}
    assert result["rollbackCandidates"][0]["problems"] == [
        "health.metrics.stream: the candidate's stream regressed and this target's signed health never observed a stream"]


def test_a_regressed_stream_with_no_streaming_target_halts():
    result = decide(health_samples=stream_window(events=0, first=0.0, duration=0.0), rollback=rollback_evidence())
    assert result["action"] == "halt"
    assert result["rollbackProblems"][0].startswith("health.metrics.stream:")
    assert "halting traffic" in result["reasons"][-1]


def test_a_healthy_stream_does_not_demand_stream_evidence_from_the_target():
    result = decide(health_samples=stream_window())
    assert result["action"] == "promote" and result["rollbackTarget"]["version"] == "1.4.2"


def test_tampered_stream_health_on_a_target_breaks_its_signature():
    target = rollback_evidence(health=STREAM_HEALTH)
    target["health"] = {"healthy": True, "metrics": {"stream": {"samples": 999}}}
    result = decide(health_samples=stream_window(first=329.0), rollback=target)
    assert result["action"] == "halt"
    assert any(p.startswith("certificate.signature") for p in result["rollbackProblems"])


def test_a_stream_timing_becomes_a_sample():
    sample = stream_health_sample(3.0, {"durationMs": 320.5, "firstEventMs": 12.0, "firstByteMs": 11.0, "eventCount": 7})
    assert sample == {"t": 3.0, "latencyMs": 320.5, "error": False, "streamDurationMs": 320.5, "firstEventMs": 12.0,
                      "eventCount": 7}
    silent = stream_health_sample(0.0, {"durationMs": 50.0, "firstEventMs": None, "eventCount": 0}, error=True)
    assert silent["firstEventMs"] == 50.0 and silent["error"] is True
    assert evaluate_health([silent], HealthPolicy(min_samples=1, min_duration_s=0))["streamFindings"][0]["case"] == \
        "negative-sse-events-lost"
