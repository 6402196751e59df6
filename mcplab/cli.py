"""The ``mcplab`` command: a thin layer where every command is one library call.

Exit codes: 0 success, 1 a check failed (a transcript case, a gate), 2 bad input (usage,
a malformed file, an unknown case name): one line on stderr, never a traceback. Every error line
(and every URL the CLI echoes) goes through :func:`~mcplab.redaction.redact_urls_in`, so a
password or token in a command-line URL never reaches the terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cases import CASES
from .clitools import plural, table
from .conformance_cli import add_conformance_command
from .course.cli import add_course_command
from .errors import MCPLabError
from .flightdeck.cli import add_preflight_command
from .live.cli import add_live_commands
from .redaction import redact_urls_in
from .transcript import load_transcript, load_transcripts, run_transcript

__all__ = ["main", "build_parser"]


class UsageError(MCPLabError):
    """Bad command-line input (exit 2)."""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as ONE line naming the (sub)command, e.g.
    ``mcplab cases: error: unrecognized arguments: --bogus (see 'mcplab cases --help')``,
    and URL secrets redacted (``invalid choice: 'http://u:pw@h'``)."""

    def add_subparsers(self, **kwargs: Any) -> Any:
        self.has_subcommands = True
        return super().add_subparsers(**kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and not getattr(self, "has_subcommands", False):  # the command that got them says so
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {redact_urls_in(message)} (see '{self.prog} --help')\n")


def _error(text: str) -> None:
    print(f"mcplab: error: {redact_urls_in(text)}", file=sys.stderr)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, ensure_ascii=False))


_table = table  # the name the command modules import (mcplab.clitools.table)


def _selected(args: argparse.Namespace) -> list:
    """The transcripts a command works on: --file/--dir or the shipped suite, filtered by --case."""
    transcripts = [load_transcript(path) for path in args.file] if args.file else load_transcripts(args.dir)
    if args.case:
        present = {t.name for t in transcripts}
        unknown = [name for name in args.case if name not in present]
        if unknown:
            hint = "a known case without a transcript here" if unknown[0] in CASES else "not a case name"
            raise UsageError(f"no transcript named {unknown[0]!r} ({hint}); see 'mcplab transcripts list'")
        transcripts = [t for t in transcripts if t.name in args.case]
    if not transcripts:
        raise UsageError(f"no transcript files in {args.dir}: nothing to judge")
    return transcripts


def _cmd_list(args: argparse.Namespace) -> int:
    transcripts = _selected(args)
    if args.json:
        _print_json([
            {"name": t.name, "variant": t.variant, "class": t.cls, "era": t.era,
             "boundary": (t.expect or {}).get("boundary"), "code": (t.expect or {}).get("code"),
             "description": t.description}
            for t in transcripts
        ])
        return 0
    rows = [[t.key, t.cls, t.era, (t.expect or {}).get("boundary") or "-", str((t.expect or {}).get("code") or "-"), t.description]
            for t in transcripts]
    print(_table(rows, ["CASE", "CLASS", "ERA", "BOUNDARY", "CODE", "DESCRIPTION"]))
    print(plural(len(transcripts), "transcript"))
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    results = [run_transcript(t) for t in _selected(args)]
    failed = [r for r in results if not r.passed]
    if args.json:
        _print_json({
            "passed": len(results) - len(failed),
            "failed": len(failed),
            "total": len(results),
            "results": [r.to_dict() for r in results],
        })
    else:
        rows = [["PASS" if r.passed else "FAIL", f"{r.name}.{r.variant}" if r.variant else r.name, r.era,
                 r.boundary or "-", r.detail] for r in results]
        print(_table(rows, ["RESULT", "CASE", "ERA", "BOUNDARY", "DETAIL"]))
        print(f"transcripts: {len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .outfile import OutputPathError, check_output_path
    from .sdkview import BOOKKEEPING_FIELDS

    if args.evidence:
        try:  # before the run: a device, FIFO, link or missing folder is refused, never written (issue 15)
            check_output_path(args.evidence)
        except OutputPathError as exc:
            raise UsageError(f"--evidence {exc}") from None
    if args.allow_drop and not args.fixed_proxy:
        raise UsageError("--allow-drop needs --fixed-proxy: with the broken proxy the release rolls back whatever the "
                         "policy allows, so the flag would change nothing")
    known = sorted({*BOOKKEEPING_FIELDS, "futureHint"})
    unknown = [name for name in args.allow_drop if name not in known]
    if unknown:
        raise UsageError(f"--allow-drop {unknown[0]!r}: not a field the demo's SDK diff can drop; expected one of {', '.join(known)}")
    _print_json(run_demo(fixed_proxy=args.fixed_proxy, allow_drops=args.allow_drop, evidence_path=args.evidence))
    return 0


def _cmd_cases(args: argparse.Namespace) -> int:
    cases = [{"name": c.name, "boundary": c.boundary, "code": c.code, "summary": c.summary} for c in CASES.values()]
    if args.json:
        _print_json(cases)
    else:
        print(_table([[c["name"], c["boundary"] or "-", str(c["code"] or "-"), c["summary"]] for c in cases],
                     ["CASE", "BOUNDARY", "CODE", "SUMMARY"]))
    return 0


def _db_arg(value: str | None) -> str:
    from .stockroom.ledger import default_db_path

    if value is None:
        return str(default_db_path())
    if not value.strip():
        raise UsageError("--db needs a path (or ':memory:'); leave it out for the default database")
    return value


def _check_listen(args: argparse.Namespace) -> None:
    """The listening checks both ``serve`` commands share: --port in range, --host not empty, and a
    warning when a non-loopback --host turns the Host/Origin checks off (no --allow-host)."""
    from .serving import is_loopback

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if not args.host.strip():
        raise UsageError("--host needs an interface, e.g. 127.0.0.1 (an empty host would listen on every interface)")
    if not is_loopback(args.host) and not args.allow_host:
        print(f"mcplab: warning: --host {args.host} is not loopback, so Host/Origin checks (DNS-rebinding protection) are off; "
              "pass --allow-host NAME:* to turn them on", file=sys.stderr)


def _cmd_serve_stockroom(args: argparse.Namespace) -> int:
    from .serving import run_until_signal
    from .stockroom.server import serve_stockroom

    _check_listen(args)
    db = _db_arg(args.db)
    with tempfile.TemporaryDirectory(prefix="mcplab-approver-") as private:  # mode 0700

        def started(srv: Any) -> None:
            print(f"mcplab stockroom serving {srv.url}  (database: {db}; Ctrl-C stops)", flush=True)
            print(f"approver token (for a person's 2025-11-25 answers over HTTP): {_token_file(srv, db, private)}", flush=True)

        run_until_signal(serve_stockroom(db, host=args.host, port=args.port, allowed_hosts=args.allow_host,
                                         admin=False if args.no_admin else None, log_level=args.log_level,
                                         json_response=not args.sse), started)
    print("mcplab stockroom stopped", file=sys.stderr)
    return 0


def _token_file(srv: Any, db: str, private: str) -> str:
    """Where the person finds the approver token: beside the database, or (``:memory:``) a private temp file."""
    from .stockroom.approver import approver_token_path
    from .stockroom.ledger import MEMORY

    if db != MEMORY:
        srv.approver_token  # noqa: B018 - created now (mode 0600) so the person finds it where it is printed
        return str(approver_token_path(db))
    path = os.path.join(private, "approver-token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(srv.approver_token + "\n")
    return path


def _cmd_serve_reference(args: argparse.Namespace) -> int:
    from .reference.server import serve_reference
    from .serving import run_until_signal

    _check_listen(args)
    run_until_signal(serve_reference(host=args.host, port=args.port, allowed_hosts=args.allow_host, log_level=args.log_level),
                     lambda srv: print(f"mcplab reference server serving {srv.url}  (2026-07-28 and 2025-11-25; Ctrl-C stops)",
                                       flush=True))
    print("mcplab reference server stopped", file=sys.stderr)
    return 0


def _cmd_stockroom_trace(args: argparse.Namespace) -> int:
    from .stockroom.ledger import Ledger

    db = _db_arg(args.db)
    head = _head_arg(args.head) if args.head else None
    with Ledger(db, create=False) as ledger:
        records, problems = ledger.audit(head)
    if not (args.verify or head):
        problems = None
    newest = f"{records[-1]['seq']}:{records[-1]['hash']}" if records else None
    if args.json:
        _print_json({"db": db, "records": records, "head": newest,
                     **({"problems": problems} if problems is not None else {})})
    else:
        rows = [[str(r["seq"]), r["at"], r["era"], r["tool"], r["decision"], f"v{r['ledger_version']}", r["hash"][:12],
                 _short(r["detail"])] for r in records]
        print(_table(rows, ["SEQ", "AT", "ERA", "TOOL", "DECISION", "LEDGER", "HASH", "DETAIL"]))
        print(f"{plural(len(records), 'trace record')} in {db}")
        if problems is not None:
            for problem in problems:
                print(f"BROKEN: {problem}")
            print("trace verified: chain intact, ledger agrees" if not problems else f"trace broken: {plural(len(problems), 'problem')}")
            if newest:
                print(f"head {newest}  (keep it: '--head {newest}' later proves nothing before it was cut or rewritten)")
    return 1 if problems else 0


def _head_arg(value: str) -> tuple[int, str]:
    seq, _, digest = value.partition(":")
    if not (seq.isascii() and seq.isdigit()) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise UsageError(f"--head {value!r}: expected SEQ:SHA256 as printed by 'mcplab stockroom trace --verify'")
    return int(seq), digest


def _lines_text(lines: list[dict[str, Any]]) -> str:
    return ", ".join(f"{ln['sku']} +{ln['add_on_order']}" for ln in lines)


def _cmd_stockroom_approvals(args: argparse.Namespace) -> int:
    from .stockroom.ledger import Ledger
    from .stockroom.rules import Stockroom

    with Ledger(_db_arg(args.db), create=False) as ledger:
        pending = Stockroom(ledger).pending_approvals()
    if args.json:
        _print_json(pending)
        return 0
    rows = [[a["approval_id"], a["draft_id"], f"v{a['ledger_version']}", _lines_text(a["payload"]["lines"])] for a in pending]
    print(_table(rows, ["APPROVAL", "DRAFT", "LEDGER", "LINES"]))
    print(f"{plural(len(pending), 'approval')} waiting (2025-11-25 clients); answer with 'mcplab stockroom approve|reject ID'")
    return 0


def _cmd_stockroom_decide(args: argparse.Namespace) -> int:
    from .stockroom.ledger import Ledger
    from .stockroom.rules import Stockroom

    db = _db_arg(args.db)
    Ledger(db, create=False).close()  # an existing stockroom database, never a new one
    with Ledger(db) as ledger:
        room = Stockroom(ledger)
        room.approver_token  # noqa: B018 - the person's credential: readable only by the stockroom's owner (issue 15)
        answer = room.decide_approval(args.approval_id, args.decision, channel="cli")
    what = (f"{answer['approval_id']} {answer['status']} ({answer['payload']['draft_id']}: "
            f"{_lines_text(answer['payload']['lines'])})")
    if answer["status"] == "accepted":
        print(f"{what}; the change applies when the agent retries commit_reorder with this approval_id")
    else:
        print(f"{what}; nothing changes: the agent's retry of commit_reorder with this approval_id gets mutation_blocked")
    return 0


def _cmd_stockroom_request(args: argparse.Namespace) -> int:
    """What a 2025-11-25 agent does first: draft the restock and call commit_reorder, which stops at
    the approval gate. Leaves one pending approval (and its trace records) in the database."""
    from .stockroom.ledger import Ledger
    from .stockroom.rules import Stockroom

    db = _db_arg(args.db)
    Ledger(db, create=False).close()  # an existing stockroom database, never a new one
    with Ledger(db) as ledger:
        room = Stockroom(ledger, era="legacy")
        draft = room.draft_reorder()
        if not draft.get("draft_id"):
            raise UsageError(f"{db}: {draft.get('message', 'nothing to reorder')}; 'mcplab stockroom reset' restores the seed")
        arguments = {k: draft[k] for k in ("draft_id", "ledger_version", "lines")}
        outcome = room.commit_reorder(arguments)
    answer = outcome.structured or {}
    approval_id = answer.get("approval_id")
    if not approval_id:  # e.g. the draft's version went stale between the two calls
        raise UsageError(f"{db}: commit_reorder did not ask for approval ({answer.get('error') or outcome.error})")
    print(f"{approval_id} waiting for a person ({arguments['draft_id']}: {_lines_text(arguments['lines'])}), "
          f"as a 2025-11-25 agent's commit_reorder left it")
    where = f" --db {db}" if args.db else ""
    print(f"next: 'mcplab stockroom approve {approval_id}{where}' or 'mcplab stockroom reject {approval_id}{where}'; "
          f"the agent then retries commit_reorder with {json.dumps({**arguments, 'approval_id': approval_id})}")
    return 0


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cmd_stockroom_reset(args: argparse.Namespace) -> int:
    from .stockroom.ledger import Ledger
    from .stockroom.rules import Stockroom

    db = _db_arg(args.db)
    existed = Path(db).exists()
    with Ledger(db) as ledger:
        snapshot = Stockroom(ledger).reset()
    what = "reset" if existed else "created"
    print(f"stockroom {what}: {db} at ledger v{snapshot['ledger_version']} with {len(snapshot['items'])} items "
          "(recorded in the trace)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="mcplab", description="MCP conformance harness and course lab (2026-07-28 vs 2025-11-25).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser("demo", help="run the seed demo: transcripts, real SDK diff, proxy evidence, release gate")
    demo.add_argument("--fixed-proxy", action="store_true", help="the proxy keeps the origin status and body")
    demo.add_argument("--allow-drop", action="append", default=[], metavar="FIELD",
                      help="with --fixed-proxy: the release policy lets this component ignore FIELD (repeatable), e.g. futureHint")
    demo.add_argument("--evidence", metavar="PATH", help="also write the redacted evidence bundle as JSON to PATH")
    demo.set_defaults(func=_cmd_demo)

    transcripts = sub.add_parser("transcripts", help="list or run the golden and negative wire transcripts")
    tsub = transcripts.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, func, text in (("list", _cmd_list, "list the transcript cases"), ("run", _cmd_run, "judge transcripts (exit 1 if any fails)")):
        p = tsub.add_parser(name, help=text)
        p.add_argument("--case", action="append", metavar="NAME", help="only this case (repeatable; all its variants)")
        p.add_argument("--file", action="append", metavar="PATH", help="a transcript file instead of the shipped suite (repeatable)")
        p.add_argument("--dir", metavar="DIR", help="a directory of transcript files instead of the shipped suite")
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        p.set_defaults(func=func)

    serve = sub.add_parser("serve", help="run an MCP server")
    ssub = serve.add_subparsers(dest="server", required=True, metavar="SERVER")
    stock = ssub.add_parser("stockroom", help="the stockroom: four tools, an approval gate, a durable ledger and trace")
    stock.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    stock.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    stock.add_argument("--db", metavar="PATH", help="SQLite database (default: stockroom.sqlite3 in the user data directory; "
                       "':memory:' keeps nothing)")
    stock.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                       help="also accept this Host header, e.g. 'hub.example:*' behind a proxy (repeatable)")
    stock.add_argument("--no-admin", action="store_true", help="none of the /stockroom/* helper routes (ledger, trace, drafts, reset, approvals) "
                       "(they are on by default only for loopback hosts)")
    stock.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"],
                       help="uvicorn log level (default warning)")
    stock.add_argument("--sse", action="store_true", help="answer as SSE streams (read_stock with a progress token "
                       "streams one progress event per item); default: JSON")
    stock.set_defaults(func=_cmd_serve_stockroom)

    ref = ssub.add_parser("reference", help="the reference server: every fixture the official conformance scenarios call")
    ref.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    ref.add_argument("--port", type=int, default=8767, help="port (default 8767; 0 picks a free one)")
    ref.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                     help="also accept this Host header, e.g. 'hub.example:*' behind a proxy (repeatable)")
    ref.add_argument("--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"],
                     help="uvicorn log level (default warning)")
    ref.set_defaults(func=_cmd_serve_reference)

    room = sub.add_parser("stockroom", help="inspect or reset a stockroom database")
    rsub = room.add_subparsers(dest="action", required=True, metavar="ACTION")
    trace = rsub.add_parser("trace", help="print the append-only trace (exit 1 with --verify when the chain is broken)")
    trace.add_argument("--db", metavar="PATH", help="the database (default: the server's default database)")
    trace.add_argument("--json", action="store_true", help="print JSON instead of a table")
    trace.add_argument("--verify", action="store_true", help="check the hash chain and the ledger against it")
    trace.set_defaults(func=_cmd_stockroom_trace)
    trace.add_argument("--head", metavar="SEQ:HASH", help="a head printed by an earlier --verify: it must still be there")
    approvals = rsub.add_parser("approvals", help="approvals waiting for a person (the 2025-11-25 path)")
    approvals.add_argument("--db", metavar="PATH", help="the database (default: the server's default database)")
    approvals.add_argument("--json", action="store_true", help="print JSON instead of a table")
    approvals.set_defaults(func=_cmd_stockroom_approvals)
    for verb, decision, text in (("approve", "accept", "approve a waiting change"), ("reject", "decline", "reject a waiting change")):
        p = rsub.add_parser(verb, help=f"{text} (out of band: the agent cannot do this itself)")
        p.add_argument("approval_id", metavar="APPROVAL_ID", help="as listed by 'mcplab stockroom approvals'")
        p.add_argument("--db", metavar="PATH", help="the database (default: the server's default database)")
        p.set_defaults(func=_cmd_stockroom_decide, decision=decision)
    request = rsub.add_parser("request-approval", help="leave a pending 2025-11-25 approval, as an agent's first "
                              "commit_reorder does (drafts the restock of every low item)")
    request.add_argument("--db", metavar="PATH", help="the database (default: the server's default database)")
    request.set_defaults(func=_cmd_stockroom_request)
    reset = rsub.add_parser("reset", help="restore the seed state (recorded in the trace; the trace is kept)")
    reset.add_argument("--db", metavar="PATH", help="the database (default: the server's default database)")
    reset.set_defaults(func=_cmd_stockroom_reset)

    add_conformance_command(sub)

    cases = sub.add_parser("cases", help="the case vocabulary: one invariant, one name, everywhere")
    cases.add_argument("--json", action="store_true", help="print JSON instead of a table")
    cases.set_defaults(func=_cmd_cases)
    add_live_commands(sub)
    add_preflight_command(sub)
    add_course_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (2, its one line already printed) or --help (0)
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    try:
        return int(args.func(args))
    except MCPLabError as exc:
        _error(str(exc))
        return 2
    except BrokenPipeError:  # e.g. piped into head
        return 0
    except OSError as exc:  # e.g. --evidence names a directory or an unwritable place
        where = f" {exc.filename}" if exc.filename else ""
        _error(f"cannot write{where}: {exc.strerror or exc}")
        return 2
    except KeyboardInterrupt:
        print("mcplab: interrupted", file=sys.stderr)
        return 130
