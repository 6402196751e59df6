"""Every case carries its authority; SHOULDs and course rules can be waived; the three core
contradictions with the specification stay fixed (structuredContent, null ids, refused notifications)."""

from __future__ import annotations

import copy
import re

import pytest

from mcplab.cases import CASES, LEVELS, RULES, enforced, spec_rules_only
from mcplab.errors import ProtocolViolation
from mcplab.results import validate_result
from mcplab.transcript import load_transcripts, run_transcript

from .conftest import spec_dir

SPEC_TEXT = spec_dir() / "text"  # the official pages, found as the schema tests find them


def test_every_case_and_rule_has_an_authority():
    for case in CASES.values():
        assert case.authority is not None and case.authority.level in LEVELS, case.name
        assert case.authority.where and case.authority.rule, case.name
    for name, rule in RULES.items():
        assert rule.level in ("SHOULD", "MAY", "course"), f"{name}: only non-mandatory rules may be waived"
        assert name.split("-", 1)[0] in ("should", "course") and (rule.level != "course" or rule.reason), name
    assert all(c.authority.reason for c in CASES.values() if c.authority.level == "course")


def test_cited_pages_and_headings_exist():
    cited = [(c.name, c.authority.where) for c in CASES.values()] + [(n, r.where) for n, r in RULES.items()]
    for name, where in cited:
        for part in re.split(r"[,;]\s*(?=20\d\d-)", where):
            m = re.match(r"(\d{4}-\d\d-\d\d/\S+\.mdx)(?: § (.*))?$", part)
            if not m:
                continue
            page = SPEC_TEXT / m.group(1)
            assert page.is_file(), f"{name}: {page} does not exist"
            if m.group(2):
                text = page.read_text(encoding="utf-8").replace("`", "")
                heading = m.group(2)
                options = {heading, re.sub(r" \([^)]*\)$", "", heading)}
                assert any(re.search(rf"^#+ {re.escape(h)}\s*$", text, re.M) for h in options), f"{name}: no heading {heading!r} in {page}"


TOOL = {"name": "echo", "inputSchema": {"type": "object"}}


def test_tool_description_is_a_course_rule_waived_by_spec_rules_only():
    result = {"resultType": "complete", "tools": [TOOL]}
    with pytest.raises(ProtocolViolation):  # the labs' default: enforced
        validate_result(result, "modern", "tools/list")
    with spec_rules_only() as waived:
        assert validate_result(result, "modern", "tools/list") == "complete"
    assert [rule for rule, _ in waived] == ["course-tool-description"]
    with spec_rules_only(), pytest.raises(ProtocolViolation):  # a non-string description breaks the schema
        validate_result({"resultType": "complete", "tools": [{**TOOL, "description": 3}]}, "modern", "tools/list")
    assert enforced("course-tool-description", "outside the block") is True


def test_structured_content_is_any_json_in_2026_and_an_object_in_2025():
    for value in ([1, 2], "text", 3, None, {"a": 1}):
        assert validate_result({"resultType": "complete", "content": [], "structuredContent": value}, "modern", "tools/call")
    with pytest.raises(ProtocolViolation) as info:
        validate_result({"content": [], "structuredContent": [1, 2]}, "legacy", "tools/call")
    assert info.value.case == "negative-tools-call-payload"


def _transcript(key: str):
    return next(t for t in load_transcripts() if t.key == key)


def _with_body(t, body, status=None):
    ex = copy.deepcopy(t.exchanges[0])
    from dataclasses import replace
    return replace(t, exchanges=[replace(ex, response_body=body, response_status=status or ex.response_status)])


def test_a_server_that_omits_or_nulls_the_id_of_a_parse_error_is_reported_not_raised():
    t = _transcript("negative-malformed-envelope.parse")
    body = t.exchanges[0].response_body
    assert "id" not in body and run_transcript(t).passed
    null = run_transcript(_with_body(t, {**body, "id": None}))
    assert not null.passed and "null" in null.detail
    wrong = run_transcript(_with_body(t, {**body, "id": 7}))
    assert not wrong.passed


def test_types_first_is_a_course_rule():
    t = _transcript("negative-meta-type.version")
    header_first = _with_body(t, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "header differs"}})
    assert not run_transcript(header_first).passed  # the labs grade the course's order
    with spec_rules_only() as waived:
        assert run_transcript(header_first).passed
    assert [rule for rule, _ in waived] == ["course-types-first"]
    caps = _transcript("negative-meta-type.capabilities")  # no header differs here: -32020 stays wrong
    with spec_rules_only():
        assert not run_transcript(_with_body(caps, {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020, "message": "x"}})).passed


def test_invalid_params_on_http_200_is_a_course_warning_not_a_failure():
    t = _transcript("negative-invalid-params")
    on_200 = _with_body(t, t.exchanges[0].response_body, status=200)
    assert not run_transcript(on_200).passed
    with spec_rules_only() as waived:
        assert run_transcript(on_200).passed
    assert {rule for rule, _ in waived} == {"course-error-status"}


def test_missing_meta_key_keeps_its_mandated_400():
    t = _transcript("negative-missing-meta-key")
    with spec_rules_only():
        assert not run_transcript(_with_body(t, t.exchanges[0].response_body, status=200)).passed


def test_golden_sse_stream_needs_events():
    t = _transcript("golden-sse-stream")
    assert run_transcript(t).passed
    final = [line for line in t.exchanges[0].response_body.splitlines() if line.startswith("data:")][-1][5:].strip()
    from dataclasses import replace
    json_answer = replace(t, exchanges=[replace(t.exchanges[0], response_body=final, response_headers=[("Content-Type", "application/json")])])
    result = run_transcript(json_answer)
    assert not result.passed and "event stream" in result.detail


def test_a_refused_golden_notification_is_not_a_pass_nor_answered():
    t = _transcript("golden-notification")
    refused = run_transcript(_with_body(t, {"jsonrpc": "2.0", "error": {"code": -32601, "message": "unknown"}}, status=400))
    assert not refused.passed and "refused" in refused.detail
    answered = _transcript("negative-notification-answered")
    assert run_transcript(answered).passed
