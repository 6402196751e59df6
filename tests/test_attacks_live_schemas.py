"""A server under test hands `mcplab check` its own schemas and answers: none may make the check
fetch anything, read a file, run an exponential regex, or crash.

* A ``$ref`` to a URL or a file in an ``inputSchema``/``outputSchema`` is never fetched or read.
* A ``pattern`` that can backtrack exponentially is not run.
* Numbers no range can use (``multipleOf: 1e-320``, ``minimum: NaN``, a huge integer) generate nothing odd.
* A ``server/discover`` answer nested deeper than the validator follows is a schema problem, not a RecursionError.
* A prompt whose ``arguments`` is not a list, and a -32021 error whose ``data`` is not an object, end in rows.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcplab._schema import untrusted_validator
from mcplab.live.argsgen import invalid_arguments, valid_arguments
from mcplab.live.check import run_check
from mcplab.schemas import schema_errors
from mcplab.serving import serve_app

from .conftest import serve_handler


class _Counting(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        _Counting.hits.append(self.path)
        body = json.dumps({"type": "string", "const": "from-the-network"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_ref_to_a_url_or_a_file_is_never_fetched(tmp_path):
    local = tmp_path / "schema.json"
    local.write_text(json.dumps({"type": "string", "const": "from-a-file"}))
    _Counting.hits = []
    with serve_handler(_Counting) as port:
        for ref in (f"http://127.0.0.1:{port}/internal-secret", local.as_uri()):
            schema = {"type": "object", "properties": {"x": {"$ref": ref}}, "required": ["x"]}
            assert valid_arguments(schema, 2, 1) == []  # unresolvable here: nothing generated
            assert invalid_arguments(schema, 1) is None
    assert _Counting.hits == []


def test_an_exponential_pattern_is_not_run():
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(\\w+)+!$"}}, "required": ["s"]}
    validator = untrusted_validator(schema)
    assert validator is not None
    assert validator.is_valid({"s": "a" * 40})  # the pattern is skipped: it would backtrack for minutes on this
    assert len(valid_arguments(schema, 2, 3)) == 2


def test_numbers_no_range_can_use_generate_plain_values():
    for sub in ({"type": "number", "multipleOf": 1e-320}, {"type": "integer", "minimum": float("nan")},
                {"type": "number", "maximum": float("inf")}, {"type": "integer", "minimum": 10**400}):
        schema = {"type": "object", "properties": {"n": sub}, "required": ["n"]}
        for arguments in valid_arguments(schema, 2, 5):
            assert isinstance(arguments["n"], (int, float))


def test_a_discover_answer_nested_too_deeply_is_a_schema_problem():
    deep: object = {}
    for _ in range(200):
        deep = {"x": deep}
    answer = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
              "capabilities": {"experimental": {"deep": deep}}, "serverInfo": {"name": "s", "version": "1"}}
    problems = schema_errors(answer, "modern", "DiscoverResult")
    assert problems and all(isinstance(p, str) for p in problems)


def test_odd_prompt_arguments_and_capability_errors_end_in_rows():
    async def mcp(request: Request) -> Response:
        message = json.loads(await request.body())
        if "id" not in message:
            return Response(status_code=202)
        base = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
        method = message.get("method")
        if method == "server/discover":
            result = {**base, "supportedVersions": ["2026-07-28"], "capabilities": {"prompts": {}, "tools": {}},
                      "serverInfo": {"name": "odd", "version": "1"}}
        elif method == "prompts/list":
            result = {**base, "prompts": [{"name": "p", "arguments": 5}, {"name": "q", "arguments": "abc"}]}
        elif method == "tools/list":
            result = {**base, "tools": [{"name": "t", "annotations": {"readOnlyHint": True},
                                          "inputSchema": {"type": "object", "$ref": "http://127.0.0.1:9/never"}}]}
        else:  # -32021 with data that is not an object, for everything else
            return JSONResponse({"jsonrpc": "2.0", "id": message["id"],
                                 "error": {"code": -32021, "message": "caps", "data": "x"}}, status_code=400)
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})

    with serve_app(Starlette(routes=[Route("/mcp", mcp, methods=["POST"])]), port=0) as port:
        result = run_check(f"http://127.0.0.1:{port}/mcp", generate=True, timeout=5)
    assert result.era["era"] == "modern" and result.rows
    assert any(row["case"].startswith("golden-declared-method.prompts-get") for row in result.rows)
