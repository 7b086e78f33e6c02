"""Decoding images a person hands the kiosk, with a pixel cap checked in the file header before any decoding.

A 400 KB PNG can declare 20000x20000 pixels and make the decoder allocate gigabytes. Every image decoded from a
path or bytes given from outside goes through `decode_image`, which reads the width and height from the header
of the formats the kiosk accepts (PNG, JPEG, BMP, WebP, GIF, TIFF, PNM/PAM/PFM) and refuses a larger image, or
a format whose size it cannot read, before OpenCV sees the data. `OPENCV_IO_MAX_IMAGE_PIXELS` (set by the CLI
before OpenCV loads) is a second fence for any decoder reached another way.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

from kiosk.errors import ProbeError

MAX_IMAGE_PIXELS = 8192 * 8192
"""Largest image decoded (about 67 megapixels): above any phone photo, about 200 MB as 8-bit BGR."""


class ImageTooLarge(ProbeError):
    """An image declares more pixels than MAX_IMAGE_PIXELS; refused before decoding."""


def _png(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR" or len(data) < 24:
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"\xff\xd8":
        return None
    position = 2
    while position + 4 <= len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            position += 2
            continue
        (length,) = struct.unpack(">H", data[position + 2 : position + 4])
        if marker in _JPEG_SOF:
            if position + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return width, height
        if length < 2:
            return None
        position += 2 + length
    return None


def _bmp(data: bytes) -> tuple[int, int] | None:
    if data[:2] != b"BM" or len(data) < 26:
        return None
    (header_size,) = struct.unpack("<I", data[14:18])
    if header_size == 12:  # OS/2 BITMAPCOREHEADER
        width, height = struct.unpack("<HH", data[18:22])
        return width, height
    width, height = struct.unpack("<ii", data[18:26])
    return abs(width), abs(height)


def _webp(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP" or len(data) < 30:
        return None
    kind = data[12:16]
    if kind == b"VP8 ":
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L":
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    return None


def _gif(data: bytes) -> tuple[int, int] | None:
    if data[:6] not in (b"GIF87a", b"GIF89a") or len(data) < 10:
        return None
    width, height = struct.unpack("<HH", data[6:10])
    return width, height


def _tiff(data: bytes) -> tuple[int, int] | None:
    order = {b"II": "<", b"MM": ">"}.get(data[:2])
    if order is None or len(data) < 8 or struct.unpack(order + "H", data[2:4])[0] != 42:
        return None
    (offset,) = struct.unpack(order + "I", data[4:8])
    if offset + 2 > len(data):
        return None
    (count,) = struct.unpack(order + "H", data[offset : offset + 2])
    size: dict[int, int] = {}
    for index in range(count):
        entry = offset + 2 + 12 * index
        if entry + 12 > len(data):
            return None
        tag, kind = struct.unpack(order + "HH", data[entry : entry + 4])
        if tag in (256, 257):  # ImageWidth, ImageLength: SHORT (3) or LONG (4)
            value_format = order + ("H" if kind == 3 else "I")
            size[tag] = struct.unpack(value_format, data[entry + 8 : entry + 8 + struct.calcsize(value_format)])[0]
    return (size[256], size[257]) if 256 in size and 257 in size else None


_PNM = re.compile(rb"\AP[1-6](?:\s+|#[^\n]*\n)*?(\d+)(?:\s+|#[^\n]*\n)+?(\d+)")
_PAM_FIELD = re.compile(rb"^(WIDTH|HEIGHT)\s+(\d+)", re.MULTILINE)
_PFM = re.compile(rb"\AP[Ff]\s+(\d+)\s+(\d+)")


def _pnm(data: bytes) -> tuple[int, int] | None:
    head = data[:4096]
    match = _PNM.match(head) or _PFM.match(head)
    if match:
        return int(match.group(1)), int(match.group(2))
    if head.startswith(b"P7"):
        fields = {name: int(value) for name, value in _PAM_FIELD.findall(head)}
        if b"WIDTH" in fields and b"HEIGHT" in fields:
            return fields[b"WIDTH"], fields[b"HEIGHT"]
    return None


_READERS = (_png, _jpeg, _bmp, _webp, _gif, _tiff, _pnm)


def declared_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the header of a PNG/JPEG/BMP/WebP/GIF/TIFF/PNM file; None when not recognised."""
    for reader in _READERS:
        try:
            size = reader(data)
        except (struct.error, ValueError):
            size = None
        if size is not None:
            return size
    return None


def check_image_size(size: tuple[int, int], label: str) -> None:
    """ImageTooLarge when `size` (width, height) is over the pixel cap."""
    width, height = size
    if width * height > MAX_IMAGE_PIXELS:
        raise ImageTooLarge(
            f"{label} is {width}x{height} pixels ({width * height / 1e6:.0f} megapixels), over the "
            f"{MAX_IMAGE_PIXELS / 1e6:.0f}-megapixel limit; it was not decoded",
            "downscale the image first",
        )


def decode_image(data: bytes | np.ndarray, label: str, flags: int | None = None) -> np.ndarray | None:
    """Decode image bytes; ImageTooLarge over the pixel cap; None when not a recognised, decodable image."""
    import cv2

    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else np.asarray(data, dtype=np.uint8)
    size = declared_size(raw.tobytes())
    if size is None:
        return None  # a format whose size cannot be read is never handed to a decoder
    check_image_size(size, label)
    try:
        image = cv2.imdecode(raw, cv2.IMREAD_UNCHANGED if flags is None else flags)
    except cv2.error:
        return None
    return image if image is not None and image.size else None


def read_image_file(path: Path, flags: int | None = None) -> np.ndarray | None:
    """Decode the image at `path`; ImageTooLarge over the pixel cap; None when it cannot be read or decoded."""
    try:
        raw = np.fromfile(str(path), dtype=np.uint8)
    except OSError:
        return None
    if raw.size == 0:
        return None
    return decode_image(raw, str(path), flags)
