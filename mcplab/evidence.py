"""Canonical JSON, digests and files for evidence, always redacted first.

Design: one canonical form (sorted keys, compact separators, UTF-8, no NaN, string keys only)
so a digest names the evidence, not its key order; redaction runs before every hash and every
write, so a secret can change neither a digest nor reach a file.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

from .errors import EvidenceError
from .outfile import write_regular_file
from .redaction import redact

__all__ = ["canonical_json", "evidence_digest", "write_evidence"]


def canonical_json(obj: Any) -> bytes:
    """Canonical UTF-8 JSON bytes of ``obj``: sorted keys, ``","``/``":"`` separators, no ASCII escaping.

    Tuples serialise as lists. Raises :class:`~mcplab.errors.EvidenceError` naming the path and
    the problem for anything that is not JSON: NaN or infinite floats, non-string keys, sets,
    bytes or other objects.
    """
    _check_json(obj, "$")
    return _utf8(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False))


def _utf8(text: str) -> bytes:
    """UTF-8 bytes; a lone surrogate (``"\\ud800"``, which JSON text may spell) is not JSON data: EvidenceError."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise EvidenceError(f"evidence is not JSON: a string holds a lone surrogate "
                            f"({text[exc.start]!r}), which has no UTF-8 form") from None


def evidence_digest(evidence: Any) -> str:
    """SHA-256 hex digest of ``canonical_json(redact(evidence))``: redaction always comes first."""
    return hashlib.sha256(canonical_json(redact(evidence))).hexdigest()


def write_evidence(path: str | os.PathLike[str], evidence: Any) -> Path:
    """Write redacted evidence as indented JSON with sorted keys, atomically; return the path.

    Only a regular file is written (see :func:`~mcplab.outfile.write_regular_file`): a device,
    FIFO, symbolic link or directory at ``path``, or a missing folder, raises
    :class:`~mcplab.outfile.OutputPathError` naming ``path``. The text goes to a temporary file in
    the same folder and is moved over ``path`` with :func:`os.replace`, so a reader sees the old
    file or the complete new one, never a partial write.
    """
    redacted = redact(evidence)
    _check_json(redacted, "$")
    text = json.dumps(redacted, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    _utf8(text)  # a lone surrogate is EvidenceError before any file is touched
    return write_regular_file(path, text)


def _check_json(obj: Any, path: str) -> None:
    """Raise EvidenceError naming ``path`` unless ``obj`` is plain JSON data."""
    if obj is None or isinstance(obj, (str, bool, int)):
        return
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise EvidenceError(f"evidence is not JSON: {path} is {obj!r} (NaN and infinity are not JSON)")
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            if not isinstance(key, str):
                raise EvidenceError(
                    f"evidence is not JSON: {path} has a {type(key).__name__} key {key!r} (keys must be strings)"
                )
            _check_json(value, f"{path}.{key}")
        return
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            _check_json(item, f"{path}[{i}]")
        return
    raise EvidenceError(f"evidence is not JSON: {path} is a {type(obj).__name__}")
