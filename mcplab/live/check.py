"""``mcplab check``: probe the era, run the live cases directly and through a proxy, one row per case.

Design: the era is decided by ``select_era`` from a bounded modern probe (and, only for an
endpoint allowed legacy, a bounded ``initialize``); the decision record (policy, observations,
legacy evidence, chosen era) is part of the result. Each applicable case is sent directly and,
with ``via``, through the proxy; both captures are judged by the same runner. A via cell also
carries the proxy's own hop findings and, for streams, the buffering comparison with the direct
capture, so every behaviour change names its boundary. Every answer is read with a bound: a
capture up to ``MAX_CAPTURE_BYTES``, a proxy record up to :data:`MAX_RECORD_BYTES` (larger, or one
the proxy marked ``truncated``, is no hop evidence: "unobserved hop"), and a session's ``DELETE``
answer not at all. Besides the recorded suite, the checks generated from what the server declares
(``mcplab.live.generated``) run under the same case names. ``era_mode="legacy"`` judges the
2025-11-25 side of a server that also serves 2026-07-28: the modern probe is still sent and
recorded, but a successful ``initialize`` chooses the era.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from .. import __version__
from ..bounded import BodyTooLarge, read_reply
from ..cases import CASES
from ..era import select_era
from ..errors import EvidenceError, MCPLabError
from ..redaction import handed_secrets
from ..requests import build_request
from ..transcript import Transcript, load_transcripts
from ..versions import LEGACY_VERSION, LEGACY_VERSIONS
from .capture import Capture, capture_client, send
from .cases import LiveCase, plan_live_cases
from .generated import CALL_TOOLS, DEFAULT_SEED, generated_cases, read_surface
from .judge import hop_findings, judge_capture, stream_buffered
from .proxy import EXCHANGE_HEADER, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES, RECORD_PREFIX, decode_record_body

__all__ = ["CheckResult", "LiveInputError", "run_check", "probe_era", "observe", "proxy_record", "MAX_RECORD_BYTES"]

#: The largest proxy record read: the mcplab proxy records the request body twice (ingress and
#: the origin's copy) and at most ``MAX_RESPONSE_BYTES`` of the answer; JSON escaping and base64
#: may grow them, hence the factor 2. A larger answer from ``--via`` is not read on.
MAX_RECORD_BYTES = 2 * (2 * MAX_REQUEST_BYTES + MAX_RESPONSE_BYTES)

_CLIENT_INFO = {"name": "mcplab", "version": __version__}
Progress = Callable[[int, int, str], None]


class LiveInputError(MCPLabError):
    """A URL or header given to ``mcplab check`` is not usable (exit 2)."""


@dataclass
class CheckResult:
    """What ``run_check`` found: the era decision(s), one row per case, the wall time."""

    url: str
    via: str | None
    era: dict[str, Any]
    via_era: dict[str, Any] | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    #: The secrets the user handed in (header values, URL userinfo, secret query values), as
    #: :func:`~mcplab.redaction.handed_secrets` lists them: scrubbed from every output, never output.
    handed: list[str] = field(default_factory=list, repr=False, compare=False)
    #: What the server declared (capabilities and the number of items listed).
    surface: dict[str, Any] | None = None

    def count(self, column: str, status: str) -> int:
        return sum(1 for row in self.rows if row.get(column) and row[column]["status"] == status)

    @property
    def issues(self) -> list[str]:
        """Every case name observed as a fault, direct or via (sorted, unique)."""
        names = set()
        for row in self.rows:
            for column in ("direct", "via"):
                cell = row.get(column)
                if cell:
                    names.update(f["case"] for f in cell["findings"])
                    if cell["status"] == "fail" and cell["observed"]:
                        names.add(cell["observed"])
        return sorted(names)

    @property
    def warnings(self) -> list[str]:
        """Every rule (SHOULD or course) waived on some row (sorted, unique)."""
        return sorted({w["id"] for row in self.rows for c in ("direct", "via") if row.get(c) for w in row[c].get("warnings", [])})

    @property
    def ok(self) -> bool:
        """Every applicable case passed (directly and via), the era was proven the same both ways."""
        ran = [row for row in self.rows if row["applies"]]
        failed = any(row[c]["status"] == "fail" for row in ran for c in ("direct", "via") if row.get(c))
        same_era = self.via_era is None or self.via_era["era"] == self.era["era"]
        return self.era["era"] is not None and same_era and bool(ran) and not failed

    def summary(self) -> dict[str, Any]:
        ran = sum(1 for row in self.rows if row["applies"])
        judged = sum(1 for row in self.rows if row["applies"] and row["direct"] and row["direct"]["status"] in ("pass", "fail"))
        def warned(column: str) -> int:
            return sum(1 for row in self.rows if row.get(column) and row[column].get("warnings"))
        out = {"applicable": ran, "notApplicable": len(self.rows) - ran, "judged": judged,
               "direct": {"passed": self.count("direct", "pass"), "failed": self.count("direct", "fail"), "withWarnings": warned("direct")}}
        if self.via:
            out["via"] = {"passed": self.count("via", "pass"), "failed": self.count("via", "fail"), "withWarnings": warned("via")}
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "via": self.via, "ok": self.ok, "era": self.era, "viaEra": self.via_era,
                "summary": self.summary(), "issues": self.issues, "warnings": self.warnings, "seconds": round(self.seconds, 3),
                "surface": self.surface,
                "rows": self.rows, "probes": self.probes}


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_VALUE = re.compile(r"^[\t\x20-\x7e]*$")


def _check_header(name: str, value: str) -> None:
    """An extra header must be sendable as given: a token name and a visible-ASCII value."""
    if not isinstance(name, str) or not _TOKEN.match(name):
        raise LiveInputError(f"--header {name!r}: a header name is letters, digits and !#$%&'*+-.^_`|~ only")
    if not isinstance(value, str) or not _VALUE.match(value):
        raise LiveInputError(f"--header {name}: the value must be printable ASCII without line breaks "
                             "(encode other text first, e.g. as =?base64?...?=)")


def _check_url(url: str, flag: str) -> str:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a bad port
    except ValueError as exc:
        raise LiveInputError(f"{flag} {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise LiveInputError(f"{flag} {url!r}: expected an http(s) URL such as http://127.0.0.1:8765/mcp")
    return url


def _message(capture: Capture) -> Any:
    """The JSON-RPC answer in a capture (a stream's message with an ``id``), or ``None``."""
    texts = [e["data"] for e in capture.events] if capture.is_stream else [capture.response_body()]
    for text in reversed(texts):
        if not isinstance(text, str):
            continue
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if isinstance(message, dict) and "id" in message:
            return message
    return None


def observe(capture: Capture) -> dict[str, Any]:
    """The era observation a modern probe's capture makes (``mcplab.era`` kinds)."""
    if capture.failure in ("timeout", "connection_closed"):
        return {"kind": capture.failure}
    if capture.failure == "too_large":  # an answer without end proves nothing
        return {"kind": "unrecognized_response", "status": capture.status}
    if not capture.body:
        return {"kind": "empty_response", "status": capture.status}
    message = _message(capture)
    if isinstance(message, dict) and isinstance(message.get("error"), dict) and type(message["error"].get("code")) is int:
        return {"kind": "jsonrpc_error", "code": message["error"]["code"], "status": capture.status}
    result = message.get("result") if isinstance(message, dict) else None
    if capture.status == 200 and isinstance(result, dict) and isinstance(result.get("supportedVersions"), list):
        return {"kind": "discover_success", "supportedVersions": [v for v in result["supportedVersions"] if isinstance(v, str)]}
    return {"kind": "unrecognized_response", "status": capture.status}


def _initialize(client: httpx.Client, url: str, extra: Sequence[tuple[str, str]],
                timeout: float) -> tuple[Capture, dict[str, Any], dict[str, Any] | None]:
    """The bounded legacy probe: its capture, the legacy evidence it gives, and the server's capabilities (None: no result)."""
    body, headers = build_request("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": _CLIENT_INFO},
                                  era="legacy")
    legacy = send(client, url, [*headers, *extra], body, timeout=timeout)
    result = (_message(legacy) or {}).get("result")
    if not isinstance(result, dict):
        return legacy, {"kind": "initialize_failed", "status": legacy.status, "failure": legacy.failure}, None
    version = result.get("protocolVersion")
    evidence = {"kind": "initialize_success", "protocolVersion": version} if version in LEGACY_VERSIONS else \
        {"kind": "initialize_failed", "status": legacy.status, "failure": legacy.failure}
    return legacy, evidence, result.get("capabilities") if isinstance(result.get("capabilities"), dict) else {}


def probe_era(client: httpx.Client, url: str, mode: str, allow_legacy: bool, extra: Sequence[tuple[str, str]] = (),
              timeout: float = 5.0) -> tuple[dict[str, Any], list[Capture]]:
    """The era decision for ``url`` and the probe captures behind it."""
    body, headers = build_request("server/discover", era="modern", client_info=_CLIENT_INFO)
    probe = send(client, url, [*headers, *extra], body, timeout=timeout)
    observation = observe(probe)
    decision = select_era(observation, mode, allow_legacy)
    captures = [probe]
    if decision["nextStep"] == "legacy_probe":
        legacy, evidence, capabilities = _initialize(client, url, extra, timeout)
        captures.append(legacy)
        decision = select_era(observation, mode, allow_legacy, legacy_evidence=evidence)
        if capabilities is not None and decision["era"] == "legacy":
            decision["capabilities"] = capabilities
    if decision["era"] == "modern" and observation["kind"] == "discover_success":
        decision["capabilities"] = ((_message(probe) or {}).get("result") or {}).get("capabilities") or {}
    return decision, captures


def probe_legacy(client: httpx.Client, url: str, extra: Sequence[tuple[str, str]] = (), timeout: float = 5.0) -> tuple[dict[str, Any], list[Capture]]:
    """``--era legacy``: judge the 2025-11-25 side even of a server proven modern. The modern probe
    is still sent and recorded; only a successful ``initialize`` with a legacy version chooses legacy."""
    decision, captures = probe_era(client, url, "fallback", True, extra, timeout)
    if decision["era"] == "legacy":
        decision["mode"] = "legacy"
        return decision, captures
    legacy, evidence, capabilities = _initialize(client, url, extra, timeout)
    captures.append(legacy)
    modern = f"the modern probe found {decision['case'] or 'nothing conclusive'}"
    if evidence["kind"] == "initialize_success":
        decision.update(era="legacy", mode="legacy", case="era-fallback-legacy-proven", capabilities=capabilities or {},
                        legacyEvidence=evidence,
                        reason=f"--era legacy: initialize negotiated {evidence['protocolVersion']} ({modern}; its 2025-11-25 side is judged)")
    else:
        decision.update(era=None, mode="legacy", case="era-fallback-silence-inconclusive", legacyEvidence=evidence,
                        reason=f"--era legacy: initialize negotiated no 2025-11-25 version ({modern})")
    return decision, captures


def _open_session(client: httpx.Client, url: str, decision: dict[str, Any], captures: list[Capture],
                 extra: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Finish a 2025-11-25 handshake: the headers every later request to ``url`` carries.

    A legacy server may keep a session (``Mcp-Session-Id`` on its ``initialize`` answer) and
    refuse any request without it; the lifecycle also requires ``notifications/initialized``
    before other requests. Both are done here (the notification's capture is appended to
    ``captures``); a modern decision needs neither (an empty list)."""
    if decision["era"] != "legacy":
        return []
    session = captures[-1].header("mcp-session-id")
    headers = [("Mcp-Session-Id", session)] if session else []
    body, sent = build_request("notifications/initialized", era="legacy", id=None)
    captures.append(send(client, url, [*sent, *extra, *headers], body))
    return headers


def _close_session(client: httpx.Client, url: str, headers: Sequence[tuple[str, str]], extra: Sequence[tuple[str, str]]) -> None:
    """End a 2025-11-25 session (``DELETE`` with its id) so it does not stay open on the server;
    a server that refuses (405) or is gone is left as it is."""
    if any(name.lower() == "mcp-session-id" for name, _ in headers):
        try:
            # the answer is not read: a server that answers without end cannot hold the check (or fill memory)
            with client.stream("DELETE", url, headers=[("MCP-Protocol-Version", LEGACY_VERSION), *extra, *headers]):
                pass
        except httpx.HTTPError:
            pass


def _request_body(case: LiveCase) -> Any:
    request = case.template.exchanges[0].request
    return request if isinstance(request, str) else json.dumps(request, ensure_ascii=False)


def proxy_record(client: httpx.Client, via: str, capture: Capture) -> dict[str, Any] | None:
    """The proxy's own record of the exchange behind ``capture``; ``None`` when there is none to
    use (not an mcplab proxy, the record is gone or truncated, over :data:`MAX_RECORD_BYTES`, or
    not a record this client can read)."""
    number = capture.header(EXCHANGE_HEADER)
    if number is None:
        return None
    parts = urlsplit(via)
    try:
        # read at most MAX_RECORD_BYTES, never decoded twice: --via may be any server, not an mcplab proxy
        with client.stream("GET", f"{parts.scheme}://{parts.netloc}{RECORD_PREFIX}{number}") as answer:
            if answer.status_code != 200:
                return None
            record = json.loads(read_reply(answer, MAX_RECORD_BYTES))
        if not isinstance(record, dict) or not isinstance(record.get("origin"), dict) or record["origin"].get("truncated"):
            return None
        for hop in (record["ingress"], record["origin"], record["origin"]["request"]):
            hop["body"] = decode_record_body(hop["body"]) if isinstance(hop.get("body"), dict) else b""
    except (httpx.HTTPError, BodyTooLarge, ValueError, KeyError, TypeError, AttributeError, RecursionError):  # binascii.Error: ValueError
        return None
    return record


def _via_cell(case: LiveCase, direct: Capture, via: Capture, record: dict[str, Any] | None, course_rules: bool = False) -> dict[str, Any]:
    cell = judge_capture(case, via, course_rules)
    try:
        findings = hop_findings(record, via) if record is not None and via.status is not None else []
    except EvidenceError:  # a record without the hops proxy_findings needs: no hop evidence
        record, findings = None, []
    buffered = stream_buffered(direct, via)
    if buffered is not None:
        findings.append(buffered)
    cell["findings"] = findings
    cell["hopsRecorded"] = record is not None
    if findings:
        cell.update(status="fail", observed=findings[0]["case"], boundary="intermediary",
                    detail="; ".join(f"{f['case']}: {f['message']} ({f['detail']})" for f in findings)
                    + ("" if cell["status"] == "pass" else f"; the client then saw: {cell['detail']}"))
    return cell


def _change(direct: dict[str, Any], via: dict[str, Any]) -> dict[str, Any] | None:
    """Where the behaviour changed between the direct and the proxied run (``None``: it did not)."""
    if direct["status"] == via["status"] and not via["findings"]:
        return None
    if via["findings"]:
        return {"boundary": "intermediary", "cases": [f["case"] for f in via["findings"]],
                "detail": "; ".join(f["message"] for f in via["findings"])
                + " (the proxy's own ingress/origin record and timing against what this client received)"}
    if not via.get("hopsRecorded"):
        return {"boundary": "unobserved hop", "cases": [via["observed"]] if via["observed"] else [],
                "detail": "the proxy keeps no origin record: the change is somewhere between this client and the origin"}
    return {"boundary": "origin", "cases": [via["observed"]] if via["observed"] else [],
            "detail": "the proxy passed on faithfully what the origin answered it, which differs from the direct answer"}


@dataclass(frozen=True)
class _Options:
    only: Collection[str] = ()
    generate: bool = False
    call_tools: str = "read-only"
    seed: int = DEFAULT_SEED
    course_rules: bool = False


def _run_cases(client: httpx.Client, result: CheckResult, suite: list[Transcript], direct_extra: list[tuple[str, str]],
               via_extra: list[tuple[str, str]], options: _Options, progress: Progress | None) -> None:
    """Every applicable case directly (and via), one row each, into ``result.rows``. The extra
    headers of each target include its 2025-11-25 session, if it keeps one."""
    url, via, decision = result.url, result.via, result.era
    era = decision["era"]
    capabilities = decision.get("capabilities") or ({} if era == "modern" else {"tools": {}})
    surface = read_surface(client, url, era, direct_extra, {"tools": {}, **capabilities} if era == "legacy" else capabilities)
    result.surface = surface.summary()
    tools = [t["name"] for t in surface.listed("tools") if isinstance(t.get("name"), str)]
    negotiated = (decision.get("legacyEvidence") or {}).get("protocolVersion") if era == "legacy" else None
    prompts = [p["name"] for p in surface.listed("prompts") if isinstance(p.get("name"), str)]
    planned = plan_live_cases(suite, era, tools, decision.get("capabilities"), negotiated, prompts)
    if options.generate:
        planned += generated_cases(surface, url, call_tools=options.call_tools, seed=options.seed)
    cases = [c for c in planned if not options.only or c.name in options.only]
    runnable = [c for c in cases if c.applies]
    done = 0
    for case in cases:
        authority = CASES[case.name].authority
        row: dict[str, Any] = {"case": case.key, "name": case.name, "class": case.template.cls, "boundary": case.boundary,
                               "applies": case.applies, "reason": case.reason, "description": case.template.description,
                               "generated": case.template.source == "<generated live check>",
                               "authority": authority.to_dict() if authority else None,
                               "direct": None, "via": None, "change": None, "evidence": {}}
        if case.applies:
            body, sent = _request_body(case), case.template.exchanges[0].request_headers
            direct = send(client, url, [*sent, *direct_extra], body)
            row["direct"] = judge_capture(case, direct, options.course_rules)
            row["evidence"]["direct"] = direct.to_evidence()
            if via is not None:
                proxied = send(client, via, [*sent, *via_extra], body)
                record = proxy_record(client, via, proxied)
                row["via"] = _via_cell(case, direct, proxied, record, options.course_rules)
                row["evidence"]["via"] = proxied.to_evidence()
                row["change"] = _change(row["direct"], row["via"])
            done += 1
            if progress is not None:
                progress(done, len(runnable), case.key)
        result.rows.append(row)


def run_check(url: str, *, via: str | None = None, era_mode: str = "fallback", allow_legacy: bool = False,
              headers: Sequence[tuple[str, str]] = (), transcripts: Iterable[Transcript] | None = None,
              timeout: float = 10.0, only: Collection[str] = (), progress: Progress | None = None,
              generate: bool = False, call_tools: str = "read-only", seed: int = DEFAULT_SEED,
              course_rules: bool = False) -> CheckResult:
    """Probe the era, then run every applicable live case directly (and through ``via``).

    ``headers`` are added to every request (e.g. ``Authorization``; redacted in all evidence);
    ``only`` keeps the cases with these names (all variants). ``generate`` adds the checks built
    from what the server declares (``mcplab check`` does by default; the library keeps the recorded
    suite's scope unless asked, so a lab's table stays the same); ``call_tools`` (``read-only`` or ``all``) says which of its tools
    they may call, with arguments generated from ``seed``. ``course_rules`` fails a server on the
    course's stricter rules too (otherwise they are warnings, like SHOULDs). ``era_mode`` is
    ``strict``, ``fallback`` or ``legacy`` (judge the 2025-11-25 side).
    Raises :class:`~mcplab.live.capture.Unreachable` when nothing answers at ``url`` or ``via``.
    """
    _check_url(url, "--url")
    if via is not None:
        _check_url(via, "--via")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise LiveInputError(f"--timeout {timeout!r}: expected a positive number of seconds")
    extra = list(headers)
    for name, value in extra:
        _check_header(name, value)
    unknown = sorted(set(only) - set(CASES))
    if unknown:
        raise LiveInputError(f"--case {unknown[0]!r}: not a case name (see 'mcplab cases')")
    if call_tools not in CALL_TOOLS:
        raise LiveInputError(f"--call-tools {call_tools!r}: expected one of {', '.join(CALL_TOOLS)}")
    options = _Options(tuple(only), generate, call_tools, seed, course_rules)
    probe = (lambda c, target: probe_legacy(c, target, extra, timeout)) if era_mode == "legacy" else \
        (lambda c, target: probe_era(c, target, era_mode, allow_legacy, extra, timeout))
    started = time.perf_counter()
    suite = list(load_transcripts() if transcripts is None else transcripts)
    with capture_client(timeout) as client:
        decision, probes = probe(client, url)
        sessions = [(url, _open_session(client, url, decision, probes, extra))]
        result = CheckResult(url=url, via=via, era=decision, probes=[p.to_evidence() for p in probes],
                             handed=handed_secrets([url, via], extra))
        try:
            if via is not None:
                result.via_era, via_probes = probe(client, via)
                sessions.append((via, _open_session(client, via, result.via_era, via_probes, extra)))
                result.probes += [p.to_evidence() for p in via_probes]
            if decision["era"] is not None:
                _run_cases(client, result, suite, [*extra, *sessions[0][1]], [*extra, *sessions[-1][1]] if via else [],
                           options, progress)
        finally:
            for target, session in sessions:
                _close_session(client, target, session, extra)
    result.seconds = time.perf_counter() - started
    return result
