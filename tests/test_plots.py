"""The health-window plot: what is drawn (series, thresholds, verdict), not how the pixels look."""

from __future__ import annotations

import json

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mcplab import HealthPolicy, evaluate_health, health_series, plot_health
from mcplab.errors import EvidenceError

BUCKET_ENDS = [99.75, 199.5, 299.25, 399.0]


def four_buckets(*, stream: bool = False, buffered_from: int = 9):
    """400 samples over t = 0..399: bucket k has latencies k*1000 + 1..100 and k errors.

    With ``stream``, bucket k's first events are 10*(k+1) ms of a 300 ms stream, except buckets
    from ``buffered_from`` on, whose first event arrives at 299 ms (held back).
    """
    samples = []
    for k in range(4):
        for j in range(100):
            sample = {"t": float(k * 100 + j), "latencyMs": float(k * 1000 + j + 1), "error": j < k, "saturation": 0.1}
            if stream:
                first = 299.0 if k >= buffered_from else 10.0 * (k + 1)
                sample.update(firstEventMs=first, streamDurationMs=300.0, eventCount=7)
            samples.append(sample)
    return samples


def lines(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def test_latency_percentiles_and_error_rate_are_drawn_per_bucket():
    fig = plot_health(four_buckets(), buckets=4)
    assert isinstance(fig, Figure) and isinstance(fig.canvas, FigureCanvasAgg)
    latency_ax, error_ax = fig.axes
    drawn = lines(latency_ax)
    for name, offset in (("p50", 50), ("p95", 95), ("p99", 99)):
        assert list(drawn[name].get_xdata()) == BUCKET_ENDS
        assert list(drawn[name].get_ydata()) == [k * 1000 + offset for k in range(4)]
    assert list(lines(error_ax)["error rate"].get_ydata()) == [0.0, 0.01, 0.02, 0.03]
    assert latency_ax.get_ylabel() == "latency (ms)" and error_ax.get_ylabel() == "error rate"
    assert fig.axes[-1].get_xlabel() == "t (s since window start)"


def test_thresholds_are_labelled_lines_at_the_policy_values():
    policy = HealthPolicy(max_latency_ms=2500.0, max_error_rate=0.02)
    latency_ax, error_ax = plot_health(four_buckets(), policy, buckets=4).axes
    latency_limit = lines(latency_ax)["threshold: max p99 latency (2500)"]
    assert set(latency_limit.get_ydata()) == {2500.0}
    assert set(lines(error_ax)["threshold: max error rate (0.02)"].get_ydata()) == {0.02}
    # every threshold also shows up in its axes' legend
    legend = [text.get_text() for text in latency_ax.get_legend().get_texts()]
    assert "threshold: max p99 latency (2500)" in legend and "p50" in legend


def test_baseline_limits_are_drawn_when_a_baseline_is_given():
    baseline = {"latencyMs": 1000.0, "errorRate": 0.005}
    latency_ax, error_ax = plot_health(four_buckets(), baseline=baseline, buckets=4).axes
    assert set(lines(latency_ax)["threshold: baseline p99 latency x 1.5 (1500)"].get_ydata()) == {1500.0}
    assert set(lines(error_ax)["threshold: baseline error rate + max (0.015)"].get_ydata()) == {0.015}
    assert not any("baseline" in label for label in lines(plot_health(four_buckets(), buckets=4).axes[0]))


def test_stream_timings_get_their_own_axes_with_the_buffering_limit():
    policy = HealthPolicy(max_first_event_ms=250.0)
    fig = plot_health(four_buckets(stream=True, buffered_from=3), policy, buckets=4)
    assert len(fig.axes) == 3
    drawn = lines(fig.axes[2])
    assert list(drawn["p99 first event"].get_ydata()) == [10.0, 20.0, 30.0, 299.0]
    assert list(drawn["p99 stream duration"].get_ydata()) == [300.0] * 4
    assert list(drawn["threshold: buffered above 0.8 x duration"].get_ydata()) == pytest.approx([240.0] * 4)
    assert set(drawn["threshold: max p99 first event (250)"].get_ydata()) == {250.0}
    # the gate agrees with the picture: the last bucket's streams are held back
    assert "NOT healthy" in fig.get_suptitle()


def test_a_window_without_streams_has_two_axes_and_no_stream_series():
    series = health_series(four_buckets(), buckets=4)
    assert series["stream"] is None and len(plot_health(four_buckets(), buckets=4).axes) == 2


def test_the_title_carries_the_gates_verdict():
    healthy = [{"t": float(i), "latencyMs": 50.0, "error": False} for i in range(100)]
    assert plot_health(healthy).get_suptitle() == "Health window: 100 samples, healthy"
    unhealthy = plot_health(four_buckets(), buckets=4).get_suptitle()
    assert unhealthy == "Health window: 400 samples, NOT healthy (2 reasons)"  # p99 latency and error rate


def test_series_are_json_and_carry_the_same_verdict_as_the_gate():
    samples = four_buckets(stream=True)
    baseline = evaluate_health(samples)["metrics"]
    series = health_series(samples, baseline=baseline, buckets=4)
    assert json.loads(json.dumps(series, allow_nan=False)) == series
    assert series["health"] == evaluate_health(samples, baseline=baseline)
    assert [t["panel"] for t in series["thresholds"]] == ["latency", "errorRate", "latency", "errorRate", "stream", "stream"]


def test_equal_times_make_one_bucket_and_an_empty_window_is_a_clear_error():
    same = [{"t": 5.0, "latencyMs": float(v), "error": False} for v in (10, 20, 30)]
    series = health_series(same, buckets=4)
    assert series["t"] == [5.0] and series["latency"]["p50"] == [20.0]
    figure = plot_health(same)
    assert "3 samples, NOT healthy" in figure.get_suptitle() and figure.axes[1].get_ylim()[0] == 0.0  # no negative rate
    assert health_series([])["t"] == []  # the series of an empty window are empty ...
    with pytest.raises(EvidenceError, match="no samples, nothing to plot"):  # ... and there is no picture of it
        plot_health([])


def test_bad_input_is_refused_like_the_gate_refuses_it():
    with pytest.raises(EvidenceError, match="sample 0: field 'latencyMs' is missing"):
        plot_health([{"t": 0.0, "error": False}])
    with pytest.raises(ValueError, match="buckets"):
        health_series(four_buckets(), buckets=0)


def test_the_figure_renders_to_png(tmp_path):
    path = tmp_path / "health.png"
    plot_health(four_buckets(stream=True, buffered_from=2), buckets=4).savefig(path)
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_the_figure_displays_itself_as_a_png_without_pyplot():
    """A pyplot-free Figure shows only its text repr in a notebook unless it has a PNG repr of its own."""
    png = plot_health(four_buckets(), buckets=4)._repr_png_()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
