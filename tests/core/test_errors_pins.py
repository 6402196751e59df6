"""Pins of the error tree: JSON-RPC codes, the modern HTTP status table, ProtocolViolation's wire error."""

from __future__ import annotations

import pytest

from mcplab import errors
from mcplab.errors import EvidenceError, MCPLabError, ProtocolViolation, TranscriptError, http_status_for_code


def test_codes():
    assert (errors.PARSE_ERROR, errors.INVALID_REQUEST, errors.METHOD_NOT_FOUND, errors.INVALID_PARAMS, errors.INTERNAL_ERROR) == (
        -32700, -32600, -32601, -32602, -32603)
    assert (errors.HEADER_MISMATCH, errors.MISSING_REQUIRED_CLIENT_CAPABILITY, errors.UNSUPPORTED_PROTOCOL_VERSION) == (-32020, -32021, -32022)
    assert errors.MODERN_ERROR_CODES == {-32020, -32021, -32022}


@pytest.mark.parametrize("code, status", [(-32020, 400), (-32021, 400), (-32022, 400), (-32602, 400), (-32600, 400),
                                          (-32700, 400), (-32601, 404), (-32603, None), (0, None), (400, None)])
def test_http_status_for_code(code, status):
    assert http_status_for_code(code) == status


def test_protocol_violation():
    v = ProtocolViolation("bad header", code=-32020, case="negative-header-body-mismatch")
    assert isinstance(v, MCPLabError) and isinstance(v, Exception)
    assert (v.message, v.code, v.case, v.data, str(v), v.args) == ("bad header", -32020, "negative-header-body-mismatch", None,
                                                                  "bad header", ("bad header",))
    assert v.http_status == 400
    assert v.to_error() == {"code": -32020, "message": "bad header"}
    assert repr(v) == "ProtocolViolation(code=-32020, case='negative-header-body-mismatch', message='bad header')"


def test_protocol_violation_with_data():
    data = {"supported": ["2026-07-28"], "requested": "x"}
    v = ProtocolViolation("unsupported", code=-32022, case="negative-unsupported-version", data=data)
    assert v.to_error() == {"code": -32022, "message": "unsupported", "data": data}
    assert v.data is data
    assert ProtocolViolation("m", code=-32601, case="c").http_status == 404
    assert ProtocolViolation("m", code=-32603, case="c").http_status is None
    # falsy data is still data
    assert ProtocolViolation("m", code=-32602, case="c", data={}).to_error() == {"code": -32602, "message": "m", "data": {}}


def test_transcript_error_names_the_file():
    e = TranscriptError("cases/x.json", "missing 'expect'")
    assert isinstance(e, MCPLabError) and isinstance(e, ValueError)
    assert (str(e), e.source, e.problem) == ("cases/x.json: missing 'expect'", "cases/x.json", "missing 'expect'")


def test_evidence_error_is_a_value_error():
    assert issubclass(EvidenceError, MCPLabError) and issubclass(EvidenceError, ValueError)
