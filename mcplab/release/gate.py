"""The gate: promote, roll back or halt, from raw evidence judged here and signed rollback targets.

Design: the gate recomputes every verdict from raw evidence with the core's own functions (SDK
diffs from ``{raw, view}``, proxy findings from captures, the health window from samples) and
binds transcript evidence to the whole suite it knows by that suite's digest; on any JSON it
returns blocking reasons or raises :class:`~mcplab.errors.EvidenceError`, never another error.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..cases import CASES
from ..errors import EvidenceError
from ..jsonvalue import is_json_integer, same_json_value, short_repr
from ..proxy_evidence import proxy_findings
from ..sdkview import compare_sdk_view
from .health import HealthPolicy, evaluate_health
from .rollback import DEFAULT_MAX_VALIDITY, _aware_now, rollback_evidence_problems, suite_digest

__all__ = ["ReleasePolicy", "ReleaseGate"]


@dataclass(frozen=True)
class ReleasePolicy:
    """What the gate accepts.

    ``health``: thresholds for health windows. ``allowed_drops``: SDK semantic-loss field paths
    the component is declared free to ignore (exact match). ``trusted_signers``: release
    controller identity -> HMAC key for rollback certificates. ``suite``: the verdict keys
    (``name`` or ``name.variant``) the transcript evidence must cover, every one exactly once
    (``None``: the shipped suite, :func:`~mcplab.transcript.load_transcripts`). ``max_validity``:
    the longest rollback-evidence validity window. ``verify_sdk_views``: re-observe every SDK
    record that names the installed SDK and block a view the SDK does not produce (off by default
    because the course's what-if evidence, lab D's "the SDK kept futureHint", is declared, not observed).
    """

    health: HealthPolicy = HealthPolicy()
    allowed_drops: tuple[str, ...] = ()
    trusted_signers: Mapping[str, bytes] = field(default_factory=dict)
    suite: tuple[str, ...] | None = None
    max_validity: timedelta = DEFAULT_MAX_VALIDITY
    verify_sdk_views: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed_drops", tuple(self.allowed_drops))
        if self.suite is not None:
            object.__setattr__(self, "suite", tuple(self.suite))
            if not self.suite or not all(isinstance(key, str) and key for key in self.suite):
                raise ValueError("suite must be a non-empty list of verdict keys ('name' or 'name.variant')")
        if not isinstance(self.max_validity, timedelta) or self.max_validity <= timedelta(0):
            raise ValueError("max_validity must be a positive timedelta")
        if not all(isinstance(path, str) for path in self.allowed_drops):
            raise ValueError("allowed_drops must be field path strings")
        for signer, key in self.trusted_signers.items():
            if not isinstance(signer, str) or not signer or not isinstance(key, (bytes, bytearray)) or not key:
                raise ValueError(f"trusted_signers maps a signer name to a non-empty bytes key; got {short_repr(signer)} -> {type(key).__name__}")


def _label(item: Mapping[str, Any], index: int) -> str:
    label = item.get("name") or item.get("label")
    return label if isinstance(label, str) and label else f"#{index}"


def _guarded(source: str, check: Callable[..., Any], *args: Any, shape: Callable[[str], Any] = lambda r: [r]) -> Any:
    """Run one evidence check; evidence nested too deeply to judge becomes a blocking reason."""
    try:
        return check(*args)
    except RecursionError:
        return shape(f"{source} evidence is nested too deeply to judge")


def _evidence_list(value: Any) -> list[Any] | None:
    """A non-empty list of evidence entries, or ``None`` (missing or empty evidence never passes)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        return None
    return list(value)


def _rollback_targets(rollback: Any) -> list[Any]:
    """The offered targets in order: one evidence object, a list of them, or none (``[None]``)."""
    if isinstance(rollback, (list, tuple)):
        return list(rollback) or [None]
    return [rollback]


#: Fields :func:`~mcplab.sdkview.sdk_observe` records beside the view: which SDK saw which result how.
_OBSERVATION_FIELDS = ("sdk", "version", "method", "era")


def _hollow_observation(item: Mapping[str, Any]) -> str | None:
    """Why an SDK record cannot be an observation, or ``None``.

    A result the SDK saw is a non-empty object; the SDK answered either a non-empty view or an
    exception it raised (``{"raw": {}, "view": {}}`` records nothing). Identity fields, when
    present, are strings.
    """
    if not item["raw"]:
        return "the raw result is empty"
    view = item["view"]
    if view is None:
        exception = item.get("exception")
        return None if isinstance(exception, str) and exception.strip() else "no view and no exception recorded"
    if not isinstance(view, dict) or not view:
        return "the SDK's view must be a non-empty object, or null with the exception it raised"
    bad = [name for name in _OBSERVATION_FIELDS if name in item and not isinstance(item[name], str)]
    return f"{', '.join(bad)} must be strings" if bad else None


def _reobserved_mismatch(item: Mapping[str, Any]) -> str | None:
    """Run the installed SDK on the raw result again; a recorded view it does not produce is not evidence."""
    from ..sdkview import sdk_identity, sdk_observe

    identity = sdk_identity()
    missing = [name for name in _OBSERVATION_FIELDS if not isinstance(item.get(name), str)]
    if missing:
        return f"names no SDK observation ({', '.join(missing)} missing): record it with sdk_observe"
    if item["sdk"] != identity["sdk"] or item["version"] != identity["version"]:
        return (f"recorded with {short_repr(item['sdk'])} {short_repr(item['version'])}; the installed SDK "
                f"({identity['sdk']} {identity['version']}) cannot re-observe it")
    if item["era"] not in ("modern", "legacy"):
        return f"era {short_repr(item['era'])} is not modern or legacy"
    version = item.get("protocolVersion") if isinstance(item.get("protocolVersion"), str) else None
    again = sdk_observe(copy.deepcopy(item["raw"]), item["method"], item["era"], version=version)
    if not same_json_value(again["view"], item["view"]):
        return "the view differs from what the installed SDK produces when re-observed"
    return None


def _observed_streams(health: Any) -> bool:
    """True when signed health metrics record at least one streamed sample."""
    metrics = health.get("metrics") if isinstance(health, Mapping) else None
    stream = metrics.get("stream") if isinstance(metrics, Mapping) else None
    samples = stream.get("samples") if isinstance(stream, Mapping) else None
    return is_json_integer(samples) and samples > 0


class ReleaseGate:
    """Decide promote / rollback / halt from candidate evidence and one or more rollback targets.

    The gate judges raw evidence itself with the same core functions as everything else: the
    SDK diff is recomputed from each ``{raw, view}`` pair with the policy's allowed drops, and
    proxy findings from each ``{ingress, origin, egress}`` capture, so a hand-written "no
    issues" summary is not evidence.
    """

    def __init__(self, policy: ReleasePolicy) -> None:
        self.policy = policy
        if policy.suite is None:
            from ..transcript import load_transcripts  # the transcript layer sits beside the gate

            keys: tuple[str, ...] = tuple(t.key for t in load_transcripts())
        else:
            keys = policy.suite
        #: The verdict keys transcript evidence must cover, and the digest that names them.
        self.suite_keys = frozenset(keys)
        self.suite_digest = suite_digest(list(self.suite_keys))

    def evaluate(
        self,
        *,
        transcripts: Sequence[Mapping[str, Any]],
        sdk_evidence: Sequence[Mapping[str, Any]],
        proxy_captures: Sequence[Mapping[str, Any]],
        health_samples: Sequence[Mapping[str, Any]] | None,
        rollback: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
        health_baseline: Mapping[str, Any] | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Decide on a candidate.

        ``transcripts``: verdicts ``{name, variant?, passed}`` (``TranscriptResult.to_dict()``;
        names must be known cases, each verdict once); ``sdk_evidence``: ``{raw, view, label?,
        exception?}`` per high-risk result (``view`` is ``None`` when the SDK refused it);
        ``proxy_captures``: ``{ingress, origin, egress, label?}``; ``health_samples``: the raw
        health window, judged here with ``policy.health`` (and ``health_baseline``);
        ``rollback``: signed rollback evidence, a list of them (candidate targets in order of
        preference) or ``None``; ``now``: the decision time for the rollback evidence's
        validity window (default: current UTC time).

        The gate rolls back only to the FIRST target whose evidence is complete and verified.
        When the candidate's stream regressed (a ``streamFindings`` entry in its health), a
        target is complete only if its signed ``health.metrics.stream`` shows streams were
        observed: a window that never saw a stream cannot prove the stream works there.

        Returns ``{"action", "reasons", "candidatePassed", "health", "rollbackReady",
        "rollbackProblems", "rollbackTarget", "rollbackCandidates", "sdkDiffs", "proxyFindings",
        "allowedDrops", "unusedAllowedDrops"}``. ``action`` is ``"promote"`` (candidate passes,
        rollback proven), ``"rollback"`` (candidate fails, rollback proven) or ``"halt"``
        (rollback not proven: never guess). ``rollbackTarget`` is ``{"index", "version"}`` of the
        chosen target or ``None``; ``rollbackCandidates`` has ``{"index", "version", "ready",
        "problems"}`` for every offered target (why each was rejected); ``rollbackProblems`` is
        empty when a target was chosen, else every target's problems (prefixed ``target #i:``
        when several were offered). ``allowedDrops`` are the policy's drops some diff actually
        showed; ``unusedAllowedDrops`` the rest (a stale excuse to remove; reported, not blocking).
        """
        now = _aware_now(now)
        reasons = _guarded("transcript", self._transcript_reasons, transcripts)
        sdk_reasons, diffs, tolerated = _guarded("SDK", self._sdk_reasons, sdk_evidence, shape=lambda r: ([r], [], set()))
        proxy_reasons, findings = _guarded("proxy", self._proxy_reasons, proxy_captures, shape=lambda r: ([r], []))
        health_reasons, health = _guarded(
            "health", self._health_reasons, health_samples, health_baseline, shape=lambda r: ([r], None)
        )
        reasons += sdk_reasons + proxy_reasons + health_reasons
        candidate_passed = not reasons

        stream_regressed = bool(health and health["streamFindings"])
        candidates = [self._judge_target(index, target, now, stream_regressed)
                      for index, target in enumerate(_rollback_targets(rollback))]
        chosen = next((c for c in candidates if c["ready"]), None)
        rollback_ready = chosen is not None
        if chosen is not None:
            rollback_problems: list[str] = []
        elif len(candidates) == 1:
            rollback_problems = list(candidates[0]["problems"])
        else:
            rollback_problems = [f"target #{c['index']}: {p}" for c in candidates for p in c["problems"]]
        if rollback_ready:
            action = "promote" if candidate_passed else "rollback"
        else:
            action = "halt"
            if candidate_passed:
                reasons.append("rollback target not proven: verify rollback evidence before promotion")
            else:
                reasons.append("rollback target not proven: halting traffic instead of guessing")
        return {
            "action": action,
            "reasons": reasons,
            "candidatePassed": candidate_passed,
            "health": health,
            "rollbackReady": rollback_ready,
            "rollbackProblems": rollback_problems,
            "rollbackTarget": {"index": chosen["index"], "version": chosen["version"]} if chosen else None,
            "rollbackCandidates": candidates,
            "sdkDiffs": diffs,
            "proxyFindings": findings,
            "allowedDrops": sorted(tolerated),
            "unusedAllowedDrops": sorted(set(self.policy.allowed_drops) - tolerated),
            "suiteDigest": self.suite_digest,
        }

    def _judge_target(self, index: int, target: Any, now: datetime | None, stream_regressed: bool) -> dict[str, Any]:
        problems = _guarded("rollback", lambda: rollback_evidence_problems(
            target, self.policy.trusted_signers, now, max_validity=self.policy.max_validity,
            suite=(self.suite_digest, len(self.suite_keys))))
        if stream_regressed and isinstance(target, Mapping) and not _observed_streams(target.get("health")):
            problems.append("health.metrics.stream: the candidate's stream regressed and this target's signed "
                            "health never observed a stream")
        version = target.get("version") if isinstance(target, Mapping) else None
        return {"index": index, "version": version if isinstance(version, str) else None,
                "ready": not problems, "problems": problems}

    def _transcript_reasons(self, transcripts: Any) -> list[str]:
        """Well-formed verdicts, each once, covering exactly the suite the gate knows (bound by its digest)."""
        items = _evidence_list(transcripts)
        if items is None:
            return ["no transcript evidence"]
        reasons: list[str] = []
        failed: list[str] = []
        seen: set[str] = set()
        for index, item in enumerate(items):
            variant = item.get("variant") if isinstance(item, Mapping) else None
            if (
                not isinstance(item, Mapping)
                or not isinstance(item.get("name"), str)
                or item["name"] not in CASES
                or not (variant is None or (isinstance(variant, str) and variant))
                or not isinstance(item.get("passed"), bool)
            ):
                reasons.append(f"transcript #{index}: malformed evidence (needs a known case 'name', an optional "
                               "string 'variant' and a boolean 'passed')")
                continue
            key = f"{item['name']}.{variant}" if variant else item["name"]
            if key in seen:
                reasons.append(f"transcript {key}: the same verdict appears twice")
            seen.add(key)
            if key not in self.suite_keys:
                reasons.append(f"transcript {key}: not a verdict of suite {self.suite_digest[:12]}")
            if item["passed"] is not True:
                failed.append(_label(item, index))
        missing = sorted(self.suite_keys - seen)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            reasons.append(f"transcript evidence covers {len(self.suite_keys & seen)} of {len(self.suite_keys)} "
                           f"verdicts of suite {self.suite_digest[:12]}; missing: {shown}")
        if failed:
            reasons.insert(0, f"transcripts failed: {', '.join(failed)}")
        return reasons

    def _sdk_reasons(self, sdk_evidence: Any) -> tuple[list[str], list[dict[str, Any]], set[str]]:
        items = _evidence_list(sdk_evidence)
        if items is None:
            return ["no SDK-diff evidence"], [], set()
        reasons: list[str] = []
        diffs: list[dict[str, Any]] = []
        tolerated: set[str] = set()
        allowed = self.policy.allowed_drops
        for index, item in enumerate(items):
            if not isinstance(item, Mapping) or not isinstance(item.get("raw"), dict) or "view" not in item:
                reasons.append(f"SDK evidence #{index}: malformed (needs the raw result and the SDK's view)")
                continue
            label = _label(item, index)
            hollow = _hollow_observation(item)
            if hollow:
                reasons.append(f"SDK evidence {label}: not an observation ({hollow})")
                continue
            if self.policy.verify_sdk_views and (mismatch := _reobserved_mismatch(item)):
                reasons.append(f"SDK evidence {label}: {mismatch}")
                continue
            if item["view"] is None:
                reasons.append(f"SDK evidence {label}: the SDK refused the result ({item['exception'][:200]})")
                continue
            diff = compare_sdk_view(item["raw"], item["view"], allowed_drops=allowed)
            diffs.append({"label": label, **diff})
            tolerated |= set(allowed) & set(diff["dropped"] + diff["changed"])
            reasons.extend(f"SDK diff {label}: semantic loss of {short_repr(path)} not allowed by policy" for path in diff["semanticLoss"])
        return reasons, diffs, tolerated

    @staticmethod
    def _proxy_reasons(proxy_captures: Any) -> tuple[list[str], list[dict[str, Any]]]:
        items = _evidence_list(proxy_captures)
        if items is None:
            return ["no proxy evidence"], []
        reasons: list[str] = []
        found: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                reasons.append(f"proxy capture #{index}: malformed (needs ingress, origin and egress)")
                continue
            try:
                findings = proxy_findings(item.get("ingress"), item.get("origin"), item.get("egress"))
            except EvidenceError as exc:
                reasons.append(f"proxy capture {_label(item, index)}: malformed evidence: {exc}")
                continue
            found.extend({"label": _label(item, index), **f} for f in findings)
            reasons.extend(f"proxy issue: {f['message']}" for f in findings)
        return reasons, found

    def _health_reasons(self, samples: Any, baseline: Any) -> tuple[list[str], dict[str, Any] | None]:
        if samples is None:
            return ["no health evidence"], None
        try:
            health = evaluate_health(samples, self.policy.health, baseline)
        except EvidenceError as exc:
            return [f"health window: malformed evidence: {exc}"], None
        if health["healthy"] is True:
            return [], health
        return [f"health window not healthy: {'; '.join(health['reasons'])}"], health
