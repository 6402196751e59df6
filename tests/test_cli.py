"""The CLI as a user meets it: real subprocesses for exit codes and stderr, in-process for speed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mcplab.cli import main
from mcplab.transcript import transcripts_dir


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcplab", *args], capture_output=True, text=True, timeout=120)


def test_demo_prints_the_seed_shape():
    proc = run("demo")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["releaseAction"] == "rollback" and out["sdkDroppedFields"] == ["futureHint"]


def test_demo_flags(capsys):
    assert main(["demo", "--fixed-proxy"]) == 0
    assert json.loads(capsys.readouterr().out)["releaseAction"] == "rollback"
    assert main(["demo", "--fixed-proxy", "--allow-drop", "futureHint"]) == 0
    assert json.loads(capsys.readouterr().out)["releaseAction"] == "promote"


def test_transcripts_list_and_run(capsys):
    assert main(["transcripts", "list"]) == 0
    listing = capsys.readouterr().out
    assert "negative-header-body-mismatch" in listing and "transcripts" in listing.splitlines()[-1]
    assert main(["transcripts", "run"]) == 0
    assert ", 0 failed" in capsys.readouterr().out.splitlines()[-1]
    assert main(["transcripts", "run", "--case", "negative-id-mismatch", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["failed"] == 0 and {r["variant"] for r in report["results"]} == {"type", "value"}


def test_run_exits_1_when_a_case_fails(tmp_path, capsys):
    data = json.loads((transcripts_dir() / "negative-header-body-mismatch.json").read_text(encoding="utf-8"))
    data["responseStatus"] = 500
    path = tmp_path / "collapsed.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["transcripts", "run", "--file", str(path)]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_malformed_file_is_one_line_exit_2(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"name": "golden-modern-list", ', encoding="utf-8")
    proc = run("transcripts", "run", "--file", str(path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "broken.json" in proc.stderr and "invalid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, needle", [(["transcripts", "run", "--case", "negative-nope"], "not a case name"),
                                          (["transcripts", "run", "--case", "negative-sse-buffered"], "known case without a transcript"),
                                          (["transcripts", "list", "--dir", "/nonexistent"], "not a directory")])
def test_bad_selection_exit_2(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_usage_errors_exit_2():
    proc = run("transcripts")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_cases_json(capsys):
    assert main(["cases", "--json"]) == 0
    names = [c["name"] for c in json.loads(capsys.readouterr().out)]
    assert "negative-header-body-mismatch" in names


def test_case_filter_applies_to_files_too(tmp_path, capsys):
    path = transcripts_dir() / "golden-modern-list.json"
    assert main(["transcripts", "run", "--file", str(path), "--case", "golden-modern-list"]) == 0
    capsys.readouterr()
    assert main(["transcripts", "run", "--file", str(path), "--case", "golden-modern-call"]) == 2


def test_empty_directory_is_not_a_green_suite(tmp_path, capsys):
    assert main(["transcripts", "run", "--dir", str(tmp_path)]) == 2
    assert "nothing to judge" in capsys.readouterr().err


def test_unwritable_evidence_path_is_one_line(tmp_path):
    proc = run("demo", "--evidence", str(tmp_path))
    assert proc.returncode == 2 and str(tmp_path) in proc.stderr and "is a directory" in proc.stderr
    assert "Traceback" not in proc.stderr and "\n" not in proc.stderr.strip()


def test_deeply_nested_transcript_file_is_one_line(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100000, encoding="utf-8")
    proc = run("transcripts", "run", "--file", str(path))
    assert proc.returncode == 2 and "nested too deeply" in proc.stderr and "Traceback" not in proc.stderr


SECRET = "s3cr3t-pw"


@pytest.mark.parametrize("argv", [
    ["check", "--url", f"http://u:{SECRET}@127.0.0.1:1/mcp"],
    ["check", "--url", f"http://127.0.0.1:1/mcp?access_token={SECRET}"],
    ["conformance", "--url", f"http://u:{SECRET}@127.0.0.1:1/mcp"],
    ["conformance", "--url", f"ftp://u:{SECRET}@127.0.0.1/x"],
    ["conformance", "--url", f"http://u:{SECRET}@[::1/mcp"],
    ["preflight", "--url", f"http://u:{SECRET}@127.0.0.1:1/mcp", "inspect-server"],
    ["check", "--url", "http://127.0.0.1:1/mcp", "--era", f"http://u:{SECRET}@127.0.0.1/"],  # an argparse usage error
])
def test_a_secret_in_a_command_line_url_never_reaches_the_terminal(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2 and "mcplab" in err and "error" in err
    assert SECRET not in out + err and ("%5BREDACTED%5D" in err or "[REDACTED]" in err)
    assert "Traceback" not in err


def test_a_secret_in_the_url_stays_out_of_a_real_process_output():
    proc = run("conformance", "--url", f"http://user:{SECRET}@127.0.0.1:1/mcp")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert SECRET not in proc.stdout + proc.stderr and "user:[REDACTED]@127.0.0.1:1" in proc.stderr
