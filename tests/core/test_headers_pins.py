"""Pins of the header rules: name folding, -32020 conflicting duplicates, media type, codings, the base64 sentinel."""

from __future__ import annotations

import pytest

from mcplab.errors import ProtocolViolation
from mcplab.headers import (
    METHOD_HEADER,
    NAME_HEADER,
    PROTOCOL_VERSION_HEADER,
    ROUTING_HEADERS,
    content_codings,
    decode_header_value,
    encode_header_value,
    is_raw_header_value_valid,
    media_type,
    normalize_headers,
    single_header,
)


def test_names():
    assert (PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER) == ("mcp-protocol-version", "mcp-method", "mcp-name")
    assert ROUTING_HEADERS == ("mcp-protocol-version", "mcp-method", "mcp-name")


def test_normalize_headers():
    assert normalize_headers(None) == {}
    assert normalize_headers({"Mcp-Method": "Tools/List"}) == {"mcp-method": ["Tools/List"]}
    assert normalize_headers([("A", "1"), ("a", "2"), ["B", "3"]]) == {"a": ["1", "2"], "b": ["3"]}
    assert normalize_headers([]) == {}


@pytest.mark.parametrize("item", [("only-name",), ("a", "b", "c"), 5, None])
def test_normalize_headers_rejects_non_pairs(item):
    with pytest.raises(TypeError) as caught:
        normalize_headers([item])
    assert str(caught.value) == f"header entries must be (name, value) pairs, got {item!r}"


@pytest.mark.parametrize("item", [("a", 1), (b"a", "b"), ("a", None)])
def test_normalize_headers_rejects_non_strings(item):
    with pytest.raises(TypeError) as caught:
        normalize_headers([item])
    assert str(caught.value) == f"header name and value must be strings, got {item!r}"


def test_single_header():
    assert single_header({}, "mcp-method") is None
    assert single_header({"mcp-method": []}, "mcp-method") is None
    assert single_header({"mcp-method": ["a", "a", "a"]}, "mcp-method") == "a"
    with pytest.raises(ProtocolViolation) as caught:
        single_header({"mcp-method": ["a", "a", "b"]}, "mcp-method")
    assert (caught.value.code, caught.value.case) == (-32020, "negative-duplicate-header")
    assert caught.value.message == "conflicting duplicate mcp-method headers: ['a', 'a', 'b']"


@pytest.mark.parametrize("values, expected", [
    ([], None), (["application/json"], "application/json"), (["Application/JSON; charset=utf-8"], "application/json"),
    (["text/html", "application/json"], "application/json, text/html"), ([" text/plain ;q=1", "text/plain"], "text/plain"),
])
def test_media_type(values, expected):
    assert media_type({"content-type": values} if values else {}) == expected


@pytest.mark.parametrize("values, expected", [
    ([], []), (["identity"], []), (["gzip"], ["gzip"]), (["GZip, identity,, br"], ["gzip", "br"]), (["gzip", " gzip "], ["gzip", "gzip"]),
    (["Identity"], []), ([""], []),
])
def test_content_codings(values, expected):
    assert content_codings(values) == expected


@pytest.mark.parametrize("value, encoded", [
    ("read_stock", "read_stock"), ("", ""), ("a b", "a b"), ("~!", "~!"),
    (" a", "=?base64?IGE=?="), ("a\t", "=?base64?YQk=?="), ("café", "=?base64?Y2Fmw6k=?="), ("a\nb", "=?base64?YQpi?="),
    ("=?base64?YQ==?=", "=?base64?PT9iYXNlNjQ/WVE9PT89?="), ("\x7f", "=?base64?fw==?="),
])
def test_encode_and_decode(value, encoded):
    assert encode_header_value(value) == encoded
    assert decode_header_value(encoded) == value


@pytest.mark.parametrize("value", ["=?base64?***?=", "=?base64?YQ?=", "=?base64?YR==?=", "=?base64?/w==?=", "=?base64? YQ==?="])
def test_a_malformed_sentinel_decodes_to_none(value):
    assert decode_header_value(value) is None


def test_decode_returns_the_raw_value_itself():
    raw = "plain"
    assert decode_header_value(raw) is raw
    assert decode_header_value("=?base64?YQ==") == "=?base64?YQ=="  # no closing ?=: not a sentinel
    assert decode_header_value("=?base64??=") == ""
    assert decode_header_value("=?base64?YQo=?=") == "a\n"


@pytest.mark.parametrize("value, valid", [("abc", True), ("", True), ("a b", True), (" a", False), ("a ", False), ("\ta", False),
                                          ("é", False), ("a\x7f", False), ("a\x1f", False)])
def test_is_raw_header_value_valid(value, valid):
    assert is_raw_header_value_valid(value) is valid


@pytest.mark.parametrize("value", ["X", "Xray", "tax", "XX \tXX"[:2]])
def test_only_space_and_tab_count_as_edge_whitespace(value):
    assert is_raw_header_value_valid(value) is True
    assert encode_header_value(value) == value


def test_media_type_drops_every_parameter():
    assert media_type({"content-type": ["text/event-stream; charset=utf-8; x=y"]}) == "text/event-stream"


@pytest.mark.parametrize("value, message", [
    ("a\ud800b", "a value with a lone surrogate has no UTF-8 form and cannot travel in a header"),
    (5, "a header value is a string, got int"),
    (None, "a header value is a string, got NoneType"),
    (b"x", "a header value is a string, got bytes"),
])
def test_encode_header_value_refusals_are_violations(value, message):
    """Issue 15: validators raise only ProtocolViolation (no UnicodeEncodeError, no AttributeError)."""
    with pytest.raises(ProtocolViolation) as caught:
        encode_header_value(value)
    assert (caught.value.message, caught.value.code, caught.value.case) == (message, -32602, "negative-invalid-params")
