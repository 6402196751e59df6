"""SDK diff: what the installed ``mcp`` SDK really turns a raw result into, and what it lost.

``sdk_view`` decodes a raw result with the same steps, in the same order, as the SDK's own
``ClientSession`` (2.3.x): floor a negative ``ttlMs``, validate against the negotiated
revision's surface, drop fields of later revisions on an older session, parse the method's
result model, then what the method's call adds (``list_tools`` drops tools with invalid
``x-mcp-header`` on a modern session; ``discover`` validates ``DiscoverResult`` directly), and
dump it ``by_alias, mode="json", exclude_none``. It calls the SDK's own helpers for each step,
so a diff is measured on the installed SDK, not imagined. Extension result claims (e.g. a
client that registered the tasks extension) are not modelled: such results show as refused.
``compare_sdk_view`` walks both objects and reports dropped, synthesised and changed field
paths, separating bookkeeping (``resultType``, ``_meta``, ``ttlMs``, ``cacheScope``) from
semantic loss (anything else dropped or changed, e.g. ``futureHint``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from importlib import metadata
from typing import Any

from .versions import check_era, version_for_era

__all__ = ["sdk_view", "sdk_observe", "compare_sdk_view", "BOOKKEEPING_FIELDS", "sdk_identity"]

BOOKKEEPING_FIELDS: frozenset[str] = frozenset({"resultType", "_meta", "ttlMs", "cacheScope"})


def sdk_identity() -> dict[str, str]:
    """Name and installed version of the SDK the views come from."""
    return {"sdk": "mcp", "version": metadata.version("mcp"), "typesVersion": metadata.version("mcp-types")}


def sdk_view(raw: dict[str, Any], method: str = "tools/list", era: str = "modern", *, version: str | None = None) -> dict[str, Any]:
    """The result as the real ``mcp`` SDK client hands it to application code.

    ``version`` overrides the protocol version of the session (default: the era's newest).
    Raises whatever the SDK raises (``pydantic.ValidationError``, ``KeyError`` for a method
    it does not know).
    """
    import mcp_types as sdk_types
    from mcp.client.session import _clamp_inbound_ttl, _later_revision_fields
    from mcp.shared.inbound import find_invalid_x_mcp_header
    from mcp_types import methods
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    from pydantic import TypeAdapter

    protocol_version = version or version_for_era(check_era(era))
    if method not in methods.MONOLITH_RESULTS:
        raise KeyError(f"the mcp SDK has no result model for {method!r}")
    data = copy.deepcopy(raw)
    _clamp_inbound_ttl(data)
    if method == "server/discover":  # ClientSession.discover(): plain model_validate, no surface check
        model = sdk_types.DiscoverResult.model_validate(data)
        return model.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        methods.validate_server_result(method, protocol_version, data)
    except KeyError:  # the session skips surface validation for a (method, version) it has no row for
        pass
    foreign = _later_revision_fields(method, protocol_version)
    if not foreign.isdisjoint(data):
        data = {key: value for key, value in data.items() if key not in foreign}
    model = TypeAdapter(methods.MONOLITH_RESULTS[method]).validate_python(data, by_name=False)
    if method == "tools/list" and protocol_version in MODERN_PROTOCOL_VERSIONS:
        # ClientSession.list_tools(): 2026-07-28 clients drop tools with invalid x-mcp-header annotations.
        model.tools = [tool for tool in model.tools if find_invalid_x_mcp_header(tool.input_schema) is None]
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def sdk_observe(raw: dict[str, Any], method: str = "tools/list", era: str = "modern", *, version: str | None = None) -> dict[str, Any]:
    """Record the SDK's view or its exception as evidence (never raises for SDK refusals)."""
    record: dict[str, Any] = {**sdk_identity(), "method": method, "era": era, "protocolVersion": version or version_for_era(era)}
    try:
        record["view"] = sdk_view(raw, method, era, version=version)
        record["exception"] = None
    except Exception as exc:  # the SDK's refusal IS the observation
        record["view"] = None
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        record["exception"] = f"{type(exc).__name__}: {first_line}"
    return record


def _walk(raw: Any, view: Any, path: str, out: dict[str, list[str]]) -> None:
    if isinstance(raw, dict) and isinstance(view, dict):
        for key in raw:
            child = f"{path}.{key}" if path else key
            if key not in view:
                out["dropped"].append(child)
            else:
                _walk(raw[key], view[key], child, out)
        for key in view:
            if key not in raw:
                out["synthesised"].append(f"{path}.{key}" if path else key)
        return
    if isinstance(raw, list) and isinstance(view, list) and len(raw) == len(view):
        for index, (a, b) in enumerate(zip(raw, view)):
            _walk(a, b, f"{path}[{index}]", out)
        return
    if type(raw) is not type(view) or raw != view:
        out["changed"].append(path or "$")


def _top_field(path: str) -> str:
    return path.split(".", 1)[0].split("[", 1)[0]


def _is_bookkeeping(path: str) -> bool:
    """A top-level bookkeeping field, or anything inside ``_meta``."""
    return path in BOOKKEEPING_FIELDS or _top_field(path) == "_meta"


def compare_sdk_view(raw: Any, sdk_view: Any, allowed_drops: Iterable[str] = ()) -> dict[str, Any]:
    """Diff a raw result against the SDK's view of it.

    Returns ``dropped``, ``synthesised`` and ``changed`` field paths (``"futureHint"``,
    ``"tools[0].annotations"``); ``bookkeeping``: the dropped and synthesised paths that are
    bookkeeping (``resultType``, ``_meta``, ``ttlMs``, ``cacheScope``) and may be allowed;
    ``semanticLoss``: every other dropped path not in ``allowed_drops`` (a policy may let a
    component ignore a field, not let an SDK rewrite one) plus every CHANGED path (a changed
    value is never bookkeeping: ``ttlMs`` 1000 -> 0 or ``cacheScope`` private -> public changes
    meaning; a list of another length, e.g. a tool the SDK filtered, shows as its path);
    ``allowedDrops`` and ``ok`` (no semantic loss).
    """
    out: dict[str, list[str]] = {"dropped": [], "synthesised": [], "changed": []}
    _walk(raw, sdk_view, "", out)
    allowed = sorted(set(allowed_drops))
    bookkeeping = {kind: [p for p in out[kind] if _is_bookkeeping(p)] for kind in ("dropped", "synthesised")}
    loss = [p for p in out["dropped"] if not _is_bookkeeping(p) and p not in allowed] + out["changed"]
    return {**out, "bookkeeping": bookkeeping, "semanticLoss": loss, "allowedDrops": allowed, "ok": not loss}
