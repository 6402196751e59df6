"""Mutation score of the core modules: mutmut 3, one module at a time, each against its own fast unit tests.

Design: every module gets its own work directory ``.mutation/<name>/`` (a copy of ``mcplab/``, the
module's test files and a generated ``pyproject.toml`` whose ``[tool.mutmut]`` mutates that one
file), so mutmut's cache (``mutants/``) is per module and a re-run only tests what changed. Mutants
that cannot change behaviour are listed in ``mutation/equivalent.toml`` by module, function and the
changed lines (not by mutmut's number, which shifts when a function changes), each with its reason;
an entry that matches no surviving mutant (killed now, or its code changed) is reported as stale and fails the run.

Usage (slow: minutes per module; not part of the test command)::

    pip install -e ".[mutation]"
    python benchmarks/mutation.py                 # every core module, smallest first
    python benchmarks/mutation.py era results     # some modules
    python benchmarks/mutation.py --report        # print the table from the cache, run nothing
    python benchmarks/mutation.py era --survivors # also print each surviving mutant's diff
    python benchmarks/mutation.py release/gate    # a part of the release package (release/health, release/rollback)

Options: ``--max-children N`` (default 1) and ``--nice N`` (default 15) for a shared machine;
``--fresh`` drops a module's cache. Exit 1 when a module is below ``--target`` (default 90).
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutation"
EQUIVALENT_FILE = ROOT / "mutation" / "equivalent.toml"

#: module name -> (source file, its own fast unit tests: no servers, no notebooks). ``tests/core/test_<name>_*.py``
#: files are added to each module's list automatically. Listed smallest module first.
#: The case table and the recorded transcripts replayed through the validators: fast, in process.
_WIRE = ["tests/test_cases.py", "tests/test_transcript.py"]
_RELEASE = ["tests/test_release.py", "tests/test_attacks_release.py", "tests/core/test_release_pins.py"]
MODULES: dict[str, tuple[str, list[str]]] = {
    "sse": ("mcplab/sse.py", ["tests/test_sse.py"]),
    "versions": ("mcplab/versions.py", ["tests/test_cases.py"]),
    "evidence": ("mcplab/evidence.py", ["tests/test_evidence.py"]),
    "errors": ("mcplab/errors.py", ["tests/test_cases.py"]),
    "stockroom_gate": ("mcplab/stockroom/gate.py", ["tests/test_stockroom_rules.py"]),
    "sdkview": ("mcplab/sdkview.py", ["tests/test_sdkview.py"]),
    "era": ("mcplab/era.py", ["tests/test_era.py"]),
    "headers": ("mcplab/headers.py", ["tests/test_headers.py", *_WIRE]),
    "proxy_evidence": ("mcplab/proxy_evidence.py", ["tests/test_proxy_evidence.py"]),
    "responses": ("mcplab/responses.py", ["tests/test_responses.py", *_WIRE]),
    "results": ("mcplab/results.py", ["tests/test_results.py", *_WIRE]),
    "redaction": ("mcplab/redaction.py", ["tests/test_redaction.py"]),
    "requests": ("mcplab/requests.py", ["tests/test_requests.py", *_WIRE]),
    "stockroom_rules": ("mcplab/stockroom/rules.py", ["tests/test_stockroom_rules.py"]),
    # ``mcplab/release/`` is a package since issue 15: each part against the gate's fast tests and pins
    "release_health": ("mcplab/release/health.py", _RELEASE),
    "release_rollback": ("mcplab/release/rollback.py", _RELEASE),
    "release_gate": ("mcplab/release/gate.py", _RELEASE),
}
ALIASES = {"stockroom/gate": "stockroom_gate", "stockroom/rules": "stockroom_rules", "gate": "stockroom_gate", "rules": "stockroom_rules",
           "release/health": "release_health", "release/rollback": "release_rollback", "release/gate": "release_gate"}
#: Tests left out of a module's runs: too slow to repeat per mutant (the property test draws hundreds of evidence sets).
DESELECT = {name: ["tests/test_attacks_release.py::test_on_any_json_the_gate_blocks_or_raises_only_evidence_error"]
            for name in ("release_health", "release_rollback", "release_gate")}

KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def tests_of(name: str) -> list[str]:
    own = list(MODULES[name][1])
    own += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "core").glob(f"test_{name}_*.py") if str(p.relative_to(ROOT)) not in own)
    return own


def _sync_file(src: Path, dst: Path) -> None:
    """Copy only when the content differs, keeping mtimes, so mutmut's cache sees unchanged files as unchanged."""
    if dst.exists() and filecmp.cmp(src, dst, shallow=False):
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def _sync_tree(src: Path, dst: Path) -> None:
    wanted = set()
    for path in src.rglob("*"):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        rel = path.relative_to(src)
        wanted.add(rel)
        _sync_file(path, dst / rel)
    for path in list(dst.rglob("*")) if dst.exists() else []:
        if path.is_file() and "__pycache__" not in path.parts and path.relative_to(dst) not in wanted:
            path.unlink()


def prepare(name: str) -> Path:
    source, _ = MODULES[name]
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    _sync_tree(ROOT / "mcplab", work / "mcplab")
    if (work / "mutants" / "mcplab").is_dir():
        # mutmut regenerates changed .py files in its mutants/ copy but keeps data files (transcripts, schemas) it copied
        # once: a cache from older code would run the tests against old data
        for path in (ROOT / "mcplab").rglob("*"):
            if path.is_file() and path.suffix != ".py" and "__pycache__" not in path.parts:
                _sync_file(path, work / "mutants" / "mcplab" / path.relative_to(ROOT / "mcplab"))
    tests = tests_of(name)
    keep = {"tests/__init__.py", "tests/conftest.py", *tests}
    if (ROOT / "tests" / "core").is_dir():
        keep.add("tests/core/__init__.py")
    for rel in keep:
        if (ROOT / rel).exists():
            _sync_file(ROOT / rel, work / rel)
    for path in (work / "tests").rglob("*.py"):
        if str(path.relative_to(work)) not in keep:
            path.unlink()
    config = (
        "# generated by benchmarks/mutation.py: do not edit\n"
        "[tool.mutmut]\n"
        'source_paths = ["mcplab"]\n'
        f'only_mutate = ["{source}"]\n'
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        f'pytest_add_cli_args = {json.dumps(["-p", "no:cacheprovider", "-p", "no:nbval", "-q", *(a for d in DESELECT.get(name, []) for a in ("--deselect", d))])}\n'
        "use_git_change_detection = false\n"
        "\n[tool.pytest.ini_options]\n"
        'addopts = ""\n'
    )
    target = work / "pyproject.toml"
    if not target.exists() or target.read_text() != config:
        target.write_text(config)
    return work


def tests_fingerprint(name: str) -> str:
    digest = hashlib.sha256()
    for rel in ["tests/conftest.py", *tests_of(name)]:
        digest.update(rel.encode() + b"\0" + (ROOT / rel).read_bytes() + b"\0")
    digest.update(json.dumps(DESELECT.get(name, [])).encode())
    return digest.hexdigest()


_DUMP = r"""
import json, sys
from mutmut.mutation.data import SourceFileMutationData
from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files
out = {}
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    for key, code in data.exit_code_by_key.items():
        status = status_by_exit_code[code]
        diff = "" if status == "killed" else get_diff_for_mutant(key, path=path)
        out[key] = {"status": status, "diff": diff}
json.dump(out, sys.stdout)
"""


def dump(work: Path) -> dict[str, dict[str, str]]:
    if not (work / "mutants").is_dir():
        return {}
    done = subprocess.run([sys.executable, "-c", _DUMP], cwd=work, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"reading mutmut results in {work} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout or "{}")


def function_of(mutant: str) -> str:
    """``mcplab.era.x_select_era__mutmut_12`` -> ``select_era``; methods keep their class (``Cls.meth``)."""
    head = mutant.rsplit("__mutmut_", 1)[0]
    mangled = head.rsplit(".", 1)[-1]
    if mangled.startswith("x_"):
        return mangled[2:]
    if mangled.startswith("xǁ"):
        return mangled[2:].replace("ǁ", ".")
    return mangled


def change_of(diff: str) -> str:
    """The changed lines of a mutant's diff, stripped: the stable part of an equivalence key."""
    lines = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return "\n".join(line[0] + " " + line[1:].strip() for line in lines)


def load_equivalents() -> dict[tuple[str, str, str], str]:
    if not EQUIVALENT_FILE.exists():
        return {}
    try:
        data = tomllib.loads(EQUIVALENT_FILE.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SystemExit(f"{EQUIVALENT_FILE}: not valid TOML: {exc}") from None
    table: dict[tuple[str, str, str], str] = {}
    for i, entry in enumerate(data.get("equivalent", [])):
        missing = [k for k in ("module", "function", "change", "reason") if not str(entry.get(k, "")).strip()]
        if missing:
            raise SystemExit(f"{EQUIVALENT_FILE}: [[equivalent]] entry {i + 1} needs {', '.join(missing)}")
        change = "\n".join(line.strip()[0] + " " + line.strip()[1:].strip() for line in entry["change"].strip().splitlines())
        table[(entry["module"], entry["function"], change)] = entry["reason"]
    return table


@dataclass
class Tally:
    name: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    equivalent: int = 0
    not_run: int = 0
    survivors: list[tuple[str, str]] = field(default_factory=list)  # (mutant, "[status]\n" + diff)

    @property
    def score(self) -> float | None:
        judged = self.killed + self.survived
        return 100.0 * self.killed / judged if judged else None


def tally(name: str, results: dict[str, dict[str, str]], equivalents: dict[tuple[str, str, str], str],
          used: set[tuple[str, str, str]] | None = None) -> Tally:
    """Count one module's verdicts; ``used`` collects the equivalence keys that matched a survivor."""
    t = Tally(name)
    for mutant, info in sorted(results.items()):
        t.mutants += 1
        status = info["status"]
        if status in KILLED:
            t.killed += 1
        elif status == "not checked":
            t.not_run += 1
        elif (key := (name, function_of(mutant), change_of(info["diff"]))) in equivalents:
            t.equivalent += 1
            if used is not None:
                used.add(key)
        else:  # survived, no tests, suspicious, skipped
            t.survived += 1
            t.survivors.append((mutant, f"[{status}]\n{info['diff']}"))
    return t


def run_module(name: str, *, max_children: int, nice: int, fresh: bool) -> bool:
    """Run mutmut for one module; False when mutmut failed (its log says why, e.g. a failing clean test)."""
    work = WORK / name
    if fresh and work.exists():
        shutil.rmtree(work)
    work = prepare(name)
    stamp = work / "tests.sha256"
    fingerprint = tests_fingerprint(name)
    base = ["nice", "-n", str(nice), sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children)]
    log = work / "mutmut.log"
    print(f"[{name}] mutmut run (log: {log.relative_to(ROOT)})", flush=True)
    tests_changed = stamp.exists() and stamp.read_text() != fingerprint
    if tests_changed:
        # mutmut re-maps tests to functions only for NEW test names; a changed test body keeps its old mapping
        (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    ok = True
    with log.open("w") as out:
        ok = subprocess.run(base, cwd=work, stdout=out, stderr=subprocess.STDOUT, check=False).returncode == 0
        if ok and tests_changed:
            # The tests changed since the cached verdicts: mutmut keeps old verdicts, so re-try every non-killed mutant.
            retry = [m for m, info in dump(work).items() if info["status"] not in KILLED]
            for start in range(0, len(retry), 200):
                done = subprocess.run(base + retry[start:start + 200], cwd=work, stdout=out, stderr=subprocess.STDOUT, check=False)
                ok = ok and done.returncode == 0
    if ok:
        stamp.write_text(fingerprint)
    else:
        tail = log.read_text(errors="replace")[-1500:]
        print(f"[{name}] mutmut failed; the table shows older cached results. End of {log.relative_to(ROOT)}:\n{tail}", file=sys.stderr)
    return ok


def print_table(tallies: list[Tally]) -> None:
    print(f"{'module':<18}{'mutants':>8}{'killed':>8}{'survived':>9}{'equiv':>7}{'not run':>8}{'score':>8}")
    for t in tallies:
        score = "-" if t.score is None else f"{t.score:.1f}%"
        print(f"{t.name:<18}{t.mutants:>8}{t.killed:>8}{t.survived:>9}{t.equivalent:>7}{t.not_run:>8}{score:>8}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("modules", nargs="*", help=f"core modules (default: all): {', '.join(MODULES)}")
    parser.add_argument("--max-children", type=int, default=1, help="mutmut worker processes (default 1)")
    parser.add_argument("--nice", type=int, default=15, help="niceness of the mutmut runs (default 15)")
    parser.add_argument("--fresh", action="store_true", help="drop the cached results of the chosen modules first")
    parser.add_argument("--report", action="store_true", help="print the table from the cache; run nothing")
    parser.add_argument("--survivors", action="store_true", help="print the diff of every surviving mutant")
    parser.add_argument("--toml", action="store_true", help="print each survivor as an [[equivalent]] entry to fill in (no reason)")
    parser.add_argument("--target", type=float, default=90.0, help="minimum score per module, in percent (default 90)")
    args = parser.parse_args(argv)
    names = [ALIASES.get(m.removesuffix(".py").removeprefix("mcplab/"), m.removesuffix(".py").removeprefix("mcplab/")) for m in args.modules]
    unknown = [m for m in names if m not in MODULES]
    if unknown:
        print(f"unknown module(s) {', '.join(unknown)}; expected some of: {', '.join(MODULES)}", file=sys.stderr)
        return 2
    names = names or list(MODULES)
    equivalents = load_equivalents()
    tallies, failed = [], []
    used: set[tuple[str, str, str]] = set()
    for name in names:
        if not args.report and not run_module(name, max_children=args.max_children, nice=args.nice, fresh=args.fresh):
            failed.append(name)
        t = tally(name, dump(WORK / name), equivalents, used)
        tallies.append(t)
        if args.survivors:
            for mutant, diff in t.survivors:
                print(f"--- {mutant} ({function_of(mutant)}) {diff}\n")
        if args.toml:
            for mutant, diff in t.survivors:
                change = change_of(diff.split("\n", 1)[1])
                print(f'[[equivalent]]\nmodule = "{name}"\nfunction = "{function_of(mutant)}"\n'
                      f"change = '''\n{change}\n'''\nreason = \"\"\n")
        if not args.report:
            print_table([t])
    print()
    print_table(tallies)
    if failed:
        print(f"mutmut failed for: {', '.join(failed)}")
    # Baselines fail when stale: an entry that matches no surviving mutant (killed now, or the code changed) must go.
    stale = [key for key in equivalents if key[0] in names and key not in used and not any(t.not_run for t in tallies if t.name == key[0])]
    for module, function, change in stale:
        print(f"stale entry in {EQUIVALENT_FILE.relative_to(ROOT)}: {module} {function}: {change!r} matches no surviving mutant")
    low = [t.name for t in tallies if t.score is None or t.score < args.target or t.not_run or t.name in failed]
    if low:
        print(f"below {args.target:.0f}% or not fully run: {', '.join(low)}")
    return 1 if low or stale else 0


if __name__ == "__main__":
    sys.exit(main())
