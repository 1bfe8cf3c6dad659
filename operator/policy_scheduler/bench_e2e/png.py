"""A dependency-free grouped bar chart as PNG (zlib + struct): no matplotlib needed.

No text is drawn: the caption in docs/benchmarks.md names the groups and colours.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
GRID: RGB = (220, 220, 220)
AXIS: RGB = (60, 60, 60)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png(pixels: list[bytearray], width: int) -> bytes:
    """8-bit RGB, no interlace; each row prefixed with filter type 0."""
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)
    header = struct.pack(">IIBBBBB", width, len(pixels), 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(raw, 9))
        + _chunk(b"IEND", b"")
    )


def bar_chart(
    groups: Sequence[Sequence[float]], colors: Sequence[RGB], *, height: int = 240
) -> tuple[list[bytearray], int]:
    """Groups of bars, values in 0..1 (1 = full height); gridlines at every quarter."""
    bar, gap, margin = 14, 18, 10
    per_group = len(colors) * bar
    width = 2 * margin + len(groups) * per_group + max(len(groups) - 1, 0) * gap
    rows = [bytearray(WHITE * width) for _ in range(height)]
    plot = height - 2 * margin

    def fill(x0: int, x1: int, y0: int, y1: int, color: RGB) -> None:
        for y in range(max(y0, 0), min(y1, height)):
            rows[y][3 * x0 : 3 * x1] = bytes(color) * (x1 - x0)

    for quarter in range(1, 5):
        y = height - margin - quarter * plot // 4
        fill(margin, width - margin, y, y + 1, GRID)
    for g, values in enumerate(groups):
        left = margin + g * (per_group + gap)
        for b, value in enumerate(values):
            top = height - margin - round(min(max(value, 0.0), 1.0) * plot)
            fill(left + b * bar + 1, left + (b + 1) * bar - 1, top, height - margin, colors[b % len(colors)])
    fill(margin, width - margin, height - margin, height - margin + 1, AXIS)
    return rows, width


def write_bar_chart(path: Path, groups: Sequence[Sequence[float]], colors: Sequence[RGB]) -> None:
    rows, width = bar_chart(groups, colors)
    path.write_bytes(encode_png(rows, width))
