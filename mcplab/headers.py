"""HTTP header rules of 2026-07-28: case-insensitive names, conflicting duplicates, the base64 sentinel.

Headers arrive as a mapping or as a sequence of ``(name, value)`` pairs, so conflicting
duplicates stay expressible. Names are folded to lower case; values stay case-sensitive.
``Mcp-Name`` values that are not plain visible ASCII, or have leading/trailing whitespace,
or look like the sentinel themselves travel as ``=?base64?<base64 of UTF-8>?=``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping

from .errors import HEADER_MISMATCH, INVALID_PARAMS, ProtocolViolation

__all__ = [
    "HeaderInput",
    "normalize_headers",
    "single_header",
    "encode_header_value",
    "decode_header_value",
    "is_raw_header_value_valid",
    "media_type",
    "content_codings",
    "PROTOCOL_VERSION_HEADER",
    "METHOD_HEADER",
    "NAME_HEADER",
    "ROUTING_HEADERS",
]

HeaderInput = Mapping[str, str] | Iterable[tuple[str, str]] | Iterable[list[str]] | None

PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
#: Headers that mirror the JSON-RPC body; a conflicting duplicate of one is -32020.
ROUTING_HEADERS: tuple[str, ...] = (PROTOCOL_VERSION_HEADER, METHOD_HEADER, NAME_HEADER)

_SENTINEL = re.compile(r"=\?base64\?(?P<payload>.*)\?=", re.DOTALL)
_VISIBLE_ASCII = re.compile(r"[\x20-\x7e]*")


def normalize_headers(headers: HeaderInput) -> dict[str, list[str]]:
    """Fold header names to lower case; keep every value in arrival order.

    Accepts a mapping, a sequence of pairs, or ``None``. Raises ``TypeError`` for anything
    else (a caller bug, not a wire fault).
    """
    out: dict[str, list[str]] = {}
    if headers is None:
        return out
    items = headers.items() if isinstance(headers, Mapping) else headers
    for item in items:
        try:
            name, value = item
        except (TypeError, ValueError):
            raise TypeError(f"header entries must be (name, value) pairs, got {item!r}") from None
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"header name and value must be strings, got {item!r}")
        out.setdefault(name.lower(), []).append(value)
    return out


def single_header(headers: Mapping[str, list[str]], name: str) -> str | None:
    """The one value of header ``name`` (lower case) or ``None``.

    Identical duplicates collapse to one value; conflicting duplicates of a routing header
    are a -32020 ``negative-duplicate-header`` violation.
    """
    values = headers.get(name)
    if not values:
        return None
    first = values[0]
    for other in values[1:]:
        if other != first:
            raise ProtocolViolation(
                f"conflicting duplicate {name} headers: {values!r}",
                code=HEADER_MISMATCH,
                case="negative-duplicate-header",
            )
    return first


def media_type(headers: Mapping[str, list[str]]) -> str | None:
    """The lower-case media type of normalised headers (parameters dropped), ``None`` if absent.

    Conflicting ``Content-Type`` duplicates come back joined (``"application/json, text/html"``),
    so they never equal a real media type.
    """
    types = sorted({value.split(";", 1)[0].strip().lower() for value in headers.get("content-type", ())})
    return ", ".join(types) if types else None


def content_codings(values: Iterable[str]) -> list[str]:
    """The content codings that ``Content-Encoding`` header ``values`` apply, ``identity`` dropped.

    More than one (``gzip, gzip``) is refused unread by every mcplab reader: an HTTP client decodes
    each chunk whole, so a few hundred bytes on the wire could decode to gigabytes before any count.
    """
    return [coding.strip().lower() for value in values for coding in value.split(",")
            if coding.strip().lower() not in ("", "identity")]


def encode_header_value(value: str) -> str:
    """Encode ``value`` for an ``Mcp-Name``-style header, using the sentinel only where needed.

    A lone surrogate (``"\\ud800"``) has no UTF-8 form, so it cannot travel in a header:
    :class:`~mcplab.errors.ProtocolViolation` (``negative-invalid-params``).
    """
    try:
        utf8 = value.encode("utf-8")
    except UnicodeEncodeError:
        raise ProtocolViolation("a value with a lone surrogate has no UTF-8 form and cannot travel in a header",
                                code=INVALID_PARAMS, case="negative-invalid-params") from None
    except AttributeError:
        raise ProtocolViolation(f"a header value is a string, got {type(value).__name__}", code=INVALID_PARAMS,
                                case="negative-invalid-params") from None
    if (
        _VISIBLE_ASCII.fullmatch(value)
        and value == value.strip(" \t")
        and not _SENTINEL.fullmatch(value)
    ):
        return value
    return "=?base64?" + base64.b64encode(utf8).decode("ascii") + "?="


def decode_header_value(value: str) -> str | None:
    """Decode a header value exactly: the sentinel's UTF-8 payload, or the raw value.

    Returns ``None`` for a malformed sentinel (invalid or non-canonical base64, invalid
    UTF-8), so a corrupt header never matches a body value by accident.
    """
    match = _SENTINEL.fullmatch(value)
    if match is None:
        return value
    payload = match.group("payload")
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != payload:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def is_raw_header_value_valid(value: str) -> bool:
    """True when a value sent without the sentinel is legal: visible ASCII, no edge whitespace."""
    return bool(_VISIBLE_ASCII.fullmatch(value)) and value == value.strip(" \t")
