"""Transcripts: recorded wire evidence as JSON data files, and the runner that judges them.

File format (one JSON object per file under ``mcplab/transcripts/``; see README)::

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
      "responseText": "raw body",                # instead of "responseBody" when not JSON
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
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .cases import BOUNDARIES, CASES
from .errors import INVALID_REQUEST, PARSE_ERROR, ProtocolViolation, TranscriptError, http_status_for_code
from .proxy_evidence import proxy_findings
from .requests import validate_request
from .responses import validate_response
from .results import validate_result
from .versions import ERAS

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
    items: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
    if not isinstance(value, (Mapping, list)):
        raise TranscriptError(source, f"{where} must be an object or a list of [name, value] pairs")
    pairs = []
    for item in items:
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
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
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
        if isinstance(code, bool) or not isinstance(code, int):
            raise TranscriptError(source, f"expect.code must be an integer JSON-RPC code, got {code!r}")
    elif expect is not None:
        raise TranscriptError(source, "a golden transcript must not have expect")
    origin = _optional_object(data, "origin", source)
    if origin is not None and (isinstance(origin.get("status"), bool) or not isinstance(origin.get("status"), int)):
        raise TranscriptError(source, "origin.status must be an HTTP status code")
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


def _observed(v: ProtocolViolation) -> dict[str, Any]:
    return {"case": v.case, "code": v.code, "message": v.message}


def _judge_exchange(t: Transcript, ex: Exchange, previous: Any) -> tuple[Any, ProtocolViolation | None]:
    """Validate one golden-style exchange; returns (result, violation at the client side)."""
    request = validate_request(ex.request, ex.request_headers, t.era, required_capabilities=t.required_capabilities)
    if isinstance(previous, dict) and previous.get("resultType") == "input_required":
        _check_retry(previous, request)
    try:
        response = validate_response(ex.response_body, request, status=ex.response_status, era=t.era)
        if response is None:
            return None, None
        if "error" in response:
            return response, None
        validate_result(response["result"], t.era, method=request["method"], capabilities=t.server_capabilities)
        return response["result"], None
    except ProtocolViolation as v:
        return None, v


def _check_retry(previous: dict[str, Any], retry: dict[str, Any]) -> None:
    params = retry.get("params", {})
    if "requestState" in previous and params.get("requestState") != previous["requestState"]:
        raise _Verdict("the retry does not carry the server's requestState verbatim")
    wanted = set(previous.get("inputRequests") or {})
    answered = set(params.get("inputResponses") or {})
    if wanted - answered:
        raise _Verdict(f"the retry leaves input requests unanswered: {sorted(wanted - answered)}")


def _exchanges(t: Transcript) -> Iterator[tuple[int, Any, ProtocolViolation | None]]:
    """Judge the exchanges in order; yields (index, result, client-side violation). A rejected request stops it."""
    previous: Any = None
    for index, ex in enumerate(t.exchanges):
        try:
            result, violation = _judge_exchange(t, ex, previous)
        except ProtocolViolation as v:
            raise _Verdict(f"exchange {index}: the request was rejected ({v.case}, {v.code}): {v.message}") from None
        yield index, result, violation
        previous = result


def _run_golden(t: Transcript) -> str:
    for index, result, violation in _exchanges(t):
        if violation is not None:
            raise _Verdict(f"exchange {index}: response rejected ({violation.case}, {violation.code}): {violation.message}")
        if isinstance(result, dict) and "error" in result:
            raise _Verdict(f"exchange {index}: a golden exchange was answered with error {result['error']!r}")
    return f"accepted {len(t.exchanges)} exchange(s)"


def _run_origin(t: Transcript, expect: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    ex = t.exchanges[0]
    try:
        validate_request(ex.request, ex.request_headers, t.era, required_capabilities=t.required_capabilities)
    except ProtocolViolation as v:
        seen = _observed(v)
        if v.case != t.name or v.code != expect["code"]:
            raise _Verdict(f"the local validator raised {v.case} ({v.code}), expected {t.name} ({expect['code']})")
    else:
        raise _Verdict("the local validator accepted a request the origin must reject")
    # The local verdict is not enough: the server must really have answered with the error.
    code = expect["code"]
    wanted_status = http_status_for_code(code) if t.era == "modern" else None
    if wanted_status is not None and ex.response_status != wanted_status:
        raise _Verdict(f"the origin answered HTTP {ex.response_status}, expected HTTP {wanted_status} for {code}")
    request = ex.request if isinstance(ex.request, dict) and "id" in ex.request else None
    try:
        response = validate_response(ex.response_body, request, status=ex.response_status, era=t.era)
    except ProtocolViolation as v:
        if not (v.case == "negative-id-mismatch" and code in (PARSE_ERROR, INVALID_REQUEST)):
            raise _Verdict(f"the origin's error response is itself invalid ({v.case}): {v.message}") from None
        response = validate_response(ex.response_body, None, status=ex.response_status, era=t.era)
        if response is not None and response.get("id") is not None:
            raise _Verdict("the origin's error response id is neither the request id nor null") from None
    if request is None and response is not None and response.get("id") is not None:
        raise _Verdict("an error for an unreadable request must carry id null")
    error = (response or {}).get("error")
    if not isinstance(error, dict) or error.get("code") != code:
        raise _Verdict(f"the origin did not answer with a JSON-RPC error {code}: got {response!r}")
    return f"origin rejected with HTTP {ex.response_status} and {code}", seen


def _run_downstream(t: Transcript, expect: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Client and serializer boundaries: a valid request, a response that must be refused."""
    for index, _result, violation in _exchanges(t):
        if violation is not None:
            if violation.case != t.name or violation.code != expect["code"]:
                raise _Verdict(f"rejected as {violation.case} ({violation.code}), expected {t.name} ({expect['code']})")
            return f"exchange {index} rejected at the {expect['boundary']}: {violation.message}", _observed(violation)
    raise _Verdict(f"every response was accepted; expected {t.name} at the {expect['boundary']}")


def _run_intermediary(t: Transcript) -> tuple[str, dict[str, Any]]:
    ex = t.exchanges[0]
    try:
        validate_request(ex.request, ex.request_headers, t.era, required_capabilities=t.required_capabilities)
    except ProtocolViolation as v:
        raise _Verdict(f"the client's request is itself invalid ({v.case}): {v.message}") from None
    assert t.origin is not None
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
    return TranscriptResult(t.name, t.variant, t.cls, t.era, passed, detail, boundary, observed)


def run_transcripts(transcripts: Iterable[Transcript] | None = None) -> list[TranscriptResult]:
    """Run a suite (default: the shipped one) in key order."""
    return [run_transcript(t) for t in (load_transcripts() if transcripts is None else transcripts)]
