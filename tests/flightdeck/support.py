"""Shared by the Flight Deck tests: the seed's Restock draft and the two eras."""

from __future__ import annotations

#: "Restock low items" on the seed stock: DR-0001 at v1.
RESTOCK = {"draft_id": "DR-0001", "ledger_version": 1, "lines": [
    {"sku": "SR-101", "add_on_order": 6}, {"sku": "SR-103", "add_on_order": 13},
    {"sku": "SR-105", "add_on_order": 3}, {"sku": "SR-106", "add_on_order": 6}]}
ERAS = ["modern", "legacy"]

