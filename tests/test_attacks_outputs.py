"""Issue 15, items 4 and 10: what ``mcplab`` writes out under hostile servers and hostile paths.

4. ``mcplab check --json`` and ``--report``: a server that echoes the bearer token without its
   ``Bearer `` prefix, the URL's ``token=`` value, the userinfo (also as the Basic credential it
   became), finds none of them in any output string.
10. ``--evidence`` and ``--report`` write regular files only: a device, a FIFO or a symlink at the
   path is refused (exit 2, naming the user's path), missing folders are not created, and an
   error names the path given, never a temporary file.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcplab.cli import main
from mcplab.errors import MCPLabError
from mcplab.evidence import write_evidence
from mcplab.live.check import run_check
from mcplab.live.report import redacted_result, render_report
from mcplab.serving import serve_app

TOKEN = "tok-9f8e7d6c5b4a"
QUERY = "qv-1a2b3c4d5e"
USER, PASSWORD = "alice-user-77", "pw-0011223344"


async def _echo(request: Request) -> JSONResponse:
    """Answers every POST with a -32020 error quoting every credential it was sent, in every place."""
    try:
        body = json.loads(await request.body())
    except ValueError:
        body = {}
    auth = request.headers.get("authorization", "")
    bare = auth.split(" ", 1)[1] if " " in auth else auth
    seen = {"auth": auth, "bare": bare, "query": request.query_params.get("token", ""),
            "decoded": base64.b64decode(bare).decode() if auth.startswith("Basic ") else ""}
    message = f"rejected {seen['bare']} with token={seen['query']} ({seen['decoded']})"
    return JSONResponse({"jsonrpc": "2.0", "id": body.get("id") if isinstance(body, dict) else None,
                         "error": {"code": -32020, "message": message, "data": {"echo": seen, "list": list(seen.values())}}},
                        status_code=400, headers={"X-Echo": seen["bare"], "X-Query": seen["query"]})


@pytest.fixture(scope="module")
def echo_port():
    app = Starlette(routes=[Route("/mcp", _echo, methods=["POST", "GET", "DELETE"])])
    with serve_app(app, host="127.0.0.1", port=0, name="echo") as port:
        yield port


def _secrets_in(text: str) -> list[str]:
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return [s for s in (TOKEN, QUERY, USER, PASSWORD, basic) if s in text]


def test_check_scrubs_every_handed_secret_from_every_output_string(echo_port):
    url = f"http://{USER}:{PASSWORD}@127.0.0.1:{echo_port}/mcp?token={QUERY}"
    result = run_check(url, headers=[("X-Api-Token", f"Bearer {TOKEN}")], timeout=5)
    raw = json.dumps(result.to_dict())
    assert TOKEN in raw and QUERY in raw  # the server did echo them: the attack is real
    out = json.dumps(redacted_result(result), ensure_ascii=False)
    assert _secrets_in(out) == []
    assert _secrets_in(render_report(result)) == []


def test_check_json_and_report_on_the_command_line(echo_port, capsys, tmp_path):
    report = tmp_path / "matrix.html"
    url = f"http://127.0.0.1:{echo_port}/mcp?token={QUERY}"
    main(["check", "--url", url, "--header", f"Authorization: Bearer {TOKEN}", "--header", f"X-Other: {PASSWORD}",
          "--json", "--report", str(report), "--timeout", "5"])
    captured = capsys.readouterr()
    assert _secrets_in(captured.out + captured.err) == []
    assert _secrets_in(report.read_text(encoding="utf-8")) == []
    main(["check", "--url", url, "--header", f"Authorization: Bearer {TOKEN}", "--timeout", "5"])
    captured = capsys.readouterr()
    assert _secrets_in(captured.out + captured.err) == []


# -- 10. only regular files -----------------------------------------------------------------------------
def _special_paths(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    device = tmp_path / "full"
    try:  # a private copy of /dev/full: a regression must never clobber the machine's own device nodes
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, AttributeError):
        device = None
    return {"fifo": fifo, "symlink": link, "device": device}


@pytest.mark.parametrize("kind", ["fifo", "symlink", "device"])
@pytest.mark.parametrize("flag", ["--evidence", "--report"])
def test_special_files_are_refused_and_left_alone(tmp_path, capsys, kind, flag):
    path = _special_paths(tmp_path)[kind]
    if path is None:
        pytest.skip("cannot make a device node here (not root)")
    before = os.lstat(path)
    argv = ["demo", "--evidence", str(path)] if flag == "--evidence" else \
        ["check", "--url", "http://127.0.0.1:9/mcp", "--report", str(path), "--timeout", "1"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and ".tmp" not in err, err
    after = os.lstat(path)
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode), before.st_ino)
    assert (tmp_path / "precious.txt").read_text() == "keep me\n"


@pytest.mark.parametrize("flag", ["--evidence", "--report"])
def test_missing_folders_are_not_created(tmp_path, capsys, flag):
    path = tmp_path / "no" / "such" / "out.json"
    argv = ["demo", "--evidence", str(path)] if flag == "--evidence" else \
        ["check", "--url", "http://127.0.0.1:9/mcp", "--report", str(path), "--timeout", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "does not exist" in err
    assert not (tmp_path / "no").exists()


def test_an_unwritable_folder_is_named_not_a_temp_file(tmp_path, capsys):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):  # root ignores modes: use a folder nobody can write instead
            pytest.skip("running as root: mode bits do not stop writes")
        assert main(["demo", "--evidence", str(folder / "e.json")]) == 2
        err = capsys.readouterr().err
        assert str(folder / "e.json") in err and ".tmp" not in err
    finally:
        folder.chmod(0o700)


def test_write_evidence_refuses_specials_in_the_library_too(tmp_path):
    paths = _special_paths(tmp_path)
    for path in filter(None, paths.values()):
        with pytest.raises(MCPLabError) as caught:
            write_evidence(path, {"a": 1})
        assert str(path) in str(caught.value)
    written = write_evidence(tmp_path / "ok.json", {"a": 1})
    assert json.loads(written.read_text()) == {"a": 1}
    assert write_evidence(written, {"a": 2}) == written and json.loads(written.read_text()) == {"a": 2}
