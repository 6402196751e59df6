"""Issue 15, item 3: the release gate under forged and hostile evidence.

Each forged variant the attack used promotes no more: a hand-written verdict instead of the whole
suite, an empty SDK pair, an acceptance digest that names nothing, an endless validity window, a
version that is not a version. And on any JSON the gate raises only ``EvidenceError`` or returns a
blocking reason (``10**400`` in a health sample, a list as a transcript variant, a naive ``now``).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcplab.demo import DEMO_NOW, DEMO_SIGNER, demo_evidence
from mcplab.errors import EvidenceError
from mcplab.evidence import evidence_digest
from mcplab.release import (
    DEFAULT_MAX_VALIDITY,
    ReleaseGate,
    ReleasePolicy,
    rollback_evidence_problems,
    sign_rollback_evidence,
    suite_digest,
)
from mcplab.transcript import load_transcripts

KEY = b"attack test key"
SIGNER = "release-controller@attack"


@pytest.fixture(scope="module")
def demo():
    return demo_evidence(fixed_proxy=True, allow_drops=["futureHint"])


def gate(**policy) -> ReleaseGate:
    return ReleaseGate(ReleasePolicy(trusted_signers={SIGNER: KEY}, allowed_drops=("futureHint",), **policy))


def resign(rollback: dict, **changes) -> dict:
    unsigned = {k: v for k, v in rollback.items() if k != "certificate"}
    return sign_rollback_evidence({**unsigned, **changes}, SIGNER, KEY)


def decide(demo, g=None, **overrides):
    evidence = {"transcripts": demo["transcripts"], "sdk_evidence": [demo["sdk"]], "proxy_captures": [demo["proxy"]],
                "health_samples": demo["healthSamples"], "rollback": resign(demo["rollback"]), "now": DEMO_NOW}
    evidence.update(overrides)
    return (g or gate()).evaluate(**evidence)


def test_the_honest_demo_evidence_promotes(demo):
    result = decide(demo)
    assert result["action"] == "promote", result["reasons"]
    assert result["suiteDigest"] == suite_digest([t.key for t in load_transcripts()])


def test_one_hand_written_verdict_is_not_the_suite(demo):
    result = decide(demo, transcripts=[{"name": "golden-modern-list", "passed": True}])
    assert result["action"] != "promote"
    assert any(f"covers 1 of {len(load_transcripts())}" in reason for reason in result["reasons"]), result["reasons"]


def test_a_verdict_outside_the_suite_blocks(demo):
    suite = ["golden-modern-list"]
    result = decide(demo, gate(suite=suite), transcripts=[*demo["transcripts"][:1], {"name": "golden-modern-call",
                                                                                     "passed": True}])
    assert result["candidatePassed"] is False


@pytest.mark.parametrize("pair", [{"raw": {}, "view": {}}, {"raw": {"a": 1}, "view": {}},
                                  {"raw": {}, "view": None}, {"raw": {"resultType": "complete"}, "view": None}])
def test_an_empty_or_unexplained_sdk_pair_is_not_an_observation(demo, pair):
    result = decide(demo, sdk_evidence=[pair])
    assert result["action"] != "promote" and result["candidatePassed"] is False


def test_a_forged_view_is_caught_when_the_gate_reobserves(demo):
    forged = {**demo["sdk"], "view": demo["sdk"]["raw"]}  # "the SDK kept futureHint" without running it
    lenient = decide(demo, gate(), sdk_evidence=[forged])
    assert lenient["action"] == "promote"  # the course's what-if evidence (lab D) is judged as declared
    strict = decide(demo, gate(verify_sdk_views=True), sdk_evidence=[forged])
    assert strict["action"] != "promote"
    assert any("re-observed" in reason for reason in strict["reasons"]), strict["reasons"]
    assert decide(demo, gate(verify_sdk_views=True))["action"] == "promote"


def test_the_acceptance_digest_must_be_the_digest_of_the_acceptance_evidence(demo):
    forged = resign(demo["rollback"], acceptanceSha256="45" * 32)
    result = decide(demo, rollback=forged)
    assert result["action"] == "halt"
    assert any(p.startswith("acceptanceSha256") for p in result["rollbackProblems"])


def test_acceptance_claiming_this_suite_must_count_all_of_it(demo):
    acceptance = {**demo["rollback"]["acceptanceEvidence"], "transcriptsPassed": 1, "transcriptsTotal": 1}
    forged = resign(demo["rollback"], acceptanceEvidence=acceptance, acceptanceSha256=evidence_digest(acceptance))
    result = decide(demo, rollback=forged)
    assert result["action"] == "halt"
    assert any(str(len(load_transcripts())) in p for p in result["rollbackProblems"]), result["rollbackProblems"]


def test_a_validity_window_has_a_maximum(demo):
    forever = resign(demo["rollback"], expiresAt=(DEMO_NOW + timedelta(days=3650)).isoformat())
    problems = rollback_evidence_problems(forever, {SIGNER: KEY}, DEMO_NOW)
    assert any(p.startswith("expiresAt") and "at most" in p for p in problems), problems
    assert DEFAULT_MAX_VALIDITY == timedelta(days=30)


@pytest.mark.parametrize("version", ["HEAD", "main", "v", "abc123", "1.4.2 ", "\ud800", "1" * 200])
def test_a_version_must_be_a_version(demo, version):
    problems = rollback_evidence_problems({**resign(demo["rollback"]), "version": version}, {SIGNER: KEY}, DEMO_NOW)
    assert any(p.startswith("version") for p in problems), problems


@pytest.mark.parametrize("version", ["1.4.2", "v2.0.0", "2.0.0rc1", "1.0.0-beta.2+build.5", "2026.12.1"])
def test_real_versions_pass(demo, version):
    assert rollback_evidence_problems(resign(demo["rollback"], version=version), {SIGNER: KEY}, DEMO_NOW) == []


def test_a_huge_integer_in_a_health_sample_blocks_instead_of_overflowing(demo):
    samples = copy.deepcopy(demo["healthSamples"])
    samples[3]["latencyMs"] = 10**400
    result = decide(demo, health_samples=samples)
    assert result["candidatePassed"] is False and "health window: malformed evidence" in result["reasons"][0]


def test_a_list_as_a_transcript_variant_blocks_instead_of_raising(demo):
    transcripts = copy.deepcopy(demo["transcripts"])
    transcripts[0]["variant"] = ["x"]
    result = decide(demo, transcripts=transcripts)
    assert result["candidatePassed"] is False and any("malformed" in r for r in result["reasons"])


def test_a_naive_now_is_an_evidence_error(demo):
    with pytest.raises(EvidenceError, match="timezone"):
        decide(demo, now=datetime(2026, 12, 1, 12, 0))
    with pytest.raises(EvidenceError, match="timezone"):
        rollback_evidence_problems(demo["rollback"], {DEMO_SIGNER: KEY}, datetime(2026, 12, 1))


ANY = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8),
                             st.sampled_from([10**400, -(10**400), float("nan"), "\ud800", "2.0", "1.4.2"])),
                   lambda inner: st.one_of(st.lists(inner, max_size=3),
                                           st.dictionaries(st.sampled_from(
                                               ["name", "variant", "passed", "raw", "view", "t", "latencyMs", "error",
                                                "saturation", "version", "health", "healthy", "certificate", "metrics",
                                                "ingress", "origin", "egress", "status", "body", "headers", "x"]),
                                               inner, max_size=5)), max_leaves=20)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(ANY, ANY, ANY, ANY, ANY, ANY, st.sampled_from(["transcripts", "sdk_evidence", "proxy_captures",
                                                     "health_samples", "rollback", "health_baseline"]))
def test_on_any_json_the_gate_blocks_or_raises_only_evidence_error(a, b, c, d, e, f, spliced):
    base = {"transcripts": a, "sdk_evidence": b, "proxy_captures": c, "health_samples": d, "rollback": e,
            "health_baseline": f if isinstance(f, dict) else None, "now": datetime(2026, 12, 1, tzinfo=UTC)}
    try:
        result = gate().evaluate(**base)
    except EvidenceError:
        return
    assert result["action"] in ("rollback", "halt")
