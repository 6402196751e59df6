"""``mcplab preflight --url URL ACTION``: each action is one :class:`~mcplab.flightdeck.deck.FlightDeck` call, printed as JSON.

Design: preflight only, so the command line never runs a plan (a run needs an approver; use the
Python API). Exit 0 when the answer holds no blocker, 1 when a call or step is statically blocked
or a tool is not in the effective catalog, 2 for bad input (``--args`` that is not a JSON object,
an unreadable plan file, an unreachable URL): one line on stderr.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..clitools import QuietWait, seconds, url
from ..errors import MCPLabError

__all__ = ["add_preflight_command", "PreflightInputError"]


class PreflightInputError(MCPLabError):
    """Bad command-line input to ``mcplab preflight`` (exit 2)."""


def _json_object(text: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except RecursionError:
        raise PreflightInputError(f"{where}: nested too deeply to read; expected a JSON object") from None
    except ValueError as exc:
        raise PreflightInputError(f"{where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                              "expected a JSON object such as '{\"draft_id\": \"DR-0001\"}'") from None
    if not isinstance(value, dict):
        raise PreflightInputError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _plan_calls(path: str) -> Any:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PreflightInputError(f"{path}: cannot read the plan file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise PreflightInputError(f"{path}: nested too deeply to read; expected a list of {{tool, arguments}} objects") from None
    except ValueError as exc:
        raise PreflightInputError(f"{path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                              "expected a list of {tool, arguments} objects") from None


def _run(args: argparse.Namespace) -> int:
    try:
        return _answer(args)
    except MCPLabError as exc:  # one line on stderr (exit 2), without the URL's password or secret query values
        from .catalog import without_url_secrets

        raise PreflightInputError(without_url_secrets(str(exc), args.url)) from None


def _answer(args: argparse.Namespace) -> int:
    arguments = _json_object(args.args, "--args") if getattr(args, "args", None) is not None else None
    from ..redaction import redact_urls_in
    from .deck import FlightDeck  # the SDK and server imports only when the command runs
    from .plan import parse_calls

    if args.preflight_action in ("validate", "preview") and arguments is None:
        raise PreflightInputError(f"{args.preflight_action} {args.name}: --args is required (the exact arguments to validate, a JSON object "
                                  "such as '{\"draft_id\": \"DR-0001\"}'; '{}' for a call without arguments)")
    calls = parse_calls(_plan_calls(args.file), where=f"{args.file}: calls") if args.preflight_action == "plan" else None
    with QuietWait(f"waiting for {redact_urls_in(args.url)} (discovery; up to {args.timeout:g} s per request)"), \
            FlightDeck.connect(args.url, era=args.era, timeout=args.timeout) as deck:
        action = args.preflight_action
        if action == "inspect-server":
            answer, ok = deck.inspect_server(), True
        elif action == "search":
            answer = deck.search_tools(args.query)
            ok = bool(answer["matches"])
        elif action == "inspect-tool":
            answer = deck.inspect_tool(args.name)
            ok = answer["in_effective_catalog"] and not answer["execution_policy"].get("denied")
        elif action == "authority":
            answer = deck.inspect_authority(args.name, arguments)
            ok = not answer["denial_evidence"]
        elif action == "limits":
            answer, ok = deck.inspect_limits(), True
        elif action in ("validate", "preview"):
            call = deck.validate_tool_call if action == "validate" else deck.preview_tool_call
            answer = call(args.name, arguments if arguments is not None else {}, catalog_identity=args.catalog_identity)
            ok = not answer["static_request_blocked"]
        else:
            answer = deck.compile_invocation_plan(calls)
            ok = not answer["blocked_steps"]
    print(json.dumps(answer, indent=2, ensure_ascii=False))
    return 0 if ok else 1


def add_preflight_command(sub: Any) -> None:
    """Register ``preflight`` on the top-level subparsers of ``mcplab``."""
    pre = sub.add_parser("preflight", help="Flight Deck: read-only preflight of MCP tool calls on any server (never calls a tool)")
    pre.add_argument("--url", required=True, type=url, help="the MCP endpoint, e.g. http://127.0.0.1:8765/mcp")
    pre.add_argument("--era", default="modern", choices=["modern", "legacy"], help="2026-07-28 (modern, default) or 2025-11-25 (legacy)")
    pre.add_argument("--timeout", type=seconds, default=10.0, help="seconds per HTTP request, above 0 (default 10)")
    psub = pre.add_subparsers(dest="preflight_action", required=True, metavar="ACTION")
    psub.add_parser("inspect-server", help="the effective catalog, era, policy identity and catalog_identity")
    search = psub.add_parser("search", help="search the effective catalog (names, descriptions, annotations)")
    search.add_argument("query", help="words that must all appear")
    for name, text in (("inspect-tool", "descriptor, input schema, annotations, execution policy, authority summary"),
                       ("authority", "the authority layers (give --args to check the exact target)"),
                       ("validate", "static validation of one call (exit 1 when blocked)"),
                       ("preview", "validation plus predicted effects (a prediction, not a receipt)")):
        p = psub.add_parser(name, help=text)
        p.add_argument("name", metavar="NAME", help="the exact tool name from discovery")
        if name != "inspect-tool":
            p.add_argument("--args", metavar="JSON", help="the arguments as a JSON object" + (" (required)" if name != "authority" else ""))
        if name in ("validate", "preview"):
            p.add_argument("--catalog-identity", metavar="ID", help="a catalog_identity from inspect-server: the catalog precondition")
    psub.add_parser("limits", help="non-secret server and schema limits (nothing is reserved)")
    plan = psub.add_parser("plan", help="compile a plan from a JSON file of [{tool, arguments}] (exit 1 when a step is blocked)")
    plan.add_argument("file", metavar="FILE.json", help="a list of {tool, arguments} objects, or {\"calls\": [...]}")
    pre.set_defaults(func=_run)
