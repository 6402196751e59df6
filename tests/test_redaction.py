"""Redaction: every spelling of every secret family is removed at any depth, nothing else is."""

from __future__ import annotations

import copy
import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcplab.redaction import (
    MAX_DEPTH,
    NON_SECRET_KEYS,
    REDACTED,
    REDACTION_RULES_VERSION,
    SECRET_KEY_FAMILIES,
    TOO_DEEP,
    fold_key,
    is_secret_key,
    redact,
    redact_urls_in,
    redaction_paths,
)

#: Each family as words, so tests can spell it in every style.
FAMILY_WORDS: dict[str, list[str]] = {
    "authorization": ["authorization"],
    "cookie": ["cookie"],
    "setcookie": ["set", "cookie"],
    "xapikey": ["x", "api", "key"],
    "accesstoken": ["access", "token"],
    "clientsecret": ["client", "secret"],
    "registrationaccesstoken": ["registration", "access", "token"],
    "token": ["token"],
    "password": ["password"],
    "secret": ["secret"],
    "apikey": ["api", "key"],
}
PREFIXES = ["x", "github", "proxy", "oauth", "my", "refresh"]
SEPARATORS = ["-", "_", ".", " ", "camel", ""]
MARKER = "S3CR3T"


def test_family_table_is_covered():
    assert set(FAMILY_WORDS) == set(SECRET_KEY_FAMILIES)
    assert REDACTION_RULES_VERSION == 4


def _case(word: str, style: str) -> str:
    return {"lower": word.lower(), "upper": word.upper(), "title": word.title()}[style]


@st.composite
def secret_spellings(draw: st.DrawFn) -> tuple[str, str]:
    """(family, spelled key): case changes, separators, camelCase, optional prefix."""
    family = draw(st.sampled_from(sorted(FAMILY_WORDS)))
    words = list(FAMILY_WORDS[family])
    prefix = draw(st.none() | st.sampled_from(PREFIXES))
    if prefix:
        words = [prefix, *words]
    sep = draw(st.sampled_from(SEPARATORS))
    if sep == "camel":
        first = draw(st.sampled_from(["lower", "upper"]))
        name = _case(words[0], first) + "".join(w.title() for w in words[1:])
    else:
        styles = draw(st.lists(st.sampled_from(["lower", "upper", "title"]), min_size=len(words),
                               max_size=len(words)))
        name = sep.join(_case(w, s) for w, s in zip(words, styles))
    return family, name


safe_keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789-_. ", min_size=1,
                    max_size=12).filter(lambda k: not is_secret_key(k))
safe_scalars = st.none() | st.booleans() | st.integers() | st.text(alphabet="abcdefgh xyz", max_size=8)
safe_values = st.recursive(
    safe_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(safe_keys, inner, max_size=3),
    max_leaves=8,
)
secret_strings = st.text(alphabet="0123456789abcdef", min_size=4, max_size=16).map(
    lambda s: f"{MARKER}-{s}"
)


@st.composite
def secret_values(draw: st.DrawFn) -> object:
    """A secret of any JSON shape: string, number-with-marker list, nested dict/list."""
    secret = draw(secret_strings)
    return draw(st.sampled_from([
        secret,
        [secret],
        {"inner": secret},
        {"deeper": [1, {"x": secret}]},
        (secret, "tuple"),
    ]))


def _key_path(parent: str, key: str) -> str:
    if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
        return f"{parent}.{key}"
    return f"{parent}['{key}']"


@st.composite
def nested_secret_documents(draw: st.DrawFn) -> tuple[object, str, str]:
    """(document, expected path of the secret, spelled key) with the secret at arbitrary depth."""
    _family, key = draw(secret_spellings())
    value = draw(secret_values())
    siblings = draw(st.dictionaries(safe_keys, safe_values, max_size=2))
    node: object = {**siblings, key: value}
    steps: list[tuple[str, object]] = []  # outermost last
    for _ in range(draw(st.integers(min_value=0, max_value=5))):
        if draw(st.booleans()):
            wrap_key = draw(safe_keys)
            others = draw(st.dictionaries(safe_keys, safe_values, max_size=2))
            others.pop(wrap_key, None)
            node = {**others, wrap_key: node}
            steps.append(("key", wrap_key))
        else:
            fillers = draw(st.lists(safe_values, max_size=3))
            index = draw(st.integers(min_value=0, max_value=len(fillers)))
            fillers.insert(index, node)
            node = fillers
            steps.append(("index", index))
    path = "$"
    for kind, step in reversed(steps):
        path = _key_path(path, step) if kind == "key" else f"{path}[{step}]"
    return node, _key_path(path, key), key


# ------------------------------------------------------------------ folding and key rules


@pytest.mark.parametrize("name", ["X-Api-Key", "x_api_key", "xApiKey", "x.api.key", "X API KEY"])
def test_fold_key_spellings_meet(name):
    assert fold_key(name) == "xapikey"


@given(secret_spellings())
def test_every_spelling_of_every_family_is_secret(spelled):
    family, name = spelled
    assert fold_key(name).endswith(family)
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "accessToken",
     "clientSecret", "registrationAccessToken", "token", "password", "secret", "api_key",
     "github_token", "refresh_token", "id_token", "client_secret", "DB_PASSWORD"],
)
def test_named_secret_keys(name):
    assert is_secret_key(name)


@pytest.mark.parametrize(
    "name",
    ["progressToken", "progress_token", "maxTokens", "tokenType", "nextCursor", "passwordHint",
     "name", "Accept", "Content-Type", "expires_in", "secretary_id"],
)
def test_non_secret_keys(name):
    assert not is_secret_key(name)


def test_progress_token_is_a_documented_exception():
    assert "progresstoken" in NON_SECRET_KEYS
    doc = {"params": {"_meta": {"progressToken": "abc-123"}}}
    assert redact(doc) == doc
    assert redaction_paths(doc) == []


def test_non_string_keys_are_not_secret():
    assert not is_secret_key(7)
    assert redact({7: "x"}) == {7: "x"}


# ------------------------------------------------------------------ the walk


@given(nested_secret_documents())
def test_secret_redacted_at_any_depth(case):
    doc, path, _key = case
    out = redact(doc)
    assert MARKER not in json.dumps(out)
    assert path in redaction_paths(doc)


@given(st.dictionaries(safe_keys, safe_values, max_size=6))
def test_non_secret_keys_keep_their_values(doc):
    assert redact(doc) == doc
    assert redaction_paths(doc) == []


any_keys = safe_keys | secret_spellings().map(lambda fk: fk[1]) | st.just("progressToken")
any_scalars = safe_scalars | secret_strings | st.sampled_from(
    ["http://h/p?token=abc&x=1", "https://h/?api_key=k#access_token=t&s=1", "http://h/?a=1",
     "http://u:pw@h:1/mcp?token=t", "http://u:[REDACTED]@h/", TOO_DEEP]
)
any_documents = st.recursive(
    any_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(any_keys, inner)
        | st.dictionaries(any_keys, inner, max_size=3)
        | st.fixed_dictionaries({"name": any_keys, "value": inner})
    ),
    max_leaves=12,
)


@given(any_documents)
def test_redaction_is_idempotent(doc):
    once = redact(doc)
    assert redact(once) == once
    assert redaction_paths(once) == redaction_paths(doc)


@given(any_documents)
def test_input_is_not_mutated(doc):
    before = copy.deepcopy(doc)
    redact(doc)
    redaction_paths(doc)
    assert doc == before


def test_secret_of_any_type_is_replaced_whole():
    doc = {"settings": {"clientSecret": {"nested": ["x", 1]}, "password": 1234, "token": None}}
    assert redact(doc) == {"settings": {"clientSecret": REDACTED, "password": REDACTED, "token": REDACTED}}
    assert redaction_paths(doc) == [
        "$.settings.clientSecret", "$.settings.password", "$.settings.token",
    ]


def test_header_pairs_in_a_list():
    doc = {"requestHeaders": [["Authorization", "Bearer abc"], ("Accept", "application/json"),
                              ("set-cookie", "sid=1")]}
    assert redact(doc) == {"requestHeaders": [["Authorization", REDACTED],
                                              ["Accept", "application/json"],
                                              ["set-cookie", REDACTED]]}
    assert redaction_paths(doc) == ["$.requestHeaders[0][1]", "$.requestHeaders[2][1]"]


def test_a_pair_not_inside_a_list_is_left_alone():
    doc = {"words": ["token", "abc"]}
    assert redact(doc) == doc


def test_har_style_headers():
    doc = {"headers": [{"name": "X-Api-Key", "value": "k1"}, {"name": "Accept", "value": "*/*"}]}
    assert redact(doc) == {"headers": [{"name": "X-Api-Key", "value": REDACTED},
                                       {"name": "Accept", "value": "*/*"}]}
    assert redaction_paths(doc) == ["$.headers[0].value"]


def test_url_query_and_fragment_parameters():
    doc = {"url": "https://h.example/p?token=abc&x=1&API_KEY=k#access_token=t&state=s"}
    out = redact(doc)
    assert out == {"url": "https://h.example/p?token=%5BREDACTED%5D&x=1&API_KEY=%5BREDACTED%5D"
                          "#access_token=%5BREDACTED%5D&state=s"}
    assert redaction_paths(doc) == ["$.url?token", "$.url?API_KEY", "$.url#access_token"]
    for secret in ("abc", "=k", "=t"):
        assert secret not in out["url"]


def test_bytes_are_kept_but_text_and_other_schemes_are_redacted():
    """Rules version 3: a secret pair in prose and a non-http URL are redacted too; bytes stay as they are."""
    doc = {"note": "see ?token=abc", "raw": b"token=abc", "ftp": "ftp://h/?token=a"}
    assert redact(doc) == {"note": "see ?token=[REDACTED]", "raw": b"token=abc", "ftp": "ftp://h/?token=%5BREDACTED%5D"}
    assert redaction_paths(doc) == ["$.note", "$.ftp?token"]


def test_paths_name_awkward_keys():
    doc = {"headers": {"X-Api-Key": "k", "Authorization": "a"}, "body": {"params": {"clientSecret": "c"}}}
    assert redaction_paths(doc) == ["$.headers['X-Api-Key']", "$.headers.Authorization",
                                    "$.body.params.clientSecret"]


def test_tuples_become_lists():
    assert redact({"a": (1, (2, 3))}) == {"a": [1, [2, 3]]}


def test_websocket_urls_are_redacted_too():
    assert redact({"u": "wss://h/p?token=abc&x=1"}) == {"u": "wss://h/p?token=%5BREDACTED%5D&x=1"}


def test_url_userinfo_password_is_redacted():
    doc = {"url": "http://user:hunter22@h.example:8080/mcp?x=1", "plain": "https://user@h/", "empty": "http://u:@h/"}
    out = redact(doc)
    assert out == {"url": "http://user:[REDACTED]@h.example:8080/mcp?x=1", "plain": "https://user@h/", "empty": "http://u:@h/"}
    assert redaction_paths(doc) == ["$.url@password"]
    assert redact(out) == out and redaction_paths(out) == ["$.url@password"]


def test_url_userinfo_password_with_an_at_sign_and_in_header_values():
    doc = {"headers": [["Referer", "https://u:p@ss@h/x"]], "list": ["ws://a:b@h"]}
    assert redact(doc) == {"headers": [["Referer", "https://u:[REDACTED]@h/x"]], "list": ["ws://a:[REDACTED]@h"]}


@pytest.mark.parametrize("url", ["http://u:ab#cd@h/mcp", "http://u:ab?cd@h/mcp", "https://u:ab/cd@h:8443/mcp?x=1"])
def test_a_password_with_an_unencoded_slash_question_mark_or_hash_is_redacted(url):
    """Such a password ends the authority early (``u:ab`` looks like a host with a port that is not
    a number), so the userinfo rule never saw it; the whole password must still go."""
    out = redact({"url": url})["url"]
    assert "ab" not in out and "cd" not in out and out.startswith(("http://u:[REDACTED]@h", "https://u:[REDACTED]@h"))
    assert redaction_paths({"url": url}) == ["$.url@password"] and redact(out) == out
    assert "cd" not in redact_urls_in(f"cannot reach {url}: refused")


@pytest.mark.parametrize("url", ["http://h:8080/mcp?mail=a@b", "http://[::1]/x?mail=a@b", "http://h:/x?mail=a@b", "http://h/a:b@c"])
def test_urls_without_a_password_keep_their_at_signs(url):
    assert redact(url) == url and redaction_paths(url) == []


def test_a_password_already_shown_as_redacted_is_kept():
    assert redact("http://u:[REDACTED]@h/") == "http://u:[REDACTED]@h/"


def test_mcp_session_id_is_a_secret_header():
    doc = {"headers": [["Mcp-Session-Id", "3f2c-session"], ["mcp-session-id", "x"]], "map": {"MCP-Session-ID": "y"},
           "har": [{"name": "mcp-session-id", "value": "z"}], "sessionId": "kept"}
    out = redact(doc)
    assert out == {"headers": [["Mcp-Session-Id", REDACTED], ["mcp-session-id", REDACTED]], "map": {"MCP-Session-ID": REDACTED},
                   "har": [{"name": "mcp-session-id", "value": REDACTED}], "sessionId": "kept"}


def _nested(levels: int, leaf: object) -> object:
    doc = leaf
    for _ in range(levels):
        doc = [doc]
    return doc


def test_deeply_nested_evidence_does_not_raise_recursion_error():
    doc = {"body": _nested(10_000, {"token": "t"})}
    out = redact(doc)
    assert "t" not in json.dumps(out).replace(TOO_DEEP, "").replace("body", "")
    assert redaction_paths(doc) == ["$.body" + "[0]" * (MAX_DEPTH - 1)]
    assert redact(out) == out and redaction_paths(out) == redaction_paths(doc)


def test_nesting_up_to_max_depth_is_kept_whole():
    doc = _nested(MAX_DEPTH, "leaf")  # MAX_DEPTH lists: the innermost sits inside MAX_DEPTH - 1 containers
    assert redact(doc) == doc and redaction_paths(doc) == []
    deeper = _nested(MAX_DEPTH + 1, "leaf")
    assert redact(deeper) == _nested(MAX_DEPTH, TOO_DEEP)


def test_redact_urls_in_free_text():
    text = ("--url 'http://u:s3cr3t@127.0.0.1:1/mcp': nothing answers (see https://h/p?token=abc&x=1). "
            "ws://a:b@h, http://plain/")
    out = redact_urls_in(text)
    assert out == ("--url 'http://u:[REDACTED]@127.0.0.1:1/mcp': nothing answers (see https://h/p?token=%5BREDACTED%5D&x=1). "
                   "ws://a:[REDACTED]@h, http://plain/")
    assert redact_urls_in("no url here: token=abc") == "no url here: token=abc"


def test_redact_urls_in_stays_linear_on_text_with_many_word_boundaries():
    """Hang guard, not a speed target: an unbounded scheme made this quadratic (100 KB took 18 s,
    so 1 MB would take about half an hour); bounded, it is a fraction of a second."""
    import time

    text = "a-" * 500_000 + " http://u:pw@127.0.0.1/x?token=t"
    started = time.perf_counter()
    out = redact_urls_in(text)
    assert time.perf_counter() - started < 10
    assert out.endswith("http://u:[REDACTED]@127.0.0.1/x?token=%5BREDACTED%5D") and "pw@" not in out


@pytest.mark.parametrize("text, redacted", [
    ("login failed: password=hunter2-Zq9", "login failed: password=[REDACTED]"),  # after another key's separator
    ("note: api_key: hunter2-Zq9 (rotated)", "note: api_key: [REDACTED] (rotated)"),
    ('pwd="hunter2 Zq9" tail', 'pwd="[REDACTED]" tail'),  # a closed quote keeps both quotes
    ('cut off: pwd="hunter2 Zq9', 'cut off: pwd="[REDACTED]'),  # one that never closes: to the line's end, no closing quote
    ("token='hunter2\nnext line kept", "token='[REDACTED]\nnext line kept"),
    ("::: password=hunter2-Zq9", "::: password=[REDACTED]"),  # separators with no key before them are passed over
    ("token=ab:cd then password=hunter2-Zq9", "token=[REDACTED] then password=[REDACTED]"),  # and the ones inside a value
])
def test_pairs_after_other_keys_and_unclosed_quotes(text, redacted):
    assert redact({"m": text}) == {"m": redacted}


def test_the_pair_scan_reads_a_long_run_without_separators_once():
    """Same answer as a scan from every position (pinned by the cases above); here the shape that was slow."""
    long = "x" * 200_000 + " token: " + "QUJD" * 1000 + " and key:" + "y" * 200_000
    assert redact({"m": long}) == {"m": "x" * 200_000 + " token: [REDACTED] and key:" + "y" * 200_000}
