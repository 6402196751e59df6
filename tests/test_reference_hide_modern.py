"""serve_reference(hide_modern=...): the reference server behind a filter that hides its 2026-07-28 era
(the era lab's filtering-gateway scenario). Silence or a non-modern refusal proves nothing; legacy
is chosen only for an endpoint allowed legacy, after initialize."""

from __future__ import annotations

import pytest

from mcplab.live.capture import capture_client
from mcplab.live.check import probe_era
from mcplab.reference import HIDE_MODERN_ANSWERS, HideModern, serve_reference


def test_hide_modern_answers_are_checked_before_anything_listens():
    assert HIDE_MODERN_ANSWERS == ("refuse", "empty")
    with pytest.raises(ValueError, match="answer 'drop'"):
        HideModern(object(), "drop")
    with pytest.raises(ValueError, match="answer 'drop'"), serve_reference(hide_modern="drop"):
        pass


@pytest.mark.parametrize(("answer", "observation"), [
    ("refuse", {"kind": "jsonrpc_error", "code": -32000, "status": 400}),
    ("empty", {"kind": "empty_response", "status": 200}),
])
def test_a_hidden_modern_era_proves_nothing_and_legacy_needs_permission_and_initialize(answer, observation):
    with serve_reference(hide_modern=answer) as ref, capture_client(5.0) as client:
        strict, probes = probe_era(client, ref.url, "strict", True)
        assert (strict["era"], strict["case"], strict["observations"], len(probes)) == (None, "era-strict-unproven", [observation], 1)
        refused, probes = probe_era(client, ref.url, "fallback", False)
        assert (refused["era"], refused["case"], len(probes)) == (None, "era-fallback-silence-inconclusive", 1)
        legacy, probes = probe_era(client, ref.url, "fallback", True)
        assert (legacy["era"], legacy["case"]) == ("legacy", "era-fallback-legacy-proven")
        assert legacy["legacyEvidence"] == {"kind": "initialize_success", "protocolVersion": "2025-11-25"} and len(probes) == 2


def test_without_the_filter_the_same_server_proves_modern():
    with serve_reference() as ref, capture_client(5.0) as client:
        decision, _ = probe_era(client, ref.url, "fallback", True)
    assert (decision["era"], decision["case"]) == ("modern", "era-strict-modern-proven")
