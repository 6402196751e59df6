"""The stockroom's rules in one place: policy, argument checks, drafts, the approval gate, the ledger.

Design: :class:`Stockroom` is the whole behaviour without HTTP. Each :meth:`Stockroom.call_tool`
runs in one ledger transaction: decide, change the ledger if approved, append exactly one trace
record. The MCP server is a thin adapter that passes the era, the client's capabilities and the
MRTR fields through and turns the :class:`ToolOutcome` into a wire result or JSON-RPC error.
Refusals are JSON-RPC -32602 with ``data = {error: <stable code>, tool, ...}``; a declined
approval is a normal result ``{ok: false, error: "mutation_blocked", ledger_version}``.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from typing import Any

from ..errors import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, MCPLabError
from ..evidence import canonical_json
from ..jsonvalue import without_lone_surrogates
from .approver import APPROVAL_CHANNELS, load_approver_token, new_approver_token, same_token
from .catalog import MAX_ADD_ON_ORDER, TOOLS, WRITE_TOOL, policy_for, restock_lines, tool_descriptor
from .gate import APPROVAL_TTL_SECONDS, StateRejected, open_state, payload_digest, seal_state
from .ledger import MEMORY, Announcement, Ledger
from .outcome import APPROVAL_KEY, LEGACY_APPROVAL_ERROR, StockroomAPI, ToolOutcome

__all__ = ["Stockroom", "ApprovalError", "REQUIRED_CAPABILITIES", "ERAS", "TRACE_MAX_DEPTH", "TRACE_MAX_BYTES", "MAX_LINES"]

#: What a 2026-07-28 client must declare to use the write tool: it has to be able to answer a form.
REQUIRED_CAPABILITIES = {"elicitation": {"form": {}}}


def _can_answer_forms(capabilities: Any) -> bool:
    """Form elicitation declared: ``elicitation: {}`` (the spec's default mode) or with a ``form`` key."""
    elicitation = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    return isinstance(elicitation, dict) and (not elicitation or isinstance(elicitation.get("form"), dict))


class ApprovalError(MCPLabError):
    """An out-of-band approval answer that cannot be taken (unknown, already answered, expired)."""
ERAS = ("modern", "legacy")
_DRAFT_ID = re.compile(r"DR-[0-9]{4,}")
_APPROVAL_ID = re.compile(r"AP-[0-9a-f]{12}")
_ACTIONS = ("accept", "decline", "cancel")
_MAX_NOTE = 200
#: At most this many commit lines (the stockroom has six SKUs; the bound keeps answers small).
MAX_LINES = 100


class _Refusal(Exception):
    """Internal: stop deciding and answer with a JSON-RPC error."""

    def __init__(self, error: str, message: str, *, code: int = INVALID_PARAMS, decision: str = "refused",
                 **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.decision = decision
        self.data = {"error": error, **extra}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _argument_problems(name: str, arguments: Any) -> list[str]:
    """Problems with ``arguments`` for the allow-listed tool ``name`` (its input schema, checked by hand)."""
    if not isinstance(arguments, dict):
        return [f"arguments must be an object, got {type(arguments).__name__}"]
    allowed = {"read_stock": set(), "draft_reorder": set(), "request_approval": {"draft_id"},
               "commit_reorder": {"draft_id", "ledger_version", "lines", "approval_id"}}[name]
    problems = [f"unexpected argument {key[:40]!r}" for key in arguments if key not in allowed]
    if name in ("request_approval", "commit_reorder"):
        draft_id = arguments.get("draft_id")
        if not isinstance(draft_id, str) or not _DRAFT_ID.fullmatch(draft_id):
            problems.append("draft_id must be a draft id string such as 'DR-0001'")
    if name == "commit_reorder":
        version = arguments.get("ledger_version")
        if not _is_int(version) or version < 1:
            problems.append("ledger_version must be an integer >= 1")
        problems.extend(_line_problems(arguments.get("lines")))
        if "approval_id" in arguments and not (isinstance(arguments["approval_id"], str)
                                               and _APPROVAL_ID.fullmatch(arguments["approval_id"])):
            problems.append("approval_id must be the id the server gave, such as 'AP-0123456789ab'")
    return problems


def _line_problems(lines: Any) -> list[str]:
    if not isinstance(lines, list) or not lines:
        return ["lines must be a non-empty array of {sku, add_on_order}"]
    if len(lines) > MAX_LINES:
        return [f"lines may hold at most {MAX_LINES} entries, got {len(lines)}"]
    problems, seen = [], set()
    for index, line in enumerate(lines):
        if not isinstance(line, dict) or set(line) != {"sku", "add_on_order"}:
            problems.append(f"lines[{index}] must be exactly {{sku, add_on_order}}")
            continue
        if not isinstance(line["sku"], str):
            problems.append(f"lines[{index}].sku must be a string")
        elif line["sku"] in seen:
            problems.append(f"lines[{index}].sku {line['sku']!r} appears twice")
        else:
            seen.add(line["sku"])
        qty = line["add_on_order"]
        if not _is_int(qty) or not 1 <= qty <= MAX_ADD_ON_ORDER:
            problems.append(f"lines[{index}].add_on_order must be an integer from 1 to {MAX_ADD_ON_ORDER}")
    return problems


def _payload(arguments: dict[str, Any]) -> dict[str, Any]:
    """The canonical commit payload: lines ordered by SKU, no approval field."""
    lines = sorted(({"sku": ln["sku"], "add_on_order": ln["add_on_order"]} for ln in arguments["lines"]),
                   key=lambda ln: ln["sku"])
    return {"draft_id": arguments["draft_id"], "ledger_version": arguments["ledger_version"], "lines": lines}


def _diff(items: list[dict[str, Any]], lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """on_order before and after, per line (lines come from a draft, so every SKU is in ``items``)."""
    by_sku = {item["sku"]: item for item in items}
    return [{"sku": ln["sku"], "name": by_sku[ln["sku"]]["name"], "on_order_before": by_sku[ln["sku"]]["on_order"],
             "on_order_after": by_sku[ln["sku"]]["on_order"] + ln["add_on_order"], "add_on_order": ln["add_on_order"]}
            for ln in lines]


def _diff_text(payload: dict[str, Any], diff: list[dict[str, Any]]) -> str:
    rows = [f"  {d['sku']} {d['name']}: on_order {d['on_order_before']} -> {d['on_order_after']} (+{d['add_on_order']})"
            for d in diff]
    return "\n".join([f"Approve commit_reorder {payload['draft_id']} at ledger v{payload['ledger_version']}?", *rows,
                      "Payload: " + canonical_json(payload).decode()])


#: Limits on what one trace record stores of a caller's arguments: hostile input must not make the
#: trace unreadable (deep nesting breaks JSON decoders) or unbounded (megabytes per record).
TRACE_MAX_DEPTH = 32
TRACE_MAX_BYTES = 64 * 1024
_MAX_PROBLEMS = 20


def _depth_exceeds(value: Any, limit: int) -> bool:
    """True when ``value`` nests containers deeper than ``limit`` (iterative: no recursion on hostile input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _trace_safe(value: Any) -> Any:
    """``value`` as the trace stores it: itself when small, plain JSON and shallow; else a bounded summary.

    Lone surrogates in strings become U+FFFD (they cannot be UTF-8), so a note or a key a client
    sent never turns a record, or an applied commit's lines, into ``omitted``. The summary keeps the
    size and SHA-256 of the canonical form, so the record still identifies exactly what was sent
    without storing it.
    """
    if _depth_exceeds(value, TRACE_MAX_DEPTH):
        return {"omitted": f"nested deeper than {TRACE_MAX_DEPTH} levels"}
    value = without_lone_surrogates(value)  # client text must never cost a record its facts (issue 15)
    try:
        text = canonical_json(value)
    except (ValueError, TypeError, RecursionError):
        return {"omitted": f"not JSON ({type(value).__name__})"}
    if len(text) > TRACE_MAX_BYTES:
        return {"omitted": f"{len(text)} bytes, over the {TRACE_MAX_BYTES}-byte trace limit",
                "sha256": hashlib.sha256(text).hexdigest()}
    return value


class Stockroom(StockroomAPI):
    """The stockroom without HTTP: ``Stockroom()`` is in memory; ``Stockroom("stock.sqlite3")`` is durable.

    ``era`` (``"modern"`` for 2026-07-28, ``"legacy"`` for 2025-11-25) and ``client_capabilities``
    describe the in-process caller; by default a modern client that can answer elicitation forms.
    """

    def __init__(self, db: str | os.PathLike[str] | Ledger = MEMORY, *, era: str = "modern",
                 client_capabilities: dict[str, Any] | None = None, now: Callable[[], float] = time.time) -> None:
        if era not in ERAS:
            raise ValueError(f"era must be one of {ERAS}, got {era!r}")
        self.ledger = db if isinstance(db, Ledger) else Ledger(db)
        self.era = era
        self.client_capabilities = {"elicitation": {"form": {}}} if client_capabilities is None else client_capabilities
        self._now = now
        self._token: str | None = None

    # admin ------------------------------------------------------------------------------
    def close(self) -> None:
        self.ledger.close()

    def reset(self) -> dict[str, Any]:
        with self.ledger.transaction() as tx:
            tx.reset()
            tx.append(era="local", tool="reset", decision="reset", arguments={},
                      detail={"ledger_version": tx.ledger_version()})
        return self.ledger.snapshot()

    def snapshot(self) -> dict[str, Any]:
        return self.ledger.snapshot()

    def drafts(self) -> list[dict[str, Any]]:
        return self.ledger.drafts()

    def trace(self) -> list[dict[str, Any]]:
        return [record.to_dict() for record in self.ledger.trace()]

    def verify(self, head: tuple[int, str] | None = None) -> list[str]:
        return self.ledger.verify(head)

    def audit(self) -> tuple[list[dict[str, Any]], list[str]]:
        """The trace and its verification from one consistent read."""
        return self.ledger.audit()

    @staticmethod
    def tools() -> list[dict[str, Any]]:
        """The catalog as wire descriptors."""
        return [tool_descriptor(spec) for spec in TOOLS]

    # the one entry point ---------------------------------------------------------------------
    def call_tool(self, name: str, arguments: Any = None, *, input_responses: dict[str, Any] | None = None,
                  request_state: str | None = None, era: str | None = None,
                  client_capabilities: dict[str, Any] | None = None) -> ToolOutcome:
        """Decide one call and record it. ``era``/``client_capabilities`` override the instance's (the server's use)."""
        work = self._call(name, arguments, input_responses, request_state, era, client_capabilities)
        with self.ledger.transaction() as tx:
            return work(tx)

    async def call_tool_async(self, name: str, arguments: Any = None, *, input_responses: dict[str, Any] | None = None,
                              request_state: str | None = None, era: str | None = None,
                              client_capabilities: dict[str, Any] | None = None,
                              announced: Announcement | None = None) -> ToolOutcome:
        """:meth:`call_tool` from an asyncio event loop (the server's path): returns once its record is durable.

        ``announced`` is the call's :meth:`Ledger.announce` handle, if the server announced it.
        """
        work = self._call(name, arguments, input_responses, request_state, era, client_capabilities)
        return await self.ledger.run(work, announced=announced)

    def _call(self, name: Any, arguments: Any, input_responses: Any, request_state: Any, era: str | None,
              client_capabilities: dict[str, Any] | None) -> Callable[[Any], ToolOutcome]:
        """The unit of work of one call: given a transaction, decide, record, and return the outcome."""
        era = era or self.era
        if era not in ERAS:
            raise ValueError(f"era must be one of {ERAS}, got {era!r}")
        capabilities = self.client_capabilities if client_capabilities is None else client_capabilities
        arguments = {} if arguments is None else arguments

        def work(tx: Any) -> ToolOutcome:
            outcome = ToolOutcome(tool=name, arguments=arguments, kind="complete", era=era)
            try:
                decision, detail = self._decide(tx, outcome, era, capabilities, input_responses, request_state)
            except _Refusal as refusal:
                outcome.kind = "error"
                outcome.error = {"code": refusal.code, "message": str(refusal), "data": {**refusal.data, "tool": name}}
                decision, detail = refusal.decision, outcome.error["data"]
            nonce = detail.pop("_nonce", None) if isinstance(detail, dict) else None
            record = tx.append(era=era, tool=without_lone_surrogates(str(name)[:200]), decision=decision,
                               arguments=_trace_safe(arguments), detail=_trace_safe(detail))
            if nonce:
                tx.use_approval(nonce, record.seq)
            outcome.trace_seq = record.seq
            return outcome
        return work

    def _decide(self, tx: Any, outcome: ToolOutcome, era: str, capabilities: Any,
                input_responses: Any, request_state: Any) -> tuple[str, dict[str, Any]]:
        name, arguments = outcome.tool, outcome.arguments
        policy, spec = policy_for(name) if isinstance(name, str) else ("deny", None)
        if spec is None:
            raise _Refusal("tool_not_allowed", f"tool {str(name)[:80]!r} is not on the allow-list", decision="denied",
                           policy=policy)
        problems = _argument_problems(name, arguments)
        if problems:
            raise _Refusal("invalid_arguments", f"{name}: {problems[0]}", problems=problems[:_MAX_PROBLEMS])
        if spec.name != WRITE_TOOL:
            if input_responses is not None or request_state is not None:
                raise _Refusal("unexpected_input_responses", f"{name} never asks for input; send no inputResponses or requestState")
            result = {"read_stock": self._read_stock, "draft_reorder": self._draft_reorder,
                      "request_approval": self._request_approval}[name](tx, arguments)
            outcome.structured = result
            return "allowed", {"effect": spec.effect}
        return self._commit(tx, outcome, era, capabilities, input_responses, request_state)

    # read and draft ---------------------------------------------------------------------------
    def _read_stock(self, tx: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"ledger_version": tx.ledger_version(), "items": tx.items()}

    def _draft_reorder(self, tx: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        version, lines = tx.ledger_version(), restock_lines(tx.items())
        if not lines:
            return {"draft_id": None, "ledger_version": version, "lines": [],
                    "message": "nothing is at or below its reorder point"}
        draft = tx.open_draft_like(version, lines) or tx.create_draft(version, lines)
        return {"draft_id": draft["draft_id"], "ledger_version": version, "lines": lines}

    def _request_approval(self, tx: Any, arguments: dict[str, Any]) -> dict[str, Any]:
        draft = self._draft(tx, arguments["draft_id"])
        payload = {"draft_id": draft["draft_id"], "ledger_version": draft["ledger_version"], "lines": draft["lines"]}
        answer = {"draft_id": draft["draft_id"], "status": draft["status"], "ledger_version": draft["ledger_version"],
                  "current_ledger_version": tx.ledger_version(), "payload": payload}
        if draft["status"] != "open":  # a diff against today's ledger would show the change twice
            return {**answer, "diff": [], "message": f"{draft['draft_id']} is already committed; nothing is pending"}
        return {**answer, "diff": _diff(tx.items(), draft["lines"])}

    @staticmethod
    def _draft(tx: Any, draft_id: str) -> dict[str, Any]:
        draft = tx.find_draft(draft_id)
        if draft is None:
            raise _Refusal("unknown_draft", f"no draft {draft_id} (drafts are cleared by a reset)", draft_id=draft_id)
        return draft

    # the gate ----------------------------------------------------------------------------------
    def _check_payload(self, tx: Any, payload: dict[str, Any]) -> dict[str, Any]:
        """The draft behind ``payload`` if the payload is exactly that draft at the current version."""
        draft = self._draft(tx, payload["draft_id"])
        current = tx.ledger_version()
        if payload["ledger_version"] != current:
            raise _Refusal("stale_ledger_version",
                           f"ledger_version {payload['ledger_version']} is stale: the ledger is at v{current}; "
                           "read_stock and draft again", ledger_version=current, requested=payload["ledger_version"])
        if draft["status"] != "open":
            raise _Refusal("draft_closed", f"draft {draft['draft_id']} was already committed", draft_id=draft["draft_id"])
        drafted = sorted(draft["lines"], key=lambda ln: ln["sku"])
        if payload["lines"] != drafted or draft["ledger_version"] != payload["ledger_version"]:
            raise _Refusal("payload_drift", f"the lines differ from draft {draft['draft_id']}; commit exactly the draft",
                           draft_id=draft["draft_id"], expected=drafted, got=payload["lines"])
        return draft

    def _commit(self, tx: Any, outcome: ToolOutcome, era: str, capabilities: Any,
                input_responses: Any, request_state: Any) -> tuple[str, dict[str, Any]]:
        arguments = outcome.arguments
        payload = _payload(arguments)
        if era == "modern":
            if not _can_answer_forms(capabilities):
                raise _Refusal("missing_capability", "commit_reorder asks the user for approval in an elicitation form: "
                               "declare the elicitation capability (form mode)", code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                               requiredCapabilities=REQUIRED_CAPABILITIES)
            if "approval_id" in arguments:
                raise _Refusal("approval_argument_not_allowed", "approval_id is for 2025-11-25 clients; "
                               "answer the elicitation with inputResponses")
            if input_responses is None and request_state is None:
                return self._ask(tx, outcome, payload)
            if not isinstance(request_state, str) or not request_state:
                raise _Refusal("invalid_request_state", "a retry needs the requestState the server sent", reason="missing")
            response = input_responses.get(APPROVAL_KEY) if isinstance(input_responses, dict) else None
            if not isinstance(response, dict) or response.get("action") not in _ACTIONS:
                raise _Refusal("missing_input_response",
                               f"inputResponses.{APPROVAL_KEY} must be an elicitation result with action accept|decline|cancel")
            return self._decide_approval(tx, outcome, payload, request_state, response["action"], response.get("content"))
        if input_responses is not None or request_state is not None:
            raise _Refusal("unexpected_input_responses", "2025-11-25 has no multi-round-trip requests")
        if "approval_id" not in arguments:
            return self._ask_out_of_band(tx, outcome, payload)
        return self._settle_out_of_band(tx, outcome, payload, arguments["approval_id"])

    def _question(self, tx: Any, payload: dict[str, Any]) -> tuple[str, list[dict[str, Any]], str]:
        """What the approver is asked, either era: the payload's digest, its diff and the message."""
        self._check_payload(tx, payload)
        diff = _diff(tx.items(), payload["lines"])
        return payload_digest(payload), diff, _diff_text(payload, diff)

    def _ask(self, tx: Any, outcome: ToolOutcome, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        digest, diff, message = self._question(tx, payload)
        state, _claims = seal_state(tx.secret(), tool=WRITE_TOOL, draft_id=payload["draft_id"], digest=digest,
                                    ledger_version=payload["ledger_version"], epoch=tx.epoch(), now=self._now)
        outcome.kind = "input_required"
        outcome.input_requests = {APPROVAL_KEY: {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {
                "note": {"type": "string", "title": "Note for the trace", "maxLength": _MAX_NOTE}}},
        }}}
        outcome.request_state = state
        return "asked", {"draft_id": payload["draft_id"], "digest": digest, "diff": diff}

    # the 2025-11-25 path: a person answers out of band, the agent's retry applies ------------------
    def _ask_out_of_band(self, tx: Any, outcome: ToolOutcome, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        digest, diff, message = self._question(tx, payload)
        approval_id = tx.pending_approval_for(digest, self._now()) or tx.create_approval(
            draft_id=payload["draft_id"], digest=digest, ledger_version=payload["ledger_version"], payload=payload,
            expires=int(self._now()) + APPROVAL_TTL_SECONDS)
        outcome.is_error = True
        outcome.structured = {
            "ok": False, "error": LEGACY_APPROVAL_ERROR, "approval_id": approval_id,
            "message": message + f"\nA person approves or rejects {approval_id} out of band "
                       f"({self._approver_hint(approval_id)}); then call commit_reorder again with the same arguments "
                       f"and approval_id.",
            "payload": payload, "diff": diff,
        }
        return "asked", {"draft_id": payload["draft_id"], "digest": digest, "approval_id": approval_id, "diff": diff}

    def _approver_hint(self, approval_id: str) -> str:
        """Where a person answers; never a route the agent could call (issue 15: self-approval)."""
        self.approver_token  # noqa: B018 - make sure the person's credential exists before anyone is asked
        if self.ledger.path == MEMORY:
            return "in the stockroom's circuit panel"
        return f"the circuit panel, or 'mcplab stockroom approve {approval_id} --db {self.ledger.path}'"

    @property
    def approver_token(self) -> str:
        """The person's credential for out-of-band answers over HTTP (see :mod:`mcplab.stockroom.approver`).

        Beside a database file (``<db>.approver-token``, mode 0600, created on first use); in this
        process only for an in-memory stockroom. Never part of anything the agent is sent.
        """
        if self._token is None:
            self._token = new_approver_token() if self.ledger.path == MEMORY else load_approver_token(
                self.ledger.path, create=not self.ledger.readonly)
        return self._token

    def is_approver_token(self, presented: object) -> bool:
        """True when ``presented`` is this stockroom's approver token (constant-time)."""
        return same_token(presented, self.approver_token)

    def _settle_out_of_band(self, tx: Any, outcome: ToolOutcome, payload: dict[str, Any],
                            approval_id: str) -> tuple[str, dict[str, Any]]:
        approval = tx.find_approval(approval_id)
        if approval is None:
            raise _Refusal("unknown_approval", f"no approval {approval_id} was asked here", approval_id=approval_id)
        if approval["epoch"] != tx.epoch():
            raise _Refusal("approval_expired", "the stockroom was reset after this approval was asked", reason="reset")
        if approval["digest"] != payload_digest(payload):
            raise _Refusal("invalid_request_state", f"{approval_id} approves a different payload; repeat the original "
                           "arguments exactly", reason="mismatch")
        status = approval["status"]
        if status == "closed":
            raise _Refusal("approval_already_used", "this approval was already used; it applies at most once",
                           draft_id=payload["draft_id"])
        if approval["expires"] < self._now():  # asked, answered or not, 15 minutes ago: ask again
            raise _Refusal("approval_expired", "the approval expired; call commit_reorder again", reason="expired")
        if status == "pending":
            outcome.is_error = True
            outcome.structured = {"ok": False, "error": "approval_pending", "approval_id": approval_id,
                                  "message": f"{approval_id} is still waiting for a person to approve or reject it"}
            return "asked", {"draft_id": payload["draft_id"], "approval_id": approval_id, "waiting": True}
        tx.set_approval_status(approval_id, "closed")
        action = "accept" if status == "accepted" else "decline"
        return self._conclude(tx, outcome, payload, action,
                              {"draft_id": payload["draft_id"], "approval_id": approval_id, "action": action})

    def decide_approval(self, approval_id: str, action: str, *, channel: str = "api") -> dict[str, Any]:
        """A person's answer to a pending 2025-11-25 approval (``accept``/``decline``), given out of band.

        Recorded in the trace (``accepted``/``declined``) with the ``channel`` it came through (one of
        :data:`~mcplab.stockroom.approver.APPROVAL_CHANNELS`); the ledger changes only when the agent
        retries ``commit_reorder`` with the ``approval_id``. Raises :class:`ApprovalError`.
        """
        if action not in ("accept", "decline"):
            raise ApprovalError(f"action must be 'accept' or 'decline', got {str(action)[:40]!r}")
        if channel not in APPROVAL_CHANNELS:
            raise ApprovalError(f"channel must be one of {APPROVAL_CHANNELS}, got {str(channel)[:40]!r}")
        with self.ledger.transaction() as tx:
            approval = tx.find_approval(approval_id) if isinstance(approval_id, str) else None
            if approval is None or approval["epoch"] != tx.epoch():
                raise ApprovalError(f"no pending approval {without_lone_surrogates(str(approval_id)[:40])!r} "
                                    "(see 'mcplab stockroom approvals')")
            if approval["status"] != "pending":
                raise ApprovalError(f"{approval_id} was already answered ({approval['status']})")
            if approval["expires"] < self._now():
                raise ApprovalError(f"{approval_id} expired; the agent has to ask again")
            status = "accepted" if action == "accept" else "declined"
            tx.set_approval_status(approval_id, status)
            tx.append(era="local", tool="approval", decision=status, arguments={"approval_id": approval_id, "action": action, "channel": channel},
                      detail={"draft_id": approval["draft_id"], "digest": approval["digest"]})
        return {"approval_id": approval_id, "status": status, "payload": approval["payload"]}

    def pending_approvals(self) -> list[dict[str, Any]]:
        """Approvals waiting for a person (2025-11-25 path), oldest first."""
        with self.ledger.transaction() as tx:
            return [{k: a[k] for k in ("approval_id", "draft_id", "ledger_version", "payload", "expires")}
                    for a in tx.pending_approvals(self._now())]

    def _decide_approval(self, tx: Any, outcome: ToolOutcome, payload: dict[str, Any], state: str, action: str,
                         content: Any) -> tuple[str, dict[str, Any]]:
        try:
            claims = open_state(tx.secret(), state, now=self._now)
        except StateRejected as rejected:
            error = "approval_expired" if rejected.reason == "expired" else "invalid_request_state"
            raise _Refusal(error, str(rejected), reason=rejected.reason) from None
        if claims.tool != WRITE_TOOL or claims.draft_id != payload["draft_id"] or claims.digest != payload_digest(payload):
            raise _Refusal("invalid_request_state", "requestState was issued for a different payload; "
                           "a retry must repeat the original arguments exactly", reason="mismatch")
        if claims.epoch != tx.epoch():
            raise _Refusal("approval_expired", "the stockroom was reset after this approval was asked", reason="reset")
        if tx.approval_used(claims.nonce):
            raise _Refusal("approval_already_used", "this approval was already answered; it applies at most once",
                           draft_id=payload["draft_id"])
        note = content.get("note") if isinstance(content, dict) and isinstance(content.get("note"), str) else None
        detail: dict[str, Any] = {"draft_id": payload["draft_id"], "action": action, "_nonce": claims.nonce}
        if note:
            detail["note"] = note[:_MAX_NOTE]
        return self._conclude(tx, outcome, payload, action, detail)

    def _conclude(self, tx: Any, outcome: ToolOutcome, payload: dict[str, Any], action: str,
                  detail: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """An answered approval, either era: anything but accept leaves the ledger and keeps the request."""
        if action != "accept":
            outcome.structured = {"ok": False, "error": "mutation_blocked", "ledger_version": tx.ledger_version()}
            return "rejected", {**detail, "payload": payload}
        return self._apply(tx, outcome, payload, detail)

    def _apply(self, tx: Any, outcome: ToolOutcome, payload: dict[str, Any],
               detail: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Re-check the payload against the ledger now, then apply it (the only ledger write there is)."""
        self._check_payload(tx, payload)
        before = {item["sku"]: item["on_order"] for item in tx.items()}
        version = tx.add_on_order(payload["lines"])
        tx.mark_draft(payload["draft_id"], "committed")
        after = {item["sku"]: item["on_order"] for item in tx.items()}
        outcome.structured = {
            "ok": True, "draft_id": payload["draft_id"], "ledger_version": version,
            "changes": [{"sku": ln["sku"], "on_order_before": before[ln["sku"]], "on_order_after": after[ln["sku"]]}
                        for ln in payload["lines"]],
        }
        return "approved", {**detail, "lines": payload["lines"], "ledger_version_before": payload["ledger_version"],
                            "ledger_version_after": version}
