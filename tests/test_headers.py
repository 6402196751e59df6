from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.shared.inbound import decode_header_value as sdk_decode
from mcp.shared.inbound import encode_header_value as sdk_encode

from mcplab import (
    ProtocolViolation,
    content_codings,
    decode_header_value,
    encode_header_value,
    normalize_headers,
    single_header,
)


def test_spec_examples():
    assert encode_header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert encode_header_value(" padded ") == "=?base64?IHBhZGRlZCA=?="
    assert encode_header_value("read_stock") == "read_stock"
    assert decode_header_value("=?base64?IHBhZGRlZCA=?=") == " padded "


def test_value_that_looks_like_the_sentinel_is_itself_wrapped():
    looks = "=?base64?SGk=?="
    encoded = encode_header_value(looks)
    assert encoded != looks
    assert decode_header_value(encoded) == looks


@pytest.mark.parametrize("bad", ["=?base64?SGk?=", "=?base64?SGl=?=", "=?base64?/w==?=", "=?base64?!!!!?="])
def test_malformed_or_non_canonical_sentinel_decodes_to_none(bad):
    assert decode_header_value(bad) is None


@given(st.text())
def test_sentinel_round_trip_is_exact(value):
    assert decode_header_value(encode_header_value(value)) == value


@given(st.text())
def test_encoding_agrees_with_the_real_sdk(value):
    assert encode_header_value(value) == sdk_encode(value)
    assert sdk_decode(encode_header_value(value)) == value


def test_names_fold_case_values_keep_case():
    headers = normalize_headers([("MCP-Method", "tools/list"), ("mcp-method", "tools/list"), ("X-A", "Vv")])
    assert headers == {"mcp-method": ["tools/list", "tools/list"], "x-a": ["Vv"]}
    assert single_header(headers, "mcp-method") == "tools/list"
    assert normalize_headers({"Mcp-Name": "A"}) == {"mcp-name": ["A"]}


def test_conflicting_duplicates_are_a_header_mismatch():
    headers = normalize_headers([("Mcp-Method", "tools/list"), ("MCP-METHOD", "tools/call")])
    with pytest.raises(ProtocolViolation) as info:
        single_header(headers, "mcp-method")
    assert (info.value.code, info.value.case) == (-32020, "negative-duplicate-header")


def test_header_entries_must_be_pairs():
    with pytest.raises(TypeError):
        normalize_headers([("only-name",)])


@pytest.mark.parametrize(("values", "expected"), [
    ([], []), (["identity"], []), (["gzip"], ["gzip"]), (["GZip, identity"], ["gzip"]),
    (["gzip, gzip"], ["gzip", "gzip"]), (["gzip", "br"], ["gzip", "br"]), ([" , deflate ,"], ["deflate"]),
])
def test_content_codings_split_commas_and_lines_and_drop_identity(values, expected):
    assert content_codings(values) == expected
