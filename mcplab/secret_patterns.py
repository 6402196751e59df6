"""The secret-shape rules redaction applies inside text: taken from detect-secrets, versioned here.

Design: the keyword list and the token shapes come from Yelp's maintained detector, detect-secrets
1.5.0 (Apache-2.0; ``detect_secrets.plugins.keyword.DENYLIST`` and the ``denylist`` of its regex
plugins), copied as data so redaction (imported by nearly every command) does not import it
(115 ms, and ``requests``). ``tests/test_attacks_redaction.py`` compares this copy with the
installed detect-secrets, so drift fails a test. Only shapes that stand alone are used (a plugin
whose pattern needs surrounding context, or that matches ordinary hex ids, is left out, each
with its reason below); ``EXTRA_TOKEN_PATTERNS`` are mcplab's own additions. Changing anything
here changes evidence digests: bump :data:`mcplab.redaction.REDACTION_RULES_VERSION`.
"""

from __future__ import annotations

__all__ = ["DETECT_SECRETS_VERSION", "KEYWORD_DENYLIST", "DETECT_SECRETS_TOKEN_PATTERNS", "EXTRA_TOKEN_PATTERNS",
           "LEFT_OUT_PLUGINS", "PRIVATE_KEY_BEGIN", "PRIVATE_KEY_END", "TOKEN_LITERALS"]

#: The detect-secrets release these rules were copied from.
DETECT_SECRETS_VERSION = "1.5.0"

#: ``detect_secrets.plugins.keyword.DENYLIST``: key names whose value is a secret (``_?`` = optional
#: separator). Folded (lowercase, separators dropped) they join :data:`mcplab.redaction.SECRET_KEY_SUFFIXES`.
KEYWORD_DENYLIST: tuple[str, ...] = (
    "api_?key", "auth_?key", "service_?key", "account_?key", "db_?key", "database_?key", "priv_?key",
    "private_?key", "client_?key", "db_?pass", "database_?pass", "key_?pass", "password", "passwd", "pwd",
    "secret", "contraseña", "contrasena",
)

#: Standalone token shapes from detect-secrets plugins (plugin module -> patterns), verbatim (aws's
#: second pattern, a keyword near a quoted 40-character value, is left to the keyword rule).
DETECT_SECRETS_TOKEN_PATTERNS: dict[str, tuple[str, ...]] = {
    "aws": (r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",),
    "azure_storage_key": (r"AccountKey=[a-zA-Z0-9+\/=]{88}",),
    "github_token": (r"(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}",),
    "gitlab_token": (
        r"(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}(?!\w)",
        r"GR1348941[A-Za-z0-9_\-]{20,50}(?!\w)",
        r"glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}(?!\w)",
        r"glimt-[A-Za-z0-9_\-]{25}(?!\w)",
        r"glptt-[A-Za-z0-9_\-]{40}(?!\w)",
        r"glagent-[A-Za-z0-9_\-]{50,1024}(?!\w)",
        r"gloas-[A-Za-z0-9_\-]{64}(?!\w)",
    ),
    "mailchimp": (r"[0-9a-z]{32}-us[0-9]{1,2}",),
    "openai": (r"sk-[A-Za-z0-9-_]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",),
    "pypi_token": (r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9-_]{70,}", r"pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9-_]{70,}"),
    "sendgrid": (r"SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}",),
    "slack": (r"xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+",
              r"https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+"),
    "square_oauth": (r"sq0csp-[0-9A-Za-z\\\-_]{43}",),
    "stripe": (r"(?:r|s)k_live_[0-9a-zA-Z]{24}",),
    "discord": (r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}",),
}

#: detect-secrets plugins not used, and why.
LEFT_OUT_PLUGINS: dict[str, str] = {
    "artifactory": "its patterns need surrounding context (whitespace, '=', quotes) that a replacement would eat",
    "basic_auth": "URL userinfo is redacted by the URL rules (password, or a long user name alone)",
    "cloudant": "needs a keyword context; the keyword rule covers it",
    "ibm_cloud_iam": "needs a keyword context; the keyword rule covers it",
    "ibm_cos_hmac": "needs a keyword context; the keyword rule covers it",
    "softlayer": "needs a keyword context; the keyword rule covers it",
    "ip_public": "an address is not a credential (evidence names hosts on purpose)",
    "jwt": "its last segment is lazy (a substitution would keep the signature): EXTRA_TOKEN_PATTERNS has a whole-token form",
    "npm": "matches a whole .npmrc line; the keyword rule covers _authToken",
    "private_key": "matches only the BEGIN line: PRIVATE_KEY_BLOCK removes the whole block",
    "telegram_token": "digits:35 characters also matches ordinary ids; too many false hits in evidence",
    "twilio": "AC/SK plus 32 characters also matches upper-case ids in evidence",
    "high_entropy_strings": "entropy flags digests and ids that evidence must keep",
    "keyword": "used as KEYWORD_DENYLIST (key names), not as a text scanner",
}

#: mcplab's own additions: a whole JWT (three segments), GitHub fine-grained tokens, Google API keys,
#: Anthropic and current OpenAI key shapes.
EXTRA_TOKEN_PATTERNS: dict[str, str] = {
    "jwt": r"eyJ[A-Za-z0-9_-]{4,}={0,2}\.eyJ[A-Za-z0-9_-]*={0,2}\.[A-Za-z0-9_+/-]*={0,2}",
    "github_fine_grained": r"github_pat_[A-Za-z0-9_]{22,}",
    "google_api_key": r"AIza[0-9A-Za-z_-]{35}",
    "anthropic": r"sk-ant-[A-Za-z0-9_-]{20,}",
    "openai_project": r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}",
}

#: A PEM (or PuTTY) private key starts here and ends at :data:`PRIVATE_KEY_END`; without an end, the
#: rest of the string is key material (detect-secrets' private_key names these BEGIN lines).
PRIVATE_KEY_BEGIN = r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[23]:"
PRIVATE_KEY_END = r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|Private-MAC: [0-9a-f]+"

#: A substring each token shape contains (any one of them), so a pattern runs only on text that could
#: hold its token: scanning stays fast on large bodies. ``None``: no such literal (always run).
TOKEN_LITERALS: dict[str, tuple[str, ...] | None] = {
    "aws": ("A3T", "ABIA", "ACCA", "AKIA", "ASIA"),
    "azure_storage_key": ("AccountKey=",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "gitlab_token": ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-", "glptt-",
                     "glagent-", "gloas-"),
    "mailchimp": ("-us",),
    "openai": ("T3BlbkFJ",),
    "pypi_token": ("pypi-",),
    "sendgrid": ("SG.",),
    "slack": ("xox", "hooks.slack.com"),
    "square_oauth": ("sq0csp-",),
    "stripe": ("k_live_",),
    "discord": None,
    "jwt": ("eyJ",),
    "github_fine_grained": ("github_pat_",),
    "google_api_key": ("AIza",),
    "anthropic": ("sk-ant-",),
    "openai_project": ("sk-proj-", "sk-svcacct-", "sk-admin-"),
}
