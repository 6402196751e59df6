"""Request validation in the order MISSION.md fixes, so every fault gets one stable code.

1. parse and check the JSON-RPC envelope and the ``_meta`` types (and required keys);
2. ``MCP-Protocol-Version`` against ``_meta`` version; 3. ``Mcp-Method`` against ``method``;
4. ``Mcp-Name`` against the routed body value (sentinel decoded exactly);
5. only then: is the version supported (-32022), are required capabilities declared (-32021).
A mismatch is therefore always -32020, even when the version would also be unsupported.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from .errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProtocolViolation,
    nesting_is_a_violation,
)
from .headers import (
    METHOD_HEADER,
    NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
    HeaderInput,
    decode_header_value,
    encode_header_value,
    is_raw_header_value_valid,
    normalize_headers,
    single_header,
)
from .jsonvalue import is_json_integer, same_json_value, short_repr
from .versions import (
    LEGACY_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    check_era,
    version_for_era,
)

__all__ = [
    "build_request",
    "validate_request",
    "validate_retry",
    "reject_unsolicited_retry",
    "parse_message",
    "routed_name_field",
    "ROUTED_NAME_FIELDS",
    "missing_capabilities",
    "ELICITATION_ACTIONS",
]

#: The answers a client may give to an ``elicitation/create`` input request.
ELICITATION_ACTIONS: frozenset[str] = frozenset({"accept", "decline", "cancel"})
#: Params a retry adds or refreshes; everything else must repeat the original request exactly.
_RETRY_FIELDS = frozenset({"_meta", "inputResponses", "requestState"})

#: Methods whose target travels in ``Mcp-Name``, and the ``params`` field it mirrors.
ROUTED_NAME_FIELDS: dict[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

_META_TYPES: tuple[tuple[str, type, str], ...] = (
    (META_PROTOCOL_VERSION, str, "a string"),
    (META_CLIENT_CAPABILITIES, dict, "an object"),
    (META_CLIENT_INFO, dict, "an object"),
    (META_LOG_LEVEL, str, "a string"),
)


def routed_name_field(method: str) -> str | None:
    """The ``params`` field that ``Mcp-Name`` mirrors for ``method``, or ``None``."""
    return ROUTED_NAME_FIELDS.get(method)


def build_request(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    era: str = "modern",
    id: Any = 1,
    capabilities: Mapping[str, Any] | None = None,
    client_info: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A well-formed client request and its HTTP headers, as :func:`validate_request` expects them.

    Modern (2026-07-28): ``_meta`` carries the protocol version, ``capabilities`` and
    ``client_info``; headers carry ``MCP-Protocol-Version``, ``Mcp-Method`` and, for routed
    methods, ``Mcp-Name`` (sentinel-encoded when needed). Legacy (2025-11-25): the plain request
    with ``MCP-Protocol-Version`` (omitted for ``initialize``). ``id=None`` builds a notification.
    """
    era = check_era(era)
    version = version_for_era(era)
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        body["id"] = id
    body_params = dict(params or {})
    headers = [("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")]
    if era == "modern":
        meta = dict(body_params.get("_meta") or {})
        meta[META_PROTOCOL_VERSION] = version
        meta[META_CLIENT_CAPABILITIES] = dict(capabilities or {})
        if client_info is not None:
            meta[META_CLIENT_INFO] = dict(client_info)
        body_params["_meta"] = meta
        headers += [("MCP-Protocol-Version", version), ("Mcp-Method", method)]
        field = routed_name_field(method)
        if field is not None and isinstance(body_params.get(field), str):
            headers.append(("Mcp-Name", encode_header_value(body_params[field])))
    elif method != "initialize":
        headers.append(("MCP-Protocol-Version", version))
    if body_params or era == "modern":
        body["params"] = body_params
    return body, headers


def parse_message(body: Any, *, case: str = "negative-malformed-envelope", code: int = PARSE_ERROR) -> Any:
    """Return ``body`` parsed from JSON when it is ``bytes``/``str``; objects pass through."""
    if isinstance(body, (bytes, bytearray, memoryview, str)):
        try:
            return json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ProtocolViolation(f"body is not valid JSON: {exc}", code=code, case=case) from None
        except RecursionError:
            raise ProtocolViolation("body is nested too deeply to parse", code=code, case=case) from None
    return body


def _envelope(message: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(message, list):
        raise ProtocolViolation(
            "JSON-RPC batches are not allowed: one message per body", code=INVALID_REQUEST, case="negative-malformed-envelope"
        )
    if not isinstance(message, dict):
        raise ProtocolViolation(
            f"a JSON-RPC request must be an object, got {type(message).__name__}",
            code=INVALID_REQUEST,
            case="negative-malformed-envelope",
        )
    if message.get("jsonrpc") != "2.0":
        raise ProtocolViolation(
            f'request jsonrpc must be exactly "2.0", got {short_repr(message.get("jsonrpc"))}',
            code=INVALID_REQUEST,
            case="negative-malformed-envelope",
        )
    method = message.get("method")
    if not isinstance(method, str) or not method:
        raise ProtocolViolation(
            "request method must be a non-empty string", code=INVALID_REQUEST, case="negative-malformed-envelope"
        )
    if "id" in message:
        request_id = message["id"]
        if not (isinstance(request_id, str) or is_json_integer(request_id)):
            raise ProtocolViolation(
                f"request id must be a string or an integer, got {short_repr(request_id)}",
                code=INVALID_REQUEST,
                case="negative-malformed-envelope",
            )
    if "result" in message or "error" in message:
        raise ProtocolViolation(
            "a request must not carry result or error", code=INVALID_REQUEST, case="negative-malformed-envelope"
        )
    params = message.get("params", {})
    if not isinstance(params, dict):
        raise ProtocolViolation(
            "request params must be an object", code=INVALID_REQUEST, case="negative-malformed-envelope"
        )
    return method, params


def _modern_meta(params: dict[str, Any], is_request: bool) -> dict[str, Any]:
    meta = params.get("_meta")
    if meta is None:
        if is_request:
            raise ProtocolViolation(
                f"params._meta is required on 2026-07-28 requests (with {META_PROTOCOL_VERSION} "
                f"and {META_CLIENT_CAPABILITIES})",
                code=INVALID_PARAMS,
                case="negative-missing-meta-key",
            )
        return {}
    if not isinstance(meta, dict):
        raise ProtocolViolation("params._meta must be an object", code=INVALID_PARAMS, case="negative-meta-type")
    for key, expected, label in _META_TYPES:
        if key in meta and not isinstance(meta[key], expected):
            raise ProtocolViolation(
                f"params._meta[{key!r}] must be {label}, got {type(meta[key]).__name__}",
                code=INVALID_PARAMS,
                case="negative-meta-type",
            )
    if is_request:
        for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES):
            if key not in meta:
                raise ProtocolViolation(
                    f"params._meta is missing the required key {key!r}",
                    code=INVALID_PARAMS,
                    case="negative-missing-meta-key",
                )
    return meta


def _required_header(headers: Mapping[str, list[str]], name: str, display: str) -> str:
    value = single_header(headers, name)
    if value is None:
        raise ProtocolViolation(
            f"the {display} header is required", code=HEADER_MISMATCH, case="negative-missing-header"
        )
    return value


def _check_name_header(headers: Mapping[str, list[str]], method: str, params: dict[str, Any]) -> None:
    field = ROUTED_NAME_FIELDS.get(method)
    if field is None:
        return
    body_value = params.get(field)
    if not isinstance(body_value, str):
        raise ProtocolViolation(
            f"{method} needs a string params.{field}", code=INVALID_PARAMS, case="negative-invalid-params"
        )
    raw = _required_header(headers, NAME_HEADER, "Mcp-Name")
    decoded = decode_header_value(raw)
    if decoded is None:
        raise ProtocolViolation(
            f"Mcp-Name {raw!r} is a malformed base64 sentinel", code=HEADER_MISMATCH, case="negative-name-header-mismatch"
        )
    if decoded is raw and not is_raw_header_value_valid(raw):
        if raw != raw.strip(" \t"):
            raise ProtocolViolation(
                f"Mcp-Name {raw!r} has leading/trailing whitespace: such a value must travel as a "
                "=?base64?...?= sentinel",
                code=HEADER_MISMATCH,
                case="negative-raw-whitespace-name",
            )
        raise ProtocolViolation(
            f"Mcp-Name {raw!r} holds characters outside visible ASCII without the sentinel",
            code=HEADER_MISMATCH,
            case="negative-name-header-mismatch",
        )
    if decoded != body_value:
        raise ProtocolViolation(
            f"Mcp-Name {decoded!r} does not match params.{field} {body_value!r}",
            code=HEADER_MISMATCH,
            case="negative-name-header-mismatch",
        )


def missing_capabilities(declared: Any, required: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``required`` that ``declared`` lacks (nested objects checked key by key)."""
    missing: dict[str, Any] = {}
    declared = declared if isinstance(declared, dict) else {}
    for key, needed in required.items():
        if key not in declared:
            missing[key] = needed
        elif isinstance(needed, dict) and needed:
            deeper = missing_capabilities(declared[key], needed)
            if deeper:
                missing[key] = deeper
    return missing


@nesting_is_a_violation("negative-malformed-envelope", INVALID_REQUEST)
def validate_request(
    body: Any,
    headers: HeaderInput = None,
    era: str = "modern",
    *,
    required_capabilities: Mapping[str, Any] | None = None,
    supported_versions: Collection[str] | None = None,
) -> dict[str, Any]:
    """Validate one client message (request or notification) and its HTTP headers.

    ``body`` is a parsed object or raw ``bytes``/``str``; ``headers`` a mapping or a sequence
    of ``(name, value)`` pairs. ``required_capabilities`` are the client capabilities the
    server needs for this request (e.g. ``{"elicitation": {}}``); ``supported_versions``
    defaults to the era's versions. Returns the parsed message; raises
    ``ProtocolViolation`` with the code and case of the first rule broken.
    """
    check_era(era)
    message = parse_message(body)
    method, params = _envelope(message)
    is_request = "id" in message
    normalized = normalize_headers(headers)

    if era == "legacy":
        version = single_header(normalized, PROTOCOL_VERSION_HEADER)
        supported = tuple(supported_versions) if supported_versions is not None else LEGACY_VERSIONS
        if version is not None and version not in supported:
            raise ProtocolViolation(
                f"unsupported protocol version {version!r}",
                code=UNSUPPORTED_PROTOCOL_VERSION,
                case="negative-unsupported-version",
                data={"supported": list(supported), "requested": version},
            )
        return message

    meta = _modern_meta(params, is_request)
    header_version = _required_header(normalized, PROTOCOL_VERSION_HEADER, "MCP-Protocol-Version")
    meta_version = meta.get(META_PROTOCOL_VERSION)
    if meta_version is not None and header_version != meta_version:
        raise ProtocolViolation(
            f"MCP-Protocol-Version {header_version!r} does not match params._meta version {short_repr(meta_version)}",
            code=HEADER_MISMATCH,
            case="negative-version-header-mismatch",
        )
    header_method = _required_header(normalized, METHOD_HEADER, "Mcp-Method")
    if header_method != method:
        raise ProtocolViolation(
            f"Mcp-Method {header_method!r} does not match method {method!r}",
            code=HEADER_MISMATCH,
            case="negative-header-body-mismatch",
        )
    _check_name_header(normalized, method, params)

    supported = tuple(supported_versions) if supported_versions is not None else MODERN_VERSIONS
    if header_version not in supported:
        raise ProtocolViolation(
            f"unsupported protocol version {header_version!r}",
            code=UNSUPPORTED_PROTOCOL_VERSION,
            case="negative-unsupported-version",
            data={"supported": list(supported), "requested": header_version},
        )
    if required_capabilities:
        missing = missing_capabilities(meta.get(META_CLIENT_CAPABILITIES), required_capabilities)
        if missing:
            raise ProtocolViolation(
                f"{method} needs client capabilities the request did not declare: {sorted(missing)}",
                code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                case="negative-missing-capability",
                data={"requiredCapabilities": missing},
            )
    return message


def _retry_fault(message: str) -> ProtocolViolation:
    return ProtocolViolation(message, code=INVALID_PARAMS, case="negative-retry-mismatch")


@nesting_is_a_violation("negative-retry-mismatch", INVALID_PARAMS)
def validate_retry(
    original: Any, input_required: Mapping[str, Any], retry: Any, *, earlier_ids: Collection[Any] = ()
) -> dict[str, Any]:
    """Check an MRTR retry against the request it repeats and the ``input_required`` result it answers.

    The retry is the same method with the same params under a NEW id (new against the original
    and every ``earlier_ids`` of the same round trip), the same protocol version and client
    capabilities, carries the server's ``requestState`` verbatim (and none the server never
    sent), and answers exactly the input requests asked (an elicitation with ``action``
    accept, decline or cancel; an accepted form with every required field). Returns the parsed
    retry; raises a -32602 ``negative-retry-mismatch`` violation otherwise.
    """
    original = parse_message(original)
    if not isinstance(original, dict) or not isinstance(input_required, Mapping):
        raise _retry_fault("validate_retry needs the original request object and the input_required result object")
    message = parse_message(retry)
    method, params = _envelope(message)
    if "id" not in message:
        raise _retry_fault("a retry is a request: it needs an id")
    for used in (original.get("id"), *earlier_ids):
        if same_json_value(message["id"], used):
            raise _retry_fault(f"a retry needs a new JSON-RPC id; {short_repr(message['id'])} was already used in this round trip")
    if method != original.get("method"):
        raise _retry_fault(f"the retry calls {method!r}, the original request was {short_repr(original.get('method'))}")
    before_params = original.get("params") if isinstance(original.get("params"), dict) else {}
    before = {k: v for k, v in before_params.items() if k not in _RETRY_FIELDS}
    after = {k: v for k, v in params.items() if k not in _RETRY_FIELDS}
    if not same_json_value(before, after):
        changed = sorted(k for k in before.keys() | after.keys() if not same_json_value(before.get(k), after.get(k)))
        raise _retry_fault(f"the retry changes the original request's params: {', '.join(changed)}")
    before_meta = before_params.get("_meta") if isinstance(before_params.get("_meta"), dict) else {}
    after_meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES):
        if not same_json_value(before_meta.get(key), after_meta.get(key)):
            raise _retry_fault(f"the retry changes params._meta[{key!r}]")
    if "requestState" in input_required:
        if params.get("requestState") != input_required["requestState"]:
            raise _retry_fault("the retry does not carry the server's requestState verbatim")
    elif "requestState" in params:
        raise _retry_fault("the retry carries a requestState the server never sent")
    wanted = input_required.get("inputRequests") or {}
    if not isinstance(wanted, Mapping):
        raise _retry_fault("the input_required result's inputRequests is not an object")
    answers = params.get("inputResponses", {} if not wanted else None)
    if not isinstance(answers, dict):
        raise _retry_fault("inputResponses must be an object answering every input request")
    extra = sorted(set(answers) - set(wanted))
    if extra:
        raise _retry_fault(f"the retry answers input requests the server never made: {extra}")
    for key, request in wanted.items():
        if key not in answers:
            raise _retry_fault(f"the retry leaves the input request {key!r} unanswered")
        _check_answer(key, request, answers[key])
    return message


def _check_answer(key: str, request: Any, answer: Any) -> None:
    if not isinstance(answer, dict):
        raise _retry_fault(f"inputResponses[{key!r}] must be an object")
    if not (isinstance(request, Mapping) and request.get("method") == "elicitation/create"):
        return
    action = answer.get("action")
    if not isinstance(action, str) or action not in ELICITATION_ACTIONS:
        raise _retry_fault(
            f"inputResponses[{key!r}].action must be one of {', '.join(sorted(ELICITATION_ACTIONS))}, got {short_repr(action)}"
        )
    content = answer.get("content")
    if content is not None and not isinstance(content, dict):
        raise _retry_fault(f"inputResponses[{key!r}].content must be an object")
    schema = (request.get("params") or {}).get("requestedSchema") if isinstance(request.get("params"), Mapping) else None
    required = schema.get("required") if isinstance(schema, Mapping) else None
    if action == "accept" and isinstance(required, list):
        missing = [name for name in required if not isinstance(name, str) or name not in (content or {})]
        if missing:
            raise _retry_fault(f"inputResponses[{key!r}] accepts without the required fields {missing}")


def reject_unsolicited_retry(request: Mapping[str, Any]) -> None:
    """A request that answers no ``input_required`` must not carry ``inputResponses``/``requestState``."""
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    present = sorted(k for k in ("inputResponses", "requestState") if k in params)
    if present:
        raise _retry_fault(f"the request carries {', '.join(present)} but answers no input_required result")
