"""The caller-effective catalog: exactly the descriptors discovery returned, their policy, and one identity.

Design: nothing is added to what ``tools/list`` showed this caller, so search and inspection can
never invent a tool. ``catalog_identity`` is ``sha256:`` over the canonical JSON of the era, the
effective descriptors (sorted by name, byte-for-byte as received), any listed descriptor that is not
effective (a second copy of a name, a nameless one), the policy identity and each tool's derived
policy: any change in any of them gives a new identity, which validation and plans carry as their precondition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..redaction import REDACTED, redact
from .connection import Discovery
from .profiles import DescriptorProfile, digest_of, profile_for

__all__ = ["EffectiveCatalog", "build_catalog", "shown_url", "without_url_secrets", "MAX_QUERY_CHARS"]

MAX_QUERY_CHARS = 200


@dataclass
class EffectiveCatalog:
    discovery: Discovery
    profile: DescriptorProfile
    tools: dict[str, dict[str, Any]]
    policies: dict[str, dict[str, Any]]
    identity: str
    duplicates: list[str]

    @property
    def era(self) -> str:
        return self.discovery.era

    def server(self) -> dict[str, Any]:
        info = self.discovery.server_info or {}
        return {"where": shown_url(self.discovery.where), "name": info.get("name"), "version": info.get("version"),
                "instructions": self.discovery.instructions, "capabilities": self.discovery.capabilities}

    def policy_of(self, name: str) -> dict[str, Any]:
        """The static policy for ``name``: derived from its descriptor, or the profile's answer for an unlisted name."""
        if name in self.policies:
            return {**self.policies[name], "denied": self.policies[name]["allow_listed"] is False}
        return self.profile.unlisted_policy(name)

    def summary(self) -> list[dict[str, Any]]:
        return [{"name": name, "title": tool.get("title"), "effect_class": self.policies[name]["effect_class"],
                 "approval_required": self.policies[name]["approval_required"]} for name, tool in self.tools.items()]

    def search(self, query: str) -> list[dict[str, Any]]:
        """Tools whose name, title, description or annotations contain every word of ``query`` (case-insensitive)."""
        words = query.lower().split()
        hits = []
        for name, tool in self.tools.items():
            fields = {"name": name, "title": tool.get("title"), "description": tool.get("description"),
                      "annotations": json.dumps(tool.get("annotations"), sort_keys=True) if tool.get("annotations") else None}
            texts = {key: value.lower() for key, value in fields.items() if isinstance(value, str)}
            if words and all(any(word in text for text in texts.values()) for word in words):
                matched = sorted(key for key, text in texts.items() if any(word in text for word in words))
                hits.append({"name": name, "title": tool.get("title"), "matched_in": matched,
                             "effect_class": self.policies[name]["effect_class"]})
        return hits


def shown_url(url: str) -> str:
    """``url`` as outputs show it: a password in the userinfo and secret query values redacted."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all (an unclosed IPv6 bracket): shown only when it cannot hold a secret
        return url if "@" not in url and "?" not in url else REDACTED
    if parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        parts = parts._replace(netloc=f"{parts.username}:{REDACTED}@{host}")
    return str(redact(urlunsplit(parts)))


def without_url_secrets(text: str, url: str) -> str:
    """``text`` (an error message) with ``url`` and the base its admin routes hang off shown as :func:`shown_url` shows them."""
    for raw in (url, url.rsplit("/mcp", 1)[0]):
        if raw:
            text = text.replace(raw, shown_url(raw))
    return text


def build_catalog(discovery: Discovery) -> EffectiveCatalog:
    """The effective catalog of one discovery (the first descriptor wins when a server lists a name twice)."""
    profile = profile_for(discovery.server_info)
    tools: dict[str, dict[str, Any]] = {}
    duplicates = []
    ignored = []  # listed but not effective (a second copy of a name, or no name): still part of the identity
    for tool in discovery.tools:
        name = tool.get("name")
        if not isinstance(name, str) or name in tools:
            ignored.append(tool)
            if isinstance(name, str):
                duplicates.append(name)
            continue
        tools[name] = tool
    tools = dict(sorted(tools.items()))
    policies = {name: profile.tool_policy(tool) for name, tool in tools.items()}
    identity = digest_of({"era": discovery.era, "tools": list(tools.values()), "policy": profile.identity(), "tool_policies": policies,
                          **({"ignored": ignored} if ignored else {})})
    return EffectiveCatalog(discovery=discovery, profile=profile, tools=tools, policies=policies, identity=identity,
                            duplicates=duplicates)
