"""The live harness against the reference server: the known-good origin passes, directly and via a faithful proxy."""

from __future__ import annotations

from mcplab.live.check import run_check
from mcplab.live.proxy import serve_proxy
from mcplab.reference.server import serve_reference


def test_every_live_case_passes_against_the_reference_server_directly_and_via_a_faithful_proxy():
    with serve_reference(port=0) as ref, serve_proxy(ref.url) as proxy:
        result = run_check(ref.url, via=proxy.url)
    verdicts = {row["case"]: row for row in result.to_dict()["rows"]}
    assert result.ok is True and result.issues == []
    ran = {name for name, row in verdicts.items() if row["applies"] and row["direct"]["status"] != "n/a"}
    assert {"golden-modern-discover", "golden-completion", "negative-meta-type.version", "negative-header-body-mismatch"} <= ran
    assert all(verdicts[name]["via"]["status"] == verdicts[name]["direct"]["status"] == "pass" for name in ran)
