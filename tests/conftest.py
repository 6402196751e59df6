"""Shared helpers: well-formed modern messages to mutate in tests."""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mcplab import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSION
from mcplab.conformance import RUNNER_PACKAGE, RUNNER_VERSION, RegistryUnreachable, ensure_runner


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables print as they do into a pipe (unwrapped), whatever COLUMNS the runner's workers
    inherit (pytest-xdist workers see COLUMNS=80); a test that wants a width sets it."""
    monkeypatch.delenv("COLUMNS", raising=False)


def free_port() -> int:
    """A loopback port that was free a moment ago (for a server started as a separate process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``condition`` until it is true; fail the test naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.02)  # poll interval, bounded by the deadline above


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A plain stdlib HTTP server on a free loopback port (yielded) for the block; always shut down."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def modern_request(method: str = "tools/list", id: Any = 1, params: dict | None = None, caps: dict | None = None) -> dict:
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": copy.deepcopy(params or {})}
    body["params"]["_meta"] = {META_PROTOCOL_VERSION: MODERN_VERSION, META_CLIENT_CAPABILITIES: caps or {}}
    return body


def modern_headers(method: str = "tools/list", name: str | None = None) -> list[tuple[str, str]]:
    headers = [("MCP-Protocol-Version", MODERN_VERSION), ("Mcp-Method", method)]
    if name is not None:
        headers.append(("Mcp-Name", name))
    return headers


@pytest.fixture
def call_request() -> tuple[dict, list[tuple[str, str]]]:
    return modern_request("tools/call", params={"name": "read_stock", "arguments": {}}), modern_headers("tools/call", "read_stock")


@pytest.fixture(scope="session")
def runner():
    """The pinned official conformance runner (installed once); skips when npm is unreachable."""
    try:
        return ensure_runner()
    except RegistryUnreachable as exc:
        pytest.skip(f"npm registry unreachable, cannot install {RUNNER_PACKAGE}@{RUNNER_VERSION}: {exc}")


def spec_dir() -> Path:
    """``$MCPLAB_SPEC_DIR``, else ``../shared/spec`` beside the checkout (as in CI), else /work/shared/spec."""
    candidates = [os.environ.get("MCPLAB_SPEC_DIR"), Path(__file__).resolve().parents[1].parent / "shared" / "spec", "/work/shared/spec"]
    for candidate in candidates:
        if candidate and (Path(candidate) / "mcp-2026-07-28.schema.json").is_file():
            return Path(candidate)
    raise RuntimeError(f"official MCP schemas not found in any of {candidates}; set MCPLAB_SPEC_DIR")


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate ``proc``, and kill it if it is still there 10 s later."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
