"""A server on the ``mcp`` SDK's high-level API (``MCPServer``), written as its documentation shows:
no mcplab code. ``serve_python_sdk()`` runs it under uvicorn in a daemon thread on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel


class Sum(BaseModel):
    sum: int


def build() -> MCPServer:
    mcp = MCPServer("py-sdk-fixture")

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str, times: int = 1) -> str:
        """Repeat a text a number of times."""
        return " ".join([text] * max(1, min(times, 3)))

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def add(a: int, b: int) -> Sum:
        """Add two integers."""
        return Sum(sum=a + b)

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def count(ctx: Context) -> str:
        """Count to three, reporting progress."""
        for i in range(1, 4):
            await ctx.report_progress(i, 3)
        return "counted to 3"

    @mcp.tool()
    def delete_everything() -> str:
        """A tool with effects: never called unless the caller says so."""
        return "nothing deleted (fixture)"

    @mcp.resource("file:///fixture/readme.txt")
    def readme() -> str:
        """A fixed text."""
        return "hello from the Python fixture"

    @mcp.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello {name}"

    return mcp


@contextmanager
def serve_python_sdk(json_response: bool = True) -> Iterator[str]:
    """The fixture on a free loopback port for the block (its URL); always stopped."""
    app = build().streamable_http_app(stateless_http=True, json_response=json_response, host="127.0.0.1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the mcp SDK fixture did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
