"""The case vocabulary: one invariant, one name, in every layer.

Every transcript file, unit test, live check, proxy report and lab uses these names.
Add cases in the same pattern (``golden-...`` accepted, ``negative-...`` rejected,
``era-...`` era decisions); never rename one. ``boundary`` is where a rejection must
happen: ``origin`` (the MCP server answers with the error), ``intermediary`` (a proxy or
gateway), ``client`` (the client-side validator refuses the response) or ``serializer``
(what a component writes on the wire).

Every case carries its :class:`Authority`: a MUST of the specification, the official schema,
a SHOULD, or a course rule (this course's stricter policy, with its reason). Pages are cited as
``<revision>/<page under docs/specification/<revision>/> § <heading>`` and the rule is said in our
own words. Finer rules that a validator can waive live in :data:`RULES` (see :func:`enforced`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from .errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

__all__ = ["Authority", "Case", "CASES", "BOUNDARIES", "GENERATED_ONLY", "LEVELS", "RULES", "case_info", "enforced", "spec_rules_only"]

BOUNDARIES: tuple[str, ...] = ("origin", "intermediary", "client", "serializer")
#: Authority levels. ``MUST`` and ``schema`` fail a server; ``SHOULD``, ``MAY`` and ``course`` warn
#: (``course`` fails too when a check is asked for the course's rules).
LEVELS: tuple[str, ...] = ("MUST", "schema", "SHOULD", "MAY", "course")


@dataclass(frozen=True)
class Authority:
    """Where a rule stands: ``level`` (see :data:`LEVELS`), ``where`` (page and heading of
    ``spec/text/<revision>/``, or the schema's ``$defs`` path), ``rule`` in our own words, and for
    a course rule the ``reason`` the course is stricter than the specification."""

    level: str
    where: str
    rule: str
    reason: str = ""

    @property
    def fails(self) -> bool:
        """True when breaking it is a failure by the specification (MUST or schema)."""
        return self.level in ("MUST", "schema")

    def to_dict(self) -> dict[str, str]:
        out = {"level": self.level, "where": self.where, "rule": self.rule}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True)
class Case:
    """One named invariant. ``code`` is the JSON-RPC code that classifies a rejection."""

    name: str
    summary: str
    boundary: str | None = None
    code: int | None = None
    #: Other codes that classify the same invariant (e.g. -32700 for an unparsable envelope).
    also: tuple[int, ...] = ()
    #: Where the invariant stands (every case has one; see ``_AUTHORITY``).
    authority: Authority | None = None

    @property
    def codes(self) -> tuple[int, ...]:
        """Every code a rejection of this case may carry."""
        return (self.code, *self.also) if self.code is not None else ()

    @property
    def kind(self) -> str:
        return self.name.split("-", 1)[0]


_C = Case
_TABLE: tuple[Case, ...] = (
    # golden: must be accepted
    _C("golden-modern-discover", "server/discover with matching _meta and headers; 200, supportedVersions, resultType complete"),
    _C("golden-modern-list", "modern tools/list, headers match, resultType complete, tools array"),
    _C("golden-modern-call", "tools/call with Mcp-Name; complete result with content"),
    _C("golden-additive-field", "a modern result with an unknown additive field (futureHint) is accepted and preserved"),
    _C("golden-input-required", "tools/call answered input_required, then the retry with inputResponses completes"),
    _C("golden-extension-task", "resultType task after the tasks extension was advertised"),
    _C("golden-completion", "completion/complete within the limits"),
    _C("golden-legacy-list", "2025-11-25 tools/list without resultType, accepted only in the chosen legacy era"),
    _C("golden-mcp-name-sentinel", "Mcp-Name as =?base64?...?= for a padded or non-ASCII name; decoded value matches"),
    _C("golden-notification", "a course-extension notification: HTTP 202, empty body, no JSON-RPC response"),
    _C("golden-sse-stream", "a request answered as SSE: related notifications, then the result, then end of stream"),
    # negative: must be rejected at the named boundary with the named code
    _C("negative-header-body-mismatch", "Mcp-Method differs from method", "origin", HEADER_MISMATCH),
    _C("negative-version-header-mismatch", "MCP-Protocol-Version differs from the _meta version", "origin", HEADER_MISMATCH),
    _C("negative-name-header-mismatch", "Mcp-Name differs from params.name/params.uri", "origin", HEADER_MISMATCH),
    _C("negative-raw-whitespace-name", "a padded Mcp-Name sent raw instead of as a sentinel", "origin", HEADER_MISMATCH),
    _C("negative-duplicate-header", "conflicting duplicates of a routing header", "origin", HEADER_MISMATCH),
    _C("negative-missing-header", "a required routing header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) is absent", "origin", HEADER_MISMATCH),
    _C("negative-missing-meta-key", "a required namespaced _meta key is missing", "origin", INVALID_PARAMS),
    _C("negative-invalid-params", "request params of the wrong shape for the method (e.g. tools/call without a string name)", "origin", INVALID_PARAMS),
    _C("negative-meta-type", "a _meta value has the wrong JSON type", "origin", INVALID_PARAMS),
    _C("negative-missing-capability", "a required client capability was not declared", "origin", MISSING_REQUIRED_CLIENT_CAPABILITY),
    _C("negative-unsupported-version", "a matching but unsupported protocol version", "origin", UNSUPPORTED_PROTOCOL_VERSION),
    _C("negative-malformed-envelope", "a malformed JSON-RPC request envelope (-32600, or -32700 for unparsable JSON)", "origin", INVALID_REQUEST, (PARSE_ERROR,)),
    _C("negative-retry-mismatch", "an MRTR retry that reuses the id, changes the original request, drops requestState or leaves input requests unanswered", "origin", INVALID_PARAMS),
    _C("negative-modern-missing-result-type", "a modern result without resultType", "client", INVALID_PARAMS),
    _C("negative-unknown-result-type", "resultType is not a known value", "client", INVALID_PARAMS),
    _C("negative-unadvertised-extension", "resultType task without the extension negotiated", "client", INVALID_PARAMS),
    _C("negative-input-required-misplaced", "input_required on a method that may not ask for input", "client", INVALID_PARAMS),
    _C("negative-input-required-payload", "input_required without inputRequests or requestState, or with malformed ones", "client", INVALID_PARAMS),
    _C("negative-task-payload", "a task result without taskId, a known status, timestamps or ttlMs", "client", INVALID_PARAMS),
    _C("negative-tools-list-payload", "duplicate or empty tool names, non-object inputSchema, no tools array", "client", INVALID_PARAMS),
    _C("negative-tools-call-payload", "a tools/call result without a content array of typed blocks", "client", INVALID_PARAMS),
    _C("negative-discover-payload", "a server/discover result without supportedVersions or capabilities", "client", INVALID_PARAMS),
    _C("negative-completion-payload", "more than 100 values, total below count, non-integer total, non-boolean hasMore", "client", INVALID_PARAMS),
    _C("negative-cache-fields", "ttlMs not an integer or cacheScope not public/private", "client", INVALID_PARAMS),
    _C("negative-result-shape", "a result that is not a JSON object", "client", INVALID_PARAMS),
    _C("negative-jsonrpc-version", "response jsonrpc is not exactly \"2.0\"", "client", INVALID_REQUEST),
    _C("negative-id-mismatch", "response id differs in value or JSON type", "client", INVALID_REQUEST),
    _C("negative-result-and-error", "both result and error, or neither", "client", INVALID_REQUEST),
    _C("negative-error-shape", "non-integer error code or non-string message", "client", INVALID_REQUEST),
    _C("negative-wrong-http-status", "a known protocol error (or a success) carried with the wrong HTTP status", "client", INVALID_REQUEST),
    _C("negative-content-type", "a JSON-RPC response body without Content-Type application/json", "client", INVALID_REQUEST),
    _C("negative-error-data", "a -32021/-32022 error without the data the spec requires", "client", INVALID_REQUEST),
    _C("negative-response-unparsable", "a response body that is not one JSON object", "client", INVALID_REQUEST),
    _C("negative-notification-answered", "a JSON-RPC response (even null wrapped as success) sent for a notification", "serializer", INVALID_REQUEST),
    _C("negative-proxy-collapsed-error", "origin 4xx JSON-RPC error turned into HTTP 500", "intermediary", INVALID_REQUEST),
    _C("negative-proxy-changed-body", "egress JSON-RPC body differs from the origin's", "intermediary", INVALID_REQUEST),
    _C("negative-proxy-changed-status", "egress HTTP status differs from the origin's (other than a collapse to 5xx)", "intermediary", INVALID_REQUEST),
    _C("negative-proxy-content-type", "egress Content-Type differs from the origin's", "intermediary", INVALID_REQUEST),
    _C("negative-proxy-request-changed", "the request the origin received differs from the client's (body or Accept)", "intermediary", INVALID_REQUEST),
    _C("negative-sse-id-mismatch", "an SSE event whose JSON-RPC id differs from the request's", "client", INVALID_REQUEST),
    _C("negative-sse-server-request", "a 2026-07-28 event stream that carries a server-to-client request", "client", INVALID_REQUEST),
    _C("negative-sse-unrelated-notification", "a progress notification in a stream for another request's progressToken", "client", INVALID_REQUEST),
    _C("negative-sse-buffered", "the stream held back and released at once", "intermediary", INVALID_REQUEST),
    _C("negative-sse-stream-regressed", "a candidate's stream first-event latency or duration above its ceiling or its accepted baseline", "client", INVALID_REQUEST),
    _C("negative-sse-events-lost", "a candidate's streams carry fewer events than the minimum or their accepted baseline", "client", INVALID_REQUEST),
    # generated from what a live server declares (mcplab.live.generated)
    _C("golden-declared-method", "a method the server advertises (a list, resources/read, prompts/get, a log level) answers a result valid for its era and the official schema"),
    _C("negative-result-schema", "a result the official JSON schema rejects for its method and era", "client", INVALID_PARAMS),
    _C("negative-output-schema", "a tool with an outputSchema answers a success without conforming structuredContent", "client", INVALID_PARAMS),
    _C("negative-invalid-arguments", "a tool called with arguments its inputSchema rejects answers a success (neither an error nor isError)", "origin", INVALID_PARAMS),
    _C("negative-unknown-tool", "tools/call for a tool the server does not list is not answered with a JSON-RPC error", "origin", INVALID_PARAMS),
    _C("negative-unknown-method", "a method the server does not implement is not answered 404 with -32601", "origin", METHOD_NOT_FOUND),
    _C("negative-origin-not-allowed", "a request with a foreign Origin reaches a local server (not HTTP 403)", "origin"),
    _C("negative-invalid-cursor", "a list request with a cursor the server never issued is not answered -32602", "origin", INVALID_PARAMS),
    _C("negative-unknown-resource", "resources/read of a URI the server does not have is not answered -32602 (2026-07-28)", "origin", INVALID_PARAMS),
    _C("negative-unknown-prompt", "prompts/get of a prompt the server does not list is not answered -32602", "origin", INVALID_PARAMS),
    _C("negative-invalid-log-level", "a request whose _meta logLevel is not a log level is not answered -32602", "origin", INVALID_PARAMS),
    # era selection decisions
    _C("era-strict-modern-proven", "strict mode chose modern on proof (discover success or a modern error)"),
    _C("era-strict-unproven", "strict mode saw no proof of modern behaviour and chose no era"),
    _C("era-fallback-silence-inconclusive", "fallback saw only inconclusive modern observations and no legacy evidence"),
    _C("era-fallback-legacy-proven", "fallback chose legacy after a successful initialize on an endpoint allowed legacy"),
    _C("era-modern-error-no-downgrade", "a recognised modern error proves modern: never fall back after it"),
    # stockroom circuit
    _C("golden-stockroom-restock-approved", "commit asks for approval; accept: v1 -> v2, on_order [6,13,3,6]"),
    _C("golden-stockroom-restock-rejected", "decline: mutation_blocked, ledger unchanged, request kept in the trace"),
    _C("negative-stockroom-tool-not-allowed", "delete_item denied by policy with -32602, nobody asked", "origin", INVALID_PARAMS),
    _C("negative-stockroom-forged-state", "a changed or missing requestState never applies a change", "origin", INVALID_PARAMS),
    _C("negative-stockroom-stale-version", "a commit against an old ledger_version is refused", "origin", INVALID_PARAMS),
    _C("negative-stockroom-replayed-approval", "the same accepted retry sent twice applies once", "origin", INVALID_PARAMS),
    _C("negative-stockroom-payload-drift", "commit lines that differ from the approved draft are refused", "origin", INVALID_PARAMS),
    _C("negative-stockroom-missing-capability", "a client without elicitation gets -32021 for commit_reorder", "origin", MISSING_REQUIRED_CLIENT_CAPABILITY),
)

_N = "2026-07-28/"
_L = "2025-11-25/"
_HTTP = _N + "basic/transports/streamable-http.mdx"
_BASE = _N + "basic/index.mdx"


def _must(where: str, rule: str) -> Authority:
    return Authority("MUST", where, rule)


def _schema(where: str, rule: str) -> Authority:
    return Authority("schema", where, rule)


def _should(where: str, rule: str) -> Authority:
    return Authority("SHOULD", where, rule)


def _course(rule: str, reason: str) -> Authority:
    return Authority("course", "mcplab course rule", rule, reason)


_MISMATCH = _must(_HTTP + " § Server Validation",
                  "a header whose value differs from the body (after decoding a sentinel) is rejected with HTTP 400 and -32020")
_PROXY = _course("a proxy passes the origin's status, body, content type and the client's request on unchanged",
                 "the transport page lets intermediaries answer errors themselves; the course's release gate needs the "
                 "origin's own evidence to survive the hop, so any change is reported")
_STREAM = _must(_HTTP + " § Receiving Messages",
                "an SSE answer carries only notifications related to the request, then the response to that request")
_ENVELOPE = _schema("$defs/JSONRPCResultResponse, $defs/JSONRPCErrorResponse",
                    "a response has jsonrpc \"2.0\", the request's id (a string or an integer) and exactly one of result and error")
_STOCKROOM = _course("the stockroom's approval gate (policy, versioned payload, signed requestState, single use)",
                     "the course's own server: the mutating tool may run only after an approval of exactly that payload")

_AUTHORITY: dict[str, Authority] = {
    "golden-modern-discover": _must(_N + "server/discover.mdx § Response",
                                    "server/discover is answered with the supported versions and the capabilities"),
    "golden-modern-list": _schema("$defs/ListToolsResult", "tools/list answers a tools array of Tool objects (name and inputSchema required)"),
    "golden-modern-call": _schema("$defs/CallToolResult", "tools/call answers a content array of typed blocks"),
    "golden-additive-field": _must(_BASE + " § Result Responses", "a result may carry any further fields; a client keeps them"),
    "golden-input-required": _must(_N + "basic/patterns/mrtr.mdx § Basic Workflow",
                                   "an input_required result names its input requests or a requestState; the retry with inputResponses completes"),
    "golden-extension-task": _must(_BASE + " § ResultType", "an extension's resultType is valid once that extension was advertised"),
    "golden-completion": _schema("$defs/CompleteResult", "completion.values is at most 100 strings; total and hasMore are optional"),
    "golden-legacy-list": _must(_BASE + " § ResultType", "an absent resultType means complete for servers of earlier revisions"),
    "golden-mcp-name-sentinel": _must(_HTTP + " § Value Encoding", "servers decode a =?base64?...?= Mcp-Name before comparing it with the body"),
    "golden-notification": _must(_HTTP + " § Sending Messages", "a notification the server accepts gets HTTP 202 with no body"),
    "golden-sse-stream": _must(_HTTP + " § Receiving Messages",
                               "a streamed answer carries related notifications, then the response (which should end the stream)"),
    "negative-header-body-mismatch": _MISMATCH,
    "negative-version-header-mismatch": _must(_HTTP + " § Protocol Version Header",
                                              "MCP-Protocol-Version must equal the _meta protocolVersion, else HTTP 400 and -32020"),
    "negative-name-header-mismatch": _MISMATCH,
    "negative-raw-whitespace-name": _must(_HTTP + " § Server Validation", "a header value with invalid characters is rejected with 400 and -32020"),
    "negative-duplicate-header": _MISMATCH,
    "negative-missing-header": _must(_HTTP + " § Server Validation", "a missing MCP-Protocol-Version, Mcp-Method or Mcp-Name gets HTTP 400 and -32020"),
    "negative-missing-meta-key": _must(_BASE + " § _meta", "a request without a required _meta key gets -32602 and, on HTTP, status 400"),
    "negative-invalid-params": _schema("$defs/CallToolRequest", "tools/call params need a string name; a server refuses other params with -32602"),
    "negative-meta-type": _schema(_BASE + " § _meta (table of per-request fields)",
                                  "protocolVersion is a string and clientCapabilities an object; a request breaking that is malformed"),
    "negative-missing-capability": _must(_BASE + " § _meta", "a request needing an undeclared client capability gets -32021 with data.requiredCapabilities, HTTP 400"),
    "negative-unsupported-version": _must(_N + "basic/versioning.mdx § Protocol Version Negotiation",
                                          "an unsupported version gets -32022 listing the supported versions, HTTP 400"),
    "negative-malformed-envelope": _schema("$defs/JSONRPCRequest",
                                           "a body that is not one JSON-RPC request is refused (-32700 unparsable, -32600 invalid); a batch is not a request"),
    "negative-retry-mismatch": _must(_N + "basic/patterns/mrtr.mdx § Server Requirements (Basic Workflow)",
                                     "a retry repeats the original request with a new id, the requestState verbatim and the answers asked for"),
    "negative-modern-missing-result-type": _must(_BASE + " § Result Responses", "every 2026-07-28 result carries resultType"),
    "negative-unknown-result-type": _must(_BASE + " § ResultType", "a resultType the client does not recognise is invalid"),
    "negative-unadvertised-extension": _must(_BASE + " § ResultType", "extension result types count only when the extension was advertised"),
    "negative-input-required-misplaced": _must(_N + "basic/patterns/mrtr.mdx § Supported Requests",
                                               "only tools/call, prompts/get and resources/read may answer input_required"),
    "negative-input-required-payload": _schema("$defs/InputRequiredResult", "input_required carries inputRequests or requestState, well formed"),
    "negative-task-payload": _schema("$defs (tasks extension) Task",
                                     "a task result carries taskId, a known status, ISO 8601 timestamps and ttlMs"),
    "negative-tools-list-payload": _schema("$defs/ListToolsResult, $defs/Tool", "a tools array of objects with a string name and an object inputSchema"),
    "negative-tools-call-payload": _schema("$defs/CallToolResult",
                                           "content is an array of typed blocks, isError a boolean; structuredContent is any JSON "
                                           "in 2026-07-28 and an object in 2025-11-25"),
    "negative-discover-payload": _schema("$defs/DiscoverResult", "supportedVersions (strings) and capabilities (an object) are required"),
    "negative-completion-payload": _schema("$defs/CompleteResult", "at most 100 string values, integer total, boolean hasMore"),
    "negative-cache-fields": _must(_N + "server/utilities/caching.mdx § Time-to-Live (TTL) Field",
                                   "ttlMs is an integer of at least 0 and cacheScope is public or private"),
    "negative-result-shape": _schema("$defs/Result", "a result is a JSON object; _meta is an object"),
    "negative-jsonrpc-version": _ENVELOPE,
    "negative-id-mismatch": _schema("$defs/RequestId; " + _BASE + " § Error Responses",
                                    "a response carries the request's id (same value and type); an id that could not be read is left "
                                    "out, never null (RequestId is a string or an integer)"),
    "negative-result-and-error": _ENVELOPE,
    "negative-error-shape": _must(_BASE + " § Error Responses", "an error has an integer code and a string message"),
    "negative-wrong-http-status": _must(_HTTP + " § Protocol Version Header",
                                        "-32020/-32021/-32022 and a missing _meta key travel with 400, an unknown method with 404 and -32601"),
    "negative-content-type": _must(_HTTP + " § Sending Messages", "a request is answered application/json or text/event-stream"),
    "negative-error-data": _schema("$defs/UnsupportedProtocolVersionError, $defs/MissingRequiredClientCapabilityError",
                                   "-32022 carries data.supported and data.requested; -32021 carries data.requiredCapabilities"),
    "negative-response-unparsable": _must(_HTTP + " § Sending Messages", "a request's answer is one JSON object or an event stream of JSON-RPC messages"),
    "negative-notification-answered": _must(_HTTP + " § Sending Messages",
                                            "a notification gets 202 and no body, or an error status whose body may hold an id-less JSON-RPC error"),
    "negative-proxy-collapsed-error": _PROXY,
    "negative-proxy-changed-body": _PROXY,
    "negative-proxy-changed-status": _PROXY,
    "negative-proxy-content-type": _PROXY,
    "negative-proxy-request-changed": _PROXY,
    "negative-sse-id-mismatch": _STREAM,
    "negative-sse-server-request": _must(_HTTP + " § Receiving Messages", "a 2026-07-28 stream never carries a server-to-client request"),
    "negative-sse-unrelated-notification": _must(_N + "basic/patterns/progress.mdx § Behavior Requirements",
                                                 "progress notifications name only the token of an active request"),
    "negative-sse-buffered": _should(_HTTP + " § Receiving Messages", "streams are delivered as they happen (X-Accel-Buffering: no is advised)"),
    "negative-sse-stream-regressed": _course("a candidate's stream latency stays under its ceiling and its accepted baseline",
                                             "the course's release gate: stream health is part of readiness"),
    "negative-sse-events-lost": _course("a candidate's streams carry at least their baseline's events",
                                        "the course's release gate: stream health is part of readiness"),
    "golden-declared-method": _schema("$defs/<method>Result (mcplab.schemas.RESULT_DEFS)",
                                      "each advertised method answers a result its era's schema accepts"),
    "negative-result-schema": _schema("$defs/<method>Result (mcplab.schemas.RESULT_DEFS)",
                                      "a result conforms to the schema of its method in its era (e.g. ttlMs and cacheScope on cacheable results)"),
    "negative-output-schema": _must(_N + "server/tools.mdx § Output Schema", "a tool with an outputSchema returns structured results that conform to it"),
    "negative-invalid-arguments": _must(_N + "server/tools.mdx § Security Considerations",
                                        "servers validate all tool inputs: arguments the inputSchema rejects get an error or isError"),
    "negative-unknown-tool": _should(_N + "server/tools.mdx § Error Handling", "an unknown tool is a protocol error (a JSON-RPC error, -32602)"),
    "negative-unknown-method": _must(_HTTP + " § Protocol Version Header", "a method the server does not implement gets HTTP 404 and -32601"),
    "negative-origin-not-allowed": _must(_HTTP + " § Security & Endpoint", "a present Origin that is not allowed gets HTTP 403"),
    "negative-invalid-cursor": _should(_N + "server/utilities/pagination.mdx § Error Handling", "an invalid cursor is answered -32602"),
    "negative-unknown-resource": _must(_N + "server/resources.mdx § Error Handling",
                                       "a resource that does not exist gets a JSON-RPC error -32602, never an empty contents array"),
    "negative-unknown-prompt": _should(_N + "server/prompts.mdx § Error Handling", "an invalid prompt name is answered -32602"),
    "negative-invalid-log-level": _should(_N + "server/utilities/logging.mdx § Error Handling", "a logLevel that is not a log level is rejected with -32602"),
    "era-strict-modern-proven": _should(_HTTP + " § Backward Compatibility", "a recognised modern error or a discover answer proves the modern era"),
    "era-strict-unproven": _course("strict mode runs nothing without proof of 2026-07-28", "no verdict on an era not proven"),
    "era-fallback-silence-inconclusive": _should(_HTTP + " § Backward Compatibility",
                                                 "silence or an unrecognised answer is not a legacy signal by itself"),
    "era-fallback-legacy-proven": _must(_L + "basic/lifecycle.mdx § Initialization", "a successful initialize negotiates the legacy version"),
    "era-modern-error-no-downgrade": _should(_HTTP + " § Backward Compatibility", "after a recognised modern error the client does not fall back"),
    "golden-stockroom-restock-approved": _STOCKROOM,
    "golden-stockroom-restock-rejected": _STOCKROOM,
    "negative-stockroom-tool-not-allowed": _STOCKROOM,
    "negative-stockroom-forged-state": _must(_N + "basic/patterns/mrtr.mdx § Security Considerations",
                                             "requestState is attacker-controlled: a server verifies it before trusting it"),
    "negative-stockroom-stale-version": _STOCKROOM,
    "negative-stockroom-replayed-approval": _STOCKROOM,
    "negative-stockroom-payload-drift": _STOCKROOM,
    "negative-stockroom-missing-capability": _must(_BASE + " § _meta", "a request needing an undeclared client capability gets -32021"),
}

#: Finer rules a validator checks inside a case and may WAIVE (see :func:`enforced`): SHOULDs and
#: course rules, by id. A waived rule is a warning, never a failure by the specification.
RULES: dict[str, Authority] = {
    "course-tool-description": _course(
        "every tool carries a useful (non-blank) description",
        "the schema makes description optional, but a model chooses tools by it; the labs grade it"),
    "course-error-status": _course(
        "-32602, -32600 and -32700 travel with HTTP 400",
        "2026-07-28 mandates 400 only for -32020/-32021/-32022 and a missing _meta key (basic/index.mdx § _meta); "
        "the course keeps every client-fault error on 400 so a gateway can tell it from success"),
    "course-types-first": _course(
        "a _meta value of the wrong type is answered -32602 before the headers are compared",
        "no order is mandated: a numeric protocolVersion also differs from its header, so -32020 is as correct; the "
        "course teaches checking types first so the error names the real fault"),
    "should-tool-names": _should(
        _N + "server/tools.mdx § Tool Names", "tool names are 1-128 characters and unique within a server"),
    "should-invalid-cursor": _should(
        _N + "server/utilities/pagination.mdx § Error Handling", "an invalid cursor is answered -32602"),
    "should-structured-text": _should(
        _N + "server/tools.mdx § Structured Content", "a tool returning structuredContent also returns it serialised in a text block"),
    "should-stream-ends": _should(_HTTP + " § Receiving Messages", "the final response ends the stream"),
    "should-sse-no-buffering": _should(_HTTP + " § Receiving Messages", "an SSE answer carries X-Accel-Buffering: no"),
    "should-unknown-tool-error": _should(_N + "server/tools.mdx § Error Handling", "an unknown tool is answered with a JSON-RPC error -32602"),
    "should-invalid-log-level": _should(_N + "server/utilities/logging.mdx § Error Handling", "an unknown logLevel is answered -32602"),
    "should-unknown-resource-legacy": _should(_L + "server/resources.mdx § Error Handling",
                                              "2025-11-25: a resource that does not exist is answered -32002 (or -32602)"),
    "should-unknown-prompt-error": _should(_N + "server/prompts.mdx § Error Handling", "an invalid prompt name is answered -32602"),
    "should-server-info": _should(_BASE + " § _meta", "every result's _meta names the server (io.modelcontextprotocol/serverInfo)"),
}

#: Cases judged only by checks generated from what a live server declares (``mcplab.live.generated``):
#: their request names the server's own tools, prompts or resources, so no recorded transcript holds them.
GENERATED_ONLY: frozenset[str] = frozenset({
    "golden-declared-method", "negative-result-schema", "negative-output-schema", "negative-invalid-arguments",
    "negative-unknown-tool", "negative-unknown-method", "negative-origin-not-allowed", "negative-invalid-cursor",
    "negative-unknown-resource", "negative-unknown-prompt", "negative-invalid-log-level"})

#: Every case by name, each with its authority.
CASES: dict[str, Case] = {case.name: replace(case, authority=_AUTHORITY[case.name]) for case in _TABLE}
assert len(CASES) == len(_TABLE), "duplicate case name"

# None: every rule is enforced (the labs' default); a list: rules are waived and collected there.
_WAIVED: ContextVar[list[tuple[str, str]] | None] = ContextVar("mcplab_waived_rules", default=None)
_WAIVED_SEEN: ContextVar[set[tuple[str, str]]] = ContextVar("mcplab_waived_seen", default=set())  # noqa: B039 - set per block


def enforced(rule: str, message: str) -> bool:
    """True when ``rule`` (a key of :data:`RULES`) is enforced, the default. Inside
    :func:`spec_rules_only` it is waived instead: noted with ``message`` and False is returned,
    so the validator goes on to the rules the specification does mandate."""
    waived = _WAIVED.get()
    if waived is None:
        return True
    if (rule, message) not in _WAIVED_SEEN.get():  # a set beside the list: many distinct messages stay linear
        _WAIVED_SEEN.get().add((rule, message))
        waived.append((rule, message))
    return False


@contextmanager
def spec_rules_only() -> Iterator[list[tuple[str, str]]]:
    """Judge by the specification alone for the block: every waivable rule (SHOULDs and course
    rules) is collected as ``(rule, message)`` in the yielded list instead of failing."""
    token, seen = _WAIVED.set([]), _WAIVED_SEEN.set(set())
    try:
        yield _WAIVED.get()  # type: ignore[misc]
    finally:
        _WAIVED_SEEN.reset(seen)
        _WAIVED.reset(token)


def case_info(name: str) -> Case:
    """Look a case up by name; ``KeyError`` names the unknown case."""
    try:
        return CASES[name]
    except KeyError:
        raise KeyError(f"unknown case name {name!r}") from None
