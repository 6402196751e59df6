"""The seed's demo, on real parts: the shipped transcript suite, the installed ``mcp`` SDK,
proxy captures built from recorded transcripts, a health window and signed rollback evidence.

Deterministic by construction (a fixed demo clock, no randomness), so ``evidenceDigest`` is the same on
every run and machine with the same suite and SDK version. The HMAC key below is a DEMO key
for a demo release controller; real deployments load their trusted signers from a secret store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .evidence import evidence_digest, write_evidence
from .release import ReleaseGate, ReleasePolicy, evaluate_health, sign_rollback_evidence
from .sdkview import sdk_observe
from .transcript import Transcript, load_transcripts, run_transcript

__all__ = ["run_demo", "demo_evidence", "DEMO_SIGNER"]

DEMO_SIGNER = "release-controller@mcplab-demo"
_DEMO_KEY = b"mcplab demo release-controller key (not a secret; demo only)"
_PREVIOUS_VERSION = "1.4.2"
#: The demo's fixed clock: rollback evidence issued a day before, valid for a week.
DEMO_NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _find(transcripts: list[Transcript], name: str) -> Transcript:
    for t in transcripts:
        if t.name == name:
            return t
    raise LookupError(f"the transcript suite has no {name!r} case")


def _proxy_captures(t: Transcript, fixed: bool) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Ingress/origin/egress for the header-mismatch request crossing a proxy."""
    ex = t.exchanges[0]
    ingress = {"headers": ex.request_headers, "body": ex.request}
    origin = {"status": ex.response_status, "headers": ex.response_headers, "body": ex.response_body, "request": ingress}
    if fixed:
        egress = dict(origin)
        egress.pop("request")
    else:  # the broken proxy: any upstream 4xx becomes a generic 500 with its own JSON-RPC body
        egress = {
            "status": 500,
            "headers": ex.response_headers,
            "body": {"jsonrpc": "2.0", "id": ex.request.get("id"), "error": {"code": -32603, "message": "Internal error"}},
        }
    return ingress, origin, egress


def _health_samples(seed: int) -> list[dict[str, Any]]:
    """A deterministic 10-minute canary window: 600 samples, a gentle latency wave, no errors."""
    return [
        {"t": float(i), "latencyMs": 40.0 + ((i + seed) * 37 % 23), "error": False, "saturation": 0.35 + ((i + seed) % 10) / 100}
        for i in range(600)
    ]


def _rollback_evidence(transcripts: list[Transcript]) -> dict[str, Any]:
    """The previous release's own record: it passed this whole suite and its window is healthy.

    Independent of the candidate's results, so a failing candidate still has a proven target.
    """
    suite_digest = evidence_digest(sorted(t.key for t in transcripts))
    acceptance = {"transcriptsPassed": len(transcripts), "transcriptsTotal": len(transcripts), "digest": suite_digest}
    health = evaluate_health(_health_samples(seed=7))
    evidence = {
        "version": _PREVIOUS_VERSION,
        "acceptanceEvidence": acceptance,
        "artifactSha256": hashlib.sha256(f"mcplab-demo-server-{_PREVIOUS_VERSION}.whl".encode()).hexdigest(),
        "descriptorSha256": hashlib.sha256(f"mcplab-demo-server-{_PREVIOUS_VERSION}/tools.json".encode()).hexdigest(),
        "acceptanceSha256": evidence_digest(acceptance),
        "registryState": "active",
        "health": {"healthy": health["healthy"], "metrics": health["metrics"]},
        "issuedAt": (DEMO_NOW - timedelta(days=1)).isoformat(),
        "expiresAt": (DEMO_NOW + timedelta(days=6)).isoformat(),
        "routeRestoration": [
            f"pin the gateway route 'mcp-demo' to version {_PREVIOUS_VERSION}",
            "drain candidate connections for 30 s",
            "re-run the transcript suite against the restored route",
        ],
    }
    return sign_rollback_evidence(evidence, DEMO_SIGNER, _DEMO_KEY)


def demo_evidence(fixed_proxy: bool = False, allow_drops: Iterable[str] = ()) -> dict[str, Any]:
    """Run every step of the demo and return the whole evidence bundle (redact before writing)."""
    allow = sorted(set(allow_drops))
    transcripts = load_transcripts()
    results = [run_transcript(t).to_dict() for t in transcripts]

    additive = _find(transcripts, "golden-additive-field")
    raw = additive.exchanges[0].response_body["result"]
    observation = sdk_observe(raw, additive.exchanges[0].request["method"], additive.era)
    sdk_evidence = {"label": additive.name, "raw": raw, **observation}

    ingress, origin, egress = _proxy_captures(_find(transcripts, "negative-header-body-mismatch"), fixed_proxy)
    capture = {"label": "negative-header-body-mismatch via demo proxy", "ingress": ingress, "origin": origin, "egress": egress}

    samples = _health_samples(seed=0)
    rollback = _rollback_evidence(transcripts)
    gate = ReleaseGate(ReleasePolicy(allowed_drops=tuple(allow), trusted_signers={DEMO_SIGNER: _DEMO_KEY},
                                     verify_sdk_views=True))  # the demo's SDK evidence is a real observation
    decision = gate.evaluate(
        transcripts=results,
        sdk_evidence=[sdk_evidence],
        proxy_captures=[capture],
        health_samples=samples,
        rollback=rollback,
        now=DEMO_NOW,
    )
    return {
        "transcripts": results,
        "sdk": sdk_evidence,
        "proxy": capture,
        "healthSamples": samples,
        "rollback": rollback,
        "decision": decision,
        "options": {"fixedProxy": fixed_proxy, "allowDrops": allow},
    }


def run_demo(fixed_proxy: bool = False, allow_drops: Iterable[str] = (), evidence_path: str | Path | None = None) -> dict[str, Any]:
    """The seed demo's summary; ``evidence_path`` also writes the redacted evidence bundle."""
    evidence = demo_evidence(fixed_proxy, allow_drops)
    if evidence_path is not None:
        write_evidence(evidence_path, evidence)
    results, decision = evidence["transcripts"], evidence["decision"]
    return {
        "transcriptsPassed": sum(1 for r in results if r["passed"]),
        "transcriptsTotal": len(results),
        "sdkDroppedFields": decision["sdkDiffs"][0]["dropped"] if decision["sdkDiffs"] else [],
        "proxyIssues": [f["message"] for f in decision["proxyFindings"]],
        "releaseAction": decision["action"],
        "evidenceDigest": evidence_digest(evidence),
    }
