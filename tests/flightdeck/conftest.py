"""Fixtures of the Flight Deck tests: a real stockroom server per module, and a Flight Deck on it in each era."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mcplab.flightdeck import FlightDeck
from mcplab.stockroom import RunningServer, StockroomClient, serve_stockroom

from .support import ERAS


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    """A real stockroom server on a free loopback port, for the whole module."""
    with serve_stockroom() as srv:
        yield srv


@pytest.fixture(params=ERAS)
def deck(server: RunningServer, request: pytest.FixtureRequest) -> Iterator[FlightDeck]:
    """A Flight Deck over HTTP in each era, on a freshly reset stockroom."""
    with StockroomClient(server.url) as admin:
        admin.reset()
    with FlightDeck.connect(server.url, era=request.param, approver_token=server.approver_token) as d:
        yield d
