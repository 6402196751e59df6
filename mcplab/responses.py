"""Response envelope validation: what a strict client checks before it looks at a result.

``jsonrpc`` is exactly "2.0"; ``id`` equals the request id in value AND JSON type (``1`` is
not ``"1"``, ``true`` is not ``1``); exactly one of ``result``/``error``; an error has an
integer ``code`` and a string ``message``; a modern server carries each known protocol error
with its HTTP status (-32020/-32021/-32022 -> 400 and -32601 -> 404 by the specification;
-32602/-32600/-32700 -> 400 by the course rule ``course-error-status``) and a success with 200.
An id that could not be read is left out of the answer, never ``null`` (the schemas' RequestId is a
string or an integer). A notification gets HTTP 202 and an empty body, never a JSON-RPC response;
a refused one gets an error status whose body is empty or an id-less JSON-RPC error.
A ``text/event-stream`` answer is judged event by event: related notifications, then exactly
one response with the request's id; an event with empty data (a resumable server's priming event)
carries no message and is skipped.
"""

from __future__ import annotations

from typing import Any

from .cases import enforced
from .errors import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProtocolViolation,
    http_status_for_code,
    nesting_is_a_violation,
)
from .headers import HeaderInput, media_type, normalize_headers
from .jsonvalue import is_json_integer, same_json_value, short_repr
from .requests import parse_message
from .sse import is_event_stream, parse_sse
from .versions import check_era

__all__ = ["validate_response", "is_notification", "MANDATED_HTTP_STATUS"]

_MISSING = object()
#: The statuses 2026-07-28 mandates for these codes (streamable-http.mdx § Protocol Version Header,
#: § Server Validation; basic/index.mdx § _meta). The rest of ``http_status_for_code``'s table is a course rule.
MANDATED_HTTP_STATUS: dict[int, int] = {HEADER_MISMATCH: 400, MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
                                        UNSUPPORTED_PROTOCOL_VERSION: 400, METHOD_NOT_FOUND: 404}


def _fail(case: str, message: str) -> ProtocolViolation:
    return ProtocolViolation(message, code=INVALID_REQUEST, case=case)


def _plain(value: Any) -> str:
    """A method name as is (a string), anything else as :func:`short_repr` shows it."""
    return value[:120] if isinstance(value, str) else short_repr(value)


def is_notification(message: Any) -> bool:
    """True for a JSON-RPC message object with a method and no ``id``."""
    return isinstance(message, dict) and "method" in message and "id" not in message


def _is_empty(body: Any) -> bool:
    return body is None or (isinstance(body, (bytes, bytearray, str)) and len(body.strip()) == 0)


def _check_error_data(error: dict[str, Any]) -> None:
    """-32021 and -32022 carry structured data a client needs to repair the request."""
    code, data = error["code"], error.get("data")
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        supported = data.get("supported") if isinstance(data, dict) else None
        if (
            not isinstance(supported, list)
            or not supported
            or not all(isinstance(v, str) for v in supported)
            or not isinstance(data.get("requested"), str)
        ):
            raise _fail("negative-error-data", "-32022 needs data {supported: [versions], requested: version}")
    elif code == MISSING_REQUIRED_CLIENT_CAPABILITY:
        required = data.get("requiredCapabilities") if isinstance(data, dict) else None
        if not isinstance(required, dict) or not required:
            raise _fail("negative-error-data", "-32021 needs data {requiredCapabilities: {...}} naming what is missing")


def _check_content_type(media: str | None) -> None:
    if media != "application/json":
        raise _fail("negative-content-type", f"a JSON-RPC response body needs Content-Type application/json, got {short_repr(media)}")


@nesting_is_a_violation("negative-response-unparsable", INVALID_REQUEST)
def validate_response(
    body: Any,
    request: Any = None,
    *,
    status: int | None = None,
    headers: HeaderInput = None,
    era: str = "modern",
) -> dict[str, Any] | None:
    """Validate the JSON-RPC response (``body``) a client received for ``request``.

    ``body`` is a parsed object, raw ``bytes``/``str``, or ``None`` for an empty body;
    ``request`` the message that was sent, parsed or raw (its ``id`` is compared; ``None``
    skips the id check); ``status`` the HTTP status and ``headers`` the response headers,
    checked when given (a JSON body needs ``Content-Type: application/json``). Returns the
    parsed response, or ``None`` for a correctly unanswered notification. Raises
    ``ProtocolViolation``.
    """
    check_era(era)
    if request is not None and not isinstance(request, dict):
        try:
            request = parse_message(request)
        except ProtocolViolation:
            request = None
        if not isinstance(request, dict):  # unreadable, or a batch: the answer leaves the id out
            request = {}
    if is_notification(request):
        if status is not None and 400 <= status <= 599:
            _check_refused_notification(body)
            return None
        if not _is_empty(body):
            raise ProtocolViolation(
                "a notification must get no JSON-RPC response (HTTP 202, empty body)",
                code=INVALID_REQUEST,
                case="negative-notification-answered",
            )
        if status is not None and status != 202:
            raise _fail("negative-wrong-http-status", f"an accepted notification is answered 202, got HTTP {status}")
        return None
    if _is_empty(body):
        raise _fail("negative-response-unparsable", "a request needs a JSON-RPC response, the body is empty")
    media = media_type(normalize_headers(headers)) if headers is not None else None
    if is_event_stream(media):
        return _validate_stream(body, request, status, era)
    response = parse_message(body, case="negative-response-unparsable", code=INVALID_REQUEST)
    if not isinstance(response, dict):
        raise _fail("negative-response-unparsable", f"a response must be one JSON object, got {type(response).__name__}")
    if headers is not None:
        _check_content_type(media)
    _check_envelope(response, request, status, era, id_case="negative-id-mismatch")
    return response


def _check_refused_notification(body: Any) -> None:
    """A refused notification: an error status, and a body that is empty or an id-less JSON-RPC error."""
    if _is_empty(body):
        return
    try:
        message = parse_message(body)
    except ProtocolViolation:
        return  # a plain-text error page of a refusing server is not a JSON-RPC response
    if isinstance(message, dict) and ("id" in message or "result" in message):
        raise ProtocolViolation("a refused notification may carry an error response without an id, never a result or an id",
                                code=INVALID_REQUEST, case="negative-notification-answered")


def _check_envelope(response: dict[str, Any], request: Any, status: int | None, era: str, *, id_case: str) -> None:
    """jsonrpc, result XOR error, id (value and JSON type), error shape and data, HTTP status."""
    if response.get("jsonrpc", _MISSING) != "2.0" or not isinstance(response.get("jsonrpc"), str):
        raise _fail("negative-jsonrpc-version", f'response jsonrpc must be exactly "2.0", got {short_repr(response.get("jsonrpc"))}')
    has_result, has_error = "result" in response, "error" in response
    if has_result == has_error:
        which = "both result and error" if has_result else "neither result nor error"
        raise _fail("negative-result-and-error", f"a response carries exactly one of result and error, got {which}")
    actual = response.get("id", _MISSING)
    if actual is None and isinstance(request, dict):
        raise _fail(id_case, "response id is null: the schemas' RequestId is a string or an integer; an id that "
                             "could not be read is left out")
    if isinstance(request, dict):
        error_code = response["error"].get("code") if has_error and isinstance(response["error"], dict) else None
        if "id" not in request:  # the request's id could not be read
            if actual is not _MISSING:
                raise _fail(id_case, f"response id {actual!r} answers a request whose id could not be read (leave it out)")
        elif actual is _MISSING and error_code in (PARSE_ERROR, INVALID_REQUEST):
            pass  # a server that refuses the envelope may not trust the id it holds (basic/index.mdx § Error Responses)
        elif actual is _MISSING or not same_json_value(actual, request["id"]):
            raise _fail(
                id_case,
                f"response id {short_repr(None if actual is _MISSING else actual)} does not equal request id {short_repr(request['id'])} "
                "in value and JSON type",
            )
    if has_error:
        error = response["error"]
        if not isinstance(error, dict):
            raise _fail("negative-error-shape", "error must be an object")
        code = error.get("code")
        if not is_json_integer(code):
            raise _fail("negative-error-shape", f"error.code must be an integer, got {short_repr(code)}")
        if not isinstance(error.get("message"), str):
            raise _fail("negative-error-shape", f"error.message must be a string, got {short_repr(error.get('message'))}")
        if era == "modern":
            _check_error_data(error)
        expected_status = http_status_for_code(code)
        if (status is not None and era == "modern" and expected_status is not None and status != expected_status
                and (code in MANDATED_HTTP_STATUS or enforced("course-error-status", f"error {code} travelled with HTTP {status}"))):
            raise _fail(
                "negative-wrong-http-status",
                f"protocol error {code} must travel with HTTP {expected_status}, got HTTP {status}",
            )
    elif status is not None and status != 200:
        raise _fail("negative-wrong-http-status", f"a successful result travels with HTTP 200, got HTTP {status}")


def _validate_stream(body: Any, request: Any, status: int | None, era: str) -> dict[str, Any]:
    """An SSE answer: related notifications, then the one response for this request.

    The HTTP status of a stream is 200 whatever the response inside says, so the error/status
    table does not apply to events. A 2026-07-28 stream carries no server-to-client requests,
    and a progress notification must carry the request's ``progressToken``.
    """
    if status is not None and status != 200:
        raise _fail("negative-wrong-http-status", f"an event stream travels with HTTP 200, got HTTP {status}")
    if not isinstance(body, (str, bytes, bytearray)):
        raise _fail("negative-response-unparsable",
                    f"an event stream is text; got a parsed {type(body).__name__} under Content-Type text/event-stream")
    events = parse_sse(body)  # not UTF-8: a negative-response-unparsable violation
    params = request.get("params") if isinstance(request, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    response: dict[str, Any] | None = None
    for index, event in enumerate(events):
        if not event["data"].strip():
            continue  # the priming event of a resumable stream: an id (and retry) with empty data, no message
        message = parse_message(event["data"], case="negative-response-unparsable", code=INVALID_REQUEST)
        if not isinstance(message, dict):
            raise _fail("negative-response-unparsable", f"event {index} is not one JSON-RPC message")
        if "method" in message:
            if "id" in message and era == "modern":
                raise _fail("negative-sse-server-request", f"event {index} is a server-to-client request ({_plain(message['method'])})")
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            if message["method"] == "notifications/progress" and (token is None or not same_json_value(params.get("progressToken"), token)):
                raise _fail(
                    "negative-sse-unrelated-notification",
                    f"event {index} reports progress for token {short_repr(params.get('progressToken'))}, the request's is {short_repr(token)}",
                )
            continue
        if response is not None:
            raise _fail("negative-sse-id-mismatch", f"event {index} is a second response in one stream")
        _check_envelope(message, request, None, era, id_case="negative-sse-id-mismatch")
        response = message
    if response is None:
        raise _fail("negative-response-unparsable", "the event stream ended without the JSON-RPC response")
    return response
