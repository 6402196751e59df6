"""Pins of evidence: the canonical form, the error naming the JSON path, redaction before the digest, the atomic write."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from mcplab.errors import EvidenceError
from mcplab.evidence import canonical_json, evidence_digest, write_evidence
from mcplab.outfile import OutputPathError
from mcplab.redaction import REDACTED


def test_canonical_json_exact_bytes():
    assert canonical_json({"b": [1, 2.5, None, True], "a": {"d": "é", "c": ()}}) == '{"a":{"c":[],"d":"é"},"b":[1,2.5,null,true]}'.encode()
    assert canonical_json("x") == b'"x"'
    assert canonical_json(None) == b"null"


@pytest.mark.parametrize("value, message", [
    ({"a": [1, float("nan")]}, "evidence is not JSON: $.a[1] is nan (NaN and infinity are not JSON)"),
    ([float("-inf")], "evidence is not JSON: $[0] is -inf (NaN and infinity are not JSON)"),
    ({"a": {1: "x"}}, "evidence is not JSON: $.a has a int key 1 (keys must be strings)"),
    ({"a": {None: "x"}}, "evidence is not JSON: $.a has a NoneType key None (keys must be strings)"),
    ({"s": {1, 2}}, "evidence is not JSON: $.s is a set"),
    ([b"x"], "evidence is not JSON: $[0] is a bytes"),
    (object, "evidence is not JSON: $ is a type"),
])
def test_not_json_names_the_path(value, message):
    with pytest.raises(EvidenceError) as caught:
        canonical_json(value)
    assert str(caught.value) == message


def test_digest_is_sha256_of_the_redacted_canonical_form():
    evidence = {"headers": {"Authorization": "Bearer abc"}, "n": 1}
    redacted = {"headers": {"Authorization": REDACTED}, "n": 1}
    assert evidence_digest(evidence) == hashlib.sha256(canonical_json(redacted)).hexdigest()
    assert evidence_digest(evidence) == evidence_digest({"n": 1, "headers": {"Authorization": "Bearer other"}})
    assert evidence_digest({"n": 1}) != evidence_digest({"n": 2})


def test_write_evidence_writes_redacted_sorted_indented_json(tmp_path):
    (tmp_path / "deep" / "er").mkdir(parents=True)
    target = tmp_path / "deep" / "er" / "case.json"
    got = write_evidence(str(target), {"b": "é", "a": {"Authorization": "Bearer abc"}})
    assert got == target
    assert target.read_text("utf-8") == f'{{\n  "a": {{\n    "Authorization": "{REDACTED}"\n  }},\n  "b": "é"\n}}\n'
    assert sorted(os.listdir(target.parent)) == ["case.json"]


def test_write_evidence_replaces_an_old_file(tmp_path):
    target = tmp_path / "e.json"
    target.write_text("old")
    write_evidence(target, [1])
    assert json.loads(target.read_text()) == [1]
    assert os.listdir(tmp_path) == ["e.json"]


def test_write_evidence_refuses_non_json_and_leaves_nothing(tmp_path):
    target = tmp_path / "e.json"
    with pytest.raises(EvidenceError, match=r"^evidence is not JSON: \$\.x is nan"):
        write_evidence(target, {"x": float("nan")})
    assert os.listdir(tmp_path) == []


def test_a_missing_folder_is_refused_not_created(tmp_path):
    """Issue 15: output files refuse missing folders (never created), and the error names the path as given."""
    target = tmp_path / "deep" / "case.json"
    with pytest.raises(OutputPathError) as caught:
        write_evidence(str(target), {"a": 1})
    assert str(caught.value) == f"{target}: the folder {tmp_path / 'deep'} does not exist (create it first; mcplab does not)"
    assert os.listdir(tmp_path) == []


def test_a_directory_at_the_path_is_refused_before_writing(tmp_path):
    """Issue 15: a directory is never replaced; nothing is written beside it."""
    target = tmp_path / "taken"
    target.mkdir()
    with pytest.raises(OutputPathError) as caught:
        write_evidence(target, {"a": 1})
    assert str(caught.value) == f"{target}: is a directory; name the file to write inside it"
    assert sorted(os.listdir(tmp_path)) == ["taken"]
    assert os.listdir(target) == []


def test_a_failed_replace_removes_the_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "e.json"

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OutputPathError) as caught:
        write_evidence(target, {"a": 1})
    assert str(caught.value) == f"{target}: cannot write (Permission denied)"
    assert os.listdir(tmp_path) == []


def test_the_temporary_file_is_hidden_beside_the_target(tmp_path, monkeypatch):
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append((src, dst))
        with open(src, "rb") as handle:
            seen.append(handle.read())
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    target = tmp_path / "case.json"
    write_evidence(target, {"é": "ü"})
    (src, dst), data = seen
    assert dst == target
    assert os.path.dirname(src) == str(tmp_path)
    assert os.path.basename(src).startswith(".case.json.") and src.endswith(".tmp")
    assert data == '{\n  "é": "ü"\n}\n'.encode()


def test_evidence_files_are_utf8_whatever_the_locale(tmp_path):
    """Under an ASCII locale (C, without UTF-8 mode or coercion) the file is still UTF-8, not the locale's encoding."""
    import subprocess
    import sys

    write_evidence(tmp_path / "here.json", {"n": "é"})  # in process too, so a mutation tool maps this test to write_evidence
    target = tmp_path / "e.json"
    code = "import sys; from mcplab.evidence import write_evidence; write_evidence(sys.argv[1], {'n': '\\u00e9'})"
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run([sys.executable, "-c", code, str(target)], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == '{\n  "n": "é"\n}\n'.encode()


@pytest.mark.parametrize("value, char", [({"a": "x\ud800"}, "\ud800"), (["\udfff"], "\udfff")])
def test_a_lone_surrogate_is_named_not_a_unicode_error(value, char, tmp_path):
    """Issue 15: evidence with a lone surrogate is EvidenceError naming the character, before any file is touched."""
    message = f"evidence is not JSON: a string holds a lone surrogate ({char!r}), which has no UTF-8 form"
    with pytest.raises(EvidenceError) as caught:
        canonical_json(value)
    assert str(caught.value) == message
    with pytest.raises(EvidenceError) as caught:
        write_evidence(tmp_path / "e.json", value)
    assert str(caught.value) == message
    assert os.listdir(tmp_path) == []
