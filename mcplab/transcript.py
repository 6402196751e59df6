"""Transcripts: recorded wire evidence as JSON data files, and the runner that judges them.

File format (one JSON object per file under ``mcplab/transcripts/``; see docs/library.md)::

    {
      "name": "negative-header-body-mismatch",   # a case name from mcplab.cases
      "variant": "value",                        # optional: tells apart several files of one case
      "class": "golden" | "negative",
      "era": "modern" | "legacy",
      "description": "one line: what crossed the wire",
      "requestHeaders": [["MCP-Protocol-Version", "2026-07-28"], ...]   # pairs (duplicates allowed) or an object
      "request": {...JSON-RPC request or notification...},
      "requestText": "raw body",                 # instead of "request" when the body is not JSON
      "requiredCapabilities": {"elicitation": {}},   # optional: client capabilities the server requires
      "serverCapabilities": {...},               # optional: what the server advertised (extensions)
      "responseStatus": 200,
      "responseHeaders": [["Content-Type", "application/json"]],
      "responseBody": {...} | null,              # null: empty body
      "responseText": "raw body",                # instead of "responseBody" when not one JSON value (e.g. SSE)
      "origin": {"status": 400, "headers": [...], "body": {...},   # proxy cases: what the origin sent;
                 "request": {"headers": [...], "body": {...}}},  # optional: what the origin received;
                                                 # response* is then what the proxy sent on (egress)
      "then": [ {requestHeaders, request, responseStatus, responseHeaders, responseBody}, ... ],
      "expect": {"boundary": "origin", "code": -32020}   # negatives only
    }
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Any

from .cases import BOUNDARIES, CASES, enforced
from .errors import (
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    EvidenceError,
    ProtocolViolation,
    TranscriptError,
    http_status_for_code,
)
from .headers import media_type, normalize_headers
from .jsonvalue import is_http_status, is_json_integer
from .proxy_evidence import proxy_findings
from .requests import reject_unsolicited_retry, validate_request, validate_retry
from .responses import MANDATED_HTTP_STATUS, is_notification, validate_response
from .results import validate_result
from .sse import is_event_stream, parse_sse
from .versions import ERAS, META_PROTOCOL_VERSION

__all__ = [
    "Exchange",
    "Transcript",
    "TranscriptResult",
    "load_transcript",
    "load_transcripts",
    "parse_transcript",
    "run_transcript",
    "run_transcripts",
    "transcripts_dir",
]

_ABSENT = object()
_TOP_FIELDS = {
    "name", "variant", "class", "era", "description", "requestHeaders", "request", "requestText",
    "requiredCapabilities", "serverCapabilities", "responseStatus", "responseHeaders", "responseBody",
    "responseText", "origin", "then", "expect",
}
_EXCHANGE_FIELDS = {"requestHeaders", "request", "requestText", "responseStatus", "responseHeaders", "responseBody", "responseText"}


@dataclass(frozen=True)
class Exchange:
    """One request and the response that crossed the boundary for it."""

    request_headers: list[tuple[str, str]]
    request: Any  # parsed JSON, or raw text for an unparsable body
    response_status: int
    response_headers: list[tuple[str, str]]
    response_body: Any  # parsed JSON, raw text, or None for an empty body


@dataclass(frozen=True)
class Transcript:
    """A recorded case: one or more exchanges plus, for negatives, the expected rejection."""

    name: str
    cls: str
    era: str
    description: str
    exchanges: list[Exchange]
    variant: str | None = None
    required_capabilities: dict[str, Any] | None = None
    server_capabilities: dict[str, Any] | None = None
    origin: dict[str, Any] | None = None
    expect: dict[str, Any] | None = None
    source: str = ""

    @property
    def key(self) -> str:
        """``name`` or ``name.variant``: unique within a suite."""
        return f"{self.name}.{self.variant}" if self.variant else self.name


@dataclass(frozen=True)
class TranscriptResult:
    """The verdict on one transcript. ``observed`` is the violation the harness saw, if any."""

    name: str
    variant: str | None
    cls: str
    era: str
    passed: bool
    detail: str
    boundary: str | None = None
    observed: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "variant": self.variant,
            "class": self.cls,
            "era": self.era,
            "boundary": self.boundary,
            "passed": self.passed,
            "detail": self.detail,
            "observed": self.observed,
        }


# ---------------------------------------------------------------- loading


def transcripts_dir() -> Path:
    """The directory of the suite shipped inside the package."""
    return Path(str(resources.files("mcplab") / "transcripts"))


def _pairs(value: Any, where: str, source: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, (Mapping, list)):
        raise TranscriptError(source, f"{where} must be an object or a list of [name, value] pairs")
    pairs = []
    for item in value.items() if isinstance(value, Mapping) else value:
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(x, str) for x in item)):
            raise TranscriptError(source, f"{where} entries must be [name, value] string pairs, got {item!r}")
        pairs.append((item[0], item[1]))
    return pairs


def _exchange(data: Mapping[str, Any], where: str, source: str) -> Exchange:
    if ("request" in data) == ("requestText" in data):
        raise TranscriptError(source, f"{where} needs exactly one of request or requestText")
    if "requestText" in data and not isinstance(data["requestText"], str):
        raise TranscriptError(source, f"{where}.requestText must be a string")
    status = data.get("responseStatus")
    if not is_http_status(status):
        raise TranscriptError(source, f"{where}.responseStatus must be an HTTP status code (100-599), got {status!r}")
    if ("responseBody" in data) == ("responseText" in data):
        raise TranscriptError(source, f"{where} needs exactly one of responseBody or responseText")
    if "responseText" in data and not isinstance(data["responseText"], str):
        raise TranscriptError(source, f"{where}.responseText must be a string")
    return Exchange(
        request_headers=_pairs(data.get("requestHeaders"), f"{where}.requestHeaders", source),
        request=data["request"] if "request" in data else data["requestText"],
        response_status=status,
        response_headers=_pairs(data.get("responseHeaders"), f"{where}.responseHeaders", source),
        response_body=data["responseBody"] if "responseBody" in data else data["responseText"],
    )


def _optional_object(data: Mapping[str, Any], key: str, source: str) -> dict[str, Any] | None:
    value = data.get(key)
    if value is not None and not isinstance(value, dict):
        raise TranscriptError(source, f"{key} must be an object")
    return value


def _origin(value: Any, source: str) -> dict[str, Any] | None:
    """Check the ``origin`` capture of a proxy case: ``{status, headers, body, request?}``."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise TranscriptError(source, "origin must be an object {status, headers, body}")
    unknown = sorted(set(value) - {"status", "headers", "body", "request"})
    if unknown:
        raise TranscriptError(source, f"origin has unknown field {unknown[0]!r}")
    status = value.get("status")
    if not is_http_status(status):
        raise TranscriptError(source, f"origin.status must be an HTTP status code (100-599), got {status!r}")
    if "body" not in value:
        raise TranscriptError(source, "origin needs body (null for an empty body)")
    origin = {**value, "headers": _pairs(value.get("headers"), "origin.headers", source)}
    seen = value.get("request")
    if seen is not None:
        if not isinstance(seen, dict) or "body" not in seen:
            raise TranscriptError(source, "origin.request must be an object {headers, body}")
        origin["request"] = {**seen, "headers": _pairs(seen.get("headers"), "origin.request.headers", source)}
    return origin


def parse_transcript(data: Any, source: str = "<transcript>") -> Transcript:
    """Check a decoded transcript object and build a ``Transcript``; ``TranscriptError`` names the problem."""
    if not isinstance(data, dict):
        raise TranscriptError(source, f"a transcript must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - _TOP_FIELDS)
    if unknown:
        raise TranscriptError(source, f"unknown field {unknown[0]!r} (known: {', '.join(sorted(_TOP_FIELDS))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise TranscriptError(source, "name must be a non-empty string")
    if name not in CASES:
        raise TranscriptError(source, f"name {name!r} is not a known case (see mcplab.cases)")
    cls = data.get("class")
    if cls not in ("golden", "negative"):
        raise TranscriptError(source, f'class must be "golden" or "negative", got {cls!r}')
    if not name.startswith(cls + "-"):
        raise TranscriptError(source, f"a {cls} transcript's name must start with {cls + '-'!r}, got {name!r}")
    era = data.get("era")
    if era not in ERAS:
        raise TranscriptError(source, f"era must be one of {', '.join(ERAS)}, got {era!r}")
    variant = data.get("variant")
    if variant is not None and (not isinstance(variant, str) or not variant):
        raise TranscriptError(source, "variant must be a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise TranscriptError(source, "description must be a string")
    exchanges = [_exchange(data, "transcript", source)]
    follow = data.get("then", [])
    if not isinstance(follow, list):
        raise TranscriptError(source, "then must be a list of exchanges")
    for index, step in enumerate(follow):
        if not isinstance(step, dict):
            raise TranscriptError(source, f"then[{index}] must be an object")
        extra = sorted(set(step) - _EXCHANGE_FIELDS)
        if extra:
            raise TranscriptError(source, f"then[{index}] has unknown field {extra[0]!r}")
        exchanges.append(_exchange(step, f"then[{index}]", source))
    expect = _optional_object(data, "expect", source)
    if cls == "negative":
        if expect is None:
            raise TranscriptError(source, "a negative transcript needs expect {boundary, code}")
        if expect.get("boundary") not in BOUNDARIES:
            raise TranscriptError(source, f"expect.boundary must be one of {', '.join(BOUNDARIES)}, got {expect.get('boundary')!r}")
        code = expect.get("code")
        if not is_json_integer(code):
            raise TranscriptError(source, f"expect.code must be an integer JSON-RPC code, got {code!r}")
    elif expect is not None:
        raise TranscriptError(source, "a golden transcript must not have expect")
    if expect is not None:
        case = CASES[name]
        if expect["boundary"] != case.boundary or expect["code"] not in case.codes:
            raise TranscriptError(
                source,
                f"expect {{boundary: {expect['boundary']!r}, code: {expect['code']}}} contradicts the case registry "
                f"({case.boundary!r}, {' or '.join(map(str, case.codes))})",
            )
    origin = _origin(data.get("origin"), source)
    if expect is not None and expect["boundary"] == "intermediary" and origin is None:
        raise TranscriptError(source, "an intermediary transcript needs origin {status, headers, body}")
    return Transcript(
        name=name,
        cls=cls,
        era=era,
        description=description,
        exchanges=exchanges,
        variant=variant,
        required_capabilities=_optional_object(data, "requiredCapabilities", source),
        server_capabilities=_optional_object(data, "serverCapabilities", source),
        origin=origin,
        expect=expect,
        source=source,
    )


def load_transcript(path: str | Path) -> Transcript:
    """Read and check one transcript file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(str(path), f"cannot read file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TranscriptError(str(path), "file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(str(path), f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise TranscriptError(str(path), "JSON nested too deeply to read") from None
    return parse_transcript(data, str(path))


def load_transcripts(directory: str | Path | None = None) -> list[Transcript]:
    """Load every ``*.json`` transcript in ``directory`` (default: the shipped suite), sorted by key."""
    folder = Path(directory) if directory is not None else transcripts_dir()
    if not folder.is_dir():
        raise TranscriptError(str(folder), "not a directory of transcripts")
    transcripts = [load_transcript(p) for p in sorted(folder.glob("*.json"))]
    seen: dict[str, str] = {}
    for t in transcripts:
        if t.key in seen:
            raise TranscriptError(t.source, f"duplicate transcript {t.key!r} (also in {seen[t.key]})")
        seen[t.key] = t.source
    return sorted(transcripts, key=lambda t: t.key)


# ---------------------------------------------------------------- judging


class _Verdict(Exception):
    """Internal: stops judging a transcript with a failure detail."""


@dataclass(frozen=True)
class _Step:
    """What the harness made of one exchange."""

    index: int
    exchange: Exchange
    request: Any = None
    request_violation: ProtocolViolation | None = None
    response: dict[str, Any] | None = None
    response_violation: ProtocolViolation | None = None

    @property
    def result(self) -> Any:
        return (self.response or {}).get("result")


def _observed(v: ProtocolViolation) -> dict[str, Any]:
    return {"case": v.case, "code": v.code, "message": v.message}


def _asks_for_input(result: Any) -> bool:
    return isinstance(result, dict) and result.get("resultType") == "input_required"


def _steps(t: Transcript) -> Iterator[_Step]:
    """Judge the exchanges in order, as a client would; stops after a rejected request.

    A request is checked on its own and, after an ``input_required`` result, as the MRTR retry
    of the request before it. The response is checked as an envelope (status, headers, id) and
    its result for the era and method.
    """
    previous: _Step | None = None
    round_trip_ids: list[Any] = []  # ids used since the original request of an MRTR round trip
    for index, ex in enumerate(t.exchanges):
        try:
            request = validate_request(ex.request, ex.request_headers, t.era, required_capabilities=t.required_capabilities)
            if previous is not None and _asks_for_input(previous.result):
                validate_retry(previous.request, previous.result, request, earlier_ids=round_trip_ids)
            else:
                reject_unsolicited_retry(request)
                round_trip_ids = []
            round_trip_ids.append(request.get("id"))
        except ProtocolViolation as v:
            yield _Step(index, ex, request_violation=v)
            return
        try:
            response = validate_response(
                ex.response_body, request, status=ex.response_status, headers=ex.response_headers, era=t.era
            )
            if response is not None and "result" in response:
                validate_result(response["result"], t.era, method=request["method"], capabilities=t.server_capabilities)
            step = _Step(index, ex, request, response=response)
        except ProtocolViolation as v:
            step = _Step(index, ex, request, response_violation=v)
        yield step
        previous = step


def _describe(v: ProtocolViolation) -> str:
    return f"({v.case}, {v.code}): {v.message}"


def _run_golden(t: Transcript) -> str:
    last: _Step | None = None
    for step in _steps(t):
        if step.request_violation is not None:
            raise _Verdict(f"exchange {step.index}: request rejected {_describe(step.request_violation)}")
        if step.response_violation is not None:
            raise _Verdict(f"exchange {step.index}: response rejected {_describe(step.response_violation)}")
        if step.response is not None and "error" in step.response:
            raise _Verdict(f"exchange {step.index}: a golden exchange was answered with error {step.response['error']!r}")
        if is_notification(step.request) and step.exchange.response_status != 202:
            raise _Verdict(f"exchange {step.index}: the notification was refused with HTTP {step.exchange.response_status} "
                           "(the transport allows refusing one); this golden case is about an accepted notification")
        if t.name == "golden-sse-stream":
            _require_events(step)
        last = step
    if last is not None and _asks_for_input(last.result):
        raise _Verdict("the transcript ends on input_required: the retry that completes it is missing")
    return f"accepted {len(t.exchanges)} exchange(s)"


def _require_events(step: _Step) -> None:
    """``golden-sse-stream``: the answer is an event stream with a related notification before the response."""
    ex = step.exchange
    if not is_event_stream(media_type(normalize_headers(ex.response_headers))):
        raise _Verdict("golden-sse-stream needs an event stream; the answer is not text/event-stream")
    events = parse_sse(ex.response_body) if isinstance(ex.response_body, (str, bytes)) else []
    if not any('"method"' in e["data"] for e in events if e["data"].strip()):
        raise _Verdict(f"golden-sse-stream needs related notifications before the response; the stream carried "
                       f"{len(events)} event(s) and none was a notification")


def _header_differs_from_meta(ex: Exchange) -> bool:
    """True when the request's MCP-Protocol-Version header differs from its ``_meta`` version as JSON."""
    params = ex.request.get("params") if isinstance(ex.request, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    header = next((v for k, v in ex.request_headers if k.lower() == "mcp-protocol-version"), None)
    return isinstance(meta, dict) and header is not None and meta.get(META_PROTOCOL_VERSION) != header


def _wanted_status(t: Transcript, local: ProtocolViolation, code: int) -> int | None:
    """The HTTP status the origin must use for ``code``: mandated ones always, the course's only when enforced."""
    if t.era != "modern":
        return None
    if local.case == "negative-missing-meta-key" or code in MANDATED_HTTP_STATUS:
        return 400 if local.case == "negative-missing-meta-key" else MANDATED_HTTP_STATUS[code]
    return http_status_for_code(code)


def _check_origin_answer(t: Transcript, step: _Step, local: ProtocolViolation) -> None:
    """The local verdict is not enough: the server must really have answered with the error."""
    ex, code = step.exchange, local.code
    body = ex.response_body
    parsed = body
    if isinstance(body, (str, bytes)):
        try:
            parsed = json.loads(body)
        except (ValueError, RecursionError):
            parsed = None
    answered = parsed["error"].get("code") if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict) else None
    if (local.case == "negative-meta-type" and answered == HEADER_MISMATCH and code != HEADER_MISMATCH and _header_differs_from_meta(ex)
            and not enforced("course-types-first", f"answered -32020 (the header differs from the mistyped _meta value), not {code}")):
        code = HEADER_MISMATCH  # no order is mandated: the header really does differ from the body
    wanted_status = _wanted_status(t, local, code)
    if (wanted_status is not None and ex.response_status != wanted_status
            and (code in MANDATED_HTTP_STATUS or local.case == "negative-missing-meta-key"
                 or enforced("course-error-status", f"error {code} travelled with HTTP {ex.response_status}"))):
        raise _Verdict(f"the origin answered HTTP {ex.response_status}, expected HTTP {wanted_status} for {code}")
    # An unreadable request (or one without an id) is answered without an id.
    request = ex.request if isinstance(ex.request, dict) and "id" in ex.request else {}
    judge = partial(validate_response, body, status=ex.response_status, headers=ex.response_headers, era=t.era)
    try:
        response = judge(request)
    except ProtocolViolation as v:
        raise _Verdict(f"the origin's error response is itself invalid {_describe(v)}") from None
    error = response.get("error")
    if not isinstance(error, dict) or error.get("code") != code:
        raise _Verdict(f"the origin did not answer with a JSON-RPC error {code}: got {response!r}")
    data, expected = error.get("data"), local.data
    if code == UNSUPPORTED_PROTOCOL_VERSION and data.get("requested") != expected["requested"]:
        raise _Verdict(f"the origin's -32022 data names {data.get('requested')!r}, the request asked for {expected['requested']!r}")
    if code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        missing = set(expected["requiredCapabilities"]) - set(data["requiredCapabilities"])
        if missing:
            raise _Verdict(f"the origin's -32021 data does not name the missing capabilities {sorted(missing)}")


def _run_origin(t: Transcript, expect: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    for step in _steps(t):
        v = step.request_violation
        if v is None:
            if step.response_violation is not None:
                raise _Verdict(f"exchange {step.index} before the rejection was refused {_describe(step.response_violation)}")
            continue
        if v.case != t.name or v.code != expect["code"]:
            raise _Verdict(f"the local validator raised {v.case} ({v.code}), expected {t.name} ({expect['code']})")
        _check_origin_answer(t, step, v)
        return f"exchange {step.index}: origin rejected with HTTP {step.exchange.response_status} and {v.code}", _observed(v)
    raise _Verdict("the local validator accepted every request; the origin must reject one")


def _run_downstream(t: Transcript, expect: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Client and serializer boundaries: valid requests, a response that must be refused."""
    for step in _steps(t):
        if step.request_violation is not None:
            raise _Verdict(f"exchange {step.index}: the request itself is invalid {_describe(step.request_violation)}")
        v = step.response_violation
        if v is not None:
            if v.case != t.name or v.code != expect["code"]:
                raise _Verdict(f"rejected as {v.case} ({v.code}), expected {t.name} ({expect['code']})")
            return f"exchange {step.index} rejected at the {expect['boundary']}: {v.message}", _observed(v)
    raise _Verdict(f"every response was accepted; expected {t.name} at the {expect['boundary']}")


def _run_intermediary(t: Transcript) -> tuple[str, dict[str, Any]]:
    ex = t.exchanges[0]
    try:
        validate_request(ex.request, ex.request_headers, t.era, required_capabilities=t.required_capabilities)
    except ProtocolViolation as v:
        raise _Verdict(f"the client's request is itself invalid {_describe(v)}") from None
    assert t.origin is not None  # parse_transcript guarantees it for intermediary cases
    findings = proxy_findings(
        {"headers": ex.request_headers, "body": ex.request},
        t.origin,
        {"status": ex.response_status, "headers": ex.response_headers, "body": ex.response_body},
    )
    cases = [f["case"] for f in findings]
    if t.name not in cases:
        raise _Verdict(f"proxy inspection found {cases or 'nothing'}, expected {t.name}")
    finding = findings[cases.index(t.name)]
    return f"{finding['message']} ({finding['detail']})", {"case": t.name, "code": None, "message": finding["message"]}


def run_transcript(transcript: Transcript) -> TranscriptResult:
    """Judge one transcript: goldens must be accepted end to end; negatives rejected at their boundary."""
    t = transcript
    boundary = t.expect["boundary"] if t.expect else None
    observed: dict[str, Any] | None = None
    try:
        if t.cls == "golden":
            detail = _run_golden(t)
        elif boundary == "origin":
            detail, observed = _run_origin(t, t.expect)
        elif boundary == "intermediary":
            detail, observed = _run_intermediary(t)
        else:
            detail, observed = _run_downstream(t, t.expect)
        passed = True
    except _Verdict as verdict:
        detail, passed = str(verdict), False
    except (RecursionError, EvidenceError) as exc:  # never a traceback for hostile data
        detail, passed = f"cannot judge this transcript: {exc or type(exc).__name__}", False
    return TranscriptResult(t.name, t.variant, t.cls, t.era, passed, detail, boundary, observed)


def run_transcripts(transcripts: Iterable[Transcript] | None = None) -> list[TranscriptResult]:
    """Run a suite (default: the shipped one) in key order."""
    return [run_transcript(t) for t in (load_transcripts() if transcripts is None else transcripts)]
