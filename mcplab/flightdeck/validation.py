"""Static validation and preview of one proposed call: checked layer by layer, never invoked or queued.

Design: the layers run in a fixed order and each adds blockers with a stable ``code`` and its
``layer``: catalog (in the effective catalog, the caller's ``catalog_identity`` precondition),
bounds (arguments at most 32 levels deep and 64 KiB of canonical JSON, checked before any schema
work), schema (``jsonschema`` with the validator the descriptor's ``$schema`` names, Draft 2020-12 by
default, at most 20 errors, never fetching a remote ``$ref``, and never running a ``pattern`` that can
backtrack exponentially: such a pattern is listed in ``unchecked_patterns``, not evaluated), static policy, and the exact target read through a read-only
observation. ``static_request_blocked`` is true only for an explicit blocker; false says the
checked static layers passed, not that the call will succeed. A preview adds the profile's
predicted effects, marked ``prediction`` and never a receipt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice
from typing import Any

from .._schema import bounded, jsonschema, risky_pattern
from ..errors import EvidenceError
from ..evidence import canonical_json
from ..redaction import REDACTED, is_secret_key
from ..stockroom.rules import _depth_exceeds
from .catalog import EffectiveCatalog
from .profiles import UNPROVEN, digest_of

__all__ = ["MAX_ARGUMENT_DEPTH", "MAX_ARGUMENT_BYTES", "MAX_SCHEMA_BYTES", "MAX_SCHEMA_ERRORS", "bounds_blockers", "check_arguments",
           "validate_call", "preview_call", "schema_bounds"]

MAX_ARGUMENT_DEPTH = 32
MAX_ARGUMENT_BYTES = 64 * 1024
#: An input schema larger than this is not evaluated (a hostile server could send a huge one).
MAX_SCHEMA_BYTES = 256 * 1024
MAX_SCHEMA_ERRORS = 20
_MAX_MESSAGE = 200


def schema_bounds() -> dict[str, Any]:
    return {"max_argument_depth": MAX_ARGUMENT_DEPTH, "max_argument_bytes": MAX_ARGUMENT_BYTES,
            "max_schema_bytes": MAX_SCHEMA_BYTES, "max_schema_errors": MAX_SCHEMA_ERRORS,
            "default_dialect": "https://json-schema.org/draft/2020-12/schema"}


def _blocker(code: str, layer: str, message: str) -> dict[str, Any]:
    return {"code": code, "layer": layer, "message": message[:_MAX_MESSAGE * 2]}


def _path(error: Any) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)


def _message(error: Any) -> str:
    """The error's message, unless the value sits under a secret-named key: its messages quote the value."""
    if any(isinstance(part, str) and is_secret_key(part) for part in error.absolute_path):
        return f"{REDACTED} fails the schema's {error.validator!r} keyword"
    return error.message[:_MAX_MESSAGE]


def bounds_blockers(arguments: Any) -> tuple[list[dict[str, Any]], int | None]:
    """Blockers for arguments over the bounds (checked before anything else reads them) and their canonical size."""
    if _depth_exceeds(arguments, MAX_ARGUMENT_DEPTH):
        return [_blocker("arguments_too_deep", "bounds", f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels")], None
    try:
        size = len(canonical_json(arguments))
    except EvidenceError as exc:
        return [_blocker("arguments_not_json", "bounds", str(exc))], None
    if size > MAX_ARGUMENT_BYTES:
        return [_blocker("arguments_too_large", "bounds", f"arguments are {size} bytes, over {MAX_ARGUMENT_BYTES}")], size
    return [], size


def _patterns(schema: Any, budget: int = 10_000) -> Iterator[tuple[str, str]]:
    """``(keyword, regex)`` for the ``pattern`` values and ``patternProperties`` keys of a schema (a bounded walk)."""
    stack = [schema]
    while stack and budget > 0:
        node = stack.pop()
        budget -= 1
        if isinstance(node, dict):
            if isinstance(node.get("pattern"), str):
                yield "pattern", node["pattern"]
            if isinstance(node.get("patternProperties"), dict):
                yield from (("patternProperties", key) for key in node["patternProperties"] if isinstance(key, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def check_arguments(schema: Any, arguments: Any) -> dict[str, Any]:
    """The bounded JSON Schema check of ``arguments`` against ``schema``: ``{checked, valid, errors, blockers}``."""
    out: dict[str, Any] = {"checked": False, "valid": None, "errors": [], "blockers": []}
    out["blockers"], out["bytes"] = bounds_blockers(arguments)
    if out["blockers"]:
        return out
    if not isinstance(arguments, dict):
        out["blockers"].append(_blocker("arguments_not_object", "schema", f"arguments must be a JSON object, got {type(arguments).__name__}"))
        return out
    if not isinstance(schema, dict) or _depth_exceeds(schema, 64) or len(canonical_json(schema)) > MAX_SCHEMA_BYTES:
        out["blockers"].append(_blocker("descriptor_schema_unusable", "schema", "the descriptor's inputSchema is missing, "
                                        f"not an object, or over the bounds ({MAX_SCHEMA_BYTES} bytes, 64 levels)"))
        return out
    schemas = jsonschema()  # imported here: only a schema check pays for it (see mcplab._schema)
    from jsonschema_specifications import REGISTRY as metaschemas
    cls = schemas.validators.validator_for(schema, default=schemas.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except schemas.SchemaError as exc:
        out["blockers"].append(_blocker("descriptor_schema_invalid", "schema", f"the descriptor's inputSchema is invalid: {exc.message}"))
        return out
    risky = {(keyword, pattern[:200]) for keyword, pattern in _patterns(schema) if risky_pattern(pattern)}
    if risky:
        out["unchecked_patterns"] = sorted(pattern for _keyword, pattern in risky)
    if any(keyword == "patternProperties" for keyword, _pattern in risky):
        out["blockers"].append(_blocker("descriptor_schema_unusable", "schema", "a patternProperties key of the descriptor's "
                                        "inputSchema can backtrack exponentially; it is not run here"))
        return out
    try:
        # The registry holds only the dialects' own metaschemas and retrieves nothing: jsonschema's default would
        # fetch a remote $ref (any URL a server put in its descriptor).
        found = bounded(cls)(schema, registry=metaschemas).iter_errors(arguments)
        errors = sorted(islice(found, MAX_SCHEMA_ERRORS), key=lambda e: list(map(str, e.absolute_path)))
    except (RecursionError, Exception) as exc:  # noqa: BLE001 - an unresolvable or self-referencing $ref: nothing is fetched
        out["blockers"].append(_blocker("descriptor_schema_unusable", "schema",
                                        f"the descriptor's inputSchema cannot be evaluated here ({type(exc).__name__})"))
        return out
    out["checked"] = True
    out["valid"] = not errors
    out["errors"] = [{"path": _path(e), "message": _message(e)} for e in errors]
    if errors:
        out["blockers"].append(_blocker("invalid_arguments", "schema", f"{out['errors'][0]['path']}: {out['errors'][0]['message']}"))
    return out


def validate_call(catalog: EffectiveCatalog, name: Any, arguments: Any, *, catalog_identity: str | None = None,
                  observe: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """Every static layer for one proposed call (see the module docstring); ``observe`` reads the target."""
    name = name if isinstance(name, str) else str(name)
    arguments = {} if arguments is None else arguments
    blockers: list[dict[str, Any]] = []
    descriptor = catalog.tools.get(name)
    if descriptor is None:
        blockers.append(_blocker("not_in_catalog", "catalog", f"{name[:80]!r} is not in the effective catalog of this caller"))
    precondition = {"expected": catalog_identity, "current": catalog.identity,
                    "holds": None if catalog_identity is None else catalog_identity == catalog.identity}
    if precondition["holds"] is False:
        blockers.append(_blocker("catalog_changed", "catalog", "the effective catalog changed since the given catalog_identity"))
    policy = catalog.policy_of(name)
    if policy.get("denied"):
        blockers.append(_blocker("denied_by_policy", "policy", f"{name[:80]!r} is denied by the server's static policy "
                                 f"({catalog.profile.name})"))
    if descriptor is not None:
        schema = check_arguments(descriptor.get("inputSchema"), arguments)
    else:
        bounds, size = bounds_blockers(arguments)
        schema = {"checked": False, "valid": None, "errors": [], "blockers": bounds, "bytes": size}
    blockers.extend(schema.pop("blockers"))
    if descriptor is not None and schema["valid"]:
        # a known server may be stricter than its schema (the stockroom takes 1, not 1.0, for an integer)
        for problem in catalog.profile.argument_problems(name, arguments):
            blockers.append(_blocker("invalid_arguments", "schema", f"the server's own rules: {problem}"))
            schema["valid"] = False
    bounded = not any(b["layer"] == "bounds" for b in blockers)
    target = {"target_scoped": bool(policy.get("target_kind")), "checked": False, "ready": None, "blockers": [], "identity": None}
    if descriptor is not None and schema["valid"]:
        try:
            target = catalog.profile.target_check(name, arguments, observe() if policy.get("target_kind") else None)
        except (KeyError, TypeError, AttributeError) as exc:
            target = {**target, "blockers": [_blocker("target_unreadable", "target", f"the target could not be read: {exc!r}")]}
        blockers.extend(target["blockers"])
    arguments_digest = digest_of(arguments) if bounded else None
    result = {
        "tool": name, "era": catalog.era, "catalog_identity": catalog.identity, "catalog_precondition": precondition,
        "in_effective_catalog": descriptor is not None, "arguments_digest": arguments_digest, "schema": schema,
        "policy": policy, "target": {k: v for k, v in target.items() if k != "blockers"},
        "blockers": blockers, "static_request_blocked": bool(blockers),
        "approval_required": policy.get("approval_required"),
        "unproven": {"consent": UNPROVEN, "downstream_availability": UNPROVEN, "outcome": UNPROVEN},
        "invoked": False, "queued": False,
    }
    result["validation_fingerprint"] = digest_of({k: result[k] for k in ("tool", "in_effective_catalog", "schema", "policy", "target")}
                                                 | {"blockers": [b["code"] for b in blockers], "arguments": arguments_digest})
    return result


def preview_call(catalog: EffectiveCatalog, name: Any, arguments: Any, *, catalog_identity: str | None = None,
                 observe: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """:func:`validate_call` plus the predicted effects (a prediction, not a receipt); nothing is invoked."""
    observe = once(observe)
    result = validate_call(catalog, name, arguments, catalog_identity=catalog_identity, observe=observe)
    effects = None
    if result["in_effective_catalog"] and not any(b["layer"] in ("bounds", "schema") for b in result["blockers"]):
        observation = observe() if catalog.profile.observes_target else None
        try:
            effects = catalog.profile.predicted_effects(result["tool"], arguments, result["policy"], catalog.era, observation)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:  # arguments the profile's model cannot read
            effects = {"state_change": UNPROVEN, "why": f"no prediction for these arguments ({type(exc).__name__})"}
    result["preview"] = {"prediction": True, "receipt": False, "effects": effects,
                         "postcondition": catalog.profile.postcondition_plan(result["tool"], result["policy"]),
                         "note": "what the call is expected to affect; only the postcondition read after a real call is proof"}
    return result


def once(observe: Callable[[], Any]) -> Callable[[], Any]:
    """``observe`` read at most once (one consistent observation per operation)."""
    box: list[Any] = []

    def read() -> Any:
        if not box:
            box.append(observe())
        return box[0]
    return read
