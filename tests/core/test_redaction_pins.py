"""Pins of URL and path redaction: which part of an odd URL is the secret, and how a path names a key.

Each URL below leaked part of its secret under a plausible one-token change of the parser
(partition/rpartition, find/rfind, index/rindex), which no other test noticed.
"""

from __future__ import annotations

import pytest

from mcplab.redaction import REDACTED, redact, redact_urls_in, redaction_paths

R = "%5BREDACTED%5D"


@pytest.mark.parametrize("url, expected", [
    # a query value holding "=" is replaced whole (the name ends at the FIRST "=")
    ("https://h/?access_token=abc==", f"https://h/?access_token={R}"),
    ("https://h/p#x=1&id_token=a=b", f"https://h/p#x=1&id_token={R}"),
    # userinfo: the password runs from the FIRST ":" to the LAST "@" before the path
    ("http://u:p:w@host/", f"http://u:{REDACTED}@host/"),
    ("http://:pw@h/", f"http://:{REDACTED}@h/"),
    ("http://u:pw@", f"http://u:{REDACTED}@"),
    ("http://u:pw@host/a@b/c", f"http://u:{REDACTED}@host/a@b/c"),
    ("http://u:pw@h/x://y", f"http://u:{REDACTED}@h/x://y"),
    # a loose password (an unencoded / ? # in it) runs from the first ":" to the NEXT "@"
    ("http://user:pa:ss/x@host", f"http://user:{REDACTED}@host"),
    ("http://u:pa/ss@host/p@q", f"http://u:{REDACTED}@host/p@q"),
    ("http://Xu:pa/ss@host/p", f"http://Xu:{REDACTED}@host/p"),
    ("http://u:pa/ss@host/?next=http://x", f"http://u:{REDACTED}@host/?next=http://x"),
    # no password: nothing to replace, even with "@" around
    ("http://us@er:pass", "http://us@er:pass"),
    ("http://host:8080/p@x", "http://host:8080/p@x"),
])
def test_url_redaction(url, expected):
    assert redact(url) == expected
    assert redact(redact(url)) == expected
    assert redact_urls_in(f"see {url} now") == f"see {expected} now"


def test_the_paths_of_url_parts():
    assert redaction_paths({"u": "http://u:pw@h/?token=t#secret=s"}) == ["$.u@password", "$.u?token", "$.u#secret"]


def test_key_paths_escape_backslash_and_quote():
    assert redaction_paths({"a\\b'c": {"token": 1}}) == ["$['a\\\\b\\'c'].token"]
    assert redaction_paths({"plain_key": {"Authorization": "x"}}) == ["$.plain_key.Authorization"]
    assert redaction_paths({"x-y": {"token": 1}}) == ["$['x-y'].token"]


def test_a_top_level_pair_is_not_a_header_pair():
    assert redact(["Authorization", "Bearer x"]) == ["Authorization", "Bearer x"]
    assert redaction_paths(("token", "t")) == []
    assert redact([["Authorization", "Bearer x"]]) == [["Authorization", REDACTED]]
    assert redaction_paths([("token", "t")]) == ["$[0][1]"]
