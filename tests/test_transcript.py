from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from mcplab import (
    CASES,
    TranscriptError,
    load_transcript,
    load_transcripts,
    parse_transcript,
    run_transcript,
    run_transcripts,
)
from mcplab.cases import GENERATED_ONLY

SUITE = load_transcripts()
BY_KEY = {t.key: t for t in SUITE}


def raw(key: str) -> dict:
    return json.loads(open(BY_KEY[key].source, encoding="utf-8").read())


@pytest.mark.parametrize("transcript", SUITE, ids=[t.key for t in SUITE])
def test_every_shipped_transcript_passes(transcript):
    result = run_transcript(transcript)
    assert result.passed, result.detail
    if transcript.cls == "negative":
        assert result.observed["case"] == transcript.name


def test_suite_size_and_coverage():
    assert len(SUITE) >= 24
    names = {t.name for t in SUITE}
    wanted = {n for n in CASES if n.split("-")[0] in ("golden", "negative")
              and not n.startswith(("golden-stockroom", "negative-stockroom", "negative-sse-buffered",
                                    "negative-sse-stream-regressed", "negative-sse-events-lost"))
              and n not in GENERATED_ONLY}
    assert wanted - names == set()


def test_header_mismatch_needs_the_servers_real_400():
    data = raw("negative-header-body-mismatch")
    data["responseStatus"] = 500
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "HTTP 500" in result.detail


def test_header_mismatch_needs_the_matching_id_and_code():
    data = raw("negative-header-body-mismatch")
    wrong_id = copy.deepcopy(data)
    wrong_id["responseBody"]["id"] = 99
    assert not run_transcript(parse_transcript(wrong_id)).passed
    wrong_code = copy.deepcopy(data)
    wrong_code["responseBody"]["error"]["code"] = -32600
    assert not run_transcript(parse_transcript(wrong_code)).passed
    no_body = copy.deepcopy(data)
    no_body["responseBody"] = None
    assert not run_transcript(parse_transcript(no_body)).passed


def test_a_harness_that_stops_after_the_local_validator_fails_the_case():
    # A request the local validator accepts cannot prove an origin rejection.
    data = raw("negative-header-body-mismatch")
    data["requestHeaders"] = [[k, data["request"]["method"]] if k.lower() == "mcp-method" else [k, v] for k, v in data["requestHeaders"]]
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "accepted" in result.detail


def test_negative_client_case_fails_when_the_response_is_fine():
    data = raw("negative-unknown-result-type")
    data["responseBody"]["result"]["resultType"] = "complete"
    assert not run_transcript(parse_transcript(data)).passed


@pytest.mark.parametrize("expect", [{"boundary": "origin", "code": -32020}, {"boundary": "client", "code": -32022}])
def test_expect_must_agree_with_the_case_registry(expect):
    data = raw("negative-unsupported-version")
    data["expect"] = expect
    with pytest.raises(TranscriptError, match="contradicts the case registry"):
        parse_transcript(data, "x.json")


def test_origin_error_data_must_match_the_request():
    data = raw("negative-unsupported-version")
    data["responseBody"]["error"]["data"]["requested"] = "2025-11-25"
    assert "-32022 data names" in run_transcript(parse_transcript(data)).detail
    del data["responseBody"]["error"]["data"]
    assert "negative-error-data" in run_transcript(parse_transcript(data)).detail
    data = raw("negative-missing-capability")
    data["responseBody"]["error"]["data"]["requiredCapabilities"] = {"sampling": {}}
    assert "does not name the missing capabilities ['elicitation']" in run_transcript(parse_transcript(data)).detail


def test_origin_error_needs_a_json_content_type():
    data = raw("negative-header-body-mismatch")
    data["responseHeaders"] = [[k, "text/html"] if k.lower() == "content-type" else [k, v] for k, v in data["responseHeaders"]]
    assert "negative-content-type" in run_transcript(parse_transcript(data)).detail


def test_golden_fails_on_a_bad_response():
    data = raw("golden-modern-list")
    del data["responseBody"]["result"]["resultType"]
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "negative-modern-missing-result-type" in result.detail


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda r: r["params"].update(requestState="forged"), "requestState"),
        (lambda r: r.update(id=1), "new JSON-RPC id"),
        (lambda r: r["params"].update(arguments={"report_id": "R-9"}), "arguments"),
        (lambda r: r["params"].update(inputResponses={"approval": {"action": "bogus"}}), "action"),
        (lambda r: r["params"].update(inputResponses={}), "unanswered"),
        (lambda r: r["params"].update(inputResponses=5), "inputResponses"),
        (lambda r: r["params"]["inputResponses"].update(other={"action": "accept"}), "never made"),
        (lambda r: r["params"]["inputResponses"]["approval"].update(content={}), "required fields ['confirm']"),
        (lambda r: r["params"]["_meta"].update({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "sampling": {}}}), "clientCapabilities"),
    ],
)
def test_mrtr_retry_must_repeat_the_request_and_answer(mutate, needle):
    data = raw("golden-input-required")
    data["then"][0]["request"]["id"] = 2
    mutate(data["then"][0]["request"])
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "negative-retry-mismatch" in result.detail and needle in result.detail


def test_requests_that_answer_nothing_must_not_carry_mrtr_fields():
    data = raw("golden-modern-call")
    data["request"]["params"]["requestState"] = "forged"
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "answers no input_required" in result.detail


def test_a_second_round_may_not_reuse_the_first_id():
    data = raw("golden-input-required")
    second_ask = copy.deepcopy(data["responseBody"])
    second_ask["id"] = data["then"][0]["request"]["id"]
    retry2 = copy.deepcopy(data["then"][0])
    retry2["request"]["id"] = data["request"]["id"]  # the original id again
    data["then"] = [dict(data["then"][0], responseBody=second_ask), retry2]
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "already used in this round trip" in result.detail


def test_golden_cannot_end_on_input_required():
    data = raw("golden-input-required")
    del data["then"]
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "retry" in result.detail


def test_proxy_case_fails_when_the_proxy_was_faithful():
    data = raw("negative-proxy-collapsed-error")
    data["responseStatus"] = data["origin"]["status"]
    data["responseHeaders"] = data["origin"]["headers"]
    data.pop("responseText", None)
    data["responseBody"] = data["origin"]["body"]
    assert not run_transcript(parse_transcript(data)).passed


def test_results_are_json_serialisable():
    results = run_transcripts(SUITE[:5])
    assert json.loads(json.dumps([r.to_dict() for r in results]))[0]["passed"] is True


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d.pop("class"), "class must be"),
        (lambda d: d.update(name="golden-made-up"), "not a known case"),
        (lambda d: d.update(era="future"), "era must be"),
        (lambda d: d.update(responseStatus="200"), "responseStatus"),
        (lambda d: d.update(requestHeaders=[["only-name"]]), "pairs"),
        (lambda d: d.update(surprise=1), "unknown field 'surprise'"),
        (lambda d: d.update(expect={"boundary": "origin", "code": -32020}), "golden transcript must not have expect"),
        (lambda d: d.pop("responseBody"), "responseBody or responseText"),
        (lambda d: d.update(then={}), "then must be a list"),
        (lambda d: d.update(origin={"status": 400, "headers": "x", "body": None}), "origin.headers"),
        (lambda d: d.update(origin={"status": "400", "body": None}), "origin.status"),
        (lambda d: d.update(origin={"status": 400, "body": None, "request": {"headers": 5, "body": None}}), "origin.request.headers"),
    ],
)
def test_malformed_transcripts_name_the_problem(mutate, message):
    data = raw("golden-modern-list")
    mutate(data)
    with pytest.raises(TranscriptError) as info:
        parse_transcript(data, "x.json")
    assert str(info.value).startswith("x.json: ") and message in str(info.value)


def test_files_that_are_not_transcripts(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": ', encoding="utf-8")
    with pytest.raises(TranscriptError, match=r"bad.json: invalid JSON at line 1"):
        load_transcript(bad)
    with pytest.raises(TranscriptError, match="cannot read file"):
        load_transcript(tmp_path / "missing.json")
    with pytest.raises(TranscriptError, match="not a directory"):
        load_transcripts(tmp_path / "nowhere")


def test_duplicate_keys_in_a_directory(tmp_path):
    text = open(BY_KEY["golden-modern-list"].source, encoding="utf-8").read()
    (tmp_path / "a.json").write_text(text, encoding="utf-8")
    (tmp_path / "b.json").write_text(text, encoding="utf-8")
    with pytest.raises(TranscriptError, match="duplicate transcript 'golden-modern-list'"):
        load_transcripts(tmp_path)


def test_transcript_key_includes_variant():
    t = replace(BY_KEY["golden-modern-list"], variant="v2")
    assert t.key == "golden-modern-list.v2"
