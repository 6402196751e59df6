"""The live-wire commands, ``mcplab check`` and ``mcplab proxy``: parse, call one library
function, print. Registered by ``mcplab.cli`` through :func:`add_live_commands`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..clitools import QuietWait, seconds, url
from ..era import MODES
from ..errors import MCPLabError

__all__ = ["add_live_commands"]


class _BadInput(MCPLabError):
    """An unusable --header or --report (exit 2)."""


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or name != name.strip():
        # the text may be a credential with its colon missing: it is never echoed
        raise _BadInput(f"--header ({len(text)} characters, not shown: it may hold a secret): expected 'Name: value', "
                        "e.g. 'Authorization: Bearer ...'")
    return name, value.strip()


class _Bar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal; every step also
    tells ``quiet`` (which prints a line, terminal or not, when a wait goes on without progress)."""

    def __init__(self, quiet: QuietWait | None = None) -> None:
        self.enabled = sys.stderr.isatty()
        self.quiet = quiet

    def __call__(self, done: int, total: int, key: str) -> None:
        if self.quiet is not None:
            self.quiet.step(f"checking: {done}/{total} cases done, waiting for the answers to the next")
        if not self.enabled or total == 0:
            return
        width = 30
        filled = width * done // total
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {key[:40]:<40}")
        if done == total:
            sys.stderr.write("\r" + " " * (width + 50) + "\r")
        sys.stderr.flush()


def _cell_text(cell: dict[str, Any] | None) -> str:
    if cell is None:
        return "-"
    text = cell["status"].upper()
    if cell["status"] == "fail" and cell.get("observed"):
        text += f" {cell['observed']} @{cell['boundary']}"
    return text


def _warnings_text(cell: dict[str, Any] | None) -> str:
    return ", ".join(sorted({w["id"] for w in (cell or {}).get("warnings", [])})) or "-"


def _short(value: Any, limit: int = 240) -> str:
    import json
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _evidence_lines(row: dict[str, Any]) -> list[str]:
    """A failed or warned row's evidence, redacted: the authority, the request sent, the answer received."""
    cell, evidence = row["direct"], row["evidence"].get("direct") or {}
    lines = []
    authority = cell.get("authority") or {}
    if cell["status"] == "fail":
        lines.append(f"  FAIL {row['case']}: {cell['detail']}")
        lines.append(f"    authority: {authority.get('level')} {authority.get('where')}: {authority.get('rule')}")
    for warning in cell.get("warnings", []):
        w = warning["authority"]
        lines.append(f"  WARN {row['case']}: {warning['id']} ({w['level']}, {w['where']}): {warning['message']}"
                     + (f" [course reason: {w['reason']}]" if w.get("reason") else ""))
    request, response = evidence.get("request") or {}, evidence.get("response") or {}
    if request:
        sent = {k: v for k, v in request.get("headers", []) if k.lower().startswith("mcp") or k.lower() == "origin"}
        lines.append(f"    request: {_short(request.get('body'))} headers {_short(sent, 160)}")
    if response:
        answer = response.get("events") if "events" in response else response.get("body")
        lines.append(f"    answer: HTTP {response.get('status')} {_short(answer)}")
    return lines


def _report_target(path: str) -> None:
    """Refuse a --report path that cannot be written BEFORE the run, not after it: only a regular
    file in an existing folder (no device, FIFO, link or directory; no folder is created)."""
    from ..outfile import OutputPathError, check_output_path

    try:
        check_output_path(path)
    except OutputPathError as exc:
        raise _BadInput(f"--report {exc}") from None


def _probe_answer(probe: dict[str, Any]) -> str:
    """What the era probe got back, in a few words (status and content type, or the failure)."""
    if probe.get("failure"):
        return f"the server/discover probe got no complete answer ({probe['failure'].replace('_', ' ')})"
    response = probe["response"]
    types = [v for k, v in response["headers"] if k.lower() == "content-type"]
    return f"the server/discover probe was answered HTTP {response['status']} {types[0] if types else 'without a content type'}"


def _proxy_failure(result: Any) -> str | None:
    """What the proxy answered to the era probe when that was its own error (502/503/504 for an
    upstream that is down or too slow) while the direct probe got no such answer; else ``None``."""
    if result.via is None:
        return None
    probes = [p for p in result.probes if p.get("url") == result.via]
    direct = [p for p in result.probes if p.get("url") == result.url]
    if not probes or not probes[0]["response"] or probes[0]["response"]["status"] not in (502, 503, 504):
        return None
    if direct and direct[0]["response"] and direct[0]["response"]["status"] == probes[0]["response"]["status"]:
        return None
    response = probes[0]["response"]
    body = response.get("body")
    said = f": {' '.join(body.split())[:120]!r}" if isinstance(body, str) and body.strip() else ""
    return (f"the proxy answered HTTP {response['status']} to the era probe{said}; its upstream did not answer, "
            "so the via column below shows the proxy's error, not the server's behaviour (is the origin behind --via running?)")


def _era_mode(args: argparse.Namespace) -> str:
    """``--era-mode``; the old spelling ``--era strict|fallback`` still works, with a note."""
    if args.era is not None:
        print(f"mcplab: note: 'check --era {args.era}' is now 'check --era-mode {args.era}' "
              "(--era names an era, modern or legacy, in 'mcplab preflight')", file=sys.stderr)
        return args.era
    return args.era_mode


def _era_line(era: dict[str, Any]) -> str:
    """The era decision in words: which era, by which decision case, under which mode."""
    rule = ""
    if era.get("mode") == "fallback" and str(era["case"]).startswith("era-strict-"):
        rule = ": proof of 2026-07-28 decides by the strict rule in either mode"
    return f"era: {era['era'] or 'none'} ({era['case']}): {era['reason']} [{era.get('mode', '?')} mode{rule}]"


def _cmd_check(args: argparse.Namespace) -> int:
    from ..cli import _print_json, _table
    from ..redaction import redact_urls_in
    from .check import run_check
    from .report import redacted_result, write_report

    era_mode = _era_mode(args)
    if args.report:
        _report_target(args.report)
    headers = [_header(h) for h in args.header]
    target = redact_urls_in(args.url) + (f" and {redact_urls_in(args.via)}" if args.via else "")
    with QuietWait(f"waiting for {target} (server/discover era probe; up to {args.timeout:g} s per request)") as quiet:
        result = run_check(args.url, via=args.via, era_mode=era_mode, allow_legacy=args.allow_legacy, headers=headers,
                           timeout=args.timeout, only=args.case, progress=_Bar(quiet), generate=not args.recorded_only,
                           call_tools=args.call_tools, seed=args.seed, course_rules=args.course_rules)
    if args.report:
        write_report(args.report, result)
    shown = redacted_result(result)  # the terminal sees only what redaction and the handed-secret scrub left
    if args.json:
        _print_json(shown)
        return 0 if result.ok else 1
    era = shown["era"]
    failure = _proxy_failure(result)
    if failure:
        print(failure)
    print(_era_line(era))
    if era["era"] is None:
        hint = ("; if this endpoint may be 2025-11-25, pass --allow-legacy so a successful initialize can prove it"
                if era["mode"] == "fallback" and not era["legacyAllowed"] else "")
        print(f"no case was run: {_probe_answer(shown['probes'][0])}, which proves no MCP era{hint}")
    if shown["viaEra"] is not None and shown["viaEra"]["era"] != era["era"]:
        cause = "the proxy's own error answer proves no era" if failure else "the proxy changes the era decision"
        print(f"via proxy the era is {shown['viaEra']['era'] or 'none'} ({shown['viaEra']['case']}): {cause}")
    ran = [row for row in result.rows if row["applies"]]
    header = ["CASE", "AUTHORITY", "DIRECT", "WARNINGS"] + (["VIA PROXY", "CHANGE AT"] if args.via else [])
    rows = [[row["case"], (row.get("authority") or {}).get("level", "-"), _cell_text(row["direct"]), _warnings_text(row["direct"])]
            + ([_cell_text(row["via"]), (row["change"] or {}).get("boundary", "-")] if args.via else []) for row in ran]
    if rows:
        print(_table(rows, header))
    redacted = redacted_result(result)  # the evidence printed below is the redacted copy
    details = [line for row in redacted["rows"] if row["applies"] and row["direct"]
               and (row["direct"]["status"] == "fail" or row["direct"].get("warnings")) for line in _evidence_lines(row)]
    if details:
        print("evidence (failures fail by a MUST or the schema; warnings are SHOULDs and course rules"
              + (", which --course-rules turns into failures" if not args.course_rules else "") + "):")
        print("\n".join(details))
    summary = result.summary()
    line = (f"{summary['applicable']} live cases ({summary['notApplicable']} not applicable live); "
            f"direct {summary['direct']['passed']} passed, {summary['direct']['failed']} failed, "
            f"{summary['direct']['withWarnings']} with warnings")
    if args.via:
        line += f", via proxy {summary['via']['passed']} passed"
    print(f"{line}; issues: {', '.join(result.issues) or 'none'}; warnings: {', '.join(result.warnings) or 'none'}; "
          f"{result.seconds:.2f} s")
    if args.report:
        print(f"report: {args.report}")
    return 0 if result.ok else 1


def _cmd_proxy(args: argparse.Namespace) -> int:
    from ..redaction import redact_urls_in
    from ..serving import run_until_signal
    from .proxy import ProxyError, serve_proxy

    if not 0 <= args.port <= 65535:
        raise ProxyError(f"--port must be 0..65535, got {args.port}")

    def started(proxy: Any) -> None:
        # both URLs carry the upstream's query (a token?), the upstream its userinfo too
        print(redact_urls_in(f"mcplab proxy ({proxy.mode}) serving {proxy.url} -> {proxy.upstream}  (Ctrl-C stops)"), flush=True)

    run_until_signal(serve_proxy(args.upstream, args.mode, host=args.host, port=args.port, log_level=args.log_level), started)
    print("mcplab proxy stopped", file=sys.stderr)
    return 0


def add_live_commands(sub: Any) -> None:
    """Register ``check`` and ``proxy`` on the ``mcplab`` sub-command parser."""
    check = sub.add_parser("check", help="judge a live server (and a proxy in front of it) with the transcript cases")
    check.add_argument("--url", required=True, type=url, help="the MCP endpoint, e.g. http://127.0.0.1:8765/mcp")
    check.add_argument("--via", metavar="PROXY_URL", type=url, help="the same endpoint through a proxy, e.g. http://127.0.0.1:8766/mcp")
    check.add_argument("--era-mode", choices=(*MODES, "legacy"), default="fallback",
                       help="how the era is chosen: strict needs proof of 2026-07-28; fallback (default) may choose "
                       "2025-11-25 (legacy) only with --allow-legacy; legacy judges the 2025-11-25 side (after a successful "
                       "initialize) even of a modern server")
    check.add_argument("--era", choices=(*MODES, "legacy"), default=None, help=argparse.SUPPRESS)  # the old spelling of --era-mode
    check.add_argument("--allow-legacy", action="store_true", help="this endpoint may be judged as 2025-11-25 after a successful initialize")
    check.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="add a header to every request, e.g. Authorization (redacted in every output; repeatable)")
    check.add_argument("--case", action="append", default=[], metavar="NAME", help="only this case (repeatable; all its variants)")
    check.add_argument("--timeout", type=seconds, default=10.0, help="seconds per request, above 0 (default 10)")
    check.add_argument("--call-tools", choices=("read-only", "all"), default="read-only",
                       help="which of the server's tools the generated checks call: read-only (default: readOnlyHint true) or all")
    check.add_argument("--seed", type=int, default=20260728, help="seed of the generated tool arguments (default 20260728)")
    check.add_argument("--course-rules", action="store_true",
                       help="fail on the course's stricter rules too (by default they are warnings, like SHOULDs)")
    check.add_argument("--recorded-only", action="store_true", help="only the recorded suite's cases, no generated checks")
    check.add_argument("--json", action="store_true", help="print the redacted result as JSON")
    check.add_argument("--report", metavar="PATH", help="write the redacted HTML conformance matrix to PATH")
    check.set_defaults(func=_cmd_check)

    proxy = sub.add_parser("proxy", help="run a loopback reverse proxy that records every hop (and can break on purpose)")
    proxy.add_argument("--upstream", required=True, type=url, help="the origin MCP endpoint, e.g. http://127.0.0.1:8765/mcp")
    proxy.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1; ::1 and localhost also do)")
    proxy.add_argument("--port", type=int, default=8766, help="port (default 8766; 0 picks a free one)")
    # no ``choices=``: that would import the proxy (httpx, Starlette) for every command; the
    # proxy refuses an unknown mode itself with one line naming the modes (exit 2)
    proxy.add_argument("--mode", default="faithful", metavar="MODE",
                       help="faithful (default) or the one fault to inject: collapse-errors, rewrite-body, buffer-sse")
    proxy.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"],
                       help="uvicorn log level (default warning)")
    proxy.set_defaults(func=_cmd_proxy)
