"""Run an ASGI app under uvicorn in a daemon thread on a loopback socket, for a ``with`` block.

Design: one piece of plumbing for every in-process server (the stockroom, the live proxy): the
socket is bound before uvicorn starts (so ``port=0`` yields the real port at once and a busy
port fails fast with one line), start-up is polled with a deadline, and the thread dies with
the process, so a notebook kernel or a test never leaves a server behind. uvicorn and the SDK
load when a server starts, not when this module does (``mcplab check`` only needs ``is_loopback``).
"""

from __future__ import annotations

import functools
import gc
import ipaddress
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import MCPLabError

if TYPE_CHECKING:
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = ["ServeError", "serve_app", "run_until_signal", "is_loopback", "transport_security", "wire_dump",
           "spans_only_when_recorded"]

T = TypeVar("T")

_STARTUP_SECONDS = 10.0


class ServeError(MCPLabError):
    """A server could not start (port in use, bad host); the message says which."""


@contextmanager
def serve_app(app: Any, *, host: str = "127.0.0.1", port: int = 0, name: str = "server",
              log_level: str = "warning", **config: Any) -> Iterator[int]:
    """Serve ``app`` on ``host:port`` (``port=0``: a free port) and yield the bound port; stop after.

    ``config`` goes to ``uvicorn.Config`` (e.g. ``server_header=False`` for a proxy).
    """
    import uvicorn

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
    bound = sock.getsockname()[1]
    server = _server_class()(uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False, **config))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"{name}:{bound}", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _STARTUP_SECONDS
        while not server.started:
            if not thread.is_alive():
                raise ServeError(f"the {name} on {host}:{bound} stopped while starting")
            if time.monotonic() > deadline:
                raise ServeError(f"the {name} on {host}:{bound} did not start in {_STARTUP_SECONDS:.0f} s")
            time.sleep(0.01)
        yield bound
    finally:
        server.stop()
        thread.join(timeout=10)
        sock.close()


@functools.cache
def _server_class() -> type:
    """uvicorn's ``Server`` whose main loop wakes as soon as :meth:`stop` is called.

    uvicorn polls ``should_exit`` every 0.1 s; a lab that stops three servers waited for three
    ticks. This loop runs the same ``on_tick`` every 0.1 s, but a stop ends the wait at once.
    """
    import asyncio

    import uvicorn

    class Server(uvicorn.Server):
        _loop: asyncio.AbstractEventLoop | None = None
        _wake: asyncio.Event | None = None

        async def main_loop(self) -> None:
            self._loop, self._wake = asyncio.get_running_loop(), asyncio.Event()
            counter = 0
            while not await self.on_tick(counter):
                counter = (counter + 1) % 864000
                try:
                    await asyncio.wait_for(self._wake.wait(), 0.1)
                except TimeoutError:
                    pass

        def stop(self) -> None:
            """Ask the server to shut down (from any thread); its main loop wakes now."""
            self.should_exit = True
            loop, wake = self._loop, self._wake
            if loop is not None and wake is not None:
                try:
                    loop.call_soon_threadsafe(wake.set)
                except RuntimeError:  # the loop has closed: the server has stopped already
                    pass

    return Server


def run_until_signal(server: AbstractContextManager[T], started: Callable[[T], None]) -> None:
    """Enter ``server``, call ``started`` with what it yields, and wait for Ctrl-C or SIGTERM.

    The signals only set an event, so no ``KeyboardInterrupt`` can land inside start-up or
    shutdown; the previous handlers are restored afterwards. This is a command's foreground
    server, so the process is a server from here on: the objects of start-up (the SDK, pydantic's
    schemas, about 90,000 of them) are frozen out of the garbage collector (``gc.freeze``). A full
    collection then scans only what requests left behind: under load it took 27 ms with them,
    which was the stockroom's p99 latency, and takes under 1 ms without them.
    """
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with server as running:
            if not stop.is_set():
                gc.collect()
                gc.freeze()
                started(running)
                stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]


def is_loopback(host: str) -> bool:
    """``localhost`` (any case) or a loopback IP address (``[::1]`` with brackets too)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def transport_security(host: str, allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings | None:
    """DNS-rebinding protection as the SDK sets it for loopback hosts, plus ``allowed_hosts`` (e.g. behind a proxy)."""
    if not allowed_hosts and not is_loopback(host):
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    own = f"[{host}]:*" if ":" in host else f"{host}:*"
    hosts = [*_LOOPBACK_HOSTS, *([own] if own not in _LOOPBACK_HOSTS else []), *allowed_hosts]
    origins = [f"http://{h}" for h in hosts] + [f"https://{h}" for h in allowed_hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def wire_dump(value: Any) -> Any:
    """SDK models (and dicts of them) as the JSON a handler saw on the wire: aliases, no ``None`` fields."""
    if hasattr(value, "model_dump"):
        return value.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {key: wire_dump(item) for key, item in value.items()}
    return value


def spans_only_when_recorded(server: Any) -> Any:
    """Drop the SDK's OpenTelemetry middleware from ``server`` unless a tracer provider records spans.

    ``mcp`` 2.3.0 wraps every request in a span, a no-op until an OpenTelemetry SDK is installed,
    yet it costs about a tenth of a stockroom tool call. The SDK documents dropping it from
    ``Server.middleware`` as the opt-out; this keeps it when a real provider is set before the
    server is built (``opentelemetry.trace.set_tracer_provider``), so traced deployments keep their spans.
    """
    from opentelemetry import trace

    if isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        # matched by name: the class lives in a private SDK module, the list itself is public
        server.middleware = [m for m in server.middleware if type(m).__name__ != "OpenTelemetryMiddleware"]
    return server
