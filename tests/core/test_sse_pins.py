"""Pins of the event-stream parser: WHATWG line endings, BOM, comments, field parsing, dispatch on blank lines."""

from __future__ import annotations

import pytest

from mcplab.errors import ProtocolViolation
from mcplab.sse import is_event_stream, parse_sse


def event(data, name="message", id=None, retry=None):
    return {"event": name, "data": data, "id": id, "retry": retry}


@pytest.mark.parametrize("media, expected", [
    ("text/event-stream", True), ("Text/Event-Stream ; charset=utf-8", True), (" text/event-stream", True),
    ("text/event-stream;x=;y", True), (None, False), ("application/json", False), ("text/event-streams", False),
    ("", False),
])
def test_is_event_stream(media, expected):
    assert is_event_stream(media) is expected


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings(newline):
    text = newline.join(["data: a", "data: b", "", "data: c", "", ""])
    assert parse_sse(text) == [event("a\nb"), event("c")]


def test_bytes_and_bom():
    assert parse_sse("\ufeffdata: x\n\n".encode()) == [event("x")]
    assert parse_sse(bytearray(b"data: y\n\n")) == [event("y")]
    assert parse_sse("\ufeff\ufeffdata: z\n\n") == []  # only one BOM is dropped; the second makes an unknown field


@pytest.mark.parametrize("body, message", [
    (b"data: \xff\n\n", "the event stream is not UTF-8 (byte 6)"),
    (bytearray(b"\xc3"), "the event stream is not UTF-8 (byte 0)"),
    (5, "an event stream is text, got int"),
    (None, "an event stream is text, got NoneType"),
])
def test_undecodable_or_non_text_bodies_are_violations(body, message):
    """Issue 15: validators raise only ProtocolViolation (not UnicodeDecodeError) on any input."""
    with pytest.raises(ProtocolViolation) as caught:
        parse_sse(body)
    error = caught.value
    assert (error.message, error.code, error.case) == (message, -32600, "negative-response-unparsable")


def test_fields():
    text = "event: progress\nid: 7\nretry: 250\ndata:no-space\ndata:  two spaces\n\n"
    assert parse_sse(text) == [event("no-space\n two spaces", "progress", "7", 250)]


def test_comments_unknown_fields_and_field_without_colon():
    text = ": keep-alive\nfoo: bar\ndata\n\n"
    assert parse_sse(text) == [event("")]  # "data" with no colon is a data line with an empty value


def test_event_and_retry_reset_per_event_but_id_persists():
    text = "event: a\nid: 1\nretry: 5\ndata: x\n\ndata: y\n\n"
    assert parse_sse(text) == [event("x", "a", "1", 5), event("y", "message", "1", None)]


def test_invalid_id_and_retry_are_ignored():
    text = "id: 1\ndata: x\n\nid: a\0b\nretry: 5s\ndata: y\n\n"
    assert parse_sse(text) == [event("x", id="1"), event("y", id="1")]


def test_an_event_without_data_is_not_dispatched_and_its_fields_reset():
    assert parse_sse("event: a\nretry: 3\n\ndata: x\n\n") == [event("x")]


def test_an_unterminated_event_is_not_dispatched():
    assert parse_sse("data: x\n\ndata: cut off") == [event("x")]
    assert parse_sse("") == []


def test_empty_event_name_means_message():
    assert parse_sse("event:\ndata: x\n\n") == [event("x")]


def test_value_colons_are_kept():
    assert parse_sse('data: {"a": "b:c"}\n\n') == [event('{"a": "b:c"}')]
