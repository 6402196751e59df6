from __future__ import annotations

import pytest

from mcplab import ProtocolViolation, validate_response

REQ = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
NOTE = {"jsonrpc": "2.0", "method": "notifications/dev.mcplab/course-event"}


def case_of(body, request=REQ, status=None, era="modern") -> str:
    with pytest.raises(ProtocolViolation) as info:
        validate_response(body, request, status=status, era=era)
    return info.value.case


def ok(id=1, **extra):
    return {"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "tools": []}, **extra}


DATA = {-32021: {"requiredCapabilities": {"elicitation": {}}}, -32022: {"supported": ["2026-07-28"], "requested": "2099-01-01"}}


def err(code=-32020, id=1):
    error = {"code": code, "message": "x"}
    if code in DATA:
        error["data"] = DATA[code]
    return {"jsonrpc": "2.0", "id": id, "error": error}


def test_valid_responses():
    assert validate_response(ok(), REQ, status=200)["id"] == 1
    assert validate_response(b'{"jsonrpc":"2.0","id":1,"result":{}}', REQ)["result"] == {}
    assert validate_response(err(), REQ, status=400)["error"]["code"] == -32020
    assert validate_response(err(-32601), REQ, status=404)


@pytest.mark.parametrize("version", ["2.1", "1.0", 2.0, None])
def test_jsonrpc_must_be_exactly_2_0(version):
    assert case_of({**ok(), "jsonrpc": version}) == "negative-jsonrpc-version"


@pytest.mark.parametrize("id", [2, "1", True, None, 1.0])
def test_id_equal_in_value_and_json_type(id):
    assert case_of(ok(id=id)) == "negative-id-mismatch"


def test_result_xor_error():
    assert case_of({**ok(), "error": {"code": 1, "message": "m"}}) == "negative-result-and-error"
    assert case_of({"jsonrpc": "2.0", "id": 1}) == "negative-result-and-error"


@pytest.mark.parametrize("error", [{"code": "-32602", "message": "m"}, {"code": 1.5, "message": "m"}, {"code": True, "message": "m"},
                                   {"code": -32602, "message": 42}, {"code": -32602}, "boom"])
def test_error_shape(error):
    assert case_of({"jsonrpc": "2.0", "id": 1, "error": error}) == "negative-error-shape"


@pytest.mark.parametrize("code, status", [(-32020, 500), (-32021, 200), (-32022, 404), (-32602, 500), (-32600, 200), (-32700, 500), (-32601, 400)])
def test_known_protocol_errors_need_their_http_status(code, status):
    assert case_of(err(code), status=status) == "negative-wrong-http-status"


def test_success_needs_200_and_legacy_errors_may_be_200():
    assert case_of(ok(), status=202) == "negative-wrong-http-status"
    assert validate_response(err(-32602), REQ, status=200, era="legacy")


def test_notifications_get_202_and_no_body():
    assert validate_response(None, NOTE, status=202) is None
    assert validate_response(b"", NOTE, status=202) is None
    assert case_of({"jsonrpc": "2.0", "id": None, "result": None}, NOTE, status=200) == "negative-notification-answered"
    assert case_of(b"null", NOTE, status=200) == "negative-notification-answered"
    assert case_of(None, NOTE, status=200) == "negative-wrong-http-status"


def test_unparsable_or_empty_response():
    assert case_of(b"<html>502</html>") == "negative-response-unparsable"
    assert case_of(None) == "negative-response-unparsable"
    assert case_of([ok()]) == "negative-response-unparsable"


@pytest.mark.parametrize("code, data", [(-32022, None), (-32022, {"supported": [], "requested": "x"}), (-32022, {"supported": ["a"]}),
                                        (-32021, None), (-32021, {"requiredCapabilities": {}}), (-32021, {"required": {"a": {}}})])
def test_modern_errors_carry_their_data(code, data):
    body = err(code)
    body["error"].pop("data")
    if data is not None:
        body["error"]["data"] = data
    assert case_of(body, status=400) == "negative-error-data"


def test_content_type_is_checked_when_headers_are_given():
    assert validate_response(ok(), REQ, headers=[("Content-Type", "application/json; charset=utf-8")])
    with pytest.raises(ProtocolViolation) as info:
        validate_response(ok(), REQ, headers={"content-type": "text/html"})
    assert info.value.case == "negative-content-type"
    with pytest.raises(ProtocolViolation) as info:
        validate_response(ok(), REQ, headers=[])
    assert info.value.case == "negative-content-type"


def test_raw_requests_are_parsed_for_the_id_and_notification_checks():
    assert case_of(b'{"jsonrpc":"2.0","result":1}', b'{"jsonrpc":"2.0","method":"notifications/x"}', status=200) == "negative-notification-answered"
    assert case_of(ok(id=2), b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}') == "negative-id-mismatch"
    # an unreadable request (or a batch) is answered without an id: the schemas' RequestId cannot be null
    no_id = {k: v for k, v in err(-32700).items() if k != "id"}
    assert validate_response(no_id, b"{not json", status=400)
    assert case_of(err(-32700, id=None), b"{not json", status=400) == "negative-id-mismatch"
    assert case_of(err(-32700, id=1), b"{not json", status=400) == "negative-id-mismatch"
    assert validate_response({**no_id, "error": {"code": -32600, "message": "batch"}}, b"[]", status=400)


def test_an_envelope_error_may_leave_out_an_id_it_did_not_trust():
    # regression: a server refusing jsonrpc "1.0" with id 1 may answer without the id (never with null)
    no_id = {k: v for k, v in err(-32600).items() if k != "id"}
    request = {"jsonrpc": "1.0", "id": 1, "method": "tools/list"}
    assert validate_response(no_id, request, status=400)
    assert case_of(err(-32600, id=None), request, status=400) == "negative-id-mismatch"
    assert case_of({k: v for k, v in err(-32602).items() if k != "id"}, request, status=400) == "negative-id-mismatch"


def test_a_refused_notification_may_carry_an_id_less_error():
    note = {"jsonrpc": "2.0", "method": "notifications/x"}
    refused = {"jsonrpc": "2.0", "error": {"code": -32601, "message": "unknown notification"}}
    assert validate_response(refused, note, status=400) is None
    assert validate_response(None, note, status=400) is None
    assert case_of({**refused, "id": None}, note, status=400) == "negative-notification-answered"
    assert case_of({"jsonrpc": "2.0", "id": None, "result": None}, note, status=200) == "negative-notification-answered"


def test_legacy_errors_need_no_modern_data():
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "unsupported"}}
    assert validate_response(body, REQ, status=200, era="legacy")


def test_conflicting_content_types_are_refused():
    with pytest.raises(ProtocolViolation) as info:
        validate_response(ok(), REQ, headers=[("Content-Type", "application/json"), ("content-type", "text/html")])
    assert info.value.case == "negative-content-type"
