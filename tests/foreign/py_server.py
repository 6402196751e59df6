"""A server on the ``mcp`` SDK's high-level API (``MCPServer``), written as its documentation shows:
no mcplab code. ``serve_python_sdk()`` runs it under uvicorn in a daemon thread on a free loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel

from mcplab.serving import serve_app


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
    with serve_app(app, name="mcp SDK fixture") as port:  # mcplab's own loopback host for uvicorn: polled start, always stopped
        yield f"http://127.0.0.1:{port}/mcp"
