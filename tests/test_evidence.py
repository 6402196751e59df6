"""Evidence: canonical JSON, digests over redacted evidence, atomic redacted files."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcplab.errors import EvidenceError
from mcplab.evidence import canonical_json, evidence_digest, write_evidence
from mcplab.redaction import REDACTED, redact

EVIDENCE = {
    "case": "negative-header-body-mismatch",
    "request": {"headers": {"Authorization": "Bearer s3cr3t-value", "Accept": "application/json"}},
    "response": {"status": 400, "body": {"jsonrpc": "2.0", "id": 1, "error": {"code": -32020}}},
    "notes": "é ünïcode",
}


def test_canonical_json_form():
    assert canonical_json({"b": 1, "a": [1, (2, 3)], "c": "é"}) == '{"a":[1,[2,3]],"b":1,"c":"é"}'.encode()


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"x": math.nan}, "NaN"),
        ({"x": [math.inf]}, "NaN and infinity"),
        ({"x": {1, 2}}, "set"),
        ({"x": object()}, "object"),
        ({"x": b"raw"}, "bytes"),
        ({1: "int key"}, "keys must be strings"),
    ],
)
def test_canonical_json_rejects_non_json(value, problem):
    with pytest.raises(EvidenceError, match=problem):
        canonical_json(value)


def test_canonical_json_error_names_the_path():
    with pytest.raises(EvidenceError, match=r"\$\.a\[1\]"):
        canonical_json({"a": [1, math.nan]})


def test_digest_is_sha256_of_redacted_canonical_json():
    assert evidence_digest(EVIDENCE) == hashlib.sha256(canonical_json(redact(EVIDENCE))).hexdigest()


@given(st.permutations(list(EVIDENCE.items())))
def test_digest_stable_across_key_order(items):
    assert evidence_digest(dict(items)) == evidence_digest(EVIDENCE)


def test_digest_changes_when_a_non_secret_value_changes():
    changed = json.loads(json.dumps(EVIDENCE))
    changed["response"]["status"] = 500
    assert evidence_digest(changed) != evidence_digest(EVIDENCE)


def test_digest_ignores_secret_values():
    changed = json.loads(json.dumps(EVIDENCE))
    changed["request"]["headers"]["Authorization"] = "Bearer another-secret"
    assert evidence_digest(changed) == evidence_digest(EVIDENCE)


def test_digest_rejects_non_json():
    with pytest.raises(EvidenceError):
        evidence_digest({"x": math.nan})


def test_write_evidence_never_writes_the_secret(tmp_path):
    target = tmp_path / "deep" / "dir" / "evidence.json"
    target.parent.mkdir(parents=True)  # mcplab creates no folders (issue 15)
    written = write_evidence(target, EVIDENCE)
    assert written == target
    text = target.read_text(encoding="utf-8")
    assert "s3cr3t-value" not in text
    loaded = json.loads(text)
    assert loaded["request"]["headers"]["Authorization"] == REDACTED
    assert loaded == redact(EVIDENCE)
    assert text == json.dumps(loaded, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert [p.name for p in target.parent.iterdir()] == ["evidence.json"]  # no temp file left


def test_write_evidence_replaces_and_leaves_old_file_on_error(tmp_path):
    target = tmp_path / "evidence.json"
    write_evidence(str(target), {"a": 1})
    write_evidence(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    with pytest.raises(EvidenceError):
        write_evidence(target, {"a": math.nan})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["evidence.json"]


def test_written_file_digest_matches(tmp_path):
    target = write_evidence(tmp_path / "e.json", EVIDENCE)
    assert evidence_digest(json.loads(target.read_text())) == evidence_digest(EVIDENCE)
