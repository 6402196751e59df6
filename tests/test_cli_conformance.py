"""``mcplab conformance``: the official runner from the command line."""

from __future__ import annotations

import json

import pytest

from mcplab.cli import main
from mcplab.conformance import RegistryUnreachable, ensure_runner


@pytest.mark.parametrize("argv, message", [
    (["conformance"], "exactly one target"),
    (["conformance", "--url", "ftp://example"], "expected an http(s) URL"),
    (["conformance", "--url", "http://127.0.0.1:9/mcp"], "nothing answers at 127.0.0.1:9"),
    (["conformance", "--url", "http://127.0.0.1:99999/mcp"], "out of range"),
    (["conformance", "--url", "http://[::1/mcp"], "Invalid IPv6 URL"),
    (["conformance", "--url", "http://a..b/mcp"], "--url http://a..b/mcp"),
    (["conformance", "--url", "http://127.0.0.1:0/mcp"], "127.0.0.1:0"),
    (["conformance", "--stockroom", "--baseline", "/nonexistent/baseline.yml"], "no such file"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.network
def test_stockroom_passes_the_official_runner_with_its_baseline(capsys):
    try:
        ensure_runner()
    except RegistryUnreachable as exc:  # pragma: no cover - offline machines
        pytest.skip(f"npm registry unreachable: {exc}")
    code = main(["conformance", "--stockroom", "--requirements", "2025-11-25", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["exitCode"] == 0
    assert report["scenarios"]["total"] >= 30 and report["scenarios"]["passed"] >= 5
    assert report["baseline"].endswith("official-2025-11-25.yml")
