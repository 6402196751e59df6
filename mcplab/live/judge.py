"""Judge live captures with the recorded suite's own runner, under the same case names.

Design: a capture becomes a ``Transcript`` (the case's request plus the live status, headers and
body) and goes through ``run_transcript`` unchanged, so a live verdict and a recorded verdict
cannot drift apart. Proxy hops go through ``proxy_findings``. Timing is the one thing a recorded
body cannot show: a stream is ``negative-sse-buffered`` when its first event arrives after at
least ``BUFFERED_SHARE`` of its duration through the proxy while the direct stream delivered its
first event within ``DIRECT_SHARE`` of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..cases import CASES
from ..proxy_evidence import proxy_findings
from ..transcript import Exchange, Transcript, run_transcript
from .capture import Capture
from .cases import LiveCase

__all__ = ["live_transcript", "judge_capture", "hop_findings", "stream_buffered", "BUFFERED_SHARE", "DIRECT_SHARE",
           "MIN_STREAM_SECONDS", "SSE_BUFFERED"]

SSE_BUFFERED = "negative-sse-buffered"
#: Through the proxy: first event at or after this share of the stream's duration means "held back".
BUFFERED_SHARE = 0.9
#: Directly: the first event within this share of the duration means the origin really streams.
DIRECT_SHARE = 0.5
#: A direct stream shorter than this has no measurable shape (the comparison is skipped).
MIN_STREAM_SECONDS = 0.02
_VIOLATION = re.compile(r"\(((?:negative|golden)-[a-z0-9-]+), -?\d+\)")


def live_transcript(template: Transcript, capture: Capture) -> Transcript:
    """``template`` with its one exchange answered by ``capture`` (headers as really sent)."""
    request = template.exchanges[0].request
    exchange = Exchange(capture.request_headers, request, capture.status or 0, capture.headers, capture.response_body())
    return replace(template, exchanges=[exchange], source=capture.url)


def _cell(status: str, detail: str, capture: Capture | None, observed: str | None = None, boundary: str | None = None) -> dict[str, Any]:
    return {"status": status, "detail": detail, "observed": observed, "boundary": boundary,
            "httpStatus": capture.status if capture else None, "contentType": capture.media_type if capture else None,
            "timing": capture.timing() if capture else None, "findings": []}


def judge_capture(case: LiveCase, capture: Capture) -> dict[str, Any]:
    """The verdict cell for one capture: ``status`` pass/fail/n-a, ``detail``, the ``observed``
    case name of a fault and the ``boundary`` where it happened."""
    if capture.failure == "refused_to_send":
        return _cell("n/a", "the HTTP client refuses to send this request as recorded (h11 rejects a header value with "
                            "edge whitespace), so no live server can be shown it from here", capture)
    if capture.failure is not None:
        return _cell("fail", f"no complete response: {capture.failure.replace('_', ' ')}", capture, None, "origin")
    if case.stream and not capture.is_stream:
        return _cell("n/a", f"answered {capture.media_type or 'without a content type'}, not an event stream: nothing to judge", capture)
    result = run_transcript(live_transcript(case.template, capture))
    if result.passed:
        return _cell("pass", result.detail, capture)
    # The runner names the violation it hit as "(case, code)"; the detail also quotes what the
    # server sent, so a name the server itself wrote (in an error message, say) is not evidence.
    sent = capture.body.decode("utf-8", "replace") + "".join(f"{k}: {v}\n" for k, v in capture.headers)
    found = next((m.group(1) for m in _VIOLATION.finditer(result.detail) if m.group(0) not in sent), None)
    # A negative that was not rejected as required is that case failing.
    observed = found or (case.name if case.template.cls == "negative" else None)
    boundary = CASES[observed].boundary if observed in CASES else "origin"
    return _cell("fail", result.detail, capture, observed, boundary)


def hop_findings(record: Mapping[str, Any], egress: Capture) -> list[dict[str, str]]:
    """``proxy_findings`` on the proxy's own record (ingress, origin) and the client's capture (egress)."""
    return proxy_findings(record["ingress"], record["origin"],
                          {"status": egress.status, "headers": egress.headers, "body": egress.body})


def stream_buffered(direct: Capture, via: Capture) -> dict[str, str] | None:
    """The ``negative-sse-buffered`` finding when ``via`` held back a stream ``direct`` delivers
    progressively; ``None`` when it did not (or the direct stream has no measurable shape)."""
    if not (direct.is_stream and via.is_stream and direct.events and via.events and len(direct.events) > 1):
        return None
    if direct.elapsed < MIN_STREAM_SECONDS or direct.first_event_latency is None or via.first_event_latency is None:
        return None
    direct_share = direct.first_event_latency / direct.elapsed
    via_share = via.first_event_latency / via.elapsed if via.elapsed else 1.0
    if via_share >= BUFFERED_SHARE and direct_share <= DIRECT_SHARE:
        return {"case": SSE_BUFFERED, "message": "proxy held back the event stream and released it at once",
                "detail": f"first event after {via_share:.0%} of a {via.elapsed * 1000:.0f} ms stream through the proxy, "
                          f"after {direct_share:.0%} of {direct.elapsed * 1000:.0f} ms directly"}
    return None
