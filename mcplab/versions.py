"""Protocol versions and eras.

Versions are a fixed, enumerated list, never compared as strings: an unknown version
is not "at least" anything. An *era* is the family of wire rules a version belongs to:
``"modern"`` (2026-07-28, stateless, per-request ``_meta``) or ``"legacy"``
(2025-11-25 and older, the ``initialize`` handshake).
"""

from __future__ import annotations

__all__ = [
    "MODERN_VERSION",
    "LEGACY_VERSION",
    "MODERN_VERSIONS",
    "LEGACY_VERSIONS",
    "KNOWN_VERSIONS",
    "ERAS",
    "META_PROTOCOL_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "TASKS_EXTENSION",
    "era_of_version",
    "version_for_era",
    "check_era",
]

MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"

#: Revisions that use the stateless per-request envelope, oldest first.
MODERN_VERSIONS: tuple[str, ...] = (MODERN_VERSION,)
#: Revisions reached through the ``initialize`` handshake, oldest first.
LEGACY_VERSIONS: tuple[str, ...] = ("2024-11-05", "2025-03-26", "2025-06-18", LEGACY_VERSION)
KNOWN_VERSIONS: tuple[str, ...] = (*LEGACY_VERSIONS, *MODERN_VERSIONS)

ERAS: tuple[str, ...] = ("modern", "legacy")

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"

#: Extension identifier of tasks in 2026-07-28 (``resultType: "task"``).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


def era_of_version(version: object) -> str | None:
    """Return ``"modern"``/``"legacy"`` for a known version string, else ``None``."""
    if version in MODERN_VERSIONS:
        return "modern"
    if version in LEGACY_VERSIONS:
        return "legacy"
    return None


def version_for_era(era: str) -> str:
    """The newest protocol version of an era (``"modern"`` -> 2026-07-28)."""
    return MODERN_VERSION if check_era(era) == "modern" else LEGACY_VERSION


def check_era(era: object) -> str:
    """Return ``era`` if it names an era; raise ``ValueError`` naming the choices otherwise."""
    if era not in ERAS:
        raise ValueError(f"unknown era {era!r}: expected one of {', '.join(ERAS)}")
    return era  # type: ignore[return-value]
