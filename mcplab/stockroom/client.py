"""A client for a running stockroom server: the same calls as the in-process ``Stockroom``, over HTTP.

Design: plain JSON-RPC over ``httpx`` built with :func:`mcplab.requests.build_request`, so every
byte is visible to a student (``client.history`` keeps the last exchanges, redacted). Each call
is one stateless POST; the 2025-11-25 era performs ``initialize`` once first. Answers are judged
by the core's :func:`~mcplab.responses.validate_response` before they become a ``ToolOutcome``,
so a server that breaks the protocol is reported as a violation, not misread. A reply is read
up to :data:`MAX_RESPONSE_BYTES` (after content decoding; stacked codings such as ``gzip, gzip``,
a decompression bomb, are refused) and a body too large, unparsable or
nested too deeply raises :class:`StockroomConnectionError` (one line in the CLI), never a
``RecursionError`` or an unbounded read.
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from typing import Any

import httpx

from .. import __version__
from ..bounded import BodyTooLarge, read_reply
from ..errors import MCPLabError, ProtocolViolation
from ..redaction import redact
from ..release import stream_health_sample
from ..requests import build_request
from ..responses import validate_response
from ..sse import parse_sse
from ..versions import LEGACY_VERSION, check_era
from .catalog import STREAM_TOOL
from .outcome import StockroomAPI, ToolOutcome, _abbreviate
from .rules import ApprovalError

__all__ = ["StockroomClient", "StockroomConnectionError", "stream_health_window", "MAX_RESPONSE_BYTES"]

#: The largest reply body (after content decoding) a client reads; more is a StockroomConnectionError.
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
#: Headers that describe the body on the wire, dropped once it is read and decoded.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})

_CLIENT_INFO = {"name": "mcplab-stockroom-client", "version": __version__}
_HISTORY = 50


class StockroomConnectionError(MCPLabError):
    """The server could not be reached or answered something that is not MCP; the message says which."""


def _sealed_tokens_shortened(exchange: dict[str, Any]) -> dict[str, Any]:
    """``requestState`` in a history entry shortened: the history is for reading, not for replaying."""
    for side in ("request", "response"):
        message = exchange.get(side)
        holder = message.get("params") if side == "request" and isinstance(message, dict) else (
            message.get("result") if isinstance(message, dict) else None)
        if isinstance(holder, dict) and "requestState" in holder:
            holder["requestState"] = _abbreviate(holder["requestState"])
    return exchange


class StockroomClient(StockroomAPI):
    """``StockroomClient("http://127.0.0.1:8765/mcp")``: talk to a stockroom server in either era.

    ``client_capabilities`` defaults to a client that can answer elicitation forms (the approval
    gate needs it); pass ``{}`` to see the server refuse ``commit_reorder`` with -32021.
    """

    def __init__(self, url: str, *, era: str = "modern", client_capabilities: dict[str, Any] | None = None,
                 timeout: float = 30.0, approver_token: str | None = None) -> None:
        self.url = url
        #: The person's credential for :meth:`decide_approval` (``RunningServer.approver_token`` or the
        #: ``<db>.approver-token`` file); an agent's client has none, and the server refuses it.
        self._approver_token = approver_token
        self.era = check_era(era)
        self.client_capabilities = {"elicitation": {"form": {}}} if client_capabilities is None else client_capabilities
        self.history: deque[dict[str, Any]] = deque(maxlen=_HISTORY)
        self._ids = itertools.count(1)
        self._http = httpx.Client(timeout=timeout)
        self._initialized = False
        #: A 2025-11-25 server may keep a session (``Mcp-Session-Id`` on the ``initialize`` answer): echoed after.
        self._session_id: str | None = None
        #: The 2025-11-25 ``initialize`` result once it was received (server info, capabilities, instructions).
        self.initialize_result: dict[str, Any] | None = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> StockroomClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        return self.url.rsplit("/mcp", 1)[0]

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One HTTP exchange with the body read up to :data:`MAX_RESPONSE_BYTES`; failures are one line."""
        try:
            with self._http.stream(method, url, **kwargs) as reply:
                body = read_reply(reply, MAX_RESPONSE_BYTES)
        except BodyTooLarge as exc:
            raise StockroomConnectionError(f"{url}: {exc}") from None
        except httpx.HTTPError as exc:
            raise StockroomConnectionError(f"{url}: {exc.__class__.__name__}: {exc}") from None
        headers = [(name, value) for name, value in reply.headers.multi_items() if name.lower() not in _WIRE_HEADERS]
        return httpx.Response(reply.status_code, headers=headers, content=body, request=reply.request)

    def _json_of(self, reply: httpx.Response, where: str) -> Any:
        """The reply body as JSON; garbage or JSON nested too deeply to parse is a one-line error."""
        try:
            return reply.json()
        except RecursionError:
            raise StockroomConnectionError(f"{where}: the answer is JSON nested too deeply to read") from None
        except (ValueError, UnicodeDecodeError):
            raise StockroomConnectionError(f"{where}: the answer is not JSON") from None

    # wire --------------------------------------------------------------------------------
    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return the validated JSON-RPC response (``result`` or ``error``)."""
        if self.era == "legacy" and not self._initialized and method != "initialize":
            self._initialize()
        body, headers = build_request(method, params, era=self.era, id=next(self._ids),
                                      capabilities=self.client_capabilities, client_info=_CLIENT_INFO)
        if self._session_id is not None:
            headers.append(("Mcp-Session-Id", self._session_id))
        reply = self._send("POST", self.url, json=body, headers=headers)
        if method == "initialize":
            self._session_id = reply.headers.get("mcp-session-id") or None
        response = self._response_of(reply)
        try:
            self.history.append(_sealed_tokens_shortened(redact({"request": body, "status": reply.status_code, "response": response})))
            # the raw body: an SSE answer is judged as a whole stream (related events, then the response)
            validate_response(reply.content, body, status=reply.status_code, headers=list(reply.headers.items()),
                              era=self.era)
        except ProtocolViolation as violation:
            raise StockroomConnectionError(f"{self.url} broke the protocol ({violation.case}): {violation}") from None
        except RecursionError:
            raise StockroomConnectionError(f"{self.url}: the answer is JSON nested too deeply to read") from None
        return response

    def _response_of(self, reply: httpx.Response) -> dict[str, Any]:
        media = (reply.headers.get("content-type") or "").split(";")[0].strip().lower()
        try:
            if media == "text/event-stream":
                # events without data (a resumable server's priming event) carry no message
                events = [json.loads(event["data"]) for event in parse_sse(reply.content) if event.get("data", "").strip()]
                final = [event for event in events if isinstance(event, dict) and "id" in event]
                if final:
                    return final[-1]
            return reply.json()
        except RecursionError:
            raise StockroomConnectionError(f"{self.url}: the answer is JSON nested too deeply to read") from None
        except (ValueError, UnicodeDecodeError, ProtocolViolation):
            raise StockroomConnectionError(
                f"{self.url} answered HTTP {reply.status_code} with a body that is not JSON-RPC "
                f"({media or 'no content type'}): is this an MCP endpoint?") from None

    def _initialize(self) -> None:
        self._initialized = True
        response = self.request("initialize", {"protocolVersion": LEGACY_VERSION, "capabilities": self.client_capabilities,
                                               "clientInfo": _CLIENT_INFO})
        if "error" in response:
            raise StockroomConnectionError(f"{self.url}: initialize failed: {response['error'].get('message')}")
        self.initialize_result = response["result"]
        body, headers = build_request("notifications/initialized", era="legacy", id=None)
        if self._session_id is not None:
            headers.append(("Mcp-Session-Id", self._session_id))
        self._send("POST", self.url, json=body, headers=headers)

    # MCP --------------------------------------------------------------------------------
    def list_tools(self) -> list[dict[str, Any]]:
        response = self.request("tools/list")
        if "error" in response:
            raise StockroomConnectionError(f"tools/list failed: {response['error'].get('message')}")
        return response["result"]["tools"]

    def call_tool(self, name: str, arguments: Any = None, *, input_responses: dict[str, Any] | None = None,
                  request_state: str | None = None) -> ToolOutcome:
        params: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
        if input_responses is not None:
            params["inputResponses"] = input_responses
        if request_state is not None:
            params["requestState"] = request_state
        response = self.request("tools/call", params)
        outcome = ToolOutcome(tool=name, arguments=params["arguments"], kind="complete", era=self.era, raw=response)
        if "error" in response:
            outcome.kind, outcome.error = "error", response["error"]
            return outcome
        result = response["result"]
        if result.get("resultType") == "input_required":
            outcome.kind = "input_required"
            outcome.input_requests = result.get("inputRequests")
            outcome.request_state = result.get("requestState")
            return outcome
        outcome.structured = result.get("structuredContent")
        outcome.is_error = bool(result.get("isError"))
        return outcome

    # admin routes (course conveniences, not MCP) ----------------------------------------------
    def _admin(self, method: str, path: str, json: Any = None, headers: dict[str, str] | None = None) -> Any:
        where = self.base_url + path
        reply = self._send(method, where, json=json, headers=headers)
        if reply.status_code == 404:
            raise StockroomConnectionError(f"{where}: this server has no admin routes (started with admin off)")
        if reply.status_code == 403 and path.startswith("/stockroom/approvals/"):
            raise ApprovalError("the server refused the answer: approving needs the approver token "
                                "(StockroomClient(url, approver_token=...)); an agent never has it")
        if reply.status_code == 409:
            refusal = self._json_of(reply, where)
            error = refusal.get("error") if isinstance(refusal, dict) else None
            raise ApprovalError(error if isinstance(error, str) else "approval refused")
        if reply.status_code != 200:
            raise StockroomConnectionError(f"{where}: HTTP {reply.status_code}")
        return self._json_of(reply, where)

    def snapshot(self) -> dict[str, Any]:
        return self._admin("GET", "/stockroom/ledger")

    def drafts(self) -> list[dict[str, Any]]:
        return self._admin("GET", "/stockroom/drafts")

    def decide_approval(self, approval_id: str, action: str, *, channel: str = "api") -> dict[str, Any]:
        """A person's answer over HTTP, authenticated with the approver token (the trace says ``http``,
        or ``panel/http`` from the circuit panel)."""
        headers = {"Authorization": f"Bearer {self._approver_token}"} if self._approver_token else {}
        body = {"action": action, **({"via": "panel"} if channel == "panel" else {})}
        return self._admin("POST", f"/stockroom/approvals/{approval_id}", json=body, headers=headers)

    def pending_approvals(self) -> list[dict[str, Any]]:
        return self._admin("GET", "/stockroom/approvals")

    def reset(self) -> dict[str, Any]:
        return self._admin("POST", "/stockroom/reset", json={})

    def audit(self) -> tuple[list[dict[str, Any]], list[str]]:
        answer = self._admin("GET", "/stockroom/trace")
        if not isinstance(answer, dict) or not isinstance(answer.get("records"), list):
            raise StockroomConnectionError(f"{self.base_url}/stockroom/trace: not a stockroom trace")
        return answer["records"], answer.get("problems", [])



def stream_health_window(url: str, count: int, *, era: str = "modern", concurrency: int = 8) -> list[dict[str, Any]]:
    """``count`` streamed ``read_stock`` calls (each with a progress token) as health samples.

    Each call is one live capture (``mcplab.live``: arrival time of every SSE event, end of
    stream); ``t`` is the call's index. A call that did not end as a 200 stream is an error
    sample. For :func:`~mcplab.release.evaluate_health` and :func:`~mcplab.plots.plot_health`.
    Up to ``concurrency`` calls are in flight at once (each stream is paced by the server, so a
    window takes about as long as one stream, not ``count`` of them); samples keep call order.
    """
    from concurrent.futures import ThreadPoolExecutor

    from ..live.capture import capture_client, send  # the live layer sits above the stockroom

    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be an integer of at least 1, got {concurrency!r}")

    def sample(i: int) -> dict[str, Any]:
        body, headers = build_request("tools/call", {"name": STREAM_TOOL, "arguments": {},
                                                     "_meta": {"progressToken": f"health-{i}"}}, era=era, id=i + 1)
        capture = send(http, url, headers, body)
        failed = capture.status != 200 or not capture.is_stream or not capture.ended
        return stream_health_sample(float(i), capture.timing(), error=failed)

    with capture_client() as http, ThreadPoolExecutor(max_workers=max(1, min(concurrency, count)),
                                                      thread_name_prefix="health-window") as pool:
        return list(pool.map(sample, range(count)))
