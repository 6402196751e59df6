"""Independent evidence for the transcript suite: the official MCP JSON Schemas.

The files under ``mcplab/transcripts/`` are read with ``json`` + ``pathlib`` only (never
through mcplab's own runner), and every golden exchange is validated with
``jsonschema.Draft202012Validator`` against the official schema of its era
(``$MCPLAB_SPEC_DIR``, ``../shared/spec`` beside the checkout, or ``/work/shared/spec``). The suite's bookkeeping is checked here
too: names come from ``mcplab.cases.CASES``, negatives carry the registry's boundary and
code, file names match ``name[.variant]``, and every core case has at least one file.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcplab.cases import CASES, GENERATED_ONLY

from .conftest import spec_dir

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT / "mcplab" / "transcripts"

SPEC_DIR = spec_dir()
SCHEMA_FILES = {"modern": "mcp-2026-07-28.schema.json", "legacy": "mcp-2025-11-25.schema.json"}
VERSIONS = {"modern": "2026-07-28", "legacy": "2025-11-25"}

FILES = sorted(TRANSCRIPTS.glob("*.json"))
IDS = [p.stem for p in FILES]

#: Request def, result def per resultType, and the typed response def (None: only the generic envelope).
#: Every name is checked against the schema files by ``test_mapped_defs_exist``.
METHOD_DEFS: dict[str, dict[str, tuple[str, dict[str, str | None], str | None]]] = {
    "modern": {
        "server/discover": ("DiscoverRequest", {"complete": "DiscoverResult"}, "DiscoverResultResponse"),
        "tools/list": ("ListToolsRequest", {"complete": "ListToolsResult"}, "ListToolsResultResponse"),
        "tools/call": (
            "CallToolRequest",
            # The tasks extension result has no core def: the generic envelope (Result) checks it.
            {"complete": "CallToolResult", "input_required": "InputRequiredResult", "task": None},
            "CallToolResultResponse",
        ),
        "completion/complete": ("CompleteRequest", {"complete": "CompleteResult"}, "CompleteResultResponse"),
    },
    "legacy": {
        "tools/list": ("ListToolsRequest", {"complete": "ListToolsResult"}, None),
    },
}
GENERIC = ("JSONRPCRequest", "JSONRPCNotification", "JSONRPCResultResponse", "JSONRPCErrorResponse")

#: Error code -> (def, whether the def describes the whole response or only the ``error`` member).
ERROR_DEFS: dict[int, tuple[str, str]] = {
    -32020: ("HeaderMismatchError", "response"),
    -32021: ("MissingRequiredClientCapabilityError", "response"),
    -32022: ("UnsupportedProtocolVersionError", "response"),
    -32602: ("InvalidParamsError", "error"),
    -32600: ("InvalidRequestError", "error"),
    -32700: ("ParseError", "error"),
    -32601: ("MethodNotFoundError", "error"),
}
ERROR_STATUS = {-32020: 400, -32021: 400, -32022: 400, -32602: 400, -32600: 400, -32700: 400, -32601: 404}

#: Registry families that are covered elsewhere (stockroom server, SSE captures, health windows, era decisions).
NOT_IN_SUITE = ("negative-stockroom", "golden-stockroom", "negative-sse-buffered", "negative-sse-stream-regressed",
                "negative-sse-events-lost", "era-")
STEM = re.compile(r"^(?P<name>[a-z0-9-]+)(?:\.(?P<variant>[a-z0-9-]+))?$")
SENTINEL = re.compile(r"^=\?base64\?(?P<payload>.*)\?=$")
ROUTED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


# ---------------------------------------------------------------- helpers


@cache
def schema(era: str) -> dict[str, Any]:
    path = SPEC_DIR / SCHEMA_FILES[era]
    if not path.is_file():
        pytest.skip(f"official schema not available: {path}")
    document = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(document)  # once per era; the wrappers below only $ref into it
    return document


@cache
def validator(era: str, name: str) -> Draft202012Validator:
    defs = schema(era)["$defs"]
    assert name in defs, f"{name} is not a def of the {era} schema"
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": defs})


def check(era: str, name: str, instance: Any, where: str) -> None:
    errors = sorted(validator(era, name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{where} does not match {name} ({SCHEMA_FILES[era]}):"]
        lines += [f"  at /{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in errors[:5]]
        pytest.fail("\n".join(lines))


@cache
def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def exchanges(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [data, *data.get("then", [])]


def headers_of(exchange: dict[str, Any]) -> dict[str, list[str]]:
    raw = exchange.get("requestHeaders") or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    folded: dict[str, list[str]] = {}
    for name, value in pairs:
        folded.setdefault(name.lower(), []).append(value)
    return folded


def response_headers_of(exchange: dict[str, Any]) -> dict[str, list[str]]:
    return headers_of({"requestHeaders": exchange.get("responseHeaders")})


def decode_sentinel(value: str) -> str:
    match = SENTINEL.fullmatch(value)
    if match is None:
        return value
    try:
        raw = base64.b64decode(match["payload"], validate=True)
    except binascii.Error:
        pytest.fail(f"malformed base64 sentinel {value!r}")
    assert base64.b64encode(raw).decode("ascii") == match["payload"], f"non-canonical sentinel {value!r}"
    return raw.decode("utf-8")


def by_class(cls: str) -> list[Path]:
    return [p for p in FILES if load(p).get("class") == cls]


GOLDEN = by_class("golden")
ORIGIN_NEGATIVES = [p for p in FILES if load(p).get("expect", {}).get("boundary") == "origin"]


# ---------------------------------------------------------------- the suite as a whole


def test_suite_size_and_unique_keys() -> None:
    assert len(FILES) >= 24, f"only {len(FILES)} transcript files"
    keys = [(load(p)["name"], load(p).get("variant")) for p in FILES]
    duplicates = sorted({k for k in keys if keys.count(k) > 1}, key=str)
    assert not duplicates, f"duplicate (name, variant) pairs: {duplicates}"


def test_every_core_case_has_a_transcript() -> None:
    covered = {load(p)["name"] for p in FILES}
    wanted = {
        name
        for name in CASES
        if name.startswith(("golden-", "negative-")) and not name.startswith(NOT_IN_SUITE) and name not in GENERATED_ONLY
    }
    assert sorted(wanted - covered) == []


def test_mapped_defs_exist() -> None:
    """Every def name this module uses is read from the schema files, not assumed."""
    for era, methods in METHOD_DEFS.items():
        defs = schema(era)["$defs"]
        names = set(GENERIC)
        for request_def, results, response_def in methods.values():
            names.add(request_def)
            names.update(n for n in results.values() if n)
            if response_def:
                names.add(response_def)
        if era == "modern":
            names.update(name for name, _ in ERROR_DEFS.values())
        assert sorted(names - set(defs)) == [], f"{era}: unknown defs"


def test_official_schema_rejects_null_error_id() -> None:
    """Pinned divergence: JSON-RPC 2.0 requires ``"id": null`` on a parse/invalid-request error,
    and mcp 2.3.0 sends it, but both official schemas type ``id`` as string|integer. The
    origin-error check below therefore validates such a body without its null id. If the
    schema starts accepting null, this test fails and the carve-out can go."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    for era in SCHEMA_FILES:
        assert not validator(era, "JSONRPCErrorResponse").is_valid(body)
        assert validator(era, "JSONRPCErrorResponse").is_valid({k: v for k, v in body.items() if k != "id"})


# ---------------------------------------------------------------- every file


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_file_is_a_well_formed_transcript(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and not text.endswith("\n\n"), "one trailing newline"
    data = json.loads(text)
    assert isinstance(data, dict)
    name = data.get("name")
    assert name in CASES, f"{name!r} is not a case of mcplab.cases"
    match = STEM.fullmatch(path.stem)
    assert match, f"file name {path.name!r} is not <name>[.<variant>].json"
    assert match["name"] == name, f"file name {path.name!r} does not match name {name!r}"
    assert match["variant"] == data.get("variant"), f"file name {path.name!r} does not match variant {data.get('variant')!r}"
    assert data.get("class") in ("golden", "negative") and name.startswith(data["class"] + "-")
    assert data.get("era") in ("modern", "legacy")
    assert isinstance(data.get("description"), str) and data["description"].strip()
    for index, exchange in enumerate(exchanges(data)):
        assert ("request" in exchange) != ("requestText" in exchange), f"exchange {index}: request xor requestText"
        assert ("responseBody" in exchange) != ("responseText" in exchange), f"exchange {index}: responseBody xor responseText"
        assert isinstance(exchange.get("responseStatus"), int)
    case = CASES[name]
    if data["class"] == "golden":
        assert "expect" not in data
        return
    expect = data.get("expect")
    assert isinstance(expect, dict), "a negative needs expect"
    assert expect.get("boundary") == case.boundary
    if name == "negative-malformed-envelope":
        assert expect.get("code") in (-32600, -32700)
    else:
        assert expect.get("code") == case.code
    if case.boundary == "intermediary":
        assert isinstance(data.get("origin"), dict), "an intermediary transcript needs origin"


# ---------------------------------------------------------------- golden: the official schemas


def sse_messages(text: str) -> list[dict[str, Any]]:
    """JSON-RPC messages of an event stream, parsed here without mcplab (blank-line separated events)."""
    messages = []
    for block in re.split(r"\r?\n\r?\n", text):
        data = [line[5:].lstrip(" ") for line in re.split(r"\r?\n", block) if line.startswith("data:")]
        if data:
            messages.append(json.loads("\n".join(data)))
    return messages


def _check_modern_headers(exchange: dict[str, Any], request: dict[str, Any], where: str) -> None:
    headers = headers_of(exchange)
    for name in ("mcp-protocol-version", "mcp-method", "accept", "content-type"):
        assert len(headers.get(name, [])) == 1, f"{where}: exactly one {name} header"
    version = request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] if "id" in request else VERSIONS["modern"]
    assert headers["mcp-protocol-version"] == [version], f"{where}: MCP-Protocol-Version"
    assert headers["mcp-method"] == [request["method"]], f"{where}: Mcp-Method"
    accept = {part.strip() for part in headers["accept"][0].split(",")}
    assert {"application/json", "text/event-stream"} <= accept, f"{where}: Accept"
    assert headers["content-type"][0].split(";")[0].strip() == "application/json"
    field = ROUTED.get(request["method"])
    if field is not None:
        assert len(headers.get("mcp-name", [])) == 1, f"{where}: exactly one Mcp-Name header"
        raw = headers["mcp-name"][0]
        assert raw == raw.strip() and all(0x20 <= ord(c) <= 0x7E for c in raw), f"{where}: raw Mcp-Name"
        assert decode_sentinel(raw) == request["params"][field], f"{where}: Mcp-Name vs params.{field}"


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_exchanges_match_the_official_schema(path: Path) -> None:
    data = load(path)
    era = data["era"]
    methods = METHOD_DEFS[era]
    for index, exchange in enumerate(exchanges(data)):
        where = f"{path.name} exchange {index}"
        assert "request" in exchange, f"{where}: a golden request is JSON"
        request, status = exchange["request"], exchange["responseStatus"]
        if "responseText" in exchange:  # an SSE answer: notifications first, the response last
            assert response_headers_of(exchange).get("content-type") == ["text/event-stream"], f"{where}: SSE content type"
            *notes, body = sse_messages(exchange["responseText"])
            for note in notes:
                check(era, "JSONRPCNotification", note, f"{where} event")
                check(era, "ProgressNotification", note, f"{where} event")
                assert note["params"]["progressToken"] == request["params"]["_meta"]["progressToken"]
            exchange = {**exchange, "responseHeaders": [["Content-Type", "application/json"]]}
        else:
            body = exchange["responseBody"]
        method = request["method"]
        if "id" not in request:
            # The course-extension notification is no core method: the generic def checks it.
            check(era, "JSONRPCNotification", request, f"{where} request")
            assert status == 202 and body is None, f"{where}: a notification gets 202 and an empty body"
            assert "content-type" not in response_headers_of(exchange), f"{where}: 202 without Content-Type"
            if era == "modern":
                _check_modern_headers(exchange, request, where)
            continue
        assert method in methods, f"{where}: no schema mapping for {method} in the {era} era"
        request_def, result_defs, response_def = methods[method]
        check(era, "JSONRPCRequest", request, f"{where} request")
        check(era, request_def, request, f"{where} request")
        assert status == 200, f"{where}: HTTP {status}"
        content_type = response_headers_of(exchange).get("content-type", [""])
        assert content_type[0].split(";")[0].strip() == "application/json", f"{where}: response Content-Type"
        check(era, "JSONRPCResultResponse", body, f"{where} response")
        assert body["id"] == request["id"] and type(body["id"]) is type(request["id"])
        result = body["result"]
        result_type = result.get("resultType", "complete" if era == "legacy" else None)
        assert result_type in result_defs, f"{where}: resultType {result_type!r} has no mapping for {method}"
        if era == "modern":
            _check_modern_headers(exchange, request, where)
            assert "resultType" in result
        else:
            assert "resultType" not in result, "the legacy golden shows a result without resultType"
        if result_type == "task":
            assert "io.modelcontextprotocol/tasks" in (data.get("serverCapabilities") or {}).get("extensions", {})
            continue
        if response_def:
            check(era, response_def, body, f"{where} response")
        check(era, result_defs[result_type], result, f"{where} result")


# ---------------------------------------------------------------- origin negatives: real error responses


@pytest.mark.parametrize("path", ORIGIN_NEGATIVES, ids=[p.stem for p in ORIGIN_NEGATIVES])
def test_origin_errors_match_the_official_schema(path: Path) -> None:
    data = load(path)
    code = data["expect"]["code"]
    rejected = data["then"][-1] if data.get("then") else data  # the exchange the origin refused
    body = rejected["responseBody"]
    assert rejected["responseStatus"] == ERROR_STATUS[code]
    assert body["error"]["code"] == code
    request = rejected.get("request")
    readable = isinstance(request, dict) and request.get("jsonrpc") == "2.0" and "id" in request
    if readable:
        assert "id" in body and body["id"] == request["id"] and type(body["id"]) is type(request["id"])
    if body.get("id", 0) is None:
        # See test_official_schema_rejects_null_error_id.
        assert code in (-32700, -32600), "only an unreadable or invalid request is answered with id null"
        body = {k: v for k, v in body.items() if k != "id"}
    era = data["era"]
    check(era, "JSONRPCErrorResponse", body, f"{path.name} response")
    def_name, scope = ERROR_DEFS[code]
    check(era, def_name, body if scope == "response" else body["error"], f"{path.name} response")
    if code == -32021:
        assert data.get("requiredCapabilities") == body["error"]["data"]["requiredCapabilities"]
    if code == -32022:
        assert body["error"]["data"]["requested"] == request["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
