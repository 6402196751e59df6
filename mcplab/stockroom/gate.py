"""The approval gate's sealed state: what the approver was shown, bound so it cannot be swapped.

Design: ``requestState`` (the 2026-07-28 multi-round-trip path; 2025-11-25 approvals are answered out of band) is
``v1.<base64url JSON claims>.<base64url HMAC-SHA-256>``. The claims bind the tool, the draft,
the SHA-256 of the canonical payload, the ledger version, the ledger epoch (new at every reset),
a one-time nonce and an expiry. The client sees the claims (nothing secret is in them) but cannot
change one without the server's key. Spent nonces are remembered in the ledger.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..evidence import canonical_json

__all__ = ["APPROVAL_TTL_SECONDS", "MAX_STATE_CHARS", "GateClaims", "StateRejected", "payload_digest", "seal_claims", "open_claims", "seal_state", "open_state"]

#: How long an approval question stays answerable.
APPROVAL_TTL_SECONDS = 15 * 60
_PREFIX = "v1"
#: The longest ``requestState`` :func:`open_claims` accepts.
MAX_STATE_CHARS = 4096


class StateRejected(Exception):
    """The sealed state is unusable; ``reason`` is a stable code, ``message`` says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class GateClaims:
    tool: str
    draft_id: str
    digest: str
    ledger_version: int
    epoch: str
    nonce: str
    expires: int

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "draft_id": self.draft_id, "digest": self.digest, "ledger_version": self.ledger_version,
                "epoch": self.epoch, "nonce": self.nonce, "expires": self.expires}


def payload_digest(payload: dict[str, Any]) -> str:
    """SHA-256 hex of the canonical commit payload ``{draft_id, ledger_version, lines}``."""
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, signed: str) -> str:
    return _b64(hmac.new(secret, signed.encode("ascii"), hashlib.sha256).digest())


def seal_claims(secret: bytes, claims: dict[str, Any]) -> str:
    """``v1.<base64url canonical JSON claims>.<base64url HMAC-SHA-256>``: readable, but not changeable without ``secret``."""
    signed = f"{_PREFIX}.{_b64(canonical_json(claims))}"
    return f"{signed}.{_mac(secret, signed)}"


def open_claims(secret: bytes, state: Any) -> dict[str, Any]:
    """The claims of a state sealed with ``secret``, or :class:`StateRejected` (``forged``) for anything else."""
    if not isinstance(state, str) or not state:
        raise StateRejected("forged", "requestState must be the non-empty string the server sent")
    if len(state) > MAX_STATE_CHARS or state.count(".") != 2 or not state.isascii():
        raise StateRejected("forged", "requestState is not a state this server issued")
    prefix, body, mac = state.split(".")
    signed = f"{prefix}.{body}"
    if prefix != _PREFIX or not hmac.compare_digest(_mac(secret, signed), mac):
        raise StateRejected("forged", "requestState failed its integrity check (changed or not issued here)")
    try:
        raw = json.loads(_unb64(body))
    except (ValueError, binascii.Error):
        raise StateRejected("forged", "requestState claims are unreadable") from None
    if not isinstance(raw, dict):
        raise StateRejected("forged", "requestState claims are unreadable")
    return raw


def seal_state(secret: bytes, *, tool: str, draft_id: str, digest: str, ledger_version: int, epoch: str,
               now: Callable[[], float] = time.time, ttl: int = APPROVAL_TTL_SECONDS) -> tuple[str, GateClaims]:
    """A fresh sealed state and its claims (a new nonce every time)."""
    claims = GateClaims(tool=tool, draft_id=draft_id, digest=digest, ledger_version=ledger_version, epoch=epoch,
                        nonce=secrets.token_hex(12), expires=int(now()) + ttl)
    return seal_claims(secret, claims.to_dict()), claims


def open_state(secret: bytes, state: Any, *, now: Callable[[], float] = time.time) -> GateClaims:
    """Verify ``state`` and return its claims, or raise :class:`StateRejected` (``forged`` or ``expired``)."""
    raw = open_claims(secret, state)
    try:
        claims = GateClaims(**raw)
    except TypeError:
        raise StateRejected("forged", "requestState claims are unreadable") from None
    if claims.expires < now():
        raise StateRejected("expired", "the approval question expired; call commit_reorder again")
    return claims
