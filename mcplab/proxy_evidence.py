"""Proxy evidence: compare what the client sent (ingress), what the origin answered, and
what the proxy passed on (egress).

Each hop is a dict: ingress ``{"headers", "body"}``; origin ``{"status", "headers", "body",
"request"?: {"headers", "body"}}`` (``request`` = what the origin received, when captured);
egress ``{"status", "headers", "body"}``. Bodies are parsed objects, raw bytes/str or ``None``.
Findings carry a stable case name and a fixed message; ``inspect_proxy`` returns the messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .errors import EvidenceError, ProtocolViolation
from .headers import media_type, normalize_headers
from .jsonvalue import is_http_status, same_json_value, short_repr
from .sse import is_event_stream, parse_sse

__all__ = ["inspect_proxy", "proxy_findings", "PROXY_ISSUES"]

#: Case name -> the fixed issue message reported for it.
PROXY_ISSUES: dict[str, str] = {
    "negative-proxy-collapsed-error": "proxy collapsed a protocol error into HTTP 500",
    "negative-proxy-changed-body": "proxy changed the origin JSON-RPC body",
    "negative-proxy-changed-status": "proxy changed the origin HTTP status",
    "negative-proxy-content-type": "proxy changed the response content type",
    "negative-proxy-request-changed": "proxy changed the client request on its way to the origin",
}

def _parsed(body: Any) -> Any:
    """The JSON value of a body, the raw text when it is not JSON, ``None`` when empty.

    Bytes that are not UTF-8 stay bytes and compare byte for byte.
    """
    if isinstance(body, (bytes, bytearray)):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(body)
    if isinstance(body, str):
        if not body.strip():
            return None
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            return _Raw(body)
    return body


class _Raw(str):
    """A body that is not JSON (compared as text, never equal to a JSON value)."""


def _events(body: Any) -> list[tuple[str, Any]] | None:
    """(event type, JSON data) of an event stream; ``None`` when it cannot be read as one."""
    if not isinstance(body, (str, bytes, bytearray)):
        return None
    try:
        return [(e["event"], _parsed(e["data"])) for e in parse_sse(body)]
    except ProtocolViolation:  # not UTF-8: compared byte for byte instead
        return None


def _same_body(a: Any, b: Any, *, stream: bool = False) -> bool:
    """Same JSON value (or same raw text/bytes); for an event stream, the same events in order
    (comments such as keep-alives and line-ending style are not content)."""
    if stream:
        ea, eb = _events(a), _events(b)
        if ea is not None and eb is not None:
            return len(ea) == len(eb) and all(x[0] == y[0] and _same_body(x[1], y[1]) for x, y in zip(ea, eb))
    pa, pb = _parsed(a), _parsed(b)
    if isinstance(pa, (_Raw, bytes)) or isinstance(pb, (_Raw, bytes)):
        return type(pa) is type(pb) and pa == pb
    return same_json_value(pa, pb)


def _is_jsonrpc_error(body: Any) -> bool:
    parsed = _parsed(body)
    return isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)


def _header(headers: Mapping[str, list[str]], name: str) -> tuple[str, ...]:
    """Every value of a header, with optional whitespace around list commas normalised."""
    return tuple(",".join(part.strip() for part in v.split(",")) for v in headers.get(name, ()))


def _check_hop(hop: Any, name: str, *, response: bool) -> dict[str, list[str]]:
    """Refuse empty or malformed captures (they prove nothing about a proxy); return the hop's
    normalised headers."""
    if not isinstance(hop, Mapping):
        raise EvidenceError(f"{name} capture must be an object, got {type(hop).__name__}")
    if response:
        status = hop.get("status")
        if not is_http_status(status):
            raise EvidenceError(f"{name}.status must be an HTTP status code, got {short_repr(status)}")
    if "body" not in hop:
        raise EvidenceError(f"{name} capture needs the body (None for an empty one)")
    try:
        return normalize_headers(hop.get("headers"))
    except TypeError as exc:
        raise EvidenceError(f"{name}.headers: {exc}") from None


def proxy_findings(ingress: Mapping[str, Any], origin: Mapping[str, Any], egress: Mapping[str, Any]) -> list[dict[str, str]]:
    """Every proxy fault visible in the three captures, as ``{"case", "message", "detail"}``.

    Raises ``EvidenceError`` for a missing or malformed capture (no status, bad headers): an
    empty capture proves nothing about a proxy.
    """
    ingress_headers = _check_hop(ingress, "ingress", response=False)
    origin_type = media_type(_check_hop(origin, "origin", response=True))
    egress_type = media_type(_check_hop(egress, "egress", response=True))
    seen = origin.get("request")
    seen_headers = _check_hop(seen, "origin.request", response=False) if seen is not None else None
    findings: list[dict[str, str]] = []

    def add(case: str, detail: str) -> None:
        findings.append({"case": case, "message": PROXY_ISSUES[case], "detail": detail})

    origin_status, egress_status = origin.get("status"), egress.get("status")
    if 400 <= origin_status < 500 and egress_status >= 500 and _is_jsonrpc_error(origin.get("body")):
        add("negative-proxy-collapsed-error", f"origin HTTP {origin_status} JSON-RPC error became HTTP {egress_status}")
    elif origin_status != egress_status:
        add("negative-proxy-changed-status", f"origin HTTP {origin_status}, egress HTTP {egress_status}")
    if not _same_body(origin.get("body"), egress.get("body"), stream=is_event_stream(origin_type)):
        add("negative-proxy-changed-body", "the egress body differs from the body the origin sent")
    if origin_type != egress_type:
        add("negative-proxy-content-type", f"origin {origin_type!r}, egress {egress_type!r}")
    if seen_headers is not None:
        changed = []
        if not _same_body(ingress.get("body"), seen.get("body")):
            changed.append("body")
        for name in ("accept", "content-type", "mcp-protocol-version", "mcp-method", "mcp-name"):
            if _header(ingress_headers, name) != _header(seen_headers, name):
                changed.append(name)
        if changed:
            add("negative-proxy-request-changed", "changed on the way in: " + ", ".join(changed))
    return findings


def inspect_proxy(ingress: Mapping[str, Any], origin: Mapping[str, Any], egress: Mapping[str, Any]) -> list[str]:
    """The issue messages for ``proxy_findings`` (empty list: the proxy was faithful)."""
    return [finding["message"] for finding in proxy_findings(ingress, origin, egress)]
