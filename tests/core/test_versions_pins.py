"""Pins of the version table: versions are an enumerated list, eras map both ways, unknown is nothing."""

from __future__ import annotations

import pytest

from mcplab.versions import (
    ERAS,
    KNOWN_VERSIONS,
    LEGACY_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSION,
    MODERN_VERSIONS,
    check_era,
    era_of_version,
    version_for_era,
)


def test_the_table_oldest_first():
    assert MODERN_VERSION == "2026-07-28" and LEGACY_VERSION == "2025-11-25"
    assert LEGACY_VERSIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert MODERN_VERSIONS == ("2026-07-28",)
    assert KNOWN_VERSIONS == (*LEGACY_VERSIONS, *MODERN_VERSIONS)
    assert ERAS == ("modern", "legacy")


@pytest.mark.parametrize("version, era", [("2026-07-28", "modern"), ("2025-11-25", "legacy"), ("2024-11-05", "legacy"),
                                          ("2025-06-18", "legacy"), ("2026-07-29", None), ("2027-01-01", None),
                                          ("", None), (None, None), (20260728, None), ("2026-07-28 ", None)])
def test_era_of_version(version, era):
    assert era_of_version(version) == era


def test_version_for_era():
    assert version_for_era("modern") == "2026-07-28"
    assert version_for_era("legacy") == "2025-11-25"
    with pytest.raises(ValueError, match="^unknown era 'future': expected one of modern, legacy$"):
        version_for_era("future")


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_check_era_returns_the_era(era):
    assert check_era(era) == era


@pytest.mark.parametrize("era", ["Modern", "", None, 1, "strict"])
def test_check_era_names_the_choices(era):
    with pytest.raises(ValueError) as caught:
        check_era(era)
    assert str(caught.value) == f"unknown era {era!r}: expected one of modern, legacy"
