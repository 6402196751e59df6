"""A sandbox per submission: the student's notebook runs in its own namespaces, with limits.

Design (see ``docs/instructor.md`` for the threat model):

- ``bwrap`` (bubblewrap) starts :mod:`mcplab.course.runner` in new pid, network, IPC and UTS
  namespaces and a new mount tree that holds only the Python environment (read-only: the
  interpreter's prefix, the venv, the ``mcplab`` package folder), a few files of ``/etc``, and
  size-limited tmpfs folders for ``/tmp`` and ``$HOME``. No course folder, gradebook, other
  submission or instructor home is mounted. The network namespace has its own loopback, so the
  labs' loopback servers work and the host's loopback services are out of reach.
- Nothing crosses the wall by path: the notebook goes in on standard input, the runner's
  per-cell results come back through an inherited file descriptor of a file the grader created.
  There is no file for the student to replace with a symlink or a FIFO.
- Limits: ``RLIMIT_AS`` (memory), ``RLIMIT_NPROC`` (processes and threads), ``RLIMIT_CPU``,
  ``RLIMIT_FSIZE``, ``RLIMIT_NOFILE``, no core files; the wall-clock limit is kept here, and at
  the end the whole tree is killed with SIGKILL (``--die-with-parent`` and the pid namespace:
  when its first process dies, the kernel kills every process in it, daemons and
  ``start_new_session`` children included). A grader running as root runs the sandbox as its own
  unprivileged uid (``SANDBOX_UID_BASE`` + a slot), so the process limit applies.
- ``sealed=False`` (the instructor's explicit ``--unsealed``) runs the same runner as a plain
  child process with the same limits except the namespaces: no isolation is promised then.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import MCPLabError

__all__ = ["SANDBOX_UID_BASE", "Execution", "Limits", "SandboxUnavailable", "run_notebook", "sandbox_problem"]

#: A root grader runs sandboxes as uid SANDBOX_UID_BASE + slot (no such user needs to exist).
SANDBOX_UID_BASE = 61000
#: Bytes of runner results read back at most.
MAX_RESULTS = 64 * 1024 * 1024
_HOME = "/home/student"
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "fonts", "localtime", "passwd", "group",
        "nsswitch.conf", "hosts", "host.conf", "mime.types", "ssl", "ca-certificates")


class SandboxUnavailable(MCPLabError):
    """The sandbox cannot start here (the message names the cause and what to install or enable)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission's sandbox."""

    cell_timeout: float = 30.0
    wall: float = 600.0
    memory_bytes: int = 6 * 1024**3
    processes: int = 512
    cpu_seconds: int = 900
    file_bytes: int = MAX_RESULTS
    tmpfs_bytes: int = 512 * 1024**2
    open_files: int = 1024


@dataclass
class Execution:
    """What came back from one run: per code cell index, the outputs and a status (untrusted data)."""

    cells: dict[int, tuple[list[Any], str]] = field(default_factory=dict)
    end: str | None = None
    wall_exceeded: bool = False
    returncode: int | None = None
    seconds: float = 0.0
    sealed: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"cells": {str(i): [o, s] for i, (o, s) in self.cells.items()}, "end": self.end,
                "wallExceeded": self.wall_exceeded, "returncode": self.returncode, "seconds": self.seconds, "sealed": self.sealed}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Execution:
        cells = {int(i): (list(v[0]), str(v[1])) for i, v in data.get("cells", {}).items()}
        return cls(cells, data.get("end"), bool(data.get("wallExceeded")), data.get("returncode"),
                   float(data.get("seconds", 0.0)), bool(data.get("sealed", True)))


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def _python_paths() -> list[Path]:
    """Folders the sandbox needs read-only: the interpreter, the environment, and mcplab itself."""
    import mcplab

    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.executable).resolve().parent,
             Path(mcplab.__file__).resolve().parent}
    out = []
    for path in sorted(paths, key=lambda p: len(p.parts)):
        if not any(path == kept or kept in path.parents for kept in out):
            out.append(path)
    return out


def _mount_args(course_root: Path | None) -> list[str]:
    args: list[str] = []
    for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC:
        path = Path("/etc") / name
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
    made: set[Path] = {Path("/"), Path("/etc")}
    for path in _python_paths():
        if course_root is not None and (path == course_root or path in course_root.parents or course_root in path.parents):
            raise SandboxUnavailable(f"{path}: the Python environment and the course folder {course_root} overlap: the "
                                     "sandbox would see the course; keep the venv and the course in separate folders")
        for parent in reversed(path.parents):
            if parent not in made and parent.parts[:2] != ("/", "usr"):
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        args += ["--ro-bind", str(path), str(path)]
    return args


def _environment(home: str) -> dict[str, str]:
    return {"HOME": home, "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
            "TMPDIR": "/tmp", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
            "NBGRADER_EXECUTION": "autograde", "JUPYTER_PLATFORM_DIRS": "1", "USER": "student", "LOGNAME": "student"}


def bwrap_command(runner: list[str], limits: Limits, course_root: Path | None, workdir: str) -> list[str]:
    """The full ``bwrap ... -- python -m mcplab.course.runner`` command line."""
    bwrap = _bwrap()
    if bwrap is None:
        raise SandboxUnavailable("bwrap not found: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; "
                                 "Fedora: dnf install bubblewrap), or grade with --unsealed (no isolation)")
    size = str(limits.tmpfs_bytes)
    cmd = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
           "--unshare-cgroup-try", "--hostname", "sandbox",
           # the tmpfs folders first: an environment that lives under /tmp is bound on top of them, not hidden
           "--size", size, "--perms", "1777", "--tmpfs", "/tmp",
           "--perms", "0755", "--dir", "/home", "--size", size, "--perms", "0777", "--tmpfs", _HOME,
           *_mount_args(course_root), "--proc", "/proc", "--dev", "/dev",
           "--perms", "0777", "--dir", workdir, "--chdir", workdir, "--clearenv"]
    for key, value in _environment(_HOME).items():
        cmd += ["--setenv", key, value]
    if os.getuid() == 0:
        cmd += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return [*cmd, "--", *runner]


def _limit(limits: Limits) -> None:
    """In the child before exec: the resource limits (inherited by everything the sandbox starts)."""
    for which, value in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_NPROC, limits.processes),
                         (resource.RLIMIT_CPU, limits.cpu_seconds), (resource.RLIMIT_FSIZE, limits.file_bytes),
                         (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value))


_PROBLEM: dict[bool, str | None] = {}


def sandbox_problem() -> str | None:
    """Why a sealed sandbox cannot start on this machine (one line), or None when it can."""
    if True in _PROBLEM:
        return _PROBLEM[True]
    try:
        cmd = bwrap_command(["/bin/true"], Limits(), None, f"{_HOME}/check")
        done = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
        problem = None
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()
            problem = (f"bwrap cannot create the sandbox's namespaces ({why[-1] if why else f'exit {done.returncode}'}): "
                       "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 and "
                       "user.max_user_namespaces > 0; on Ubuntu 24.04 also an AppArmor profile for bwrap), "
                       "or grade with --unsealed (no isolation)")
    except SandboxUnavailable as exc:
        problem = str(exc)
    except (OSError, subprocess.TimeoutExpired) as exc:
        problem = f"bwrap could not run ({exc}): install bubblewrap, or grade with --unsealed (no isolation)"
    _PROBLEM[True] = problem
    return problem


def _read_results(handle: Any) -> tuple[dict[int, tuple[list[Any], str]], str | None]:
    handle.seek(0)
    raw = handle.read(MAX_RESULTS)
    cells: dict[int, tuple[list[Any], str]] = {}
    end = None
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(record, dict):
            continue
        if "end" in record:
            end = str(record["end"])[:500]
            continue
        index, outputs, status = record.get("index"), record.get("outputs"), record.get("status")
        if type(index) is int and isinstance(outputs, list) and isinstance(status, str) and index not in cells:
            cells[index] = (outputs, status[:20])
    return cells, end


def run_notebook(notebook_json: str, *, limits: Limits, sealed: bool = True, slot: int = 0,
                 course_root: Path | None = None, log: Path | None = None) -> Execution:
    """Execute one prepared notebook (JSON text) in a fresh sandbox and return what came back."""
    runner = [sys.executable, "-m", "mcplab.course.runner", "--timeout", f"{limits.cell_timeout:g}"]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mcplab-sandbox-") as tmp:
        tmpdir = Path(tmp)
        nb_file, out_file = open(tmpdir / "in.ipynb", "w+b"), open(tmpdir / "out.jsonl", "w+b")
        log_file = open(log, "ab") if log else subprocess.DEVNULL
        try:
            nb_file.write(notebook_json.encode("utf-8", "surrogatepass"))
            nb_file.flush()
            nb_file.seek(0)
            if sealed:
                problem = sandbox_problem()
                if problem:
                    raise SandboxUnavailable(problem)
                uid = SANDBOX_UID_BASE + (os.getpid() * 16 + slot) % 4000 if os.getuid() == 0 else None
                cmd = bwrap_command(runner + ([] if uid is None else ["--uid", str(uid)]), limits, course_root, f"{_HOME}/work")
                cwd, env = "/", None
            else:
                home = tmpdir / "home"
                (home / "work").mkdir(parents=True)
                cmd, cwd, env = runner, str(home / "work"), _environment(str(home))
            proc = subprocess.Popen(cmd, stdin=nb_file, stdout=log_file, stderr=log_file, pass_fds=(out_file.fileno(), 3),
                                    cwd=cwd, env=env, start_new_session=True, preexec_fn=lambda: _redirect_fd3_and_limit(out_file.fileno(), limits))
            wall_exceeded = False
            try:
                proc.wait(timeout=limits.wall)
            except subprocess.TimeoutExpired:
                wall_exceeded = True
            finally:
                _kill_group(proc)
            cells, end = _read_results(out_file)
            return Execution(cells, end, wall_exceeded, proc.returncode, time.monotonic() - started, sealed)
        finally:
            nb_file.close()
            out_file.close()
            if log:
                log_file.close()


def _redirect_fd3_and_limit(fd: int, limits: Limits) -> None:
    if fd != 3:
        os.dup2(fd, 3)
        os.set_inheritable(3, True)
    _limit(limits)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
