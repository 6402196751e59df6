"""Pins of the approval gate's sealed state: the MAC covers prefix and claims, every rejection is ``forged`` or ``expired``.

Regression (issue 20): a MAC computed over nothing passed every test, and then a forged claims body
carrying a genuine MAC was accepted. These tests build states by hand with an independent HMAC.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from mcplab.evidence import canonical_json
from mcplab.stockroom.gate import (
    APPROVAL_TTL_SECONDS,
    MAX_STATE_CHARS,
    GateClaims,
    StateRejected,
    open_claims,
    open_state,
    payload_digest,
    seal_claims,
    seal_state,
)

SECRET = b"k" * 32
CLAIMS = {"tool": "commit_reorder", "draft_id": "d-1", "digest": "ab" * 32, "ledger_version": 3,
          "epoch": "e1", "nonce": "n" * 24, "expires": 2_000_000_000}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def mac(secret: bytes, signed: str) -> str:
    return b64(hmac.new(secret, signed.encode("ascii"), hashlib.sha256).digest())


def hand_sealed(claims: object, secret: bytes = SECRET, prefix: str = "v1") -> str:
    signed = f"{prefix}.{b64(json.dumps(claims).encode())}"
    return f"{signed}.{mac(secret, signed)}"


def rejected(state: object, secret: bytes = SECRET) -> StateRejected:
    with pytest.raises(StateRejected) as caught:
        open_claims(secret, state)
    return caught.value


def test_seal_claims_is_v1_canonical_body_and_hmac_sha256_of_prefix_and_body():
    state = seal_claims(SECRET, CLAIMS)
    prefix, body, tag = state.split(".")
    assert prefix == "v1"
    assert body == b64(canonical_json(CLAIMS))
    assert tag == mac(SECRET, f"v1.{body}")
    assert "=" not in state


def test_the_mac_depends_on_the_secret_and_the_claims():
    assert seal_claims(SECRET, CLAIMS) != seal_claims(b"other" * 8, CLAIMS)
    assert seal_claims(SECRET, CLAIMS).split(".")[2] != seal_claims(SECRET, {**CLAIMS, "ledger_version": 4}).split(".")[2]


def test_a_forged_claims_body_with_a_genuine_mac_is_forged():
    genuine = seal_claims(SECRET, CLAIMS)
    prefix, _, tag = genuine.split(".")
    forged_body = b64(canonical_json({**CLAIMS, "ledger_version": 99}))
    error = rejected(f"{prefix}.{forged_body}.{tag}")
    assert error.reason == "forged"
    assert str(error) == "requestState failed its integrity check (changed or not issued here)"


def test_claims_sealed_by_hand_with_the_key_open_and_with_another_key_do_not():
    assert open_claims(SECRET, hand_sealed(CLAIMS)) == CLAIMS
    assert rejected(hand_sealed(CLAIMS, secret=b"x" * 32)).reason == "forged"


def test_round_trip_returns_the_claims():
    assert open_claims(SECRET, seal_claims(SECRET, CLAIMS)) == CLAIMS


@pytest.mark.parametrize("pad", range(4))
def test_every_base64_padding_length_round_trips(pad):
    claims = {**CLAIMS, "draft_id": "d" * pad}
    assert open_claims(SECRET, seal_claims(SECRET, claims)) == claims


def test_a_tag_with_base64_padding_is_not_the_tag():
    state = seal_claims(SECRET, CLAIMS)
    assert rejected(state + "=").reason == "forged"


@pytest.mark.parametrize("state", [None, 7, b"v1.a.b", ["v1", "a", "b"], ""])
def test_a_state_that_is_not_a_non_empty_string_is_forged(state):
    error = rejected(state)
    assert error.reason == "forged"
    assert str(error) == "requestState must be the non-empty string the server sent"


def sealed_of_length(length: int) -> str:
    for extra in range(length):
        state = seal_claims(SECRET, {**CLAIMS, "pad": "p" * extra})
        if len(state) >= length:
            return state
    raise AssertionError(length)


def test_max_state_chars_is_inclusive():
    assert MAX_STATE_CHARS == 4096
    near = sealed_of_length(MAX_STATE_CHARS - 2)
    assert len(near) <= MAX_STATE_CHARS and open_claims(SECRET, near)["pad"]
    # 4096 characters of the right shape reach the MAC check; 4097 are refused before it
    at_limit = "v1." + "a" * (MAX_STATE_CHARS - 5) + ".b"
    assert str(rejected(at_limit)) == "requestState failed its integrity check (changed or not issued here)"
    error = rejected(at_limit + "b")
    assert (error.reason, str(error)) == ("forged", "requestState is not a state this server issued")


@pytest.mark.parametrize("mangle", [
    lambda s: s + ".x",                       # four parts
    lambda s: s.replace(".", "", 1),          # two parts
    lambda s: s[:-1] + "é",                   # not ASCII
])
def test_a_state_of_the_wrong_shape_is_not_issued_here(mangle):
    error = rejected(mangle(seal_claims(SECRET, CLAIMS)))
    assert (error.reason, str(error)) == ("forged", "requestState is not a state this server issued")


def test_another_prefix_is_forged_even_with_a_matching_mac():
    error = rejected(hand_sealed(CLAIMS, prefix="v2"))
    assert (error.reason, str(error)) == ("forged", "requestState failed its integrity check (changed or not issued here)")


def test_genuinely_sealed_claims_that_are_not_json_are_unreadable():
    signed = f"v1.{b64(b'not json {')}"
    error = rejected(f"{signed}.{mac(SECRET, signed)}")
    assert (error.reason, str(error)) == ("forged", "requestState claims are unreadable")


def test_genuinely_sealed_claims_that_are_not_base64_are_unreadable():
    signed = "v1.a"  # one base64 character cannot decode
    error = rejected(f"{signed}.{mac(SECRET, signed)}")
    assert (error.reason, str(error)) == ("forged", "requestState claims are unreadable")


@pytest.mark.parametrize("claims", [[1, 2], "text", 5, None])
def test_genuinely_sealed_claims_that_are_not_an_object_are_unreadable(claims):
    error = rejected(hand_sealed(claims))
    assert (error.reason, str(error)) == ("forged", "requestState claims are unreadable")


def test_open_state_returns_the_claims_as_gate_claims():
    claims = open_state(SECRET, hand_sealed(CLAIMS), now=lambda: 1_000.0)
    assert claims == GateClaims(**CLAIMS)
    assert claims.to_dict() == CLAIMS


@pytest.mark.parametrize("claims", [{**CLAIMS, "extra": 1}, {k: v for k, v in CLAIMS.items() if k != "nonce"}])
def test_open_state_rejects_claims_of_another_shape_as_forged(claims):
    with pytest.raises(StateRejected) as caught:
        open_state(SECRET, hand_sealed(claims), now=lambda: 1_000.0)
    assert (caught.value.reason, str(caught.value)) == ("forged", "requestState claims are unreadable")


def test_open_state_expiry_boundary():
    state = hand_sealed(CLAIMS)
    assert open_state(SECRET, state, now=lambda: CLAIMS["expires"]).expires == CLAIMS["expires"]
    with pytest.raises(StateRejected) as caught:
        open_state(SECRET, state, now=lambda: CLAIMS["expires"] + 0.5)
    assert caught.value.reason == "expired"
    assert str(caught.value) == "the approval question expired; call commit_reorder again"


def test_open_state_passes_forgery_through():
    with pytest.raises(StateRejected) as caught:
        open_state(SECRET, "v1.x.y", now=lambda: 0)
    assert caught.value.reason == "forged"


def test_seal_state_binds_the_fields_and_expires_after_the_ttl():
    state, claims = seal_state(SECRET, tool="commit_reorder", draft_id="d-9", digest="f" * 64, ledger_version=7,
                               epoch="ep", now=lambda: 1_000.9)
    assert APPROVAL_TTL_SECONDS == 900
    assert claims.expires == 1_000 + APPROVAL_TTL_SECONDS
    assert (claims.tool, claims.draft_id, claims.digest, claims.ledger_version, claims.epoch) == ("commit_reorder", "d-9", "f" * 64, 7, "ep")
    assert len(claims.nonce) == 24 and int(claims.nonce, 16) >= 0
    assert open_claims(SECRET, state) == claims.to_dict()
    _, other = seal_state(SECRET, tool="commit_reorder", draft_id="d-9", digest="f" * 64, ledger_version=7,
                          epoch="ep", now=lambda: 1_000.9, ttl=5)
    assert other.expires == 1_005
    assert other.nonce != claims.nonce


def test_payload_digest_is_sha256_of_the_canonical_payload():
    payload = {"lines": [{"sku": "A", "qty": 1}], "draft_id": "d", "ledger_version": 2}
    assert payload_digest(payload) == hashlib.sha256(canonical_json(payload)).hexdigest()
    assert payload_digest(dict(reversed(payload.items()))) == payload_digest(payload)


def test_state_rejected_carries_reason_and_message():
    error = StateRejected("expired", "why")
    assert (error.reason, str(error), error.args) == ("expired", "why", ("why",))


def test_many_states_match_an_independent_seal():
    # bodies of every length modulo 3 ("tool" is the last key of the canonical body)
    for i in range(150):
        claims = {**CLAIMS, "tool": f"tool-{i}" + "~" * (i % 3)}
        state = seal_claims(SECRET, claims)
        body = b64(canonical_json(claims))
        assert state == f"v1.{body}.{mac(SECRET, f'v1.{body}')}"
        assert open_claims(SECRET, state) == claims
