"""Era selection: strict mode needs proof of modern behaviour; fallback never guesses legacy.

Silence (timeout, empty reply, closed connection, unrecognised reply) is inconclusive and
proves nothing. A recognised modern error (-32020/-32021/-32022) proves modern: never fall
back after it. Legacy is chosen only for an endpoint explicitly allowed legacy AND after a
successful ``initialize`` that negotiated a legacy version. The decision record keeps the
policy, the observations, the legacy evidence and the chosen era together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .errors import MODERN_ERROR_CODES
from .jsonvalue import is_json_integer
from .versions import LEGACY_VERSIONS, MODERN_VERSIONS

__all__ = ["select_era", "OBSERVATION_KINDS", "MODES", "INCONCLUSIVE_KINDS"]

MODES: tuple[str, ...] = ("strict", "fallback")
OBSERVATION_KINDS: tuple[str, ...] = (
    "discover_success",
    "jsonrpc_error",
    "timeout",
    "empty_response",
    "connection_closed",
    "unrecognized_response",
)
INCONCLUSIVE_KINDS: frozenset[str] = frozenset({"timeout", "empty_response", "connection_closed", "unrecognized_response"})


def _check_observation(observation: Any, index: int) -> dict[str, Any]:
    if not isinstance(observation, Mapping):
        raise ValueError(f"observation {index} must be an object with a 'kind', got {observation!r}")
    kind = observation.get("kind")
    if kind not in OBSERVATION_KINDS:
        raise ValueError(f"observation {index} has unknown kind {kind!r}: expected one of {', '.join(OBSERVATION_KINDS)}")
    if kind == "jsonrpc_error":
        code = observation.get("code")
        if not is_json_integer(code):
            raise ValueError(f"observation {index} (jsonrpc_error) needs an integer 'code', got {code!r}")
    if kind == "discover_success" and "supportedVersions" in observation:
        versions = observation["supportedVersions"]
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise ValueError(f"observation {index} (discover_success) supportedVersions must be a list of strings, got {versions!r}")
    return dict(observation)


def _modern_proof(observation: Mapping[str, Any]) -> str | None:
    """Why this observation proves modern, or ``None`` when it does not."""
    if observation["kind"] == "discover_success":
        versions = observation.get("supportedVersions")
        if versions is None or any(v in MODERN_VERSIONS for v in versions):
            return "server/discover succeeded"
        return None
    if observation["kind"] == "jsonrpc_error" and observation["code"] in MODERN_ERROR_CODES:
        return f"the server answered the modern error {observation['code']}"
    return None


def _legacy_proof(evidence: Any) -> str | None:
    if not isinstance(evidence, Mapping):
        return None
    if evidence.get("kind") == "initialize_success" and evidence.get("protocolVersion") in LEGACY_VERSIONS:
        return f"initialize succeeded and negotiated {evidence['protocolVersion']}"
    return None


def select_era(
    observation: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    mode: str,
    legacy_allowed: bool = False,
    legacy_evidence: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Decide the era from the modern probe's observation(s), the endpoint policy and legacy evidence.

    ``observation`` is one observation or a list (e.g. retries of the bounded modern probe).
    Returns a JSON-serialisable record: ``era`` (``"modern"``, ``"legacy"`` or ``None``),
    ``mode``, ``legacyAllowed``, ``observations``, ``legacyEvidence``, ``reason``, ``case``
    and ``nextStep`` (``"legacy_probe"`` when a bounded legacy probe is now permitted).
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: expected one of {', '.join(MODES)}")
    if not isinstance(legacy_allowed, bool):
        raise ValueError(f"legacy_allowed must be a boolean, got {legacy_allowed!r}")
    observations = [observation] if isinstance(observation, Mapping) else list(observation)
    checked = [_check_observation(o, i) for i, o in enumerate(observations)]
    if not checked:
        raise ValueError("select_era needs at least one observation of the modern probe: legacy is never chosen unprobed")
    record: dict[str, Any] = {
        "era": None,
        "mode": mode,
        "legacyAllowed": legacy_allowed,
        "observations": checked,
        "legacyEvidence": dict(legacy_evidence) if isinstance(legacy_evidence, Mapping) else legacy_evidence,
        "reason": "",
        "case": "",
        "nextStep": None,
    }
    for obs in checked:
        proof = _modern_proof(obs)
        if proof is not None:
            modern_error = obs["kind"] == "jsonrpc_error"
            record.update(
                era="modern",
                reason=proof + (": a recognised modern error proves modern; never fall back" if modern_error else ""),
                case="era-modern-error-no-downgrade" if modern_error and mode == "fallback" else "era-strict-modern-proven",
            )
            return record
    kinds = sorted({o["kind"] for o in checked})
    if mode == "strict":
        record.update(
            reason=f"strict mode requires proof of modern behaviour; observed only {', '.join(kinds) or 'nothing'}",
            case="era-strict-unproven",
        )
        return record
    silence = f"the modern probe was inconclusive ({', '.join(kinds) or 'no observation'}), which does not prove legacy"
    if not legacy_allowed:
        ignored = "; legacy evidence ignored: this endpoint is not allowed legacy" if legacy_evidence else ""
        record.update(reason=silence + ignored, case="era-fallback-silence-inconclusive")
        return record
    proof = _legacy_proof(legacy_evidence)
    if proof is None:
        record.update(
            reason=silence + "; legacy is allowed but no successful initialize negotiated a legacy version",
            case="era-fallback-silence-inconclusive",
            nextStep="legacy_probe",
        )
        return record
    record.update(era="legacy", reason=f"{silence}; the endpoint is allowed legacy and {proof}", case="era-fallback-legacy-proven")
    return record
