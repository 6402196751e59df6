"""Pins of ``validate_response``: every envelope, status and stream rule answers -32600 with its stable case name.

Messages are checked by their leading words; the null-id rules are left to their own tests.
"""

from __future__ import annotations

import json

import pytest

from mcplab.errors import ProtocolViolation
from mcplab.responses import is_notification, validate_response

REQ = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {"progressToken": "p1"}}}
NOTE = {"jsonrpc": "2.0", "method": "notifications/initialized"}
OK = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}}
JSON_HEADERS = [("Content-Type", "application/json")]
SSE_HEADERS = [("Content-Type", "text/event-stream")]


def err(code, message="m", data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": 1, "error": error}


def fault(body, request=REQ, **kwargs) -> ProtocolViolation:
    with pytest.raises(ProtocolViolation) as caught:
        validate_response(body, request, **kwargs)
    assert caught.value.code == -32600
    return caught.value


def check(case, start, body, request=REQ, **kwargs):
    error = fault(body, request, **kwargs)
    assert error.case == case, (error.case, error.message)
    assert error.message.startswith(start), error.message


def sse(*messages, raw=None) -> str:
    if raw is not None:
        return raw
    return "".join(f"data: {json.dumps(m)}\n\n" for m in messages)


def test_is_notification():
    assert is_notification(NOTE) is True
    assert is_notification(REQ) is False
    assert is_notification({"jsonrpc": "2.0"}) is False
    assert is_notification([NOTE]) is False


# --- notifications -----------------------------------------------------------------------------

@pytest.mark.parametrize("body", [None, b"", "  \n", bytearray(b" ")])
def test_a_notification_gets_an_empty_202(body):
    assert validate_response(body, NOTE, status=202) is None
    assert validate_response(body, NOTE) is None


def test_an_answered_notification():
    check("negative-notification-answered", "a notification must get no JSON-RPC response (HTTP 202, empty body)",
          {"jsonrpc": "2.0", "id": None, "result": {}}, NOTE)
    check("negative-notification-answered", "a notification must get no JSON-RPC response", "x", NOTE)


@pytest.mark.parametrize("status", [200, 204, 399, 600])
def test_a_notification_with_another_status(status):
    check("negative-wrong-http-status", f"an accepted notification is answered 202, got HTTP {status}", b"", NOTE, status=status)


REFUSAL = {"jsonrpc": "2.0", "error": {"code": -32600, "message": "not accepted"}}


@pytest.mark.parametrize("status", [400, 403, 599])
@pytest.mark.parametrize("body", [b"", None, REFUSAL, json.dumps(REFUSAL), "Forbidden", b"<html>nope</html>", [REFUSAL]])
def test_a_refused_notification_may_get_an_error_status(status, body):
    """Issue 19: a refused notification gets a 4xx/5xx with an empty body or an id-less JSON-RPC error (transport page)."""
    assert validate_response(body, NOTE, status=status) is None


@pytest.mark.parametrize("body", [{**REFUSAL, "id": None}, {**REFUSAL, "id": 1}, {"jsonrpc": "2.0", "result": {}},
                                  json.dumps({"jsonrpc": "2.0", "id": 3, "error": REFUSAL["error"]})])
def test_a_refused_notification_never_gets_an_id_or_a_result(body):
    error = fault(body, NOTE, status=400)
    assert (error.case, error.message) == (
        "negative-notification-answered",
        "a refused notification may carry an error response without an id, never a result or an id")


def test_a_raw_notification_request_is_recognised():
    assert validate_response(b"", json.dumps(NOTE).encode()) is None


# --- bodies ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [None, b"", " "])
def test_a_request_needs_a_body(body):
    check("negative-response-unparsable", "a request needs a JSON-RPC response, the body is empty", body)


def test_unparsable_and_non_object_bodies():
    check("negative-response-unparsable", "body is not valid JSON", b"{")
    check("negative-response-unparsable", "a response must be one JSON object, got list", b"[1]")
    check("negative-response-unparsable", "a response must be one JSON object, got int", "5")


def test_raw_bodies_and_requests_are_parsed():
    assert validate_response(json.dumps(OK), json.dumps(REQ)) == OK
    assert validate_response(json.dumps(OK).encode(), REQ, status=200, headers=JSON_HEADERS) == OK


def test_no_request_skips_the_id_check():
    assert validate_response({**OK, "id": "other"}) == {**OK, "id": "other"}


def test_content_type_is_checked_when_headers_are_given():
    check("negative-content-type", "a JSON-RPC response body needs Content-Type application/json, got 'text/html'", OK,
          headers=[("Content-Type", "text/html")])
    check("negative-content-type", "a JSON-RPC response body needs Content-Type application/json, got None", OK, headers=[])
    assert validate_response(OK, REQ, headers=[("content-type", "Application/JSON; charset=utf-8")]) == OK


# --- envelope ----------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [None, "1.0", 2.0])
def test_jsonrpc_version(version):
    body = {k: v for k, v in OK.items() if k != "jsonrpc"} if version is None else {**OK, "jsonrpc": version}
    check("negative-jsonrpc-version", f'response jsonrpc must be exactly "2.0", got {version!r}', body)


def test_result_xor_error():
    check("negative-result-and-error", "a response carries exactly one of result and error, got both result and error",
          {**OK, "error": {"code": 1, "message": "m"}})
    check("negative-result-and-error", "a response carries exactly one of result and error, got neither result nor error",
          {"jsonrpc": "2.0", "id": 1})


@pytest.mark.parametrize("response_id", ["1", True, 2, 1.0])
def test_id_must_match_in_value_and_type(response_id):
    check("negative-id-mismatch", f"response id {response_id!r} does not equal request id 1 in value and JSON type",
          {**OK, "id": response_id})


def test_a_missing_id_is_a_mismatch():
    check("negative-id-mismatch", "response id None does not equal request id 1", {k: v for k, v in OK.items() if k != "id"})


@pytest.mark.parametrize("error, start", [
    ("boom", "error must be an object"),
    ({"message": "m"}, "error.code must be an integer, got None"),
    ({"code": "-32600", "message": "m"}, "error.code must be an integer, got '-32600'"),
    ({"code": True, "message": "m"}, "error.code must be an integer, got True"),
    ({"code": -32600}, "error.message must be a string, got None"),
    ({"code": -32600, "message": 5}, "error.message must be a string, got 5"),
])
def test_error_shape(error, start):
    check("negative-error-shape", start, {"jsonrpc": "2.0", "id": 1, "error": error})


@pytest.mark.parametrize("data", [None, {}, {"supported": [], "requested": "x"}, {"supported": "2026-07-28", "requested": "x"},
                                  {"supported": ["2026-07-28", 1], "requested": "x"}, {"supported": ["2026-07-28"]},
                                  {"supported": ["2026-07-28"], "requested": 1}, ["supported"]])
def test_minus_32022_needs_its_data(data):
    check("negative-error-data", "-32022 needs data {supported: [versions], requested: version}", err(-32022, data=data))


@pytest.mark.parametrize("data", [None, {}, {"requiredCapabilities": {}}, {"requiredCapabilities": ["elicitation"]}, "x"])
def test_minus_32021_needs_its_data(data):
    check("negative-error-data", "-32021 needs data {requiredCapabilities: {...}} naming what is missing", err(-32021, data=data))


def test_error_data_accepted_and_legacy_unchecked():
    good = err(-32022, data={"supported": ["2026-07-28"], "requested": "2099-01-01"})
    assert validate_response(good, REQ, status=400) == good
    assert validate_response(err(-32021, data={"requiredCapabilities": {"sampling": {}}}), REQ) is not None
    assert validate_response(err(-32022), REQ, era="legacy") == err(-32022)
    assert validate_response(err(-32021), REQ, era="legacy", status=200) == err(-32021)


@pytest.mark.parametrize("code, expected", [(-32020, 400), (-32600, 400), (-32602, 400), (-32700, 400), (-32601, 404)])
def test_protocol_errors_travel_with_their_status(code, expected):
    body = err(code)
    assert validate_response(body, REQ, status=expected) == body
    check("negative-wrong-http-status", f"protocol error {code} must travel with HTTP {expected}, got HTTP 200", body, status=200)


def test_errors_outside_the_table_and_legacy_take_any_status():
    assert validate_response(err(-32603), REQ, status=500) == err(-32603)
    assert validate_response(err(-32601), REQ, status=200, era="legacy") == err(-32601)
    assert validate_response(err(-32601), REQ) == err(-32601)


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_success_travels_with_200(era):
    assert validate_response(OK, REQ, status=200, era=era) == OK
    check("negative-wrong-http-status", "a successful result travels with HTTP 200, got HTTP 201", OK, status=201, era=era)


def test_an_unknown_era_is_a_caller_error():
    with pytest.raises(ValueError):
        validate_response(OK, REQ, era="future")


# --- event streams -----------------------------------------------------------------------------

def stream(*messages, request=REQ, raw=None, **kwargs):
    return validate_response(sse(*messages, raw=raw), request, headers=SSE_HEADERS, **kwargs)


def check_stream(case, start, *messages, request=REQ, raw=None, **kwargs):
    check(case, start, sse(*messages, raw=raw), request, headers=SSE_HEADERS, **kwargs)


def test_a_stream_with_progress_then_the_response():
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p1", "progress": 1}}
    log = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    assert stream(progress, log, OK, status=200) == OK
    assert validate_response(sse(OK).encode(), REQ, headers=[("Content-Type", "text/event-stream; charset=utf-8")]) == OK


def test_priming_events_are_skipped():
    assert stream(raw="id: 0\nretry: 100\ndata: \n\n" + sse(OK)) == OK


def test_a_stream_status_is_200():
    check_stream("negative-wrong-http-status", "an event stream travels with HTTP 200, got HTTP 400", OK, status=400)


def test_a_stream_that_is_not_utf8():
    check("negative-response-unparsable", "the event stream is not UTF-8", b"data: \xff\n\n", REQ, headers=SSE_HEADERS)


def test_stream_events_must_be_messages():
    check_stream("negative-response-unparsable", "body is not valid JSON", raw="data: {\n\n")
    check_stream("negative-response-unparsable", "event 1 is not one JSON-RPC message", raw="data: \n\ndata: [1]\n\n")
    check_stream("negative-response-unparsable", "the event stream ended without the JSON-RPC response",
                 {"jsonrpc": "2.0", "method": "notifications/message", "params": {}})


def test_server_requests_in_a_modern_stream():
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    check_stream("negative-sse-server-request", "event 0 is a server-to-client request (ping)", ping, OK)
    assert stream(ping, OK, era="legacy") == OK


@pytest.mark.parametrize("params", [{"progressToken": "other"}, {}, "x"])
def test_unrelated_progress(params):
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
    token = params.get("progressToken") if isinstance(params, dict) else None
    check_stream("negative-sse-unrelated-notification", f"event 0 reports progress for token {token!r}, the request's is 'p1'",
                 progress, OK)


def test_progress_without_a_request_token():
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p1"}}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {}}}
    check_stream("negative-sse-unrelated-notification", "event 0 reports progress for token 'p1', the request's is None",
                 progress, OK, request=request)
    typed = {**REQ, "params": {"_meta": {"progressToken": 1}}}
    check_stream("negative-sse-unrelated-notification", "event 0 reports progress", {**progress, "params": {"progressToken": "1"}},
                 OK, request=typed)


def test_one_response_per_stream_with_the_request_id():
    check_stream("negative-sse-id-mismatch", "event 1 is a second response in one stream", OK, OK)
    check_stream("negative-sse-id-mismatch", "response id 2 does not equal request id 1", {**OK, "id": 2})


def test_a_stream_error_response_ignores_the_status_table():
    body = err(-32602)
    assert stream(body, status=200) == body
    check_stream("negative-result-and-error", "a response carries exactly one of result and error", {"jsonrpc": "2.0", "id": 1})


def test_stream_responses_are_judged_in_their_era():
    bare = err(-32022)
    check_stream("negative-error-data", "-32022 needs data", bare)
    assert stream(bare, era="legacy") == bare


def test_a_stream_for_a_request_without_meta_or_without_a_request():
    plain = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert stream(OK, request=plain) == OK
    assert validate_response(sse(OK), None, headers=SSE_HEADERS) == OK
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p1"}}
    check_stream("negative-sse-unrelated-notification", "event 0 reports progress for token 'p1', the request's is None",
                 progress, OK, request=plain)


# --- issue 19: null ids, unreadable request ids, course-only statuses; issue 15: parsed bodies under SSE ----------

NULL_ID = "response id is null: the schemas' RequestId is a string or an integer; an id that could not be read is left out"
PARSE_ERROR = {"code": -32700, "message": "parse error"}


@pytest.mark.parametrize("request_", [REQ, b"{not json", [REQ]])
def test_a_null_response_id_is_never_valid(request_):
    error = fault({"jsonrpc": "2.0", "id": None, "error": PARSE_ERROR}, request_)
    assert (error.case, error.message) == ("negative-id-mismatch", NULL_ID)


@pytest.mark.parametrize("request_", [b"{not json", [REQ], "[]"])
def test_an_unreadable_request_id_is_left_out_of_the_answer(request_):
    answer = {"jsonrpc": "2.0", "error": PARSE_ERROR}
    assert validate_response(answer, request_) == answer
    error = fault({**answer, "id": 3}, request_)
    assert (error.case, error.message) == ("negative-id-mismatch", "response id 3 answers a request whose id could not be read (leave it out)")


def test_course_error_statuses_are_waived_by_the_specification_alone():
    from mcplab.cases import spec_rules_only

    invalid = err(-32602)
    check("negative-wrong-http-status", "protocol error -32602 must travel with HTTP 400, got HTTP 200", invalid, status=200)
    with spec_rules_only() as waived:
        assert validate_response(invalid, REQ, status=200) == invalid
        check("negative-wrong-http-status", "protocol error -32020 must travel with HTTP 400, got HTTP 200", err(-32020), status=200)
        check("negative-wrong-http-status", "protocol error -32601 must travel with HTTP 404, got HTTP 400", err(-32601), status=400)
    assert waived == [("course-error-status", "error -32602 travelled with HTTP 200")]


@pytest.mark.parametrize("body", [{"jsonrpc": "2.0", "id": 1}, [1], 5])
def test_a_parsed_body_under_an_event_stream_type_is_unparsable(body):
    error = fault(body, REQ, headers=SSE_HEADERS)
    assert (error.case, error.message) == (
        "negative-response-unparsable", f"an event stream is text; got a parsed {type(body).__name__} under Content-Type text/event-stream")


@pytest.mark.parametrize("method, shown", [("m" * 200, "m" * 120), (5, "5"), (None, "None")])
def test_a_server_request_in_a_stream_names_its_method(method, shown):
    body = sse({"jsonrpc": "2.0", "id": 9, "method": method})
    error = fault(body, REQ, headers=SSE_HEADERS)
    assert (error.case, error.message) == ("negative-sse-server-request", f"event 0 is a server-to-client request ({shown})")
