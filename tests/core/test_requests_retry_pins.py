"""Pins of the MRTR retry rules: a retry repeats its request under a new id, carries the server's requestState
verbatim and answers exactly the input requests asked; every fault is -32602 ``negative-retry-mismatch``."""

from __future__ import annotations

import json

import pytest

from mcplab.errors import ProtocolViolation
from mcplab.requests import ELICITATION_ACTIONS, build_request, reject_unsolicited_retry, validate_retry

PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"


ELICIT = {"method": "elicitation/create", "params": {"message": "ok?", "requestedSchema": {"type": "object", "required": ["why"]}}}


def rounds(**answers):
    original, _ = build_request("tools/call", {"name": "commit", "arguments": {"n": 1}}, id=1)
    asked = {"resultType": "input_required", "requestState": "S", "inputRequests": {"approval": ELICIT}}
    retry, _ = build_request("tools/call", {"name": "commit", "arguments": {"n": 1}, "requestState": "S",
                                            "inputResponses": answers or {"approval": {"action": "accept", "content": {"why": "x"}}}}, id=2)
    return original, asked, retry


def retry_fault(original, asked, retry, **kwargs) -> str:
    with pytest.raises(ProtocolViolation) as caught:
        validate_retry(original, asked, retry, **kwargs)
    assert (caught.value.code, caught.value.case) == (-32602, "negative-retry-mismatch")
    return caught.value.message


def test_a_good_retry_is_returned():
    original, asked, retry = rounds()
    assert validate_retry(original, asked, retry) == retry
    assert validate_retry(json.dumps(original), asked, json.dumps(retry).encode()) == retry
    assert ELICITATION_ACTIONS == {"accept", "decline", "cancel"}


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_need_no_content(action):
    original, asked, retry = rounds(approval={"action": action})
    assert validate_retry(original, asked, retry) == retry


def test_retry_shape_errors_are_violations():
    """Issue 15: validators raise only ProtocolViolation, so a wrong shape is a retry mismatch, not a TypeError."""
    original, asked, retry = rounds()
    needs = "validate_retry needs the original request object and the input_required result object"
    assert retry_fault([original], asked, retry) == needs
    assert retry_fault(original, [asked], retry) == needs
    assert retry_fault(original, {**asked, "inputRequests": ["approval"]}, retry) == (
        "the input_required result's inputRequests is not an object")


def test_retry_envelope_is_checked():
    original, asked, retry = rounds()
    with pytest.raises(ProtocolViolation) as caught:
        validate_retry(original, asked, {**retry, "jsonrpc": "1.0"})
    assert caught.value.case == "negative-malformed-envelope"


def test_retry_needs_an_id():
    original, asked, retry = rounds()
    del retry["id"]
    assert retry_fault(original, asked, retry) == "a retry is a request: it needs an id"


def test_retry_needs_a_new_id():
    original, asked, retry = rounds()
    assert retry_fault(original, asked, {**retry, "id": 1}).startswith("a retry needs a new JSON-RPC id; 1 was already used")
    assert retry_fault(original, asked, retry, earlier_ids=[5, 2]).startswith("a retry needs a new JSON-RPC id; 2 was")


def test_a_same_valued_id_of_another_type_is_new():
    original, asked, retry = rounds()
    assert validate_retry(original, asked, {**retry, "id": "1"})["id"] == "1"


def test_retry_must_repeat_the_method_and_params():
    original, asked, retry = rounds()
    assert retry_fault(original, asked, {**retry, "method": "prompts/get"}) == \
        "the retry calls 'prompts/get', the original request was 'tools/call'"
    changed = {**retry, "params": {**retry["params"], "arguments": {"n": 2}, "extra": 1}}
    assert retry_fault(original, asked, changed) == "the retry changes the original request's params: arguments, extra"
    dropped = {**retry, "params": {k: v for k, v in retry["params"].items() if k != "name"}}
    assert retry_fault(original, asked, dropped) == "the retry changes the original request's params: name"
    typed = {**retry, "params": {**retry["params"], "arguments": {"n": True}}}
    assert retry_fault(original, asked, typed) == "the retry changes the original request's params: arguments"


def test_retry_may_refresh_meta_but_not_version_or_capabilities():
    original, asked, retry = rounds()
    meta = retry["params"]["_meta"]
    refreshed = {**retry, "params": {**retry["params"], "_meta": {**meta, INFO: {"name": "n"}}}}
    assert validate_retry(original, asked, refreshed) == refreshed
    for key, value in ((PV, "2099-01-01"), (CAPS, {"x": {}})):
        bad = {**retry, "params": {**retry["params"], "_meta": {**meta, key: value}}}
        assert retry_fault(original, asked, bad) == f"the retry changes params._meta[{key!r}]"


def test_request_state_verbatim_or_absent():
    original, asked, retry = rounds()
    assert retry_fault(original, asked, {**retry, "params": {**retry["params"], "requestState": "T"}}) == \
        "the retry does not carry the server's requestState verbatim"
    without = {k: v for k, v in asked.items() if k != "requestState"}
    assert retry_fault(original, without, retry) == "the retry carries a requestState the server never sent"
    stripped = {**retry, "params": {k: v for k, v in retry["params"].items() if k != "requestState"}}
    assert validate_retry(original, without, stripped) == stripped


def test_input_responses_must_answer_exactly():
    original, asked, retry = rounds()
    no_answers = {**retry, "params": {k: v for k, v in retry["params"].items() if k != "inputResponses"}}
    assert retry_fault(original, asked, no_answers) == "inputResponses must be an object answering every input request"
    listed = {**retry, "params": {**retry["params"], "inputResponses": []}}
    assert retry_fault(original, asked, listed) == "inputResponses must be an object answering every input request"
    extra = {**retry, "params": {**retry["params"], "inputResponses": {**retry["params"]["inputResponses"], "b": {}, "a": {}}}}
    assert retry_fault(original, asked, extra) == "the retry answers input requests the server never made: ['a', 'b']"
    two = {**asked, "inputRequests": {"approval": ELICIT, "roots": {"method": "roots/list"}}}
    assert retry_fault(original, two, retry) == "the retry leaves the input request 'roots' unanswered"


def test_state_only_input_required_needs_no_answers():
    original, asked, retry = rounds()
    state_only = {"resultType": "input_required", "requestState": "S"}
    bare = {**retry, "params": {k: v for k, v in retry["params"].items() if k != "inputResponses"}}
    assert validate_retry(original, state_only, bare) == bare
    assert validate_retry(original, {**state_only, "inputRequests": None}, bare) == bare


@pytest.mark.parametrize("answer, message", [
    ("yes", "inputResponses['approval'] must be an object"),
    ({"action": "maybe"}, "inputResponses['approval'].action must be one of accept, cancel, decline, got 'maybe'"),
    ({}, "inputResponses['approval'].action must be one of accept, cancel, decline, got None"),
    ({"action": "accept", "content": "why"}, "inputResponses['approval'].content must be an object"),
    ({"action": "accept", "content": {}}, "inputResponses['approval'] accepts without the required fields ['why']"),
    ({"action": "accept"}, "inputResponses['approval'] accepts without the required fields ['why']"),
])
def test_elicitation_answers(answer, message):
    assert retry_fault(*rounds(approval=answer)) == message


def test_non_elicitation_answers_need_only_be_objects():
    original, asked, retry = rounds(approval={"roots": []})
    roots = {**asked, "inputRequests": {"approval": {"method": "roots/list"}}}
    assert validate_retry(original, roots, retry) == retry
    odd = {**asked, "inputRequests": {"approval": "not a request"}}
    assert validate_retry(original, odd, retry) == retry


@pytest.mark.parametrize("params", [None, "x", {"requestedSchema": "x"}, {"requestedSchema": {"required": "why"}}])
def test_an_elicitation_without_a_required_list_accepts_anything(params):
    request = {"method": "elicitation/create", "params": params}
    original, asked, retry = rounds(approval={"action": "accept"})
    assert validate_retry(original, {**asked, "inputRequests": {"approval": request}}, retry) == retry


def test_decline_skips_required_fields():
    original, asked, retry = rounds(approval={"action": "decline", "content": {}})
    assert validate_retry(original, asked, retry) == retry


def test_reject_unsolicited_retry():
    reject_unsolicited_retry({"params": {"name": "x"}})
    reject_unsolicited_retry({"params": "odd"})
    reject_unsolicited_retry({})
    with pytest.raises(ProtocolViolation) as caught:
        reject_unsolicited_retry({"params": {"requestState": "S", "inputResponses": {}}})
    assert (caught.value.code, caught.value.case) == (-32602, "negative-retry-mismatch")
    assert caught.value.message == "the request carries inputResponses, requestState but answers no input_required result"
    with pytest.raises(ProtocolViolation, match="^the request carries requestState but"):
        reject_unsolicited_retry({"params": {"requestState": "S"}})



def test_retry_shape_error_messages():
    original, asked, retry = rounds()
    assert retry_fault(None, asked, retry) == "validate_retry needs the original request object and the input_required result object"
    assert retry_fault(original, None, retry) == "validate_retry needs the original request object and the input_required result object"
    assert retry_fault(original, {**asked, "inputRequests": "x"}, retry) == "the input_required result's inputRequests is not an object"


def test_a_retry_of_a_request_without_params_or_with_odd_meta():
    original = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    retry = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"requestState": "S"}}
    assert validate_retry(original, {"requestState": "S"}, retry) == retry
    original = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": 5}}
    retry = {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": 5, "requestState": "S"}}
    assert validate_retry(original, {"requestState": "S"}, retry) == retry
