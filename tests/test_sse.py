from __future__ import annotations

import json

import pytest

from mcplab import ProtocolViolation, is_event_stream, parse_sse, validate_response

SSE = [("Content-Type", "text/event-stream")]
REQ = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": "p"}, "name": "t"}}
RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}


def stream(*messages, newline="\n") -> str:
    return "".join(f"event: message{newline}data: {json.dumps(m)}{newline}{newline}" for m in messages)


def test_parser_follows_the_event_stream_rules():
    text = "\ufeff: keep-alive\r\ndata: a\rdata: b\r\nid: 7\n\nevent: custom\ndata:c\nretry: 10\n\ndata: cut off"
    assert parse_sse(text) == [
        {"event": "message", "data": "a\nb", "id": "7", "retry": None},
        {"event": "custom", "data": "c", "id": "7", "retry": 10},
    ]
    assert parse_sse(b"data: x\n\n") == [{"event": "message", "data": "x", "id": None, "retry": None}]
    assert parse_sse("event: empty\n\n") == []


def test_media_type_detection():
    assert is_event_stream("text/event-stream; charset=utf-8") and not is_event_stream("application/json")
    assert not is_event_stream(None)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_related_stream_yields_its_response(newline):
    body = stream(PROGRESS, RESULT, newline=newline)
    assert validate_response(body, REQ, status=200, headers=SSE) == RESULT


def test_a_priming_event_with_empty_data_is_not_a_message():
    # A resumable server opens its stream with an id (and retry) and empty data, then answers.
    body = "id: ev-0\nretry: 1000\ndata: \n\n" + stream(PROGRESS, RESULT)
    assert validate_response(body, REQ, status=200, headers=SSE) == RESULT
    assert case_of("id: ev-0\ndata:\n\n") == "negative-response-unparsable"  # priming alone is no answer


def case_of(body, request=REQ, status=200, era="modern") -> str:
    with pytest.raises(ProtocolViolation) as info:
        validate_response(body, request, status=status, headers=SSE, era=era)
    return info.value.case


def test_stream_faults():
    assert case_of(stream(PROGRESS, {**RESULT, "id": 2})) == "negative-sse-id-mismatch"
    assert case_of(stream(RESULT, RESULT)) == "negative-sse-id-mismatch"
    assert case_of(stream(PROGRESS)) == "negative-response-unparsable"
    assert case_of("data: {not json\n\n") == "negative-response-unparsable"
    assert case_of(b"data: \xff\n\n") == "negative-response-unparsable"
    assert case_of(stream(RESULT), status=400) == "negative-wrong-http-status"
    other = {**PROGRESS, "params": {"progressToken": "q", "progress": 1}}
    assert case_of(stream(other, RESULT)) == "negative-sse-unrelated-notification"
    ask = {"jsonrpc": "2.0", "id": "s1", "method": "roots/list"}
    assert case_of(stream(ask, RESULT)) == "negative-sse-server-request"
    assert validate_response(stream(ask, RESULT), REQ, status=200, headers=SSE, era="legacy") == RESULT


def test_an_error_inside_a_stream_is_judged_without_the_http_table():
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad arguments"}}
    assert validate_response(stream(error), REQ, status=200, headers=SSE)["error"]["code"] == -32602
    assert case_of(stream({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}})) == "negative-error-shape"
