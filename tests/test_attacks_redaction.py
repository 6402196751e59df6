"""Issue 15, item 9: secrets planted outside the old redaction rules.

Each leak class the attack found gets planted secrets (a unique marker each); none may survive
``redact``, none may reach an evidence file, every class reports a path, and the value is never
echoed. The text rules come from detect-secrets: the copy in ``mcplab.secret_patterns`` must match
the installed detect-secrets (drift fails here).
"""

from __future__ import annotations

import base64
import itertools
import json

import pytest

from mcplab.evidence import write_evidence
from mcplab.redaction import REDACTED, REDACTION_RULES_VERSION, redact, redaction_paths
from mcplab.secret_patterns import (
    DETECT_SECRETS_TOKEN_PATTERNS,
    DETECT_SECRETS_VERSION,
    KEYWORD_DENYLIST,
    LEFT_OUT_PLUGINS,
)

_counter = itertools.count(1)


def marker() -> str:
    """A unique planted secret: digits and letters, as long as a real token."""
    return f"Zq{next(_counter):04d}x9Kp2Lm7Wv5Rt8Yb"


def jwt() -> str:
    head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    body = base64.urlsafe_b64encode(json.dumps({"sub": marker()}).encode()).decode().rstrip("=")
    return f"{head}.{body}.{marker()}"


def planted() -> list[tuple[str, object, str]]:
    """(leak class, document, the secret planted in it)."""
    cases: list[tuple[str, object, str]] = []
    for key in ("pwd", "auth", "credentials", "private_key", "privateKey", "db_pass", "passwd", "passphrase",
                "Secret-Access-Key", "api.key", "clientCredentials", "x-auth", "signing_key", "contraseña"):
        secret = marker()
        cases.append((f"key {key}", {"config": {key: secret}}, secret))
    for template in ("Authorization: Bearer {s}", "failed with bearer {s} (expired)", "header was 'Bearer {s}'",
                     "token: {s}", "password={s}", "{{\"access_token\": \"{s}\"}}", "got {{'client_secret': '{s}'}}",
                     "retry with api_key={s}&x=1", "PASSWORD = \"{s}\"", "login failed: password=\"{s}",
                     "cut off: {{'token': '{s}", "secret='{s} and the rest of the line", "login failed: password={s}",
                     "note: api_key: {s}", "error: auth: token={s}", "status: 401, token: \"{s}\""):
        secret = marker()
        cases.append((f"text {template[:20]}", {"message": template.format(s=secret)}, secret))
    basic = base64.b64encode(f"alice:{marker()}".encode()).decode()
    cases.append(("text Basic", {"detail": f"upstream said Authorization: Basic {basic}"}, basic))
    for shape in ("AKIA" + "ABCDEFGHIJKLMNOP", "ghp_" + "a1B2" * 9, "github_pat_" + "a1B2c3D4" * 4,
                  "xoxb-1234567890-0987654321-" + "abcdefghij0123456789", "sk_live_" + "a1B2c3D4e5F6" * 2,
                  "glpat-" + "a1B2c3D4e5F6g7H8i9J0", "AIza" + "Sy" + "a1B2c3D4e5" * 3 + "abc", "sk-ant-api03-" + "x1Y2" * 8):
        cases.append((f"shape {shape[:6]}", {"log": f"using {shape} for the call"}, shape))
    token = jwt()
    cases.append(("jwt", {"note": f"id token {token} was rejected"}, token))
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + marker() + "\n-----END RSA PRIVATE KEY-----"
    cases.append(("pem", {"file": pem}, marker_in(pem)))
    inner = json.dumps({"headers": {"Authorization": "Bearer " + (s := marker())}})
    cases.append(("json in a string", {"body": inner}, s))
    s = marker()
    cases.append(("token as URL user", {"url": f"https://{s}@github.com/org/repo.git"}, s))
    for url in ("postgres://admin:{s}@db:5432/app", "redis://:{s}@cache:6379/0", "amqp://u:{s}@mq/vhost",
                "ftp://h/file?token={s}", "http://h/x?a=1;token={s};b=2", "mongodb+srv://u:{s}@c.example/db"):
        s = marker()
        cases.append((f"url {url[:10]}", {"where": f"connecting to {url.format(s=s)} failed"}, s))
    s = marker()
    cases.append(("HAR Name/Value", {"headers": [{"Name": "Authorization", "Value": f"Bearer {s}"}]}, s))
    s = marker()
    cases.append(("HAR NAME/VALUE", {"headers": [{"NAME": "X-Api-Key", "VALUE": s}]}, s))
    return cases


def marker_in(text: str) -> str:
    return text.split("MIIEow", 1)[1].split("\n", 1)[0]


CASES = planted()


@pytest.mark.parametrize("leak, doc, secret", CASES, ids=[c[0] for c in CASES])
def test_a_planted_secret_never_survives(leak, doc, secret, tmp_path):
    out = redact(doc)
    text = json.dumps(out, ensure_ascii=False)
    assert secret not in text, f"{leak}: leaked in {text}"
    assert REDACTED in text or "%5BREDACTED%5D" in text
    assert redaction_paths(doc), f"{leak}: no path names the redacted field"
    assert redact(out) == out and redaction_paths(out) == redaction_paths(doc)
    written = write_evidence(tmp_path / "e.json", doc).read_text(encoding="utf-8")
    assert secret not in written


def test_every_class_counts():
    print(f"{len(CASES)} planted secrets in {len({c[0].split()[0] for c in CASES})} leak classes, rules v{REDACTION_RULES_VERSION}")
    assert len(CASES) >= 40 and REDACTION_RULES_VERSION == 4


@pytest.mark.parametrize("prose", [
    "Basic conformance checks passed", "bearer authentication is configured", "the token was refreshed",
    "passwordHint: pick a long one", "see https://example.com/docs?page=2", "git@github.com:org/repo.git",
    "progressToken: 7", "sha256 " + "ab" * 32, "maxTokens=100", "tokens: 512",
])
def test_ordinary_prose_is_kept(prose):
    assert redact({"text": prose}) == {"text": prose} and redaction_paths({"text": prose}) == []


def test_the_rules_match_the_installed_detect_secrets():
    keyword = pytest.importorskip("detect_secrets.plugins.keyword")
    from importlib import import_module, metadata

    assert metadata.version("detect-secrets") == DETECT_SECRETS_VERSION
    assert tuple(keyword.DENYLIST) == KEYWORD_DENYLIST
    from detect_secrets.plugins.base import RegexBasedDetector

    for module, patterns in DETECT_SECRETS_TOKEN_PATTERNS.items():
        plugin = import_module(f"detect_secrets.plugins.{module}")
        detectors = [obj for obj in vars(plugin).values() if isinstance(obj, type) and issubclass(obj, RegexBasedDetector)
                     and obj.__module__ == plugin.__name__]
        assert len(detectors) == 1, module
        # verbatim; a plugin's context-bound pattern (aws's keyword form) is left to the keyword rule
        assert set(patterns) <= {p.pattern for p in detectors[0]().denylist}, module
    import pkgutil

    import detect_secrets.plugins as plugins

    known = set(DETECT_SECRETS_TOKEN_PATTERNS) | set(LEFT_OUT_PLUGINS)
    shipped = {m.name for m in pkgutil.iter_modules(plugins.__path__)} - {"base", "__init__"}
    assert shipped <= known, f"detect-secrets has plugins this copy never considered: {sorted(shipped - known)}"
