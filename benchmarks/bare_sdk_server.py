"""The yardstick for the stockroom benchmark: a bare ``mcp`` high-level server with one ``echo`` tool.

    python benchmarks/bare_sdk_server.py

Stateless Streamable HTTP with JSON answers on a free loopback port (the transport settings
``mcplab serve stockroom`` uses) and nothing of mcplab's: what the SDK alone costs per tool call.
Prints ``serving http://127.0.0.1:PORT/mcp`` once the socket listens (connections wait in its backlog
until uvicorn accepts them).
"""

from __future__ import annotations

import socket

import uvicorn
from mcp.server.mcpserver import MCPServer


def main() -> None:
    server = MCPServer("bare-echo")

    @server.tool()
    def echo(text: str = "") -> str:
        """Echo the text back."""
        return text

    app = server.streamable_http_app(stateless_http=True, json_response=True, host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)
    print(f"bare SDK server serving http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
