"""The case vocabulary: one invariant, one name, in every layer.

Every transcript file, unit test, live check, proxy report and lab uses these names.
Add cases in the same pattern (``golden-...`` accepted, ``negative-...`` rejected,
``era-...`` era decisions); never rename one. ``boundary`` is where a rejection must
happen: ``origin`` (the MCP server answers with the error), ``intermediary`` (a proxy or
gateway), ``client`` (the client-side validator refuses the response) or ``serializer``
(what a component writes on the wire).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

__all__ = ["Case", "CASES", "BOUNDARIES", "case_info"]

BOUNDARIES: tuple[str, ...] = ("origin", "intermediary", "client", "serializer")


@dataclass(frozen=True)
class Case:
    """One named invariant. ``code`` is the JSON-RPC code that classifies a rejection."""

    name: str
    summary: str
    boundary: str | None = None
    code: int | None = None
    #: Other codes that classify the same invariant (e.g. -32700 for an unparsable envelope).
    also: tuple[int, ...] = ()

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

#: Every case by name.
CASES: dict[str, Case] = {case.name: case for case in _TABLE}
assert len(CASES) == len(_TABLE), "duplicate case name"


def case_info(name: str) -> Case:
    """Look a case up by name; ``KeyError`` names the unknown case."""
    try:
        return CASES[name]
    except KeyError:
        raise KeyError(f"unknown case name {name!r}") from None
