"""Start-up figures: what each lab's setup cell imports, and short ``mcplab`` commands, in fresh processes.

    python benchmarks/startup.py [--runs 5]

For every lab notebook under ``graders/source`` (read, never changed) the import statements of all
its code cells (the setup cell's and the few other cells') are run in a fresh interpreter; so are ``mcplab check`` against an
unreachable URL (port 9 on loopback: nothing listens) and ``mcplab cases``. Prints the best wall
and CPU seconds of ``--runs`` (the interpreter's own start included) against the targets of issue 18.
"""

from __future__ import annotations

import argparse
import ast
import json
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Targets in seconds (issue 18).
SETUP_TARGET, CHECK_TARGET = 1.0, 0.3
UNREACHABLE = "http://127.0.0.1:9/mcp"


@dataclass
class Figure:
    name: str
    wall: float
    cpu: float
    target: float | None

    @property
    def ok(self) -> bool | None:
        return None if self.target is None else self.wall <= self.target


def setup_imports(notebook: Path) -> str:
    """Every import statement at the top level of the notebook's code cells, in order (magics skipped).

    The setup cell imports most of it, but not all: the "Where am I" cell above it imports the
    course helpers, and later cells may import more. The figure is what the whole lab imports.
    """
    found: list[str] = []
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        found += [ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    if not found:
        raise SystemExit(f"{notebook}: no code cell imports anything")
    return "\n".join(dict.fromkeys(found))


def best_of(argv: list[str], runs: int, ok_codes: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """Best wall and best CPU (user + system) seconds of ``runs`` runs of ``argv``."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode not in ok_codes:
            raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return min(walls), min(cpus)


def measure(runs: int = 5) -> list[Figure]:
    figures = []
    for notebook in sorted((ROOT / "graders" / "source").glob("*/*.ipynb")):
        wall, cpu = best_of([sys.executable, "-c", setup_imports(notebook)], runs)
        figures.append(Figure(f"{notebook.stem} imports", wall, cpu, SETUP_TARGET))
    wall, cpu = best_of([sys.executable, "-m", "mcplab", "check", "--url", UNREACHABLE], runs, ok_codes=(2,))
    figures.append(Figure("mcplab check (unreachable URL)", wall, cpu, CHECK_TARGET))
    wall, cpu = best_of([sys.executable, "-m", "mcplab", "cases"], runs)
    figures.append(Figure("mcplab cases", wall, cpu, None))
    wall, cpu = best_of([sys.executable, "-c", "pass"], runs)
    figures.append(Figure("python -c pass (the interpreter alone)", wall, cpu, None))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per figure; the best counts (default 5)")
    args = parser.parse_args(argv)
    figures = measure(args.runs)
    print(f"{'start-up (best of ' + str(args.runs) + ')':48s} {'wall s':>7s} {'CPU s':>7s} {'target':>7s}")
    for f in figures:
        verdict = "" if f.ok is None else ("ok" if f.ok else "OVER")
        target = f"{f.target:.1f}" if f.target is not None else "-"
        print(f"{f.name:48s} {f.wall:7.2f} {f.cpu:7.2f} {target:>7s} {verdict}")
    return 0 if all(f.ok is not False for f in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
