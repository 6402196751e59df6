from __future__ import annotations

import re

import pytest

from mcplab import (
    BOUNDARIES,
    CASES,
    KNOWN_VERSIONS,
    LEGACY_VERSION,
    MODERN_VERSION,
    case_info,
    check_era,
    era_of_version,
    http_status_for_code,
    version_for_era,
)

NAME = re.compile(r"^(golden|negative|era)(-[a-z0-9]+)+$")


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_every_case_is_well_formed(case):
    assert NAME.match(case.name)
    if case.kind == "negative":
        # a foreign Origin is refused at the HTTP level (403), before any JSON-RPC code
        assert case.boundary in BOUNDARIES and (isinstance(case.code, int) or case.name == "negative-origin-not-allowed")
        if case.boundary == "origin" and case.code is not None:
            wanted = 404 if case.name == "negative-unknown-method" else 400
            assert http_status_for_code(case.code) == wanted, "origin rejections travel as HTTP 400 (an unknown method as 404)"
    else:
        assert case.boundary is None and case.code is None


def test_mission_vocabulary_is_present():
    for name in ("negative-header-body-mismatch", "golden-additive-field", "era-fallback-silence-inconclusive",
                 "negative-stockroom-tool-not-allowed", "negative-sse-buffered"):
        assert case_info(name).name == name
    with pytest.raises(KeyError, match="unknown case name"):
        case_info("negative-nope")


def test_versions_are_an_enumerated_list():
    assert era_of_version(MODERN_VERSION) == "modern" and era_of_version(LEGACY_VERSION) == "legacy"
    assert era_of_version("2099-01-01") is None and era_of_version(20260728) is None
    assert KNOWN_VERSIONS[-1] == MODERN_VERSION and list(KNOWN_VERSIONS) == sorted(set(KNOWN_VERSIONS), key=KNOWN_VERSIONS.index)
    assert version_for_era("legacy") == LEGACY_VERSION
    with pytest.raises(ValueError, match="unknown era"):
        check_era("modern ")
