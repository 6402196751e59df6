"""Judge live captures with the recorded suite's own runner, under the same case names.

Design: a capture becomes a ``Transcript`` (the case's request plus the live status, headers and
body) and goes through ``run_transcript`` unchanged, so a live verdict and a recorded verdict
cannot drift apart. Proxy hops go through ``proxy_findings``. Timing is the one thing a recorded
body cannot show: a stream is ``negative-sse-buffered`` when its first event arrives after at
least ``BUFFERED_SHARE`` of its duration through the proxy while the direct stream delivered its
first event within ``DIRECT_SHARE`` of its own.

Verdicts follow the authority of the rule broken (``mcplab.cases``): the runner judges inside
``spec_rules_only``, so a cell fails only on a MUST or the official schema; every waived SHOULD
or course rule is listed in the cell's ``warnings`` (``course_rules=True`` turns a waived course
rule into a failure). A passing golden is then read against the official schema of its method
(``negative-result-schema``) and, for a tool call, its tool's ``outputSchema``. Each cell names
the authority of its verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from itertools import islice
from typing import Any

from .._schema import untrusted_validator
from ..cases import CASES, RULES, enforced, spec_rules_only
from ..errors import MISSING_REQUIRED_CLIENT_CAPABILITY
from ..proxy_evidence import proxy_findings
from ..responses import is_notification, validate_response
from ..schemas import result_def, schema_errors
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
            "timing": capture.timing() if capture else None, "findings": [], "warnings": [], "authority": None}


def _warning(rule: str, message: str) -> dict[str, Any]:
    return {"id": rule, "message": message, "authority": RULES[rule].to_dict()}


def _message(capture: Capture) -> Any:
    texts = [e["data"] for e in capture.events] if capture.is_stream else [capture.response_body()]
    for text in reversed(texts):
        try:
            message = json.loads(text) if isinstance(text, (str, bytes)) else None
        except (ValueError, RecursionError):
            continue
        if isinstance(message, dict) and ("result" in message or "error" in message):
            return message
    return None


def _after_golden(case: LiveCase, capture: Capture) -> tuple[str, str, str | None] | None:
    """What a passing golden still has to show: its result valid by the official schema, a tool's
    structuredContent by its outputSchema, a stream's ending (SHOULDs). ``None``: nothing more failed."""
    request = case.template.exchanges[0].request
    method = request.get("method") if isinstance(request, dict) else None
    result = (_message(capture) or {}).get("result")
    if method is None or result is None:
        return None
    name = result_def(method, case.template.era, result)
    problems = schema_errors(result, case.template.era, name) if name else []
    if problems:
        return "fail", "the official schema rejects the result: " + "; ".join(problems), "negative-result-schema"
    if method == "tools/call" and isinstance(result, dict) and result.get("resultType", "complete") == "complete":
        schema = case.output_schema
        if isinstance(schema, dict) and result.get("isError") is not True:
            if "structuredContent" not in result:
                return "fail", "the tool declares an outputSchema but its result has no structuredContent", "negative-output-schema"
            # the server's own schema: bounded (nothing fetched, no exponential regex), judged lazily
            validator = untrusted_validator(schema, unknown_dialect_as_2020_12=True)
            try:
                errors = [e.message[:160] for e in islice(validator.iter_errors(result["structuredContent"]), 3)] if validator else []
            except Exception:  # noqa: BLE001  # an unusable outputSchema is the tools/list row's business
                errors = []
            if errors:
                return "fail", "structuredContent does not conform to the outputSchema: " + "; ".join(errors), "negative-output-schema"
        if "structuredContent" in result and not any(isinstance(b, dict) and b.get("type") == "text" for b in result.get("content") or []):
            enforced("should-structured-text", "structuredContent came without a text block carrying it")
    if capture.is_stream:
        last = capture.events[-1]["data"] if capture.events else ""
        if not capture.ended or '"id"' not in last:
            enforced("should-stream-ends", "the stream went on after the response" if capture.ended else "the stream did not end")
        if (capture.header("x-accel-buffering") or "").lower() != "no":
            enforced("should-sse-no-buffering", "the SSE answer has no X-Accel-Buffering: no header")
    return None


def _observed(case: LiveCase, detail: str, capture: Capture) -> str | None:
    # The runner names the violation it hit as "(case, code)"; the detail also quotes what the
    # server sent, so a name the server itself wrote (in an error message, say) is not evidence.
    sent = capture.body.decode("utf-8", "replace") + "".join(f"{k}: {v}\n" for k, v in capture.headers)
    found = next((m.group(1) for m in _VIOLATION.finditer(detail) if m.group(0) not in sent), None)
    # A negative that was not rejected as required is that case failing.
    return found or (case.name if case.template.cls == "negative" else None)


def _refused_notification(case: LiveCase, capture: Capture) -> str | None:
    """Why a golden notification does not apply: the server refused it in the form the transport allows."""
    request = case.template.exchanges[0].request
    if not (is_notification(request) and capture.status is not None and 400 <= capture.status <= 599):
        return None
    try:
        validate_response(capture.response_body(), request, status=capture.status, headers=capture.headers, era=case.template.era)
    except Exception:  # noqa: BLE001  # not the allowed refusal: the runner will say what is wrong
        return None
    return (f"the server refused the notification with HTTP {capture.status} (allowed: the transport lets a server refuse one): "
            "there is no accepted notification to judge")


#: Methods whose generated requests carry values the server may refuse for its own reasons (arguments,
#: a resource gone, a capability): a valid JSON-RPC error there is no verdict on the server.
_MAY_REFUSE = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})


def _valid(case: LiveCase, capture: Capture) -> bool:
    """The capture passes the recorded runner's judgement of its case (envelope, era, payload)."""
    return run_transcript(live_transcript(case.template, capture)).passed


def _needs_capability(case: LiveCase, capture: Capture) -> str | None:
    """Why a generated golden does not apply: the server refused the generated values with a valid
    JSON-RPC error (-32021 for a client capability this check does not declare, as it must; any other
    code for arguments or an item it will not serve)."""
    request = case.template.exchanges[0].request
    message = _message(capture)
    error = message.get("error") if isinstance(message, dict) else None
    result = message.get("result") if isinstance(message, dict) else None
    if (isinstance(result, dict) and result.get("isError") is True and isinstance(request, dict) and request.get("method") == "tools/call"
            and _valid(case, capture)):
        return ("the tool reported an execution error (isError: true) for these generated arguments: a valid "
                "answer, but no evidence that the call works")
    if not isinstance(error, dict) or not isinstance(request, dict) or request.get("method") not in _MAY_REFUSE:
        return None
    try:
        validate_response(capture.response_body(), request, status=capture.status, headers=capture.headers, era=case.template.era)
    except Exception:  # noqa: BLE001  # a malformed error: the runner will say what is wrong
        return None
    if error.get("code") == MISSING_REQUIRED_CLIENT_CAPABILITY:
        data = error.get("data") if isinstance(error.get("data"), dict) else {}
        required = data.get("requiredCapabilities")
        return (f"the server requires client capabilities {sorted(map(str, required)) if isinstance(required, (dict, list)) else []} "
                "that this check does not declare (it answered -32021, as it must)")
    return (f"the server refused the generated request with JSON-RPC error {error.get('code')} "
            f"({str(error.get('message'))[:120]}): a valid refusal, no verdict on these values")


def judge_capture(case: LiveCase, capture: Capture, course_rules: bool = False) -> dict[str, Any]:
    """The verdict cell for one capture: ``status`` pass/fail/n-a, ``detail``, the ``observed``
    case name of a fault, the ``boundary`` where it happened, the ``authority`` of the verdict and
    the ``warnings`` (waived SHOULDs and course rules)."""
    if capture.failure == "refused_to_send":
        return _cell("n/a", "the HTTP client refuses to send this request as recorded (h11 rejects a header value with "
                            "edge whitespace), so no live server can be shown it from here", capture)
    if capture.failure is not None:
        cell = _cell("fail", f"no complete response: {capture.failure.replace('_', ' ')}", capture, None, "origin")
        cell["authority"] = CASES["negative-response-unparsable"].authority.to_dict()
        return cell
    if case.stream and not capture.is_stream:
        return _cell("n/a", f"answered {capture.media_type or 'without a content type'}, not an event stream: nothing to judge", capture)
    if case.stream and not any('"method"' in e["data"] for e in capture.events) and "result" in (_message(capture) or {}):
        return _cell("n/a", f"streamed {len(capture.events)} event(s) but no notification: nothing to judge as a stream of "
                            "related notifications", capture)
    refused = _refused_notification(case, capture) if case.template.cls == "golden" else None
    if refused is None and case.template.cls == "golden" and case.template.source == "<generated live check>":
        refused = _needs_capability(case, capture)
    if refused is not None:
        return _cell("n/a", refused, capture)
    with spec_rules_only() as waived:
        if case.judge is not None:
            status, detail, observed = case.judge(capture)
        else:
            result = run_transcript(live_transcript(case.template, capture))
            status, detail = ("pass" if result.passed else "fail"), result.detail
            observed = None if result.passed else _observed(case, result.detail, capture)
            if result.passed and case.template.cls == "golden":
                status, detail, observed = _after_golden(case, capture) or (status, detail, observed)
    cell = _cell(status, detail, capture, observed, (CASES[observed].boundary or "origin") if observed in CASES else
                 ("origin" if status == "fail" else None))
    cell["warnings"] = [_warning(rule, message) for rule, message in waived]
    course = [w for w in cell["warnings"] if w["authority"]["level"] == "course"]
    if course_rules and course and status == "pass":
        cell.update(status="fail", observed=case.name, boundary=CASES[case.name].boundary or "origin",
                    detail=f"course rule {course[0]['id']}: {course[0]['message']} ({detail})")
        cell["authority"] = course[0]["authority"]
        return cell
    authority = CASES[observed if status == "fail" and observed in CASES else case.name].authority
    cell["authority"] = authority.to_dict() if authority is not None else None
    return cell


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
