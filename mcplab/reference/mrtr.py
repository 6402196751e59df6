"""Multi-round input for the reference fixtures: one flow, two eras.

Design: a :class:`Flow` is a list of rounds, each a map ``key -> {method, params}`` of input
requests. On 2026-07-28 :class:`RoundKeeper` answers ``input_required`` rounds; a flow that
carries state seals ``{flow, round, arguments digest, answers so far, nonce, expiry}`` with the
stockroom gate's HMAC (``seal_claims``), so a changed, foreign, expired or replayed
``requestState`` is a -32602 error. Missing answers re-ask the round, unknown keys are ignored,
an answer of the wrong shape is -32602, and a round the client declared no capability for is
-32021. On 2025-11-25 the same rounds go over the session's back channel (see ``tools``).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from ..evidence import canonical_json
from ..stockroom.gate import MAX_STATE_CHARS, StateRejected, open_claims, seal_claims

__all__ = ["Round", "Flow", "InputRequired", "Completed", "RoundKeeper", "CAPABILITY_OF", "elicit", "sample", "list_roots",
           "answer_problem", "missing_capabilities", "capability_error", "plan"]

#: Which client capability each input-request method needs.
CAPABILITY_OF = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}
STATE_TTL_SECONDS = 10 * 60

Request = Mapping[str, Any]
Round = Mapping[str, Request]


def elicit(message: str, properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A form-mode ``elicitation/create`` input request."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def sample(text: str, max_tokens: int) -> dict[str, Any]:
    """A ``sampling/createMessage`` input request with one user message."""
    return {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}}


def list_roots() -> dict[str, Any]:
    """A ``roots/list`` input request."""
    return {"method": "roots/list", "params": {}}


@dataclass(frozen=True)
class Flow:
    """A fixture that needs input: ``rounds(arguments)`` asks, ``finish(arguments, answers)`` builds the result.

    ``sealed`` flows issue and require ``requestState`` (answers without it ask again); unsealed
    flows ignore a ``requestState``. ``subset`` rounds ask only what the client declared it can
    answer (at least one request).
    """

    name: str
    rounds: Callable[[Mapping[str, Any]], Sequence[Round]]
    finish: Callable[[Mapping[str, Any], Mapping[str, Any]], Any]
    sealed: bool = False
    subset: bool = False


@dataclass(frozen=True)
class InputRequired:
    """Ask the client: the wire's ``{resultType: input_required, inputRequests, requestState?}``."""

    input_requests: dict[str, dict[str, Any]]
    request_state: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"resultType": "input_required", "inputRequests": self.input_requests}
        if self.request_state is not None:
            wire["requestState"] = self.request_state
        return wire


@dataclass(frozen=True)
class Completed:
    """Every round answered: the flow's result."""

    result: Any


def answer_problem(method: str, answer: Any) -> str | None:
    """Why ``answer`` is not a usable result for an input request of ``method`` (``None`` when it is)."""
    if not isinstance(answer, Mapping):
        return f"expected a result object for {method}, got {type(answer).__name__}"
    if method == "elicitation/create":
        if answer.get("action") not in ("accept", "decline", "cancel"):
            return "an elicitation result needs action accept, decline or cancel"
        if answer.get("action") == "accept" and not isinstance(answer.get("content", {}), Mapping):
            return "an accepted elicitation result needs a content object"
    elif method == "sampling/createMessage":
        if not isinstance(answer.get("content"), Mapping | list) or not isinstance(answer.get("role"), str):
            return "a sampling result needs role and content"
    elif method == "roots/list" and not isinstance(answer.get("roots"), list):
        return "a roots/list result needs a roots array"
    return None


def missing_capabilities(requests: Mapping[str, Request], capabilities: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The client capabilities ``requests`` need but the client did not declare (``{name: {}}``)."""
    return {CAPABILITY_OF[r["method"]]: {} for r in requests.values()
            if CAPABILITY_OF.get(r["method"]) and capabilities.get(CAPABILITY_OF[r["method"]]) is None}


def plan(flow: Flow, arguments: Mapping[str, Any], capabilities: Mapping[str, Any]) -> list[dict[str, dict[str, Any]]]:
    """Every round's requests this client can answer, checked before anything is asked.

    A flow needing a capability the client did not declare is -32021 (``requiredCapabilities``);
    a ``subset`` flow drops undeclared requests and fails only when a round would be empty.
    """
    rounds = list(flow.rounds(arguments))
    needed: dict[str, dict[str, Any]] = {}
    usable_rounds = []
    for round_ in rounds:
        missing = missing_capabilities(round_, capabilities)
        usable = {key: dict(request) for key, request in round_.items() if CAPABILITY_OF.get(request["method"]) not in missing}
        if missing and (not flow.subset or not usable):
            needed.update(missing)
        usable_rounds.append(usable)
    if needed:
        raise capability_error(flow.name, needed)
    return usable_rounds


def capability_error(what: str, needed: Mapping[str, Any]) -> MCPError:
    """-32021 naming the client capabilities ``what`` needs (``requiredCapabilities``)."""
    return MCPError(code=MISSING_REQUIRED_CLIENT_CAPABILITY,
                    message=f"{what} needs client capabilities the request did not declare: {', '.join(sorted(needed))}",
                    data={"requiredCapabilities": dict(needed)})


def _digest(arguments: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(dict(arguments))).hexdigest()


@dataclass
class RoundKeeper:
    """Runs flows on the 2026-07-28 wire; holds the HMAC key and the spent nonces (in memory)."""

    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)  # never in a log or traceback
    ttl: int = STATE_TTL_SECONDS
    now: Callable[[], float] = time.time
    _spent: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)  # nonce -> forget-after, oldest first
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def advance(self, flow: Flow, arguments: Mapping[str, Any] | None, *, input_responses: Mapping[str, Any] | None,
                request_state: str | None, capabilities: Mapping[str, Any]) -> InputRequired | Completed:
        """The next step of ``flow`` for this (re)try; raises ``MCPError`` -32602 / -32021."""
        arguments = dict(arguments or {})
        rounds = plan(flow, arguments, capabilities)
        index, answers, nonce = 0, {}, None
        if flow.sealed and request_state is None:
            input_responses = None  # answers to a question this server cannot show it asked: ask it
        elif flow.sealed:
            index, answers, nonce = self._open(flow, arguments, request_state)
        asked = rounds[index]
        got = {key: (input_responses or {}).get(key) for key in asked if key in (input_responses or {})}
        for key, answer in got.items():
            problem = answer_problem(asked[key]["method"], answer)
            if problem is not None:
                raise MCPError(code=INVALID_PARAMS, message=f"inputResponses.{key}: {problem}", data={"key": key})
        if len(got) < len(asked):  # nothing or part answered: ask this round again
            return self._ask(flow, arguments, index, answers, asked)
        if nonce is not None:
            self._spend(nonce)
        answers = {**answers, **got}
        if index + 1 == len(rounds):
            return Completed(flow.finish(arguments, answers))
        return self._ask(flow, arguments, index + 1, answers, rounds[index + 1])

    def _ask(self, flow: Flow, arguments: Mapping[str, Any], index: int, answers: Mapping[str, Any],
             asked: dict[str, dict[str, Any]]) -> InputRequired:
        if not flow.sealed:
            return InputRequired(asked)
        claims = {"flow": flow.name, "round": index, "arguments": _digest(arguments), "answers": dict(answers),
                  "nonce": secrets.token_hex(12), "expires": int(self.now()) + self.ttl}
        state = seal_claims(self.secret, claims)
        if len(state) > MAX_STATE_CHARS:  # it could not come back: say so now, not as a "forged" state later
            raise MCPError(code=INVALID_PARAMS, message="inputResponses are too large to carry to the next round",
                           data={"limit": MAX_STATE_CHARS})
        return InputRequired(asked, state)

    def _open(self, flow: Flow, arguments: Mapping[str, Any], state: str) -> tuple[int, dict[str, Any], str]:
        try:
            claims = open_claims(self.secret, state)
        except StateRejected as exc:
            raise MCPError(code=INVALID_PARAMS, message=f"requestState rejected: {exc}", data={"reason": exc.reason}) from None
        problem = None
        if claims.get("flow") != flow.name or claims.get("arguments") != _digest(arguments):
            problem = "requestState was issued for another call (tool or arguments differ)"
        elif not isinstance(claims.get("expires"), int) or claims["expires"] < self.now():
            problem = "requestState expired; call again without it"
        elif not isinstance(claims.get("round"), int) or not 0 <= claims["round"] < len(flow.rounds(arguments)):
            problem = "requestState names no round of this flow"
        with self._lock:
            if problem is None and claims.get("nonce") in self._spent:
                problem = "requestState was already used (replay)"
        if problem is not None:
            raise MCPError(code=INVALID_PARAMS, message=problem, data={"reason": "rejected"})
        return claims["round"], dict(claims.get("answers") or {}), str(claims["nonce"])

    def _spend(self, nonce: str) -> None:
        """Check-and-mark in one step, so two concurrent retries with one state cannot both pass.

        Spent nonces are kept until their state would have expired anyway, in spending order, so
        forgetting them pops from the front (amortised O(1)) instead of scanning every nonce.
        """
        with self._lock:
            now = self.now()
            while self._spent and next(iter(self._spent.values())) < now:
                self._spent.popitem(last=False)
            if nonce in self._spent:
                raise MCPError(code=INVALID_PARAMS, message="requestState was already used (replay)", data={"reason": "rejected"})
            self._spent[nonce] = now + self.ttl
