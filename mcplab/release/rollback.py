"""Rollback evidence: what proves a rollback target, signed by a trusted release controller.

Design: every reason a target is not proven is one string starting with the field it is about;
the certificate is an HMAC-SHA-256 over the canonical JSON of everything else, so no field can
change unseen; ``acceptanceSha256`` must be the digest of the acceptance evidence it names, the
validity window has a maximum, and a version is a version (issue 15).
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..errors import EvidenceError
from ..evidence import canonical_json, evidence_digest
from ..jsonvalue import is_json_integer, short_repr
from ..redaction import redaction_paths

__all__ = ["ROLLBACK_PIN_FIELDS", "CERTIFICATE_ALGORITHM", "DEFAULT_MAX_VALIDITY", "sign_rollback_evidence",
           "rollback_evidence_problems", "rollback_evidence_ready", "suite_digest"]


#: Fields a rollback target must pin; the certificate signs all of them.
ROLLBACK_PIN_FIELDS: tuple[str, ...] = (
    "version",
    "acceptanceEvidence",
    "artifactSha256",
    "descriptorSha256",
    "acceptanceSha256",
    "registryState",
    "health",
    "routeRestoration",
    "issuedAt",
    "expiresAt",
)
CERTIFICATE_ALGORITHM = "HMAC-SHA-256"

_SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")
#: An exact release version: digits first (an optional ``v``), dot-separated, optional pre-release
#: and build parts (SemVer ``1.0.0-beta.2+build.5``, PEP 440 ``2.0.0rc1``, CalVer ``2026.12.1``).
#: A branch, a tag name or a commit (``HEAD``, ``main``, ``abc123``) is not a version.
_VERSION = re.compile(r"v?[0-9]+(\.[0-9]+)*([-.]?[0-9A-Za-z]+)*(\+[0-9A-Za-z]+(\.[0-9A-Za-z]+)*)?")
_MAX_VERSION_LENGTH = 64
#: The longest validity window rollback evidence may claim (``issuedAt`` to ``expiresAt``): evidence
#: re-verified at least monthly; ``ReleasePolicy.max_validity`` can shorten (or lengthen) it.
DEFAULT_MAX_VALIDITY = timedelta(days=30)
_RANGE_CHARS = frozenset("^~*<>=|, \t\n")
_FLOATING_VERSIONS = frozenset({"latest", "current", "previous"})


def _unsigned_payload(evidence: Mapping[str, Any]) -> bytes:
    """Bytes the certificate signs: canonical JSON of the whole evidence minus ``certificate``.

    Every field is authenticated. Rollback evidence must hold no secret-named field at all
    (``rollback_evidence_problems`` reports one), so redaction never changes what was signed
    and evidence written with ``write_evidence`` still verifies after it is read back.
    """
    return canonical_json({key: value for key, value in evidence.items() if key != "certificate"})


def sign_rollback_evidence(evidence: Mapping[str, Any], signer: str, key: bytes) -> dict[str, Any]:
    """Return a copy of ``evidence`` with a ``certificate`` added (any old one is replaced).

    The certificate is ``{"signer", "algorithm": "HMAC-SHA-256", "signature"}`` where the
    signature is the HMAC-SHA-256 hex digest, under ``key``, of the canonical JSON of the
    evidence without its certificate.
    """
    if not isinstance(evidence, Mapping):
        raise EvidenceError(f"rollback evidence must be an object, got {type(evidence).__name__}")
    if not isinstance(signer, str) or not signer:
        raise EvidenceError("rollback evidence signer must be a non-empty string")
    if not isinstance(key, (bytes, bytearray)) or not key:
        raise EvidenceError("rollback evidence signing key must be non-empty bytes")
    signed = {k: copy.deepcopy(v) for k, v in evidence.items() if k != "certificate"}
    signature = hmac.new(bytes(key), _unsigned_payload(signed), hashlib.sha256).hexdigest()
    signed["certificate"] = {"signer": signer, "algorithm": CERTIFICATE_ALGORITHM, "signature": signature}
    return signed


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and _SHA256_HEX.match(value) is not None


def _version_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"version: must be a non-empty exact version string, got {short_repr(value)}"
    if value.strip().lower() in _FLOATING_VERSIONS:
        return f"version: {short_repr(value)} is a moving alias, not an exact version"
    if _RANGE_CHARS & set(value) or any(part in ("x", "X") for part in value.split(".")):
        return f"version: {short_repr(value)} is a range or wildcard, not an exact version"
    if len(value) > _MAX_VERSION_LENGTH or not _VERSION.fullmatch(value):
        return f"version: {short_repr(value)} is not a version (expected digits such as 1.4.2, not a branch or commit)"
    return None


def suite_digest(keys: Sequence[str]) -> str:
    """The digest that names a transcript suite: SHA-256 of the sorted verdict keys (``name`` or
    ``name.variant``), as :func:`~mcplab.evidence.evidence_digest` computes it."""
    return evidence_digest(sorted(keys))


def _acceptance_problems(value: Any, suite: tuple[str, int] | None = None) -> list[str]:
    """``suite`` is ``(digest, size)`` of the suite the gate knows: acceptance claiming it must count all of it."""
    if not isinstance(value, Mapping):
        return [f"acceptanceEvidence: must be an object, got {type(value).__name__}"]
    problems: list[str] = []
    passed, total = value.get("transcriptsPassed"), value.get("transcriptsTotal")
    if not is_json_integer(passed):
        problems.append(f"acceptanceEvidence.transcriptsPassed: must be an integer, got {short_repr(passed)}")
    if not is_json_integer(total) or total <= 0:
        problems.append(f"acceptanceEvidence.transcriptsTotal: must be a positive integer, got {short_repr(total)}")
    if is_json_integer(passed) and is_json_integer(total) and total > 0 and passed != total:
        problems.append(f"acceptanceEvidence: only {passed} of {total} transcripts passed")
    if not _is_sha256(value.get("digest")):
        problems.append("acceptanceEvidence.digest: must be 64 lowercase hex characters (SHA-256)")
    elif suite is not None and value["digest"] == suite[0] and total != suite[1]:
        problems.append(f"acceptanceEvidence: claims suite {suite[0][:12]} of {suite[1]} transcripts but counts "
                        f"{short_repr(total)}")
    return problems


def _acceptance_digest_problem(evidence: Mapping[str, Any]) -> str | None:
    """``acceptanceSha256`` must be the evidence digest of ``acceptanceEvidence`` (else it names nothing)."""
    if not _is_sha256(evidence.get("acceptanceSha256")) or "acceptanceEvidence" not in evidence:
        return None
    try:
        expected = evidence_digest(evidence["acceptanceEvidence"])
    except EvidenceError:
        return "acceptanceSha256: the acceptance evidence is not JSON, so no digest can name it"
    if not hmac.compare_digest(expected, evidence["acceptanceSha256"]):
        return "acceptanceSha256: is not the digest of acceptanceEvidence (evidence_digest of it)"
    return None


def _certificate_problems(evidence: Mapping[str, Any], trusted_signers: Mapping[str, bytes]) -> list[str]:
    cert = evidence["certificate"]
    if not isinstance(cert, Mapping):
        return [f"certificate: must be an object, got {type(cert).__name__}"]
    problems: list[str] = []
    signer, signature = cert.get("signer"), cert.get("signature")
    if cert.get("algorithm") != CERTIFICATE_ALGORITHM:
        problems.append(f"certificate.algorithm: must be {short_repr(CERTIFICATE_ALGORITHM)}, got {short_repr(cert.get('algorithm'))}")
    if not _is_sha256(signature):
        problems.append("certificate.signature: must be 64 lowercase hex characters (HMAC-SHA-256)")
    if not isinstance(signer, str) or signer not in trusted_signers:
        problems.append(f"certificate.signer: {short_repr(signer)} is not a trusted release-controller identity")
    if problems:
        return problems
    try:
        payload = _unsigned_payload(evidence)
    except EvidenceError as exc:
        return [f"certificate: cannot verify, {exc}"]
    expected = hmac.new(bytes(trusted_signers[signer]), payload, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        return [f"certificate.signature: does not match the evidence under {short_repr(signer)}'s key"]
    return []


def _timestamp(value: Any) -> datetime | None:
    """An ISO 8601 timestamp WITH a UTC offset, else ``None`` (a naive time is ambiguous)."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _freshness_problems(evidence: Mapping[str, Any], now: datetime, max_validity: timedelta) -> list[str]:
    issued, expires = _timestamp(evidence.get("issuedAt")), _timestamp(evidence.get("expiresAt"))
    problems = [
        f"{name}: must be an ISO 8601 timestamp with a UTC offset, got {short_repr(evidence[name])}"
        for name, moment in (("issuedAt", issued), ("expiresAt", expires))
        if name in evidence and moment is None
    ]
    if issued is not None and expires is not None:
        if expires <= issued:
            problems.append("expiresAt: must be later than issuedAt")
        elif expires - issued > max_validity:
            problems.append(f"expiresAt: a validity window may last at most {max_validity.days} days "
                            f"(issuedAt to expiresAt is {(expires - issued).days} days)")
        if issued > now:
            problems.append(f"issuedAt: {evidence['issuedAt']} is in the future")
        if now >= expires:
            problems.append(f"expiresAt: the evidence expired at {evidence['expiresAt']}; re-verify the rollback target")
    return problems


def _aware_now(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
        raise EvidenceError(f"now must be a timezone-aware datetime (e.g. datetime.now(UTC)), got {short_repr(now)}")
    return now


def rollback_evidence_problems(
    evidence: Any, trusted_signers: Mapping[str, bytes], now: datetime | None = None, *,
    max_validity: timedelta = DEFAULT_MAX_VALIDITY, suite: tuple[str, int] | None = None,
) -> list[str]:
    """Every reason ``evidence`` does not prove a rollback target, one readable string each.

    Each string starts with the field it is about. An empty list means the target is proven:
    exact version, complete acceptance evidence, three SHA-256 digests, registry state
    ``"active"``, health whose ``healthy`` is the boolean ``True``, a route restoration
    procedure, an ``issuedAt``..``expiresAt`` validity window that holds ``now`` (default: the
    current UTC time; stale evidence must be re-verified) and lasts at most ``max_validity``, an
    ``acceptanceSha256`` that is the digest of ``acceptanceEvidence`` (which, when it names the
    ``suite`` ``(digest, size)`` the gate knows, counts all of it), and a valid certificate from
    a trusted signer over all of it. A naive ``now`` raises :class:`~mcplab.errors.EvidenceError`.
    """
    now = _aware_now(now)
    if evidence is None:
        return ["rollback evidence: missing"]
    if not isinstance(evidence, Mapping):
        return [f"rollback evidence: must be an object, got {type(evidence).__name__}"]
    problems = [f"{name}: missing" for name in (*ROLLBACK_PIN_FIELDS, "certificate") if name not in evidence]
    if "version" in evidence and (problem := _version_problem(evidence["version"])):
        problems.append(problem)
    if "acceptanceEvidence" in evidence:
        problems.extend(_acceptance_problems(evidence["acceptanceEvidence"], suite))
    for name in ("artifactSha256", "descriptorSha256", "acceptanceSha256"):
        if name in evidence and not _is_sha256(evidence[name]):
            problems.append(f"{name}: must be 64 lowercase hex characters (SHA-256)")
    if (problem := _acceptance_digest_problem(evidence)) is not None:
        problems.append(problem)
    if "registryState" in evidence and evidence["registryState"] != "active":
        problems.append(f"registryState: must be 'active', got {short_repr(evidence['registryState'])}")
    if "health" in evidence:
        health = evidence["health"]
        if not isinstance(health, Mapping):
            problems.append(f"health: must be an object, got {type(health).__name__}")
        elif health.get("healthy") is not True:
            problems.append(f"health.healthy: must be the boolean true, got {short_repr(health.get('healthy'))}")
    if "routeRestoration" in evidence:
        steps = evidence["routeRestoration"]
        if (
            not isinstance(steps, (list, tuple))
            or not steps
            or not all(isinstance(step, str) and step.strip() for step in steps)
        ):
            problems.append("routeRestoration: must be a non-empty list of non-empty procedure steps")
    problems.extend(_freshness_problems(evidence, now, max_validity))
    unsigned = {key: value for key, value in evidence.items() if key != "certificate"}
    problems.extend(f"{path[2:]}: rollback evidence must not carry secrets" for path in redaction_paths(unsigned))
    if "certificate" in evidence:
        problems.extend(_certificate_problems(evidence, trusted_signers))
    return problems


def rollback_evidence_ready(evidence: Any, trusted_signers: Mapping[str, bytes], now: datetime | None = None,
                            **limits: Any) -> bool:
    """True when :func:`rollback_evidence_problems` finds nothing."""
    return not rollback_evidence_problems(evidence, trusted_signers, now, **limits)
