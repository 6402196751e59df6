"""``mcplab check`` on servers it has never seen, built without mcplab's code: the ``mcp`` SDK's
high-level ``MCPServer`` and the TypeScript SDK v2 (npm). Each gets at least 40 judged checks; a
failure is only ever one of the real deviations listed here (and in the README's findings), each
traceable to a MUST or the schema; SHOULDs and course rules are warnings. A deliberately broken toy
server is the control for false passes: each of its faults fails the check that names it.
"""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mcplab.cases import CASES
from mcplab.cli import main
from mcplab.live.check import run_check
from mcplab.serving import serve_app

from .foreign.py_server import serve_python_sdk

#: The real deviations: a parse error or a batch answered with "id": null, which the schemas'
#: RequestId forbids (basic/index.mdx § Error Responses: an unreadable id is left out).
PYTHON_SDK_DEVIATIONS = {"negative-malformed-envelope.parse", "negative-malformed-envelope.batch", "negative-malformed-envelope.jsonrpc"}
TS_SDK_DEVIATIONS = {"negative-malformed-envelope.parse", "negative-malformed-envelope.batch"}
MIN_JUDGED = 40


def _judged(result) -> dict[str, dict]:
    return {row["case"]: row for row in result.rows if row["applies"] and row["direct"]["status"] in ("pass", "fail")}


def _assert_sound(result, deviations: set[str]) -> None:
    judged = _judged(result)
    assert len(judged) >= MIN_JUDGED, f"only {len(judged)} checks judged"
    failed = {key for key, row in judged.items() if row["direct"]["status"] == "fail"}
    assert failed == deviations, f"failures beyond the known deviations (or a deviation fixed): {sorted(failed ^ deviations)}"
    for key, row in judged.items():
        authority = row["direct"]["authority"]
        assert authority and authority["level"] in ("MUST", "schema", "SHOULD", "course") and authority["where"], key
        if row["direct"]["status"] == "fail":
            assert authority["level"] in ("MUST", "schema"), f"{key} failed on a {authority['level']}"
            assert row["direct"]["observed"] == "negative-id-mismatch" and "null" in row["direct"]["detail"], key
        for warning in row["direct"]["warnings"]:
            assert warning["authority"]["level"] in ("SHOULD", "course"), key
        evidence = row["evidence"]["direct"]
        assert evidence["request"]["body"] is not None and evidence["response"]["status"] is not None, key
    generated = {row["name"] for row in judged.values() if row["generated"]}
    assert {"golden-modern-call", "negative-invalid-arguments", "golden-mcp-name-sentinel", "negative-unknown-method",
            "negative-origin-not-allowed", "golden-declared-method", "negative-unsupported-version", "negative-unknown-resource",
            "negative-unknown-prompt", "negative-unknown-tool", "negative-invalid-cursor"} <= generated


@pytest.fixture(scope="module")
def python_sdk():
    with serve_python_sdk() as url:
        yield url


def test_the_python_sdk_server_gets_a_full_examination_and_only_its_real_deviations_fail(python_sdk):
    result = run_check(python_sdk, generate=True)
    assert result.era["era"] == "modern"
    _assert_sound(result, PYTHON_SDK_DEVIATIONS)
    judged = _judged(result)
    # its _meta type check comes after the header check: the course's order, a warning only
    assert [w["id"] for w in judged["negative-meta-type.version"]["direct"]["warnings"]] == ["course-types-first"]
    assert "should-unknown-tool-error" in {w["id"] for w in judged["negative-unknown-tool.gen"]["direct"]["warnings"]}
    # an unknown prompt gets -32603 (internal error) where a SHOULD asks for -32602: a warning, not a failure
    assert [w["id"] for w in judged["negative-unknown-prompt.gen"]["direct"]["warnings"]] == ["should-unknown-prompt-error"]
    assert judged["negative-unknown-resource.gen"]["direct"]["status"] == "pass"
    # the tool without readOnlyHint is never called unless asked
    skipped = {row["case"]: row["reason"] for row in result.rows if not row["applies"]}
    assert "readOnlyHint" in skipped["golden-modern-call.gen-delete_everything"]


def test_course_rules_turn_course_warnings_into_failures(python_sdk):
    result = run_check(python_sdk, only=["negative-meta-type"], course_rules=True, generate=True)
    row = next(row for row in result.rows if row["case"] == "negative-meta-type.version")
    assert row["direct"]["status"] == "fail" and row["direct"]["authority"]["level"] == "course"


def test_call_tools_all_calls_the_other_tools_too(python_sdk):
    result = run_check(python_sdk, only=["golden-modern-call"], call_tools="all", generate=True)
    assert _judged(result)["golden-modern-call.gen-delete_everything-1"]["direct"]["status"] == "pass"


def test_the_legacy_side_of_a_dual_era_server_is_judged_with_era_legacy(python_sdk):
    result = run_check(python_sdk, era_mode="legacy", generate=True)
    assert result.era["era"] == "legacy" and result.era["mode"] == "legacy"
    assert result.era["observations"][0]["kind"] == "discover_success"  # modern was proven, and still legacy is judged
    judged = _judged(result)
    assert len(judged) >= 15 and all(row["direct"]["status"] == "pass" for row in judged.values()), \
        {k: r["direct"]["detail"] for k, r in judged.items() if r["direct"]["status"] == "fail"}
    assert {"golden-legacy-list", "golden-declared-method.resources-read-file----fixture-readme.txt"} <= set(judged)


def test_a_stream_from_the_python_sdk_is_judged_by_its_events():
    with serve_python_sdk(json_response=False) as url:
        result = run_check(url, only=["golden-sse-stream"], generate=True)
    row = _judged(result)["golden-sse-stream.gen-count"]
    assert row["direct"]["status"] == "pass" and row["direct"]["timing"]["eventCount"] >= 4


def test_the_command_line_prints_authority_warnings_and_evidence(python_sdk, capsys, tmp_path):
    report = tmp_path / "foreign.html"
    assert main(["check", "--url", python_sdk, "--report", str(report)]) == 1
    out = capsys.readouterr().out
    assert "AUTHORITY" in out and "WARNINGS" in out
    assert "FAIL negative-malformed-envelope.parse" in out and "authority: schema $defs/RequestId" in out
    assert "answer: HTTP 400" in out and "request: {not json" in out
    assert "WARN negative-meta-type.version: course-types-first" in out
    page = report.read_text(encoding="utf-8")
    assert "authority of the verdict" in page and "course-types-first" in page and "$defs/RequestId" in page
    assert main(["check", "--url", python_sdk, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert "course-types-first" in data["warnings"] and data["surface"]["tools"] == 4


@pytest.mark.network
def test_the_typescript_sdk_server_gets_a_full_examination_and_only_its_real_deviations_fail():
    from .foreign.support import NpmUnavailable, serve_typescript_sdk

    try:
        server = serve_typescript_sdk()
        url = server.__enter__()
    except NpmUnavailable as exc:
        pytest.skip(f"the TypeScript SDK cannot be installed here: {exc}")
    try:
        result = run_check(url, generate=True)
        assert result.era["era"] == "modern"
        _assert_sound(result, TS_SDK_DEVIATIONS)
        judged = _judged(result)
        # its 200 for -32602 is allowed by 2026-07-28 (400 is mandated only for -32020/-32021/-32022 and a missing _meta key)
        assert [w["id"] for w in judged["negative-invalid-params"]["direct"]["warnings"]] == ["course-error-status"]
        assert judged["golden-sse-stream.gen-count"]["direct"]["status"] == "pass"  # it upgrades to SSE for progress
        assert judged["golden-completion.gen-greet"]["direct"]["status"] == "pass"
        legacy = run_check(url, era_mode="legacy", generate=True)
        assert legacy.era["era"] == "legacy" and legacy.ok
    finally:
        server.__exit__(None, None, None)


# ---------------------------------------------------------------- the control for false passes

def _broken_app() -> Starlette:
    """Answers everything it can with a success: no Origin check, no unknown method, no input validation,
    structuredContent that breaks its own outputSchema, and a tools/list without caching hints."""
    tool = {"name": "add", "description": "Add", "annotations": {"readOnlyHint": True},
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            "outputSchema": {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}}

    async def mcp(request: Request) -> Response:
        message = json.loads(await request.body())
        if "id" not in message:
            return Response(status_code=202)
        method = message.get("method")
        base = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
        if method == "server/discover":
            result = {**base, "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        elif method == "tools/list":
            result = {"resultType": "complete", "tools": [tool]}  # no ttlMs / cacheScope: the schema requires them
        else:
            result = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}], "structuredContent": {"sum": "many"}}
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": result})

    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


def test_every_fault_of_a_broken_server_fails_the_check_that_names_it():
    with serve_app(_broken_app(), port=0) as port:
        result = run_check(f"http://127.0.0.1:{port}/mcp", generate=True)
    status = {key: row["direct"] for key, row in _judged(result).items()}
    expected = {
        "negative-origin-not-allowed.gen": "negative-origin-not-allowed",
        "negative-unknown-method.gen": "negative-unknown-method",
        "negative-invalid-arguments.gen-add": "negative-invalid-arguments",
        "golden-modern-call.gen-add-1": "negative-output-schema",
        "golden-modern-list": "negative-result-schema",
        "negative-header-body-mismatch": "negative-header-body-mismatch",
    }
    for key, observed in expected.items():
        assert status[key]["status"] == "fail" and status[key]["observed"] == observed, (key, status[key])
        assert CASES[observed].authority.fails, key
