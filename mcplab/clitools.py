"""The helpers every ``mcplab`` command shares: argument types, tables, plurals, progress lines.

Design: one module so each rule exists once. An argument type refuses bad input while argparse
parses (one line, exit 2, before anything is sent); a table wraps its last column to the terminal
width (nothing is cut, and output to a pipe is never wrapped); a quiet wait prints a line on
stderr after a few seconds whether or not stderr is a terminal. Standard library only, so every
command can import it without slowing ``mcplab --help``.
"""

from __future__ import annotations

import argparse
import logging
import math
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO
from urllib.parse import urlsplit

__all__ = ["MAX_URL_CHARS", "MAX_SECONDS", "QUIET_AFTER_SECONDS", "seconds", "whole_seconds", "url", "table", "plural", "QuietWait", "CapturedLogs"]

#: The longest URL any command takes: httpx refuses longer ones (``InvalidURL: URL too long``).
MAX_URL_CHARS = 65_536
#: The longest timeout any command takes (a day): a bigger number is a typo, and the socket
#: layer overflows on huge ones.
MAX_SECONDS = 86_400.0
#: How long a wait may be silent before :class:`QuietWait` prints its first line.
QUIET_AFTER_SECONDS = 3.0


def seconds(text: str) -> float:
    """``--timeout``: a number of seconds above 0 and at most a day (decimals welcome).

    ``0``, negatives, ``nan``, ``inf`` and words are refused (argparse prints one line, exit 2).
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: expected seconds above 0, e.g. 10 or 2.5") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number of seconds above 0 and at most {MAX_SECONDS:g}")
    return value


def whole_seconds(text: str) -> int | float:
    """For limits that take whole seconds only (nbgrader's per-cell timeout): a positive number
    rounds up (``2.5`` is 3, ``0.2`` is 1). Words, ``nan``, ``inf`` and more than a day are refused
    as :func:`seconds` refuses them; ``0`` and negatives are returned as given for the command to
    refuse in its own words."""
    try:
        value = float(text)
    except ValueError:
        return seconds(text)  # raises, in the same words
    if value <= 0:
        return int(value) if value.is_integer() else value
    return math.ceil(seconds(text))


def url(text: str) -> str:
    """``--url``, ``--via``, ``--upstream``: at most :data:`MAX_URL_CHARS` characters, no control
    characters (the scheme and host are checked by the command, which says what it expected).

    A refused URL is described, never echoed: it may carry a password or a token."""
    if len(text) > MAX_URL_CHARS:
        raise argparse.ArgumentTypeError(f"a URL of {len(text):,} characters (not shown): the limit is {MAX_URL_CHARS:,}")
    bad = next((c for c in text if ord(c) < 0x20 or ord(c) == 0x7F), None)
    if bad is not None:
        raise argparse.ArgumentTypeError(f"a URL with the control character {bad!r} at position {text.index(bad)} (not shown): "
                                         "expected an http(s) URL such as http://127.0.0.1:8765/mcp")
    try:
        urlsplit(text).port  # noqa: B018 - raises ValueError for a bad port or a broken IPv6 host
    except ValueError as exc:
        from .redaction import redact_urls_in

        raise argparse.ArgumentTypeError(f"{redact_urls_in(text)}: {exc}; expected an http(s) URL such as "
                                         "http://127.0.0.1:8765/mcp") from None
    return text


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 approval``, ``2 approvals``, ``0 problems`` (``nouns`` for an irregular plural)."""
    return f"{count} {noun if count == 1 else (nouns or noun + 's')}"


def _terminal_columns() -> int:
    """The terminal's width, or 0 (no limit) when stdout is not a terminal and COLUMNS is unset."""
    return shutil.get_terminal_size(fallback=(0, 0)).columns


def _fit(widths: list[int], floors: list[int], limit: int) -> list[int]:
    """Narrow the widest column, one character at a time, until the row fits ``limit`` (or no
    column can give more than its floor)."""
    widths = list(widths)
    while sum(widths) + 2 * (len(widths) - 1) > limit:
        room = [i for i, w in enumerate(widths) if w > floors[i]]
        if not room:
            break
        widest = max(room, key=lambda i: (widths[i], i))
        widths[widest] -= 1
    return widths


def table(rows: Sequence[Sequence[Any]], header: Sequence[str], *, width: int | None = None) -> str:
    """A plain-text table. When its lines are wider than ``width`` (default: the terminal's; no
    limit when stdout is not a terminal and COLUMNS is unset), the widest columns wrap onto
    continuation lines, breaking at spaces and hyphens; nothing is cut."""
    cells = [[str(c) for c in row] for row in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    limit = _terminal_columns() if width is None else width
    if limit:
        widths = _fit(widths, [max(len(h), 6) for h in header], limit)
    lines = []
    for number, row in enumerate(cells):
        parts = [textwrap.wrap(c, w, break_long_words=True) or [""] if len(c) > w else [c] for c, w in zip(row, widths)]
        for k in range(max(len(p) for p in parts)):
            lines.append("  ".join((p[k] if k < len(p) else "").ljust(w) for p, w in zip(parts, widths)).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


class QuietWait:
    """Lines on stderr while a command waits without output: ``mcplab: still <doing> (N s)``.

    The first line comes after :data:`QUIET_AFTER_SECONDS` of silence, then one every 10 s;
    :meth:`step` names the current activity and restarts the silence (progress callbacks call it).
    Works the same when stderr is a pipe or a file (CI logs, notebooks)."""

    def __init__(self, doing: str, *, stream: TextIO | None = None, after: float | None = None, every: float = 10.0) -> None:
        self.doing = doing
        self.stream = stream
        self.after = QUIET_AFTER_SECONDS if after is None else after
        self.every = every
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._started = self._last = time.monotonic()
        self._next = self.after
        self._thread = threading.Thread(target=self._watch, name="mcplab-quiet-wait", daemon=True)

    def step(self, doing: str | None = None) -> None:
        with self._lock:
            if doing is not None:
                self.doing = doing
            self._last = time.monotonic()
            self._next = self.after

    def _watch(self) -> None:
        while not self._stop.wait(min(0.1, self.after)):
            with self._lock:
                now = time.monotonic()
                if now - self._last < self._next:
                    continue
                self._next += self.every
                line = f"mcplab: still {self.doing}, {now - self._started:.0f} s so far"
            stream = self.stream or sys.stderr
            print(line, file=stream, flush=True)

    def __enter__(self) -> QuietWait:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()



class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.INFO)
        self.lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # a log record must never end the command
            text = f"{record.levelname} {record.name}: (unformattable message)"
        first, *rest = text.splitlines() or [""]
        self.lines += [first, *("    " + line for line in rest)]


class CapturedLogs:
    """Every log record of this process (an in-process server's warnings and tracebacks) kept as
    text while the ``with`` block runs, instead of reaching stderr: a command then says in one
    line how many there were and where they are."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._handler = _ListHandler(self.lines)
        self._handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    @property
    def count(self) -> int:
        """How many records (a traceback's lines are indented under its record)."""
        return sum(1 for line in self.lines if not line.startswith(" "))

    def __enter__(self) -> CapturedLogs:
        logging.getLogger().addHandler(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger().removeHandler(self._handler)
