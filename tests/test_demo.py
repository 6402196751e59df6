from __future__ import annotations

import json

from mcplab.demo import demo_evidence, run_demo

SEED_ISSUES = ["proxy collapsed a protocol error into HTTP 500", "proxy changed the origin JSON-RPC body"]


def test_demo_has_the_seeds_shape_and_values():
    out = run_demo()
    assert list(out) == ["transcriptsPassed", "transcriptsTotal", "sdkDroppedFields", "proxyIssues", "releaseAction", "evidenceDigest"]
    assert out["transcriptsPassed"] == out["transcriptsTotal"] >= 24
    assert out["sdkDroppedFields"] == ["futureHint"]
    assert out["proxyIssues"] == SEED_ISSUES
    assert out["releaseAction"] == "rollback"
    assert len(out["evidenceDigest"]) == 64 and int(out["evidenceDigest"], 16) >= 0


def test_digest_is_identical_across_runs_and_differs_by_scenario():
    assert run_demo()["evidenceDigest"] == run_demo()["evidenceDigest"]
    assert run_demo(fixed_proxy=True)["evidenceDigest"] != run_demo()["evidenceDigest"]


def test_fixed_proxy_still_blocked_by_the_sdk_diff():
    out = run_demo(fixed_proxy=True)
    assert out["proxyIssues"] == []
    assert out["releaseAction"] != "promote"
    reasons = demo_evidence(fixed_proxy=True)["decision"]["reasons"]
    assert any("futureHint" in r for r in reasons)


def test_allowing_the_drop_promotes():
    assert run_demo(fixed_proxy=True, allow_drops=["futureHint"])["releaseAction"] == "promote"
    # the allowance alone does not hide a broken proxy
    assert run_demo(fixed_proxy=False, allow_drops=["futureHint"])["releaseAction"] == "rollback"


def test_evidence_file_is_redacted_json(tmp_path):
    path = tmp_path / "evidence.json"
    run_demo(evidence_path=path)
    bundle = json.loads(path.read_text(encoding="utf-8"))
    assert bundle["decision"]["action"] == "rollback"
    assert bundle["decision"]["sdkDiffs"][0]["semanticLoss"] == ["futureHint"]
    assert bundle["proxy"]["egress"]["status"] == 500


def test_rollback_target_evidence_does_not_depend_on_the_candidate():
    # A failing candidate must still find its proven rollback target: rollback, not halt.
    evidence = demo_evidence()
    assert evidence["decision"]["rollbackReady"] is True and evidence["decision"]["rollbackProblems"] == []
