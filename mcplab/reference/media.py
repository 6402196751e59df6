"""The reference fixtures' binary content: a 1x1 red PNG and a short silent WAV, built at import.

Design: generated with the standard library (zlib, struct, wave) rather than pasted as opaque
base64, so a reader can see what the bytes are and a test can decode them.
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib

__all__ = ["PNG_BYTES", "PNG_BASE64", "WAV_BYTES", "WAV_BASE64"]


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _red_pixel_png() -> bytes:
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte 0, then one red pixel
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", pixels) + _png_chunk(b"IEND", b"")


def _silent_wav(frames: int = 800, rate: int = 8000) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * frames)
    return buffer.getvalue()


PNG_BYTES = _red_pixel_png()
PNG_BASE64 = base64.b64encode(PNG_BYTES).decode("ascii")
WAV_BYTES = _silent_wav()
WAV_BASE64 = base64.b64encode(WAV_BYTES).decode("ascii")
