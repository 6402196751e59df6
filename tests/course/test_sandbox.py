"""The sandbox of one submission, on a real kernel: what it can reach, what it leaves, how it stops."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from nbformat import writes
from nbformat.v4 import new_code_cell, new_notebook

from mcplab.course.sandbox import SANDBOX_UID_BASE, Limits, run_notebook, sandbox_problem

pytestmark = pytest.mark.skipif(sandbox_problem() is not None and not os.environ.get("MCPLAB_REQUIRE_SANDBOX"),
                                reason=f"no sandbox here: {sandbox_problem()}")
REPO = Path(__file__).resolve().parents[2]


def run(*sources: str, **limits) -> dict[int, tuple[list, str]]:
    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    execution = run_notebook(writes(nb), limits=Limits(**{"cell_timeout": 10, "wall": 120, **limits}), course_root=REPO / "graders")
    return execution


def text(execution, index: int) -> str:
    return "".join(o.get("text", "") for o in execution.cells[index][0])


def test_the_course_the_home_folder_and_the_environment_are_invisible():
    os.environ["MCPLAB_SANDBOX_TEST_SECRET"] = "s3cret-value"
    try:
        ex = run(f"import os\nprint([os.path.exists(p) for p in {[str(REPO / 'graders'), str(REPO / 'README.md'), '/root/.bashrc']!r}])",
                 "import os\nprint('MCPLAB_SANDBOX_TEST_SECRET' in os.environ, os.getuid())",
                 "import mcplab, pandas\nprint('library ok')")
    finally:
        del os.environ["MCPLAB_SANDBOX_TEST_SECRET"]
    assert text(ex, 0) == "[False, False, False]\n"
    secret_seen, uid = text(ex, 1).split()
    assert secret_seen == "False"
    assert (SANDBOX_UID_BASE <= int(uid) < SANDBOX_UID_BASE + 4000) if os.getuid() == 0 else int(uid) == os.getuid()
    assert text(ex, 2) == "library ok\n" and ex.end == "complete"


def test_a_private_loopback_serves_and_the_hosts_loopback_is_out_of_reach():
    with socket.create_server(("127.0.0.1", 0)) as host:
        port = host.getsockname()[1]
        ex = run("import socket, threading\n"
                 "s = socket.create_server(('127.0.0.1', 0)); p = s.getsockname()[1]\n"
                 "threading.Thread(target=lambda: s.accept()[0].sendall(b'inside'), daemon=True).start()\n"
                 "print(socket.create_connection(('127.0.0.1', p)).recv(6).decode())",
                 f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('reached')\n"
                 "except OSError as exc:\n    print(type(exc).__name__)")
    assert text(ex, 0) == "inside\n"
    assert text(ex, 1) == "ConnectionRefusedError\n"


def test_a_sigint_ignoring_loop_is_killed_and_later_cells_are_not_run():
    ex = run("print('first')", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", "print('never')",
             cell_timeout=2)
    assert ex.cells[0][1] == "ok" and ex.cells[1][1] == "timeout" and ex.cells[2] == ([], "not-run")


def test_the_wall_limit_kills_everything_and_keeps_what_finished():
    marker = "sleep 613.25"
    ex = run("print('done')", f"import subprocess\nsubprocess.Popen('{marker}'.split(), start_new_session=True)\nimport threading\nthreading.Event().wait()",
             wall=8, cell_timeout=50)
    assert ex.wall_exceeded and ex.cells[0][1] == "ok" and 1 not in ex.cells
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert marker not in ps


def test_memory_and_process_limits_fail_the_cell_not_the_grader():
    ex = run("try:\n    b = bytearray(64 * 1024**3)\nexcept MemoryError:\n    print('MemoryError')",
             "import subprocess\nprocs = []\ntry:\n    for _ in range(400):\n        procs.append(subprocess.Popen(['sleep', '30']))\n"
             "except OSError as exc:\n    print('refused after', len(procs))\nfor p in procs:\n    p.kill()",
             processes=128)
    assert text(ex, 0) == "MemoryError\n"
    if os.getuid() == 0 or os.environ.get("MCPLAB_NPROC_ENFORCED"):
        assert text(ex, 1).startswith("refused after")


def test_without_bwrap_grading_refuses_in_one_line(tmp_path):
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))  # no /usr/bin: no bwrap
    course = tmp_path / "course"
    (course / "release" / "lab_a_era_boundary").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    (course / "gradebook.db").write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "mcplab", "course", "autograde", "lab_a_era_boundary", "--course", str(course)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "bwrap not found" in done.stderr and "--unsealed" in done.stderr
