"""The stockroom's trace: its records, their hash chain, and what verifying it checks.

Design: a record's ``hash`` is ``sha256(prev_hash + canonical JSON of its body)`` and the first
record's ``prev_hash`` is :data:`GENESIS_HASH`. Verification is a pure function of the records and
the ledger's current state (no database here): the chain, the vocabulary of decisions, and a
replay of the approved commits since the last reset against the items.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ..evidence import canonical_json
from .catalog import SEED_ITEMS, SEED_LEDGER_VERSION

__all__ = ["GENESIS_HASH", "TraceRecord", "chain_hash", "trace_problems", "replay_problems", "LOCAL_DECISIONS",
           "DECISIONS_BY_TOOL", "Unreadable", "read_json", "read_text", "read_int"]

#: ``prev_hash`` of the first trace record.
GENESIS_HASH = "0" * 64


@dataclass(frozen=True)
class TraceRecord:
    """One line of the trace: who called what, what was decided, and the chain hashes."""

    seq: int
    at: str
    era: str
    tool: str
    decision: str
    arguments: Any
    detail: Any
    ledger_version: int
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """The hashed fields (everything but ``prev_hash`` and ``hash``)."""
        return {"seq": self.seq, "at": self.at, "era": self.era, "tool": self.tool, "decision": self.decision,
                "arguments": self.arguments, "detail": self.detail, "ledger_version": self.ledger_version}

    def to_dict(self) -> dict[str, Any]:
        return {**self.body(), "prev_hash": self.prev_hash, "hash": self.hash}


def chain_hash(prev_hash: str, body: dict[str, Any]) -> str:
    """``sha256(prev_hash + canonical JSON of the record body)``, hex."""
    return hashlib.sha256(prev_hash.encode("ascii") + canonical_json(body)).hexdigest()


class Unreadable(str):
    """A stored JSON column that does not parse (kept as text so verify can report it)."""


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def read_json(text: Any) -> Any:
    if not isinstance(text, str):
        return Unreadable(repr(text)[:200])
    try:
        return json.loads(text, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return Unreadable(text[:200])


def read_text(value: Any) -> Any:
    return value if isinstance(value, str) else Unreadable(repr(value)[:200])


def read_int(value: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else Unreadable(repr(value)[:200])


def trace_problems(records: list[TraceRecord], head: tuple[int, str] | None, ledger_version: int,
                   items: list[dict[str, Any]]) -> list[str]:
    """Problems with ``records`` (the whole trace, oldest first) and the ledger's agreement with them.

    See :meth:`mcplab.stockroom.Ledger.verify` for what is checked and what it proves.
    """
    problems: list[str] = []
    prev = GENESIS_HASH
    accepted: set[Any] = set()
    for index, record in enumerate(records, start=1):
        if record.seq != index:
            problems.append(f"record {record.seq}: expected sequence number {index} (a record is missing)")
        if record.prev_hash != prev:
            problems.append(f"record {record.seq}: prev_hash does not match the hash of the record before it")
        if any(isinstance(value, Unreadable) for value in (*record.body().values(), record.prev_hash, record.hash)):
            problems.append(f"record {record.seq}: a field is not readable (not JSON, not text or not a number)")
        else:
            try:
                intact = chain_hash(str(record.prev_hash), record.body()) == record.hash
            except (ValueError, TypeError):
                intact = False
            if not intact:
                problems.append(f"record {record.seq}: hash does not match its contents (the record was changed)")
        problems.extend(f"record {record.seq}: {p}" for p in vocabulary_problems(record))
        if record.era == "local" and record.decision == "accepted" and isinstance(record.arguments, dict):
            accepted.add(record.arguments.get("approval_id"))
        approval_id = record.detail.get("approval_id") if isinstance(record.detail, dict) else None
        if record.decision == "approved" and record.era == "legacy" and approval_id not in accepted:
            problems.append(f"record {record.seq}: a 2025-11-25 commit applied without a person's recorded approval")
        prev = record.hash
    if head is not None:
        seq, digest = head
        if not any(record.seq == seq and record.hash == digest for record in records):
            problems.append(f"anchored record {seq}:{digest[:12]} is missing or changed (history truncated or rewritten)")
    problems.extend(replay_problems(records, ledger_version, items))
    return problems


def replay_problems(records: list[TraceRecord], ledger_version: int, items: list[dict[str, Any]]) -> list[str]:
    """Compare the ledger with the seed plus the approved commits since the last reset."""
    since_reset = records
    for index in range(len(records) - 1, -1, -1):
        if records[index].era == "local" and records[index].decision == "reset":
            since_reset = records[index + 1:]
            break
    seed = {item["sku"]: item for item in SEED_ITEMS}
    expected = {sku: item["on_order"] for sku, item in seed.items()}
    version = SEED_LEDGER_VERSION
    problems = []
    for record in since_reset:
        if record.decision != "approved":
            continue
        version += 1
        lines = record.detail.get("lines") if isinstance(record.detail, dict) else None
        if not valid_lines(lines, seed):
            problems.append(f"record {record.seq}: an approved commit without valid lines")
            continue
        for line in lines:
            expected[line["sku"]] += line["add_on_order"]
    if ledger_version != version:
        problems.append(f"ledger version is {ledger_version} but the trace accounts for {version}")
    actual = {item["sku"]: item for item in items}
    for sku in sorted(set(expected) | set(actual), key=str):
        item = actual.get(sku)
        if item is None or sku not in seed:
            problems.append(f"{sku}: {'missing from' if item is None else 'not in'} the seed stock the trace accounts for")
            continue
        if item["on_order"] != expected[sku]:
            problems.append(f"{sku}: on_order is {item['on_order']} but the trace accounts for {expected[sku]}")
        for field in ("name", "on_hand", "reorder_point", "par"):
            if item[field] != seed[sku][field]:
                problems.append(f"{sku}: {field} is {item[field]!r} but no tool changes it (seed {seed[sku][field]!r})")
    return problems


#: Which decision each record may carry. Records the stockroom writes itself (era ``local``: resets
#: and out-of-band approval answers) have their own names; a caller's tool name can never be one.
LOCAL_DECISIONS: dict[str, frozenset[str]] = {
    "reset": frozenset({"reset"}),
    "approval": frozenset({"accepted", "declined"}),
}
DECISIONS_BY_TOOL: dict[str, frozenset[str]] = {
    "commit_reorder": frozenset({"asked", "approved", "rejected", "refused"}),
}
_OTHER_TOOL_DECISIONS = frozenset({"allowed", "refused", "denied"})


def vocabulary_problems(record: TraceRecord) -> list[str]:
    if record.era == "local":
        allowed = LOCAL_DECISIONS.get(record.tool, frozenset())
    elif record.era in ("modern", "legacy"):
        allowed = DECISIONS_BY_TOOL.get(record.tool, _OTHER_TOOL_DECISIONS)
    else:
        return [f"era {record.era!r} is not one the stockroom records"]
    if record.decision not in allowed:
        return [f"decision {record.decision!r} is not one {record.era} record of {record.tool!r} can carry"]
    return []


def valid_lines(lines: Any, seed: dict[str, Any]) -> bool:
    return isinstance(lines, list) and bool(lines) and all(
        isinstance(line, dict) and isinstance(line.get("sku"), str) and line["sku"] in seed and isinstance(line.get("add_on_order"), int)
        and not isinstance(line.get("add_on_order"), bool) and line["add_on_order"] > 0 for line in lines)
