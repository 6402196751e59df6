"""Pins of the text rules of redaction v3 and v4 (issue 15 item 9, issue 18): auth credentials in prose, private key blocks, ``key=value``.

Each case is the exact output of :func:`mcplab.redaction.redact` on one string: what is replaced, what is kept.
"""

from __future__ import annotations

import base64

import pytest

from mcplab.redaction import REDACTED, redact, redaction_paths

R = REDACTED


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("text, expected", [
    ("Authorization: Bearer abc.def-123", f"Authorization: Bearer {R}"),
    ("failed with bearer tok_en.12345 (expired)", f"failed with bearer {R} (expired)"),
    ("BEARER abcdefgh1", f"BEARER {R}"),
    ("bearer abcdefgh~", f"bearer {R}"),
    ("bearer authentication is configured", "bearer authentication is configured"),
    ("bearer abcdefghij stays", "bearer abcdefghij stays"),
    (f"Bearer {R} again", f"Bearer {R} again"),
    (f"Basic {b64(b'alice:pw')}", f"Basic {R}"),
    (f"basic {b64(b'alice:pw').rstrip('=')} x", f"basic {R} x"),
    (f"BASIC {b64(b'bob:secret1')}", f"BASIC {R}"),
    (f"Basic {b64(b'alicepwxx')} x", f"Basic {b64(b'alicepwxx')} x"),
    ("Basic conformance checks passed", "Basic conformance checks passed"),
    (f"Basic {b64(bytes([255, 254]) + b':abc' + bytes([255]))}", f"Basic {b64(bytes([255, 254]) + b':abc' + bytes([255]))}"),
    ("Basic abc~defgh!", "Basic abc~defgh!"),
    ("bearer XXXXXXXXXX", "bearer XXXXXXXXXX"),
])
def test_auth_credentials_in_prose(text, expected):
    assert redact({"m": text}) == {"m": expected}


@pytest.mark.parametrize("text, expected", [
    ("x -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- y", f"x {R} y"),
    ("a -----BEGIN PRIVATE KEY-----\nA\n-----END PRIVATE KEY----- b -----BEGIN EC PRIVATE KEY-----\nB\n"
     "-----END EC PRIVATE KEY----- c", f"a {R} b {R} c"),
    ("a -----BEGIN OPENSSH PRIVATE KEY-----\nAAA and the rest", f"a {R}"),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAA\nPrivate-MAC: 0a1b done", f"{R} done"),
    ("where is the PRIVATE KEY file", "where is the PRIVATE KEY file"),
])
def test_private_key_blocks(text, expected):
    assert redact({"m": text}) == {"m": expected}


@pytest.mark.parametrize("text, expected", [
    ('password="hunter22"', f'password="{R}"'),
    ("password='hunter22' ok", f"password='{R}' ok"),
    ("api_key=abc123&x=1", f"api_key={R}&x=1"),
    ("token : zzz9", f"token : {R}"),
    ('{"client_secret": "s3"}', f'{{"client_secret": "{R}"}}'),
    ("'pwd': 'p'", f"'pwd': '{R}'"),
    ('password="', 'password="'),
    ("password=''", "password=''"),
    (f'password="{R}"', f'password="{R}"'),
    ("password: null", "password: null"),
    ("token: True", "token: True"),
    ("auth: Bearer", "auth: Bearer"),
    ("tokens: 512", "tokens: 512"),
    ("passwordHint: pick a long one", "passwordHint: pick a long one"),
    ("token=abca", f"token={R}"),
    ("'token'='abca' x", f"'token'='{R}' x"),
    ("TOKEN: NULL", "TOKEN: NULL"),
    ("Secret: FALSE", "Secret: FALSE"),
    ('password=""', 'password=""'),
    (f"pwd: {R}", f"pwd: {R}"),
    ("token=XXXX", f"token={R}"),
    ("token=XabX", f"token={R}"),
    ("auth cookie key token secret pass pwd credential contrase session token=abc1",
     f"auth cookie key token secret pass pwd credential contrase session token={R}"),
])
def test_key_value_pairs(text, expected):
    assert redact({"m": text}) == {"m": expected}


def test_a_text_rule_reports_the_string_s_path():
    assert redaction_paths({"m": "Bearer abc.def-123", "n": "plain"}) == ["$.m"]
    assert redaction_paths({"m": "abc"}) == []


@pytest.mark.parametrize("text, expected", [
    ("using ghp_" + "a1B2" * 9 + " now", f"using {R} now"),
    ("AKIAABCDEFGHIJKLMNOP", R),
    ("key sk-ant-api03-" + "x1Y2" * 8, f"key {R}"),
    ("glpat-" + "a1B2c3D4e5F6g7H8i9J0" + " and AKIAABCDEFGHIJKLMNOP", f"{R} and {R}"),
    ("abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnopqrstuvwxyz0123"),
])
def test_token_shapes(text, expected):
    assert redact({"m": text}) == {"m": expected}


@pytest.mark.parametrize("text, expected", [
    ("see https://u:pw@h/x", f"see https://u:{R}@h/x"),
    ("https://longtokenuser:pw@h/", f"https://longtokenuser:{R}@h/"),
    ("https://TOKENVALUE123456@h/", f"https://{R}@h/"),
    ("https://TOKENVALUE12345@h/", "https://TOKENVALUE12345@h/"),
    (f"https://{R}@h/", f"https://{R}@h/"),
])
def test_urls_in_text(text, expected):
    assert redact({"m": text}) == {"m": expected}
