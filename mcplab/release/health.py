"""The health window: samples judged against thresholds and an accepted baseline, streams included.

Design: every sample field is checked before any figure is computed (a malformed window raises
:class:`~mcplab.errors.EvidenceError` naming the index and field, never a Python error), the
latency percentile is nearest-rank (always an observed value), and ``healthy`` is the boolean
``True`` only when no reason was found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import EvidenceError
from ..jsonvalue import is_json_integer, is_json_number, short_repr

__all__ = ["HealthPolicy", "STREAM_FIELDS", "stream_health_sample", "evaluate_health"]


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
