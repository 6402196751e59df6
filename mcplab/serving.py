"""Serve a Starlette app under uvicorn in a daemon thread of this process, on a socket we bind.

Design: one helper for every mcplab server (stockroom, reference). Binding the socket ourselves
gives port 0 -> a free port with no race, a clean ``ServeError`` for a port in use, and
``IPPROTO_TCP`` so asyncio sets TCP_NODELAY. The thread dies with the process (a notebook
kernel), so nothing outlives its owner. DNS-rebinding settings for loopback hosts live here too.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from .errors import MCPLabError

__all__ = ["ServeError", "ServedApp", "is_loopback", "transport_security", "serve_app", "wire_dump"]

_STARTUP_SECONDS = 10.0
_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


class ServeError(MCPLabError):
    """The server could not start (port in use, bad host); the message says which."""


@dataclass(frozen=True)
class ServedApp:
    """Where a served app listens: ``url`` is ``http://host:port`` plus the path given."""

    url: str
    host: str
    port: int


def wire_dump(value: Any) -> Any:
    """SDK models (and dicts of them) as the JSON a handler saw on the wire: aliases, no ``None`` fields."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {key: wire_dump(item) for key, item in value.items()}
    return value


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def transport_security(host: str, allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings | None:
    """DNS-rebinding protection as the SDK sets it for loopback hosts, plus ``allowed_hosts``."""
    if not allowed_hosts and not is_loopback(host):
        return None
    own = f"[{host}]:*" if ":" in host else f"{host}:*"
    hosts = [*_LOOPBACK_HOSTS, *([own] if own not in _LOOPBACK_HOSTS else []), *allowed_hosts]
    origins = [f"http://{h}" for h in hosts] + [f"https://{h}" for h in allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


@contextmanager
def serve_app(app: Any, *, host: str = "127.0.0.1", port: int = 0, path: str = "/mcp", name: str = "mcplab",
              log_level: str = "warning") -> Iterator[ServedApp]:
    """Run ``app`` under uvicorn in a daemon thread for the ``with`` block; stop it after.

    ``port=0`` picks a free port. ``name`` appears in the thread name and in error messages.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted sockets only for that proto,
    # and without it every keep-alive response waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"{name}:{bound_port}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _STARTUP_SECONDS
        while not server.started:
            if not thread.is_alive():
                raise ServeError(f"the {name} server on {host}:{bound_port} stopped while starting")
            if time.monotonic() > deadline:
                raise ServeError(f"the {name} server on {host}:{bound_port} did not start in {_STARTUP_SECONDS:.0f} s")
            time.sleep(0.01)
        shown = f"[{host}]" if ":" in host else host
        yield ServedApp(url=f"http://{shown}:{bound_port}{path}", host=host, port=bound_port)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
