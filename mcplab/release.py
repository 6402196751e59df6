"""The release gate: protocol conformance is necessary, not sufficient.

Design: a candidate is promoted only when transcript, SDK-diff, proxy and health evidence all
pass AND a signed rollback target is proven first; a failing candidate rolls back only to the
first proven target offered (a regressed stream also needs a target whose signed health observed
streams), otherwise traffic halts. Readiness is the boolean ``True``, never truthiness.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from .cases import CASES
from .errors import EvidenceError
from .evidence import canonical_json, evidence_digest
from .jsonvalue import is_json_integer, is_json_number, same_json_value, short_repr
from .proxy_evidence import proxy_findings
from .redaction import redaction_paths
from .sdkview import compare_sdk_view

__all__ = [
    "HealthPolicy",
    "STREAM_FIELDS",
    "stream_health_sample",
    "evaluate_health",
    "ROLLBACK_PIN_FIELDS",
    "CERTIFICATE_ALGORITHM",
    "sign_rollback_evidence",
    "rollback_evidence_problems",
    "rollback_evidence_ready",
    "ReleasePolicy",
    "ReleaseGate",
    "DEFAULT_MAX_VALIDITY",
    "suite_digest",
]

# --------------------------------------------------------------------------- health window


@dataclass(frozen=True)
class HealthPolicy:
    """Thresholds of a health window.

    ``min_samples``: fewest samples that count as evidence. ``max_error_rate``: highest error
    fraction. ``latency_percentile`` / ``max_latency_ms``: the nearest-rank percentile of
    latency and its ceiling. ``max_saturation``: highest resource saturation (0..1) seen in any
    sample. ``min_duration_s``: shortest observed span (last ``t`` minus first ``t``).
    ``max_regression_ratio``: highest allowed latency relative to an accepted baseline (also
    for a stream's first-event latency and duration).

    Stream thresholds apply only to samples that carry stream metrics (see
    :func:`evaluate_health`): ``max_first_event_ratio``: highest first-event latency as a
    fraction of the stream's duration, over streams of two or more events (a buffering
    intermediary delivers everything at the end, a ratio near 1). ``max_first_event_ms`` /
    ``max_stream_duration_ms``: optional ceilings (``None``: not checked) on the percentile of
    first-event latency and stream duration. ``min_stream_events``: fewest events any stream
    may carry. ``min_event_ratio``: the fewest events relative to the baseline's fewest (1.0:
    a candidate may not lose events its baseline streamed).
    """

    min_samples: int = 20
    max_error_rate: float = 0.01
    latency_percentile: float = 99.0
    max_latency_ms: float = 500.0
    max_saturation: float = 0.8
    min_duration_s: float = 60.0
    max_regression_ratio: float = 1.5
    max_first_event_ratio: float = 0.8
    max_first_event_ms: float | None = None
    max_stream_duration_ms: float | None = None
    min_stream_events: int = 1
    min_event_ratio: float = 1.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():  # NaN fails every comparison, so it would pass every window
            if isinstance(value, float) and math.isnan(value):
                raise ValueError(f"{name} must be a number, not NaN")
        if not 0.0 < self.latency_percentile <= 100.0:
            raise ValueError("latency_percentile must be in (0, 100]")
        for name in ("min_samples", "max_error_rate", "max_latency_ms", "max_saturation",
                     "min_duration_s", "max_regression_ratio", "min_stream_events", "min_event_ratio"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in ("max_first_event_ms", "max_stream_duration_ms"):
            if getattr(self, name) is not None and getattr(self, name) < 0:
                raise ValueError(f"{name} must be None or not negative")
        if not 0.0 <= self.max_first_event_ratio <= 1.0:
            raise ValueError("max_first_event_ratio must be within 0..1")

    def to_dict(self) -> dict[str, Any]:
        """The policy as a JSON dict with camelCase keys."""
        return {
            "minSamples": self.min_samples,
            "maxErrorRate": self.max_error_rate,
            "latencyPercentile": self.latency_percentile,
            "maxLatencyMs": self.max_latency_ms,
            "maxSaturation": self.max_saturation,
            "minDurationS": self.min_duration_s,
            "maxRegressionRatio": self.max_regression_ratio,
            "maxFirstEventRatio": self.max_first_event_ratio,
            "maxFirstEventMs": self.max_first_event_ms,
            "maxStreamDurationMs": self.max_stream_duration_ms,
            "minStreamEvents": self.min_stream_events,
            "minEventRatio": self.min_event_ratio,
        }


def _finite(value: Any) -> bool:
    """A JSON number that is a finite float too (``10**400`` is JSON but overflows a float: not finite here)."""
    if not is_json_number(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(sample: Mapping[str, Any], index: int, key: str) -> float:
    """The finite number ``sample[key]``, or EvidenceError naming the sample index and field."""
    if key not in sample:
        raise EvidenceError(f"health sample {index}: field {short_repr(key)} is missing")
    if not _finite(sample[key]):
        raise EvidenceError(
            f"health sample {index}: field {short_repr(key)} must be a finite number, got {short_repr(sample[key])}"
        )
    return float(sample[key])


def _nearest_rank(values: list[float], percentile: float) -> float:
    """Nearest-rank percentile: the smallest value with at least ``percentile``% of values at or below it.

    Rank ``ceil(p / 100 * n)`` (at least 1) in the ascending list; always an observed value.
    """
    ordered = sorted(values)
    rank = max(1, math.ceil(percentile / 100.0 * len(ordered)))
    return ordered[rank - 1]


#: Optional per-sample fields of a streamed (SSE) request; a sample carries all three or none.
STREAM_FIELDS: tuple[str, ...] = ("streamDurationMs", "firstEventMs", "eventCount")


def stream_health_sample(t: float, timing: Mapping[str, Any], *, error: bool = False) -> dict[str, Any]:
    """A health sample from one streamed request's timing ``{"durationMs", "firstEventMs", "eventCount"}``.

    That is the shape of ``mcplab.live.Capture.timing()``; the whole stream's duration is also
    the request's latency. A stream without events has no first event: its ``firstEventMs`` is
    the whole duration (nothing arrived earlier).
    """
    duration = timing["durationMs"]
    first = timing.get("firstEventMs")
    return {"t": t, "latencyMs": duration, "error": error, "streamDurationMs": duration,
            "firstEventMs": duration if first is None else first, "eventCount": timing["eventCount"]}


def _stream_sample(sample: Mapping[str, Any], index: int) -> tuple[float, float, int] | None:
    """``(durationMs, firstEventMs, eventCount)`` of a streamed sample, ``None`` for a plain one."""
    present = [key for key in STREAM_FIELDS if sample.get(key) is not None]
    if not present:
        return None
    if len(present) < len(STREAM_FIELDS):
        missing = next(key for key in STREAM_FIELDS if key not in present)
        raise EvidenceError(f"health sample {index}: field {short_repr(missing)} is missing (stream fields come together)")
    duration, first = _number(sample, index, "streamDurationMs"), _number(sample, index, "firstEventMs")
    if duration < 0 or first < 0:
        raise EvidenceError(f"health sample {index}: stream times must not be negative")
    if first > duration:
        raise EvidenceError(f"health sample {index}: field 'firstEventMs' must not exceed 'streamDurationMs'")
    count = sample["eventCount"]
    if not is_json_integer(count) or count < 0:
        raise EvidenceError(f"health sample {index}: field 'eventCount' must be a non-negative integer, got {short_repr(count)}")
    return duration, first, int(count)


def _stream_metrics(streams: list[tuple[float, float, int]], percentile: float) -> dict[str, Any]:
    """Percentiles of first-event latency, duration and their ratio; the fewest events in any stream.

    The ratio is taken only over streams of two or more events: a one-event stream arrives
    all at once by nature, so it says nothing about buffering.
    """
    ratios = [first / duration if duration else 1.0 for duration, first, count in streams if count >= 2]
    return {
        "samples": len(streams),
        "firstEventMs": _nearest_rank([first for _, first, _ in streams], percentile),
        "durationMs": _nearest_rank([duration for duration, _, _ in streams], percentile),
        "firstEventRatio": _nearest_rank(ratios, percentile) if ratios else None,
        "minEvents": min(count for _, _, count in streams),
    }


def evaluate_health(
    samples: Sequence[Mapping[str, Any]],
    policy: HealthPolicy = HealthPolicy(),
    baseline: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Judge a health window.

    ``samples`` are dicts ``{"t": seconds since window start, "latencyMs": float,
    "error": bool, "saturation": 0..1 (optional)}``; a streamed (SSE) request adds
    ``streamDurationMs``, ``firstEventMs`` (request sent to first event) and ``eventCount``
    (all three or none). The latency percentile uses the nearest-rank method (see
    :func:`_nearest_rank`). ``baseline`` is an accepted earlier ``metrics`` dict (or a whole
    earlier result): the window regresses when its latency exceeds ``baseline latencyMs *
    max_regression_ratio`` or its error rate exceeds ``baseline errorRate + max_error_rate``;
    with stream metrics on both sides, likewise for first-event latency and stream duration,
    and when the fewest events fall below ``baseline minEvents * min_event_ratio``.

    Returns ``{"healthy", "reasons", "metrics", "streamFindings", "policy", "baseline"}``;
    ``metrics["stream"]`` exists only when some sample was streamed; ``streamFindings`` lists
    each stream reason as ``{"case", "metric", "value", "limit", "message"}`` under a stable
    case name (``negative-sse-buffered``, ``negative-sse-stream-regressed``,
    ``negative-sse-events-lost``). ``healthy`` is the boolean ``True`` only when no reason was
    found. Malformed samples or baseline raise :class:`~mcplab.errors.EvidenceError` naming the
    index and field.
    """
    if isinstance(samples, (str, bytes, Mapping)) or not isinstance(samples, Sequence):
        raise EvidenceError(f"health samples must be a list of objects, got {type(samples).__name__}")
    times: list[float] = []
    latencies: list[float] = []
    errors = 0
    saturations: list[float] = []
    streams: list[tuple[float, float, int]] = []
    for index, sample in enumerate(samples):
        if not isinstance(sample, Mapping):
            raise EvidenceError(f"health sample {index}: must be an object, got {type(sample).__name__}")
        times.append(_number(sample, index, "t"))
        latency = _number(sample, index, "latencyMs")
        if latency < 0:
            raise EvidenceError(f"health sample {index}: field 'latencyMs' must not be negative")
        latencies.append(latency)
        if "error" not in sample:
            raise EvidenceError(f"health sample {index}: field 'error' is missing")
        if not isinstance(sample["error"], bool):
            raise EvidenceError(
                f"health sample {index}: field 'error' must be a boolean, got {short_repr(sample['error'])}"
            )
        errors += sample["error"]
        if sample.get("saturation") is not None:  # optional: absent or null
            saturation = _number(sample, index, "saturation")
            if not 0.0 <= saturation <= 1.0:
                raise EvidenceError(f"health sample {index}: field 'saturation' must be within 0..1")
            saturations.append(saturation)
        stream = _stream_sample(sample, index)
        if stream is not None:
            streams.append(stream)

    n = len(latencies)
    metrics: dict[str, Any] = {
        "samples": n,
        "errorRate": errors / n if n else None,
        "latencyPercentile": policy.latency_percentile,
        "latencyMs": _nearest_rank(latencies, policy.latency_percentile) if n else None,
        "durationS": max(times) - min(times) if n else 0.0,
        "maxSaturation": max(saturations) if saturations else None,
    }
    if streams:
        metrics["stream"] = _stream_metrics(streams, policy.latency_percentile)
    reasons = _health_reasons(metrics, policy)
    base = _baseline_metrics(baseline, policy) if baseline is not None else None
    if base is not None and n:
        p = _pct(policy.latency_percentile)
        limit = base["latencyMs"] * policy.max_regression_ratio
        if metrics["latencyMs"] > limit:
            reasons.append(
                f"{p} latency {metrics['latencyMs']:g} ms regressed above baseline "
                f"{base['latencyMs']:g} ms x {policy.max_regression_ratio:g} = {limit:g} ms"
            )
        limit = base["errorRate"] + policy.max_error_rate
        if metrics["errorRate"] > limit:
            reasons.append(
                f"error rate {metrics['errorRate']:g} regressed above baseline "
                f"{base['errorRate']:g} + {policy.max_error_rate:g} = {limit:g}"
            )
    findings = _stream_findings(metrics.get("stream"), policy, (base or {}).get("stream"))
    reasons.extend(finding["message"] for finding in findings)
    return {
        "healthy": not reasons,
        "reasons": reasons,
        "metrics": metrics,
        "streamFindings": findings,
        "policy": policy.to_dict(),
        "baseline": base,
    }


def _finding(case: str, metric: str, value: float, limit: float, message: str) -> dict[str, Any]:
    return {"case": case, "metric": metric, "value": value, "limit": limit, "message": message}


def _stream_findings(stream: Mapping[str, Any] | None, policy: HealthPolicy,
                     base: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The stream's reasons, each under its case: buffered, slower (ceiling or baseline), fewer events."""
    if stream is None:
        return []
    p = _pct(policy.latency_percentile)
    found: list[dict[str, Any]] = []
    ratio = stream["firstEventRatio"]
    if ratio is not None and ratio > policy.max_first_event_ratio:
        found.append(_finding("negative-sse-buffered", "firstEventRatio", ratio, policy.max_first_event_ratio,
                              f"stream {p} first event at {ratio:.2f} of the stream's duration, above maximum "
                              f"{policy.max_first_event_ratio:g}: held back and released at once"))
    for metric, label, ceiling in (("firstEventMs", "first-event latency", policy.max_first_event_ms),
                                   ("durationMs", "duration", policy.max_stream_duration_ms)):
        if ceiling is not None and stream[metric] > ceiling:
            found.append(_finding("negative-sse-stream-regressed", metric, stream[metric], ceiling,
                                  f"stream {p} {label} {stream[metric]:g} ms above maximum {ceiling:g} ms"))
        if base is not None and stream[metric] > (limit := base[metric] * policy.max_regression_ratio):
            found.append(_finding("negative-sse-stream-regressed", metric, stream[metric], limit,
                                  f"stream {p} {label} {stream[metric]:g} ms regressed above baseline "
                                  f"{base[metric]:g} ms x {policy.max_regression_ratio:g} = {limit:g} ms"))
    if stream["minEvents"] < policy.min_stream_events:
        found.append(_finding("negative-sse-events-lost", "minEvents", stream["minEvents"], policy.min_stream_events,
                              f"a stream carried {stream['minEvents']} events, fewer than the minimum "
                              f"{policy.min_stream_events}"))
    if base is not None and stream["minEvents"] < (limit := base["minEvents"] * policy.min_event_ratio):
        found.append(_finding("negative-sse-events-lost", "minEvents", stream["minEvents"], limit,
                              f"a stream carried {stream['minEvents']} events, fewer than baseline "
                              f"{base['minEvents']:g} x {policy.min_event_ratio:g} = {limit:g}"))
    return found


def _pct(percentile: float) -> str:
    return f"p{percentile:g}"


def _health_reasons(metrics: Mapping[str, Any], policy: HealthPolicy) -> list[str]:
    reasons: list[str] = []
    n = metrics["samples"]
    if n == 0:
        reasons.append("no health samples: a window never observed cannot be healthy")
    elif n < policy.min_samples:
        reasons.append(f"only {n} health samples, fewer than the minimum {policy.min_samples}")
    if n and metrics["errorRate"] > policy.max_error_rate:
        reasons.append(f"error rate {metrics['errorRate']:g} above maximum {policy.max_error_rate:g}")
    if n and metrics["latencyMs"] > policy.max_latency_ms:
        reasons.append(
            f"{_pct(policy.latency_percentile)} latency {metrics['latencyMs']:g} ms above maximum "
            f"{policy.max_latency_ms:g} ms"
        )
    if metrics["maxSaturation"] is not None and metrics["maxSaturation"] > policy.max_saturation:
        reasons.append(
            f"saturation {metrics['maxSaturation']:g} above maximum {policy.max_saturation:g}"
        )
    if metrics["durationS"] < policy.min_duration_s:
        reasons.append(
            f"observed duration {metrics['durationS']:g} s below minimum {policy.min_duration_s:g} s"
        )
    return reasons


def _baseline_numbers(values: Mapping[str, Any], keys: Sequence[str], where: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in keys:
        value = values.get(key)
        if not _finite(value):
            raise EvidenceError(f"health baseline: field {where}{short_repr(key)} must be a finite number, got {short_repr(value)}")
        out[key] = float(value)
    return out


def _baseline_metrics(baseline: Mapping[str, Any], policy: HealthPolicy) -> dict[str, Any]:
    if not isinstance(baseline, Mapping):
        raise EvidenceError(f"health baseline must be a metrics object, got {type(baseline).__name__}")
    if isinstance(baseline.get("metrics"), Mapping):
        baseline = baseline["metrics"]
    out: dict[str, Any] = _baseline_numbers(baseline, ("latencyMs", "errorRate"), "")
    stream = baseline.get("stream")
    if stream is not None:
        if not isinstance(stream, Mapping):
            raise EvidenceError(f"health baseline: field 'stream' must be an object, got {type(stream).__name__}")
        out["stream"] = _baseline_numbers(stream, ("firstEventMs", "durationMs", "minEvents"), "stream.")
    percentile = baseline.get("latencyPercentile")
    if percentile is not None and percentile != policy.latency_percentile:
        raise EvidenceError(
            f"health baseline: latencyPercentile {short_repr(percentile)} is not comparable with the "
            f"policy's {short_repr(policy.latency_percentile)}"
        )
    return out


# --------------------------------------------------------------------------- rollback evidence

#: Fields a rollback target must pin; the certificate signs all of them.
ROLLBACK_PIN_FIELDS: tuple[str, ...] = (
    "version",
    "acceptanceEvidence",
    "artifactSha256",
    "descriptorSha256",
    "acceptanceSha256",
    "registryState",
    "health",
    "routeRestoration",
    "issuedAt",
    "expiresAt",
)
CERTIFICATE_ALGORITHM = "HMAC-SHA-256"

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
#: An exact release version: digits first (an optional ``v``), dot-separated, optional pre-release
#: and build parts (SemVer ``1.0.0-beta.2+build.5``, PEP 440 ``2.0.0rc1``, CalVer ``2026.12.1``).
#: A branch, a tag name or a commit (``HEAD``, ``main``, ``abc123``) is not a version.
_VERSION = re.compile(r"v?[0-9]+(\.[0-9]+)*([-.]?[0-9A-Za-z]+)*(\+[0-9A-Za-z]+(\.[0-9A-Za-z]+)*)?")
_MAX_VERSION_LENGTH = 64
#: The longest validity window rollback evidence may claim (``issuedAt`` to ``expiresAt``): evidence
#: re-verified at least monthly; ``ReleasePolicy.max_validity`` can shorten (or lengthen) it.
DEFAULT_MAX_VALIDITY = timedelta(days=30)
_RANGE_CHARS = frozenset("^~*<>=|, \t\n")
_FLOATING_VERSIONS = frozenset({"latest", "current", "previous"})


def _unsigned_payload(evidence: Mapping[str, Any]) -> bytes:
    """Bytes the certificate signs: canonical JSON of the whole evidence minus ``certificate``.

    Every field is authenticated. Rollback evidence must hold no secret-named field at all
    (``rollback_evidence_problems`` reports one), so redaction never changes what was signed
    and evidence written with ``write_evidence`` still verifies after it is read back.
    """
    return canonical_json({key: value for key, value in evidence.items() if key != "certificate"})


def sign_rollback_evidence(evidence: Mapping[str, Any], signer: str, key: bytes) -> dict[str, Any]:
    """Return a copy of ``evidence`` with a ``certificate`` added (any old one is replaced).

    The certificate is ``{"signer", "algorithm": "HMAC-SHA-256", "signature"}`` where the
    signature is the HMAC-SHA-256 hex digest, under ``key``, of the canonical JSON of the
    evidence without its certificate.
    """
    if not isinstance(evidence, Mapping):
        raise EvidenceError(f"rollback evidence must be an object, got {type(evidence).__name__}")
    if not isinstance(signer, str) or not signer:
        raise EvidenceError("rollback evidence signer must be a non-empty string")
    if not isinstance(key, (bytes, bytearray)) or not key:
        raise EvidenceError("rollback evidence signing key must be non-empty bytes")
    signed = {k: copy.deepcopy(v) for k, v in evidence.items() if k != "certificate"}
    signature = hmac.new(bytes(key), _unsigned_payload(signed), hashlib.sha256).hexdigest()
    signed["certificate"] = {"signer": signer, "algorithm": CERTIFICATE_ALGORITHM, "signature": signature}
    return signed


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and _SHA256_HEX.match(value) is not None


def _version_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"version: must be a non-empty exact version string, got {short_repr(value)}"
    if value.strip().lower() in _FLOATING_VERSIONS:
        return f"version: {short_repr(value)} is a moving alias, not an exact version"
    if _RANGE_CHARS & set(value) or any(part in ("x", "X") for part in value.split(".")):
        return f"version: {short_repr(value)} is a range or wildcard, not an exact version"
    if len(value) > _MAX_VERSION_LENGTH or not _VERSION.fullmatch(value):
        return f"version: {short_repr(value)} is not a version (expected digits such as 1.4.2, not a branch or commit)"
    return None


def suite_digest(keys: Sequence[str]) -> str:
    """The digest that names a transcript suite: SHA-256 of the sorted verdict keys (``name`` or
    ``name.variant``), as :func:`~mcplab.evidence.evidence_digest` computes it."""
    return evidence_digest(sorted(keys))


def _acceptance_problems(value: Any, suite: tuple[str, int] | None = None) -> list[str]:
    """``suite`` is ``(digest, size)`` of the suite the gate knows: acceptance claiming it must count all of it."""
    if not isinstance(value, Mapping):
        return [f"acceptanceEvidence: must be an object, got {type(value).__name__}"]
    problems: list[str] = []
    passed, total = value.get("transcriptsPassed"), value.get("transcriptsTotal")
    if not is_json_integer(passed):
        problems.append(f"acceptanceEvidence.transcriptsPassed: must be an integer, got {short_repr(passed)}")
    if not is_json_integer(total) or total <= 0:
        problems.append(f"acceptanceEvidence.transcriptsTotal: must be a positive integer, got {short_repr(total)}")
    if is_json_integer(passed) and is_json_integer(total) and total > 0 and passed != total:
        problems.append(f"acceptanceEvidence: only {passed} of {total} transcripts passed")
    if not _is_sha256(value.get("digest")):
        problems.append("acceptanceEvidence.digest: must be 64 lowercase hex characters (SHA-256)")
    elif suite is not None and value["digest"] == suite[0] and total != suite[1]:
        problems.append(f"acceptanceEvidence: claims suite {suite[0][:12]} of {suite[1]} transcripts but counts "
                        f"{short_repr(total)}")
    return problems


def _acceptance_digest_problem(evidence: Mapping[str, Any]) -> str | None:
    """``acceptanceSha256`` must be the evidence digest of ``acceptanceEvidence`` (else it names nothing)."""
    if not _is_sha256(evidence.get("acceptanceSha256")) or "acceptanceEvidence" not in evidence:
        return None
    try:
        expected = evidence_digest(evidence["acceptanceEvidence"])
    except EvidenceError:
        return "acceptanceSha256: the acceptance evidence is not JSON, so no digest can name it"
    if not hmac.compare_digest(expected, evidence["acceptanceSha256"]):
        return "acceptanceSha256: is not the digest of acceptanceEvidence (evidence_digest of it)"
    return None


def _certificate_problems(evidence: Mapping[str, Any], trusted_signers: Mapping[str, bytes]) -> list[str]:
    cert = evidence["certificate"]
    if not isinstance(cert, Mapping):
        return [f"certificate: must be an object, got {type(cert).__name__}"]
    problems: list[str] = []
    signer, signature = cert.get("signer"), cert.get("signature")
    if cert.get("algorithm") != CERTIFICATE_ALGORITHM:
        problems.append(f"certificate.algorithm: must be {short_repr(CERTIFICATE_ALGORITHM)}, got {short_repr(cert.get('algorithm'))}")
    if not _is_sha256(signature):
        problems.append("certificate.signature: must be 64 lowercase hex characters (HMAC-SHA-256)")
    if not isinstance(signer, str) or signer not in trusted_signers:
        problems.append(f"certificate.signer: {short_repr(signer)} is not a trusted release-controller identity")
    if problems:
        return problems
    try:
        payload = _unsigned_payload(evidence)
    except EvidenceError as exc:
        return [f"certificate: cannot verify, {exc}"]
    expected = hmac.new(bytes(trusted_signers[signer]), payload, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return [f"certificate.signature: does not match the evidence under {short_repr(signer)}'s key"]
    return []


def _timestamp(value: Any) -> datetime | None:
    """An ISO 8601 timestamp WITH a UTC offset, else ``None`` (a naive time is ambiguous)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _freshness_problems(evidence: Mapping[str, Any], now: datetime, max_validity: timedelta) -> list[str]:
    issued, expires = _timestamp(evidence.get("issuedAt")), _timestamp(evidence.get("expiresAt"))
    problems = [
        f"{name}: must be an ISO 8601 timestamp with a UTC offset, got {short_repr(evidence[name])}"
        for name, moment in (("issuedAt", issued), ("expiresAt", expires))
        if name in evidence and moment is None
    ]
    if issued is not None and expires is not None:
        if expires <= issued:
            problems.append("expiresAt: must be later than issuedAt")
        elif expires - issued > max_validity:
            problems.append(f"expiresAt: a validity window may last at most {max_validity.days} days "
                            f"(issuedAt to expiresAt is {(expires - issued).days} days)")
        if issued > now:
            problems.append(f"issuedAt: {evidence['issuedAt']} is in the future")
        if now >= expires:
            problems.append(f"expiresAt: the evidence expired at {evidence['expiresAt']}; re-verify the rollback target")
    return problems


def _aware_now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise EvidenceError(f"now must be a timezone-aware datetime (e.g. datetime.now(UTC)), got {short_repr(now)}")
    return now


def rollback_evidence_problems(
    evidence: Any, trusted_signers: Mapping[str, bytes], now: datetime | None = None, *,
    max_validity: timedelta = DEFAULT_MAX_VALIDITY, suite: tuple[str, int] | None = None,
) -> list[str]:
    """Every reason ``evidence`` does not prove a rollback target, one readable string each.

    Each string starts with the field it is about. An empty list means the target is proven:
    exact version, complete acceptance evidence, three SHA-256 digests, registry state
    ``"active"``, health whose ``healthy`` is the boolean ``True``, a route restoration
    procedure, an ``issuedAt``..``expiresAt`` validity window that holds ``now`` (default: the
    current UTC time; stale evidence must be re-verified) and lasts at most ``max_validity``, an
    ``acceptanceSha256`` that is the digest of ``acceptanceEvidence`` (which, when it names the
    ``suite`` ``(digest, size)`` the gate knows, counts all of it), and a valid certificate from
    a trusted signer over all of it. A naive ``now`` raises :class:`~mcplab.errors.EvidenceError`.
    """
    now = _aware_now(now)
    if evidence is None:
        return ["rollback evidence: missing"]
    if not isinstance(evidence, Mapping):
        return [f"rollback evidence: must be an object, got {type(evidence).__name__}"]
    problems = [f"{name}: missing" for name in (*ROLLBACK_PIN_FIELDS, "certificate") if name not in evidence]
    if "version" in evidence and (problem := _version_problem(evidence["version"])):
        problems.append(problem)
    if "acceptanceEvidence" in evidence:
        problems.extend(_acceptance_problems(evidence["acceptanceEvidence"], suite))
    for name in ("artifactSha256", "descriptorSha256", "acceptanceSha256"):
        if name in evidence and not _is_sha256(evidence[name]):
            problems.append(f"{name}: must be 64 lowercase hex characters (SHA-256)")
    if (problem := _acceptance_digest_problem(evidence)) is not None:
        problems.append(problem)
    if "registryState" in evidence and evidence["registryState"] != "active":
        problems.append(f"registryState: must be 'active', got {short_repr(evidence['registryState'])}")
    if "health" in evidence:
        health = evidence["health"]
        if not isinstance(health, Mapping):
            problems.append(f"health: must be an object, got {type(health).__name__}")
        elif health.get("healthy") is not True:
            problems.append(f"health.healthy: must be the boolean true, got {short_repr(health.get('healthy'))}")
    if "routeRestoration" in evidence:
        steps = evidence["routeRestoration"]
        if (
            not isinstance(steps, (list, tuple))
            or not steps
            or not all(isinstance(step, str) and step.strip() for step in steps)
        ):
            problems.append("routeRestoration: must be a non-empty list of non-empty procedure steps")
    problems.extend(_freshness_problems(evidence, now, max_validity))
    unsigned = {key: value for key, value in evidence.items() if key != "certificate"}
    problems.extend(f"{path[2:]}: rollback evidence must not carry secrets" for path in redaction_paths(unsigned))
    if "certificate" in evidence:
        problems.extend(_certificate_problems(evidence, trusted_signers))
    return problems


def rollback_evidence_ready(evidence: Any, trusted_signers: Mapping[str, bytes], now: datetime | None = None,
                            **limits: Any) -> bool:
    """True when :func:`rollback_evidence_problems` finds nothing."""
    return not rollback_evidence_problems(evidence, trusted_signers, now, **limits)


# --------------------------------------------------------------------------- gate


@dataclass(frozen=True)
class ReleasePolicy:
    """What the gate accepts.

    ``health``: thresholds for health windows. ``allowed_drops``: SDK semantic-loss field paths
    the component is declared free to ignore (exact match). ``trusted_signers``: release
    controller identity -> HMAC key for rollback certificates. ``suite``: the verdict keys
    (``name`` or ``name.variant``) the transcript evidence must cover, every one exactly once
    (``None``: the shipped suite, :func:`~mcplab.transcript.load_transcripts`). ``max_validity``:
    the longest rollback-evidence validity window. ``verify_sdk_views``: re-observe every SDK
    record that names the installed SDK and block a view the SDK does not produce (off by default
    because the course's what-if evidence, lab D's "the SDK kept futureHint", is declared, not observed).
    """

    health: HealthPolicy = HealthPolicy()
    allowed_drops: tuple[str, ...] = ()
    trusted_signers: Mapping[str, bytes] = field(default_factory=dict)
    suite: tuple[str, ...] | None = None
    max_validity: timedelta = DEFAULT_MAX_VALIDITY
    verify_sdk_views: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_drops", tuple(self.allowed_drops))
        if self.suite is not None:
            object.__setattr__(self, "suite", tuple(self.suite))
            if not self.suite or not all(isinstance(key, str) and key for key in self.suite):
                raise ValueError("suite must be a non-empty list of verdict keys ('name' or 'name.variant')")
        if not isinstance(self.max_validity, timedelta) or self.max_validity <= timedelta(0):
            raise ValueError("max_validity must be a positive timedelta")
        if not all(isinstance(path, str) for path in self.allowed_drops):
            raise ValueError("allowed_drops must be field path strings")
        for signer, key in self.trusted_signers.items():
            if not isinstance(signer, str) or not signer or not isinstance(key, (bytes, bytearray)) or not key:
                raise ValueError(f"trusted_signers maps a signer name to a non-empty bytes key; got {short_repr(signer)} -> {type(key).__name__}")


def _label(item: Mapping[str, Any], index: int) -> str:
    label = item.get("name") or item.get("label")
    return label if isinstance(label, str) and label else f"#{index}"


def _guarded(source: str, check: Callable[..., Any], *args: Any, shape: Callable[[str], Any] = lambda r: [r]) -> Any:
    """Run one evidence check; evidence nested too deeply to judge becomes a blocking reason."""
    try:
        return check(*args)
    except RecursionError:
        return shape(f"{source} evidence is nested too deeply to judge")


def _evidence_list(value: Any) -> list[Any] | None:
    """A non-empty list of evidence entries, or ``None`` (missing or empty evidence never passes)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        return None
    return list(value)


def _rollback_targets(rollback: Any) -> list[Any]:
    """The offered targets in order: one evidence object, a list of them, or none (``[None]``)."""
    if isinstance(rollback, (list, tuple)):
        return list(rollback) or [None]
    return [rollback]


#: Fields :func:`~mcplab.sdkview.sdk_observe` records beside the view: which SDK saw which result how.
_OBSERVATION_FIELDS = ("sdk", "version", "method", "era")


def _hollow_observation(item: Mapping[str, Any]) -> str | None:
    """Why an SDK record cannot be an observation, or ``None``.

    A result the SDK saw is a non-empty object; the SDK answered either a non-empty view or an
    exception it raised (``{"raw": {}, "view": {}}`` records nothing). Identity fields, when
    present, are strings.
    """
    if not item["raw"]:
        return "the raw result is empty"
    view = item["view"]
    if view is None:
        exception = item.get("exception")
        return None if isinstance(exception, str) and exception.strip() else "no view and no exception recorded"
    if not isinstance(view, dict) or not view:
        return "the SDK's view must be a non-empty object, or null with the exception it raised"
    bad = [name for name in _OBSERVATION_FIELDS if name in item and not isinstance(item[name], str)]
    return f"{', '.join(bad)} must be strings" if bad else None


def _reobserved_mismatch(item: Mapping[str, Any]) -> str | None:
    """Run the installed SDK on the raw result again; a recorded view it does not produce is not evidence."""
    from .sdkview import sdk_identity, sdk_observe

    identity = sdk_identity()
    missing = [name for name in _OBSERVATION_FIELDS if not isinstance(item.get(name), str)]
    if missing:
        return f"names no SDK observation ({', '.join(missing)} missing): record it with sdk_observe"
    if item["sdk"] != identity["sdk"] or item["version"] != identity["version"]:
        return (f"recorded with {short_repr(item['sdk'])} {short_repr(item['version'])}; the installed SDK "
                f"({identity['sdk']} {identity['version']}) cannot re-observe it")
    if item["era"] not in ("modern", "legacy"):
        return f"era {short_repr(item['era'])} is not modern or legacy"
    version = item.get("protocolVersion") if isinstance(item.get("protocolVersion"), str) else None
    again = sdk_observe(copy.deepcopy(item["raw"]), item["method"], item["era"], version=version)
    if not same_json_value(again["view"], item["view"]):
        return "the view differs from what the installed SDK produces when re-observed"
    return None


def _observed_streams(health: Any) -> bool:
    """True when signed health metrics record at least one streamed sample."""
    metrics = health.get("metrics") if isinstance(health, Mapping) else None
    stream = metrics.get("stream") if isinstance(metrics, Mapping) else None
    samples = stream.get("samples") if isinstance(stream, Mapping) else None
    return is_json_integer(samples) and samples > 0


class ReleaseGate:
    """Decide promote / rollback / halt from candidate evidence and one or more rollback targets.

    The gate judges raw evidence itself with the same core functions as everything else: the
    SDK diff is recomputed from each ``{raw, view}`` pair with the policy's allowed drops, and
    proxy findings from each ``{ingress, origin, egress}`` capture, so a hand-written "no
    issues" summary is not evidence.
    """

    def __init__(self, policy: ReleasePolicy) -> None:
        self.policy = policy
        if policy.suite is None:
            from .transcript import load_transcripts  # the transcript layer sits beside the gate

            keys: tuple[str, ...] = tuple(t.key for t in load_transcripts())
        else:
            keys = policy.suite
        #: The verdict keys transcript evidence must cover, and the digest that names them.
        self.suite_keys = frozenset(keys)
        self.suite_digest = suite_digest(list(self.suite_keys))

    def evaluate(
        self,
        *,
        transcripts: Sequence[Mapping[str, Any]],
        sdk_evidence: Sequence[Mapping[str, Any]],
        proxy_captures: Sequence[Mapping[str, Any]],
        health_samples: Sequence[Mapping[str, Any]] | None,
        rollback: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
        health_baseline: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Decide on a candidate.

        ``transcripts``: verdicts ``{name, variant?, passed}`` (``TranscriptResult.to_dict()``;
        names must be known cases, each verdict once); ``sdk_evidence``: ``{raw, view, label?,
        exception?}`` per high-risk result (``view`` is ``None`` when the SDK refused it);
        ``proxy_captures``: ``{ingress, origin, egress, label?}``; ``health_samples``: the raw
        health window, judged here with ``policy.health`` (and ``health_baseline``);
        ``rollback``: signed rollback evidence, a list of them (candidate targets in order of
        preference) or ``None``; ``now``: the decision time for the rollback evidence's
        validity window (default: current UTC time).

        The gate rolls back only to the FIRST target whose evidence is complete and verified.
        When the candidate's stream regressed (a ``streamFindings`` entry in its health), a
        target is complete only if its signed ``health.metrics.stream`` shows streams were
        observed: a window that never saw a stream cannot prove the stream works there.

        Returns ``{"action", "reasons", "candidatePassed", "health", "rollbackReady",
        "rollbackProblems", "rollbackTarget", "rollbackCandidates", "sdkDiffs", "proxyFindings",
        "allowedDrops", "unusedAllowedDrops"}``. ``action`` is ``"promote"`` (candidate passes,
        rollback proven), ``"rollback"`` (candidate fails, rollback proven) or ``"halt"``
        (rollback not proven: never guess). ``rollbackTarget`` is ``{"index", "version"}`` of the
        chosen target or ``None``; ``rollbackCandidates`` has ``{"index", "version", "ready",
        "problems"}`` for every offered target (why each was rejected); ``rollbackProblems`` is
        empty when a target was chosen, else every target's problems (prefixed ``target #i:``
        when several were offered). ``allowedDrops`` are the policy's drops some diff actually
        showed; ``unusedAllowedDrops`` the rest (a stale excuse to remove; reported, not blocking).
        """
        now = _aware_now(now)
        reasons = _guarded("transcript", self._transcript_reasons, transcripts)
        sdk_reasons, diffs, tolerated = _guarded("SDK", self._sdk_reasons, sdk_evidence, shape=lambda r: ([r], [], set()))
        proxy_reasons, findings = _guarded("proxy", self._proxy_reasons, proxy_captures, shape=lambda r: ([r], []))
        health_reasons, health = _guarded(
            "health", self._health_reasons, health_samples, health_baseline, shape=lambda r: ([r], None)
        )
        reasons += sdk_reasons + proxy_reasons + health_reasons
        candidate_passed = not reasons

        stream_regressed = bool(health and health["streamFindings"])
        candidates = [self._judge_target(index, target, now, stream_regressed)
                      for index, target in enumerate(_rollback_targets(rollback))]
        chosen = next((c for c in candidates if c["ready"]), None)
        rollback_ready = chosen is not None
        if chosen is not None:
            rollback_problems: list[str] = []
        elif len(candidates) == 1:
            rollback_problems = list(candidates[0]["problems"])
        else:
            rollback_problems = [f"target #{c['index']}: {p}" for c in candidates for p in c["problems"]]
        if rollback_ready:
            action = "promote" if candidate_passed else "rollback"
        else:
            action = "halt"
            if candidate_passed:
                reasons.append("rollback target not proven: verify rollback evidence before promotion")
            else:
                reasons.append("rollback target not proven: halting traffic instead of guessing")
        return {
            "action": action,
            "reasons": reasons,
            "candidatePassed": candidate_passed,
            "health": health,
            "rollbackReady": rollback_ready,
            "rollbackProblems": rollback_problems,
            "rollbackTarget": {"index": chosen["index"], "version": chosen["version"]} if chosen else None,
            "rollbackCandidates": candidates,
            "sdkDiffs": diffs,
            "proxyFindings": findings,
            "allowedDrops": sorted(tolerated),
            "unusedAllowedDrops": sorted(set(self.policy.allowed_drops) - tolerated),
            "suiteDigest": self.suite_digest,
        }

    def _judge_target(self, index: int, target: Any, now: datetime | None, stream_regressed: bool) -> dict[str, Any]:
        problems = _guarded("rollback", lambda: rollback_evidence_problems(
            target, self.policy.trusted_signers, now, max_validity=self.policy.max_validity,
            suite=(self.suite_digest, len(self.suite_keys))))
        if stream_regressed and isinstance(target, Mapping) and not _observed_streams(target.get("health")):
            problems.append("health.metrics.stream: the candidate's stream regressed and this target's signed "
                            "health never observed a stream")
        version = target.get("version") if isinstance(target, Mapping) else None
        return {"index": index, "version": version if isinstance(version, str) else None,
                "ready": not problems, "problems": problems}

    def _transcript_reasons(self, transcripts: Any) -> list[str]:
        """Well-formed verdicts, each once, covering exactly the suite the gate knows (bound by its digest)."""
        items = _evidence_list(transcripts)
        if items is None:
            return ["no transcript evidence"]
        reasons: list[str] = []
        failed: list[str] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            variant = item.get("variant") if isinstance(item, Mapping) else None
            if (
                not isinstance(item, Mapping)
                or not isinstance(item.get("name"), str)
                or item["name"] not in CASES
                or not (variant is None or (isinstance(variant, str) and variant))
                or not isinstance(item.get("passed"), bool)
            ):
                reasons.append(f"transcript #{index}: malformed evidence (needs a known case 'name', an optional "
                               "string 'variant' and a boolean 'passed')")
                continue
            key = f"{item['name']}.{variant}" if variant else item["name"]
            if key in seen:
                reasons.append(f"transcript {key}: the same verdict appears twice")
            seen.add(key)
            if key not in self.suite_keys:
                reasons.append(f"transcript {key}: not a verdict of suite {self.suite_digest[:12]}")
            if item["passed"] is not True:
                failed.append(_label(item, index))
        missing = sorted(self.suite_keys - seen)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            reasons.append(f"transcript evidence covers {len(self.suite_keys & seen)} of {len(self.suite_keys)} "
                           f"verdicts of suite {self.suite_digest[:12]}; missing: {shown}")
        if failed:
            reasons.insert(0, f"transcripts failed: {', '.join(failed)}")
        return reasons

    def _sdk_reasons(self, sdk_evidence: Any) -> tuple[list[str], list[dict[str, Any]], set[str]]:
        items = _evidence_list(sdk_evidence)
        if items is None:
            return ["no SDK-diff evidence"], [], set()
        reasons: list[str] = []
        diffs: list[dict[str, Any]] = []
        tolerated: set[str] = set()
        allowed = self.policy.allowed_drops
        for index, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get("raw"), dict) or "view" not in item:
                reasons.append(f"SDK evidence #{index}: malformed (needs the raw result and the SDK's view)")
                continue
            label = _label(item, index)
            hollow = _hollow_observation(item)
            if hollow:
                reasons.append(f"SDK evidence {label}: not an observation ({hollow})")
                continue
            if self.policy.verify_sdk_views and (mismatch := _reobserved_mismatch(item)):
                reasons.append(f"SDK evidence {label}: {mismatch}")
                continue
            if item["view"] is None:
                reasons.append(f"SDK evidence {label}: the SDK refused the result ({item['exception'][:200]})")
                continue
            diff = compare_sdk_view(item["raw"], item["view"], allowed_drops=allowed)
            diffs.append({"label": label, **diff})
            tolerated |= set(allowed) & set(diff["dropped"] + diff["changed"])
            reasons.extend(f"SDK diff {label}: semantic loss of {short_repr(path)} not allowed by policy" for path in diff["semanticLoss"])
        return reasons, diffs, tolerated

    @staticmethod
    def _proxy_reasons(proxy_captures: Any) -> tuple[list[str], list[dict[str, Any]]]:
        items = _evidence_list(proxy_captures)
        if items is None:
            return ["no proxy evidence"], []
        reasons: list[str] = []
        found: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                reasons.append(f"proxy capture #{index}: malformed (needs ingress, origin and egress)")
                continue
            try:
                findings = proxy_findings(item.get("ingress"), item.get("origin"), item.get("egress"))
            except EvidenceError as exc:
                reasons.append(f"proxy capture {_label(item, index)}: malformed evidence: {exc}")
                continue
            found.extend({"label": _label(item, index), **f} for f in findings)
            reasons.extend(f"proxy issue: {f['message']}" for f in findings)
        return reasons, found

    def _health_reasons(self, samples: Any, baseline: Any) -> tuple[list[str], dict[str, Any] | None]:
        if samples is None:
            return ["no health evidence"], None
        try:
            health = evaluate_health(samples, self.policy.health, baseline)
        except EvidenceError as exc:
            return [f"health window: malformed evidence: {exc}"], None
        if health["healthy"] is True:
            return [], health
        return [f"health window not healthy: {'; '.join(health['reasons'])}"], health
