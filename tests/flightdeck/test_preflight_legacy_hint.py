"""``preflight`` against a 2025-11-25-only server says to try ``--era legacy`` (regression: it exited 2 with only
"negative-id-mismatch ... response id None")."""

from __future__ import annotations

from starlette.responses import JSONResponse

from mcplab.cli import main
from mcplab.serving import serve_app
from mcplab.stockroom.ledger import MEMORY, Ledger
from mcplab.stockroom.rules import Stockroom
from mcplab.stockroom.server import build_app


class LegacyOnly:
    """A request naming a 2026 version is refused the way a 2025-11-25 server refuses it (400, -32000, id null)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        version = dict(scope.get("headers", ())).get(b"mcp-protocol-version", b"") if scope["type"] == "http" else b""
        if version.startswith(b"2026"):
            await JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: Unsupported protocol version"}},
                               status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def test_preflight_on_a_legacy_only_server_suggests_era_legacy(capsys):
    with serve_app(LegacyOnly(build_app(Stockroom(Ledger(MEMORY)))), port=0, name="legacy-only stockroom") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert main(["preflight", "--url", url, "inspect-server"]) == 2
        assert "try --era legacy" in capsys.readouterr().err
        assert main(["preflight", "--url", url, "--era", "legacy", "inspect-server"]) == 0
        assert "try --era legacy" not in capsys.readouterr().out
