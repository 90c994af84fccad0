#!/usr/bin/env python3
"""make_image16.py: writes assets/image16.png, the image preset's 16x16 target.

A house with a sun and two flowers in 8 binary colours (every R, G, B is 0 or 255), drawn
from the character map below. Standard library only (zlib + struct), so it is reproducible.
Usage: make_image16.py [out.png]   (default: assets/image16.png beside this tools/ folder)
"""
import os
import struct
import sys
import zlib

COLOURS = {
    "k": (0, 0, 0),        # door
    "b": (0, 0, 255),      # window
    "g": (0, 255, 0),      # grass
    "c": (0, 255, 255),    # sky
    "r": (255, 0, 0),      # roof
    "m": (255, 0, 255),    # flowers
    "y": (255, 255, 0),    # sun
    "w": (255, 255, 255),  # walls
}

PICTURE = [
    "cccccccccccccccc",
    "ccccccccccccyycc",
    "cccccccccccyyyyc",
    "cccccccccccyyyyc",
    "cccccrccccccyycc",
    "ccccrrrccccccccc",
    "cccrrrrrcccccccc",
    "ccrrrrrrrccccccc",
    "crrrrrrrrrcccccc",
    "ccwwwwwwwccccccc",
    "ccwwwwbbwccccccc",
    "ccwkkwbbwccccccc",
    "ccwkkwwwwccccccc",
    "ccwkkwwwwccmccmc",
    "gggggggggggggggg",
    "gggggggggggggggg",
]


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png_rgb8(rows):
    height, width = len(rows), len(rows[0])
    raw = b"".join(b"\x00" + bytes(v for ch in row for v in COLOURS[ch]) for row in rows)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    assert len(PICTURE) == 16 and all(len(row) == 16 for row in PICTURE)
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "assets", "image16.png")
    with open(out, "wb") as f:
        f.write(png_rgb8(PICTURE))
    on = [sum(COLOURS[ch][i] > 0 for row in PICTURE for ch in row) for i in range(3)]
    print("make_image16: wrote %s; cells on per channel R,G,B: %d %d %d" % (out, *on))


if __name__ == "__main__":
    main()
