"""Pins of the handed-secret scrub (issue 15): every secret the user hands in is found in each spelling and replaced.

``handed_secrets`` lists what a user handed in (header values with and without their scheme, a Basic credential
decoded, URL userinfo as given and decoded and as the Basic credential a client builds, secret-named query and
fragment values), longest first, none under four characters; ``scrub_handed`` replaces each spelling everywhere.
"""

from __future__ import annotations

import base64
import json

import pytest

from mcplab.redaction import MIN_HANDED_SECRET, REDACTED, handed_secrets, scrub_handed


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_a_bearer_header_gives_the_value_and_the_credential():
    assert handed_secrets(headers=[("Authorization", "Bearer tok-12345")]) == ["Bearer tok-12345", "tok-12345"]
    assert handed_secrets(headers=[("Authorization", "  Bearer tok-12345  ")]) == ["Bearer tok-12345", "tok-12345"]
    assert handed_secrets(headers=[("X-Api-Key", "k-987654")]) == ["k-987654"]


@pytest.mark.parametrize("scheme", ["Basic", "basic", "BASIC"])
def test_a_basic_credential_is_decoded_into_user_and_password(scheme):
    credential = b64("alice:s3cret!")
    assert handed_secrets(headers=[("Authorization", f"{scheme} {credential}")]) == sorted(
        {f"{scheme} {credential}", credential, "alice:s3cret!", "alice", "s3cret!"}, key=lambda s: (-len(s), s))


def test_only_basic_is_decoded_and_only_valid_base64():
    credential = b64("alice:s3cret!")
    assert handed_secrets(headers=[("Authorization", f"Token {credential}")]) == [f"Token {credential}", credential]
    assert handed_secrets(headers=[("Authorization", "Basic not*base64")]) == ["Basic not*base64", "not*base64"]
    undecodable = base64.b64encode(b"\xff\xfe:x").decode()
    assert handed_secrets(headers=[("Authorization", f"Basic {undecodable}")]) == [f"Basic {undecodable}", undecodable]


def test_a_basic_password_keeps_its_colons_and_base64_is_strict():
    colons = b64("alice:pa:ss")
    assert handed_secrets(headers=[("Authorization", f"Basic {colons}")]) == sorted(
        {f"Basic {colons}", colons, "alice:pa:ss", "alice", "pa:ss"}, key=lambda s: (-len(s), s))
    loose = b64("alice:secret") + "!"
    assert handed_secrets(headers=[("Authorization", f"Basic {loose}")]) == [f"Basic {loose}", loose]


def test_short_strings_are_left_out():
    assert MIN_HANDED_SECRET == 4
    assert handed_secrets(headers=[("X-Key", "abc"), ("X-Other", "abcd")]) == ["abcd"]
    assert handed_secrets(headers=[("Authorization", "Bearer xyz")]) == ["Bearer xyz"]
    assert handed_secrets(headers=[("Authorization", "Bearer ")]) == ["Bearer"]
    assert handed_secrets() == []


def test_url_userinfo_and_secret_parameters():
    url = "https://bobby:p%40ss@h.example/x?api_key=k%2Fey1&page=2000#token=frag1"
    assert handed_secrets(urls=[url]) == sorted(
        {"bobby", "p%40ss", "p@ss", b64("bobby:p@ss"), "k/ey1", "k%2Fey1", "frag1"}, key=lambda s: (-len(s), s))


def test_url_edge_cases():
    assert handed_secrets(urls=["https://TOKENVALUE@h/"]) == [b64("TOKENVALUE:"), "TOKENVALUE"]
    assert handed_secrets(urls=["https://:pw12@h/"]) == [b64(":pw12"), "pw12"]
    assert handed_secrets(urls=["https://h/?a=1;secret=xyz12"]) == ["xyz12"]
    assert handed_secrets(urls=["https://h/?token=&page=12345", None, "", "http://[::1"]) == []
    assert handed_secrets(urls=["https://h/?q=ab%20cd&password=ab%20cd"]) == ["ab%20cd", "ab cd"]


def test_headers_and_urls_together_longest_first():
    got = handed_secrets(urls=["https://h/?access_token=abcdefgh"], headers=[("Authorization", "Bearer abcd")])
    assert got == ["Bearer abcd", "abcdefgh", "abcd"]


def test_every_spelling_is_scrubbed_in_keys_and_values():
    secret = "a b/\"c'é"
    spellings = ["a%20b%2F%22c%27%C3%A9", "a+b%2F%22c%27%C3%A9", json.dumps(secret)[1:-1],
                 json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1], secret]
    value = {f"k {s}": [f"x {s} y", (s, 5)] for s in spellings}
    value["n"] = None
    assert scrub_handed(value, [secret]) == {
        **{f"k {REDACTED}": [f"x {REDACTED} y", [REDACTED, 5]] for _ in spellings}, "n": None}


def test_longest_secret_first_and_ties_in_order():
    assert scrub_handed("xabcdefx", ["abcd", "abcdef"]) == f"x{REDACTED}x"
    assert scrub_handed("xabcdefx", ["abcdef", "abcd"]) == f"x{REDACTED}x"
    assert scrub_handed("abcde", ["bcde", "abcd"]) == f"{REDACTED}e"
    assert scrub_handed("abcd abcd", ["abcd"]) == f"{REDACTED} {REDACTED}"


def test_nothing_to_scrub_returns_the_value_itself():
    value = {"a": ["abc"]}
    assert scrub_handed(value, []) is value
    assert scrub_handed(value, ["abc", ""]) is value
    assert scrub_handed(value, ["abcd"]) == {"a": ["abc"]}
    assert scrub_handed(7, ["abcd"]) == 7
    assert scrub_handed(b"abcd", ["abcd"]) == b"abcd"
