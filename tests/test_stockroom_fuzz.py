"""Hostile-input fuzzing of the real stockroom MCP server over loopback.

One server for the whole module (``serve_stockroom``, stopped at the end), one ``httpx.Client``.
Hypothesis sends 1,000 generated malformed or hostile requests (derandomized, so CI sees the same
ones every run): bad JSON bytes, JSON of the wrong shape, wrong types in every field of a
``tools/call``, bodies of a few MB and 100k-character strings, odd routing headers (missing,
duplicate, mismatched, non-ASCII, sentinel-looking), non-ASCII tool names, every tool with
hostile arguments, commits with forged ``requestState``/``inputResponses``/approval tokens, both
eras, and the other HTTP verbs. After every example: no 5xx, a JSON-RPC body is well formed
(strictly, with ``validate_response``, when the request was a well-formed single message), and
the server thread is alive and answers ``tools/list``. At the end the trace chain verifies and
the ledger is exactly the seed (no forged approval got through). Transport-level refusals
(403 Origin, 406 Accept, 413 size, 415, 421 Host) answer before the body is read, with
``"id": null``: they get the lenient check only. ``-s`` shows how many examples ran;
``MCPLAB_FUZZ_EXAMPLES`` lowers the count for a quick local run.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import hmac
import json
import os
import re
import threading
import time
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcplab.requests import build_request
from mcplab.responses import validate_response
from mcplab.stockroom import (
    SEED_ITEMS,
    SEED_LEDGER_VERSION,
    TOOL_NAMES,
    serve_stockroom,
)
from mcplab.versions import (
    KNOWN_VERSIONS,
    LEGACY_VERSION,
    MODERN_VERSION,
    MODERN_VERSIONS,
)

EXAMPLES = int(os.environ.get("MCPLAB_FUZZ_EXAMPLES", "1000"))
CAPS = {"elicitation": {"form": {}}}
# h11 (under httpx) refuses header values with control characters or edge whitespace: what it
# permits is visible ASCII, obs-text bytes 0x80-0xff, and inner spaces/tabs.
_H11_VALUE = re.compile(rb"(?:[\x21-\x7e\x80-\xff]+(?:[ \t]+[\x21-\x7e\x80-\xff]+)*)?")
_STATS: dict[str, Any] = {"examples": 0, "categories": collections.Counter(), "seconds": 0.0, "statuses": collections.Counter()}


# --------------------------------------------------------------------------------------------
# cases
class Case:
    """One hostile HTTP exchange: verb, body bytes, headers (raw bytes, duplicates kept).

    ``request`` is the parsed message when the body is a well-formed single JSON-RPC request
    or notification (then the answer is judged strictly).
    """

    def __init__(self, category: str, content: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None,
                 verb: str = "POST", request: dict[str, Any] | None = None) -> None:
        self.category, self.content, self.headers, self.verb, self.request = category, content, headers or [], verb, request

    def __repr__(self) -> str:  # hypothesis prints failing cases; keep MB bodies readable
        body = self.content if len(self.content) <= 600 else self.content[:300] + b"...<%d bytes>..." % len(self.content) + self.content[-200:]
        headers = [(k, v if len(v) <= 300 else v[:200] + b"...<%d bytes>" % len(v)) for k, v in self.headers]
        return f"Case(category={self.category!r}, verb={self.verb!r}, headers={headers!r}, content={body!r})"


def _hb(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def _raw_headers(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Header pairs as bytes; a value h11 would refuse to send (control characters) goes sentinel-encoded."""
    out = []
    for name, value in headers:
        raw = _hb(value)
        out.append((_hb(name), raw if _H11_VALUE.fullmatch(raw) else _sentinel(value)))
    return out


def _dumps(value: Any, ascii_only: bool = False) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only, allow_nan=True).encode("utf-8", "surrogatepass")


def _is_well_formed(message: Any) -> bool:
    """A single JSON-RPC request or notification object (the strict response check applies)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return False
    if "params" in message and not isinstance(message["params"], dict):
        return False
    if "id" in message and not (isinstance(message["id"], str) or (isinstance(message["id"], int) and not isinstance(message["id"], bool))):
        return False
    return not any(key not in ("jsonrpc", "id", "method", "params") for key in message)


def _case_from(category: str, body: Any, headers: list[tuple[str, str]] | list[tuple[bytes, bytes]],
               ascii_only: bool = False) -> Case:
    raw = headers if not headers or isinstance(headers[0][0], bytes) else _raw_headers(headers)  # type: ignore[arg-type]
    content = _dumps(body, ascii_only)
    return Case(category, content, list(raw), request=body if _is_well_formed(body) and _is_strict_json(content) else None)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _is_strict_json(content: bytes) -> bool:
    """Strict UTF-8 (no lone surrogates) and strict JSON (no NaN/Infinity): what a server must parse.

    Anything else is a parse error, answered with ``"id": null`` as JSON-RPC requires.
    """
    try:
        json.loads(content.decode("utf-8"), parse_constant=_reject_constant)
    except ValueError:
        return False
    return True


def tool_call(name: Any, arguments: Any, era: str = "modern", id: Any = 1, caps: Any = CAPS,
              **extra: Any) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    params: dict[str, Any] = {"name": name, "arguments": arguments, **extra}
    return build_request("tools/call", params, era=era, id=id, capabilities=caps)


# --------------------------------------------------------------------------------------------
# value strategies
edge_ints = st.sampled_from([0, -1, 1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 10**30, 10**300])
scalars = (st.none() | st.booleans() | st.integers() | edge_ints | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=24))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
not_objects = json_values.filter(lambda v: not isinstance(v, dict))
eras = st.sampled_from(["modern", "legacy"])
ids = st.integers(min_value=0, max_value=2**31) | st.text(max_size=12)
odd_strings = st.sampled_from([
    "", " ", "\x00", "\u202e", "\ufeff", "\ud800", "DR-0001\x00", "DR-0001 ", "dr-0001", "DR-00001", "DR-1",
    "../../etc/passwd", "' OR 1=1 --", "=?base64?cmVhZF9zdG9jaw==?=", "%s%s%n", "${jndi:x}", "<script>",
]) | st.text(max_size=30)
sku_lines = st.lists(st.fixed_dictionaries({
    "sku": st.sampled_from([it["sku"] for it in SEED_ITEMS]) | odd_strings,
    "add_on_order": st.integers(min_value=-5, max_value=20_000) | edge_ints | scalars,
}), max_size=5)
line_values = sku_lines | json_values


def _near_valid_arguments(name: str) -> st.SearchStrategy[Any]:
    """Arguments close to what ``name`` accepts, with every field at times wrong."""
    if name in ("read_stock", "draft_reorder"):
        return st.just({}) | st.dictionaries(st.text(max_size=10), json_values, max_size=3) | not_objects
    draft = st.sampled_from(["DR-0001", "DR-0002", "DR-9999", "DR-0000"]) | odd_strings | scalars
    if name == "request_approval":
        return st.fixed_dictionaries({"draft_id": draft}, optional={"extra": json_values}) | not_objects
    approval_id = st.sampled_from(["AP-0123456789ab", "AP-", "ap-0123456789ab", "AP-0123456789abc"]) | odd_strings | scalars
    return st.fixed_dictionaries(
        {"draft_id": draft, "ledger_version": st.integers(min_value=-2, max_value=4) | edge_ints | scalars, "lines": line_values},
        optional={"approval_id": approval_id | json_values, "approval": json_values, "extra": json_values}) | not_objects


input_responses = st.one_of(
    json_values,
    st.fixed_dictionaries({"approval": st.fixed_dictionaries(
        {"action": st.sampled_from(["accept", "decline", "cancel", "Accept", ""]) | scalars},
        optional={"content": json_values | st.fixed_dictionaries({"note": odd_strings | scalars}), "extra": json_values})}),
    st.dictionaries(odd_strings, json_values, max_size=3),
)


# --------------------------------------------------------------------------------------------
# category strategies (the ones that need the live server's real state take ``ctx``)
def bad_json_bytes() -> st.SearchStrategy[Case]:
    valid, headers = tool_call("read_stock", {})
    good = _dumps(valid)
    hdrs = _raw_headers(headers)

    def deep(kind: str, depth: int) -> bytes:
        opener, closer = (b"[", b"]") if kind == "array" else (b'{"a":', b"}")
        return good.replace(b'"arguments": {}', b'"arguments": {"x": ' + opener * depth + b"1" + closer * depth + b"}")

    specials = st.one_of(
        st.builds(lambda k, d: deep(k, d), st.sampled_from(["array", "object"]), st.sampled_from([64, 500, 900, 950, 1000, 5000, 100_000])),
        st.builds(lambda n: good.replace(b'"id": 1', b'"id": ' + b"9" * n), st.sampled_from([20, 4301, 10_000])),
        st.builds(lambda tok: good.replace(b'"arguments": {}', b'"arguments": {"x": ' + tok + b"}"),
                  st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-0", b"0x10", b"01", b"+1", b".5", b"'x'",
                                   b'"\\ud800"', b'"\\u0000"', b'"\\x41"', b"undefined", b"True", b"[1,]", b"{,}"])),
        st.builds(lambda pre: pre + good, st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\x00", b" \n\t", b")]}'\n"])),
        st.builds(lambda post: good + post, st.sampled_from([b"x", b"{}", good, b"\x00", b"\n" * 1000, b",", b"]"])),
        st.just(json.dumps(valid).encode("utf-16")),
        st.just(good.replace(b"read_stock", b"read\xff\xfestock")),
        st.just(good.replace(b'"id": 1', b'"id": 1, "id": "dup"')),
        st.just(good.replace(b'"jsonrpc": "2.0"', b'"jsonrpc": "2.0", "jsonrpc": "1.0"')),
        st.just(good.replace(b'"name": "read_stock"', b'"name": "read_stock", "name": "commit_reorder"')),
    )
    truncated = st.integers(min_value=0, max_value=len(good) - 1).map(lambda n: good[:n])
    flipped = st.tuples(st.integers(min_value=0, max_value=len(good) - 1), st.integers(min_value=0, max_value=255)).map(
        lambda p: good[:p[0]] + bytes([p[1]]) + good[p[0] + 1:])
    return st.tuples(specials | truncated | flipped | st.binary(max_size=300),
                     st.sampled_from([hdrs, _raw_headers(build_request("tools/call", {"name": "read_stock"}, era="legacy")[1]), []])
                     ).map(lambda p: Case("bad_json", p[0], p[1]))


def wrong_shapes() -> st.SearchStrategy[Case]:
    valid, headers = tool_call("read_stock", {})
    batch_members = st.sampled_from([valid, build_request("tools/list", id=2)[0], build_request("notifications/initialized", id=None)[0]])
    shapes = st.one_of(
        st.lists(batch_members, min_size=1, max_size=3),  # batches (not allowed in either era here)
        st.just([]), st.lists(json_values, max_size=4),
        st.integers() | st.floats(allow_nan=False), st.text(max_size=40), st.none(), st.booleans(),
        st.sampled_from([{}, {"jsonrpc": "2.0"}, {"method": "tools/list"}, {"jsonrpc": "1.0", "id": 1, "method": "tools/list"},
                         {"jsonrpc": 2.0, "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 1, "result": {}},
                         {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "x"}},
                         {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "result": {}}]),
    )
    return st.tuples(shapes, st.sampled_from([_raw_headers(headers), _raw_headers(build_request("tools/list")[1]), []])).map(
        lambda p: _case_from("wrong_shape", p[0], p[1]))


FIELDS = ("jsonrpc", "id", "method", "params", "name", "arguments", "_meta", "protocolVersion", "clientCapabilities",
          "clientInfo", "logLevel", "meta_extra", "inputResponses", "requestState")


def _set_field(body: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    body = json.loads(json.dumps(body))
    if where in ("jsonrpc", "id", "method", "params"):
        body[where] = value
    elif where in ("name", "arguments", "_meta", "inputResponses", "requestState"):
        body["params"][where] = value
    elif where == "meta_extra":
        body["params"]["_meta"][value[0]] = value[1]
    else:
        body["params"]["_meta"][f"io.modelcontextprotocol/{where}"] = value
    return body


def wrong_types() -> st.SearchStrategy[Case]:
    @st.composite
    def build(draw: st.DrawFn) -> Case:
        era = draw(eras)
        tool = draw(st.sampled_from(TOOL_NAMES))
        body, headers = tool_call(tool, {}, era=era, id=draw(ids))
        if era == "legacy":
            body["params"]["_meta"] = {}
        where = draw(st.sampled_from(FIELDS))
        if where == "meta_extra":
            value: Any = (draw(st.sampled_from(["progressToken", "io.modelcontextprotocol/related-task", "", "x/y"]) | st.text(max_size=12)),
                          draw(json_values))
        elif where == "protocolVersion":
            value = draw(st.sampled_from([*KNOWN_VERSIONS, "2099-01-01", "", "2026-07-28 ", "latest"]) | json_values)
        else:
            value = draw(json_values)
        body = _set_field(body, where, value)
        if draw(st.booleans()):  # headers re-derived from the altered body where that is possible
            method = body.get("method") if isinstance(body.get("method"), str) else "tools/call"
            params = body.get("params") if isinstance(body.get("params"), dict) else {}
            headers = build_request(method, {k: v for k, v in params.items() if k != "_meta"}, era=era,
                                    id=1, capabilities=CAPS)[1]
        return _case_from("wrong_types", body, headers, ascii_only=draw(st.booleans()))

    return build()


def huge_bodies() -> st.SearchStrategy[Case]:
    @st.composite
    def build(draw: st.DrawFn) -> Case:
        size = draw(st.sampled_from([100_000, 100_000, 1_000_000, 3_000_000]))
        unit = draw(st.sampled_from(["y", "é", "日本", "\x00", "\"\\", "𝄞"]))
        text = (unit * (size // len(unit) + 1))[:size]
        era = draw(eras)
        shape = draw(st.sampled_from(["argument", "name", "state", "responses", "garbage", "whitespace", "array", "keys"]))
        if shape == "argument":
            tool = draw(st.sampled_from(TOOL_NAMES))
            body, headers = tool_call(tool, {"draft_id": text, "lines": [{"sku": text, "add_on_order": 1}]}, era=era)
        elif shape == "name":
            body, headers = tool_call(text[:100_000], {}, era=era)
        elif shape == "state":
            body, headers = tool_call("commit_reorder", {"draft_id": "DR-0001", "ledger_version": 1, "lines": [{"sku": "SR-101", "add_on_order": 6}]},
                                      era=era, requestState=text, inputResponses={"approval": {"action": "accept"}})
        elif shape == "responses":
            body, headers = tool_call("commit_reorder", {"draft_id": "DR-0001", "ledger_version": 1, "lines": [{"sku": "SR-101", "add_on_order": 6}]},
                                      era=era, requestState="v1.x.y", inputResponses={"approval": {"action": "accept", "content": {"note": text}}})
        elif shape == "array":
            body, headers = tool_call("read_stock", {"x": [0] * (size // 2)}, era=era)
        elif shape == "keys":
            body, headers = tool_call("read_stock", {f"k{i}": i for i in range(size // 10)}, era=era)
        else:
            _, headers = tool_call("read_stock", {}, era=era)
            filler = b"x" * size if shape == "garbage" else b" " * size + _dumps(tool_call("read_stock", {}, era=era)[0])
            return Case("huge", filler, _raw_headers(headers))
        return _case_from("huge", body, headers)

    return build()


def _header_value(text: str) -> bytes:
    """``text`` raw (UTF-8) when h11 lets it through, else sentinel-encoded as a client must."""
    raw = text.encode("utf-8", "surrogatepass")
    if _H11_VALUE.fullmatch(raw):
        return raw
    return b"=?base64?" + base64.b64encode(raw) + b"?="


def _sentinel(text: str) -> bytes:
    return b"=?base64?" + base64.b64encode(text.encode("utf-8", "surrogatepass")) + b"?="


header_values = st.one_of(
    st.text(max_size=30).map(_header_value),
    st.sampled_from([b"", b"tools/call", b"tools/list", b"read_stock", b"commit_reorder", MODERN_VERSION.encode(),
                     LEGACY_VERSION.encode(), b"2099-01-01", b"TOOLS/CALL", b"Read_Stock", b"caf\xc3\xa9", b"caf\xe9",
                     b"\xff\xfe", b"=?base64??=", b"=?base64?!!!?=", b"=?BASE64?cmVhZF9zdG9jaw==?=", b"=?base64?cmVhZF9zdG9jaw?=",
                     b"=?base64?cmVhZF9zdG9jaw==?=", b"=?base64?PT9iYXNlNjQ/Y21WaFpGOXpkRzlqYXc9PT89?=", b"read_stock\tx",
                     b"a" * 20_000]),
    st.sampled_from(["read_stock\x00", " read_stock", "read_stock\r\n", "\x7f", "tools/call\n"]).map(_sentinel),
)
ROUTING = ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")


def odd_headers() -> st.SearchStrategy[Case]:
    @st.composite
    def build(draw: st.DrawFn) -> Case:
        era = draw(eras)
        if draw(st.booleans()):
            tool = draw(st.sampled_from(TOOL_NAMES))
            body, headers = tool_call(tool, {}, era=era)
        else:
            body, headers = build_request(draw(st.sampled_from(["tools/list", "server/discover"])), era=era, id=7, capabilities=CAPS)
        raw = _raw_headers(headers)
        for _ in range(draw(st.integers(min_value=1, max_value=3))):
            op = draw(st.sampled_from(["drop", "duplicate", "conflict", "replace", "case", "content-type", "accept", "origin", "host", "junk"]))
            name = draw(st.sampled_from(ROUTING)).encode()
            if op == "drop":
                raw = [(k, v) for k, v in raw if k.lower() != name.lower()]
            elif op == "duplicate":
                raw += [(k, v) for k, v in raw if k.lower() == name.lower()]
            elif op == "conflict":
                raw.append((name, draw(header_values)))
            elif op == "replace":
                raw = [(k, v) for k, v in raw if k.lower() != name.lower()] + [(name, draw(header_values))]
            elif op == "case":
                raw = [(draw(st.sampled_from([k.upper(), k.lower()])), v) for k, v in raw]
            elif op == "content-type":
                raw = [(k, v) for k, v in raw if k.lower() != b"content-type"]
                value = draw(st.sampled_from([None, b"text/plain", b"application/json; charset=latin-1", b"application/x-www-form-urlencoded",
                                              b"multipart/form-data; boundary=x", b"application/json, application/json", b"\xff"]))
                if value is not None:
                    raw.append((b"Content-Type", value))
            elif op == "accept":
                raw = [(k, v) for k, v in raw if k.lower() != b"accept"]
                value = draw(st.sampled_from([None, b"application/json", b"text/event-stream", b"*/*", b"text/html", b"\xff"]))
                if value is not None:
                    raw.append((b"Accept", value))
            elif op == "origin":
                raw.append((b"Origin", draw(st.sampled_from([b"http://evil.example", b"null", b"http://127.0.0.1", b"\xff"]))))
            elif op == "host":
                raw = [(k, v) for k, v in raw if k.lower() != b"host"]  # h11 refuses to send two Host headers
                raw.append((b"Host", draw(st.sampled_from([b"evil.example", b"localhost", b"127.0.0.1:1", b"[::1]", b"\xff"]))))
            else:
                raw.append((draw(st.sampled_from([b"Mcp-Session-Id", b"Last-Event-ID", b"X-Mcp-Name", b"Mcp-Name-"])), draw(header_values)))
        return _case_from("odd_headers", body, raw)

    return build()


def non_ascii_names() -> st.SearchStrategy[Case]:
    names = st.text(min_size=1, max_size=40).filter(lambda s: not s.isascii()) | st.sampled_from(
        ["réad_stock", "read_stоck", "commit_reorder\u200b", "ｒｅａｄ＿ｓｔｏｃｋ", "\u202eread_stock", "读取库存", "🛒", "read_stock\x00"])
    return st.tuples(names, eras, st.booleans()).map(
        lambda p: _case_from("non_ascii_name", *tool_call(p[0], {}, era=p[1]), ascii_only=p[2]))


def every_tool() -> st.SearchStrategy[Case]:
    @st.composite
    def build(draw: st.DrawFn) -> Case:
        name = draw(st.sampled_from([*TOOL_NAMES, "Read_Stock", "commit_reorder ", "delete_item", "reset", "commit-reorder"]))
        arguments = draw(_near_valid_arguments(name if name in TOOL_NAMES else "commit_reorder"))
        extra: dict[str, Any] = {}
        if draw(st.booleans()):
            extra["inputResponses"] = draw(input_responses)
        if draw(st.booleans()):
            extra["requestState"] = draw(odd_strings | scalars)
        caps = draw(st.sampled_from([CAPS, {}, {"elicitation": {}}, {"sampling": {}}]))
        return _case_from("every_tool", *tool_call(name, arguments, era=draw(eras), id=draw(ids), caps=caps, **extra))

    return build()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _same_payload(args: dict[str, Any], payload: dict[str, Any]) -> bool:
    try:
        return (args.get("draft_id"), args.get("ledger_version")) == (payload["draft_id"], payload["ledger_version"]) and \
            sorted(map(json.dumps, args.get("lines") or [])) == sorted(map(json.dumps, payload["lines"]))
    except TypeError:
        return False


def _never_genuine(args: dict[str, Any], extra: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """Safety net: the real requestState on its own payload is only ever declined, never accepted.

    (The legacy approval id needs no net: without a person's out-of-band answer it applies nothing.)
    """
    genuine = (ctx["state"],)
    if not _same_payload(args, ctx["payload"]):
        return args
    responses = extra.get("inputResponses")
    if extra.get("requestState") in genuine and isinstance(responses, dict) and isinstance(responses.get("approval"), dict) \
            and responses["approval"].get("action") == "accept":
        extra["inputResponses"] = {**responses, "approval": {**responses["approval"], "action": "decline"}}
    return args


def forged_commits(ctx: dict[str, Any]) -> st.SearchStrategy[Case]:
    """commit_reorder with states and tokens derived from real ones, never the real one on its own payload + accept."""
    real_state: str = ctx["state"]
    real_token: str = ctx["token"]
    payload: dict[str, Any] = ctx["payload"]
    prefix, body, mac = real_state.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))

    def tampered(position: int, char: str) -> str:
        position %= len(real_state)
        if real_state[position] == char:
            char = "A" if char != "A" else "B"
        return real_state[:position] + char + real_state[position + 1:]

    def reclaimed(key: str, value: Any, key_guess: bytes | None) -> str:
        forged_body = _b64(json.dumps({**claims, key: value}, separators=(",", ":"), sort_keys=True).encode())
        signed = f"{prefix}.{forged_body}"
        forged_mac = mac if key_guess is None else _b64(hmac.new(key_guess, signed.encode(), hashlib.sha256).digest())
        return f"{signed}.{forged_mac}"

    forged_states = st.one_of(
        st.builds(tampered, st.integers(min_value=0, max_value=10_000), st.sampled_from(list("AZaz09-_.=+/~"))),
        st.integers(min_value=0, max_value=len(real_state) - 1).map(lambda n: real_state[:n]),
        st.sampled_from([real_state + "x", real_state + ".", "v2" + real_state[2:], f"{prefix}.{body}.", f"{prefix}..{mac}",
                         f"{prefix}.{body}.{mac}.{mac}", real_state.upper(), real_state[::-1], real_token + "x",
                         real_state + "A" * 5000, f"{prefix}.{body}.{'A' * len(mac)}", f"{prefix}.e30.{mac}"]),
        st.builds(reclaimed, st.sampled_from(["expires", "ledger_version", "draft_id", "tool", "digest", "nonce", "epoch"]),
                  json_values, st.sampled_from([None, b"", b"secret", b"0" * 32])),
        odd_strings, scalars,
    )
    other_payloads = st.one_of(
        st.builds(lambda v: {**payload, "ledger_version": v}, st.integers(min_value=2, max_value=9)),
        st.builds(lambda d: {**payload, "draft_id": d}, st.sampled_from(["DR-0002", "DR-0000", "DR-99999"])),
        st.builds(lambda i, q: {**payload, "lines": [dict(ln, add_on_order=ln["add_on_order"] + q) if n == i % len(payload["lines"]) else ln
                                                     for n, ln in enumerate(payload["lines"])]},
                  st.integers(min_value=0, max_value=9), st.integers(min_value=1, max_value=50)),
        st.just({**payload, "lines": payload["lines"][:-1]}),
        st.just({**payload, "lines": [*payload["lines"], {"sku": "SR-102", "add_on_order": 1}]}),
    )
    actions = st.sampled_from(["accept", "accept", "decline", "cancel"])

    @st.composite
    def build(draw: st.DrawFn) -> Case:
        era = draw(eras)
        mode = draw(st.sampled_from(["forged_state", "real_state_other_payload", "real_state_decline", "bad_responses", "legacy_token"]))
        args: dict[str, Any] = dict(payload)
        state: Any = draw(forged_states)
        action: Any = draw(actions)
        if mode == "real_state_other_payload":
            args, state = draw(other_payloads), real_state if era == "modern" else real_token
        elif mode == "real_state_decline":
            state, action = (real_state if era == "modern" else real_token), draw(st.sampled_from(["decline", "cancel"]))
        elif mode == "legacy_token":
            state = real_token if era == "modern" else real_state  # a token from the other era's path
            args = draw(other_payloads) if action == "accept" else args
        if era == "legacy":
            args["approval_id"] = state
            args = _never_genuine(args, {}, ctx)
            if draw(st.booleans()):  # a legacy client that also sends modern MRTR fields
                return _case_from("forged_commit", *tool_call("commit_reorder", args, era=era, id=draw(ids),
                                                              requestState=state, inputResponses={"approval": {"action": action}}))
            return _case_from("forged_commit", *tool_call("commit_reorder", args, era=era, id=draw(ids)))
        responses: Any = {"approval": {"action": action, "content": {"note": draw(odd_strings)}}}
        if mode == "bad_responses":
            responses = draw(input_responses)
            state = draw(forged_states | st.just(real_state))
            if state == real_state and args == payload and isinstance(responses, dict) and isinstance(responses.get("approval"), dict) \
                    and responses["approval"].get("action") == "accept":
                responses["approval"]["action"] = "decline"  # never hand the server a genuine approval
        extra: dict[str, Any] = {"requestState": state, "inputResponses": responses}
        if draw(st.booleans()):
            extra.pop(draw(st.sampled_from(["requestState", "inputResponses"])))
            if "requestState" not in extra and draw(st.booleans()):
                args["approval_id"] = real_token  # a 2026-07-28 client may not use the legacy path
        return _case_from("forged_commit", *tool_call("commit_reorder", _never_genuine(args, extra, ctx), era=era, id=draw(ids), **extra))

    return build()


def other_verbs() -> st.SearchStrategy[Case]:
    @st.composite
    def build(draw: st.DrawFn) -> Case:
        verb = draw(st.sampled_from(["GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"]))
        headers: list[tuple[bytes, bytes]] = []
        version = draw(st.sampled_from([None, MODERN_VERSION, LEGACY_VERSION, "2099-01-01"]))
        if version:
            headers.append((b"MCP-Protocol-Version", version.encode()))
        if draw(st.booleans()):
            headers.append((b"Accept", draw(st.sampled_from([b"text/event-stream", b"application/json, text/event-stream", b"*/*"]))))
        if draw(st.booleans()):
            headers.append((b"Mcp-Session-Id", draw(header_values)))
        if draw(st.booleans()):
            headers.append((b"Mcp-Method", b"tools/list"))
        content = draw(st.sampled_from([b"", _dumps(build_request("tools/list")[0]), b"{"]))
        if content:
            headers.append((b"Content-Type", b"application/json"))
        return Case("other_verb", content, headers, verb=verb)

    return build()


def other_methods() -> st.SearchStrategy[Case]:
    methods = st.sampled_from(["initialize", "notifications/initialized", "notifications/cancelled", "ping", "server/discover",
                               "tools/list", "resources/list", "resources/read", "prompts/get", "prompts/list", "completion/complete",
                               "logging/setLevel", "tasks/get", "tasks/cancel", "subscriptions/listen", "resources/subscribe",
                               "sampling/createMessage", "elicitation/create", "rpc.discover", "", "TOOLS/LIST", "tools/call/",
                               "tools/list\u0000", "x" * 300])
    return st.tuples(methods, st.dictionaries(st.sampled_from(["name", "uri", "taskId", "cursor", "level", "protocolVersion",
                                                               "capabilities", "clientInfo", "ref", "argument"]), json_values, max_size=3),
                     eras, st.booleans()).map(
        lambda p: _case_from("other_method", *build_request(p[0], p[1], era=p[2], id=None if p[3] and p[0].startswith("notifications/") else 3,
                                                            capabilities=CAPS)))


def all_cases(ctx: dict[str, Any]) -> st.SearchStrategy[Case]:
    return st.one_of(bad_json_bytes(), wrong_shapes(), wrong_types(), huge_bodies(), odd_headers(), non_ascii_names(),
                     every_tool(), forged_commits(ctx), other_verbs(), other_methods())


CATEGORIES = {"bad_json", "wrong_shape", "wrong_types", "huge", "odd_headers", "non_ascii_name", "every_tool", "forged_commit",
              "other_verb", "other_method"}


# --------------------------------------------------------------------------------------------
# the server and the exchange
@pytest.fixture(scope="module")
def live() -> Any:
    with serve_stockroom(":memory:") as srv, httpx.Client(timeout=httpx.Timeout(20.0)) as client:
        ctx: dict[str, Any] = {"srv": srv, "client": client, "probe_id": 10_000}
        body, headers = tool_call("draft_reorder", {})
        draft = client.post(srv.url, content=_dumps(body), headers=headers).json()["result"]["structuredContent"]
        ctx["payload"] = {k: draft[k] for k in ("draft_id", "ledger_version", "lines")}
        body, headers = tool_call("commit_reorder", ctx["payload"])
        asked = client.post(srv.url, content=_dumps(body), headers=headers).json()["result"]
        assert asked["resultType"] == "input_required"
        ctx["state"] = asked["requestState"]
        body, headers = tool_call("commit_reorder", ctx["payload"], era="legacy")
        asked = client.post(srv.url, content=_dumps(body), headers=headers).json()["result"]
        ctx["token"] = asked["structuredContent"]["approval_id"]  # grants nothing: no person answers it here
        ctx["strategy"] = all_cases(ctx)
        yield ctx


def _server_thread(port: int) -> threading.Thread | None:
    return next((th for th in threading.enumerate() if th.name == f"stockroom:{port}"), None)


def _era_of(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The era the server routes on (its ``MCP-Protocol-Version`` header), ``None`` when ambiguous."""
    values = [v for k, v in headers if k.lower() == b"mcp-protocol-version"]
    if len(set(values)) > 1:
        return None
    return "modern" if values and values[0].decode("latin-1") in MODERN_VERSIONS else "legacy"


def send(client: httpx.Client, url: str, case: Case) -> tuple[int, httpx.Headers, bytes]:
    """Send ``case`` with exactly its headers (plus Host and Content-Length), return status, headers, body."""
    request = client.build_request(case.verb, url, content=case.content or None)
    keep = {b"host", b"content-length", b"user-agent", b"connection"}
    if any(k.lower() == b"host" for k, _ in case.headers):
        keep.discard(b"host")
    request.headers = httpx.Headers([(k, v) for k, v in request.headers.raw if k.lower() in keep] + case.headers)
    response = client.send(request, stream=True)
    try:
        media = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
        if case.verb == "GET" and media == "text/event-stream":
            return response.status_code, response.headers, b""  # a legacy standalone stream: only its head matters
        return response.status_code, response.headers, response.read()
    finally:
        response.close()


def check_answer(case: Case, status: int, headers: httpx.Headers, body: bytes) -> None:
    assert status < 500, f"HTTP {status}: {body[:500]!r}"
    media = (headers.get("content-type") or "").split(";")[0].strip().lower()
    era = _era_of(case.headers)
    # Strict where the JSON-RPC layer answered (200/202/400/404). Transport-level refusals (406 Accept,
    # 413 size, 415, 421 Host, 403 Origin) come before the body is read and carry "id": null.
    if case.request is not None and case.verb == "POST" and era is not None and status in (200, 202, 400, 404) \
            and (media in ("application/json", "text/event-stream") or status != 400):
        validate_response(body, case.request, status=status, headers=list(headers.items()), era=era)
    elif media == "application/json" and 400 <= status < 500 and body:
        answer = json.loads(body)
        assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0" and isinstance(answer.get("error"), dict), answer


def probe(ctx: dict[str, Any]) -> None:
    srv, client = ctx["srv"], ctx["client"]
    thread = _server_thread(srv.port)
    assert thread is not None and thread.is_alive(), "the server thread died"
    ctx["probe_id"] += 1
    body, headers = build_request("tools/list", era="modern", id=ctx["probe_id"], capabilities={})
    reply = client.post(srv.url, content=_dumps(body), headers=headers)
    answer = validate_response(reply.content, body, status=reply.status_code, headers=list(reply.headers.items()))
    assert answer is not None and [tool["name"] for tool in answer["result"]["tools"]] == list(TOOL_NAMES)


# --------------------------------------------------------------------------------------------
# tests
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=False,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                                 HealthCheck.large_base_example])
@given(data=st.data())
def test_hostile_requests_never_break_the_server(live: dict[str, Any], data: st.DataObject) -> None:
    started = time.perf_counter()
    case = data.draw(live["strategy"], label="case")
    status, headers, body = send(live["client"], live["srv"].url, case)
    _STATS["examples"] += 1
    _STATS["categories"][case.category] += 1
    _STATS["statuses"][status] += 1
    check_answer(case, status, headers, body)
    probe(live)
    _STATS["seconds"] += time.perf_counter() - started


def test_ledger_is_the_seed_after_fuzzing(live: dict[str, Any]) -> None:
    """No forged approval got through: version 1 and the seed's on_order (a snapshot reads no trace)."""
    snapshot = live["srv"].stockroom.snapshot()
    print(f"\nfuzz: {_STATS['examples']} examples in {_STATS['seconds']:.1f} s; categories "
          f"{dict(sorted(_STATS['categories'].items()))}; statuses {dict(sorted(_STATS['statuses'].items()))}")
    if _STATS["examples"] >= EXAMPLES:
        assert set(_STATS["categories"]) == CATEGORIES
    assert snapshot["ledger_version"] == SEED_LEDGER_VERSION == 1
    assert {it["sku"]: it["on_order"] for it in snapshot["items"]} == {it["sku"]: it["on_order"] for it in SEED_ITEMS}


def test_trace_verifies_after_fuzzing(live: dict[str, Any]) -> None:
    """The hash chain is intact and no commit was approved."""
    room = live["srv"].stockroom
    assert room.verify() == []
    assert not [record for record in room.trace() if record["decision"] == "approved"]


def test_deeply_nested_arguments_do_not_poison_the_trace() -> None:
    """Regression: arguments nested ~950 levels deep were stored as sent, and reading the trace back
    (``trace()``/``verify()`` a few frames deep, ``GET /stockroom/trace``) raised RecursionError (HTTP 500).
    The trace now stores a bounded summary of such arguments."""
    with serve_stockroom(":memory:") as srv, httpx.Client(timeout=20.0) as client:
        body, headers = tool_call("read_stock", {})
        for depth in (900, 940, 960):
            raw = _dumps(body).replace(b'"arguments": {}', b'"arguments": {"x": ' + b'{"a":' * depth + b"1" + b"}" * depth + b"}")
            reply = client.post(srv.url, content=raw, headers=headers)
            assert reply.status_code == 400
        assert client.get(srv.base_url + "/stockroom/trace").status_code == 200
        assert srv.stockroom.verify() == []
        records = srv.stockroom.trace()
        assert len(records) == 3
        assert all("nested deeper" in record["arguments"]["omitted"] for record in records)
