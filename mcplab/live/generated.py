"""Checks generated from what a live server declares, so a server mcplab has never seen gets a
full examination and not only the recorded suite's requests.

Design: :func:`read_surface` lists what the server advertises (tools, resources, templates,
prompts; at most ``MAX_PAGES`` pages each), then :func:`generated_cases` turns it into
:class:`~mcplab.live.cases.LiveCase` s under the stable case names: every advertised list and
read (``golden-declared-method``), read-only tools called with arguments generated from their
``inputSchema`` (``golden-modern-call``, ``mcplab.live.argsgen``, seeded) and with arguments it
rejects (``negative-invalid-arguments``), encoded ``Mcp-Name`` s, progress streams, an unknown
tool and method, a foreign ``Origin`` for a loopback server, invalid cursors and log levels, and
an unsupported version on ``server/discover``. Goldens are judged by the recorded runner (then the
official schema); the rest by the small judges here, which use the same validators. Tools without
``readOnlyHint: true`` are called only with ``call_tools="all"``. Every request goes to the one URL.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..cases import CASES, enforced
from ..errors import INVALID_PARAMS, METHOD_NOT_FOUND, ProtocolViolation
from ..requests import build_request
from ..responses import validate_response
from ..results import validate_result
from ..transcript import Exchange, Transcript
from .argsgen import invalid_arguments, valid_arguments
from .capture import Capture, send
from .cases import PROGRESS_TOKEN, LiveCase

__all__ = ["Surface", "read_surface", "generated_cases", "CALL_TOOLS", "MAX_TOOLS", "CALLS_PER_TOOL", "MAX_ITEMS", "MAX_PAGES",
           "DEFAULT_SEED", "FOREIGN_ORIGIN"]

#: Which tools may be called: ``read-only`` (``annotations.readOnlyHint`` true) or ``all``.
CALL_TOOLS = ("read-only", "all")
MAX_TOOLS = 10
CALLS_PER_TOOL = 2
MAX_ITEMS = 5
MAX_PAGES = 5
DEFAULT_SEED = 20260728
#: An Origin no local server may allow (``.invalid`` is reserved: it never resolves).
FOREIGN_ORIGIN = "http://mcplab-check.invalid"
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_LISTS = (("tools/list", "tools", "tools"), ("resources/list", "resources", "resources"),
          ("resources/templates/list", "resourceTemplates", "resources"), ("prompts/list", "prompts", "prompts"))

Judge = Callable[[Capture], tuple[str, str, str | None]]


@dataclass
class Surface:
    """What a server declared: its capabilities and every listed item (as sent)."""

    era: str
    capabilities: dict[str, Any]
    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)

    def listed(self, key: str) -> list[dict[str, Any]]:
        return self.items.get(key, [])

    def summary(self) -> dict[str, Any]:
        return {"capabilities": sorted(self.capabilities), **{key: len(value) for key, value in self.items.items()}}


def _client_info(era: str) -> dict[str, str] | None:
    from .. import __version__
    return {"name": "mcplab", "version": __version__} if era == "modern" else None


def _answer(capture: Capture) -> Any:
    """The JSON-RPC response in a capture (the stream's last message with an id), or ``None``."""
    texts = [e["data"] for e in capture.events] if capture.is_stream else [capture.response_body()]
    for text in reversed(texts):
        try:
            message = json.loads(text) if isinstance(text, (str, bytes)) else None
        except (ValueError, RecursionError):
            continue
        if isinstance(message, dict) and ("result" in message or "error" in message):
            return message
    return None


def _advertised(surface_caps: Mapping[str, Any], capability: str) -> bool:
    return isinstance(surface_caps, Mapping) and capability in surface_caps


def read_surface(client: httpx.Client, url: str, era: str, extra: Sequence[tuple[str, str]],
                 capabilities: Mapping[str, Any] | None) -> Surface:
    """List everything the server advertises (bounded by ``MAX_PAGES`` pages per list)."""
    surface = Surface(era, dict(capabilities or {}))
    for method, key, capability in _LISTS:
        if not _advertised(surface.capabilities, capability):
            continue
        cursor: Any = None
        for page in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            body, headers = build_request(method, params, era=era, client_info=_client_info(era), id=100 + page)
            result = (_answer(send(client, url, [*headers, *extra], body)) or {}).get("result")
            found = result.get(key) if isinstance(result, dict) else None
            if not isinstance(found, list):
                break
            surface.items.setdefault(key, []).extend(item for item in found if isinstance(item, dict))
            surface.pages[method] = page + 1
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                break
    return surface


# ------------------------------------------------------------------ building cases


def _template(name: str, variant: str, era: str, body: Any, headers: list[tuple[str, str]], description: str) -> Transcript:
    case = CASES[name]
    cls = name.split("-", 1)[0]
    expect = {"boundary": case.boundary, "code": case.code} if cls == "negative" else None
    return Transcript(name=name, cls=cls, era=era, description=description, variant=variant, source="<generated live check>",
                      exchanges=[Exchange(headers, body, 200, [], None)], expect=expect)


def _build(name: str, variant: str, era: str, method: str, params: Mapping[str, Any], description: str, *,
           judge: Judge | None = None, output_schema: Any = None, stream: bool = False,
           headers: Callable[[list[tuple[str, str]]], list[tuple[str, str]]] | None = None) -> LiveCase:
    body, sent = build_request(method, params, era=era, client_info=_client_info(era))
    if headers is not None:
        sent = headers(sent)
    return LiveCase(_template(name, variant, era, body, sent, description), applies=True, stream=stream, judge=judge,
                    output_schema=output_schema)


def _slug(text: str, limit: int = 40) -> str:
    out = "".join(c if c.isalnum() or c in "-_." else "-" for c in text)[:limit]
    return out or "x"


def _envelope(capture: Capture, request: Any, era: str) -> dict[str, Any]:
    """The validated response (raises ``ProtocolViolation``)."""
    response = validate_response(capture.response_body(), request, status=capture.status, headers=capture.headers, era=era)
    if response is None:
        raise ProtocolViolation("a request was answered like a notification (no response)", code=INVALID_PARAMS,
                                case="negative-response-unparsable")
    return response


def _error_or_tool_error(name: str, request: Any, era: str, what: str) -> Judge:
    """Pass when the server refuses (a JSON-RPC error) or reports ``isError: true``; fail on a plain success."""
    def judge(capture: Capture) -> tuple[str, str, str | None]:
        try:
            response = _envelope(capture, request, era)
            if "error" in response:
                return "pass", f"refused {what} with JSON-RPC error {response['error'].get('code')}", None
            validate_result(response["result"], era, method="tools/call")
        except ProtocolViolation as v:
            return "fail", f"({v.case}, {v.code}): {v.message}", v.case
        if response["result"].get("isError") is True:
            return "pass", f"reported {what} as a tool execution error (isError: true)", None
        return "fail", f"{what} was answered as a success: {json.dumps(response['result'])[:300]}", name
    return judge


def _unknown_tool(request: Any, era: str) -> Judge:
    def judge(capture: Capture) -> tuple[str, str, str | None]:
        try:
            response = _envelope(capture, request, era)
            if "result" in response:
                validate_result(response["result"], era, method="tools/call")
        except ProtocolViolation as v:
            return "fail", f"({v.case}, {v.code}): {v.message}", v.case
        if "error" in response:
            code = response["error"].get("code")
            if code != INVALID_PARAMS:
                enforced("should-unknown-tool-error", f"an unknown tool was refused with {code}, not -32602")
            return "pass", f"refused the unknown tool with JSON-RPC error {code}", None
        enforced("should-unknown-tool-error", f"an unknown tool was answered as a result (isError: {response['result'].get('isError')!r})")
        return "pass", "answered the unknown tool with a result, not a protocol error", None
    return judge


def _unknown_method(request: Any, era: str) -> Judge:
    def judge(capture: Capture) -> tuple[str, str, str | None]:
        try:
            response = _envelope(capture, request, era)
        except ProtocolViolation as v:
            return "fail", f"({v.case}, {v.code}): {v.message}", v.case
        error = response.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        if code != METHOD_NOT_FOUND:
            return "fail", f"expected -32601 for a method the server does not implement, got {code if error else 'a result'}", \
                "negative-unknown-method"
        if era == "modern" and capture.status != 404:  # validate_response enforces it; kept explicit for the detail
            return "fail", f"-32601 travelled with HTTP {capture.status}, not 404", "negative-unknown-method"
        return "pass", f"HTTP {capture.status} with -32601", None
    return judge


def _origin_refused(capture: Capture) -> tuple[str, str, str | None]:
    if capture.status == 403:
        return "pass", "a foreign Origin was refused with HTTP 403", None
    return "fail", f"a request with Origin {FOREIGN_ORIGIN} was answered HTTP {capture.status}, not 403", "negative-origin-not-allowed"


def _should_invalid_params(rule: str, request: Any, era: str, method: str, what: str) -> Judge:
    """An envelope that must be valid; -32602 expected only as a SHOULD (``rule``)."""
    def judge(capture: Capture) -> tuple[str, str, str | None]:
        try:
            response = _envelope(capture, request, era)
            if "result" in response:
                validate_result(response["result"], era, method=method)
        except ProtocolViolation as v:
            return "fail", f"({v.case}, {v.code}): {v.message}", v.case
        code = response["error"].get("code") if "error" in response else None
        if code != INVALID_PARAMS:
            enforced(rule, f"{what} was answered {'with ' + str(code) if code is not None else 'as a success'}, not -32602")
            return "pass", f"{what}: answered {'error ' + str(code) if code is not None else 'a result'} (a SHOULD asks for -32602)", None
        return "pass", f"{what}: refused with -32602", None
    return judge


def _unknown_resource(request: Any, era: str) -> Judge:
    """2026-07-28: MUST -32602; 2025-11-25: an error (-32002 or -32602) SHOULD come back."""
    def judge(capture: Capture) -> tuple[str, str, str | None]:
        try:
            response = _envelope(capture, request, era)
            if "result" in response:
                validate_result(response["result"], era, method="resources/read")
        except ProtocolViolation as v:
            return "fail", f"({v.case}, {v.code}): {v.message}", v.case
        code = response["error"].get("code") if "error" in response else None
        if era == "modern":
            if code == INVALID_PARAMS:
                return "pass", "an unknown resource was refused with -32602", None
            return "fail", (f"an unknown resource was answered {'with ' + str(code) if code is not None else 'as a success'}, "
                            "not -32602"), "negative-unknown-resource"
        if code not in (-32002, INVALID_PARAMS):
            enforced("should-unknown-resource-legacy", f"an unknown resource was answered {code if code is not None else 'as a success'}")
        return "pass", f"an unknown resource: answered {code if code is not None else 'a result'}", None
    return judge


def _sentinel(value: str) -> str:
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def _with_name_header(value: str) -> Callable[[list[tuple[str, str]]], list[tuple[str, str]]]:
    return lambda headers: [(k, v) for k, v in headers if k.lower() != "mcp-name"] + [("Mcp-Name", value)]


def _read_only(tool: Mapping[str, Any]) -> bool:
    annotations = tool.get("annotations")
    return isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True


def _tool_cases(surface: Surface, call_tools: str, seed: int) -> tuple[list[LiveCase], list[LiveCase]]:
    """Calls of the listed tools: (cases run, cases not applicable with their reason)."""
    era, run, skipped = surface.era, [], []
    callable_tools, not_called = [], []  # one pass: comparing every tool with every other was quadratic
    for t in surface.listed("tools"):
        if isinstance(t.get("name"), str) and t["name"] and (call_tools == "all" or _read_only(t)):
            callable_tools.append(t)
        elif isinstance(t.get("name"), str):
            not_called.append(t)
    for tool in not_called[:MAX_TOOLS]:
        template = _template("golden-modern-call", f"gen-{_slug(tool['name'])}", era, {}, [], f"tools/call {tool['name']}")
        skipped.append(LiveCase(template, applies=False,
                                reason="not marked readOnlyHint: true; called only with --call-tools all"))
    sentinel_done = stream_done = 0
    for index, tool in enumerate(callable_tools[:MAX_TOOLS]):
        name, schema = tool["name"], tool.get("inputSchema")
        slug = _slug(name)
        arguments = valid_arguments(schema, CALLS_PER_TOOL, seed + index)
        if not arguments:
            template = _template("golden-modern-call", f"gen-{slug}", era, {}, [], f"tools/call {name}")
            skipped.append(LiveCase(template, applies=False, reason="no arguments its inputSchema accepts could be generated"))
        for n, args in enumerate(arguments):
            run.append(_build("golden-modern-call" if era == "modern" else "golden-declared-method", f"gen-{slug}-{n + 1}", era,
                              "tools/call", {"name": name, "arguments": args},
                              f"tools/call {name} with generated arguments {json.dumps(args)[:120]}",
                              output_schema=tool.get("outputSchema")))
        bad = invalid_arguments(schema, seed + index)
        if bad is not None:
            args, why = bad
            body, _ = build_request("tools/call", {"name": name, "arguments": args}, era=era, client_info=_client_info(era))
            run.append(_build("negative-invalid-arguments", f"gen-{slug}", era, "tools/call", {"name": name, "arguments": args},
                              f"tools/call {name}: {why}", judge=_error_or_tool_error("negative-invalid-arguments", body, era,
                                                                                      f"arguments its inputSchema rejects ({why})")))
        if arguments and era == "modern" and sentinel_done < 2:
            sentinel_done += 1
            run.append(_build("golden-mcp-name-sentinel", f"gen-{slug}", era, "tools/call", {"name": name, "arguments": arguments[0]},
                              f"tools/call {name} with Mcp-Name sent as a base64 sentinel (the server must decode it)",
                              headers=_with_name_header(_sentinel(name))))
        if arguments and stream_done < 3:
            stream_done += 1
            params = {"name": name, "arguments": arguments[0], "_meta": {"progressToken": PROGRESS_TOKEN}}
            run.append(_build("golden-sse-stream", f"gen-{slug}", era, "tools/call", params,
                              f"tools/call {name} with a progress token (a streamed answer is judged; JSON is not applicable)",
                              stream=True))
    unknown, names = "mcplab-no-such-tool", {t.get("name") for t in surface.listed("tools") if isinstance(t.get("name"), str)}
    while unknown in names:
        unknown += "-x"
    if _advertised(surface.capabilities, "tools"):
        body, _ = build_request("tools/call", {"name": unknown, "arguments": {}}, era=era, client_info=_client_info(era))
        run.append(_build("negative-unknown-tool", "gen", era, "tools/call", {"name": unknown, "arguments": {}},
                          f"tools/call {unknown}, a tool the server does not list", judge=_unknown_tool(body, era)))
    return run, skipped


def _resource_prompt_cases(surface: Surface) -> list[LiveCase]:
    era, run = surface.era, []
    for resource in surface.listed("resources")[:MAX_ITEMS]:
        uri = resource.get("uri")
        if not isinstance(uri, str) or not uri:
            continue
        run.append(_build("golden-declared-method", f"resources-read-{_slug(uri)}", era, "resources/read", {"uri": uri},
                          f"resources/read {uri}"))
    listed = surface.listed("resources")
    if era == "modern" and listed and isinstance(listed[0].get("uri"), str):
        uri = listed[0]["uri"]
        run.append(_build("golden-mcp-name-sentinel", f"gen-resource-{_slug(uri)}", era, "resources/read", {"uri": uri},
                          f"resources/read {uri} with Mcp-Name as a base64 sentinel", headers=_with_name_header(_sentinel(uri))))
    if _advertised(surface.capabilities, "resources"):
        uri = "file:///mcplab-check/no-such-resource"
        body, _ = build_request("resources/read", {"uri": uri}, era=era, client_info=_client_info(era))
        run.append(_build("negative-unknown-resource", "gen", era, "resources/read", {"uri": uri},
                          f"resources/read {uri}, a resource the server does not have", judge=_unknown_resource(body, era)))
    if _advertised(surface.capabilities, "prompts"):
        name = "mcplab-no-such-prompt"
        body, _ = build_request("prompts/get", {"name": name}, era=era, client_info=_client_info(era))
        run.append(_build("negative-unknown-prompt", "gen", era, "prompts/get", {"name": name},
                          f"prompts/get {name}, a prompt the server does not list",
                          judge=_should_invalid_params("should-unknown-prompt-error", body, era, "prompts/get", "an unknown prompt")))
    for prompt in surface.listed("prompts")[:MAX_ITEMS]:
        name = prompt.get("name")
        if not isinstance(name, str) or not name:
            continue
        listed_arguments = prompt.get("arguments") if isinstance(prompt.get("arguments"), list) else []
        declared = [a for a in listed_arguments if isinstance(a, dict) and isinstance(a.get("name"), str)]
        arguments = {a["name"]: "mcplab" for a in declared if a.get("required")}
        run.append(_build("golden-declared-method", f"prompts-get-{_slug(name)}", era, "prompts/get",
                          {"name": name, "arguments": arguments}, f"prompts/get {name} with its required arguments"))
        if _advertised(surface.capabilities, "completions") and declared:
            ref = {"type": "ref/prompt", "name": name}
            run.append(_build("golden-completion", f"gen-{_slug(name)}", era, "completion/complete",
                              {"ref": ref, "argument": {"name": declared[0]["name"], "value": ""}},
                              f"completion/complete for prompt {name}, argument {declared[0]['name']}"))
    return run


def _list_cases(surface: Surface) -> list[LiveCase]:
    era, run = surface.era, []
    for method, _key, capability in _LISTS:
        if not _advertised(surface.capabilities, capability):
            continue
        if method != "tools/list" or era == "legacy":  # modern tools/list is golden-modern-list
            run.append(_build("golden-declared-method", method.replace("/", "-"), era, method, {}, f"{method}, advertised by {capability}"))
        body, _ = build_request(method, {"cursor": "mcplab-invalid-cursor"}, era=era, client_info=_client_info(era))
        run.append(_build("negative-invalid-cursor", method.replace("/", "-"), era, method, {"cursor": "mcplab-invalid-cursor"},
                          f"{method} with a cursor the server never issued",
                          judge=_should_invalid_params("should-invalid-cursor", body, era, method, f"{method} with an invalid cursor")))
    return run


def _protocol_cases(surface: Surface, url: str) -> list[LiveCase]:
    era, run = surface.era, []
    body, _ = build_request("mcplab/no-such-method", {}, era=era, client_info=_client_info(era))
    run.append(_build("negative-unknown-method", "gen", era, "mcplab/no-such-method", {}, "a method no MCP revision defines",
                      judge=_unknown_method(body, era)))
    host = urlsplit(url).hostname or ""
    if host in _LOOPBACK:
        run.append(_build("negative-origin-not-allowed", "gen", era, "tools/list" if era == "legacy" else "server/discover", {},
                          f"a local server asked with Origin {FOREIGN_ORIGIN}", judge=lambda capture: _origin_refused(capture),
                          headers=lambda headers: [*headers, ("Origin", FOREIGN_ORIGIN)]))
    if era != "modern":
        return run
    version = "2099-01-01"
    body, sent = build_request("server/discover", era=era, client_info=_client_info(era))
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = version
    sent = [(k, version if k.lower() == "mcp-protocol-version" else v) for k, v in sent]
    template = _template("negative-unsupported-version", "gen-discover", era, body, sent,
                         "server/discover naming a version no server supports: 400, -32022 with the supported list")
    run.append(LiveCase(template, applies=True))
    run.append(_build("golden-declared-method", "log-level-debug", era, "server/discover",
                      {"_meta": {"io.modelcontextprotocol/logLevel": "debug"}}, "server/discover asking for debug logs"))
    if _advertised(surface.capabilities, "logging"):
        body, _ = build_request("tools/list", {"_meta": {"io.modelcontextprotocol/logLevel": "loudest"}}, era=era,
                                client_info=_client_info(era))
        run.append(_build("negative-invalid-log-level", "gen", era, "tools/list", {"_meta": {"io.modelcontextprotocol/logLevel": "loudest"}},
                          "tools/list with logLevel 'loudest', not a log level",
                          judge=_should_invalid_params("should-invalid-log-level", body, era, "tools/list", "an unknown logLevel")))
    return run


def generated_cases(surface: Surface, url: str, *, call_tools: str = "read-only", seed: int = DEFAULT_SEED) -> list[LiveCase]:
    """Every check generated for ``surface`` (applying, or with the reason it does not)."""
    if call_tools not in CALL_TOOLS:
        raise ValueError(f"call_tools must be one of {', '.join(CALL_TOOLS)}, got {call_tools!r}")
    tools_run, tools_skipped = _tool_cases(surface, call_tools, seed)
    return [*_list_cases(surface), *tools_run, *_resource_prompt_cases(surface), *_protocol_cases(surface, url), *tools_skipped]
