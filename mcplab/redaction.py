"""Redact secrets from evidence before it is serialised, hashed, logged or uploaded.

Design: key names are *folded* (lowercase, every non-alphanumeric dropped) so camelCase, kebab,
snake, dotted and spaced spellings meet one deny-list of suffixes; one traversal both builds the
redacted copy and records the JSONPath-like path of every replaced value, so a review can see
WHICH field was redacted without seeing its value. The rules are data, versioned below.

Rules version 2 (was 1): a password in a URL's userinfo is redacted too (``http://u:[pw]@h``), the
``Mcp-Session-Id`` header (a 2025-11-25 session credential) is secret, a subtree nested deeper
than :data:`MAX_DEPTH` containers is replaced by :data:`TOO_DEEP` (so hostile JSON cannot raise
``RecursionError``), and :func:`redact_urls_in` applies the URL rules to URLs inside free text.

Rules version 3 (issue 15): secrets outside the key rules. Key names also end in detect-secrets'
keywords and ``auth``, ``credential(s)``, ``passphrase``, ``privatekey``...; every string is scanned:
a URL of any scheme anywhere in it (query and fragment split on ``&`` and ``;``; a user name alone of
:data:`MIN_TOKEN_USER` or more characters is a token), ``Bearer``/``Basic`` credentials, token shapes
(JWT, GitHub, AWS, Slack... from :mod:`mcplab.secret_patterns`), PEM private key blocks, and
``key: value`` / ``key=value`` pairs with a secret key name (JSON or a query inside a string); HAR
objects match ``Name``/``Value`` in any case. A string changed by these text rules reports its own path.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, unquote_plus, urlsplit

from .secret_patterns import (
    DETECT_SECRETS_TOKEN_PATTERNS,
    EXTRA_TOKEN_PATTERNS,
    PRIVATE_KEY_BEGIN,
    PRIVATE_KEY_END,
    TOKEN_LITERALS,
)

__all__ = [
    "REDACTED",
    "REDACTION_RULES_VERSION",
    "SECRET_KEY_FAMILIES",
    "SECRET_KEY_SUFFIXES",
    "NON_SECRET_KEYS",
    "SECRET_KEY_NAMES",
    "MAX_DEPTH",
    "TOO_DEEP",
    "fold_key",
    "is_secret_key",
    "redact",
    "redaction_paths",
    "redact_urls_in",
    "handed_secrets",
    "scrub_handed",
    "MIN_HANDED_SECRET",
]

#: Bump whenever a table below changes: evidence digests made under other rules differ.
REDACTION_RULES_VERSION = 4  # 4: pairs after another key (``error: token=x``); quotes that never close

#: What replaces a secret value (in URLs it is percent-encoded, see ``redact``).
REDACTED = "[REDACTED]"

#: The secret key families the mission names, in folded form (documentation and tests).
SECRET_KEY_FAMILIES: tuple[str, ...] = (
    "authorization",
    "cookie",
    "setcookie",
    "xapikey",
    "accesstoken",
    "clientsecret",
    "registrationaccesstoken",
    "token",
    "password",
    "secret",
    "apikey",
)

#: A folded key is secret when it ENDS WITH one of these: this covers every family above plus
#: prefixed spellings (``Proxy-Authorization``, ``github_token``, ``refresh_token``). Plurals of
#: cookie/secret/password/apikey are included; ``tokens`` is deliberately NOT, because MCP and
#: model APIs use ``maxTokens``/``inputTokens`` for counts.
SECRET_KEY_SUFFIXES: tuple[str, ...] = (
    # rules version 3: detect-secrets' keywords (mcplab.secret_patterns.KEYWORD_DENYLIST, folded) and more
    "auth", "authkey", "servicekey", "accountkey", "dbkey", "databasekey", "privkey", "privatekey", "clientkey",
    "dbpass", "databasepass", "keypass", "passwd", "pwd", "passphrase", "contrasena", "contrasea",
    "credential", "credentials", "accesskey", "secretkey", "signingkey", "encryptionkey", "sessionkey",
    "authorization",
    "cookie",
    "cookies",
    "apikey",
    "apikeys",
    "token",
    "secret",
    "secrets",
    "password",
    "passwords",
)

#: Folded protocol keys that merely end in a secret suffix and carry no secret:
#: ``progresstoken`` is MCP's ``_meta.progressToken``, an opaque id the peer echoes back in
#: progress notifications (redacting it would hide which request a notification belongs to).
NON_SECRET_KEYS: frozenset[str] = frozenset({"progresstoken"})

#: Folded keys that are secret as a whole though no suffix matches: ``Mcp-Session-Id``, the
#: 2025-11-25 session id, lets whoever holds it act inside the session (rules version 2).
SECRET_KEY_NAMES: frozenset[str] = frozenset({"mcpsessionid"})

#: Containers nested inside this many containers are not walked: the whole subtree becomes
#: :data:`TOO_DEEP` (and its path is reported), so redaction never recurses without a bound.
MAX_DEPTH = 100

#: What replaces a subtree nested deeper than :data:`MAX_DEPTH`.
TOO_DEEP = f"[REDACTED: nested deeper than {MAX_DEPTH} levels]"

_NON_ALNUM = re.compile(r"[^0-9a-z]")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_URL_PREFIXES = ("http://", "https://", "ws://", "wss://")
#: A URL inside free text (any scheme): it ends at whitespace, a quote or an angle bracket, and
#: sentence punctuation at its very end (``.``, ``)``...) is left to the text. The scheme is at most
#: 32 characters, so text with many word boundaries and no URL is scanned in linear time (unbounded,
#: 100 KB of ``a-a-a-...`` took 18 s).
_URL_IN_TEXT = re.compile(r"(?i)\b[a-z][a-z0-9+.-]{0,31}://[^\s'\"<>`]*[^\s'\"<>`.,;:!?)\]}]")
#: ``REDACTED`` as it appears inside a URL query or fragment: percent-encoded so the URL stays
#: valid (RFC 3986 does not allow raw brackets there); decoding it gives back ``REDACTED``.
_REDACTED_IN_URL = quote(REDACTED, safe="")
_PARAM_SEPARATOR = re.compile(r"([&;])")
#: A URL user name alone (no password) this long or longer is taken for a token (``https://TOKEN@host``);
#: ``git@``, ``alice@`` stay readable.
MIN_TOKEN_USER = 16
#: (literals one of which the text must contain, the shape) per token family; see TOKEN_LITERALS.
_TOKENS: list[tuple[tuple[str, ...] | None, re.Pattern[str]]] = [
    (TOKEN_LITERALS[name], re.compile("|".join(f"(?:{p})" for p in patterns)))
    for name, patterns in (*DETECT_SECRETS_TOKEN_PATTERNS.items(), *((k, (v,)) for k, v in EXTRA_TOKEN_PATTERNS.items()))]
#: Every token shape holds a run of at least 20 of these characters: text without one is skipped.
_TOKEN_CANDIDATE = re.compile(r"[A-Za-z0-9_+/=.\-]{20}")
_PRIVATE_KEY_BEGIN = re.compile(PRIVATE_KEY_BEGIN)
_PRIVATE_KEY_END = re.compile(PRIVATE_KEY_END)
#: Text without any of these (lower-cased) holds no secret-named ``key=value`` pair: the pair scan is skipped.
_KEY_HINTS = ("auth", "cookie", "key", "token", "secret", "pass", "pwd", "credential", "contrase", "session")
#: Words after ``key:`` that hide nothing (null, booleans) or name an auth scheme (its credential follows).
_NOT_A_VALUE = frozenset({"bearer", "basic", "none", "null", "true", "false"})
#: ``Bearer <token>`` / ``Basic <base64>`` in text (the scheme word kept, the credential replaced).
_AUTH_CREDENTIAL = re.compile(r"(?P<lead>\b(?P<scheme>[Bb]earer|BEARER|[Bb]asic|BASIC)\s+)"
                              r"(?P<credential>\[REDACTED\]|[A-Za-z0-9\-._~+/]{8,4096}=*)")
#: ``key: `` / ``key=`` with the key quoted or not (JSON, a Python repr, a query, a header line in a
#: message). The key decides (is_secret_key); only a secret key's value is read (:data:`_PAIR_VALUE`).
_KEY_SEP = re.compile(r"""(?P<q>["']?)(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,63})(?P=q)\s{0,8}[:=]\s{0,8}""")
#: How far before its separator a pair can start: a quote, 64 key characters, a quote, 8 spaces.
_KEY_REACH = 1 + 64 + 1 + 8
_SEPARATOR = re.compile(r"[:=]")
#: The value after a secret key: quoted (bounded), or up to a delimiter. A quote that never closes (a
#: truncated log line: ``password="hunter2``) runs to the end of the line.
_PAIR_VALUE = re.compile(r"""\[REDACTED\]|"(?:[^"\\\n]|\\.){0,4096}"|'(?:[^'\\\n]|\\.){0,4096}'"""
                         r"""|"(?:[^"\\\n]|\\.){1,4096}|'(?:[^'\\\n]|\\.){1,4096}|[^\s"'&;,(){}\[\]]{1,4096}""")


def fold_key(name: str) -> str:
    """Fold a key name: lowercase and drop every non-alphanumeric character.

    ``"X-Api-Key"``, ``"x_api_key"``, ``"xApiKey"``, ``"x.api.key"`` and ``"X API KEY"`` all
    fold to ``"xapikey"``.
    """
    return _NON_ALNUM.sub("", str(name).lower())


def is_secret_key(name: object) -> bool:
    """True when ``name`` is a string whose folded form ends with a secret suffix.

    Keys in :data:`NON_SECRET_KEYS` (``progressToken``) and non-string keys are not secret.
    """
    if not isinstance(name, str):
        return False
    folded = fold_key(name)
    if folded in NON_SECRET_KEYS:
        return False
    return folded in SECRET_KEY_NAMES or folded.endswith(SECRET_KEY_SUFFIXES)


def redact(obj: Any) -> Any:
    """Return a redacted deep copy of ``obj``; the input is never mutated.

    - a dict value under a secret key becomes :data:`REDACTED`, whatever its type;
    - dicts, lists and tuples are walked recursively (tuples come back as lists);
    - inside a list, a header pair ``[name, value]`` (list or tuple of exactly two items, first a
      secret key name) gets the value replaced; so does a HAR-style header object
      ``{"name": <secret key name>, "value": ...}`` wherever it appears;
    - an ``http(s)``/``ws(s)`` URL string has the values of secret-named query (and fragment)
      parameters replaced by ``%5BREDACTED%5D``, the percent-encoded :data:`REDACTED`, and the
      password of its userinfo by :data:`REDACTED` as is (``user:[REDACTED]@host``, the spelling
      the live report and Flight Deck already show); the rest of the URL is kept byte for byte;
    - a dict, list or tuple nested inside :data:`MAX_DEPTH` containers becomes :data:`TOO_DEEP`;
    - bytes and other scalars are returned as they are.

    Idempotent: ``redact(redact(x)) == redact(x)``.
    """
    return _walk(obj, "$", [], in_list=False)


def redaction_paths(obj: Any) -> list[str]:
    """JSONPath-like paths of every value :func:`redact` replaces, in traversal order.

    Examples: ``$.headers.Authorization``, ``$.headers['X-Api-Key']``,
    ``$.requestHeaders[0][1]``, ``$.body.params.clientSecret``, ``$.url?token`` (a URL query
    parameter), ``$.url#access_token`` (a URL fragment parameter), ``$.url@password`` (the
    userinfo password), or the path of a subtree replaced by :data:`TOO_DEEP`. Already redacted
    values are reported too, so ``redaction_paths(redact(x)) == redaction_paths(x)``.
    """
    paths: list[str] = []
    _walk(obj, "$", paths, in_list=False)
    return paths


def redact_urls_in(text: str) -> str:
    """``text`` (an error message, a log line) with every URL in it redacted as :func:`redact` does.

    A URL starts with ``scheme://`` (any scheme, ``ftp://`` too) and ends at whitespace, a quote or an angle
    bracket (trailing sentence punctuation excluded): ``"cannot reach http://u:pw@h/mcp?token=t"`` becomes
    ``"cannot reach http://u:[REDACTED]@h/mcp?token=%5BREDACTED%5D"``.
    """
    return _URL_IN_TEXT.sub(lambda match: _redact_url(match.group(0), "$", []), str(text))


def _key_path(parent: str, key: object) -> str:
    text = str(key)
    if _IDENTIFIER.match(text):
        return f"{parent}.{text}"
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return f"{parent}['{escaped}']"


def _walk(obj: Any, path: str, paths: list[str], *, in_list: bool, depth: int = 0) -> Any:
    """The one traversal behind :func:`redact` and :func:`redaction_paths` (``depth``: enclosing containers)."""
    if isinstance(obj, (Mapping, list, tuple)) and depth >= MAX_DEPTH:
        paths.append(path)
        return TOO_DEEP
    if isinstance(obj, Mapping):
        har_value = _har_value_key(obj)
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            child = _key_path(path, key)
            if is_secret_key(key) or (har_value is not None and key == har_value):
                paths.append(child)
                out[key] = REDACTED
            else:
                out[key] = _walk(value, child, paths, in_list=False, depth=depth + 1)
        return out
    if isinstance(obj, (list, tuple)):
        if in_list and len(obj) == 2 and is_secret_key(obj[0]):
            paths.append(f"{path}[1]")
            return [obj[0], REDACTED]
        return [_walk(item, f"{path}[{i}]", paths, in_list=True, depth=depth + 1) for i, item in enumerate(obj)]
    if isinstance(obj, str):
        if obj == TOO_DEEP:  # an already replaced subtree is reported again (idempotent paths)
            paths.append(path)
            return obj
        return _redact_text(obj, path, paths)
    return obj


def _har_value_key(obj: Mapping[Any, Any]) -> Any:
    """The ``value`` key of a HAR-style header object naming a secret (``name``/``Name``...), else None."""
    names = [k for k in obj if isinstance(k, str) and k.lower() == "name"]
    values = [k for k in obj if isinstance(k, str) and k.lower() == "value"]
    if len(names) == 1 and len(values) == 1 and is_secret_key(obj[names[0]]):
        return values[0]
    return None


def _redact_text(text: str, path: str, paths: list[str]) -> str:
    """Every text rule on one string: URLs (any scheme) by the URL rules, the rest by the token,
    credential, private-key and ``key=value`` rules. The string's own path is reported when a text
    rule matched (or it already holds :data:`REDACTED`) and no URL rule reported a finer path."""
    if len(text) < 4:
        return text
    before = len(paths)
    if "://" in text:
        out: list[str] = []
        last = 0
        for match in _URL_IN_TEXT.finditer(text):
            out.append(_redact_prose(text[last:match.start()]))
            out.append(_redact_tokens(_redact_url(match.group(0), path, paths)))
            last = match.end()
        out.append(_redact_prose(text[last:]))
        result = "".join(out)
    else:
        result = _redact_prose(text)
    if len(paths) == before and REDACTED in result:
        paths.append(path)
    return result


def _redact_prose(text: str) -> str:
    """Text outside URLs: each rule runs only where its literal hint occurs (large bodies stay fast)."""
    if len(text) < 4:
        return text
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        text = _redact_private_keys(text)
    text = _redact_tokens(text)
    lowered = text.lower()
    if "bearer" in lowered or "basic" in lowered:
        text = _AUTH_CREDENTIAL.sub(_auth_credential, text)
    if ("=" in text or ":" in text) and any(hint in lowered for hint in _KEY_HINTS):
        text = _redact_pairs(text)
    return text


def _redact_tokens(text: str) -> str:
    if not _TOKEN_CANDIDATE.search(text):  # every token shape has a run of 20 token characters
        return text
    for literals, pattern in _TOKENS:
        if literals is None or any(literal in text for literal in literals):
            text = pattern.sub(REDACTED, text)
    return text


def _redact_private_keys(text: str) -> str:
    """Each private key block, BEGIN to END; a block without its END runs to the end of the string.
    Linear: each search starts where the last one stopped."""
    out: list[str] = []
    position = 0
    while (begin := _PRIVATE_KEY_BEGIN.search(text, position)) is not None:
        end = _PRIVATE_KEY_END.search(text, begin.end())
        out.append(text[position:begin.start()] + REDACTED)
        position = len(text) if end is None else end.end()
    out.append(text[position:])
    return "".join(out)


def _auth_credential(match: re.Match[str]) -> str:
    scheme, credential = match.group("scheme"), match.group("credential")
    if credential == REDACTED:
        return match.group(0)
    if scheme.lower() == "basic":
        try:
            looks = ":" in base64.b64decode(credential + "=" * (-len(credential) % 4), validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            looks = False
    else:  # a bearer token has a digit or a symbol: "bearer authentication" in prose is not one
        looks = any(c.isdigit() or c in "-._~+/=" for c in credential)
    return f"{match.group('lead')}{REDACTED}" if looks else match.group(0)


def _redact_pairs(text: str) -> str:
    """Every secret ``key=value`` / ``key: value`` pair of ``text`` with its value redacted.

    The scan reads keys, and a value only after a secret key, then goes on after that value; after
    any other key it goes on at once, so ``login failed: password=x`` finds ``password=x`` although
    ``failed:`` came first (rules version 4). The scan starts from each separator and looks back at
    most :data:`_KEY_REACH` characters, so a long run without one is read once.
    """
    out: list[str] = []
    pos = 0
    for separator in _SEPARATOR.finditer(text):
        at = separator.start()
        if at < pos:
            continue  # inside a value already redacted
        # a pair ends at a separator: its key (quotes and spaces included) starts at most _KEY_REACH before it
        pair = _KEY_SEP.search(text, max(pos, at - _KEY_REACH), at + 9)
        if pair is None:
            continue
        pair = _KEY_SEP.match(text, pair.start())  # again without the window's end: all the spaces after the separator
        assert pair is not None
        value = _PAIR_VALUE.match(text, pair.end()) if is_secret_key(pair.group("key")) else None
        found = value.group(0) if value is not None else ""
        if not found or found.strip("\"'") in ("", REDACTED) or found.lower() in _NOT_A_VALUE:
            out.append(text[pos:pair.end()])
            pos = pair.end()
            continue
        opening = found[0] if found[0] in "\"'" else ""
        closing = opening if opening and len(found) >= 2 and found[-1] == opening else ""
        out.append(f"{text[pos:pair.end()]}{opening}{REDACTED}{closing}")
        pos = value.end()
    out.append(text[pos:])
    return "".join(out)


def _redact_url(url: str, path: str, paths: list[str]) -> str:
    loose = _redact_loose_password(url, path, paths)
    before_fragment, hash_sign, fragment = loose.partition("#")
    base, question, query = before_fragment.partition("?")
    if loose == url:  # else its password is already replaced (and reported)
        base = _redact_userinfo(base, path, paths)
    if question:
        query = _redact_params(query, f"{path}?", paths)
    if hash_sign:
        fragment = _redact_params(fragment, f"{path}#", paths)
    return f"{base}{question}{query}{hash_sign}{fragment}"


def _redact_loose_password(url: str, path: str, paths: list[str]) -> str:
    """``scheme://user:pa/ss@host``: an unencoded ``/``, ``?`` or ``#`` in the password ends the authority
    early, as a port that is not a number (``user:pa``); the password is replaced up to the next ``@``."""
    start = url.index("://") + 3
    end = min((i for i in (url.find(c, start) for c in "/?#") if i >= 0), default=len(url))
    user, colon, port = url[start:end].partition(":")
    at = url.find("@", end)
    if not colon or "@" in port or user.startswith("[") or not port or port.isdigit() or at < 0:
        return url
    paths.append(f"{path}@password")
    return f"{url[:start]}{user}:{REDACTED}{url[at:]}"


def _redact_userinfo(base: str, path: str, paths: list[str]) -> str:
    """``scheme://user:password@host/path`` with the password replaced (the last ``@`` ends the userinfo);
    a user name alone of :data:`MIN_TOKEN_USER` characters or more is a token (``https://TOKEN@host``)."""
    start = base.index("://") + 3
    slash = base.find("/", start)
    end = len(base) if slash < 0 else slash
    userinfo, at, hostport = base[start:end].rpartition("@")
    user, colon, password = userinfo.partition(":")
    if at and not password and (len(user) >= MIN_TOKEN_USER or user == REDACTED):
        paths.append(f"{path}@user")
        return f"{base[:start]}{REDACTED}{colon}@{hostport}{base[end:]}"
    if not (at and colon and password):
        return base
    paths.append(f"{path}@password")
    return f"{base[:start]}{user}:{REDACTED}@{hostport}{base[end:]}"


def _redact_params(params: str, prefix: str, paths: list[str]) -> str:
    """``a=1&token=t;key=k``: the value of every secret-named parameter (``&`` or ``;`` separated)."""
    parts = _PARAM_SEPARATOR.split(params)
    for i in range(0, len(parts), 2):  # odd indexes are the separators themselves
        name, equals, _value = parts[i].partition("=")
        if equals and is_secret_key(unquote_plus(name)):
            paths.append(prefix + unquote_plus(name))
            parts[i] = f"{name}={_REDACTED_IN_URL}"
    return "".join(parts)


#: Handed secrets shorter than this are not searched for in text (they cannot be told from prose).
MIN_HANDED_SECRET = 4


def handed_secrets(urls: Sequence[str | None] = (), headers: Sequence[tuple[str, str]] = ()) -> list[str]:
    """Every secret a user handed in, as the strings that may come back: the value of each header
    (whole, and without its auth scheme: ``Bearer t`` gives ``t`` too; a ``Basic`` credential also
    decoded, with its user and password), each URL's userinfo (user and password, as given and
    decoded, and the ``Basic`` credential a client builds from them) and the values of its
    secret-named query and fragment parameters. Strings under :data:`MIN_HANDED_SECRET` characters
    are left out. Longest first, so a scrub replaces a whole value before any part of it.
    """
    found: set[str] = set()
    for _name, value in headers:
        value = str(value).strip()
        found.add(value)
        scheme, _, credential = value.partition(" ")
        if credential.strip():
            found.add(credential.strip())
            if scheme.lower() == "basic":
                found.update(_basic_parts(credential.strip()))
    for url in urls:
        if url:
            found.update(_url_secrets(str(url)))
    return sorted((s for s in found if len(s) >= MIN_HANDED_SECRET), key=lambda s: (-len(s), s))


def scrub_handed(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` with every spelling of each handed secret replaced by :data:`REDACTED`, in every string
    (dict keys too): as is, percent-encoded, and as Python ``repr`` and JSON would quote it."""
    pairs = sorted({spelling for secret in secrets for spelling in _spellings_of(secret)
                    if len(spelling) >= MIN_HANDED_SECRET}, key=lambda s: (-len(s), s))
    if not pairs:
        return value
    return _scrub_strings(value, pairs)


def _spellings_of(secret: str) -> set[str]:
    forms = {secret, quote(secret, safe=""), quote_plus(secret, safe=""), json.dumps(secret)[1:-1],
             json.dumps(secret, ensure_ascii=False)[1:-1], repr(secret)[1:-1]}
    return {form for form in forms if form}


def _scrub_strings(value: Any, pairs: list[str]) -> Any:
    if isinstance(value, str):
        for secret in pairs:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {_scrub_strings(k, pairs): _scrub_strings(v, pairs) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub_strings(item, pairs) for item in value]
    return value


def _basic_parts(credential: str) -> set[str]:
    try:
        decoded = base64.b64decode(credential, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return set()
    user, _, password = decoded.partition(":")
    return {decoded, user, password}


def _url_secrets(url: str) -> set[str]:
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return set()
    found: set[str] = set()
    for part in (user, password):
        if part:
            found.update({part, unquote(part)})
    if user is not None or password is not None:
        plain = f"{unquote(user or '')}:{unquote(password or '')}"
        found.add(base64.b64encode(plain.encode("utf-8")).decode("ascii"))
    for params in (parts.query, parts.fragment):
        for name, value in parse_qsl(params.replace(";", "&"), keep_blank_values=False):
            if is_secret_key(name):
                found.update({value, quote(value, safe="")})
    return found
