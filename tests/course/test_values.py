"""Values across the sandbox wall: tagged JSON that keeps tuples, bytes and odd floats, with limits."""

from __future__ import annotations

import math

import pytest

from mcplab.course.values import MAX_DEPTH, Opaque, decode, dumps, encode, loads, same


@pytest.mark.parametrize("value", [
    None, True, 0, -7, 2**80, 1.5, "text", "\ud800", b"\x00\xffbytes", ("a", 1), ["a", ("b",)], {"k": [1, 2]},
    {1: "int key"}, {"$tuple": "looks like a tag"}, {(1, 2): "tuple key"}, {"a": {"b": (b"x", None)}},
])
def test_round_trip_keeps_the_python_type(value):
    got = loads(dumps(value))
    assert same(got, value) and repr(got) == repr(value)


def test_floats_json_cannot_spell_travel_as_tags():
    got = loads(dumps([math.nan, math.inf, -math.inf]))
    assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf]


def test_other_objects_become_opaque_and_equal_nothing():
    got = loads(dumps({"f": object()}))["f"]
    assert isinstance(got, Opaque) and got.type_name == "object" and got != got and not same(got, got)


def test_deep_nesting_is_cut_when_written_and_refused_when_read():
    deep: list = []
    for _ in range(MAX_DEPTH + 10):
        deep = [deep]
    assert "too deeply nested" in dumps(deep)
    with pytest.raises(ValueError):
        loads("[" * 5000 + "]" * 5000)


@pytest.mark.parametrize("text", ["{", '{"$bytes": "not base64!"}', '{"$nope": 1}', '{"$dict": [[1]]}', '{"$dict": [[[1], 2]]}',
                                  "1" * 5000, None, 7])
def test_malformed_text_is_a_value_error(text):
    with pytest.raises(ValueError):
        loads(text)


def test_same_is_as_strict_as_a_careful_assert():
    assert same(1, 1.0) and same([1, (2, "x")], [1, (2, "x")])
    assert not same(True, 1) and not same(1, True) and not same(["a"], ("a",)) and not same("a", b"a")
    assert not same({"a": 1}, {"a": 1, "b": 2}) and same(math.nan, math.nan) and not same(None, "None")
    assert encode(True) is True and decode({"$tuple": [1]}) == (1,)
