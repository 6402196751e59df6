"""Writing an output file the user named (``--evidence``, ``--report``): regular files only.

Design: the path is checked with ``lstat`` before anything runs and again just before the atomic
``os.replace``: a symbolic link, a device, a FIFO, a socket or a directory there is refused
(never written through, never replaced), a missing folder is an error (never created), and
every error names the path as the user gave it, never the temporary file beside it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from .errors import MCPLabError

__all__ = ["OutputPathError", "check_output_path", "write_regular_file"]

_KINDS = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO (named pipe)",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory", stat.S_IFLNK: "a symbolic link"}


class OutputPathError(MCPLabError):
    """An output path mcplab will not write (exit 2); the message names the path as given."""


def check_output_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`~pathlib.Path` if mcplab may write a regular file there, else :class:`OutputPathError`.

    Allowed: a missing file in an existing, writable folder, or an existing regular file.
    """
    shown = os.fspath(path)
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise OutputPathError(f"{shown}: the folder {os.fspath(folder)} does not exist (create it first; mcplab does not)")
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise OutputPathError(f"{shown}: cannot inspect it ({exc.strerror or exc})") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
        advice = "name the file to write inside it" if stat.S_ISDIR(info.st_mode) else \
            "mcplab writes only regular files and never through a link"
        raise OutputPathError(f"{shown}: is {kind}; {advice}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{shown}: the folder {os.fspath(folder)} is not writable")
    return target


def write_regular_file(path: str | os.PathLike[str], text: str, *, new_mode: int = 0o600) -> Path:
    """Write ``text`` (UTF-8) to the regular file ``path`` atomically and return the path.

    A temporary file in the same folder is written, flushed and moved over ``path``: a reader sees
    the old file or the whole new one. An existing file keeps its mode; a new one gets ``new_mode``.
    """
    shown = os.fspath(path)
    target = check_output_path(path)
    data = text.encode("utf-8")
    try:
        mode = stat.S_IMODE(os.lstat(target).st_mode)
    except FileNotFoundError:
        mode = new_mode
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise OutputPathError(f"{shown}: cannot write in its folder ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        check_output_path(path)  # again, just before the move: nothing but a regular file is ever replaced
        os.replace(tmp_name, target)
    except BaseException as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise OutputPathError(f"{shown}: cannot write ({exc.strerror or exc})") from None
        raise
    return target
