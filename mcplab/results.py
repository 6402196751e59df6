"""Result validation: the era decides what a missing ``resultType`` means, then the method payload.

Modern (2026-07-28) results must carry ``resultType``; legacy (2025-11-25) results may omit
it and then mean ``complete``, but only once the legacy era was chosen: there is no single
permissive validator for both shapes. Unknown *fields* are additive and kept; an unknown
``resultType`` is rejected. ``task`` is valid only when the tasks extension was advertised.
A well-typed ``resultType`` never rescues a malformed method payload. ``ttlMs``/``cacheScope``
are type-checked when present; when absent a client treats them as 0/private, so they are
not required here. Rules the specification only advises (SHOULD) or the course adds go through
``mcplab.cases.enforced``: enforced by default (the labs), waived inside ``spec_rules_only``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from .cases import enforced
from .errors import INVALID_PARAMS, ProtocolViolation, nesting_is_a_violation
from .jsonvalue import is_json_integer, is_json_number, short_repr
from .versions import TASKS_EXTENSION, check_era

__all__ = [
    "validate_result",
    "BASE_RESULT_TYPES",
    "INPUT_REQUIRED_METHODS",
    "INPUT_REQUEST_METHODS",
    "TASK_STATUSES",
    "MAX_COMPLETION_VALUES",
    "tasks_advertised",
]

BASE_RESULT_TYPES: tuple[str, ...] = ("complete", "input_required")
#: The only methods a server may answer with ``input_required`` (MRTR).
INPUT_REQUIRED_METHODS: frozenset[str] = frozenset({"tools/call", "prompts/get", "resources/read"})
#: Requests a server may embed in ``inputRequests``.
INPUT_REQUEST_METHODS: frozenset[str] = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
TASK_STATUSES: frozenset[str] = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
MAX_COMPLETION_VALUES = 100


def _fail(case: str, message: str) -> ProtocolViolation:
    return ProtocolViolation(message, code=INVALID_PARAMS, case=case)


def tasks_advertised(capabilities: Mapping[str, Any] | None) -> bool:
    """True when 2026-07-28 server capabilities advertise the tasks extension.

    Only ``capabilities.extensions["io.modelcontextprotocol/tasks"]`` counts: the 2025-11-25
    top-level ``tasks`` key is not part of the 2026-07-28 capabilities.
    """
    if capabilities is None:
        return False
    if not isinstance(capabilities, Mapping):
        raise TypeError(f"capabilities must be a mapping of server capabilities, got {type(capabilities).__name__}")
    extensions = capabilities.get("extensions")
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def _check_cache_fields(result: dict[str, Any]) -> None:
    if "ttlMs" in result and not is_json_integer(result["ttlMs"]):
        raise _fail("negative-cache-fields", f"ttlMs must be an integer, got {short_repr(result['ttlMs'])}")
    if "cacheScope" in result and result["cacheScope"] not in ("public", "private"):
        raise _fail("negative-cache-fields", f'cacheScope must be "public" or "private", got {short_repr(result["cacheScope"])}')


def _tools_list(result: dict[str, Any], era: str) -> None:
    tools = result.get("tools")
    if not isinstance(tools, list):
        raise _fail("negative-tools-list-payload", "tools/list result needs a tools array")
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _fail("negative-tools-list-payload", f"tools[{index}] must be an object")
        name = tool.get("name")
        if not isinstance(name, str):
            raise _fail("negative-tools-list-payload", f"tools[{index}].name must be a string")
        if not name and enforced("should-tool-names", f"tools[{index}].name is empty"):
            raise _fail("negative-tools-list-payload", f"tools[{index}].name must be a non-empty string")
        if name in seen and enforced("should-tool-names", f"tool name {name!r} appears twice"):
            raise _fail("negative-tools-list-payload", f"tool name {name!r} appears twice")
        seen.add(name)
        description = tool.get("description")
        if "description" in tool and not isinstance(description, str):
            raise _fail("negative-tools-list-payload", f"tool {name!r}: description must be a string")
        if (not isinstance(description, str) or not description.strip()) and enforced(
                "course-tool-description", f"tool {name!r} has no useful description"):
            raise _fail("negative-tools-list-payload", f"tool {name!r} needs a useful (non-empty) description")
        schema = tool.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise _fail("negative-tools-list-payload", f'tool {name!r} needs an inputSchema object with type "object"')
    if "nextCursor" in result and not isinstance(result["nextCursor"], str):
        raise _fail("negative-tools-list-payload", "nextCursor must be a string")


def _tools_call(result: dict[str, Any], era: str) -> None:
    content = result.get("content")
    if not isinstance(content, list):
        raise _fail("negative-tools-call-payload", "tools/call result needs a content array")
    for index, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _fail("negative-tools-call-payload", f"content[{index}] must be an object with a string type")
    if "isError" in result and not isinstance(result["isError"], bool):
        raise _fail("negative-tools-call-payload", "isError must be a boolean")
    # 2026-07-28 allows any JSON value (server/tools.mdx § Structured Content); 2025-11-25's schema an object
    if era == "legacy" and "structuredContent" in result and not isinstance(result["structuredContent"], dict):
        raise _fail("negative-tools-call-payload", "structuredContent must be an object in 2025-11-25")


def _completion(result: dict[str, Any], era: str) -> None:
    completion = result.get("completion")
    if not isinstance(completion, dict):
        raise _fail("negative-completion-payload", "completion/complete result needs a completion object")
    values = completion.get("values")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise _fail("negative-completion-payload", "completion.values must be an array of strings")
    if len(values) > MAX_COMPLETION_VALUES:
        raise _fail(
            "negative-completion-payload",
            f"completion.values holds {len(values)} values; at most {MAX_COMPLETION_VALUES} are allowed",
        )
    if "total" in completion:
        total = completion["total"]
        if not is_json_integer(total) or total < 0:
            raise _fail("negative-completion-payload", f"completion.total must be a non-negative integer, got {short_repr(total)}")
        if total < len(values):
            raise _fail(
                "negative-completion-payload", f"completion.total {total} is smaller than the {len(values)} values sent"
            )
    if "hasMore" in completion and not isinstance(completion["hasMore"], bool):
        raise _fail("negative-completion-payload", f"completion.hasMore must be a boolean, got {short_repr(completion['hasMore'])}")


def _discover(result: dict[str, Any], era: str) -> None:
    versions = result.get("supportedVersions")
    if not isinstance(versions, list) or not versions or not all(isinstance(v, str) for v in versions):
        raise _fail("negative-discover-payload", "server/discover result needs a non-empty supportedVersions array")
    if not isinstance(result.get("capabilities"), dict):
        raise _fail("negative-discover-payload", "server/discover result needs a capabilities object")


_COMPLETE_PAYLOADS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "tools/list": _tools_list,
    "tools/call": _tools_call,
    "completion/complete": _completion,
    "server/discover": _discover,
}


def _input_required(result: dict[str, Any], method: str) -> None:
    if method not in INPUT_REQUIRED_METHODS:
        raise _fail(
            "negative-input-required-misplaced",
            f"{method} may not answer input_required (only {', '.join(sorted(INPUT_REQUIRED_METHODS))})",
        )
    requests = result.get("inputRequests")
    state = result.get("requestState")
    if not requests and state is None:
        raise _fail("negative-input-required-payload", "input_required needs at least one input request or a requestState")
    if state is not None and not isinstance(state, str):
        raise _fail("negative-input-required-payload", "requestState must be a string")
    if requests is not None:
        if not isinstance(requests, dict):
            raise _fail("negative-input-required-payload", "inputRequests must be an object")
        for key, request in requests.items():
            if not isinstance(request, dict) or not isinstance(request.get("method"), str) \
                    or request["method"] not in INPUT_REQUEST_METHODS:
                raise _fail(
                    "negative-input-required-payload",
                    f"inputRequests[{key!r}] must be an object whose method is one of "
                    f"{', '.join(sorted(INPUT_REQUEST_METHODS))}",
                )
            if "params" in request and not isinstance(request["params"], dict):
                raise _fail("negative-input-required-payload", f"inputRequests[{key!r}].params must be an object")


def _iso8601(value: Any) -> bool:
    if not isinstance(value, str) or "T" not in value:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _task(result: dict[str, Any], method: str) -> None:
    if method != "tools/call":
        raise _fail("negative-task-payload", f"{method} cannot create a task (only tools/call)")
    task_id = result.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise _fail("negative-task-payload", "task result needs a non-empty taskId")
    if not isinstance(result.get("status"), str) or result["status"] not in TASK_STATUSES:
        raise _fail(
            "negative-task-payload",
            f"task status {short_repr(result.get('status'))} is not one of {', '.join(sorted(TASK_STATUSES))}",
        )
    for key in ("createdAt", "lastUpdatedAt"):
        if not _iso8601(result.get(key)):
            raise _fail("negative-task-payload", f"task {key} must be an ISO 8601 timestamp, got {short_repr(result.get(key))}")
    if "ttlMs" not in result or not (result["ttlMs"] is None or (is_json_number(result["ttlMs"]) and result["ttlMs"] >= 0)):
        raise _fail("negative-task-payload", "task result needs ttlMs: a non-negative number or null")
    if "pollIntervalMs" in result and not (is_json_number(result["pollIntervalMs"]) and result["pollIntervalMs"] > 0):
        raise _fail("negative-task-payload", "pollIntervalMs must be a positive number")
    if "statusMessage" in result and not isinstance(result["statusMessage"], str):
        raise _fail("negative-task-payload", "statusMessage must be a string")


@nesting_is_a_violation("negative-result-shape", INVALID_PARAMS)
def validate_result(
    result: Any,
    era: str,
    method: str = "tools/list",
    capabilities: Mapping[str, Any] | None = None,
) -> str:
    """Validate a result object for ``method`` in ``era``; return the effective ``resultType``.

    ``capabilities`` are the server capabilities advertised for this exchange (needed for
    the ``task`` extension value). The result is not modified: unknown additive fields stay.
    Raises ``ProtocolViolation`` (client boundary) naming the broken rule.
    """
    check_era(era)
    if capabilities is not None and not isinstance(capabilities, Mapping):
        raise TypeError(f"capabilities must be a mapping of server capabilities, got {type(capabilities).__name__}")
    if not isinstance(result, dict):
        raise _fail("negative-result-shape", f"a result must be a JSON object, got {type(result).__name__}")
    if "_meta" in result and not isinstance(result["_meta"], dict):
        raise _fail("negative-result-shape", "result _meta must be an object")
    if "resultType" in result:
        result_type = result["resultType"]
    elif era == "legacy":
        result_type = "complete"
    else:
        raise _fail(
            "negative-modern-missing-result-type",
            "a 2026-07-28 result must carry resultType (absent means complete only in the legacy era)",
        )
    if result_type == "task":
        if era != "modern" or not tasks_advertised(capabilities):
            raise _fail(
                "negative-unadvertised-extension",
                f'resultType "task" needs the {TASKS_EXTENSION} extension advertised for this exchange',
            )
        _task(result, method)
        return result_type
    if result_type not in BASE_RESULT_TYPES or (era == "legacy" and result_type != "complete"):
        raise _fail("negative-unknown-result-type", f"resultType {short_repr(result_type)} is not known in the {era} era")
    if result_type == "input_required":
        _input_required(result, method)
        return result_type
    _check_cache_fields(result)
    payload = _COMPLETE_PAYLOADS.get(method)
    if payload is not None:
        payload(result, era)
    return result_type
