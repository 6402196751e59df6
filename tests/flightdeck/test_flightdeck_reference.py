"""Flight Deck on a server that is not the stockroom: the reference server (stateful 2025-11-25 sessions, resumable SSE)."""

from __future__ import annotations

import asyncio

import pytest
from mcp.client import Client

from mcplab.flightdeck import FlightDeck
from mcplab.reference.server import serve_reference

from .support import ERAS


@pytest.fixture(scope="module")
def reference():
    with serve_reference(port=0) as ref:
        yield ref


def _sdk_tool_names(url: str, mode: str) -> set[str]:
    async def listed() -> set[str]:
        async with Client(url, mode=mode) as client:
            return {tool.name for tool in (await client.list_tools()).tools}
    return asyncio.run(listed())


@pytest.mark.parametrize("era", ERAS)
def test_the_catalog_is_what_the_sdk_client_sees_and_nothing_is_invented(reference, era):
    with FlightDeck.connect(reference.url, era=era) as deck:
        server = deck.inspect_server()
        found = deck.search_tools("image")
        tool = deck.inspect_tool("test_simple_text")
        check = deck.validate_tool_call("test_simple_text", {})
        unknown = deck.validate_tool_call("delete_everything", {})
    names = {t["name"] for t in server["tools"]}
    assert names == _sdk_tool_names(reference.url, "2026-07-28" if era == "modern" else "legacy")
    assert server["server"]["name"] == "mcplab-reference" and server["tool_count"] == len(names)
    assert {m["name"] for m in found["matches"]} <= names and "test_image_content" in {m["name"] for m in found["matches"]}
    assert tool["in_effective_catalog"] is True
    # no stockroom profile here: policy comes only from what the descriptors declare
    assert check["policy"]["policy_source"] == "descriptor_hints" and check["policy"]["allow_listed"] is None
    assert check["static_request_blocked"] is False and check["schema"]["valid"] is True
    assert unknown["in_effective_catalog"] is False and unknown["static_request_blocked"] is True
