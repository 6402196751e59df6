"""Which recorded cases a live server can be asked, and the live cases built for a known server.

The rule (also in docs/library.md, "Which cases run live"): a transcript is replayed live when its REQUEST is
what provokes the behaviour the case names, so a live answer proves or refutes the same invariant.
- ``origin`` negatives are replayed byte for byte (duplicate headers included): live, the server
  must reject them with the named code, HTTP status and request id. A rejection that needs a
  particular tool (-32021 for a tool that requires a capability) applies only when it is offered;
  integrity rejections (-32020, -32600/-32700, -32602, -32022) come before any tool lookup and
  apply to every server.
- goldens are replayed when the server can answer the request in the chosen era: core methods
  always, ``tools/call`` when the server lists the tool, ``completion/complete`` when it advertises
  completions; the live answer must be accepted by the same validators.
- ``client``, ``serializer`` and ``intermediary`` negatives are NOT replayed: their fault sits in a
  recorded response or hop, which no request can make a correct server produce. Every live
  response is judged by the same validators and every proxy hop by ``proxy_findings``, so such a
  fault is reported under its own case name on the row where it happened.
- transcripts with follow-up exchanges are not replayed (the retry must carry state the server
  issues); ``golden-additive-field`` is about what a client keeps from a field the server chooses
  to send, so it is judged on every live response instead.
Built live cases: a server that offers a known streaming tool, ``read_stock`` (the stockroom) or
``test_tool_with_progress`` (the reference server), also gets ``golden-modern-call.<tool>`` and
``golden-sse-stream.<tool>`` (a progress token asks it to stream; a JSON answer leaves the stream
case not applicable), so every known server has a real stream to compare through a proxy; in the
legacy era only the stream case is built (it is era-neutral; the call case is a 2026-07-28 one).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import MISSING_REQUIRED_CLIENT_CAPABILITY
from ..requests import build_request
from ..transcript import Exchange, Transcript

__all__ = ["LiveCase", "plan_live_cases", "built_cases", "STREAM_TOOL_NAME", "STREAM_TOOLS", "PROGRESS_TOKEN"]

#: The read-only tool the built cases call (the stockroom's; it streams progress for a token).
STREAM_TOOL_NAME = "read_stock"
#: Tools that take no arguments and stream progress for a token -> the variant of their built cases
#: (the first one a server offers is used).
STREAM_TOOLS = {STREAM_TOOL_NAME: "read-stock", "test_tool_with_progress": "tool-with-progress"}
PROGRESS_TOKEN = "mcplab-live-1"
_JUDGED_ON_EVERY_RESPONSE = frozenset({"golden-additive-field"})


@dataclass(frozen=True)
class LiveCase:
    """A case as it runs live: ``template`` holds the request to send (its recorded response is
    replaced by the live capture before judging); ``reason`` says why it does not apply."""

    template: Transcript
    applies: bool
    reason: str = ""
    stream: bool = False
    #: A generated check's own judge (``capture -> (status, detail, observed case)``); ``None``:
    #: the recorded runner judges the capture against ``template``.
    judge: Callable[[Any], tuple[str, str, str | None]] | None = None
    #: The called tool's declared ``outputSchema`` (its structuredContent must conform).
    output_schema: Any = None

    @property
    def key(self) -> str:
        return self.template.key

    @property
    def name(self) -> str:
        return self.template.name

    @property
    def boundary(self) -> str | None:
        return (self.template.expect or {}).get("boundary")


def _method(t: Transcript) -> str | None:
    request = t.exchanges[0].request
    return request.get("method") if isinstance(request, dict) else None


def _tool(t: Transcript) -> Any:
    request = t.exchanges[0].request
    params = request.get("params") if isinstance(request, dict) else None
    return params.get("name") if isinstance(params, dict) else None


def _recorded_version(t: Transcript) -> str | None:
    """The ``MCP-Protocol-Version`` header the transcript's request carries (``None`` without one)."""
    return next((v for k, v in t.exchanges[0].request_headers if k.lower() == "mcp-protocol-version"), None)


def _why_not(t: Transcript, era: str, tools: Collection[str], capabilities: Mapping[str, Any], version: str | None,
             prompts: Collection[str] | None = None) -> str:
    """Empty when ``t`` applies live; otherwise the reason."""
    boundary = (t.expect or {}).get("boundary")
    if t.era != era:
        return f"recorded for the {t.era} era; this server's era is {era}"
    recorded = _recorded_version(t)
    if era == "legacy" and version is not None and recorded is not None and recorded != version:
        return (f"recorded for a {recorded} session; this server negotiated {version}, so the replayed "
                "MCP-Protocol-Version header would be wrong for it")
    if len(t.exchanges) > 1:
        return "its later requests carry state the server issues (requestState); a replay cannot reproduce them"
    if boundary in ("client", "serializer", "intermediary"):
        return (f"the fault sits in a recorded response ({boundary} boundary): no request provokes it, so every live "
                "response and proxy hop is checked for it instead")
    if t.name in _JUDGED_ON_EVERY_RESPONSE:
        return "about what a client keeps from a field the server chooses to send: judged on every live response"
    method = _method(t)
    if method == "completion/complete" and "completions" not in capabilities:
        return "the server does not advertise completions"
    if method == "completion/complete" and prompts is not None:
        ref = ((t.exchanges[0].request.get("params") or {}).get("ref") or {}) if isinstance(t.exchanges[0].request, dict) else {}
        if ref.get("type") != "ref/prompt" or ref.get("name") not in prompts:
            return f"the server does not offer the prompt {ref.get('name')!r} this request completes"
    if method == "tools/call" and (t.cls == "golden" or (t.expect or {}).get("code") == MISSING_REQUIRED_CLIENT_CAPABILITY):
        tool = _tool(t)
        if tool not in tools:
            return f"the server does not offer the tool {tool!r}"
    return ""


def built_cases(era: str, tools: Collection[str]) -> list[LiveCase]:
    """Live cases built for a server that offers one of ``STREAM_TOOLS``: both in the modern era;
    in the legacy era only the stream case (``golden-modern-call`` is a 2026-07-28 invariant)."""
    tool = next((name for name in STREAM_TOOLS if name in tools), None)
    if tool is None:
        return []
    variant = STREAM_TOOLS[tool]
    cases = []
    for name, meta, stream, what in (
        ("golden-modern-call", {}, False, f"tools/call {tool}: a complete result with content"),
        ("golden-sse-stream", {"progressToken": PROGRESS_TOKEN}, True,
         f"tools/call {tool} with a progress token: related progress events, then the result, then end of stream"),
    ):
        if era == "legacy" and not stream:
            continue
        body, headers = build_request("tools/call", {"name": tool, "arguments": {}, "_meta": meta}, era=era,
                                      client_info={"name": "mcplab", "version": "live"} if era == "modern" else None)
        template = Transcript(name=name, cls="golden", era=era, description=what, variant=variant, source="<built live case>",
                              exchanges=[Exchange(headers, body, 200, [], None)])
        cases.append(LiveCase(template, applies=True, stream=stream))
    return cases


def plan_live_cases(transcripts: Iterable[Transcript], era: str, tools: Collection[str] = (),
                    capabilities: Mapping[str, Any] | None = None, version: str | None = None,
                    prompts: Collection[str] | None = None) -> list[LiveCase]:
    """Every transcript as a :class:`LiveCase` (applying or with its reason), then the built cases.

    ``version`` is the legacy version ``initialize`` negotiated: a legacy transcript recorded for
    another version does not apply (its request names its own version in a header). ``prompts``
    (when known) are the prompts the server lists: a recorded completion of another prompt does not apply."""
    planned = []
    for t in transcripts:
        reason = _why_not(t, era, tools, capabilities or {}, version, prompts)
        planned.append(LiveCase(t, applies=not reason, reason=reason))
    return planned + built_cases(era, tools)
