"""The approver's credential: what separates a person's 2025-11-25 approval from the agent's.

Design: a random token kept beside the database (``<db>.approver-token``, created with mode 0600,
never through a symlink) or, for an in-memory stockroom, in the owning process only. The HTTP
approval route requires it as ``Authorization: Bearer <token>``; the CLI and the notebook panel
read it from where it lives. The agent talks MCP only, so it never sees the token, and nothing
the stockroom tells the agent names the route. Tokens are compared in constant time.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

from ..errors import MCPLabError

__all__ = ["APPROVER_TOKEN_SUFFIX", "APPROVAL_CHANNELS", "ApproverTokenError", "approver_token_path",
           "load_approver_token", "new_approver_token", "same_token"]

#: The token file's name is the database file's name plus this suffix, in the same folder.
APPROVER_TOKEN_SUFFIX = ".approver-token"
#: How an answer reached the stockroom, as the trace records it: a direct library call, the notebook
#: panel (in process, or over HTTP with the token), ``mcplab stockroom approve|reject``, the HTTP route.
APPROVAL_CHANNELS = ("api", "panel", "cli", "http", "panel/http")
_TOKEN_BYTES = 32


class ApproverTokenError(MCPLabError):
    """The approver token file cannot be created or read; the message names the file."""


def approver_token_path(db: str | os.PathLike[str]) -> Path:
    """Where the approver token of the database ``db`` lives: beside it, ``<name>.approver-token``."""
    path = Path(db).expanduser()
    return path.with_name(path.name + APPROVER_TOKEN_SUFFIX)


def new_approver_token() -> str:
    return secrets.token_urlsafe(_TOKEN_BYTES)


def load_approver_token(db: str | os.PathLike[str], *, create: bool = True) -> str:
    """The token of ``db``, created (mode 0600, exclusive, no symlink followed) when missing and ``create``."""
    path = approver_token_path(db)
    if create:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ApproverTokenError(f"{path}: cannot create the approver token ({exc.strerror or exc})") from None
        else:
            token = new_approver_token()
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(token + "\n")
            return token
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise ApproverTokenError(f"{path}: cannot read the approver token ({exc.strerror or exc}); "
                                 "only the person who runs the stockroom can approve") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ApproverTokenError(f"{path}: not a regular file")
        if info.st_mode & 0o077:
            raise ApproverTokenError(f"{path}: readable by others (mode {stat.S_IMODE(info.st_mode):o}); "
                                     "chmod 600 it or delete it to make a new one")
        text = handle.read(256).decode("ascii", "replace").strip()
    if len(text) < 32:
        raise ApproverTokenError(f"{path}: not an approver token (delete it to make a new one)")
    return text


def same_token(presented: object, expected: str) -> bool:
    """Constant-time comparison; anything but a non-empty string is not the token."""
    return isinstance(presented, str) and bool(presented) and hmac.compare_digest(
        presented.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))
