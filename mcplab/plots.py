"""The health window as a picture: latency percentiles, error rate and stream timings over time, with the thresholds.

Design: :func:`health_series` cuts the window into equal time buckets and computes each series
with the release gate's own nearest-rank percentile (JSON, so a lab can tabulate it);
:func:`plot_health` draws exactly those series on a ``matplotlib`` ``Figure`` built without
pyplot (an Agg canvas, no global state: headless and notebook alike), each threshold a labelled
dashed line taken from the same :class:`~mcplab.release.HealthPolicy` the gate judges with.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import EvidenceError
from .release import HealthPolicy, _nearest_rank, evaluate_health

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["LATENCY_PERCENTILES", "health_series", "plot_health"]

#: The latency percentiles drawn as lines (nearest rank, like the gate).
LATENCY_PERCENTILES: tuple[float, ...] = (50.0, 95.0, 99.0)
_DEFAULT_BUCKETS = 20


def _label(percentile: float) -> str:
    return f"p{percentile:g}"


def _buckets(samples: Sequence[Mapping[str, Any]], count: int) -> list[tuple[float, list[Mapping[str, Any]]]]:
    """Non-empty equal-width time buckets as ``(bucket end t, samples)``; the last edge is inclusive."""
    times = [float(s["t"]) for s in samples]
    start, end = min(times), max(times)
    width = (end - start) / count
    groups: list[list[Mapping[str, Any]]] = [[] for _ in range(count)]
    for t, sample in zip(times, samples, strict=True):
        index = min(int((t - start) / width), count - 1) if width else count - 1
        groups[index].append(sample)
    return [(start + width * (i + 1), group) for i, group in enumerate(groups) if group]


def health_series(samples: Sequence[Mapping[str, Any]], policy: HealthPolicy | None = None,
                  baseline: Mapping[str, Any] | None = None, *, buckets: int = _DEFAULT_BUCKETS) -> dict[str, Any]:
    """The window as series over time, the thresholds that apply, and the gate's verdict.

    ``policy`` defaults to ``HealthPolicy()``; ``buckets`` is how many equal time slices to cut.

    Returns ``{"t", "latency": {"p50", "p95", "p99"}, "errorRate", "stream", "thresholds",
    "health"}``: ``t`` is each non-empty bucket's end (seconds); ``stream`` is ``None`` or
    ``{"t", "firstEventMs", "durationMs", "bufferedFromMs"}`` over the buckets holding streamed
    samples (the policy's percentile; ``bufferedFromMs`` is ``max_first_event_ratio`` of the
    duration, where a first event starts to look buffered); ``thresholds`` lists ``{"label", "panel", "value"}`` for the policy's
    ceilings that apply and, with a baseline, its regression limits; ``health`` is
    :func:`~mcplab.release.evaluate_health` of the same window. Malformed samples raise
    :class:`~mcplab.errors.EvidenceError` as the gate would.
    """
    if not isinstance(buckets, int) or buckets < 1:
        raise ValueError(f"buckets must be a positive integer, got {buckets!r}")
    policy = policy or HealthPolicy()
    health = evaluate_health(samples, policy, baseline)
    groups = _buckets(samples, buckets) if samples else []
    series: dict[str, Any] = {
        "t": [end for end, _ in groups],
        "latency": {_label(p): [_nearest_rank([float(s["latencyMs"]) for s in group], p) for _, group in groups]
                    for p in LATENCY_PERCENTILES},
        "errorRate": [sum(s["error"] for s in group) / len(group) for _, group in groups],
        "stream": None,
        "thresholds": _thresholds(policy, health),
        "health": health,
    }
    streamed = [(end, [s for s in group if s.get("firstEventMs") is not None]) for end, group in groups]
    streamed = [(end, group) for end, group in streamed if group]
    if streamed:
        p = policy.latency_percentile
        series["stream"] = {
            "t": [end for end, _ in streamed],
            "firstEventMs": [_nearest_rank([float(s["firstEventMs"]) for s in group], p) for _, group in streamed],
            "durationMs": [_nearest_rank([float(s["streamDurationMs"]) for s in group], p) for _, group in streamed],
        }
        # where a first event starts to count as buffered: max_first_event_ratio of the stream's duration
        series["stream"]["bufferedFromMs"] = [policy.max_first_event_ratio * d for d in series["stream"]["durationMs"]]
    return series


def _thresholds(policy: HealthPolicy, health: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each limit that applies as ``{"label", "panel", "value"}`` (panel: latency, errorRate or stream)."""
    p, ratio = _label(policy.latency_percentile), policy.max_regression_ratio
    base = health["baseline"]
    limits = [("latency", f"max {p} latency", policy.max_latency_ms), ("errorRate", "max error rate", policy.max_error_rate)]
    if base is not None:
        limits += [("latency", f"baseline {p} latency x {ratio:g}", base["latencyMs"] * ratio),
                   ("errorRate", "baseline error rate + max", base["errorRate"] + policy.max_error_rate)]
    if "stream" in health["metrics"]:
        limits += [("stream", f"max {p} first event", policy.max_first_event_ms),
                   ("stream", f"max {p} stream duration", policy.max_stream_duration_ms)]
        if base is not None and "stream" in base:
            limits += [("stream", f"baseline {p} first event x {ratio:g}", base["stream"]["firstEventMs"] * ratio),
                       ("stream", f"baseline {p} stream duration x {ratio:g}", base["stream"]["durationMs"] * ratio)]
    return [{"label": label, "panel": panel, "value": value} for panel, label, value in limits if value is not None]


@functools.cache
def _figure_class() -> type:
    """A ``Figure`` that shows itself as a PNG in IPython (``_repr_png_``) without pyplot's inline backend.

    A figure made without pyplot shows only its text repr in a notebook unless ``%matplotlib inline``
    registered a formatter; with this repr the returned figure displays itself either way.
    """
    import io

    from matplotlib.figure import Figure

    class DisplayFigure(Figure):
        def _repr_png_(self) -> bytes:
            out = io.BytesIO()
            self.savefig(out, format="png", dpi=80)
            return out.getvalue()

    return DisplayFigure


def plot_health(samples: Sequence[Mapping[str, Any]], policy: HealthPolicy | None = None,
                baseline: Mapping[str, Any] | None = None, *, buckets: int = _DEFAULT_BUCKETS,
                title: str = "Health window") -> Figure:
    """A ``Figure`` of the window: latency p50/p95/p99 and error rate over time, stream timings if any.

    Every threshold of :func:`health_series` is a horizontal line labelled ``threshold: <name>
    (<value>)`` on its axes (policy ceilings dashed red, baseline limits dotted purple); the
    title carries the gate's verdict. In a notebook the
    returned figure displays itself; elsewhere ``fig.savefig(path)`` writes it (Agg). An empty
    window raises :class:`~mcplab.errors.EvidenceError` (a blank chart would look like a calm one).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    policy = policy or HealthPolicy()
    series = health_series(samples, policy, baseline, buckets=buckets)
    if not series["t"]:
        raise EvidenceError("health window: no samples, nothing to plot (the gate judges an empty window not healthy)")
    stream = series["stream"]
    fig = _figure_class()(figsize=(11, 7.5 if stream else 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(3 if stream else 2, 1, sharex=True)
    latency_ax, error_ax = axes[0], axes[1]
    t = series["t"]
    for name, values in series["latency"].items():
        latency_ax.plot(t, values, marker=".", label=name)
    latency_ax.set_ylabel("latency (ms)")
    error_ax.plot(t, series["errorRate"], marker=".", color="tab:red", label="error rate")
    error_ax.set_ylabel("error rate")
    if stream:
        stream_ax = axes[2]
        stream_ax.plot(stream["t"], stream["firstEventMs"], marker=".", label=f"{_label(policy.latency_percentile)} first event")
        stream_ax.plot(stream["t"], stream["durationMs"], marker=".", label=f"{_label(policy.latency_percentile)} stream duration")
        stream_ax.plot(stream["t"], stream["bufferedFromMs"], linestyle="--", linewidth=1.2, color="tab:red",
                       label=f"threshold: buffered above {policy.max_first_event_ratio:g} x duration")
        stream_ax.set_ylabel("stream (ms)")
    panels = {"latency": latency_ax, "errorRate": error_ax, "stream": axes[-1]}
    error_ax.set_ylim(bottom=0.0)  # a rate is never negative
    for limit in series["thresholds"]:
        from_baseline = limit["label"].startswith("baseline")
        panels[limit["panel"]].axhline(limit["value"], linestyle=":" if from_baseline else "--", linewidth=1.2,
                                       color="tab:purple" if from_baseline else "tab:red",
                                       label=f"threshold: {limit['label']} ({limit['value']:g})")
    axes[-1].set_xlabel("t (s since window start)")
    for ax in axes:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    health = series["health"]
    count = len(health["reasons"])
    verdict = "healthy" if health["healthy"] is True else f"NOT healthy ({count} reason{'' if count == 1 else 's'})"
    fig.suptitle(f"{title}: {health['metrics']['samples']} samples, {verdict}")
    return fig
