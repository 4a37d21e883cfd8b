"""Headless Chromium for the HTML report's tests: load a file, dump its DOM or screenshot it.

Found as `chromium` (Debian's package; .ci/run installs it where missing), `chromium-browser`
or `google-chrome`, or at $GPUDRA_BROWSER. Without one the tests skip with the reason on a
developer machine and fail in CI (the environment variable CI is set to anything but
false/0, or GPUDRA_REQUIRE_BROWSER=1), as the Go-built tests do.

Each run gets a fresh profile and the flags that keep Chromium off the network (no background
networking, component updates, sync or QUIC): the page under test loads nothing, and this
machine's closed network would refuse Chromium's own connections anyway.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars", "--mute-audio")
TIMEOUT = 60  # seconds: a cold start on a busy 2-core machine


def browser_required() -> bool:
    if os.environ.get("GPUDRA_REQUIRE_BROWSER", "") not in ("", "0"):
        return True
    return os.environ.get("CI", "").strip().lower() not in ("", "false", "0")


def find_browser() -> str:
    """The browser's path, else a skip (a failure in CI)."""
    explicit = os.environ.get("GPUDRA_BROWSER")
    candidates = [explicit] if explicit else ["chromium", "chromium-browser", "google-chrome"]
    for name in candidates:
        path = shutil.which(name)
        if path:
            return path
    message = ("no headless browser for the HTML report tests (looked for "
               f"{', '.join(candidates)}): apt-get install chromium")
    if browser_required():
        pytest.fail(f"{message}; CI requires it (CI or GPUDRA_REQUIRE_BROWSER is set)",
                    pytrace=False)
    pytest.skip(message)


def run(browser: str, page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="gpudra-browser-") as profile:
        result = subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
            capture_output=True, text=True, timeout=TIMEOUT, cwd=profile)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def load(browser: str, page: Path, screenshot: Path | None = None,
         size: tuple[int, int] = (1000, 700), scale: float = 0.5) -> str:
    """The DOM after the page loaded and ran its script, serialised; with `screenshot`, the
    first `size` CSS pixels of the page are also written there as a PNG, at `scale` (fewer
    pixels for the test to decode; the charts are large blocks of colour)."""
    shot = () if screenshot is None else (
        f"--screenshot={screenshot}", f"--window-size={size[0]},{size[1]}",
        f"--force-device-scale-factor={scale}")
    dom = run(browser, page, "--dump-dom", *shot).stdout
    if screenshot is not None:
        assert screenshot.exists() and screenshot.stat().st_size > 0, "no screenshot written"
    return dom


def png_pixels(path: Path) -> tuple[int, int, list[tuple[int, ...]]]:
    """Width, height and RGB pixels of an 8-bit RGB or RGBA PNG (no library needed)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(kind, line, previous, channels)
        rows.append(line)
        previous = line
    pixels = [tuple(row[x:x + 3]) for row in rows for x in range(0, stride, channels)]
    return width, height, pixels


def _unfilter(kind: int, line: bytearray, up: bytearray, bpp: int) -> None:
    if kind == 0:
        return
    if kind == 2:
        line[:] = bytes((a + b) & 0xFF for a, b in zip(line, up))
        return
    if kind not in (1, 3, 4):
        raise AssertionError(f"PNG filter {kind}")
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
            continue
        above = up[i]
        if kind == 3:
            line[i] = (line[i] + ((left + above) >> 1)) & 0xFF
            continue
        corner = up[i - bpp] if i >= bpp else 0
        p = left + above - corner
        pa, pb, pc = abs(p - left), abs(p - above), abs(p - corner)
        line[i] = (line[i] + (left if pa <= pb and pa <= pc else above if pb <= pc
                              else corner)) & 0xFF
