"""The health window on real streams: the stockroom's read_stock over SSE, direct and through real proxies.

The samples are measured, not written: each is one live capture (arrival time of the first event,
end of stream, event count) of read_stock with a progress token. Directly and through the
faithful proxy the stream is healthy; through ``buffer-sse`` the window names
``negative-sse-buffered`` and the release gate rolls back only to a target whose signed health
observed streams, else halts.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcplab import (
    HealthPolicy,
    ReleaseGate,
    ReleasePolicy,
    evaluate_health,
    sign_rollback_evidence,
)
from mcplab.evidence import evidence_digest
from mcplab.live.proxy import serve_proxy
from mcplab.stockroom import SEED_ITEMS, serve_stockroom, stream_health_window

SAMPLES = 5
POLICY = HealthPolicy(min_samples=SAMPLES, min_duration_s=0.0, max_latency_ms=10_000.0)
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SIGNERS = {"release-controller": b"k" * 32}


@pytest.fixture(scope="module")
def origin():
    with serve_stockroom(json_response=False, progress_interval=0.03) as srv:
        yield srv


def measured_window(url: str) -> list[dict]:
    samples = stream_health_window(url, SAMPLES)
    assert not any(s["error"] for s in samples)
    return samples


def target(version: str, health: dict) -> dict:
    evidence = {
        "version": version,
        "acceptanceEvidence": {"transcriptsPassed": 1, "transcriptsTotal": 1, "digest": "cd" * 32},
        "artifactSha256": "01" * 32, "descriptorSha256": "23" * 32,
        "registryState": "active", "health": health, "routeRestoration": [f"route 100% to {version}"],
        "issuedAt": (NOW - timedelta(hours=1)).isoformat(), "expiresAt": (NOW + timedelta(days=1)).isoformat(),
    }
    evidence["acceptanceSha256"] = evidence_digest(evidence["acceptanceEvidence"])  # tied to it (issue 15)
    return sign_rollback_evidence(evidence, "release-controller", SIGNERS["release-controller"])


@pytest.mark.parametrize("mode", [None, "faithful"])
def test_a_direct_or_faithful_stream_is_healthy(origin, mode):
    if mode is None:
        samples = measured_window(origin.url)
    else:
        with serve_proxy(origin.url, mode) as proxy:
            samples = measured_window(proxy.url)
    result = evaluate_health(samples, POLICY)
    assert result["healthy"] is True, result["reasons"]
    stream = result["metrics"]["stream"]
    assert stream["samples"] == SAMPLES and stream["minEvents"] == len(SEED_ITEMS) + 1
    assert stream["firstEventRatio"] <= POLICY.max_first_event_ratio


def test_a_buffering_proxy_is_named_and_the_gate_picks_a_streaming_target(origin):
    baseline = evaluate_health(measured_window(origin.url), POLICY)
    with serve_proxy(origin.url, "buffer-sse") as proxy:
        samples = measured_window(proxy.url)
    result = evaluate_health(samples, POLICY, baseline)
    assert "negative-sse-buffered" in [f["case"] for f in result["streamFindings"]]
    assert result["metrics"]["stream"]["minEvents"] == len(SEED_ITEMS) + 1  # nothing lost, only held back

    blind = target("1.4.1", {"healthy": True, "metrics": {"samples": 600}})
    streaming = target("1.4.0", {"healthy": True, "metrics": baseline["metrics"]})
    gate = ReleaseGate(ReleasePolicy(health=POLICY, trusted_signers=SIGNERS))
    evidence = {"transcripts": [{"name": "golden-sse-stream", "passed": True}],
                "sdk_evidence": [{"raw": {"resultType": "complete", "content": []},
                                  "view": {"resultType": "complete", "content": []}}],
                "proxy_captures": [{"ingress": {"headers": [], "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
                                    "origin": {"status": 200, "headers": [["Content-Type", "application/json"]],
                                               "body": {"jsonrpc": "2.0", "id": 1, "result": {}}},
                                    "egress": {"status": 200, "headers": [["Content-Type", "application/json"]],
                                               "body": {"jsonrpc": "2.0", "id": 1, "result": {}}}}],
                "health_samples": samples, "health_baseline": baseline, "now": NOW}
    decision = gate.evaluate(rollback=[blind, streaming], **evidence)
    assert decision["action"] == "rollback" and decision["rollbackTarget"] == {"index": 1, "version": "1.4.0"}
    assert decision["rollbackCandidates"][0]["problems"][0].startswith("health.metrics.stream:")
    assert gate.evaluate(rollback=blind, **evidence)["action"] == "halt"


def test_a_legacy_stream_window_is_measured_the_same_way(origin):
    samples = stream_health_window(origin.url, SAMPLES, era="legacy")
    result = evaluate_health(samples, POLICY)
    assert result["healthy"] is True, result["reasons"]
    assert result["metrics"]["stream"]["minEvents"] == len(SEED_ITEMS) + 1


def test_a_concurrent_window_keeps_call_order_and_every_stream(origin):
    samples = stream_health_window(origin.url, 6, concurrency=3)
    assert [s["t"] for s in samples] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert all(not s["error"] and s["eventCount"] == len(SEED_ITEMS) + 1 for s in samples)


@pytest.mark.parametrize("concurrency", [0, -1, 1.5, True, "8"])
def test_a_window_needs_at_least_one_call_in_flight(origin, concurrency):
    with pytest.raises(ValueError, match="concurrency must be an integer of at least 1"):
        stream_health_window(origin.url, 2, concurrency=concurrency)


def test_a_json_answer_is_an_error_sample():
    with serve_stockroom() as srv:  # JSON mode: no stream to measure
        samples = stream_health_window(srv.url, 2)
    assert [s["error"] for s in samples] == [True, True] and [s["eventCount"] for s in samples] == [0, 0]


@pytest.mark.parametrize("field", ["max_latency_ms", "max_error_rate", "max_saturation", "min_duration_s",
                                   "max_regression_ratio", "max_first_event_ms", "max_stream_duration_ms", "min_event_ratio"])
def test_a_nan_threshold_is_refused_not_a_pass_for_every_window(field):
    # NaN fails every comparison: an all-error, 100 s window used to come out healthy under it
    with pytest.raises(ValueError, match=f"{field} must be a number, not NaN"):
        HealthPolicy(**{field: float("nan")})
