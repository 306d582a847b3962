#!/usr/bin/env python3
"""Checks that a PNG screenshot shows the report's charts: decodes it with zlib alone
(8-bit RGB or RGBA, non-interlaced, as Chromium writes them) and requires
  - more than MIN_COLOURS distinct colours (a blank or text-only page has few), and
  - the report's chart colours as exact pixels (legend squares and bars are flat fills):
    #0072B2 (series 1, weights), #009E73 (KV pool), #D55E00 (series 2).
Usage: png_check.py FILE.png [MIN_COLOURS]. Exit 0 when it passes, 1 with a reason."""
import struct
import sys
import zlib

REQUIRED = {(0x00, 0x72, 0xB2): "#0072B2", (0x00, 0x9E, 0x73): "#009E73", (0xD5, 0x5E, 0x00): "#D55E00"}


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    path = sys.argv[1]
    min_colours = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    width, height, bpp, rows = decode(path)
    colours = set()
    for row in rows:
        for x in range(0, len(row), bpp):
            colours.add(row[x:x + 3])
    found = {REQUIRED[c] for c in (tuple(k) for k in colours) if c in REQUIRED}
    missing = sorted(set(REQUIRED.values()) - found)
    print(f"png_check: {path}: {width}x{height}, {len(colours)} distinct colours; chart colours found: {sorted(found)}")
    if len(colours) <= min_colours:
        print(f"png_check: FAIL: only {len(colours)} distinct colours (need more than {min_colours}): the page looks blank")
        return 1
    if missing:
        print(f"png_check: FAIL: chart colours missing from the screenshot: {missing}: the charts did not render")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
