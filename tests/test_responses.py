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


def err(code=-32020, id=1):
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": "x"}}


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
