from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest

from mcplab import CASES, TranscriptError, load_transcript, load_transcripts, parse_transcript, run_transcript, run_transcripts

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
              and not n.startswith(("golden-stockroom", "negative-stockroom", "golden-sse", "negative-sse"))}
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


def test_wrong_expected_code_fails():
    data = raw("negative-unsupported-version")
    data["expect"]["code"] = -32020
    result = run_transcript(parse_transcript(data))
    assert not result.passed


def test_golden_fails_on_a_bad_response():
    data = raw("golden-modern-list")
    del data["responseBody"]["result"]["resultType"]
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "negative-modern-missing-result-type" in result.detail


def test_mrtr_retry_must_echo_request_state():
    data = raw("golden-input-required")
    data["then"][0]["request"]["params"]["requestState"] = "forged"
    result = run_transcript(parse_transcript(data))
    assert not result.passed and "requestState" in result.detail


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
